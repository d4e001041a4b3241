/*
 * Strangers at the root: while 3 real ranks rendezvous, another process connects to the
 * root and sends random garbage, a hello with the wrong magic, hellos with out-of-range
 * ranks, half a hello and then stalls (holding the connection open), and a connection that
 * closes at once. The real ranks must still init and allgather correctly, and without
 * waiting for the stalled stranger to time out.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "harness.h"
#include "util/time.h"

#define NREAL 3

static unsigned char g_id[BT_UNIQUE_ID_BYTES];

static int stranger_connect(const union bt_sockaddr *root)
{
    struct bt_socket_wait w = {.deadline = bt_time_ns() + 5000000000ull};
    int fd = -1;
    BT_TEST_OK(bt_socket_connect(root, &w, &fd));
    return fd;
}

static void stranger_send(int fd, const void *buf, size_t n)
{
    struct bt_socket_wait w = {.deadline = bt_time_ns() + 5000000000ull};
    BT_TEST_OK(bt_socket_send_all(fd, buf, n, &w));
}

static int stranger_main(void)
{
    union bt_sockaddr root;
    uint64_t magic;
    BT_TEST_OK(bt_bootstrap_id_unpack(g_id, &magic, &root));

    /* Random garbage, longer than a hello. */
    int fd = stranger_connect(&root);
    unsigned char junk[300];
    srand(11);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)rand();
    stranger_send(fd, junk, sizeof(junk));
    bt_socket_close(&fd);

    /* A well-formed hello with the wrong magic, then ones with impossible ranks. */
    struct bt_bs_root_hello h;
    memset(&h, 0, sizeof(h));
    h.magic = magic ^ 1;
    h.kind = BT_BS_KIND_ROOT;
    h.rank = 0;
    h.nranks = NREAL;
    h.addr = root;
    fd = stranger_connect(&root);
    stranger_send(fd, &h, sizeof(h));
    bt_socket_close(&fd);
    const int bad_ranks[] = {-1, NREAL, 1 << 30};
    for (size_t i = 0; i < sizeof(bad_ranks) / sizeof(bad_ranks[0]); i++) {
        h.magic = magic;
        h.rank = bad_ranks[i];
        fd = stranger_connect(&root);
        stranger_send(fd, &h, sizeof(h));
        bt_socket_close(&fd);
    }

    /* Connect and close at once. */
    fd = stranger_connect(&root);
    bt_socket_close(&fd);

    /* Half a (valid) hello, then stall with the connection open while the ranks init. */
    h.rank = 0;
    int stall = stranger_connect(&root);
    stranger_send(stall, &h, sizeof(h) / 2);
    sleep(2);
    bt_socket_close(&stall);
    return 0;
}

