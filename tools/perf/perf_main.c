/*
 * baton-perf main: find this process's rank, create the communicator, then for each size
 * time the collective out of place and in place, check the data, and print a row.
 *
 * Per size and placement (as nccl-tests' BenchTime):
 *   fill inputs (-c 1) -> one untimed call -> barrier -> `iters` timed calls -> sync
 *   -> combine times over ranks (-a) -> refill, one call, check every element, sum the
 *   wrong counts over ranks.
 * Only the public NCCL API is used, plus two optional Baton symbols found with dlsym, so
 * this binary also measures NVIDIA's NCCL.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

typedef void (*perf_params_print_fn)(FILE *f);
typedef const char *(*perf_version_string_fn)(void);
typedef ncclResult_t (*perf_init_host_fn)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);

struct perf_ctx {
    struct perf_args a;
    const struct perf_coll *coll;
    const struct perf_mem_ops *mem;
    void *stream; /* NULL: host collectives ignore it */
    int dev;      /* the GPU, or -1 for host memory */
    int rank, nranks;
    const char *launcher;
    int is_baton;
    ncclComm_t comm;
    ncclRedOp_t op;
    int op_created;     /* PreMulSum op to destroy */
    void *send, *recv;  /* the benchmark's buffers, sized for maxbytes */
    int nccl_mem;       /* -R: send and recv come from ncclMemAlloc */
    void *reg[2];       /* -R: send's and recv's registration handle or window (NULL: none) */
    char reg_note[160]; /* -R: what the preamble says about the registration */
    void *scratch;      /* 64 bytes for the tool's own small allreduces */
    void *host_stage;   /* fill/check staging when the memory is not host-accessible */
    struct perf_data_plan plan;
    double *samples; /* -p: per-iteration times, seconds */
    /* what the communicator's init cost: its time, and host RSS and device memory in use
     * (bytes) before it, after it and after the warm-up (the benchmark's buffers apart) */
    double init_ms;
    long long rss[3], dev_used[3];
    size_t buf_bytes, host_buf_bytes; /* the benchmark's buffers: device, host */
};

#define PERF_CHECK_NCCL(ctx, call, what)                                                           \
    do {                                                                                           \
        ncclResult_t perf_res_ = (call);                                                           \
        if (perf_res_ != ncclSuccess) {                                                            \
            perf_nccl_fail((ctx), (what), perf_res_);                                              \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static void perf_nccl_fail(const struct perf_ctx *ctx, const char *what, ncclResult_t res)
{
    const char *last = ctx->comm != NULL ? ncclGetLastError(ctx->comm) : NULL;
    fprintf(stderr, "baton-perf: rank %d: %s failed: %s (%d)%s%s\n", ctx->rank, what,
            ncclGetErrorString(res), (int)res, last != NULL && last[0] ? ": " : "",
            last != NULL ? last : "");
}

static double perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- ranks and rendezvous ---- */

static int perf_env_int(const char *name, int *v_p)
{
    const char *s = getenv(name);
    char *end = NULL;
    if (s == NULL || *s == '\0') {
        return 0;
    }
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > INT_MAX) {
        return -1;
    }
    *v_p = (int)v;
    return 1;
}

/*
 * Launchers, first match wins: baton-run, Open MPI's mpirun, MPICH/Hydra, srun, torchrun.
 * Every rank calls ncclCommInitRank with an id it never exchanges: the rendezvous
 * address comes from BATON_COMM_ID (or NCCL_COMM_ID), and rank 0's library starts the
 * root there. baton-run sets it; under torchrun it defaults to MASTER_ADDR and
 * MASTER_PORT + 1 (MASTER_PORT itself is torch's TCPStore); other launchers must pass it.
 */
static int perf_ranks_from_env(struct perf_ctx *ctx)
{
    static const struct {
        const char *launcher, *rank, *size;
    } envs[] = {
        {"baton-run", "BATON_RANK", "BATON_NRANKS"},
        {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"mpich", "PMI_RANK", "PMI_SIZE"},
        {"srun", "SLURM_PROCID", "SLURM_NTASKS"},
        {"torchrun", "RANK", "WORLD_SIZE"},
    };
    ctx->rank = 0;
    ctx->nranks = 1;
    ctx->launcher = "none";
    for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
        int r = 0, n = 0;
        int hr = perf_env_int(envs[i].rank, &r);
        int hn = perf_env_int(envs[i].size, &n);
        if (hr == 0 || hn == 0) {
            continue;
        }
        if (hr < 0 || hn < 0 || n < 1 || r >= n) {
            fprintf(stderr, "baton-perf: bad rank environment %s=%s %s=%s\n", envs[i].rank,
                    getenv(envs[i].rank), envs[i].size, getenv(envs[i].size));
            return -1;
        }
        ctx->rank = r;
        ctx->nranks = n;
        ctx->launcher = envs[i].launcher;
        break;
    }

    const char *id = getenv("BATON_COMM_ID");
    if (id == NULL || *id == '\0') {
        id = getenv("NCCL_COMM_ID");
    }
    if ((id == NULL || *id == '\0') && strcmp(ctx->launcher, "torchrun") == 0) {
        const char *addr = getenv("MASTER_ADDR");
        int port = 0;
        if (addr != NULL && *addr != '\0' && perf_env_int("MASTER_PORT", &port) > 0 &&
            port < 65535) {
            char buf[512];
            snprintf(buf, sizeof(buf), strchr(addr, ':') != NULL ? "[%s]:%d" : "%s:%d", addr,
                     port + 1);
            setenv("BATON_COMM_ID", buf, 1);
            id = getenv("BATON_COMM_ID");
        }
    }
    if (id == NULL || *id == '\0') {
        if (ctx->nranks > 1) {
            fprintf(stderr,
                    "baton-perf: rank %d of %d (launcher %s): set BATON_COMM_ID=host:port "
                    "(an address of rank 0's host and a free port) so the ranks can meet, "
                    "or start them with baton-run\n",
                    ctx->rank, ctx->nranks, ctx->launcher);
            return -1;
        }
        return 0;
    }
    /* Both names, so that Baton and NVIDIA's NCCL meet at the same address. */
    setenv("BATON_COMM_ID", id, 0);
    setenv("NCCL_COMM_ID", id, 0);
    return 1;
}

