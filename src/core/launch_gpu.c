/*
 * The GPU part of a launch: operations of GPU communicators on device buffers become kernel
 * launches on the callers' streams (exec/cuda runs them).
 *
 *   per communicator, in op order:
 *     first GPU op -> its CUDA state, connectors with every rank (collective; several comms
 *                     of one thread set up concurrently, one thread each)
 *     a collective -> bt_plan_coll: one work standing for every channel, one launch
 *     consecutive send/recv -> bt_plan_p2p: one block per (peer, direction, part), one
 *                     launch, so a group's sends and receives progress together
 *     send/recv to self -> a copy on the stream (paired by bt_plan_check)
 * Each launch switches to the communicator's device and back. A collective runs alone in
 * its launch so that the next one, queued after it on the stream, sees all its output.
 */
#include <string.h>

#include "coll/dtype.h"
#include "core/arrival.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/launch.h"
#include "core/plan.h"
#include "core/window.h"
#include "core/watch.h"
#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"

void bt_launch_gpu_target(const struct bt_cuda_comm *cc, const struct bt_tune_settings *set,
                          float net_gbps, float net_latency_us, void *owner,
                          struct bt_plan_target *tg)
{
    int direct_max = cc->np2p < cc->nch ? cc->np2p : cc->nch; /* its connector parts */
    if (direct_max > BT_CUDA_ONEPASS_MAX_WORKS)               /* what a launch carries */
        direct_max = BT_CUDA_ONEPASS_MAX_WORKS;
    *tg = (struct bt_plan_target){
        .rank = cc->rank,
        .nranks = cc->nranks,
        .set = set,
        .def = &bt_tune_gpu_defaults,
        .owner = owner,
        .max_channels = cc->nch,
        .simple_slot = cc->slot,
        .ll_payload = cc->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD,
        /* 0 unless every GPU pair is NVLink (exec/cuda/p2p.c) */
        .ll128_payload = cc->ll128_slot / BT_LL128_LINE * BT_LL128_PAYLOAD,
        .direct_slot = cc->slot,
        .direct_ok = !cc->net, /* every rank's FIFOs are mapped here */
        .direct_max_channels = direct_max,
        .shm_all = !cc->net, /* through the network: Simple, one channel */
        .shared_gpu = cc->nsame > 1,
        .net_gbps = net_gbps,
        .net_latency_us = net_latency_us,
        .align = BT_CUDA_ALIGN,
        .chan = cc->dchan, /* device addresses: only the kernel dereferences them */
        .peer_send = cc->dpeer_send,
        .peer_recv = cc->dpeer_recv,
        .scratch = cc->dscratch,
        .scratch_stride = cc->scratch_bytes,
        .p2p_parts = cc->np2p_run,
        .p2p_min_part = BT_CUDA_P2P_MIN_PART,
        .p2p_ll_max = cc->net ? 0 : BT_CUDA_P2P_LL_MAX,
        .p2p_slot = cc->slot,
    };
}

/* The CUDA executor as a plan's target: its device channels and connectors. */
static void gpu_target(struct bt_comm *comm, struct bt_plan_target *tg)
{
    bt_launch_gpu_target(comm->cuda, &comm->tune, comm->net_link.gbps, comm->net_link.latency_us,
                         comm, tg);
}

void bt_launch_gpu_model(int nranks, int nvlink_all, const struct bt_tune_settings *set,
                         struct bt_cuda_comm *cc, struct bt_plan_target *tg)
{
    memset(cc, 0, sizeof(*cc));
    cc->nranks = nranks;
    bt_cuda_geometry_default(cc, 0);
    if (!nvlink_all)
        cc->ll128_slot = 0;
    bt_launch_gpu_target(cc, set, 0, 0, NULL, tg);
}

/* ---- the first GPU operation: CUDA state and connectors ------------------------------- */

static int needs_setup(const struct bt_op *op)
{
    return op->comm->cuda == NULL;
}

