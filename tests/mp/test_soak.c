/*
 * The soak (issue 8): random collectives, dtypes, ops, sizes and in/out of place, every
 * result checked element by element (colls_common.h's reference), for 40 s on each of 2, 3
 * and 4 ranks: two minutes in all. BT_SOAK_CASES=N runs N cases per rank count instead
 * (bench/soak.sh: 10^5).
 */
#include "colls_common.h"

static const int ranks[] = {2, 3, 4};

static const struct colls_suite suite = {
    .name = "soak",
    .env = NULL,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .simple_slot = (1u << 20) / 8,
    .timeout_s = 400,
    .soak_s = 40,
    .soak_sizes = CT_SMALL_SIZES | (1u << CT_SZ_SIMPLE1),
};

int main(void)
{
    return colls_main(&suite);
}
