/*
 * The collectives forced onto the Simple protocol (BATON_PROTO=Simple) over 4 channels
 * with small buffers (BATON_BUFFSIZE=65536: 8 KB slots; BATON_P2P_CHUNKSIZE=8192), so that
 * even small collectives take many steps, channels get uneven or empty shares (7 elements
 * over 4 channels) and the FIFOs wrap many times at 3 MiB. See colls_common.h for the checks.
 */
#include "colls_common.h"

static const char *const env[] = {"BATON_PROTO=Simple",       "BATON_MIN_NCHANNELS=4",
                                  "BATON_MAX_NCHANNELS=4",    "BATON_BUFFSIZE=65536",
                                  "BATON_P2P_CHUNKSIZE=8192", NULL};
static const int ranks[] = {2, 3, 4, 8};

static const struct ct_big_case big[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_AVG},
    {CT_ALLREDUCE, CT_E4M3, CT_SUM},
    {CT_REDUCESCATTER, CT_DOUBLE, CT_PROD},
    {CT_REDUCE, CT_HALF, CT_PREMUL_IMM},
    {CT_ALLGATHER, CT_BF16, 0},
    {CT_BROADCAST, 1 /* uint8 */, 0},
    {CT_ALLTOALL, 2 /* int32 */, 0},
    {CT_SENDRECV_PAIRS, 1 /* uint8 */, 0},
};

static const struct colls_suite suite = {
    .name = "colls-simple",
    .env = env,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .colls = CT_ALL_COLLS,
    .dtypes = CT_ALL_DTYPES,
    .ops = CT_ALL_OPS,
    .sizes = (1u << CT_SZ_1) | (1u << CT_SZ_7) | (1u << CT_SZ_SIMPLE1) | (1u << CT_SZ_LL1),
    .big = big,
    .nbig = sizeof(big) / sizeof(big[0]),
    .big_sizes = 1u << CT_SZ_LARGE,
    .simple_slot = 65536 / 8,
    .timeout_s = 100,
};

int main(void)
{
    return colls_main(&suite);
}
