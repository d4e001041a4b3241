/*
 * Entry points: collectives, point-to-point, groups and reduction operators. Each checks
 * its arguments (nothing is enqueued on bad input), builds a bt_op and hands it to the
 * group layer, which runs it now or at ncclGroupEnd.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/check.h"
#include "core/group.h"
#include "core/launch.h"
#include "core/rma.h"
#include "core/window.h"
#include "plan/plan.h"
#include "nccl.h"

static const char *dtype_name(int d)
{
    static const char *n[] = {"ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",
                              "ncclInt64",   "ncclUint64",   "ncclFloat16",    "ncclFloat32",
                              "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
    return d >= 0 && d < ncclNumTypes ? n[d] : "invalid";
}

static ncclResult_t check_dtype(ncclDataType_t d, const char *fn)
{
    if ((int)d < 0 || (int)d >= ncclNumTypes) {
        BT_WARN("%s: datatype %d is out of range [0, %d)", fn, (int)d, (int)ncclNumTypes);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* count elements of `dtype`, times `mult` buffers, must fit in size_t bytes. */
static ncclResult_t check_count(size_t count, ncclDataType_t d, size_t mult, const char *fn)
{
    size_t es = bt_dtype_size((int)d);
    if (mult && count > SIZE_MAX / es / mult) {
        BT_WARN("%s: count %zu of %s overflows the address space (%zu buffers)", fn, count,
                dtype_name((int)d), mult);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

static ncclResult_t check_buf(const void *p, size_t count, const char *fn, const char *name)
{
    if (!p && count > 0) {
        BT_WARN("%s: %s is NULL with count %zu", fn, name, count);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

static ncclResult_t check_rank(int r, const struct bt_comm *c, const char *fn, const char *name)
{
    if (r < 0 || r >= c->nranks) {
        BT_WARN("%s: %s %d is out of range [0, %d)", fn, name, r, c->nranks);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* As NCCL: a call that fails inside a group also fails the group (ncclGroupEnd returns the
 * first error and runs nothing). */
static ncclResult_t failed(ncclResult_t r)
{
    if (r != ncclSuccess && bt_group_depth() > 0)
        bt_group_set_error((bt_status_t)r);
    return r;
}

#define API_TRY(call)                                                                              \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess)                                                                     \
            return failed(r_);                                                                     \
    } while (0)

static ncclResult_t check_comm(ncclComm_t comm, const char *fn)
{
    BT_API_CHECK_READY(comm, fn);
    return ncclSuccess;
}

/* Map ncclRedOp_t to the executors' model (coll/redop.h); capture custom scalars now, as
 * the op may be destroyed before the group ends. */
static ncclResult_t resolve_op(struct bt_comm *c, ncclRedOp_t op, ncclDataType_t d, struct bt_op *o,
                               const char *fn)
{
    struct bt_redop *r = &o->redop;
    memset(r, 0, sizeof(*r));
    r->dtype = (uint8_t)d;
    o->scalar_ptr = NULL;
    if ((int)op >= 0 && (int)op < ncclAvg) {
        r->op = (uint8_t)op; /* Sum, Prod, Max, Min share their values */
        return ncclSuccess;
    }
    if (op == ncclAvg) {
        r->op = BT_OP_SUM;
        if (bt_dtype_is_float((int)d)) {
            r->pre_mul = 1;
            r->scalar_f = 1.0 / c->nranks;
        } else {
            r->post_div = 1;
            r->divisor = (uint64_t)c->nranks;
        }
        return ncclSuccess;
    }
    int idx = (int)op - (int)ncclNumOps;
    pthread_mutex_lock(&c->ops_lock);
    int ok = (int)op >= (int)ncclNumOps && idx < c->ncustom_ops && c->custom_ops[idx].in_use;
    struct bt_custom_op cop;
    if (ok)
        cop = c->custom_ops[idx];
    pthread_mutex_unlock(&c->ops_lock);
    if (!ok) {
        BT_WARN("%s: op %d is not a valid reduction operator for comm %p (destroyed custom "
                "op?)",
                fn, (int)op, (void *)c);
        return ncclInvalidArgument;
    }
    if (cop.dtype != (int)d) {
        BT_WARN("%s: op %d was created for %s but the collective uses %s", fn, (int)op,
                dtype_name(cop.dtype), dtype_name((int)d));
        return ncclInvalidArgument;
    }
    r->op = BT_OP_SUM;
    r->pre_mul = 1;
    if (cop.residence == ncclScalarHostImmediate)
        bt_redop_scalar_from_bytes(r, cop.scalar);
    else
        o->scalar_ptr = cop.scalar_ptr;
    return ncclSuccess;
}

static ncclResult_t enqueue(struct bt_op *o)
{
    return failed((ncclResult_t)bt_group_enqueue(o));
}

/* The common checks of every reduction/collective entry point. */
static ncclResult_t coll_common(struct bt_op *o, ncclComm_t comm, int coll, const void *sendbuff,
                                void *recvbuff, size_t count, ncclDataType_t datatype,
                                cudaStream_t stream, const char *fn)
{
    API_TRY(check_comm(comm, fn));
    API_TRY(check_dtype(datatype, fn));
    memset(o, 0, sizeof(*o));
    o->comm = (struct bt_comm *)comm;
    o->coll = coll;
    o->sendbuf = sendbuff;
    o->recvbuf = recvbuff;
    o->count = count;
    o->dtype = (int)datatype;
    o->redop.dtype = (uint8_t)datatype;
    o->stream = (void *)stream;
    return ncclSuccess;
}

BT_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream)
{
    const char *fn = "ncclAllReduce";
    struct bt_op o;
    API_TRY(
        coll_common(&o, comm, BT_COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, stream, fn));
    API_TRY(check_count(count, datatype, 1, fn));
    API_TRY(check_buf(sendbuff, count, fn, "sendbuff"));
    API_TRY(check_buf(recvbuff, count, fn, "recvbuff"));
    API_TRY(resolve_op(o.comm, op, datatype, &o, fn));
    return enqueue(&o);
}

BT_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    const char *fn = "ncclReduce";
    struct bt_op o;
    API_TRY(coll_common(&o, comm, BT_COLL_REDUCE, sendbuff, recvbuff, count, datatype, stream, fn));
    API_TRY(check_count(count, datatype, 1, fn));
    API_TRY(check_rank(root, o.comm, fn, "root"));
    API_TRY(check_buf(sendbuff, count, fn, "sendbuff"));
    if (o.comm->rank == root)
        API_TRY(check_buf(recvbuff, count, fn, "recvbuff"));
    API_TRY(resolve_op(o.comm, op, datatype, &o, fn));
    o.peer = root;
    return enqueue(&o);
}

static ncclResult_t broadcast(const void *sendbuff, void *recvbuff, size_t count,
                              ncclDataType_t datatype, int root, ncclComm_t comm,
                              cudaStream_t stream, const char *fn)
{
    int bcast = sendbuff == recvbuff && strcmp(fn, "ncclBcast") == 0;
    struct bt_op o;
    API_TRY(
        coll_common(&o, comm, BT_COLL_BROADCAST, sendbuff, recvbuff, count, datatype, stream, fn));
    API_TRY(check_count(count, datatype, 1, fn));
    API_TRY(check_rank(root, o.comm, fn, "root"));
    if (o.comm->rank == root)
        API_TRY(check_buf(sendbuff, count, fn, bcast ? "buff" : "sendbuff"));
    API_TRY(check_buf(recvbuff, count, fn, bcast ? "buff" : "recvbuff"));
    o.peer = root;
    return enqueue(&o);
}

BT_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream)
{
    return broadcast(sendbuff, recvbuff, count, datatype, root, comm, stream, "ncclBroadcast");
}

BT_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream)
{
    return broadcast(buff, buff, count, datatype, root, comm, stream, "ncclBcast");
}

BT_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    const char *fn = "ncclAllGather";
    struct bt_op o;
    API_TRY(coll_common(&o, comm, BT_COLL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype,
                        stream, fn));
    API_TRY(check_count(sendcount, datatype, (size_t)o.comm->nranks, fn));
    API_TRY(check_buf(sendbuff, sendcount, fn, "sendbuff"));
    API_TRY(check_buf(recvbuff, sendcount, fn, "recvbuff"));
    return enqueue(&o);
}