static int rank_main(int rank, int nranks, void *argp)
{
    (void)nranks;
    (void)argp;
    if (rank == NREAL)
        return stranger_main();

    struct bt_test_leaks leaks;
    struct bt_bootstrap *bs = NULL;
    bt_test_leaks_begin(&leaks);
    usleep(300 * 1000); /* let the stranger go first */
    uint64_t t0 = bt_time_ns();
    BT_TEST_OK(bt_bootstrap_init(g_id, rank, NREAL, NULL, &bs));
    double s = (double)(bt_time_ns() - t0) / 1e9;
    BT_TEST_CHECK(s < 1.5, "rank %d: init took %.2f s: did a stranger block the root?", rank, s);
    uint64_t all[NREAL];
    all[rank] = 0x1000u + (uint64_t)rank * 77;
    BT_TEST_OK(bt_bootstrap_allgather(bs, all, sizeof(uint64_t)));
    for (int r = 0; r < NREAL; r++)
        BT_TEST_CHECK(all[r] == 0x1000u + (uint64_t)r * 77, "rank %d: slot %d = 0x%llx", rank, r,
                      (unsigned long long)all[r]);
    BT_TEST_OK(bt_bootstrap_barrier(bs));

    /* Strangers at a rank's own listener during the job: each rank leaves, at the next rank,
     * a connection that sends nothing, one with half a header, and one with garbage, all
     * held open; then messages flow between every pair. They must not wait for the
     * strangers' 5 s header timeout. */
    const union bt_sockaddr *next = bt_bootstrap_peer_addr(bs, (rank + 1) % NREAL);
    BT_TEST_CHECK(next != NULL, "no address for rank %d", (rank + 1) % NREAL);
    int silent = stranger_connect(next), half = stranger_connect(next),
        junk = stranger_connect(next);
    struct bt_bs_peer_hdr hh;
    memset(&hh, 0x33, sizeof(hh));
    stranger_send(half, &hh, sizeof(hh) / 2);
    unsigned char noise[100];
    memset(noise, 0xa7, sizeof(noise));
    stranger_send(junk, noise, sizeof(noise));
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    t0 = bt_time_ns();
    for (int round = 0; round < 10; round++) {
        for (int peer = 0; peer < NREAL; peer++) {
            if (peer == rank)
                continue;
            uint64_t v = (uint64_t)(rank * 1000 + round), got = 0;
            BT_TEST_OK(bt_bootstrap_send(bs, peer, 100 + round, &v, sizeof(v)));
            BT_TEST_OK(bt_bootstrap_recv(bs, peer, 100 + round, &got, sizeof(got)));
            BT_TEST_CHECK(got == (uint64_t)(peer * 1000 + round), "rank %d: got %llu from %d", rank,
                          (unsigned long long)got, peer);
        }
        BT_TEST_OK(bt_bootstrap_allgather(bs, all, sizeof(uint64_t)));
    }
    s = (double)(bt_time_ns() - t0) / 1e9;
    BT_TEST_CHECK(s < 2.0, "rank %d: 10 rounds of messages took %.2f s with strangers held open",
                  rank, s);
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    bt_socket_close(&silent);
    bt_socket_close(&half);
    bt_socket_close(&junk);

    /* A message that waits longer than the strangers' header timeout before it is asked
     * for: rank 0 sends two, rank 1 takes the first, comes back 6 s later for the second
     * (its connection may have been accepted with the first's: it must not expire). */
    if (rank == 0) {
        uint64_t a = 11, b = 22;
        BT_TEST_OK(bt_bootstrap_send(bs, 1, 300, &a, sizeof(a)));
        BT_TEST_OK(bt_bootstrap_send(bs, 1, 301, &b, sizeof(b)));
    } else if (rank == 1) {
        uint64_t a = 0, b = 0;
        BT_TEST_OK(bt_bootstrap_recv(bs, 0, 300, &a, sizeof(a)));
        sleep(BT_BS_HELLO_TIMEOUT_S + 1);
        BT_TEST_OK(bt_bootstrap_recv(bs, 0, 301, &b, sizeof(b)));
        BT_TEST_CHECK(a == 11 && b == 22, "late message: %llu %llu", (unsigned long long)a,
                      (unsigned long long)b);
    }
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    bt_bootstrap_destroy(bs);
    bt_test_leaks_end(&leaks);
    printf("rank %d: messages with strangers held open at the listener: %.3f s\n", rank, s);
    return 0;
}

int main(void)
{
    struct bt_test_leaks leaks;
    unsetenv("BATON_COMM_ID");
    unsetenv("NCCL_COMM_ID");
    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(bt_bootstrap_unique_id(g_id));
    BT_TEST_CHECK(bt_test_run_ranks(NREAL + 1, rank_main, NULL, 20) == 0, "ranks failed");
    bt_bootstrap_root_wait(g_id);
    bt_test_leaks_end(&leaks);

    /* A garbage id is refused by init, with no rendezvous attempted. */
    unsigned char bad[BT_UNIQUE_ID_BYTES];
    memset(bad, 0x5a, sizeof(bad));
    struct bt_bootstrap *bs = NULL;
    BT_TEST_CHECK(bt_bootstrap_init(bad, 0, 1, NULL, &bs) == BT_ERR_INVALID_ARG && bs == NULL,
                  "garbage id accepted");
    printf("test_bootstrap_garbage: ok\n");
    return 0;
}
