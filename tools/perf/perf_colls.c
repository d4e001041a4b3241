/*
 * The collectives baton-perf measures: how a size maps to counts (as nccl-tests maps it:
 * for allgather, reducescatter and alltoall the size is the whole buffer), the bus
 * bandwidth factor, the NCCL call, and the expected output for the data check.
 *
 * Bus bandwidth = algbw * factor, the traffic a rank's busiest link carries relative to
 * the size:  allreduce 2(n-1)/n;  allgather, reducescatter, alltoall (n-1)/n;
 * broadcast, reduce, sendrecv 1.
 */
#include "perf.h"

static double perf_factor_one(int n)
{
    (void)n;
    return 1.0;
}

static double perf_factor_ring(int n)
{
    return (double)(n - 1) / n;
}

static double perf_factor_allreduce(int n)
{
    return 2.0 * (n - 1) / n;
}

/* size -> counts. `nbytes` is the size column the user asked for. */

static void perf_sizes_flat(size_t nbytes, size_t ts, int n, struct perf_sizes *s)
{
    (void)n;
    s->count = nbytes / ts;
    s->send_count = s->recv_count = s->count;
    s->send_inplace_off = s->recv_inplace_off = 0;
}

static void perf_sizes_allgather(size_t nbytes, size_t ts, int n, struct perf_sizes *s)
{
    s->count = nbytes / ts / (size_t)n;
    s->send_count = s->count;
    s->recv_count = s->count * (size_t)n;
    s->send_inplace_off = s->count; /* in place: send = recv + rank * count */
    s->recv_inplace_off = 0;
}

static void perf_sizes_reducescatter(size_t nbytes, size_t ts, int n, struct perf_sizes *s)
{
    s->count = nbytes / ts / (size_t)n;
    s->send_count = s->count * (size_t)n;
    s->recv_count = s->count;
    s->send_inplace_off = 0;
    s->recv_inplace_off = s->count; /* in place: recv = send + rank * count */
}

static void perf_sizes_alltoall(size_t nbytes, size_t ts, int n, struct perf_sizes *s)
{
    s->count = nbytes / ts / (size_t)n; /* per peer */
    s->send_count = s->recv_count = s->count * (size_t)n;
    s->send_inplace_off = s->recv_inplace_off = 0;
}

/* ---- the calls ---- */

static ncclResult_t perf_run_allreduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                                       ncclRedOp_t op, int root, ncclComm_t comm, void *stream)
{
    (void)root;
    return ncclAllReduce(send, recv, count, t, op, comm, (cudaStream_t)stream);
}

static ncclResult_t perf_run_allgather(const void *send, void *recv, size_t count, ncclDataType_t t,
                                       ncclRedOp_t op, int root, ncclComm_t comm, void *stream)
{
    (void)op;
    (void)root;
    return ncclAllGather(send, recv, count, t, comm, (cudaStream_t)stream);
}

static ncclResult_t perf_run_reducescatter(const void *send, void *recv, size_t count,
                                           ncclDataType_t t, ncclRedOp_t op, int root,
                                           ncclComm_t comm, void *stream)
{
    (void)root;
    return ncclReduceScatter(send, recv, count, t, op, comm, (cudaStream_t)stream);
}

static ncclResult_t perf_run_broadcast(const void *send, void *recv, size_t count, ncclDataType_t t,
                                       ncclRedOp_t op, int root, ncclComm_t comm, void *stream)
{
    (void)op;
    return ncclBroadcast(send, recv, count, t, root, comm, (cudaStream_t)stream);
}

static ncclResult_t perf_run_reduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                                    ncclRedOp_t op, int root, ncclComm_t comm, void *stream)
{
    return ncclReduce(send, recv, count, t, op, root, comm, (cudaStream_t)stream);
}

static ncclResult_t perf_run_alltoall(const void *send, void *recv, size_t count, ncclDataType_t t,
                                      ncclRedOp_t op, int root, ncclComm_t comm, void *stream)
{
    (void)op;
    (void)root;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22800
    /* ncclAlltoAll is part of the 2.28 API. */
    return ncclAlltoAll(send, recv, count, t, comm, (cudaStream_t)stream);
#else
    /* Older headers: the grouped send/recv form nccl-tests uses. */
    const struct perf_dtype *d = perf_dtype_of(t);
    size_t block = count * (d != NULL ? d->size : 1);
    int n;
    ncclResult_t res = ncclCommCount(comm, &n);
    if (res != ncclSuccess) {
        return res;
    }
    res = ncclGroupStart();
    if (res != ncclSuccess) {
        return res;
    }
    for (int r = 0; r < n && res == ncclSuccess; r++) {
        res = ncclSend((const char *)send + (size_t)r * block, count, t, r, comm,
                       (cudaStream_t)stream);
        if (res == ncclSuccess) {
            res =
                ncclRecv((char *)recv + (size_t)r * block, count, t, r, comm, (cudaStream_t)stream);
        }
    }
    ncclResult_t end = ncclGroupEnd();
    return res != ncclSuccess ? res : end;
#endif
}