BT_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream)
{
    const char *fn = "ncclReduceScatter";
    struct bt_op o;
    API_TRY(coll_common(&o, comm, BT_COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype,
                        stream, fn));
    API_TRY(check_count(recvcount, datatype, (size_t)o.comm->nranks, fn));
    API_TRY(check_buf(sendbuff, recvcount, fn, "sendbuff"));
    API_TRY(check_buf(recvbuff, recvcount, fn, "recvbuff"));
    API_TRY(resolve_op(o.comm, op, datatype, &o, fn));
    return enqueue(&o);
}

static ncclResult_t p2p(int coll, const void *sbuf, void *rbuf, size_t count,
                        ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream,
                        const char *fn)
{
    struct bt_op o;
    API_TRY(coll_common(&o, comm, coll, sbuf, rbuf, count, datatype, stream, fn));
    API_TRY(check_count(count, datatype, 1, fn));
    API_TRY(check_rank(peer, o.comm, fn, "peer"));
    API_TRY(check_buf(coll == BT_COLL_SEND ? sbuf : rbuf, count, fn,
                      coll == BT_COLL_SEND ? "sendbuff" : "recvbuff"));
    o.peer = peer;
    return enqueue(&o);
}

BT_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, cudaStream_t stream)
{
    return p2p(BT_COLL_SEND, sendbuff, NULL, count, datatype, peer, comm, stream, "ncclSend");
}