/* Resident host memory of this process, bytes (-1: unknown). */
static long long perf_rss(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL) {
        return -1;
    }
    int n = fscanf(f, "%ld %ld", &pages, &resident);
    fclose(f);
    return n == 2 ? (long long)resident * sysconf(_SC_PAGESIZE) : -1;
}

/* Snapshot k of the init costs (0 before init, 1 after, 2 after the warm-up). */
static void perf_cost_mark(struct perf_ctx *ctx, int k)
{
    ctx->rss[k] = perf_rss();
    ctx->dev_used[k] = ctx->mem->device_used ? ctx->mem->device_used() : -1;
}

/* "# init: ..." (rank 0): the communicator's init time and memory, beside the library. */
static void perf_cost_print(const struct perf_ctx *ctx)
{
    const double mb = 1024.0 * 1024.0;
    printf("# init: %.1f ms; host RSS +%.1f MB after init, +%.1f MB after the warm-up beyond the "
           "benchmark's %.1f MB of host buffers",
           ctx->init_ms, (double)(ctx->rss[1] - ctx->rss[0]) / mb,
           (double)(ctx->rss[2] - ctx->rss[0] - (long long)ctx->host_buf_bytes) / mb,
           (double)ctx->host_buf_bytes / mb);
    if (ctx->dev_used[0] >= 0) {
        /* device-wide: with several processes on one GPU, theirs count too */
        printf("; device memory in use +%.1f MB after init, +%.1f MB after the warm-up beyond "
               "its %.1f MB of device buffers",
               (double)(ctx->dev_used[1] - ctx->dev_used[0]) / mb,
               (double)(ctx->dev_used[2] - ctx->dev_used[0] - (long long)ctx->buf_bytes) / mb,
               (double)ctx->buf_bytes / mb);
    }
    printf("\n");
}

static int perf_comm_init(struct perf_ctx *ctx, int have_comm_id)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (!have_comm_id || !ctx->is_baton) {
        /* Alone: a fresh id. NVIDIA's NCCL with NCCL_COMM_ID set builds the same id from
         * the variable on every rank (without starting a root). Baton reads BATON_COMM_ID
         * itself when given a zeroed id, and its ncclGetUniqueId always starts a root, so
         * it is not called there. */
        PERF_CHECK_NCCL(ctx, ncclGetUniqueId(&id), "ncclGetUniqueId");
    }
    /* Host buffers need a host communicator: Baton's batonCommInitRankHost when the library
     * has it, else ncclCommInitRank with BATON_DEVICE=cpu (set in main). */
    perf_init_host_fn init_host = NULL;
    if (ctx->is_baton && ctx->mem == &perf_mem_host) {
        init_host = (perf_init_host_fn)dlsym(RTLD_DEFAULT, "batonCommInitRankHost");
    }
    perf_cost_mark(ctx, 0);
    double t0 = perf_now();
    if (init_host != NULL) {
        PERF_CHECK_NCCL(ctx, init_host(&ctx->comm, ctx->nranks, id, ctx->rank),
                        "batonCommInitRankHost");
    } else {
        PERF_CHECK_NCCL(ctx, ncclCommInitRank(&ctx->comm, ctx->nranks, id, ctx->rank),
                        "ncclCommInitRank");
    }
    ctx->init_ms = (perf_now() - t0) * 1e3;
    perf_cost_mark(ctx, 1);
    return 0;
}

