/*
 * Lifecycle corner cases with ranks as threads (found in review, kept as regressions):
 *   - a comm aborted from another thread while an op of it waits in a group: GroupEnd
 *     fails cleanly instead of touching freed memory;
 *   - an init deferred in a group, destroyed before GroupEnd: nothing runs on it;
 *   - one thread splitting two ranks inside a group (the splits run at GroupEnd);
 *   - aborting one comm of a stuck multi-comm group releases the group within a second.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static ncclComm_t victim;
static void *abort_victim(void *unused)
{
    (void)unused;
    BT_TEST_OK(ncclCommAbort(victim));
    return NULL;
}

static void abort_while_queued(void)
{
    ncclComm_t c[1];
    BT_TEST_OK(ncclCommInitAll(c, 1, NULL));
    victim = c[0];
    float buf[4] = {1, 2, 3, 4};
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, victim, NULL));
    pthread_t t;
    pthread_create(&t, NULL, abort_victim, NULL);
    pthread_join(t, NULL);
    ncclResult_t r = ncclGroupEnd();
    BT_TEST_CHECK(r != ncclSuccess, "GroupEnd on an aborted comm returned success");
}

static void destroy_deferred_init(void)
{
    ncclUniqueId id;
    ncclComm_t c;
    BT_TEST_OK(ncclGetUniqueId(&id));
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclCommInitRank(&c, 1, id, 0));
    BT_TEST_OK(ncclCommDestroy(c));
    BT_TEST_OK(ncclGroupEnd());
}

static void split_in_group(void)
{
    ncclComm_t c[2], s[2] = {NULL, NULL};
    BT_TEST_OK(ncclCommInitAll(c, 2, NULL));
    double t0 = now();
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclCommSplit(c[0], 0, 1, &s[0], NULL)); /* key 1: rank 1 of the new comm */
    BT_TEST_OK(ncclCommSplit(c[1], 0, 0, &s[1], NULL));
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_CHECK(now() - t0 < 5, "splits in a group took %.1f s", now() - t0);
    int r0 = -1, r1 = -1;
    BT_TEST_OK(ncclCommUserRank(s[0], &r0));
    BT_TEST_OK(ncclCommUserRank(s[1], &r1));
    BT_TEST_CHECK(r0 == 1 && r1 == 0, "split ranks by key: got %d %d", r0, r1);
    int in[2][3] = {{1, 2, 3}, {10, 20, 30}}, out[2][3];
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < 2; i++)
        BT_TEST_OK(ncclAllReduce(in[i], out[i], 3, ncclInt32, ncclSum, s[i], NULL));
    BT_TEST_OK(ncclGroupEnd());
    for (int i = 0; i < 2; i++)
        BT_TEST_CHECK(out[i][0] == 11 && out[i][2] == 33, "split comm %d sum wrong", i);
    for (int i = 0; i < 2; i++) {
        BT_TEST_OK(ncclCommDestroy(s[i]));
        BT_TEST_OK(ncclCommDestroy(c[i]));
    }
}

static ncclComm_t X[2], Y[2];
static float bx[256], by[256];
static ncclResult_t stuck_result;
static void *stuck_group(void *unused)
{
    (void)unused;
    ncclGroupStart();
    ncclAllReduce(bx, bx, 256, ncclFloat, ncclSum, X[0], NULL); /* X[1], Y[1] never join */
    ncclAllReduce(by, by, 256, ncclFloat, ncclSum, Y[0], NULL);
    stuck_result = ncclGroupEnd();
    return NULL;
}

static void abort_one_of_group(void)
{
    BT_TEST_OK(ncclCommInitAll(X, 2, NULL));
    BT_TEST_OK(ncclCommInitAll(Y, 2, NULL));
    pthread_t t;
    pthread_create(&t, NULL, stuck_group, NULL);
    usleep(300000);
    double t0 = now();
    BT_TEST_OK(ncclCommAbort(X[0]));
    pthread_join(t, NULL);
    BT_TEST_CHECK(now() - t0 < 2, "abort of one comm released the group after %.1f s", now() - t0);
    BT_TEST_CHECK(stuck_result != ncclSuccess, "the aborted group reported success");
    BT_TEST_OK(ncclCommAbort(X[1]));
    for (int i = 0; i < 2; i++)
        BT_TEST_OK(ncclCommAbort(Y[i]));
}

int main(void)
{
    /* First, before the leak baseline: its rendezvous root waits for a rank that never
     * comes (until BOOTSTRAP_TIMEOUT), as NCCL's does. */
    destroy_deferred_init();
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    abort_while_queued();
    split_in_group();
    abort_one_of_group();
    bt_test_leaks_end(&leaks);
    printf("lifecycle: ok\n");
    return 0;
}
