/*
 * Non-blocking communicators, revoke and shrink with ranks as threads of one process (the
 * threaded parts TSan checks):
 *   - config.blocking = 0: InitRankConfig returns ncclInProgress, so ONE thread inits every
 *     rank without a group; the comm refuses queries and collectives until
 *     ncclCommGetAsyncError reports ncclSuccess; collectives and groups return ncclInProgress
 *     and finish in the background (one thread issues every rank's collective); a second call
 *     on a busy comm is refused; a group mixing blocking and non-blocking comms is refused;
 *     split and shrink return ncclInProgress and write *newcomm when done;
 *   - a rank that never arrives: its peer's non-blocking init stays in progress until
 *     ncclCommAbort (or ncclCommDestroy) ends it, promptly and without leaks;
 *   - ncclCommRevoke while collectives wait for a rank that never comes: they fail at once,
 *     later calls are refused, and the survivors shrink the revoked comm and run on;
 *   - NCCL_SHRINK_ABORT from a watchdog thread while the ranks' collectives are stuck;
 *   - windows registered for every rank from one thread in a group, used, deregistered;
 *   - ncclCommInitRankScalable with three ids.
 * Every result is an exact integer; the process ends with the leak check.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nonblocking.h"
#include "nccl.h"

#define N 3

static ncclConfig_t nonblocking_config(void)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    return cfg;
}

static void wait_all_ok(ncclComm_t *c, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        ncclResult_t r = bt_test_wait_done(c[i]);
        BT_TEST_CHECK(r == ncclSuccess, "%s: rank %d ended with %d", what, i, (int)r);
    }
}

/* AllReduce of rank-dependent integers on comms c[0..n) issued by this one thread (each
 * call returns ncclInProgress), checked. */
static void allreduce_all(ncclComm_t *c, int n, size_t count, const char *what)
{
    int32_t *buf[N];
    for (int i = 0; i < n; i++) {
        buf[i] = malloc(count * sizeof(int32_t));
        for (size_t k = 0; k < count; k++)
            buf[i][k] = (int32_t)(k % 1000) + 1000 * i;
        ncclResult_t r = ncclAllReduce(buf[i], buf[i], count, ncclInt32, ncclSum, c[i], NULL);
        BT_TEST_CHECK(r == ncclInProgress, "%s: AllReduce on rank %d returned %d", what, i, (int)r);
    }
    wait_all_ok(c, n, what);
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < count; k++) {
            int32_t want = n * (int32_t)(k % 1000) + 1000 * n * (n - 1) / 2;
            if (buf[i][k] != want)
                BT_TEST_CHECK(0, "%s: rank %d [%zu] = %d, want %d", what, i, k, buf[i][k], want);
        }
        free(buf[i]);
    }
}

