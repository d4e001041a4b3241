/*
 * The CUDA executor as core drives it (exec/exec.h): operations of GPU communicators on device
 * buffers become kernel launches on the callers' streams.
 *
 *   create  the communicator's CUDA state: connectors with every rank (collective)
 *   coll    bt_plan_coll: one work standing for every channel it uses, one launch
 *   p2p     bt_plan_p2p: one block per (peer, direction, part); the consecutive sends and
 *           receives of one communicator are held for one launch (queued at the next other
 *           operation, or at run), so that a group's sends and receives progress together
 *   window  the window kernel (kernel_window.cu)
 *   copy    a copy on the stream: a send/recv to oneself, a one-rank collective
 * A placement switches to the communicator's device only when it differs (cudaSetDevice costs
 * ~0.1 us a call, a few percent of a small collective's enqueue); run switches back. A
 * collective runs alone in its launch so that the next one, queued after it on the stream,
 * sees all its output.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/dtype.h"
#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "exec/exec.h"

/* A communicator's state on the CUDA executor. */
struct cuda_state {
    const struct bt_exec_comm *ec;
    struct bt_cuda_comm *cc;
    struct bt_plan_target tg; /* fixed once made */
    struct bt_tune_memo memo;
};

/* The launch in progress in this thread. */
static __thread struct {
    int prev_dev, cur_dev;    /* the device current before the launch, and now */
    struct cuda_state *held;  /* send/recv works held for one launch of this communicator */
    void *held_stream;        /* ... on this stream */
    struct bt_cuda_kargs p2p; /* those works */
    struct bt_cuda_kargs one; /* a collective's launch */
} ls;

/* ---- the communicator's state -------------------------------------------------------- */

static bt_status_t cuda_create(const struct bt_exec_comm *ec, void **state_p)
{
    struct cuda_state *cs = calloc(1, sizeof(*cs));
    if (!cs) {
        BT_WARN("rank %d: out of memory for the CUDA executor's state", ec->rank);
        return BT_ERR_SYSTEM;
    }
    int prev = bt_device_get();
    bt_status_t st = bt_device_set(ec->dev);
    if (st == BT_OK)
        st = bt_cuda_comm_create(ec, &cs->cc);
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st != BT_OK) {
        free(cs);
        return st;
    }
    cs->ec = ec;
    bt_cuda_target(cs->cc, ec->tune, ec->net_link.gbps, ec->net_link.latency_us, (void *)ec,
                   &cs->tg);
    cs->tg.memo = &cs->memo;
    cs->tg.one_per_host = ec->one_per_host;
    cs->tg.nhosts = ec->nhosts;
    *state_p = cs;
    return BT_OK;
}

static void cuda_sync(void *state)
{
    struct cuda_state *cs = state;
    if (cs)
        bt_cuda_comm_sync(cs->cc);
}

static void cuda_drain(void *state)
{
    struct cuda_state *cs = state;
    if (cs)
        bt_cuda_comm_drain(cs->cc);
}

static void cuda_destroy(void *state)
{
    struct cuda_state *cs = state;
    if (!cs)
        return;
    bt_cuda_comm_free(cs->cc);
    free(cs);
}

static void cuda_abort(void *state)
{
    const struct cuda_state *cs = state;
    if (cs)
        bt_cuda_comm_abort(cs->cc);
}

static bt_status_t cuda_error(const void *state)
{
    const struct cuda_state *cs = state;
    return cs ? bt_cuda_comm_error(cs->cc) : BT_OK;
}

static volatile struct bt_exec_report *cuda_report(void *state)
{
    struct cuda_state *cs = state;
    return bt_cuda_comm_report(cs->cc);
}

/* ---- a launch ------------------------------------------------------------------------- */

/* Through the network the launch hands the proxy each kernel's steps as it queues the
 * kernel; a graph would replay kernels without them. */
static bt_status_t cuda_check(const void *state, const struct bt_op *op)
{
    const struct cuda_state *cs = state;
    if (!cs || !cs->cc->net || !bt_device_stream_capturing(op->stream))
        return BT_OK;
    BT_WARN("rank %d: CUDA graph capture of GPU operations through the network (a rank on "
            "another host, or P2P_DISABLE=1 with SHM_DISABLE=1) is not supported yet; run them "
            "outside the capture",
            cs->ec->rank);
    return BT_ERR_INVALID_USAGE;
}

