/*
 * The collectives on rings planned from a measured link matrix (BATON_TOPO_PROBE=1) whose
 * links differ: every link of rank 0 is capped at a quarter of the others' rate
 * (BATON_INJECT_LINK_BW), which no ring avoids, so the rings follow the search's order
 * (reversed on odd channels) and the ring AllReduce cuts its loops into unequal blocks
 * (graph/ring_plan.h). ALGO=Ring keeps AllReduce on the ring at every size; MIN_NCHANNELS=2
 * uses both ring directions. Every dtype x op at sizes 1, 7, one LL step + 1 and one Simple
 * slot + 1, and a subset at 3 MiB + 5. See colls_common.h for the checks.
 */
#include "colls_common.h"

static const char *const env[] = {"BATON_TOPO_PROBE=1",
                                  "BATON_INJECT_LINK_BW=*>*:2000,0>*:500,*>0:500",
                                  "BATON_ALGO=Ring", "BATON_MIN_NCHANNELS=2", NULL};
static const int ranks[] = {3, 4, 5};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},       {CT_ALLREDUCE, CT_HALF, CT_AVG},
    {CT_ALLREDUCE, CT_BF16, CT_PREMUL_IMM}, {CT_ALLREDUCE, 4 /* int64 */, CT_PROD},
    {CT_REDUCESCATTER, CT_FLOAT, CT_SUM},   {CT_ALLGATHER, 1 /* uint8 */, 0},
    {CT_BROADCAST, CT_DOUBLE, 0},           {CT_REDUCE, 2 /* int32 */, CT_MAX},
};

static const struct colls_suite suite = {
    .name = "colls-planned",
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
    .timeout_s = 120,
};

int main(void)
{
    return colls_main(&suite);
}