BT_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, cudaStream_t stream)
{
    return p2p(BT_COLL_RECV, NULL, recvbuff, count, datatype, peer, comm, stream, "ncclRecv");
}

/*
 * AlltoAll, Gather and Scatter are groups of Send/Recv. Arguments are checked first so a
 * bad call enqueues nothing.
 */
BT_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    const char *fn = "ncclAlltoAll";
    API_TRY(check_comm(comm, fn));
    API_TRY(check_dtype(datatype, fn));
    struct bt_comm *c = (struct bt_comm *)comm;
    API_TRY(check_count(count, datatype, (size_t)c->nranks, fn));
    API_TRY(check_buf(sendbuff, count, fn, "sendbuff"));
    API_TRY(check_buf(recvbuff, count, fn, "recvbuff"));
    size_t bytes = count * bt_dtype_size((int)datatype);
    ncclResult_t res = ncclSuccess;
    bt_group_start();
    for (int r = 0; r < c->nranks && res == ncclSuccess; r++) {
        res =
            ncclSend((const char *)sendbuff + (size_t)r * bytes, count, datatype, r, comm, stream);
        if (res == ncclSuccess)
            res = ncclRecv((char *)recvbuff + (size_t)r * bytes, count, datatype, r, comm, stream);
    }
    ncclResult_t end = (ncclResult_t)bt_group_end();
    return res != ncclSuccess ? res : end;
}

