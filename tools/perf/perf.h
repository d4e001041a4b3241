/*
 * baton-perf: an nccl-tests style benchmark that uses only the public NCCL API, so that
 * one binary measures Baton and NVIDIA's NCCL alike (docs/ANCHORS.md: how to compare fairly).
 *
 *   perf_main.c    ranks and launcher environments, communicator, the size loop
 *   perf_args.c    command line: sizes, dtypes, ops, collectives
 *   perf_colls.c   the collectives: buffer sizes, busbw factors, the NCCL calls
 *   perf_check.c   deterministic data, expected values, dtype conversions
 *   perf_mem.c     memory ops table (host now; CUDA slots in behind the same table)
 *   perf_report.c  the nccl-tests table, percentiles, JSON
 */
#ifndef BATON_PERF_H
#define BATON_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nccl.h"

enum perf_coll_id {
    PERF_ALLREDUCE,
    PERF_ALLGATHER,
    PERF_REDUCESCATTER,
    PERF_BROADCAST,
    PERF_REDUCE,
    PERF_ALLTOALL,
    PERF_SENDRECV,
    PERF_NCOLLS
};

/* Reduction ops as the tool names them; PERF_OP_MULSUM maps to ncclRedOpCreatePreMulSum. */
enum perf_op_id {
    PERF_OP_SUM,
    PERF_OP_PROD,
    PERF_OP_MAX,
    PERF_OP_MIN,
    PERF_OP_AVG,
    PERF_OP_MULSUM,
    PERF_NOPS
};

enum perf_dtype_kind { PERF_KIND_INT, PERF_KIND_UINT, PERF_KIND_FLOAT };

struct perf_dtype {
    const char *name;    /* as the table prints it (nccl-tests names) */
    ncclDataType_t nccl; /* value of the ncclDataType_t enum */
    size_t size;
    enum perf_dtype_kind kind;
    int ebits, mbits; /* floats: exponent and stored mantissa bits */
    int finite_only;  /* fp8 e4m3: no infinities, S.1111.111 is NaN */
    double max_exact; /* every integer in [0, max_exact] is representable */
};

struct perf_args {
    enum perf_coll_id coll;
    const struct perf_dtype *dtype;
    enum perf_op_id op;
    size_t min_bytes, max_bytes;
    double step_factor; /* > 1: multiply; else add step_bytes */
    size_t step_bytes;
    int iters, warmup;
    int check;
    int root;
    int blocking;          /* -z 1: wait for each operation before issuing the next */
    int cudagraph;         /* -G N: capture N calls into a CUDA graph, replay it (GPU only) */
    int local_register;    /* -R 1: ncclCommRegister the buffers; 2: symmetric windows */
    int average;           /* -a: 0 rank 0, 1 avg, 2 min, 3 max of the ranks' times */
    int percentiles;       /* -p */
    const char *json_path; /* -J */
    int print_params;      /* --params */
    int force_host;        /* --host */
};

/* --- perf_args.c --- */

/* Parse "8", "64K", "1M", "2G" (powers of 1024); returns 0 on success. */
int perf_parse_size(const char *s, size_t *out_p);
const struct perf_dtype *perf_dtype_lookup(const char *name);
const struct perf_dtype *perf_dtype_of(ncclDataType_t t);
int perf_op_lookup(const char *name, enum perf_op_id *op_p);
const char *perf_op_name(enum perf_op_id op);
int perf_coll_lookup(const char *name, enum perf_coll_id *coll_p);
void perf_usage(FILE *f);
/* Returns 0 on success, 1 on a usage error (message printed), 2 for --help. */
int perf_args_parse(int argc, char **argv, struct perf_args *a);

/* --- perf_mem.c --- */

/* How buffers are allocated, filled and synchronised. Host memory now; a CUDA table
 * (cudaMalloc, cudaMemcpy, cudaStreamSynchronize) provides the same entries later. */
struct perf_mem_ops {
    const char *name;
    int (*alloc)(void **ptr_p, size_t bytes);
    void (*free)(void *ptr);
    /* Copy between a buffer of this memory and host memory (for fill and check). */
    int (*to_host)(void *dst_host, const void *src, size_t bytes);
    int (*from_host)(void *dst, const void *src_host, size_t bytes);
    int (*memset)(void *ptr, int v, size_t bytes);
    /* Wait until every operation issued on `stream` has completed. */
    int (*sync)(void *stream);
    /* CUDA graphs (-G): begin capturing `stream`; end it, returning an instantiated graph;
     * launch one; free one. NULL where the memory has no graphs. */
    int (*capture_begin)(void *stream);
    int (*capture_end)(void *stream, void **graph_p);
    int (*graph_launch)(void *graph, void *stream);
    void (*graph_free)(void *graph);
    /* The CPU may read and write these buffers directly (fill and check in place). */
    int host_accessible;
    /* Bytes in use on the current device, device-wide (every process's); NULL: no device. */
    long long (*device_used)(void);
};

