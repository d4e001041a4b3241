/*
 * CHECK_COLL=1 (set on rank 0 only: rank 0's setting is every rank's):
 *   - matching collectives run and give the right results;
 *   - a count mismatch (AllReduce 100 vs 200), a root mismatch (Broadcast root 0 vs 1), a
 *     dtype mismatch and an op mismatch each fail on every rank with ncclInvalidUsage, and
 *     ncclGetLastError names both ranks' calls;
 *   - a group whose ranks hold different numbers of collectives fails the same way;
 *   - the communicator is still usable afterwards (nothing ran), and nothing leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

static void expect_mismatch(ncclResult_t r, int rank, const char *what, ncclComm_t comm)
{
    BT_TEST_CHECK(r == ncclInvalidUsage, "rank %d, %s: result %d, not ncclInvalidUsage", rank, what,
                  (int)r);
    const char *msg = ncclGetLastError(comm);
    BT_TEST_CHECK(msg && strstr(msg, "CHECK_COLL") && strstr(msg, "rank 0 calls") &&
                      strstr(msg, "rank 1 calls"),
                  "rank %d, %s: last error does not name both sides: '%s'", rank, what,
                  msg ? msg : "(null)");
}

static void allreduce_ok(ncclComm_t comm, int rank)
{
    int32_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = rank + i;
    BT_TEST_OK(ncclAllReduce(in, out, 64, ncclInt32, ncclSum, comm, NULL));
    for (int i = 0; i < 64; i++)
        BT_TEST_CHECK(out[i] == 1 + 2 * i, "element %d: %d", i, out[i]);
}

static int rank_main(int rank, int nranks, void *arg)
{
    const ncclUniqueId *id = arg;
    if (rank == 0)
        setenv("BATON_CHECK_COLL", "1", 1);
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    allreduce_ok(comm, rank);

    int32_t buf[256], out[256];
    memset(buf, 0, sizeof(buf));
    expect_mismatch(ncclAllReduce(buf, out, rank == 0 ? 100 : 200, ncclInt32, ncclSum, comm, NULL),
                    rank, "count", comm);
    expect_mismatch(ncclBroadcast(buf, out, 16, ncclInt32, rank, comm, NULL), rank, "root", comm);
    expect_mismatch(
        ncclAllReduce(buf, out, 16, rank == 0 ? ncclInt32 : ncclFloat32, ncclSum, comm, NULL), rank,
        "dtype", comm);
    expect_mismatch(
        ncclAllReduce(buf, out, 16, ncclInt32, rank == 0 ? ncclSum : ncclMax, comm, NULL), rank,
        "op", comm);
    /* a group: rank 0 holds two collectives, rank 1 one */
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclAllReduce(buf, out, 16, ncclInt32, ncclSum, comm, NULL));
    if (rank == 0)
        BT_TEST_OK(ncclAllReduce(buf, out + 16, 16, ncclInt32, ncclSum, comm, NULL));
    expect_mismatch(ncclGroupEnd(), rank, "group size", comm);

    allreduce_ok(comm, rank); /* nothing ran: the communicator still works */
    BT_TEST_OK(ncclCommDestroy(comm));
    bt_test_leaks_end(&leaks);
    return 0;
}

int main(void)
{
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    int shm0 = bt_test_shm_count();
    BT_TEST_CHECK(bt_test_run_ranks(2, rank_main, &id, 60) == 0, "ranks failed");
    BT_TEST_CHECK(bt_test_shm_count() <= shm0, "shared-memory segments left behind");
    printf("check_coll: ok\n");
    return 0;
}