/* Whether op needs send/recv FIFOs with a peer that are not connected yet (fifos.c): a send
 * or receive with that peer, or a collective the planner puts on every peer's connectors
 * (the one-shot, two-shot, PAT; every rank plans alike). Asks the tuner (its memo) only
 * until every peer is connected. */
static int cuda_lacks(void *state, const struct bt_op *op)
{
    struct cuda_state *cs = state;
    const struct bt_cuda_comm *cc = cs->cc;
    if (cc->p2p_missing == 0 || op->count == 0)
        return 0;
    if (bt_coll_is_p2p(op->coll))
        return op->peer != cc->rank && !cc->p2p_peer[op->peer];
    return bt_plan_all_peers(&cs->tg, op);
}

static bt_status_t cuda_connect(void *state, const struct bt_op *ops, int nops)
{
    struct cuda_state *cs = state;
    struct bt_cuda_comm *cc = cs->cc;
    unsigned char *want = calloc((size_t)cc->nranks, 1);
    if (!want)
        return BT_ERR_SYSTEM;
    for (int i = 0; i < nops; i++) {
        if (!cuda_lacks(cs, &ops[i]))
            continue;
        if (bt_coll_is_p2p(ops[i].coll))
            want[ops[i].peer] = 1;
        else
            memset(want, 1, (size_t)cc->nranks);
    }
    int prev = bt_device_get();
    bt_status_t st = bt_device_set(cs->ec->dev);
    if (st == BT_OK)
        st = bt_cuda_p2p_connect(cc, want);
    if (prev >= 0 && prev != cs->ec->dev)
        (void)bt_device_set(prev);
    free(want);
    return st;
}

static void cuda_begin(void)
{
    ls.prev_dev = ls.cur_dev = bt_device_get();
    ls.held = NULL;
}

/* Queue the held send/recv works. */
static bt_status_t flush(void)
{
    struct cuda_state *cs = ls.held;
    ls.held = NULL;
    return cs ? bt_cuda_kargs_launch(cs->cc, &ls.p2p, ls.held_stream) : BT_OK;
}

/* Before an operation of `cs`: another communicator's held works go first (on their device),
 * then cs's device is made current. `keep_held`: cs's own held works may stay held. */
static bt_status_t use(struct cuda_state *cs, int keep_held)
{
    if (ls.held && (ls.held != cs || !keep_held))
        BT_CHECK(flush());
    if (ls.cur_dev != cs->ec->dev) {
        bt_status_t st = bt_device_set(cs->ec->dev);
        ls.cur_dev = st == BT_OK ? cs->ec->dev : -1;
        BT_CHECK(st);
    }
    return BT_OK;
}

static bt_status_t cuda_copy(void *state, void *dst, const void *src, size_t bytes, void *stream)
{
    BT_CHECK(use(state, 1)); /* a copy on the stream: held works need not come first */
    return bt_device_copy_async(dst, src, bytes, stream);
}

/* One collective: the planned work, one block per channel it stands for; a tree's down half
 * as a second work on as many blocks after them, running beside the up half (coll/tree.h;
 * empty on the channels whose tree has this rank at its root). */
static bt_status_t cuda_coll(void *state, const struct bt_op *op, struct bt_exec_placed *placed)
{
    struct cuda_state *cs = state;
    BT_CHECK(use(cs, 0));
    bt_cuda_kargs_init(&ls.one, cs->cc);
    struct bt_tune_out t;
    struct bt_work *w = bt_cuda_kargs_add(&ls.one, 0);
    bt_plan_coll(&cs->tg, op, &t, w);
    if (t.algo == BT_ALGO_TREE) {
        struct bt_work *down = bt_cuda_kargs_add(&ls.one, w->nchans > 1 ? (int)w->nchans : 1);
        *down = *w;
        down->algo = BT_ALGO_TREE_DOWN;
    }
    placed->algo = t.algo;
    placed->split = 0; /* a GPU's rings keep equal blocks */
    return bt_cuda_kargs_launch(cs->cc, &ls.one, op->stream);
}

/* A send or a receive: one block per (peer, direction, part), held with the communicator's
 * other consecutive ones. */
