/*
 * A rank that never calls the collective (HANG_REPORT=1, TIMEOUT=4): the other ranks enter an
 * AllReduce that the last rank skips. After a second without progress each waiting rank prints
 * a hang report naming the peer it waits for and the last rank as not arrived at collective
 * #2; at the timeout the AllReduce fails. Rank 0 also gets the dump signal
 * (PROXY_DUMP_SIGNAL=10) while it waits, and reports at once. Each rank's stderr goes to a
 * file the parent reads afterwards. Two cases:
 *   board:    3 ranks on shared memory; who has arrived comes from the arrival board;
 *   no board: 4 ranks over sockets with ARRIVAL_BOARD=0, as across hosts: the waiting ranks
 *             ask each other in bootstrap messages, and the absent rank does not answer
 *             (rank 1 waits on rank 3 through nobody it is joined with: only the answers
 *             can name rank 3 there).
 * And a send nobody receives: 2 ranks over sockets (small socket buffers), rank 0 sends 1 MB (8
 * steps: every one fits in the FIFO) to rank 1, which never posts the receive. The executor hands
 * every step to the proxy at once, so rank 0 waits on its network op alone: it must time out there
 * too (until 2026-12-01 that wait saw no deadline while it could block on the sockets, and hung).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

struct arg {
    ncclUniqueId id;
    char dir[64];
    int board;
};

static void *signal_soon(void *unused)
{
    (void)unused;
    usleep(300 * 1000);
    kill(getpid(), SIGUSR1);
    return NULL;
}

static int rank_main(int rank, int nranks, void *argp)
{
    struct arg *a = argp;
    bt_test_stderr_to(a->dir, rank);
    if (!a->board) {
        setenv("BATON_ARRIVAL_BOARD", "0", 1);
        setenv("BATON_SHM_DISABLE", "1", 1);
    }
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, a->id, rank));
    int32_t in[1024], out[1024];
    memset(in, 0, sizeof(in));
    BT_TEST_OK(ncclAllReduce(in, out, 1024, ncclInt32, ncclSum, comm, NULL)); /* #1: everyone */
    if (rank == nranks - 1) {
        sleep(6); /* skips #2 until the others gave up */
    } else {
        pthread_t t;
        if (rank == 0)
            BT_TEST_CHECK(pthread_create(&t, NULL, signal_soon, NULL) == 0, "pthread_create");
        ncclResult_t r = ncclAllReduce(in, out, 1024, ncclInt32, ncclSum, comm, NULL);
        BT_TEST_CHECK(r != ncclSuccess, "rank %d: the AllReduce without rank %d succeeded", rank,
                      nranks - 1);
        if (rank == 0)
            pthread_join(t, NULL);
    }
    ncclCommAbort(comm);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    BT_TEST_CHECK(f != NULL, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#define UNRECEIVED_BYTES (1 << 20)

static int unreceived_rank(int rank, int nranks, void *argp)
{
    struct arg *a = argp;
    bt_test_stderr_to(a->dir, rank);
    setenv("BATON_SHM_DISABLE", "1", 1);
    setenv("BATON_SOCKET_BUFFSIZE", "65536", 1);
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, a->id, rank));
    char *buf = calloc(UNRECEIVED_BYTES, 1);
    BT_TEST_CHECK(buf != NULL, "calloc");
    /* the send/recv links connected (they are made at first use) */
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclSend(buf, 1024, ncclInt8, 1 - rank, comm, NULL));
    BT_TEST_OK(ncclRecv(buf + 1024, 1024, ncclInt8, 1 - rank, comm, NULL));
    BT_TEST_OK(ncclGroupEnd());
    if (rank == 1) {
        sleep(7); /* never receives */
    } else {
        double t0 = bt_test_now_s();
        ncclResult_t r = ncclSend(buf, UNRECEIVED_BYTES, ncclInt8, 1, comm, NULL);
        double took = bt_test_now_s() - t0;
        BT_TEST_CHECK(r != ncclSuccess, "a send that rank 1 never received succeeded");
        double slow = bt_test_slow(); /* sanitized builds: slower reports */
        BT_TEST_CHECK(took < 4 + 2 * slow,
                      "the unreceived send failed only after %.1f s (TIMEOUT=4)", took);
        fprintf(stderr, "unreceived send failed after %.2f s\n", took);
    }
    ncclCommAbort(comm); /* then the buffer: a failed call's transfers may run until abort */
    free(buf);
    return 0;
}

