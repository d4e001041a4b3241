/*
 * Bootstrap over real processes: n = 1, 2, 3, 5, 8 ranks rendezvous through a root thread
 * in this (parent) process, then allgather, barrier and exchange point-to-point messages
 * whose receive order differs from their send order (exercising the unexpected queue).
 * Then the BATON_COMM_ID path, and an abort that must cut a wait short.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "harness.h"
#include "util/time.h"

#define NMSG 2 /* messages per (peer, tag): their order must be kept */

struct test_arg {
    unsigned char id[BT_UNIQUE_ID_BYTES];
    int from_env;
};

/* Message size and content depend on (src, dst, tag, seq), so a mix-up is caught. */
static size_t msg_size(int src, int dst, int tag)
{
    return tag == 0 ? 8 + (size_t)src * 3 + (size_t)dst : 3000 + (size_t)src * 17;
}

static void msg_fill(unsigned char *b, size_t n, int src, int dst, int tag, int seq)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(src * 31 + dst * 7 + tag * 101 + seq * 13 + (int)i);
}

static void check_p2p(struct bt_bootstrap *bs, int rank, int nranks)
{
    unsigned char buf[8192], want[8192];
    /* Send: peers ascending from rank+1, tag 0 then tag 1, NMSG of each. */
    for (int k = 1; k < nranks; k++) {
        int dst = (rank + k) % nranks;
        for (int tag = 0; tag < 2; tag++)
            for (int seq = 0; seq < NMSG; seq++) {
                size_t n = msg_size(rank, dst, tag);
                msg_fill(buf, n, rank, dst, tag, seq);
                BT_TEST_OK(bt_bootstrap_send(bs, dst, tag, buf, n));
            }
    }
    /* Receive: peers descending, tag 1 before tag 0. */
    for (int k = nranks - 1; k >= 1; k--) {
        int src = (rank + k) % nranks;
        for (int tag = 1; tag >= 0; tag--)
            for (int seq = 0; seq < NMSG; seq++) {
                size_t n = msg_size(src, rank, tag);
                memset(buf, 0, n);
                BT_TEST_OK(bt_bootstrap_recv(bs, src, tag, buf, n));
                msg_fill(want, n, src, rank, tag, seq);
                BT_TEST_CHECK(memcmp(buf, want, n) == 0,
                              "rank %d: message %d (tag %d) from %d is wrong", rank, seq, tag, src);
            }
    }
    /* A message to oneself works like any other. */
    int x = rank * 1000 + 1, y = 0;
    BT_TEST_OK(bt_bootstrap_send(bs, rank, 7, &x, sizeof(x)));
    BT_TEST_OK(bt_bootstrap_recv(bs, rank, 7, &y, sizeof(y)));
    BT_TEST_CHECK(x == y, "self message %d != %d", y, x);
}

/* bt_bootstrap_poll: nothing before anyone sent; then a message from every other rank, in
 * whatever order they come, each once; a message of another tag stays for its recv. */
static void check_poll(struct bt_bootstrap *bs, int rank, int nranks)
{
    int32_t v;
    BT_TEST_CHECK(bt_bootstrap_poll(bs, 9, &v, sizeof(v)) == -1, "rank %d: poll before any send",
                  rank);
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    for (int r = 0; r < nranks; r++) {
        int32_t mine = rank * 100 + r;
        if (r != rank) {
            BT_TEST_OK(bt_bootstrap_send(bs, r, 8, &mine, sizeof(mine)));
            BT_TEST_OK(bt_bootstrap_send(bs, r, 9, &mine, sizeof(mine)));
        }
    }
    int got = 0;
    char *seen = calloc((size_t)nranks, 1);
    for (int spins = 0; got < nranks - 1 && spins < 5000; spins++) {
        int from = bt_bootstrap_poll(bs, 9, &v, sizeof(v));
        if (from < 0) {
            usleep(1000);
            continue;
        }
        BT_TEST_CHECK(from != rank && from < nranks && !seen[from] && v == from * 100 + rank,
                      "rank %d: poll gave %d from rank %d", rank, v, from);
        seen[from] = 1;
        got++;
    }
    free(seen);
    BT_TEST_CHECK(got == nranks - 1, "rank %d: polled %d of %d messages", rank, got, nranks - 1);
    BT_TEST_CHECK(bt_bootstrap_poll(bs, 9, &v, sizeof(v)) == -1, "rank %d: a message too many",
                  rank);
    for (int r = 0; r < nranks; r++) {
        if (r == rank)
            continue;
        BT_TEST_OK(bt_bootstrap_recv(bs, r, 8, &v, sizeof(v)));
        BT_TEST_CHECK(v == r * 100 + rank, "rank %d: tag 8 from %d is %d", rank, r, v);
    }
}