/* ---- the tool's own small collectives (barrier, time and error reductions) ---- */

static int perf_allreduce_small(struct perf_ctx *ctx, void *vals, size_t count, ncclDataType_t t,
                                ncclRedOp_t op)
{
    size_t bytes = count * 8;
    if (ctx->mem->from_host(ctx->scratch, vals, bytes) != 0) {
        return -1;
    }
    PERF_CHECK_NCCL(ctx,
                    ncclAllReduce(ctx->scratch, ctx->scratch, count, t, op, ctx->comm,
                                  (cudaStream_t)ctx->stream),
                    "ncclAllReduce (tool)");
    if (ctx->mem->sync(ctx->stream) != 0 || ctx->mem->to_host(vals, ctx->scratch, bytes) != 0) {
        return -1;
    }
    return 0;
}

static int perf_barrier(struct perf_ctx *ctx)
{
    int64_t one = 1;
    return perf_allreduce_small(ctx, &one, 1, ncclInt64, ncclSum);
}

/* ---- data ---- */

static void perf_ptrs(const struct perf_ctx *ctx, const struct perf_sizes *s, int in_place,
                      char **send_p, char **recv_p)
{
    const size_t ts = ctx->a.dtype->size;
    if (in_place) {
        *send_p = (char *)ctx->recv + s->send_inplace_off * (size_t)ctx->rank * ts;
        *recv_p = (char *)ctx->recv + s->recv_inplace_off * (size_t)ctx->rank * ts;
    } else {
        *send_p = ctx->send;
        *recv_p = ctx->recv;
    }
}

static int perf_init_data(struct perf_ctx *ctx, const struct perf_sizes *s, int in_place)
{
    const size_t ts = ctx->a.dtype->size;
    char *send, *recv;
    perf_ptrs(ctx, s, in_place, &send, &recv);
    /* The whole receive side first (in place, the input lies inside it). */
    size_t whole = (in_place && s->send_count > s->recv_count ? s->send_count : s->recv_count);
    if (ctx->mem->memset(in_place ? ctx->recv : recv, 0, whole * ts) != 0) {
        return -1;
    }
    if (ctx->mem->host_accessible) {
        perf_fill(&ctx->plan, send, s->send_count, ctx->rank, 0);
    } else {
        perf_fill(&ctx->plan, ctx->host_stage, s->send_count, ctx->rank, 0);
        if (ctx->mem->from_host(send, ctx->host_stage, s->send_count * ts) != 0) {
            return -1;
        }
    }
    return ctx->mem->sync(ctx->stream);
}

static long long perf_check_data(struct perf_ctx *ctx, const struct perf_sizes *s, int in_place)
{
    const size_t ts = ctx->a.dtype->size;
    char *send, *recv;
    const char *out;
    long long wrong = 0;
    perf_ptrs(ctx, s, in_place, &send, &recv);
    if (ctx->mem->host_accessible) {
        out = recv;
    } else {
        if (ctx->mem->to_host(ctx->host_stage, recv, s->recv_count * ts) != 0) {
            return -1;
        }
        out = ctx->host_stage;
    }
    for (size_t j = 0; j < s->recv_count; j++) {
        double v;
        if (ctx->coll->expected(&ctx->plan, ctx->rank, ctx->a.root, s->count, j, &v) &&
            !perf_element_ok(&ctx->plan, out + j * ts, v)) {
            if (wrong < 4) {
                fprintf(stderr, "baton-perf: rank %d: %s %s element %zu: expected %g, got %g\n",
                        ctx->rank, ctx->coll->name, in_place ? "in-place" : "out-of-place", j, v,
                        perf_decode(ctx->a.dtype, out + j * ts));
            }
            wrong++;
        }
    }
    return wrong;
}

/* ---- timing ---- */

