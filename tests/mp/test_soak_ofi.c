/*
 * The soak over the libfabric backend (NET=OFI, tcp;ofi_rxm over loopback; shared memory and
 * P2P off): 3,400 random cases on each of 2, 3 and 4 ranks (10,200 collectives, each with
 * every element checked, as test_soak.c's), small sizes and one Simple slot.
 */
#include "colls_common.h"

static const int ranks[] = {2, 3, 4};

static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1", "BATON_NET=OFI",
                                  "FI_PROVIDER=tcp;ofi_rxm", NULL};

static const struct colls_suite suite = {
    .name = "soak-ofi",
    .env = env,
    .ranks = ranks,
    .nrank_counts = sizeof(ranks) / sizeof(ranks[0]),
    .simple_slot = (1u << 20) / 8,
    .timeout_s = 400,
    .soak_cases = 3400,
    .soak_sizes = CT_SMALL_SIZES | (1u << CT_SZ_SIMPLE1),
};

int main(void)
{
    return colls_main(&suite);
}