/* Ring: send to rank+1, receive from rank-1, in one group. */
static ncclResult_t perf_run_sendrecv(const void *send, void *recv, size_t count, ncclDataType_t t,
                                      ncclRedOp_t op, int root, ncclComm_t comm, void *stream)
{
    int n, me;
    ncclResult_t res, end;
    (void)op;
    (void)root;
    if ((res = ncclCommCount(comm, &n)) != ncclSuccess ||
        (res = ncclCommUserRank(comm, &me)) != ncclSuccess) {
        return res;
    }
    if ((res = ncclGroupStart()) != ncclSuccess) {
        return res;
    }
    res = ncclSend(send, count, t, (me + 1) % n, comm, (cudaStream_t)stream);
    if (res == ncclSuccess) {
        res = ncclRecv(recv, count, t, (me - 1 + n) % n, comm, (cudaStream_t)stream);
    }
    end = ncclGroupEnd();
    return res != ncclSuccess ? res : end;
}

/* ---- expected output: element j of rank `rank`'s receive buffer ---- */

static int perf_exp_allreduce(const struct perf_data_plan *p, int rank, int root, size_t count,
                              size_t j, double *v_p)
{
    (void)rank;
    (void)root;
    (void)count;
    *v_p = perf_reduce_expected(p, j);
    return 1;
}

static int perf_exp_allgather(const struct perf_data_plan *p, int rank, int root, size_t count,
                              size_t j, double *v_p)
{
    (void)rank;
    (void)root;
    *v_p = perf_value(p, (int)(j / count), j % count);
    return 1;
}

static int perf_exp_reducescatter(const struct perf_data_plan *p, int rank, int root, size_t count,
                                  size_t j, double *v_p)
{
    (void)root;
    *v_p = perf_reduce_expected(p, (size_t)rank * count + j);
    return 1;
}

static int perf_exp_broadcast(const struct perf_data_plan *p, int rank, int root, size_t count,
                              size_t j, double *v_p)
{
    (void)rank;
    (void)count;
    *v_p = perf_value(p, root, j);
    return 1;
}

static int perf_exp_reduce(const struct perf_data_plan *p, int rank, int root, size_t count,
                           size_t j, double *v_p)
{
    (void)count;
    if (rank != root) {
        return 0;
    }
    *v_p = perf_reduce_expected(p, j);
    return 1;
}

static int perf_exp_alltoall(const struct perf_data_plan *p, int rank, int root, size_t count,
                             size_t j, double *v_p)
{
    (void)root;
    /* Block q of my output is block `rank` of rank q's input. */
    *v_p = perf_value(p, (int)(j / count), (size_t)rank * count + j % count);
    return 1;
}

static int perf_exp_sendrecv(const struct perf_data_plan *p, int rank, int root, size_t count,
                             size_t j, double *v_p)
{
    (void)root;
    (void)count;
    *v_p = perf_value(p, (rank - 1 + p->nranks) % p->nranks, j);
    return 1;
}

const struct perf_coll perf_colls[PERF_NCOLLS] = {
    [PERF_ALLREDUCE] = {.name = "allreduce",
                        .nt_name = "all_reduce_perf",
                        .has_op = 1,
                        .check_inplace = 1,
                        .sizes = perf_sizes_flat,
                        .bus_factor = perf_factor_allreduce,
                        .run = perf_run_allreduce,
                        .expected = perf_exp_allreduce},
    [PERF_ALLGATHER] = {.name = "allgather",
                        .nt_name = "all_gather_perf",
                        .check_inplace = 1,
                        .sizes = perf_sizes_allgather,
                        .bus_factor = perf_factor_ring,
                        .run = perf_run_allgather,
                        .expected = perf_exp_allgather},
    [PERF_REDUCESCATTER] = {.name = "reducescatter",
                            .nt_name = "reduce_scatter_perf",
                            .has_op = 1,
                            .check_inplace = 1,
                            .sizes = perf_sizes_reducescatter,
                            .bus_factor = perf_factor_ring,
                            .run = perf_run_reducescatter,
                            .expected = perf_exp_reducescatter},
    [PERF_BROADCAST] = {.name = "broadcast",
                        .nt_name = "broadcast_perf",
                        .has_root = 1,
                        .check_inplace = 1,
                        .sizes = perf_sizes_flat,
                        .bus_factor = perf_factor_one,
                        .run = perf_run_broadcast,
                        .expected = perf_exp_broadcast},
    [PERF_REDUCE] = {.name = "reduce",
                     .nt_name = "reduce_perf",
                     .has_op = 1,
                     .has_root = 1,
                     .check_inplace = 1,
                     .sizes = perf_sizes_flat,
                     .bus_factor = perf_factor_one,
                     .run = perf_run_reduce,
                     .expected = perf_exp_reduce},
    /* In place, alltoall and sendrecv read and write one buffer in an unspecified order:
     * timed, not checked (nccl-tests prints N/A there too). */
    [PERF_ALLTOALL] = {.name = "alltoall",
                       .nt_name = "alltoall_perf",
                       .sizes = perf_sizes_alltoall,
                       .bus_factor = perf_factor_ring,
                       .run = perf_run_alltoall,
                       .expected = perf_exp_alltoall},
    [PERF_SENDRECV] = {.name = "sendrecv",
                       .nt_name = "sendrecv_perf",
                       .sizes = perf_sizes_flat,
                       .bus_factor = perf_factor_one,
                       .run = perf_run_sendrecv,
                       .expected = perf_exp_sendrecv},
};