static void nonblocking_lifecycle(void)
{
    ncclUniqueId id;
    ncclComm_t c[N];
    ncclConfig_t cfg = nonblocking_config();
    BT_TEST_OK(ncclGetUniqueId(&id));
    for (int i = 0; i < N; i++) {
        ncclResult_t r = ncclCommInitRankConfig(&c[i], N, id, i, &cfg);
        BT_TEST_CHECK(r == ncclInProgress, "non-blocking init of rank %d returned %d", i, (int)r);
        BT_TEST_CHECK(c[i] != NULL, "non-blocking init gave no handle");
        if (i == 0) { /* cannot be done: ranks 1 and 2 have not called yet */
            int cnt = -1;
            BT_TEST_CHECK(ncclCommCount(c[0], &cnt) == ncclInvalidArgument,
                          "CommCount on an initializing comm did not fail");
            float x = 1;
            BT_TEST_CHECK(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, c[0], NULL) ==
                              ncclInvalidArgument,
                          "AllReduce on an initializing comm did not fail");
        }
    }
    wait_all_ok(c, N, "init");
    int cnt = -1;
    BT_TEST_OK(ncclCommCount(c[2], &cnt));
    BT_TEST_CHECK(cnt == N, "count %d", cnt);

    allreduce_all(c, N, 1000, "AllReduce 4 KB");
    allreduce_all(c, N, 1 << 20, "AllReduce 4 MB");

    /* A call on a comm whose collective is still running is refused. */
    int32_t a[N][8];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 8; k++)
            a[i][k] = i + k;
    BT_TEST_CHECK(ncclAllReduce(a[0], a[0], 8, ncclInt32, ncclSum, c[0], NULL) == ncclInProgress,
                  "AllReduce did not return ncclInProgress");
    BT_TEST_CHECK(ncclAllReduce(a[0], a[0], 8, ncclInt32, ncclSum, c[0], NULL) ==
                      ncclInvalidArgument,
                  "a second AllReduce on a busy comm was not refused");
    for (int i = 1; i < N; i++)
        BT_TEST_CHECK(ncclAllReduce(a[i], a[i], 8, ncclInt32, ncclSum, c[i], NULL) ==
                          ncclInProgress,
                      "AllReduce on rank %d", i);
    wait_all_ok(c, N, "busy AllReduce");
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 8; k++)
            BT_TEST_CHECK(a[i][k] == 3 + 3 * k, "busy AllReduce: rank %d [%d] = %d", i, k, a[i][k]);

    /* A group of every rank's AllGather and Broadcast: ncclInProgress from GroupEnd. */
    int32_t mine[N], all[N][N], b[N][4];
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < N; i++) {
        mine[i] = 100 + i;
        for (int k = 0; k < 4; k++)
            b[i][k] = i == 1 ? 7 * k : -1;
        BT_TEST_OK(ncclAllGather(&mine[i], all[i], 1, ncclInt32, c[i], NULL));
        BT_TEST_OK(ncclBroadcast(b[i], b[i], 4, ncclInt32, 1, c[i], NULL));
    }
    ncclResult_t r = ncclGroupEnd();
    BT_TEST_CHECK(r == ncclInProgress, "non-blocking GroupEnd returned %d", (int)r);
    wait_all_ok(c, N, "group");
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++)
            BT_TEST_CHECK(all[i][k] == 100 + k && b[i][k % 4] == 7 * (k % 4),
                          "group: rank %d [%d] = %d / %d", i, k, all[i][k], b[i][k % 4]);

    /* Blocking and non-blocking in one group: refused, nothing runs. */
    ncclComm_t blk;
    BT_TEST_OK(ncclCommInitAll(&blk, 1, NULL));
    float f = 1;
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclAllReduce(&f, &f, 1, ncclFloat, ncclSum, blk, NULL));
    BT_TEST_OK(ncclAllReduce(&f, &f, 1, ncclFloat, ncclSum, c[0], NULL));
    BT_TEST_CHECK(ncclGroupEnd() == ncclInvalidArgument, "a mixed group was not refused");
    BT_TEST_OK(ncclCommDestroy(blk));
    BT_TEST_CHECK(bt_test_wait_done(c[0]) == ncclSuccess, "the refused group touched rank 0");

    /* Split: ncclInProgress, *newcomm written when done; the children are non-blocking. */
    ncclComm_t s[N];
    for (int i = 0; i < N; i++) {
        s[i] = (ncclComm_t)(uintptr_t)1;
        r = ncclCommSplit(c[i], 0, N - i, &s[i], NULL);
        BT_TEST_CHECK(r == ncclInProgress, "non-blocking split returned %d", (int)r);
    }
    wait_all_ok(c, N, "split");
    ncclComm_t rev[N];
    for (int i = 0; i < N; i++) {
        int me = -1;
        BT_TEST_CHECK(s[i] != NULL && s[i] != (ncclComm_t)(uintptr_t)1, "split gave no comm");
        BT_TEST_OK(ncclCommUserRank(s[i], &me));
        BT_TEST_CHECK(me == N - 1 - i, "split by key: rank %d got %d", i, me);
        rev[me] = s[i];
    }
    allreduce_all(rev, N, 333, "AllReduce on the split");

    /* Shrink (default mode, all healthy): rank 2 left out; ncclInProgress as the split. */
    ncclComm_t k[N - 1];
    int excl = 2;
    for (int i = 0; i < N - 1; i++) {
        r = ncclCommShrink(c[i], &excl, 1, &k[i], NULL, NCCL_SHRINK_DEFAULT);
        BT_TEST_CHECK(r == ncclInProgress, "non-blocking shrink returned %d", (int)r);
    }
    wait_all_ok(c, N - 1, "shrink");
    for (int i = 0; i < N - 1; i++) {
        int me = -1, n = -1;
        BT_TEST_OK(ncclCommUserRank(k[i], &me));
        BT_TEST_OK(ncclCommCount(k[i], &n));
        BT_TEST_CHECK(me == i && n == N - 1, "shrink: rank %d is %d of %d", i, me, n);
    }
    allreduce_all(k, N - 1, 4096, "AllReduce on the shrunk comm");
    /* the parent still works after a default shrink */
    allreduce_all(c, N, 64, "AllReduce on the parent after the shrink");

    for (int i = 0; i < N; i++) {
        if (i < N - 1)
            BT_TEST_OK(ncclCommDestroy(k[i]));
        BT_TEST_OK(ncclCommDestroy(s[i]));
        BT_TEST_OK(ncclCommDestroy(c[i]));
    }
}