BT_API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    const char *fn = "ncclGather";
    API_TRY(check_comm(comm, fn));
    API_TRY(check_dtype(datatype, fn));
    struct bt_comm *c = (struct bt_comm *)comm;
    API_TRY(check_rank(root, c, fn, "root"));
    API_TRY(check_count(count, datatype, (size_t)c->nranks, fn));
    API_TRY(check_buf(sendbuff, count, fn, "sendbuff"));
    if (c->rank == root)
        API_TRY(check_buf(recvbuff, count, fn, "recvbuff"));
    size_t bytes = count * bt_dtype_size((int)datatype);
    ncclResult_t res;
    bt_group_start();
    res = ncclSend(sendbuff, count, datatype, root, comm, stream);
    if (c->rank == root)
        for (int r = 0; r < c->nranks && res == ncclSuccess; r++)
            res = ncclRecv((char *)recvbuff + (size_t)r * bytes, count, datatype, r, comm, stream);
    ncclResult_t end = (ncclResult_t)bt_group_end();
    return res != ncclSuccess ? res : end;
}

BT_API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream)
{
    const char *fn = "ncclScatter";
    API_TRY(check_comm(comm, fn));
    API_TRY(check_dtype(datatype, fn));
    struct bt_comm *c = (struct bt_comm *)comm;
    API_TRY(check_rank(root, c, fn, "root"));
    API_TRY(check_count(count, datatype, (size_t)c->nranks, fn));
    API_TRY(check_buf(recvbuff, count, fn, "recvbuff"));
    if (c->rank == root)
        API_TRY(check_buf(sendbuff, count, fn, "sendbuff"));
    size_t bytes = count * bt_dtype_size((int)datatype);
    ncclResult_t res = ncclSuccess;
    bt_group_start();
    if (c->rank == root)
        for (int r = 0; r < c->nranks && res == ncclSuccess; r++)
            res = ncclSend((const char *)sendbuff + (size_t)r * bytes, count, datatype, r, comm,
                           stream);
    if (res == ncclSuccess)
        res = ncclRecv(recvbuff, count, datatype, root, comm, stream);
    ncclResult_t end = (ncclResult_t)bt_group_end();
    return res != ncclSuccess ? res : end;
}

/* ---- groups ------------------------------------------------------------------------------- */

/* ---- one-sided (NCCL 2.29+; core/rma.h) ------------------------------------------------ */

/* What every one-sided call checks: the comm takes operations, outside a group, context 0
 * of numRmaCtx, signal 0, no flags (as NCCL 2.29-2.30). */
static ncclResult_t rma_checks(struct bt_comm *c, int sigIdx, int ctx, unsigned flags,
                               const char *fn)
{
    if (bt_group_depth() > 0) {
        BT_WARN("%s: called inside ncclGroupStart/ncclGroupEnd: Baton runs one-sided calls "
                "outside groups only",
                fn);
        return ncclInvalidUsage;
    }
    if (c->config.num_rma_ctx == 0) {
        BT_WARN("%s: the communicator's config.numRmaCtx is 0: one-sided calls are off", fn);
        return ncclInvalidUsage;
    }
    if (ctx != 0 || sigIdx != 0 || flags != 0) {
        BT_WARN("%s: ctx %d, sigIdx %d, flags %u: each must be 0", fn, ctx, sigIdx, flags);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* A put of bytes (0: a signal alone) under the comm's gate. */
static ncclResult_t rma_put(struct bt_comm *c, const void *src, size_t bytes, int peer,
                            struct bt_window *w, size_t off, void *stream, const char *fn)
{
    if (!bt_comm_acquire(c)) {
        BT_WARN("%s: communicator %p was destroyed or aborted", fn, (void *)c);
        return ncclInvalidUsage;
    }
    bt_status_t st = bt_launch_gate(c);
    if (st == BT_OK)
        st = bt_rma_put(c, src, bytes, peer, w, off, stream, fn);
    bt_comm_release(c);
    return (ncclResult_t)st;
}

BT_API ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype,
                                  int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx,
                                  int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
    const char *fn = "ncclPutSignal"; /* host memory: done on return; GPU: on `stream` */
    BT_API_CHECK_READY(comm, fn);
    struct bt_comm *c = (struct bt_comm *)comm;
    API_TRY(rma_checks(c, sigIdx, ctx, flags, fn));
    API_TRY(check_dtype(datatype, fn));
    API_TRY(check_count(count, datatype, 1, fn));
    API_TRY(check_buf(localbuff, count, fn, "localbuff"));
    API_TRY(check_rank(peer, c, fn, "peer"));
    BT_API_CHECK_PTR(peerWin, fn, "peerWin");
    struct bt_window *w = bt_api_window(peerWin, fn);
    if (!w || bt_window_check(c, w, fn) != BT_OK)
        return ncclInvalidArgument;
    return rma_put(c, localbuff, count * bt_dtype_size((int)datatype), peer, w, peerWinOffset,
                   stream, fn);
}

BT_API ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                               cudaStream_t stream)
{
    const char *fn = "ncclSignal";
    BT_API_CHECK_READY(comm, fn);
    struct bt_comm *c = (struct bt_comm *)comm;
    API_TRY(rma_checks(c, sigIdx, ctx, flags, fn));
    API_TRY(check_rank(peer, c, fn, "peer"));
    return rma_put(c, NULL, 0, peer, NULL, 0, stream, fn);
}

