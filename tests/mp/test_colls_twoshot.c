/*
 * AllReduce forced onto the two-shot (BATON_ALGO=TwoShot: reduce-scatter, then all-gather,
 * by direct sends over a connector pair with every peer, coll/twoshot.h, the schedule the GPU
 * kernel runs too) on 2 to 8 ranks (3, 5: odd counts, parts of unequal size), every dtype x op
 * at sizes 1, 7 (fewer elements than ranks: empty parts), one LL step + 1 and one Simple slot
 * + 1 (LL and Simple), and a subset at 3 MiB + 5. See colls_common.h for the checks.
 */
#include "colls_common.h"

static const char *const env[] = {"BATON_ALGO=TwoShot", NULL};
static const int ranks[] = {2, 3, 4, 5, 8};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},       {CT_ALLREDUCE, CT_HALF, CT_AVG},
    {CT_ALLREDUCE, CT_BF16, CT_PREMUL_IMM}, {CT_ALLREDUCE, CT_E5M2, CT_MAX},
    {CT_ALLREDUCE, 4 /* int64 */, CT_PROD}, {CT_ALLREDUCE, 3 /* uint32 */, CT_AVG},
};

static const struct colls_suite suite = {
    .name = "colls-twoshot",
    .env = env,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .colls = 1u << CT_ALLREDUCE,
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
