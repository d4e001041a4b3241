/*
 * Every collective over the NET transport (shared memory off, so the CPU proxy and a network
 * backend carry every byte over loopback), 2, 3 and 4 ranks. The network and its
 * configuration (SOCKET_NTHREADS x NSOCKS_PERTHREAD, NET=OFI, a plugin) come from the
 * including test, and so do the dtypes; every op, at small sizes; a subset large.
 */
#include "colls_common.h"

static const int ranks[] = {2, 3, 4};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM}, {CT_ALLREDUCE, CT_BF16, CT_AVG},
    {CT_REDUCESCATTER, 2, CT_MAX},    {CT_ALLGATHER, 1 /* uint8 */, 0},
    {CT_BROADCAST, CT_DOUBLE, 0},     {CT_REDUCE, CT_HALF, CT_PREMUL_IMM},
    {CT_ALLTOALL, 2 /* int32 */, 0},  {CT_SENDRECV_PAIRS, 1 /* uint8 */, 0},
};

/* float, int32, half, bfloat16: the socket configurations' set */
#define NET_SUITE_DTYPES ((1u << CT_FLOAT) | (1u << 2) | (1u << CT_HALF) | (1u << CT_BF16))

static int net_suite_main(const char *name, const char *const *env, unsigned dtypes)
{
    const struct colls_suite suite = {
        .name = name,
        .env = env,
        .ranks = ranks,
        .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
        .colls = CT_ALL_COLLS,
        .dtypes = dtypes,
        .ops = CT_ALL_OPS,
        .sizes = (1u << CT_SZ_0) | (1u << CT_SZ_7) | (1u << CT_SZ_SIMPLE1),
        .big = big,
        .nbig = sizeof(big) / sizeof(big[0]),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = (1u << 20) / 8,
        .timeout_s = 100,
    };
    return colls_main(&suite);
}