static int perf_run_once(struct perf_ctx *ctx, const struct perf_sizes *s, int in_place)
{
    char *send, *recv;
    perf_ptrs(ctx, s, in_place, &send, &recv);
    PERF_CHECK_NCCL(ctx,
                    ctx->coll->run(send, recv, s->count, ctx->a.dtype->nccl, ctx->op, ctx->a.root,
                                   ctx->comm, ctx->stream),
                    ctx->coll->name);
    return 0;
}

static int perf_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int perf_finish(struct perf_ctx *ctx, const struct perf_sizes *s, double sec, size_t bytes,
                       int in_place, struct perf_result *res);

/* -G N: N calls captured into one CUDA graph, launched `iters` times; the time per call. */
static int perf_bench_graph(struct perf_ctx *ctx, const struct perf_sizes *s, size_t bytes,
                            int in_place, struct perf_result *res)
{
    const struct perf_args *a = &ctx->a;
    void *graph = NULL;
    if (ctx->mem->capture_begin(ctx->stream) != 0) {
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < a->cudagraph && rc == 0; k++) {
        rc = perf_run_once(ctx, s, in_place);
    }
    if (ctx->mem->capture_end(ctx->stream, &graph) != 0 || rc != 0) {
        ctx->mem->graph_free(graph);
        return -1;
    }
    /* one replay untimed (first launch uploads the graph), then the timed ones */
    if (ctx->mem->graph_launch(graph, ctx->stream) != 0 || ctx->mem->sync(ctx->stream) != 0 ||
        perf_barrier(ctx) != 0) {
        ctx->mem->graph_free(graph);
        return -1;
    }
    double t0 = perf_now();
    for (int it = 0; it < a->iters && rc == 0; it++) {
        rc = ctx->mem->graph_launch(graph, ctx->stream);
    }
    if (rc != 0 || ctx->mem->sync(ctx->stream) != 0) {
        ctx->mem->graph_free(graph);
        return -1;
    }
    double sec = (perf_now() - t0) / ((double)a->iters * a->cudagraph);
    ctx->mem->graph_free(graph);
    return perf_finish(ctx, s, sec, bytes, in_place, res);
}

static int perf_bench(struct perf_ctx *ctx, const struct perf_sizes *s, size_t bytes, int in_place,
                      struct perf_result *res)
{
    const struct perf_args *a = &ctx->a;
    const int each = a->blocking || a->percentiles;

    memset(res, 0, sizeof(*res));
    if (a->check && (perf_init_data(ctx, s, in_place) != 0)) {
        return -1;
    }
    if (perf_run_once(ctx, s, in_place) != 0 || ctx->mem->sync(ctx->stream) != 0 ||
        perf_barrier(ctx) != 0) {
        return -1;
    }

    if (a->cudagraph > 0 && ctx->mem->capture_begin) {
        return perf_bench_graph(ctx, s, bytes, in_place, res);
    }
    double t0 = perf_now();
    for (int it = 0; it < a->iters; it++) {
        double ti = each ? perf_now() : 0;
        if (perf_run_once(ctx, s, in_place) != 0) {
            return -1;
        }
        if (each) {
            if (ctx->mem->sync(ctx->stream) != 0) {
                return -1;
            }
            ctx->samples[it] = perf_now() - ti;
        }
    }
    double enqueue = (perf_now() - t0) / a->iters;
    if (ctx->mem->sync(ctx->stream) != 0) {
        return -1;
    }
    double sec = (perf_now() - t0) / a->iters;
    /* BATON_PERF_ENQUEUE=1: how long the host took to queue one call (equal to the time
     * per call when the host, not the device, is the limit) */
    if (getenv("BATON_PERF_ENQUEUE") && ctx->rank == 0 && !each) {
        printf("# enqueue %zu bytes%s: %.2f us per call\n", bytes, in_place ? " in place" : "",
               enqueue * 1e6);
    }

    return perf_finish(ctx, s, sec, bytes, in_place, res);
}