/* Rank 1 of 2 never calls init: rank 0 stays in progress until aborted or destroyed. */
static void never_arrives(int destroy)
{
    ncclUniqueId id;
    ncclComm_t c;
    ncclConfig_t cfg = nonblocking_config();
    BT_TEST_OK(ncclGetUniqueId(&id));
    BT_TEST_CHECK(ncclCommInitRankConfig(&c, 2, id, 0, &cfg) == ncclInProgress, "init");
    double t0 = bt_test_now_s();
    while (bt_test_now_s() - t0 < 0.5) {
        ncclResult_t r;
        BT_TEST_OK(ncclCommGetAsyncError(c, &r));
        BT_TEST_CHECK(r == ncclInProgress, "init without its peer reported %d", (int)r);
        usleep(10000);
    }
    t0 = bt_test_now_s();
    BT_TEST_OK(destroy ? ncclCommDestroy(c) : ncclCommAbort(c));
    double took = bt_test_now_s() - t0;
    BT_TEST_CHECK(took < 2, "%s of an initializing comm took %.2f s", destroy ? "destroy" : "abort",
                  took);
    printf("never-arriving peer: %s returned in %.3f s\n", destroy ? "destroy" : "abort", took);
}

/* ---- revoke and shrink-abort while collectives wait for a rank that never comes -------- */

struct waiter {
    ncclComm_t comm;
    ncclResult_t result;
    double ended;
};

static void *stuck_allreduce(void *arg)
{
    struct waiter *w = arg;
    int32_t *mine = malloc(sizeof(int32_t) << 16);
    memset(mine, 0, sizeof(int32_t) << 16);
    w->result = ncclAllReduce(mine, mine, 1 << 16, ncclInt32, ncclSum, w->comm, NULL);
    w->ended = bt_test_now_s();
    free(mine);
    return NULL;
}

/* Ranks 0 and 1 of 3 wait in an AllReduce that rank 2 never joins. Then `stop` runs: either
 * revoke every rank and shrink (default) the revoked comm, or shrink with NCCL_SHRINK_ABORT
 * straight away. Either way the waits end at once and ranks 0, 1 run on the new comm. */
