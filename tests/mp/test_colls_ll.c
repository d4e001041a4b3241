/*
 * The collectives forced onto the LL protocol (BATON_PROTO=LL), also at sizes where the
 * tuner would pick Simple: one Simple slot + 1 element (17 LL steps) and 3 MiB + 5
 * elements. Send/Recv (and AlltoAll, Gather, Scatter built on it) always run Simple, so
 * only the ring collectives are here. See colls_common.h for the checks.
 */
#include "colls_common.h"

static const char *const env[] = {"BATON_PROTO=LL", NULL};
static const int ranks[] = {2, 3, 4, 8};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},    {CT_ALLREDUCE, CT_BF16, CT_PREMUL_DEV},
    {CT_REDUCESCATTER, CT_HALF, CT_AVG}, {CT_ALLGATHER, 1 /* uint8 */, 0},
    {CT_BROADCAST, CT_DOUBLE, 0},        {CT_REDUCE, 2 /* int32 */, CT_MAX},
};

static const struct colls_suite suite = {
    .name = "colls-ll",
    .env = env,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .colls = (1u << CT_ALLREDUCE) | (1u << CT_ALLGATHER) | (1u << CT_REDUCESCATTER) |
             (1u << CT_BROADCAST) | (1u << CT_REDUCE),
    .dtypes = CT_ALL_DTYPES,
    .ops = CT_ALL_OPS,
    .sizes = (1u << CT_SZ_1) | (1u << CT_SZ_7) | (1u << CT_SZ_LL1) | (1u << CT_SZ_SIMPLE1),
    .big = big,
    .nbig = sizeof(big) / sizeof(big[0]),
    .big_sizes = 1u << CT_SZ_LARGE,
    .simple_slot = (1u << 20) / 8,
    .timeout_s = 100,
};

int main(void)
{
    return colls_main(&suite);
}