static bt_status_t setup_one(struct bt_comm *comm, void *unused)
{
    (void)unused;
    struct bt_cuda_setup s = {
        .ctx = &comm->tctx,
        .dev = comm->cuda_dev,
        .shm_all = comm->shm_all,
        .rings = comm->channels,
        .nrings = comm->nchannels,
        .min_nchannels = comm->tune.min_nchannels,
        .max_nchannels = comm->config.max_ctas,
        .host_slot = comm->simple_slot,
    };
    struct bt_cuda_comm *cc = NULL;
    bt_status_t st = bt_device_set(comm->cuda_dev);
    if (st == BT_OK)
        st = bt_cuda_comm_create(&s, &cc);
    /* published whole: ncclCommGetAsyncError reads it from another thread */
    __atomic_store_n(&comm->cuda, cc, __ATOMIC_RELEASE);
    bt_watch_setup_done(comm); /* now: another comm of the group may still wait */
    return st;
}

/* The setup is collective: every rank joins it at its first GPU operation. Before it, each
 * communicator that sets up marks its first collective of the launch on the arrival board
 * (bt_plan_begin marks it again, the same number) and tells the watcher, so that a rank
 * that never comes shows in a hang report instead of a silent wait. Ops of one comm are
 * contiguous. */
static void watch_setups(const struct bt_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        if (!needs_setup(&ops[i]) || (i > 0 && ops[i].comm == ops[i - 1].comm))
            continue;
        struct bt_comm *comm = ops[i].comm;
        uint64_t seq = 0;
        for (int j = i; j < nops && ops[j].comm == comm && !seq; j++)
            if (!bt_coll_is_p2p(ops[j].coll))
                seq = comm->ncolls + 1;
        if (seq)
            bt_arrival_start(comm, seq);
        bt_watch_setup(comm, seq);
    }
}

static bt_status_t setup_comms(struct bt_op *ops, int nops)
{
    watch_setups(ops, nops);
    bt_status_t st = bt_for_each_comm(ops, nops, needs_setup, setup_one, NULL);
    for (int i = 0; i < nops; i++) {
        if (i > 0 && ops[i].comm == ops[i - 1].comm)
            continue;
        bt_watch_setup_done(ops[i].comm); /* again, for a setup that never ran */
        if (!ops[i].comm->cuda)           /* it failed: the collective did not start after all */
            bt_arrival_start(ops[i].comm, ops[i].comm->ncolls);
    }
    return st;
}

void bt_launch_gpu_free(struct bt_comm *comm)
{
    if (!comm->cuda)
        return;
    bt_cuda_comm_sync(comm->cuda);
    bt_watch_remove(comm); /* after the kernels: its last look sees what they reported */
    bt_cuda_comm_free(comm->cuda);
    comm->cuda = NULL;
}

/* ---- launches ------------------------------------------------------------------------ */

/* Through the network the launch hands the proxy each kernel's steps as it queues the
 * kernel; a graph would replay kernels without them. */
static bt_status_t check_capture(const struct bt_op *op)
{
    struct bt_comm *comm = op->comm;
    if (!comm->cuda || !comm->cuda->net || !bt_device_stream_capturing(op->stream))
        return BT_OK;
    BT_WARN("rank %d: CUDA graph capture of GPU operations through the network (a rank on "
            "another host, or P2P_DISABLE=1 with SHM_DISABLE=1) is not supported yet; run them "
            "outside the capture",
            comm->rank);
    return BT_ERR_INVALID_USAGE;
}

/* What the CUDA executor cannot do yet: a one-rank collective that multiplies by a scalar
 * other than 1 (PreMulSum; the host does it). A scalar in memory is only known at launch. */
static bt_status_t check_single(const struct bt_op *op)
{
    const struct bt_redop *r = &op->redop;
    if (op->comm->nranks != 1 || op->count == 0 || bt_plan_single(op) != 2 || !r->pre_mul ||
        r->scalar_f == 1.0 || r->scalar_i == 1)
        return BT_OK;
    BT_WARN("PreMulSum with a scalar other than 1 on a one-rank GPU communicator is not "
            "supported yet");
    return BT_ERR_INVALID_USAGE;
}