/* The time per call `sec` combined over ranks, bandwidths, and the check (-c 1). */
static int perf_finish(struct perf_ctx *ctx, const struct perf_sizes *s, double sec, size_t bytes,
                       int in_place, struct perf_result *res)
{
    const struct perf_args *a = &ctx->a;
    /* Combine over ranks: -a 1 mean (nccl-tests' default), 2 min, 3 max, 0 rank 0's. */
    double v[4] = {sec, 0, 0, 0};
    if (a->average != 0) {
        ncclRedOp_t op = a->average == 2 ? ncclMin : a->average == 3 ? ncclMax : ncclSum;
        if (perf_allreduce_small(ctx, v, 1, ncclFloat64, op) != 0) {
            return -1;
        }
        if (a->average == 1) {
            v[0] /= ctx->nranks;
        }
    }
    sec = v[0];
    if (a->percentiles && a->cudagraph == 0) {
        /* The worst rank's percentiles: a collective is as slow as its slowest rank. */
        qsort(ctx->samples, (size_t)a->iters, sizeof(double), perf_cmp_double);
        v[0] = perf_percentile(ctx->samples, (size_t)a->iters, 50);
        v[1] = perf_percentile(ctx->samples, (size_t)a->iters, 99);
        v[2] = perf_percentile(ctx->samples, (size_t)a->iters, 99.9);
        if (perf_allreduce_small(ctx, v, 3, ncclFloat64, ncclMax) != 0) {
            return -1;
        }
        res->p50_us = v[0] * 1e6;
        res->p99_us = v[1] * 1e6;
        res->p999_us = v[2] * 1e6;
    }
    res->time_us = sec * 1e6;
    res->algbw = sec > 0 ? (double)bytes / 1e9 / sec : 0;
    res->busbw = res->algbw * ctx->coll->bus_factor(ctx->nranks);

    res->wrong = -1;
    if (a->check && (!in_place || ctx->coll->check_inplace)) {
        if (perf_init_data(ctx, s, in_place) != 0 || perf_run_once(ctx, s, in_place) != 0 ||
            ctx->mem->sync(ctx->stream) != 0) {
            return -1;
        }
        long long w = perf_check_data(ctx, s, in_place);
        if (w < 0) {
            return -1;
        }
        int64_t total = w;
        if (perf_allreduce_small(ctx, &total, 1, ncclInt64, ncclSum) != 0) {
            return -1;
        }
        res->wrong = (long long)total;
    }
    return 0;
}

/* ---- setup ---- */

static int perf_make_op(struct perf_ctx *ctx)
{
    static const ncclRedOp_t builtin[PERF_NOPS] = {
        [PERF_OP_SUM] = ncclSum, [PERF_OP_PROD] = ncclProd, [PERF_OP_MAX] = ncclMax,
        [PERF_OP_MIN] = ncclMin, [PERF_OP_AVG] = ncclAvg,   [PERF_OP_MULSUM] = ncclSum,
    };
    ctx->op = ctx->coll->has_op ? builtin[ctx->a.op] : ncclSum;
    if (ctx->coll->has_op && ctx->a.op == PERF_OP_MULSUM) {
        /* Each rank its own scalar, copied by the library at creation (HostImmediate). */
        unsigned char scalar[8] = {0};
        perf_encode(ctx->a.dtype, perf_mulsum_scalar(ctx->rank), scalar);
        PERF_CHECK_NCCL(ctx,
                        ncclRedOpCreatePreMulSum(&ctx->op, scalar, ctx->a.dtype->nccl,
                                                 ncclScalarHostImmediate, ctx->comm),
                        "ncclRedOpCreatePreMulSum");
        ctx->op_created = 1;
    }
    return 0;
}

static size_t perf_next_size(const struct perf_args *a, size_t size)
{
    size_t next;
    if (a->step_factor > 1) {
        double d = (double)size * a->step_factor;
        next = d >= 1.8e19 ? SIZE_MAX : (size_t)d;
        if (next <= size) {
            next = size + 1; /* from 0 (or a factor close to 1) still make progress */
        }
    } else {
        next = size + a->step_bytes;
    }
    return next < size ? SIZE_MAX : next; /* overflow ends the loop */
}