static bt_status_t cuda_p2p(void *state, const struct bt_op *op)
{
    struct cuda_state *cs = state;
    struct bt_cuda_comm *cc = cs->cc;
    BT_CHECK(use(cs, 1));
    if (!ls.held) {
        bt_cuda_kargs_init(&ls.p2p, cc);
        ls.held = cs;
        ls.held_stream = op->stream;
    }
    struct bt_work parts[BT_CUDA_P2P_PARTS]; /* bt_plan_p2p gives at most cc->np2p */
    int is_send = op->coll == BT_COLL_SEND;
    int n = bt_plan_p2p(&cs->tg, op, parts);
    for (int k = 0; k < n; k++) {
        if (ls.p2p.h.nworks == BT_CUDA_MAX_WORKS) {
            /* only with many ops per peer in one group: later ones wait for these */
            BT_CHECK(bt_cuda_kargs_launch(cc, &ls.p2p, ls.held_stream));
            bt_cuda_kargs_init(&ls.p2p, cc);
        }
        int idx = bt_cuda_p2p_index(cc, op->peer, !is_send, k);
        struct bt_work *w = bt_cuda_kargs_add(&ls.p2p, idx);
        *w = parts[k];
        w->p2p_conn = &cc->dp2p[idx];
    }
    return BT_OK;
}

/* An AllReduce whose input and output lie in windows every rank mapped, where the tuner says
 * the window kernel wins: every rank decides alike (the same size, the windows at the same
 * offsets on every rank: what NCCL_WIN_COLL_SYMMETRIC promises). */
static int cuda_window(void *state, const struct bt_op *op, const struct bt_win_pair *wp,
                       bt_status_t *st)
{
    struct cuda_state *cs = state;
    const struct bt_exec_comm *ec = cs->ec;
    size_t bytes = op->count * bt_dtype_size(op->dtype);
    int max_blocks = cs->cc->nch < BT_WIN_MAX_BLOCKS ? cs->cc->nch : BT_WIN_MAX_BLOCKS;
    int nb = bt_tune_window(ec->tune, &bt_tune_gpu_defaults, ec->nranks, bytes, max_blocks);
    if (nb == 0)
        return 0;
    if ((*st = use(cs, 0)) != BT_OK)
        return 1;
    struct bt_cuda_wargs a;
    memset(&a, 0, sizeof(a));
    bt_win_pair_fill(wp, ec->nranks, a.src, a.dst, a.flags);
    a.count = op->count;
    a.redop = op->redop;
    a.nranks = ec->nranks;
    a.rank = ec->rank;
    a.seq = op->seq;
    BT_TRACE(BT_LOG_COLL, "rank %d: AllReduce #%llu of %zu bytes through windows, %d blocks",
             ec->rank, (unsigned long long)op->seq, bytes, nb);
    *st = bt_cuda_window_launch(cs->cc, &a, nb, op->stream);
    return 1;
}

/* Back to the caller's device. */
static void restore_device(void)
{
    if (ls.prev_dev >= 0 && ls.cur_dev != ls.prev_dev)
        (void)bt_device_set(ls.prev_dev);
    ls.cur_dev = ls.prev_dev;
}

static uint64_t cuda_held(void *state)
{
    return ((struct cuda_state *)state)->cc->dev_bytes;
}

static const struct bt_plan_target *cuda_target(const void *state)
{
    return &((const struct cuda_state *)state)->tg;
}

static bt_status_t cuda_run(void)
{
    bt_status_t st = flush();
    restore_device();
    return st;
}

static void cuda_discard(void)
{
    ls.held = NULL; /* never queued */
    restore_device();
}

const struct bt_exec_ops bt_exec_cuda = {
    .name = "CUDA",
    .collective_setup = 1,
    .create = cuda_create,
    .sync = cuda_sync,
    .drain = cuda_drain,
    .destroy = cuda_destroy,
    .abort = cuda_abort,
    .error = cuda_error,
    .report = cuda_report,
    .check = cuda_check,
    .lacks = cuda_lacks,
    .connect = cuda_connect,
    .begin = cuda_begin,
    .copy = cuda_copy,
    .window = cuda_window,
    .coll = cuda_coll,
    .p2p = cuda_p2p,
    .run = cuda_run,
    .discard = cuda_discard,
    .win_export = bt_cuda_win_export,
    .win_open = bt_cuda_win_open,
    .win_close = bt_cuda_win_close,
    .win_unexport = bt_cuda_win_unexport,
    .win_publish = bt_cuda_win_publish,
    .win_update = bt_cuda_win_update,
    .win_unpublish = bt_cuda_win_unpublish,
    .target = cuda_target,
    .held = cuda_held,
    .model = bt_cuda_model,
};