bt_status_t bt_launch_gpu_check(const struct bt_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        BT_CHECK(check_capture(&ops[i])); /* a comm not set up yet: checked after its setup */
        if (!ops[i].scalar_ptr)
            BT_CHECK(check_single(&ops[i]));
    }
    return BT_OK;
}

/* One collective: the planned work, one block per channel it stands for. */
static bt_status_t launch_coll(const struct bt_plan_target *tg, struct bt_op *op)
{
    static __thread struct bt_cuda_kargs a;
    struct bt_cuda_comm *cc = op->comm->cuda;
    bt_cuda_kargs_init(&a, cc);
    struct bt_tune_out t;
    bt_plan_coll(tg, op, &t, bt_cuda_kargs_add(&a, 0));
    op->comm->stats.colls++;
    op->comm->stats.by_algo[t.algo]++;
    return bt_cuda_kargs_launch(cc, &a, op->stream);
}

/* Send/recv ops[i0..i1) of one communicator: one block per (peer, direction, part); a
 * receive from itself is a copy on the stream, queued where it stands. */
static bt_status_t launch_p2p(const struct bt_plan_target *tg, struct bt_op *ops, int i0, int i1)
{
    static __thread struct bt_cuda_kargs a;
    struct bt_comm *comm = ops[i0].comm;
    struct bt_cuda_comm *cc = comm->cuda;
    bt_cuda_kargs_init(&a, cc);
    void *stream = ops[i0].stream;
    struct bt_work parts[BT_CUDA_P2P_PARTS]; /* bt_plan_p2p gives at most cc->np2p */
    for (int i = i0; i < i1; i++) {
        struct bt_op *op = &ops[i];
        BT_CHECK(bt_plan_begin(op));
        if (op->self_src) {
            if (op->recvbuf != op->self_src)
                BT_CHECK(
                    bt_device_copy_async(op->recvbuf, op->self_src, op->self_bytes, op->stream));
            continue;
        }
        if (op->count == 0 || op->peer == comm->rank)
            continue;
        int is_send = op->coll == BT_COLL_SEND;
        int n = bt_plan_p2p(tg, op, parts);
        for (int k = 0; k < n; k++) {
            if (a.h.nworks == BT_CUDA_MAX_WORKS) {
                /* only with many ops per peer in one group: later ones wait for these */
                BT_CHECK(bt_cuda_kargs_launch(cc, &a, stream));
                bt_cuda_kargs_init(&a, cc);
            }
            int idx = bt_cuda_p2p_index(cc, op->peer, !is_send, k);
            struct bt_work *w = bt_cuda_kargs_add(&a, idx);
            *w = parts[k];
            w->p2p_conn = &cc->dp2p[idx];
        }
    }
    return bt_cuda_kargs_launch(cc, &a, stream);
}

/* An AllReduce whose input and output lie in windows every rank mapped, where the tuner says
 * the window kernel wins: every rank decides alike (the same size, the windows at the same
 * offsets on every rank: what NCCL_WIN_COLL_SYMMETRIC promises). 1 when it was queued. */
static int launch_window(struct bt_op *op, bt_status_t *st)
{
    struct bt_comm *comm = op->comm;
    size_t bytes = op->count * bt_dtype_size(op->dtype);
    const struct bt_window *ws, *wr;
    if (op->coll != BT_COLL_ALLREDUCE ||
        !bt_window_pair(comm, op->sendbuf, op->recvbuf, bytes, 0, &ws, &wr))
        return 0;
    int max_blocks = comm->cuda->nch < BT_WIN_MAX_BLOCKS ? comm->cuda->nch : BT_WIN_MAX_BLOCKS;
    int nb = bt_tune_window(&comm->tune, &bt_tune_gpu_defaults, comm->nranks, bytes, max_blocks);
    if (nb == 0)
        return 0;
    struct bt_cuda_wargs a;
    memset(&a, 0, sizeof(a));
    size_t soff = (size_t)((const char *)op->sendbuf - ws->base);
    size_t roff = (size_t)((const char *)op->recvbuf - wr->base);
    for (int r = 0; r < comm->nranks; r++) {
        a.src[r] = ws->peers[r].base + soff;
        a.dst[r] = wr->peers[r].base + roff;
        a.flags[r] = ws->peers[r].flags; /* the input window's: one per AllReduce */
    }
    a.count = op->count;
    a.redop = op->redop;
    a.nranks = comm->nranks;
    a.rank = comm->rank;
    a.seq = op->seq;
    BT_TRACE(BT_LOG_COLL, "rank %d: AllReduce #%llu of %zu bytes through windows, %d blocks",
             comm->rank, (unsigned long long)op->seq, bytes, nb);
    comm->stats.colls++;
    comm->stats.window++;
    *st = bt_cuda_window_launch(comm->cuda, &a, nb, op->stream);
    return 1;
}

