/*
 * Command line of baton-perf, option for option as nccl-tests spells it (so scripts
 * written for all_reduce_perf work unchanged), plus Baton's additions: -p, -J, --params,
 * --host.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "perf.h"

/* max_exact of the 64-bit integers is 2^53: expected values are computed in double. */
static const struct perf_dtype perf_dtypes[] = {
    {"int8", ncclInt8, 1, PERF_KIND_INT, 0, 0, 0, 127.0},
    {"uint8", ncclUint8, 1, PERF_KIND_UINT, 0, 0, 0, 255.0},
    {"int32", ncclInt32, 4, PERF_KIND_INT, 0, 0, 0, 2147483647.0},
    {"uint32", ncclUint32, 4, PERF_KIND_UINT, 0, 0, 0, 4294967295.0},
    {"int64", ncclInt64, 8, PERF_KIND_INT, 0, 0, 0, 9007199254740992.0},
    {"uint64", ncclUint64, 8, PERF_KIND_UINT, 0, 0, 0, 9007199254740992.0},
    {"half", ncclFloat16, 2, PERF_KIND_FLOAT, 5, 10, 0, 2048.0},
    {"float", ncclFloat32, 4, PERF_KIND_FLOAT, 8, 23, 0, 16777216.0},
    {"double", ncclFloat64, 8, PERF_KIND_FLOAT, 11, 52, 0, 9007199254740992.0},
    {"bfloat16", ncclBfloat16, 2, PERF_KIND_FLOAT, 8, 7, 0, 256.0},
    {"f8e4m3", ncclFloat8e4m3, 1, PERF_KIND_FLOAT, 4, 3, 1, 16.0},
    {"f8e5m2", ncclFloat8e5m2, 1, PERF_KIND_FLOAT, 5, 2, 0, 8.0},
};
#define PERF_NDTYPES (sizeof(perf_dtypes) / sizeof(perf_dtypes[0]))

/* Other spellings: NCCL enum names without the prefix, common short names. */
static const struct {
    const char *alias, *name;
} perf_dtype_aliases[] = {
    {"char", "int8"},         {"int", "int32"},      {"float16", "half"}, {"fp16", "half"},
    {"f16", "half"},          {"float32", "float"},  {"fp32", "float"},   {"f32", "float"},
    {"float64", "double"},    {"fp64", "double"},    {"f64", "double"},   {"bf16", "bfloat16"},
    {"float8e4m3", "f8e4m3"}, {"fp8e4m3", "f8e4m3"}, {"e4m3", "f8e4m3"},  {"float8e5m2", "f8e5m2"},
    {"fp8e5m2", "f8e5m2"},    {"e5m2", "f8e5m2"},
};

static const char *const perf_op_names[PERF_NOPS] = {
    [PERF_OP_SUM] = "sum", [PERF_OP_PROD] = "prod", [PERF_OP_MAX] = "max",
    [PERF_OP_MIN] = "min", [PERF_OP_AVG] = "avg",   [PERF_OP_MULSUM] = "mulsum",
};

const struct perf_dtype *perf_dtype_lookup(const char *name)
{
    for (size_t i = 0; i < PERF_NDTYPES; i++) {
        if (strcasecmp(name, perf_dtypes[i].name) == 0) {
            return &perf_dtypes[i];
        }
    }
    for (size_t i = 0; i < sizeof(perf_dtype_aliases) / sizeof(perf_dtype_aliases[0]); i++) {
        if (strcasecmp(name, perf_dtype_aliases[i].alias) == 0) {
            return perf_dtype_lookup(perf_dtype_aliases[i].name);
        }
    }
    /* "ncclFloat32" and friends. */
    if (strncasecmp(name, "nccl", 4) == 0 && name[4] != '\0') {
        return perf_dtype_lookup(name + 4);
    }
    return NULL;
}

