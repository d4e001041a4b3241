/*
 * Ranks whose tuning environment differs (ALGO, PROTO, thresholds) still agree on every
 * schedule: rank 0's settings are used by all. Without that, a 1 KB AllReduce would be Ring
 * on one rank and Direct on the other, and hang.
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "nccl.h"

static int rank_main(int rank, int nranks, void *arg)
{
    const ncclUniqueId *id = arg;
    if (rank == 0) {
        setenv("BATON_ALGO", "Ring", 1);
        setenv("BATON_PROTO", "LL", 1);
    } else {
        setenv("BATON_DIRECT_THRESHOLD", "1048576", 1);
        setenv("BATON_LL_THRESHOLD", "0", 1);
    }
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    static const size_t counts[] = {1, 256, 4099, 300000};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k];
        int32_t *in = malloc(n * sizeof(int32_t)), *out = malloc(n * sizeof(int32_t));
        for (size_t i = 0; i < n; i++)
            in[i] = (int32_t)(rank + 1) * (int32_t)(i % 1000);
        BT_TEST_OK(ncclAllReduce(in, out, n, ncclInt32, ncclSum, comm, NULL));
        for (size_t i = 0; i < n; i++)
            BT_TEST_CHECK(out[i] == 3 * (int32_t)(i % 1000), "count %zu element %zu: %d", n, i,
                          out[i]);
        free(in);
        free(out);
    }
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
    printf("env mismatch: ok\n");
    return 0;
}