/* A one-rank collective: the output is the input (AllReduce, Broadcast, ...). */
static bt_status_t launch_single(struct bt_op *op)
{
    BT_CHECK(check_single(op)); /* a scalar read from memory just now */
    if (op->sendbuf == op->recvbuf || op->count == 0)
        return BT_OK;
    return bt_device_copy_async(op->recvbuf, op->sendbuf, op->count * bt_dtype_size(op->dtype),
                                op->stream);
}

/* The comm's GPU target, made at its first launch after the setup: fixed from then on. */
static const struct bt_plan_target *target_of(struct bt_comm *comm)
{
    if (!comm->gpu_tg.owner) {
        gpu_target(comm, &comm->gpu_tg);
        comm->gpu_tg.memo = &comm->gpu_memo;
    }
    return &comm->gpu_tg;
}

static bt_status_t launch_comm_ops(struct bt_op *ops, int i0, int i1)
{
    struct bt_comm *comm = ops[i0].comm;
    const struct bt_plan_target *tg = target_of(comm);
    for (int i = i0; i < i1;) {
        struct bt_op *op = &ops[i];
        if (bt_coll_is_p2p(op->coll)) {
            int j = i;
            while (j < i1 && bt_coll_is_p2p(ops[j].coll))
                j++;
            BT_CHECK(launch_p2p(tg, ops, i, j));
            i = j;
            continue;
        }
        BT_CHECK(bt_plan_begin(op));
        if (op->count == 0)
            ;
        else if (comm->nranks == 1)
            BT_CHECK(launch_single(op));
        else {
            bt_status_t st = BT_OK;
            if (!launch_window(op, &st))
                st = launch_coll(tg, op);
            BT_CHECK(st);
        }
        i++;
    }
    return BT_OK;
}

bt_status_t bt_launch_gpu(struct bt_op *ops, int nops)
{
    int prev = bt_device_get(), setup = 0;
    for (int i = 0; i < nops; i++)
        setup |= needs_setup(&ops[i]);
    bt_status_t st = setup ? setup_comms(ops, nops) : BT_OK;
    /* communicators set up just now: a refused capture still queues nothing (the host part of
     * the launch has run, though: bt_launch_gpu_check refuses it before that when it can) */
    for (int i = 0; i < nops && st == BT_OK && setup; i++)
        st = check_capture(&ops[i]);
    if (st != BT_OK) {
        if (prev >= 0)
            (void)bt_device_set(prev);
        return st;
    }
    /* ops of one communicator are contiguous in group order per comm: take them in runs.
     * The device is switched only when it differs (cudaSetDevice costs ~0.1 us a call, a
     * few percent of a small collective's enqueue). */
    int cur = setup ? bt_device_get() : prev; /* setting up may have switched */
    for (int i = 0; i < nops && st == BT_OK;) {
        int j = i + 1;
        while (j < nops && ops[j].comm == ops[i].comm)
            j++;
        if (cur != ops[i].comm->cuda_dev) {
            st = bt_device_set(ops[i].comm->cuda_dev);
            cur = st == BT_OK ? ops[i].comm->cuda_dev : -1;
        }
        if (st == BT_OK)
            st = launch_comm_ops(ops, i, j);
        i = j;
    }
    if (prev >= 0 && cur != prev)
        (void)bt_device_set(prev);
    return st;
}