static void perf_print_preamble(struct perf_ctx *ctx)
{
    const struct perf_args *a = &ctx->a;
    char host[64] = "?";
    struct {
        int32_t rank, pid, dev;
        char host[52];
    } me, *all = NULL;
    int version = 0;
    Dl_info dli;

    /* Every rank's host and pid, for the "Using devices" list; one record fits scratch. */
    _Static_assert(sizeof(me) <= 64, "a rank record must fit the 64-byte scratch buffer");
    gethostname(host, sizeof(host) - 1);
    memset(&me, 0, sizeof(me));
    me.rank = ctx->rank;
    me.pid = (int32_t)getpid();
    me.dev = (int32_t)ctx->dev;
    snprintf(me.host, sizeof(me.host), "%.*s", (int)sizeof(me.host) - 1, host);
    void *gather = NULL;
    if (ctx->mem->alloc(&gather, sizeof(me) * (size_t)ctx->nranks) == 0 &&
        ctx->mem->from_host(ctx->scratch, &me, sizeof(me)) == 0 &&
        ncclAllGather(ctx->scratch, gather, sizeof(me), ncclUint8, ctx->comm,
                      (cudaStream_t)ctx->stream) == ncclSuccess &&
        ctx->mem->sync(ctx->stream) == 0) {
        all = malloc(sizeof(me) * (size_t)ctx->nranks);
        if (all != NULL) {
            ctx->mem->to_host(all, gather, sizeof(me) * (size_t)ctx->nranks);
        }
    }
    if (gather != NULL) {
        ctx->mem->free(gather);
    }
    if (ctx->rank != 0) {
        free(all);
        return;
    }

    printf("# Collective test starting: %s (baton-perf %s)\n", ctx->coll->nt_name, ctx->coll->name);
    if (a->step_factor > 1) {
        printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %g(factor)", a->min_bytes,
               a->max_bytes, a->step_factor);
    } else {
        printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(bytes)", a->min_bytes,
               a->max_bytes, a->step_bytes);
    }
    printf(" warmup iters: %d iters: %d agg iters: 1 validation: %d graph: %d\n", a->warmup,
           a->iters, a->check, a->cudagraph);
    printf("#\n");
    ncclGetVersion(&version);
    const char *path = "?";
    if (dladdr((void *)ncclGetVersion, &dli) != 0 && dli.dli_fname != NULL) {
        path = dli.dli_fname;
    }
    perf_version_string_fn vs = (perf_version_string_fn)dlsym(RTLD_DEFAULT, "batonVersionString");
    printf("# NCCL version %d.%d.%d (%d) from %s\n",
           version >= 20900 ? version / 10000 : version / 1000,
           version >= 20900 ? version / 100 % 100 : version / 100 % 10, version % 100, version,
           path);
    if (vs != NULL) {
        printf("# Library: %s\n", vs());
    } else {
        printf("# Library: not Baton (no batonVersionString)\n");
    }
    printf("# Ranks: %d (launcher %s), memory: %s\n", ctx->nranks, ctx->launcher, ctx->mem->name);
    if (ctx->reg_note[0] != '\0') {
        printf("# Registration: %s\n", ctx->reg_note);
    }
    printf("#\n# Using devices\n");
    for (int r = 0; r < ctx->nranks; r++) {
        if (all != NULL) {
            all[r].host[sizeof(all[r].host) - 1] = '\0';
            if (all[r].dev < 0) {
                printf("#  Rank %2d Group  0 Pid %6d on %10s device host\n", all[r].rank,
                       all[r].pid, all[r].host);
            } else {
                printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d\n", all[r].rank, all[r].pid,
                       all[r].host, all[r].dev);
            }
        }
    }
    printf("#\n");
    free(all);
}

/*
 * The benchmark's buffers. -R (nccl-tests' local_register): from ncclMemAlloc, then
 * registered, 1 with ncclCommRegister (GPU memory only), 2 as symmetric windows
 * (ncclCommWindowRegister, collective: every rank calls it; what NCCL's symmetric kernels
 * need, and Baton's window AllReduce, on GPU and host memory). A library that refuses the
 * registration runs unregistered; the preamble says which happened.
 */
static int perf_alloc_buffers(struct perf_ctx *ctx, size_t send_bytes, size_t recv_bytes)
{
    const int how = ctx->a.local_register;
    if (how == 0 || (how == 1 && ctx->mem != &perf_mem_cuda)) {
        if (how != 0) {
            snprintf(ctx->reg_note, sizeof(ctx->reg_note), "-R %d ignored: host memory", how);
        }
        return ctx->mem->alloc(&ctx->send, send_bytes) != 0 ||
                       ctx->mem->alloc(&ctx->recv, recv_bytes) != 0
                   ? -1
                   : 0;
    }
    size_t sizes[2] = {send_bytes > 0 ? send_bytes : 256, recv_bytes > 0 ? recv_bytes : 256};
    void **bufs[2] = {&ctx->send, &ctx->recv};
    ctx->nccl_mem = 1;
    for (int i = 0; i < 2; i++) {
        PERF_CHECK_NCCL(ctx, ncclMemAlloc(bufs[i], sizes[i]), "ncclMemAlloc");
    }
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < 2 && r == ncclSuccess; i++) {
        if (how == 1) {
            r = ncclCommRegister(ctx->comm, *bufs[i], sizes[i], &ctx->reg[i]);
        } else {
            ncclWindow_t win = NULL;
            r = ncclCommWindowRegister(ctx->comm, *bufs[i], sizes[i], &win,
                                       NCCL_WIN_COLL_SYMMETRIC);
            ctx->reg[i] = (void *)win;
        }
        if (r != ncclSuccess) {
            ctx->reg[i] = NULL;
        }
    }
    snprintf(ctx->reg_note, sizeof(ctx->reg_note), "-R %d: %s%s%s", how,
             how == 1 ? "ncclMemAlloc buffers, ncclCommRegister"
                      : "ncclMemAlloc buffers, symmetric windows (ncclCommWindowRegister)",
             r == ncclSuccess ? "" : ": refused, so unregistered: ",
             r == ncclSuccess ? "" : ncclGetErrorString(r));
    return 0;
}