BT_API ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                                   cudaStream_t stream)
{
    const char *fn = "ncclWaitSignal";
    BT_API_CHECK_READY(comm, fn);
    struct bt_comm *c = (struct bt_comm *)comm;
    if (nDesc <= 0 || !signalDescs) {
        BT_WARN("%s: %d descriptors at %p: give at least one", fn, nDesc, (void *)signalDescs);
        return ncclInvalidArgument;
    }
    int *peers = malloc(sizeof(int) * 2 * (size_t)nDesc), *ops = peers + nDesc;
    if (!peers)
        return ncclSystemError;
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < nDesc && r == ncclSuccess; i++) {
        const ncclWaitSignalDesc_t *d = &signalDescs[i];
        r = rma_checks(c, d->sigIdx, d->ctx, 0, fn);
        if (r == ncclSuccess)
            r = check_rank(d->peer, c, fn, "a descriptor's peer");
        if (r == ncclSuccess && d->opCnt <= 0) {
            BT_WARN("%s: descriptor %d waits for %d signals (must be > 0)", fn, i, d->opCnt);
            r = ncclInvalidArgument;
        }
        peers[i] = d->peer;
        ops[i] = d->opCnt;
    }
    if (r == ncclSuccess) {
        if (!bt_comm_acquire(c)) {
            BT_WARN("%s: communicator %p was destroyed or aborted", fn, (void *)c);
            r = ncclInvalidUsage;
        } else {
            bt_status_t st = bt_launch_gate(c);
            if (st == BT_OK)
                st = bt_rma_wait(c, nDesc, peers, ops, stream);
            bt_comm_release(c);
            r = (ncclResult_t)st;
        }
    }
    free(peers);
    return r;
}

BT_API ncclResult_t ncclGroupStart(void)
{
    bt_group_start();
    return ncclSuccess;
}

BT_API ncclResult_t ncclGroupEnd(void)
{
    return (ncclResult_t)bt_group_end();
}

BT_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    if (!simInfo) {
        BT_WARN("ncclGroupSimulateEnd: simInfo is NULL");
        return ncclInvalidArgument;
    }
    /* Read as NCCL does: the caller's size says how much of the struct it has. */
    size_t size = simInfo->size;
    if (simInfo->magic != NCCL_SIM_INFO_MAGIC ||
        size < offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float)) {
        BT_WARN("ncclGroupSimulateEnd: simInfo (magic 0x%x, size %zu) was not made with "
                "NCCL_SIM_INFO_INITIALIZER",
                simInfo->magic, size);
        return ncclInvalidArgument;
    }
    double us = 0;
    bt_status_t st = bt_group_simulate(&us);
    if (st != BT_OK)
        return (ncclResult_t)st;
    simInfo->estimatedTime = (float)us; /* microseconds, as NCCL's cost tables */
    return ncclSuccess;
}