static int rank_main(int rank, int nranks, void *argp)
{
    struct test_arg *arg = argp;
    struct bt_test_leaks leaks;
    struct bt_bootstrap *bs = NULL;
    unsigned char id[BT_UNIQUE_ID_BYTES];

    bt_test_leaks_begin(&leaks);
    if (arg->from_env)
        BT_TEST_OK(bt_bootstrap_unique_id_from_env(rank, id));
    else
        memcpy(id, arg->id, sizeof(id));
    BT_TEST_OK(bt_bootstrap_init(id, rank, nranks, NULL, &bs));

    /* Allgather of rank-dependent data, twice (the ring stays in step), odd size. */
    for (int round = 0; round < 2; round++) {
        size_t bytes = 13 + (size_t)round * 1000;
        unsigned char *all = calloc((size_t)nranks, bytes);
        for (size_t i = 0; i < bytes; i++)
            all[(size_t)rank * bytes + i] = (unsigned char)(rank * 5 + round + (int)i);
        BT_TEST_OK(bt_bootstrap_allgather(bs, all, bytes));
        for (int r = 0; r < nranks; r++)
            for (size_t i = 0; i < bytes; i++)
                BT_TEST_CHECK(all[(size_t)r * bytes + i] == (unsigned char)(r * 5 + round + (int)i),
                              "rank %d: allgather slot %d byte %zu wrong", rank, r, i);
        free(all);
    }
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    check_p2p(bs, rank, nranks);
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    check_poll(bs, rank, nranks);
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    bt_bootstrap_destroy(bs);
    bt_test_leaks_end(&leaks);
    return 0;
}

struct abort_arg {
    struct bt_bootstrap *bs;
    volatile int *flag;
};

static void *abort_later(void *p)
{
    struct abort_arg *a = p;
    usleep(200 * 1000);
    if (a->bs)
        bt_bootstrap_abort(a->bs);
    else
        __atomic_store_n(a->flag, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Rank 0 waits for messages that never come; an abort (ours, then the caller's flag) ends it. */
static int abort_main(int rank, int nranks, void *argp)
{
    struct test_arg *arg = argp;
    struct bt_test_leaks leaks;
    struct bt_bootstrap *bs = NULL;
    volatile int flag = 0;

    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(bt_bootstrap_init(arg->id, rank, nranks, &flag, &bs));
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    if (rank == 0) {
        for (int how = 0; how < 2; how++) {
            pthread_t t;
            struct abort_arg a = {.bs = how == 1 ? bs : NULL, .flag = &flag};
            uint64_t t0 = bt_time_ns();
            pthread_create(&t, NULL, abort_later, &a);
            int x;
            bt_status_t st = bt_bootstrap_recv(bs, 1, 99, &x, sizeof(x));
            double s = (double)(bt_time_ns() - t0) / 1e9;
            pthread_join(t, NULL);
            BT_TEST_CHECK(st == BT_ERR_REMOTE, "aborted recv returned %d", (int)st);
            BT_TEST_CHECK(s > 0.15 && s < 1.0, "aborted recv took %.2f s", s);
            st = bt_bootstrap_barrier(bs);
            BT_TEST_CHECK(st == BT_ERR_REMOTE, "barrier after abort returned %d", (int)st);
            flag = 0; /* the caller's flag first, then bt_bootstrap_abort (which sticks) */
        }
    }
    bt_bootstrap_destroy(bs);
    bt_test_leaks_end(&leaks);
    return 0;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    BT_TEST_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                      getsockname(fd, (struct sockaddr *)&a, &len) == 0,
                  "no free port");
    close(fd);
    return ntohs(a.sin_port);
}

int main(void)
{
    struct bt_test_leaks leaks;
    static const int sizes[] = {1, 2, 3, 5, 8};
    struct test_arg arg;

    unsetenv("BATON_COMM_ID");
    unsetenv("NCCL_COMM_ID");
    bt_test_leaks_begin(&leaks);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        memset(&arg, 0, sizeof(arg));
        uint64_t t0 = bt_time_ns();
        BT_TEST_OK(bt_bootstrap_unique_id(arg.id));
        BT_TEST_CHECK(bt_test_run_ranks(sizes[i], rank_main, &arg, 20) == 0, "n = %d failed",
                      sizes[i]);
        bt_bootstrap_root_wait(arg.id);
        printf("n = %d: ok (%.2f s)\n", sizes[i], (double)(bt_time_ns() - t0) / 1e9);
    }

    memset(&arg, 0, sizeof(arg));
    BT_TEST_OK(bt_bootstrap_unique_id(arg.id));
    BT_TEST_CHECK(bt_test_run_ranks(2, abort_main, &arg, 20) == 0, "abort test failed");
    bt_bootstrap_root_wait(arg.id);
    printf("abort: ok\n");
    bt_test_leaks_end(&leaks);

    /* BATON_COMM_ID: no id is passed; rank 0 starts the root on the given address. */
    char env[64];
    snprintf(env, sizeof(env), "127.0.0.1:%d", free_port());
    setenv("BATON_COMM_ID", env, 1);
    memset(&arg, 0, sizeof(arg));
    arg.from_env = 1;
    for (int n = 1; n <= 3; n += 2)
        BT_TEST_CHECK(bt_test_run_ranks(n, rank_main, &arg, 20) == 0, "COMM_ID=%s n = %d failed",
                      env, n);
    unsetenv("BATON_COMM_ID");
    printf("COMM_ID %s: ok\n", env);
    printf("test_bootstrap: ok\n");
    return 0;
}