const struct perf_dtype *perf_dtype_of(ncclDataType_t t)
{
    for (size_t i = 0; i < PERF_NDTYPES; i++) {
        if (perf_dtypes[i].nccl == t) {
            return &perf_dtypes[i];
        }
    }
    return NULL;
}

int perf_op_lookup(const char *name, enum perf_op_id *op_p)
{
    for (int i = 0; i < PERF_NOPS; i++) {
        if (strcasecmp(name, perf_op_names[i]) == 0) {
            *op_p = (enum perf_op_id)i;
            return 0;
        }
    }
    if (strcasecmp(name, "premulsum") == 0) {
        *op_p = PERF_OP_MULSUM;
        return 0;
    }
    return -1;
}

const char *perf_op_name(enum perf_op_id op)
{
    return op < PERF_NOPS ? perf_op_names[op] : "?";
}

/* Compare ignoring case, '_' and '-', so "all_reduce", "AllReduce" and "all-reduce" match. */
static int perf_name_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_' || *a == '-') {
            a++;
        }
        while (*b == '_' || *b == '-') {
            b++;
        }
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) {
            return 0;
        }
        if (*a == '\0') {
            return 1;
        }
        a++;
        b++;
    }
}

int perf_coll_lookup(const char *name, enum perf_coll_id *coll_p)
{
    char buf[64];
    size_t len = strlen(name);
    /* Accept the nccl-tests binary names: "all_reduce_perf" (and a path to one). */
    const char *slash = strrchr(name, '/');
    if (slash != NULL) {
        name = slash + 1;
        len = strlen(name);
    }
    if (len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, name, len + 1);
    if (len > 5 && strcmp(buf + len - 5, "_perf") == 0) {
        buf[len - 5] = '\0';
    }
    for (int i = 0; i < PERF_NCOLLS; i++) {
        if (perf_name_eq(buf, perf_colls[i].name)) {
            *coll_p = (enum perf_coll_id)i;
            return 0;
        }
    }
    if (perf_name_eq(buf, "bcast")) {
        *coll_p = PERF_BROADCAST;
        return 0;
    }
    if (perf_name_eq(buf, "all2all")) {
        *coll_p = PERF_ALLTOALL;
        return 0;
    }
    return -1;
}

int perf_parse_size(const char *s, size_t *out_p)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !(v >= 0)) {
        return -1;
    }
    double mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024.0;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024.0 * 1024.0;
        end++;
        break;
    case 't':
    case 'T':
        mult = 1024.0 * 1024.0 * 1024.0 * 1024.0;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v * mult > 1.8e19) {
        return -1;
    }
    *out_p = (size_t)(v * mult);
    return 0;
}

