/*
 * Non-blocking communicators through NCCL_COMM_BLOCKING=0 (set here before the first call),
 * 3 rank processes:
 *   - ncclCommInitRank (no config) returns ncclInProgress; ncclCommGetAsyncError reports
 *     ncclInProgress, then ncclSuccess; the comm answers queries only then;
 *   - a collective returns ncclInProgress and its result is there once the comm reports
 *     ncclSuccess (4 MB AllReduce); a group (ReduceScatter + a Send/Recv ring) likewise;
 *   - config.blocking = 1 overrides the variable: that init returns ncclSuccess; its
 *     config.commName appears in its log lines ("[rank name]", DEBUG=INFO);
 *   - split and shrink (rank 2 excluded; it does not call) return ncclInProgress, *newcomm
 *     is written when the parent reports ncclSuccess, and the children run collectives.
 * Values are exact integers; every process ends with the leak check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "nonblocking.h"
#include "nccl.h"

#define COUNT (1u << 20)

struct ids {
    ncclUniqueId a, b;
    char logdir[64];
};

#define IN_PROGRESS(call)                                                                          \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        BT_TEST_CHECK(r_ == ncclInProgress, "%s returned %d, not ncclInProgress", #call, (int)r_); \
    } while (0)

static void allreduce_check(ncclComm_t c, int me, int n, size_t count, const char *what)
{
    int32_t *v = malloc(count * sizeof(int32_t));
    for (size_t i = 0; i < count; i++)
        v[i] = (int32_t)(i % 977) + 100 * me;
    IN_PROGRESS(ncclAllReduce(v, v, count, ncclInt32, ncclSum, c, NULL));
    BT_TEST_CHECK(bt_test_wait_done(c) == ncclSuccess, "%s failed", what);
    for (size_t i = 0; i < count; i++)
        if (v[i] != n * (int32_t)(i % 977) + 100 * n * (n - 1) / 2)
            BT_TEST_CHECK(0, "%s [%zu] = %d", what, i, v[i]);
    free(v);
}

static int rank_main(int rank, int n, void *argp)
{
    const struct ids *ids = argp;
    struct bt_test_leaks leaks;
    bt_test_stderr_to(ids->logdir, rank); /* DEBUG=INFO: the commName check reads it */
    bt_test_leaks_begin(&leaks);

    ncclComm_t c;
    IN_PROGRESS(ncclCommInitRank(&c, n, ids->a, rank));
    BT_TEST_CHECK(bt_test_wait_done(c) == ncclSuccess, "init failed");
    int cnt = -1;
    BT_TEST_OK(ncclCommCount(c, &cnt));
    BT_TEST_CHECK(cnt == n, "count %d", cnt);
    allreduce_check(c, rank, n, COUNT, "AllReduce 4 MB");

    /* A group: ReduceScatter and a Send/Recv ring. */
    int32_t *in = malloc(sizeof(int32_t) * 3 * 1024), out[1024], ring[64], from[64];
    for (int i = 0; i < 3 * 1024; i++)
        in[i] = i + rank;
    for (int i = 0; i < 64; i++)
        ring[i] = rank * 1000 + i;
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclReduceScatter(in, out, 1024, ncclInt32, ncclSum, c, NULL));
    BT_TEST_OK(ncclSend(ring, 64, ncclInt32, (rank + 1) % n, c, NULL));
    BT_TEST_OK(ncclRecv(from, 64, ncclInt32, (rank + n - 1) % n, c, NULL));
    IN_PROGRESS(ncclGroupEnd());
    BT_TEST_CHECK(bt_test_wait_done(c) == ncclSuccess, "group failed");
    for (int i = 0; i < 1024; i++)
        BT_TEST_CHECK(out[i] == n * (rank * 1024 + i) + n * (n - 1) / 2, "ReduceScatter [%d]", i);
    for (int i = 0; i < 64; i++)
        BT_TEST_CHECK(from[i] == ((rank + n - 1) % n) * 1000 + i, "ring [%d]", i);
    free(in);

    /* config.blocking = 1 wins over the variable; commName names its log lines. */
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 1;
    cfg.commName = "nb-blocking";
    ncclComm_t blk;
    BT_TEST_OK(ncclCommInitRankConfig(&blk, n, ids->b, rank, &cfg));
    float f = 1;
    BT_TEST_OK(ncclAllReduce(&f, &f, 1, ncclFloat, ncclSum, blk, NULL));
    BT_TEST_CHECK(f == (float)n, "blocking AllReduce %f", (double)f);
    BT_TEST_OK(ncclCommDestroy(blk));

    /* Split (key reverses the order) and shrink. */
    ncclComm_t s = NULL, k = NULL;
    IN_PROGRESS(ncclCommSplit(c, 0, -rank, &s, NULL));
    BT_TEST_CHECK(bt_test_wait_done(c) == ncclSuccess && s, "split failed");
    int me = -1;
    BT_TEST_OK(ncclCommUserRank(s, &me));
    BT_TEST_CHECK(me == n - 1 - rank, "split rank %d", me);
    allreduce_check(s, me, n, 4096, "AllReduce on the split");
    if (rank != 2) {
        int excl = 2;
        IN_PROGRESS(ncclCommShrink(c, &excl, 1, &k, NULL, NCCL_SHRINK_DEFAULT));
        BT_TEST_CHECK(bt_test_wait_done(c) == ncclSuccess && k, "shrink failed");
        BT_TEST_OK(ncclCommUserRank(k, &me));
        BT_TEST_CHECK(me == rank, "shrink rank %d", me);
        allreduce_check(k, me, n - 1, 65536, "AllReduce on the shrunk comm");
        BT_TEST_OK(ncclCommDestroy(k));
    }
    BT_TEST_OK(ncclCommDestroy(s));
    BT_TEST_OK(ncclCommDestroy(c));
    bt_test_leaks_end(&leaks);
    fflush(stderr);
    char path[128], line[512], want[32];
    snprintf(path, sizeof(path), "%s/rank%d.log", ids->logdir, rank);
    snprintf(want, sizeof(want), " [%d nb-blocking] BATON INFO", rank);
    FILE *lf = fopen(path, "r");
    int named = 0, complete = 0;
    while (lf && fgets(line, sizeof(line), lf))
        if (strstr(line, want)) {
            named++;
            complete += strstr(line, "Init COMPLETE") != NULL;
        }
    if (lf)
        fclose(lf);
    BT_TEST_CHECK(named > 0 && complete == 1,
                  "rank %d: %d log lines carry commName (%d of them Init COMPLETE)", rank, named,
                  complete);
    return 0;
}

int main(void)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    setenv("BATON_COMM_BLOCKING", "0", 1); /* before Baton reads its parameters */
    setenv("BATON_DEBUG", "INFO", 1);
    int shm0 = bt_test_shm_count();
    struct ids ids;
    snprintf(ids.logdir, sizeof(ids.logdir), "/tmp/baton-nb-XXXXXX");
    BT_TEST_CHECK(mkdtemp(ids.logdir), "mkdtemp");
    BT_TEST_OK(ncclGetUniqueId(&ids.a));
    BT_TEST_OK(ncclGetUniqueId(&ids.b));
    int rc = bt_test_run_ranks(3, rank_main, &ids, 60);
    BT_TEST_CHECK(rc == 0, "non-blocking ranks failed (logs in %s)", ids.logdir);
    for (int r = 0; r < 3; r++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/rank%d.log", ids.logdir, r);
        unlink(path);
    }
    rmdir(ids.logdir);
    BT_TEST_CHECK(bt_test_shm_count() <= shm0, "/dev/shm entries left behind");
    printf("ok\n");
    return 0;
}