static void perf_free_buffers(struct perf_ctx *ctx)
{
    void *bufs[2] = {ctx->send, ctx->recv};
    for (int i = 0; i < 2; i++) {
        if (ctx->reg[i] != NULL) {
            if (ctx->a.local_register == 1) {
                ncclCommDeregister(ctx->comm, ctx->reg[i]);
            } else {
                ncclCommWindowDeregister(ctx->comm, (ncclWindow_t)ctx->reg[i]);
            }
        }
        if (bufs[i] != NULL) {
            if (ctx->nccl_mem) {
                ncclMemFree(bufs[i]);
            } else {
                ctx->mem->free(bufs[i]);
            }
        }
    }
    ctx->send = ctx->recv = NULL;
}

static int perf_run(struct perf_ctx *ctx)
{
    const struct perf_args *a = &ctx->a;
    const size_t ts = a->dtype->size;
    struct perf_sizes smax;
    FILE *json = NULL;
    long long total_wrong = 0;
    double bw_sum = 0;
    int bw_count = 0;
    int first = 1;
    int rc = -1;

    ctx->coll->sizes(a->max_bytes, ts, ctx->nranks, &smax);
    size_t send_bytes = smax.send_count * ts;
    size_t recv_bytes =
        (smax.recv_count > smax.send_count ? smax.recv_count : smax.send_count) * ts;
    if (perf_alloc_buffers(ctx, send_bytes, recv_bytes) != 0) {
        fprintf(stderr, "baton-perf: rank %d: cannot allocate %zu + %zu bytes of %s memory\n",
                ctx->rank, send_bytes, recv_bytes, ctx->mem->name);
        return -1;
    }
    if (!ctx->mem->host_accessible) { /* inputs are filled through it, checked or not */
        ctx->host_stage = malloc(recv_bytes > 0 ? recv_bytes : 1);
        if (ctx->host_stage == NULL) {
            fprintf(stderr, "baton-perf: out of memory\n");
            return -1;
        }
    }
    ctx->samples = calloc((size_t)a->iters, sizeof(double));
    if (ctx->samples == NULL) {
        fprintf(stderr, "baton-perf: out of memory\n");
        return -1;
    }
    perf_plan_init(&ctx->plan, a->dtype, a->op, ctx->nranks);
    /* Touch every page once, also with -c 0: untouched pages all map the kernel's zero
     * page, which a host collective would read from cache at an impossible speed. */
    if (ctx->mem->memset(ctx->recv, 0, recv_bytes) != 0 || perf_init_data(ctx, &smax, 0) != 0) {
        return -1;
    }
    if (perf_make_op(ctx) != 0) {
        return -1;
    }
    if (ctx->coll->has_root && a->root >= ctx->nranks) {
        fprintf(stderr, "baton-perf: root %d is not a rank (0..%d)\n", a->root, ctx->nranks - 1);
        return -1;
    }

    perf_print_preamble(ctx);
    if (ctx->rank == 0) {
        perf_report_header(stdout, a, a->percentiles);
        if (a->json_path != NULL && perf_json_open(a->json_path, &json) != 0) {
            fprintf(stderr, "baton-perf: cannot write %s: %s\n", a->json_path, strerror(errno));
        }
    }

    /* Warm up at the largest and the smallest size, as nccl-tests does. */
    for (int pass = 0; pass < 2; pass++) {
        struct perf_sizes s;
        ctx->coll->sizes(pass == 0 ? a->max_bytes : a->min_bytes, ts, ctx->nranks, &s);
        for (int it = 0; it < a->warmup; it++) {
            if (perf_run_once(ctx, &s, 0) != 0) {
                goto out;
            }
        }
        if (ctx->mem->sync(ctx->stream) != 0) {
            goto out;
        }
    }
    ctx->buf_bytes = ctx->mem->host_accessible ? 0 : send_bytes + recv_bytes;
    ctx->host_buf_bytes = ctx->mem->host_accessible ? send_bytes + recv_bytes : recv_bytes;
    perf_cost_mark(ctx, 2);
    if (ctx->rank == 0) {
        perf_cost_print(ctx);
    }

    for (size_t size = a->min_bytes; size <= a->max_bytes; size = perf_next_size(a, size)) {
        struct perf_sizes s;
        struct perf_row row;
        ctx->coll->sizes(size, ts, ctx->nranks, &s);
        memset(&row, 0, sizeof(row));
        row.bytes = (s.send_count > s.recv_count ? s.send_count : s.recv_count) * ts;
        row.count = s.count;
        row.type = a->dtype->name;
        row.op = ctx->coll->has_op ? perf_op_name(a->op) : "none";
        row.root = ctx->coll->has_root ? a->root : -1;
        if (perf_bench(ctx, &s, row.bytes, 0, &row.oop) != 0 ||
            perf_bench(ctx, &s, row.bytes, 1, &row.ip) != 0) {
            goto out;
        }
        total_wrong +=
            (row.oop.wrong > 0 ? row.oop.wrong : 0) + (row.ip.wrong > 0 ? row.ip.wrong : 0);
        bw_sum += row.oop.busbw + row.ip.busbw;
        bw_count += 2;
        if (ctx->rank == 0) {
            perf_report_row(stdout, &row, a->percentiles);
            if (json != NULL) {
                perf_json_row(json, first, ctx->coll->name, ctx->nranks, &row, a->percentiles);
            }
        }
        first = 0;
        if (size == SIZE_MAX) {
            break;
        }
    }
    if (ctx->rank == 0) {
        printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g \n", bw_count ? bw_sum / bw_count : 0.0);
        printf("#\n# Collective test concluded: %s\n", ctx->coll->nt_name);
        fflush(stdout);
    }
    rc = total_wrong ? 1 : 0;
out:
    perf_json_close(json);
    return rc;
}