/* ---- custom reduction operators ------------------------------------------------------------ */

BT_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                             ncclScalarResidence_t residence, ncclComm_t comm)
{
    const char *fn = "ncclRedOpCreatePreMulSum";
    BT_API_CHECK_COMM(comm, fn);
    BT_API_CHECK_PTR(op, fn, "op");
    BT_API_CHECK_PTR(scalar, fn, "scalar");
    API_TRY(check_dtype(datatype, fn));
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
        BT_WARN("%s: residence %d is invalid", fn, (int)residence);
        return ncclInvalidArgument;
    }
    struct bt_comm *c = (struct bt_comm *)comm;
    pthread_mutex_lock(&c->ops_lock);
    int idx = -1;
    for (int i = 0; i < c->ncustom_ops; i++)
        if (!c->custom_ops[i].in_use) {
            idx = i;
            break;
        }
    if (idx < 0) {
        if (c->ncustom_ops >= BT_MAX_CUSTOM_OPS) {
            pthread_mutex_unlock(&c->ops_lock);
            BT_WARN("%s: more than %d custom operators are alive on comm %p", fn, BT_MAX_CUSTOM_OPS,
                    (void *)c);
            return ncclInvalidUsage;
        }
        struct bt_custom_op *t = realloc(c->custom_ops, sizeof(*t) * (size_t)(c->ncustom_ops + 1));
        if (!t) {
            pthread_mutex_unlock(&c->ops_lock);
            return ncclSystemError;
        }
        c->custom_ops = t;
        idx = c->ncustom_ops++;
    }
    struct bt_custom_op *x = &c->custom_ops[idx];
    memset(x, 0, sizeof(*x));
    x->in_use = 1;
    x->dtype = (int)datatype;
    x->residence = (int)residence;
    x->scalar_ptr = scalar;
    if (residence == ncclScalarHostImmediate)
        memcpy(x->scalar, scalar, bt_dtype_size((int)datatype));
    pthread_mutex_unlock(&c->ops_lock);
    *op = (ncclRedOp_t)((int)ncclNumOps + idx);
    return ncclSuccess;
}

BT_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    const char *fn = "ncclRedOpDestroy";
    BT_API_CHECK_COMM(comm, fn);
    if ((int)op < (int)ncclNumOps) {
        BT_WARN("%s: op %d is a built-in or invalid operator and cannot be destroyed", fn, (int)op);
        return ncclInvalidArgument;
    }
    struct bt_comm *c = (struct bt_comm *)comm;
    int idx = (int)op - (int)ncclNumOps;
    pthread_mutex_lock(&c->ops_lock);
    int ok = idx < c->ncustom_ops && c->custom_ops[idx].in_use;
    if (ok)
        c->custom_ops[idx].in_use = 0;
    pthread_mutex_unlock(&c->ops_lock);
    if (!ok) {
        BT_WARN("%s: op %d is not a live custom operator of comm %p", fn, (int)op, (void *)c);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* Profiling aliases (see api.h). */
BT_PNCCL(ncclAllReduce);
BT_PNCCL(ncclReduce);
BT_PNCCL(ncclBroadcast);
BT_PNCCL(ncclBcast);
BT_PNCCL(ncclAllGather);
BT_PNCCL(ncclReduceScatter);
BT_PNCCL(ncclSend);
BT_PNCCL(ncclRecv);
BT_PNCCL(ncclAlltoAll);
BT_PNCCL(ncclGather);
BT_PNCCL(ncclScatter);
BT_PNCCL(ncclGroupStart);
BT_PNCCL(ncclGroupEnd);
BT_PNCCL(ncclGroupSimulateEnd);
BT_PNCCL(ncclPutSignal);
BT_PNCCL(ncclSignal);
BT_PNCCL(ncclWaitSignal);
BT_PNCCL(ncclRedOpCreatePreMulSum);
BT_PNCCL(ncclRedOpDestroy);