static void run_unreceived_case(void)
{
    struct arg a = {.board = 0};
    snprintf(a.dir, sizeof(a.dir), "/tmp/baton-hang-XXXXXX");
    BT_TEST_CHECK(mkdtemp(a.dir) != NULL, "mkdtemp");
    BT_TEST_OK(ncclGetUniqueId(&a.id));
    BT_TEST_CHECK(bt_test_run_ranks(2, unreceived_rank, &a, 60) == 0, "ranks failed");
    char path[128];
    snprintf(path, sizeof(path), "%s/rank0.log", a.dir);
    const char *log = slurp(path);
    BT_TEST_CHECK(strstr(log, "network op with rank 1 timed out") != NULL,
                  "rank 0 did not time out on its network op:\n%s", log);
    const char *took = strstr(log, "unreceived send failed after");
    printf("a send nobody receives: %.*s\n", took ? (int)strcspn(took, "\n") : 0, took ? took : "");
    unlink(path);
    snprintf(path, sizeof(path), "%s/rank1.log", a.dir);
    unlink(path);
    rmdir(a.dir);
}

static void run_case(int board)
{
    int nranks = board ? 3 : 4, absent = nranks - 1;
    struct arg a = {.board = board};
    snprintf(a.dir, sizeof(a.dir), "/tmp/baton-hang-XXXXXX");
    BT_TEST_CHECK(mkdtemp(a.dir) != NULL, "mkdtemp");
    BT_TEST_OK(ncclGetUniqueId(&a.id));
    BT_TEST_CHECK(bt_test_run_ranks(nranks, rank_main, &a, 60) == 0, "ranks failed");
    char want[128];
    if (board)
        snprintf(want, sizeof(want), "have not arrived at collective #2: %d (last started #1)",
                 absent);
    else
        snprintf(want, sizeof(want), "1 rank(s) have not arrived at collective #2: %d (no answer",
                 absent);
    for (int r = 0; r < nranks; r++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/rank%d.log", a.dir, r);
        const char *log = slurp(path);
        if (r == absent) {
            unlink(path);
            continue;
        }
        BT_TEST_CHECK(strstr(log, "(hang report)") != NULL, "rank %d printed no hang report:\n%s",
                      r, log);
        BT_TEST_CHECK(strstr(log, want) != NULL,
                      "rank %d's report does not name rank %d as missing (%s board):\n%s", r,
                      absent, board ? "with a" : "without", log);
        /* a waiting rank times out, or sees a neighbour that timed out a moment earlier leave */
        BT_TEST_CHECK(strstr(log, "timed out") != NULL || strstr(log, " is gone") != NULL,
                      "rank %d did not time out:\n%s", r, log);
        if (r == 0)
            BT_TEST_CHECK(strstr(log, "(dump signal)") != NULL,
                          "rank 0 did not report on the dump signal:\n%s", log);
        unlink(path);
    }
    rmdir(a.dir);
    printf("hang report %s board: ok\n", board ? "with a" : "without");
}

int main(void)
{
    /* before the first library call: settings are read once per process, and the ranks
     * inherit the parent's (the timeout's own lines need WARN; reports print anyway) */
    setenv("BATON_DEBUG", "WARN", 1);
    setenv("BATON_PROXY_DUMP_SIGNAL", "10", 1);
    setenv("BATON_HANG_REPORT", "1", 1);
    setenv("BATON_TIMEOUT", "4", 1);
    run_case(1);
    run_case(0);
    run_unreceived_case();
    return 0;
}