void perf_usage(FILE *f)
{
    fprintf(
        f, "usage: baton-perf <collective> [options]\n"
           "  collective: allreduce allgather reducescatter broadcast reduce alltoall sendrecv\n"
           "              (nccl-tests names such as all_reduce or all_reduce_perf also work)\n"
           "  -b, --minbytes N       smallest size (K/M/G suffixes; default 32M)\n"
           "  -e, --maxbytes N       largest size (default 32M)\n"
           "  -f, --stepfactor F     multiply the size by F each step (default 1: use -i)\n"
           "  -i, --stepbytes N      add N bytes each step when F <= 1 (default 1M)\n"
           "  -n, --iters N          timed iterations per size (default 20)\n"
           "  -w, --warmup_iters N   warm-up iterations (default 5)\n"
           "  -c, --check 0|1        check every element, out-of-place and in-place (default 1)\n"
           "  -o, --op OP            sum prod max min avg mulsum (default sum)\n"
           "  -d, --datatype T       int8 uint8 int32 uint32 int64 uint64 half float double\n"
           "                         bfloat16 f8e4m3 f8e5m2 (default float)\n"
           "  -r, --root R           root of broadcast and reduce (default 0)\n"
           "  -z, --blocking 0|1     wait for each collective before issuing the next (default 0)\n"
           "  -a, --average 0..3     time reported: 0 rank 0, 1 mean, 2 min, 3 max over ranks\n"
           "  -t, --nthreads 1       -g, --ngpus 1: only one rank per process is supported\n"
           "  -G, --cudagraph N      GPU memory: capture N calls in a CUDA graph, replay it -n\n"
           "                         times; the time per call (default 0: no graph)\n"
           "  -R, --local_register R buffers from ncclMemAlloc, 1 registered with\n"
           "                         ncclCommRegister (GPU memory), 2 as symmetric windows\n"
           "                         (ncclCommWindowRegister, GPU or host memory; a library\n"
           "                         without them runs unregistered and says so) (default 0)\n"
           "  -m 1, -C 0, -T S, -y 0: accepted for nccl-tests compatibility\n"
           "  -p, --percentiles      add per-iteration P50/P99/P999 columns (us, worst rank)\n"
           "  -J, --json FILE        also write every row as JSON to FILE\n"
           "      --params           print the library's parameters (Baton only) and exit\n"
           "      --host             use host memory even when a GPU is there\n"
           "  -h, --help             this text\n"
           "Ranks come from baton-run (BATON_RANK/BATON_NRANKS/BATON_COMM_ID), mpirun\n"
           "(OMPI_COMM_WORLD_RANK/SIZE), srun (SLURM_PROCID/SLURM_NTASKS) or torchrun\n"
           "(RANK/WORLD_SIZE). Except under baton-run, set BATON_COMM_ID=host:port (or\n"
           "NCCL_COMM_ID); under torchrun it defaults to MASTER_ADDR:(MASTER_PORT+1).\n"
           "Without a launcher, one rank runs alone.\n");
}

static int perf_parse_int(const char *opt, const char *s, long lo, long hi, long *v_p)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "baton-perf: invalid value '%s' for %s (%ld..%ld)\n", s, opt, lo, hi);
        return -1;
    }
    *v_p = v;
    return 0;
}

enum { PERF_OPT_PARAMS = 1000, PERF_OPT_HOST };

/* The short options as getopt spells them (a leading ':' reports a missing value as ':'). */
static const char perf_shortopts[] = ":b:e:i:f:n:w:c:o:d:r:z:a:t:g:m:G:R:C:T:y:pJ:h";