static void perf_cleanup(struct perf_ctx *ctx)
{
    if (ctx->op_created) {
        ncclRedOpDestroy(ctx->op, ctx->comm);
    }
    perf_free_buffers(ctx); /* registrations go before the communicator */
    if (ctx->comm != NULL) {
        ncclCommDestroy(ctx->comm);
    }
    if (ctx->scratch != NULL) {
        ctx->mem->free(ctx->scratch);
    }
    free(ctx->host_stage);
    free(ctx->samples);
    perf_cuda_teardown();
}

int main(int argc, char **argv)
{
    struct perf_ctx ctx;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&ctx, 0, sizeof(ctx));
    rc = perf_args_parse(argc, argv, &ctx.a);
    if (rc != 0) {
        return rc == 2 ? 0 : 2;
    }
    ctx.is_baton = dlsym(RTLD_DEFAULT, "batonVersionString") != NULL;
    int have_comm_id = perf_ranks_from_env(&ctx);
    if (have_comm_id < 0) {
        return 2;
    }
    /* GPU memory when this build has CUDA and the process sees a device, unless --host.
     * Host buffers need a host communicator: ask Baton for one (NCCL has none). */
    ctx.mem = &perf_mem_host;
    ctx.dev = -1;
    if (!ctx.a.force_host) {
        int cu = perf_cuda_setup(ctx.rank, &ctx.dev, &ctx.stream);
        if (cu < 0) {
            return 1;
        }
        if (cu == 0) {
            ctx.mem = &perf_mem_cuda;
        }
    }
    if (ctx.mem == &perf_mem_host) {
        setenv("BATON_DEVICE", "cpu", 0);
    }
    if (ctx.a.print_params) {
        if (ctx.rank == 0) {
            perf_params_print_fn pp = (perf_params_print_fn)dlsym(RTLD_DEFAULT, "batonParamsPrint");
            if (pp != NULL) {
                pp(stdout);
            } else {
                printf("# the NCCL library in use is not Baton: no parameters to print\n");
            }
            fflush(stdout);
        }
        if (ctx.a.coll == PERF_NCOLLS) {
            return 0;
        }
    }
    ctx.coll = &perf_colls[ctx.a.coll];

    if (ctx.mem->alloc(&ctx.scratch, 64) != 0) {
        fprintf(stderr, "baton-perf: out of memory\n");
        return 1;
    }
    rc = perf_comm_init(&ctx, have_comm_id) == 0 ? perf_run(&ctx) : -1;
    perf_cleanup(&ctx);
    return rc == 0 ? 0 : 1;
}
