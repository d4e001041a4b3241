/*
 * What a collectives suite is (struct colls_suite) and the call that runs one
 * (colls_suite_run, colls_suite.c). The suites themselves are the table of tests/mp/colls.c.
 *
 * A suite names which collectives, dtypes, ops, size classes and rank counts it crosses, the
 * environment that forces the path it is about, and, where the path is the point, the counter
 * of batonCommGetStats that every case must move (so that a silent fall-back to another path
 * fails the suite instead of passing on equal results).
 */
#ifndef BT_TEST_COLLS_SUITE_H
#define BT_TEST_COLLS_SUITE_H

#include <stddef.h>

enum ct_coll {
    CT_ALLREDUCE,
    CT_ALLGATHER,
    CT_REDUCESCATTER,
    CT_BROADCAST,
    CT_REDUCE,
    CT_ALLTOALL,
    CT_GATHER,
    CT_SCATTER,
    CT_SENDRECV_RING,  /* send to rank+1, recv from rank-1, in one group */
    CT_SENDRECV_PAIRS, /* send a block to every peer incl. self, recv one from each */
    CT_NCOLLS
};

enum ct_op { CT_SUM, CT_PROD, CT_MAX, CT_MIN, CT_AVG, CT_PREMUL_IMM, CT_PREMUL_DEV, CT_NOPS };

/* The data types, numbered as ncclDataType_t. */
enum ct_dtype_id {
    CT_INT8,
    CT_UINT8,
    CT_INT32,
    CT_UINT32,
    CT_INT64,
    CT_UINT64,
    CT_HALF,
    CT_FLOAT,
    CT_DOUBLE,
    CT_BF16,
    CT_E4M3,
    CT_E5M2,
    CT_NDTYPES
};

#define CT_ALL_COLLS ((1u << CT_NCOLLS) - 1)
#define CT_ALL_DTYPES ((1u << CT_NDTYPES) - 1)
#define CT_ALL_OPS ((1u << CT_NOPS) - 1)
#define CT_RING_COLLS                                                                              \
    ((1u << CT_ALLREDUCE) | (1u << CT_ALLGATHER) | (1u << CT_REDUCESCATTER) |                      \
     (1u << CT_BROADCAST) | (1u << CT_REDUCE))

/* Size classes. Counts are in elements of the case's type. */
enum ct_size {
    CT_SZ_0,       /* 0 elements */
    CT_SZ_1,       /* 1 element */
    CT_SZ_7,       /* 7 elements */
    CT_SZ_LL1,     /* one LL step (8 KB of payload) + 1 element */
    CT_SZ_SIMPLE1, /* one Simple slot (BUFFSIZE / 8) + 1 element */
    CT_SZ_LARGE,   /* 3 MiB + 5 elements */
    CT_NSIZES
};

#define CT_SMALL_SIZES ((1u << CT_SZ_0) | (1u << CT_SZ_1) | (1u << CT_SZ_7) | (1u << CT_SZ_LL1))

struct ct_big_case {
    int coll, dtype, op; /* op ignored for data-movement collectives */
};

/* The path a suite exists to test, asserted per case and rank through batonCommGetStats. */
enum ct_path {
    CT_PATH_ANY, /* results only (and no case may run through windows: none are registered) */
    /* every AllReduce of count > 0 on more than one rank grows `window` by exactly 1, every
     * other case leaves it */
    CT_PATH_WINDOW,
    /* every AllReduce of count > 0 on more than one rank grows `ring_split` by exactly 1 */
    CT_PATH_RING_SPLIT,
    /* every AllGather and ReduceScatter of count > 0 on more than one rank grows `pat` by
     * exactly 1, every other case leaves it */
    CT_PATH_PAT,
    /* every AllReduce of count > 0 on more than one rank grows `tree` by exactly 1 */
    CT_PATH_TREE,
};

#define CT_MAX_ENV 8
#define CT_MAX_RANK_COUNTS 8

struct colls_suite {
    const char *name;              /* the argument that selects it, and its ctest name mp/<name> */
    const char *what;              /* one line: what it proves (the usage lists it) */
    const char *env[CT_MAX_ENV];   /* "NAME=VALUE", NULL-terminated; set before any NCCL call */
    int ranks[CT_MAX_RANK_COUNTS]; /* rank counts, one communicator each; 0-terminated */
    /* The small matrix: colls x dtypes x ops (reducing colls) x sizes x in/out-of-place. */
    unsigned colls, dtypes, ops, sizes;
    /* The representative subset at larger sizes: both variants below 3 MiB, one (alternating
     * along the list) at 3 MiB. */
    const struct ct_big_case *big;
    int nbig;
    unsigned big_sizes;
    size_t simple_slot; /* bytes of one Simple slot under `env` (BUFFSIZE / 8) */
    int timeout_s;      /* per rank count */
    /* Soak instead of the matrix: random cases (collective, dtype, op, size class from
     * soak_sizes, in/out of place) for soak_s seconds per rank count, or soak_cases cases
     * when BT_SOAK_CASES is set (else soak_cases, when nonzero; BT_SOAK_S=S: S seconds
     * instead of soak_s); rank 0's clock or count
     * decides, shared by an AllReduce per case. */
    int soak_s;
    long soak_cases;
    unsigned soak_sizes;
    /* 1: both arenas from ncclMemAlloc, registered as symmetric windows
     * (ncclCommWindowRegister) for the run, so every case's buffers lie inside windows */
    int windows;
    enum ct_path path;
};

/* The whole suite: environment, codec self-test, then every rank count. Returns 0 when every
 * case of every rank passed and nothing leaked. */
int colls_suite_run(const struct colls_suite *s);

#endif