static void stuck_then(int shrink_abort)
{
    ncclComm_t c[N], k[2];
    BT_TEST_OK(ncclCommInitAll(c, N, NULL));
    struct waiter w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (struct waiter){.comm = c[i], .result = ncclSuccess};
        pthread_create(&th[i], NULL, stuck_allreduce, &w[i]);
    }
    usleep(300000);
    double t0 = bt_test_now_s();
    int excl = 2;
    if (!shrink_abort) {
        for (int i = 0; i < N; i++)
            BT_TEST_OK(ncclCommRevoke(c[i], NCCL_REVOKE_DEFAULT));
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        BT_TEST_CHECK(ncclCommRevoke(c[0], NCCL_REVOKE_DEFAULT) == ncclInvalidArgument,
                      "a second revoke was not refused");
        BT_TEST_CHECK(ncclCommRevoke(c[0], 5) == ncclInvalidArgument, "revokeFlags 5 accepted");
        float f = 0;
        BT_TEST_CHECK(ncclAllReduce(&f, &f, 1, ncclFloat, ncclSum, c[0], NULL) == ncclInvalidUsage,
                      "a collective on a revoked comm was not refused");
        BT_TEST_OK(ncclGroupStart());
        for (int i = 0; i < 2; i++)
            BT_TEST_OK(ncclCommShrink(c[i], &excl, 1, &k[i], NULL, NCCL_SHRINK_DEFAULT));
        BT_TEST_OK(ncclGroupEnd());
    } else {
        BT_TEST_OK(ncclGroupStart());
        for (int i = 0; i < 2; i++)
            BT_TEST_OK(ncclCommShrink(c[i], &excl, 1, &k[i], NULL, NCCL_SHRINK_ABORT));
        BT_TEST_OK(ncclGroupEnd());
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
    }
    const char *how = shrink_abort ? "shrink-abort" : "revoke";
    for (int i = 0; i < 2; i++) {
        BT_TEST_CHECK(w[i].result != ncclSuccess, "%s: the stuck AllReduce of rank %d succeeded",
                      how, i);
        BT_TEST_CHECK(w[i].ended - t0 < 2, "%s: rank %d's AllReduce ended %.2f s after", how, i,
                      w[i].ended - t0);
    }
    printf("%s: stuck AllReduce ended after %.3f / %.3f s, new comm in %.3f s\n", how,
           w[0].ended - t0, w[1].ended - t0, bt_test_now_s() - t0);
    int32_t v[2][5];
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < 2; i++) {
        for (int e = 0; e < 5; e++)
            v[i][e] = 10 * i + e;
        BT_TEST_OK(ncclAllReduce(v[i], v[i], 5, ncclInt32, ncclSum, k[i], NULL));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int i = 0; i < 2; i++)
        for (int e = 0; e < 5; e++)
            BT_TEST_CHECK(v[i][e] == 10 + 2 * e, "%s: new comm sum [%d] = %d", how, e, v[i][e]);
    for (int i = 0; i < 2; i++)
        BT_TEST_OK(ncclCommDestroy(k[i]));
    for (int i = 0; i < N; i++)
        BT_TEST_OK(ncclCommAbort(c[i]));
}

/* Windows registered from one thread for every rank inside a group (the registration is
 * collective), used by grouped AllReduces, then deregistered; argument errors named. */
