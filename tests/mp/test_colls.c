/*
 * Every collective x dtype x op x size x in/out-of-place on 1, 2, 3, 4 and 8 rank processes,
 * with the library's default algorithm and protocol choices (see colls_common.h for the
 * inputs, the reference and the bounds).
 *
 * The full cross product at 3 MiB is far too slow for 8 ranks on 2 cores, so it is split:
 *   - the whole matrix (10 collectives x 12 dtypes x 7 ops x in/out-of-place) at the small
 *     sizes 0, 1, 7 and one LL step + 1 element, for every rank count;
 *   - a representative subset at one Simple slot + 1 element and 3 MiB + 5 elements: every
 *     collective at least once, every dtype and every op at least once across the subset,
 *     1-, 2-, 4- and 8-byte elements on the reducing collectives.
 * test_colls_ll.c, test_colls_simple.c and test_colls_tree.c force the other paths.
 */
#include "colls_common.h"

static const int ranks[] = {1, 2, 3, 4, 8};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},
    {CT_ALLREDUCE, 0 /* int8 */, CT_PROD},
    {CT_ALLREDUCE, CT_HALF, CT_AVG},
    {CT_ALLREDUCE, CT_BF16, CT_MAX},
    {CT_ALLREDUCE, CT_E4M3, CT_PREMUL_IMM},
    {CT_ALLREDUCE, CT_E5M2, CT_PREMUL_DEV},
    {CT_ALLREDUCE, 5 /* uint64 */, CT_MIN},
    {CT_ALLREDUCE, 2 /* int32 */, CT_AVG},
    {CT_REDUCESCATTER, CT_FLOAT, CT_SUM},
    {CT_REDUCESCATTER, CT_BF16, CT_AVG},
    {CT_REDUCESCATTER, 1 /* uint8 */, CT_PROD},
    {CT_REDUCE, CT_DOUBLE, CT_SUM},
    {CT_REDUCE, CT_E4M3, CT_MAX},
    {CT_REDUCE, 4 /* int64 */, CT_PREMUL_DEV},
    {CT_ALLGATHER, 1 /* uint8 */, 0},
    {CT_ALLGATHER, CT_FLOAT, 0},
    {CT_BROADCAST, 3 /* uint32 */, 0},
    {CT_ALLTOALL, CT_HALF, 0},
    {CT_GATHER, 0 /* int8 */, 0},
    {CT_SCATTER, CT_DOUBLE, 0},
    {CT_SENDRECV_RING, 1 /* uint8 */, 0},
    {CT_SENDRECV_PAIRS, CT_BF16, 0},
};

static const struct colls_suite suite = {
    .name = "colls",
    .env = NULL,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .colls = CT_ALL_COLLS,
    .dtypes = CT_ALL_DTYPES,
    .ops = CT_ALL_OPS,
    .sizes = CT_SMALL_SIZES,
    .big = big,
    .nbig = sizeof(big) / sizeof(big[0]),
    .big_sizes = (1u << CT_SZ_SIMPLE1) | (1u << CT_SZ_LARGE),
    .simple_slot = (1u << 20) / 8,
    .timeout_s = 100,
};

int main(void)
{
    return colls_main(&suite);
}