static const struct option perf_longopts[] = {
    {"minbytes", required_argument, 0, 'b'},
    {"maxbytes", required_argument, 0, 'e'},
    {"stepbytes", required_argument, 0, 'i'},
    {"stepfactor", required_argument, 0, 'f'},
    {"iters", required_argument, 0, 'n'},
    {"warmup_iters", required_argument, 0, 'w'},
    {"check", required_argument, 0, 'c'},
    {"op", required_argument, 0, 'o'},
    {"datatype", required_argument, 0, 'd'},
    {"root", required_argument, 0, 'r'},
    {"blocking", required_argument, 0, 'z'},
    {"average", required_argument, 0, 'a'},
    {"nthreads", required_argument, 0, 't'},
    {"ngpus", required_argument, 0, 'g'},
    {"agg_iters", required_argument, 0, 'm'},
    {"cudagraph", required_argument, 0, 'G'},
    {"local_register", required_argument, 0, 'R'},
    {"report_cputime", required_argument, 0, 'C'},
    {"timeout", required_argument, 0, 'T'},
    {"stream_null", required_argument, 0, 'y'},
    {"percentiles", no_argument, 0, 'p'},
    {"json", required_argument, 0, 'J'},
    {"params", no_argument, 0, PERF_OPT_PARAMS},
    {"host", no_argument, 0, PERF_OPT_HOST},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

/* How an integer option's value is kept. */
enum perf_int_keep {
    PERF_KEEP_VALUE, /* as given */
    PERF_KEEP_BOOL,  /* as v != 0 */
    PERF_KEEP_NONE,  /* checked, then dropped */
};

/* The options that take an integer in [lo, hi], and the int of struct perf_args it sets. */
static const struct perf_int_opt {
    int c;
    long lo, hi;
    enum perf_int_keep keep;
    size_t field; /* offsetof(struct perf_args, ...) */
} perf_int_opts[] = {
    {'n', 1, 1000000000, PERF_KEEP_VALUE, offsetof(struct perf_args, iters)},
    {'w', 0, 1000000000, PERF_KEEP_VALUE, offsetof(struct perf_args, warmup)},
    {'c', 0, 1000, PERF_KEEP_BOOL, offsetof(struct perf_args, check)},
    {'r', 0, 1 << 30, PERF_KEEP_VALUE, offsetof(struct perf_args, root)},
    {'z', 0, 1, PERF_KEEP_VALUE, offsetof(struct perf_args, blocking)},
    {'a', 0, 3, PERF_KEEP_VALUE, offsetof(struct perf_args, average)},
    {'G', 0, 1 << 20, PERF_KEEP_VALUE, offsetof(struct perf_args, cudagraph)},
    {'R', 0, 2, PERF_KEEP_VALUE, offsetof(struct perf_args, local_register)},
    {'T', 0, 1 << 30, PERF_KEEP_NONE, 0}, /* the library's own BATON_TIMEOUT governs waits */
};
#define PERF_NINT_OPTS (sizeof(perf_int_opts) / sizeof(perf_int_opts[0]))

/* The defaults of nccl-tests, and the collective a binary called all_reduce_perf (a
 * symlink) names. */
static void perf_args_defaults(int argc, char **argv, struct perf_args *a)
{
    memset(a, 0, sizeof(*a));
    a->coll = PERF_NCOLLS;
    a->dtype = perf_dtype_lookup("float");
    a->op = PERF_OP_SUM;
    a->min_bytes = a->max_bytes = 32u << 20;
    a->step_factor = 1;
    a->step_bytes = 1u << 20;
    a->iters = 20;
    a->warmup = 5;
    a->check = 1;
    a->root = 0;
    a->blocking = 0;
    a->average = 1;

    enum perf_coll_id from_argv0;
    if (argc > 0 && perf_coll_lookup(argv[0], &from_argv0) == 0) {
        a->coll = from_argv0;
    }
}

/* Option c when it takes an integer: 0 (set), 1 (invalid value, said), -1 (not one of them). */
static int perf_args_int_option(int c, const char *arg, struct perf_args *a)
{
    for (size_t i = 0; i < PERF_NINT_OPTS; i++) {
        const struct perf_int_opt *o = &perf_int_opts[i];
        if (o->c != c) {
            continue;
        }
        char name[3] = {'-', (char)c, '\0'};
        long v;
        if (perf_parse_int(name, arg, o->lo, o->hi, &v) != 0) {
            return 1;
        }
        int *field = (int *)((char *)a + o->field);
        if (o->keep == PERF_KEEP_VALUE) {
            *field = (int)v;
        } else if (o->keep == PERF_KEEP_BOOL) {
            *field = v != 0;
        }
        return 0;
    }
    return -1;
}

/* One option from getopt (c, with its value in optarg): 0 to go on, else perf_args_parse's
 * return value. */
static int perf_args_option(int c, char **argv, struct perf_args *a)
{
    int rc = perf_args_int_option(c, optarg, a);
    if (rc >= 0) {
        return rc;
    }
    switch (c) {
    case 'b':
    case 'e':
    case 'i': {
        size_t s;
        if (perf_parse_size(optarg, &s) != 0) {
            fprintf(stderr, "baton-perf: invalid size '%s' for -%c\n", optarg, c);
            return 1;
        }
        *(c == 'b' ? &a->min_bytes : c == 'e' ? &a->max_bytes : &a->step_bytes) = s;
        return 0;
    }
    case 'f': {
        char *end = NULL;
        double f = strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(f >= 0) || f > 1e6) {
            fprintf(stderr, "baton-perf: invalid step factor '%s'\n", optarg);
            return 1;
        }
        a->step_factor = f;
        return 0;
    }
    case 'o':
        if (perf_op_lookup(optarg, &a->op) != 0) {
            fprintf(stderr, "baton-perf: unknown op '%s' (sum prod max min avg mulsum)\n", optarg);
            return 1;
        }
        return 0;
    case 'd':
        a->dtype = perf_dtype_lookup(optarg);
        if (a->dtype == NULL) {
            fprintf(stderr,
                    "baton-perf: unknown datatype '%s' (int8 uint8 int32 uint32 int64 "
                    "uint64 half float double bfloat16 f8e4m3 f8e5m2)\n",
                    optarg);
            return 1;
        }
        return 0;
    case 't':
    case 'g':
    case 'm':
        if (strcmp(optarg, "1") != 0) {
            fprintf(stderr, "baton-perf: -%c %s: only 1 is supported (one rank per process)\n", c,
                    optarg);
            return 1;
        }
        return 0;
    case 'C':
    case 'y':
        if (strcmp(optarg, "0") != 0) {
            fprintf(stderr, "baton-perf: -%c %s: not supported yet (only 0)\n", c, optarg);
            return 1;
        }
        return 0;
    case 'p':
        a->percentiles = 1;
        return 0;
    case 'J':
        a->json_path = optarg;
        return 0;
    case PERF_OPT_PARAMS:
        a->print_params = 1;
        return 0;
    case PERF_OPT_HOST:
        a->force_host = 1;
        return 0;
    case 'h':
        perf_usage(stdout);
        return 2;
    case ':':
        fprintf(stderr, "baton-perf: option '%s' needs a value\n", argv[optind - 1]);
        return 1;
    default:
        fprintf(stderr, "baton-perf: unknown option '%s'\n", argv[optind - 1]);
        fprintf(stderr, "run 'baton-perf --help' for the options\n");
        return 1;
    }
}