static void windows_in_group(void)
{
    ncclComm_t c[N];
    ncclWindow_t w[N];
    int32_t *buf[N];
    BT_TEST_OK(ncclCommInitAll(c, N, NULL));
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < N; i++) {
        buf[i] = malloc(4096 * sizeof(int32_t));
        BT_TEST_OK(ncclCommWindowRegister(c[i], buf[i], 4096 * sizeof(int32_t), &w[i],
                                          NCCL_WIN_COLL_SYMMETRIC));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int i = 0; i < N; i++)
        BT_TEST_CHECK(w[i] != NULL, "rank %d got no window", i);
    for (int round = 0; round < 3; round++) {
        BT_TEST_OK(ncclGroupStart());
        for (int i = 0; i < N; i++) {
            for (int k = 0; k < 4096; k++)
                buf[i][k] = k * (round + 1) + i;
            BT_TEST_OK(
                ncclAllReduce(buf[i] + 16, buf[i] + 16, 4000, ncclInt32, ncclSum, c[i], NULL));
        }
        BT_TEST_OK(ncclGroupEnd());
        for (int i = 0; i < N; i++)
            for (int k = 16; k < 4016; k++)
                BT_TEST_CHECK(buf[i][k] == N * k * (round + 1) + N * (N - 1) / 2,
                              "window AllReduce rank %d [%d] = %d", i, k, buf[i][k]);
    }
    /* A second window overlapping the first is accepted; an AllReduce on a buffer outside
     * every window is exact (it runs as on any buffer). */
    ncclWindow_t over[N];
    int32_t *tail[N];
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < N; i++)
        BT_TEST_OK(
            ncclCommWindowRegister(c[i], buf[i] + 1024, 1024 * sizeof(int32_t), &over[i], 0));
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < N; i++) {
        tail[i] = malloc(8192 * sizeof(int32_t));
        memcpy(tail[i], buf[i], 4096 * sizeof(int32_t));
        for (int k = 4096; k < 8192; k++)
            tail[i][k] = k + i;
        BT_TEST_OK(
            ncclAllReduce(tail[i] + 2048, tail[i] + 2048, 6144, ncclInt32, ncclSum, c[i], NULL));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int i = 0; i < N; i++) {
        for (int k = 4096; k < 8192; k++)
            BT_TEST_CHECK(tail[i][k] == N * k + N * (N - 1) / 2, "out of window [%d] = %d", k,
                          tail[i][k]);
        BT_TEST_OK(ncclCommWindowDeregister(c[i], over[i]));
        free(tail[i]);
    }
    ncclWindow_t bad;
    BT_TEST_CHECK(ncclCommWindowRegister(c[0], NULL, 64, &bad, 0) == ncclInvalidArgument,
                  "a NULL window was accepted");
    BT_TEST_CHECK(ncclCommWindowRegister(c[0], buf[0], 64, &bad, 0x10) == ncclInvalidArgument,
                  "unknown window flags were accepted");
    BT_TEST_CHECK(ncclCommWindowDeregister(c[1], w[0]) == ncclInvalidArgument,
                  "another comm's window was deregistered");
    BT_TEST_OK(ncclCommWindowDeregister(c[0], NULL));
    for (int i = 0; i < N; i++) {
        BT_TEST_OK(ncclCommWindowDeregister(c[i], w[i]));
        BT_TEST_OK(ncclCommDestroy(c[i]));
        free(buf[i]);
    }
}

/* ncclCommInitRankScalable with three ids made here: the ranks meet at the first id's root,
 * the other two roots are stopped at once (the leak check at the end counts threads). */
static void init_scalable(void)
{
    ncclUniqueId ids[3];
    ncclComm_t c[N];
    for (int k = 0; k < 3; k++)
        BT_TEST_OK(ncclGetUniqueId(&ids[k]));
    ncclConfig_t cfg = nonblocking_config();
    for (int i = 0; i < N; i++)
        BT_TEST_CHECK(ncclCommInitRankScalable(&c[i], N, i, 3, ids, &cfg) == ncclInProgress,
                      "scalable init of rank %d", i);
    wait_all_ok(c, N, "scalable init");
    allreduce_all(c, N, 100, "AllReduce after a scalable init");
    for (int i = 0; i < N; i++)
        BT_TEST_OK(ncclCommDestroy(c[i]));
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    nonblocking_lifecycle();
    never_arrives(0);
    never_arrives(1);
    stuck_then(0);
    stuck_then(1);
    windows_in_group();
    init_scalable();
    bt_test_leaks_end(&leaks);
    printf("ok\n");
    return 0;
}