extern const struct perf_mem_ops perf_mem_host;
extern const struct perf_mem_ops perf_mem_cuda; /* cuda/perf_cuda.c, or a stub without CUDA */

/* Pick this rank's GPU and make the benchmark's stream: 0 done, 1 no device (use host
 * memory), -1 failed. */
int perf_cuda_setup(int rank, int *dev_p, void **stream_p);
void perf_cuda_teardown(void);

/* --- perf_check.c --- */

/* Encode a double (exactly or rounded to nearest even) into one element of `t`, and back. */
void perf_encode(const struct perf_dtype *t, double v, void *dst);
double perf_decode(const struct perf_dtype *t, const void *src);

/* Which deterministic values the ranks hold; chosen so every expected result is exact. */
struct perf_data_plan {
    int nranks;
    enum perf_op_id op;
    const struct perf_dtype *dtype;
    int scheme; /* PERF_SCHEME_* in perf_check.c */
    unsigned m; /* modulus (values 0..m-1) or period of the sparse/prod schemes */
};

void perf_plan_init(struct perf_data_plan *p, const struct perf_dtype *t, enum perf_op_id op,
                    int nranks);
/* Value rank `rank` holds at element `i` of its input. */
double perf_value(const struct perf_data_plan *p, int rank, size_t i);
/* PreMulSum scalar of rank `rank`. */
double perf_mulsum_scalar(int rank);
/* Reduction over all ranks of perf_value(., idx), in double, as the op defines it. */
double perf_reduce_expected(const struct perf_data_plan *p, size_t idx);
/* Fill `n` host elements: element j gets perf_value(rank, first + j). */
void perf_fill(const struct perf_data_plan *p, void *host, size_t n, int rank, size_t first);
/* Whether `got` (one element) matches the expected double. */
int perf_element_ok(const struct perf_data_plan *p, const void *got, double expected);

/* --- perf_colls.c --- */

struct perf_ctx; /* perf_main.c */

struct perf_sizes {
    size_t count;      /* the count argument of the NCCL call (per rank where it applies) */
    size_t send_count; /* elements in the send buffer */
    size_t recv_count; /* elements in the receive buffer */
    size_t send_inplace_off, recv_inplace_off; /* elements, times rank, from recvbuff */
};

struct perf_coll {
    const char *name;     /* "allreduce" */
    const char *nt_name;  /* nccl-tests binary name: "all_reduce_perf" */
    int has_op, has_root; /* table shows redop / root */
    int check_inplace;    /* in-place results are checked (not for alltoall/sendrecv) */
    void (*sizes)(size_t total_bytes, size_t type_size, int nranks, struct perf_sizes *s);
    double (*bus_factor)(int nranks);
    ncclResult_t (*run)(const void *send, void *recv, size_t count, ncclDataType_t t,
                        ncclRedOp_t op, int root, ncclComm_t comm, void *stream);
    /* Expected value of element `j` of rank `rank`'s receive buffer; returns 0 when that
     * element is not defined by the collective (reduce on a non-root). */
    int (*expected)(const struct perf_data_plan *p, int rank, int root, size_t count, size_t j,
                    double *v_p);
};

extern const struct perf_coll perf_colls[PERF_NCOLLS];

/* --- perf_report.c --- */

struct perf_result {
    double time_us; /* average per iteration, combined over ranks (-a) */
    double algbw, busbw;
    long long wrong;                /* -1: not checked */
    double p50_us, p99_us, p999_us; /* with -p: max over ranks; else 0 */
};

struct perf_row {
    size_t bytes, count;
    const char *type, *op;
    int root;
    struct perf_result oop, ip;
};

/* Percentile (0..100) of `n` sorted samples, nearest rank. */
double perf_percentile(const double *sorted, size_t n, double pct);
void perf_report_header(FILE *f, const struct perf_args *a, int percentiles);
void perf_report_row(FILE *f, const struct perf_row *row, int percentiles);
int perf_json_open(const char *path, FILE **f_p);
void perf_json_row(FILE *f, int first, const char *coll, int nranks, const struct perf_row *row,
                   int percentiles);
void perf_json_close(FILE *f);

#endif
