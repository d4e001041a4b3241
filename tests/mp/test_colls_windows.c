/*
 * Every collective, dtype and op (small sizes, and the 3 MiB subset) with both buffers inside
 * symmetric windows (ncclCommWindowRegister on each rank's arenas, from ncclMemAlloc), on 2
 * and 3 rank processes, host memory: registration is collective, every rank maps every
 * peer's windows, AllReduce from WIN_MIN_BYTES on runs the window AllReduce (the others as
 * on any buffer), the results are those of the FIFO paths, and deregistration is clean (a
 * second one is refused). WIN_MIN_BYTES=0 here, so the small sizes go through
 * windows too. On GPU memory the same matrix runs in tests/gpu/test_gpu_colls
 * (window variant).
 */
#include "colls_common.h"

static const int ranks[] = {2, 3};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},      {CT_ALLREDUCE, 2 /* int32 */, CT_MAX},
    {CT_REDUCESCATTER, CT_DOUBLE, CT_SUM}, {CT_ALLGATHER, CT_BF16, 0},
    {CT_BROADCAST, 1 /* uint8 */, 0},      {CT_ALLTOALL, 2 /* int32 */, 0},
};

static const char *const env[] = {"BATON_WIN_MIN_BYTES=0", NULL};

static const struct colls_suite suite = {
    .name = "colls-windows",
    .env = env,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .colls = CT_ALL_COLLS,
    .dtypes = CT_ALL_DTYPES,
    .ops = CT_ALL_OPS,
    .sizes = CT_SMALL_SIZES,
    .big = big,
    .nbig = sizeof(big) / sizeof(big[0]),
    .big_sizes = 1u << CT_SZ_LARGE,
    .simple_slot = (1u << 20) / 8,
    .timeout_s = 100,
    .windows = 1,
};

int main(void)
{
    return colls_main(&suite);
}