/* What the options say together, once all are read. */
static int perf_args_check(const struct perf_args *a)
{
    if (a->coll == PERF_NCOLLS && !a->print_params) {
        fprintf(stderr, "baton-perf: which collective?\n");
        fprintf(stderr, "run 'baton-perf --help' for the options\n");
        return 1;
    }
    if (a->min_bytes > a->max_bytes) {
        fprintf(stderr, "baton-perf: minbytes (%zu) is larger than maxbytes (%zu)\n", a->min_bytes,
                a->max_bytes);
        return 1;
    }
    if (a->step_factor <= 1 && a->step_bytes == 0 && a->min_bytes != a->max_bytes) {
        fprintf(stderr, "baton-perf: step factor <= 1 and step bytes 0 never reach maxbytes\n");
        return 1;
    }
    return 0;
}

int perf_args_parse(int argc, char **argv, struct perf_args *a)
{
    const char *coll_name = NULL;
    int c, rc;

    perf_args_defaults(argc, argv, a);
    optind = 0; /* glibc: 0 fully resets getopt, so the parser can run more than once */
    opterr = 0;
    while ((c = getopt_long(argc, argv, perf_shortopts, perf_longopts, NULL)) != -1) {
        rc = perf_args_option(c, argv, a);
        if (rc != 0) {
            return rc;
        }
    }
    /* The one argument that is not an option names the collective. */
    for (int i = optind; i < argc; i++) {
        if (coll_name != NULL) {
            fprintf(stderr, "baton-perf: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
        coll_name = argv[i];
    }
    if (coll_name != NULL && perf_coll_lookup(coll_name, &a->coll) != 0) {
        fprintf(stderr, "baton-perf: unknown collective '%s'\n", coll_name);
        fprintf(stderr, "run 'baton-perf --help' for the options\n");
        return 1;
    }
    return perf_args_check(a);
}
