/*
 * The launch: a group's ops are checked and planned once (core/plan.h), then run by their
 * executor. This file holds bt_launch and the host part; the GPU part is core/launch_gpu.c.
 *
 *   bt_launch:  every comm in use -> CHECK_COLL -> bt_plan_check -> host ops first, GPU ops
 *               last -> host part -> GPU part -> failure policy
 *   host part:  per op: bt_plan_begin -> works (bt_plan_coll: one per channel and, for a
 *               tree, a down half; bt_plan_p2p) put on lanes -> connectors the works need
 *               that are not connected yet
 *               connect (all comms at once) -> post the proxied steps (exec/host/proxied.h)
 *               -> the host executor drives every lane to completion -> the proxy's last
 *               sends are waited for
 * Ops of one communicator on one lane run in the order they were issued, which is what
 * NCCL guarantees for a stream.
 */
#include "core/launch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algo.h"
#include "core/arrival.h"
#include "core/check_coll.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/liveness.h"
#include "core/plan.h"
#include "device/device.h"
#include "exec/host/executor.h"
#include "exec/host/proxied.h"
#include "exec/host/reduce.h"
#include "exec/host/window.h"
#include "core/window.h"
#include "transport/connect.h"
#include "util/array.h"
#include "util/param.h"
#include "util/time.h"

/* Per-thread scratch, reused across launches so the hot path does not allocate. */
struct launch_scratch {
    struct bt_work *works;
    int nworks, works_cap;
    struct bt_lane **lanes;
    int nlanes, lanes_cap;
    struct bt_conn_req *reqs;
    int nreqs, reqs_cap;
    char *arena; /* scratch of one-shot works, sized before planning */
    size_t arena_used, arena_cap;
    struct bt_fence *fences; /* one per collective op; works keep pointers: sized first */
    int nfences, fences_cap;
    struct bt_host_proxied px; /* the launch's steps that proxies move */
};
static __thread struct launch_scratch ls;

/* The scratch of a thread is freed when the thread exits. */
static pthread_key_t ls_key;
static pthread_once_t ls_key_once = PTHREAD_ONCE_INIT;

static void ls_free(void *unused)
{
    (void)unused;
    free(ls.works);
    free(ls.lanes);
    free(ls.reqs);
    free(ls.arena);
    free(ls.fences);
    bt_host_proxied_free(&ls.px);
    memset(&ls, 0, sizeof(ls));
}

static void ls_key_create(void)
{
    pthread_key_create(&ls_key, ls_free);
}

/* Arm the exit hook once per thread, before its first allocation. */
static void ls_arm(void)
{
    pthread_once(&ls_key_once, ls_key_create);
    if (!pthread_getspecific(ls_key))
        pthread_setspecific(ls_key, &ls);
}

/* ---- placing works ------------------------------------------------------------------ */

static void lane_push(struct bt_lane *ln, struct bt_work *w)
{
    w->next = NULL;
    if (ln->tail)
        ln->tail->next = w;
    else
        ln->head = w;
    ln->tail = w;
}

/* A failed launch must clear every lane it touched: each one is listed before a work goes on
 * it. */
static bt_status_t push(struct bt_lane *ln, struct bt_work *w)
{
    int known = 0;
    for (int i = 0; i < ls.nlanes && !known; i++)
        known = ls.lanes[i] == ln;
    if (!known) {
        if (bt_array_grow((void **)&ls.lanes, &ls.lanes_cap, ls.nlanes + 1, sizeof(*ls.lanes)) != 0)
            return BT_ERR_SYSTEM;
        ls.lanes[ls.nlanes++] = ln;
    }
    lane_push(ln, w);
    return BT_OK;
}

/* The FIFO each kind of host connector gets (the receiver's travels in its blob). */
static struct bt_fifo_sizes host_sizes(const struct bt_comm *comm, enum bt_link_kind kind)
{
    struct bt_fifo_sizes z = {{0}};
    if (kind == BT_LINK_P2P) {
        z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->p2p_slot;
    } else if (kind == BT_LINK_DIRECT) {
        z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->direct_slot;
        z.slot_bytes[BT_PROTO_LL] = (uint32_t)comm->ll_slot;
    } else {
        z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->simple_slot;
        z.slot_bytes[BT_PROTO_LL] = (uint32_t)comm->ll_slot;
    }
    return z; /* no LL128: the CUDA executor's own FIFOs only */
}

/* A connector the launch's works use: queued for connection unless it is (or will be). */
static bt_status_t need_conn(struct bt_comm *comm, struct bt_conn *conn, int peer, int is_send,
                             enum bt_link_kind kind, int channel)
{
    if (conn->connected || conn->pending)
        return BT_OK;
    struct bt_fifo_sizes z = host_sizes(comm, kind);
    bt_connect_prepare(conn, peer, is_send, kind, channel, &z);
    if (is_send && comm->link_caps && comm->link_caps[peer].bytes_per_ns > 0)
        conn->cap = &comm->link_caps[peer];
    if (bt_array_grow((void **)&ls.reqs, &ls.reqs_cap, ls.nreqs + 1, sizeof(*ls.reqs)) != 0)
        return BT_ERR_SYSTEM;
    conn->pending = 1;
    struct bt_conn_req *r = &ls.reqs[ls.nreqs++];
    r->ctx = &comm->tctx;
    r->conn = conn;
    r->key = bt_link_key(kind, channel);
    return BT_OK;
}

static char *arena_take(size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    if (ls.arena_used + bytes > ls.arena_cap)
        return NULL; /* arena_reserve sized it for the launch: cannot happen */
    char *p = ls.arena + ls.arena_used;
    ls.arena_used += bytes;
    return p;
}

/* The one-shot's scratch of one slot, the larger of its protocols'. */
static size_t direct_scratch(const struct bt_comm *comm)
{
    return comm->direct_slot > comm->ll_slot ? comm->direct_slot : comm->ll_slot;
}

/* Scratch for every possible one-shot work of the launch: at most one per op (one channel),
 * of at most one slot. Reserved before planning because works keep pointers into it. */
static int arena_reserve(const struct bt_op *ops, int nops)
{
    size_t need = 0;
    for (int i = 0; i < nops; i++)
        if (ops[i].coll == BT_COLL_ALLREDUCE)
            need += (direct_scratch(ops[i].comm) + 63) & ~(size_t)63;
    ls.arena_used = 0;
    if (need <= ls.arena_cap)
        return 0;
    char *p = realloc(ls.arena, need);
    if (!p)
        return -1;
    ls.arena = p;
    ls.arena_cap = need;
    return 0;
}

/* Works are stored in a growable array; lanes link them by pointer, so the array is sized
 * for the whole launch before any pointer is taken (works_needed). */
static struct bt_work *new_work(void)
{
    return &ls.works[ls.nworks++];
}

static int works_needed(const struct bt_op *ops, int nops)
{
    int n = 0;
    for (int i = 0; i < nops; i++)
        n += bt_coll_is_p2p(ops[i].coll) ? 1 : 2 * ops[i].comm->nchannels;
    return n;
}

/* The host executor as a plan's target: the comm's channels and connectors in host memory. */
static void host_target(struct bt_comm *comm, struct bt_plan_target *tg)
{
    *tg = (struct bt_plan_target){
        .rank = comm->rank,
        .nranks = comm->nranks,
        .set = &comm->tune,
        .def = &bt_tune_host_defaults,
        .abort_flag = &comm->abort_flag,
        .owner = comm,
        .max_channels = comm->nchannels,
        .simple_slot = comm->simple_slot,
        .ll_payload = comm->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD,
        .direct_slot = comm->direct_slot,
        .direct_ok = (comm->local_ranks == comm->nranks && comm->shm_all) || comm->nranks == 2,
        .direct_max_channels = 1, /* one connector pair per peer */
        .tree_ok = 1,
        .shm_all = comm->shm_all,
        .net_gbps = comm->net_link.gbps,
        .net_latency_us = comm->net_link.latency_us,
        .zero_copy = 1,
        .chan = comm->channels,
        .host_chan = comm->channels,
        .peer_send = comm->direct_send,
        .peer_recv = comm->direct_recv,
        .p2p_parts = 1,
        .p2p_slot = comm->p2p_slot,
    };
}

/* The comm's host target, made at its first host operation (what it describes is fixed once
 * init is done: TOPO_PROBE re-plans the channels in place), but for the one-shot's scratch,
 * which place_coll points at this launch's arena for each op. */
static struct bt_plan_target *target_of(struct bt_comm *comm)
{
    if (!comm->host_tg.owner) {
        host_target(comm, &comm->host_tg);
        comm->host_tg.memo = &comm->host_memo;
    }
    return &comm->host_tg;
}

/* A send or receive to another rank: one work on the (peer, direction) lane. */
static bt_status_t place_p2p(struct bt_comm *comm, const struct bt_op *op)
{
    struct bt_work *w = new_work();
    if (bt_plan_p2p(target_of(comm), op, w) != 1)
        return BT_ERR_INTERNAL;
    struct bt_p2p_peer *pp = &comm->p2p[op->peer];
    int is_send = op->coll == BT_COLL_SEND;
    w->p2p_conn = is_send ? &pp->send : &pp->recv;
    BT_CHECK(need_conn(comm, w->p2p_conn, op->peer, is_send, BT_LINK_P2P, 0));
    return push(is_send ? &pp->send_lane : &pp->recv_lane, w);
}

/* The connectors of channel c's work for algorithm `algo`. */
static bt_status_t coll_conns(struct bt_comm *comm, int algo, int c)
{
    struct bt_channel *ch = &comm->channels[c];
    if (algo == BT_ALGO_RING) {
        BT_CHECK(need_conn(comm, &ch->ring_send, ch->ring.next, 1, BT_LINK_RING, c));
        return need_conn(comm, &ch->ring_recv, ch->ring.prev, 0, BT_LINK_RING, c);
    }
    if (bt_algo_all_peers(algo)) {
        for (int r = 0; r < comm->nranks; r++) {
            if (r == comm->rank)
                continue;
            BT_CHECK(need_conn(comm, comm->direct_send[r], r, 1, BT_LINK_DIRECT, 0));
            BT_CHECK(need_conn(comm, comm->direct_recv[r], r, 0, BT_LINK_DIRECT, 0));
        }
        return BT_OK;
    }
    const struct bt_tree *tr = &ch->tree; /* links to the parent and children */
    for (int k = 0; k < tr->ndown; k++) {
        BT_CHECK(need_conn(comm, &ch->tree_down_recv[k], tr->down[k], 0, BT_LINK_TREE_UP, c));
        BT_CHECK(need_conn(comm, &ch->tree_down_send[k], tr->down[k], 1, BT_LINK_TREE_DOWN, c));
    }
    if (tr->up >= 0) {
        BT_CHECK(need_conn(comm, &ch->tree_up_send, tr->up, 1, BT_LINK_TREE_UP, c));
        BT_CHECK(need_conn(comm, &ch->tree_up_recv, tr->up, 0, BT_LINK_TREE_DOWN, c));
    }
    return BT_OK;
}

/* A collective: the planned work made channel c's for each channel, on the channel's lane;
 * a tree's non-roots get a down half on a second lane. The works wait for the comm's previous
 * collective of the launch (a fence) and count down their own. */
static bt_status_t place_coll(struct bt_comm *comm, const struct bt_op *op)
{
    struct bt_plan_target *tg = target_of(comm);
    tg->scratch = NULL;
    if (op->coll == BT_COLL_ALLREDUCE && !(tg->scratch = arena_take(direct_scratch(comm))))
        return BT_ERR_SYSTEM;
    struct bt_tune_out t;
    struct bt_work *w0 = new_work(); /* the planned work, then channel 0's */
    bt_plan_coll(tg, op, &t, w0);
    comm->stats.colls++;
    comm->stats.by_algo[t.algo]++;

    struct bt_fence *fence = &ls.fences[ls.nfences++];
    fence->remaining = 0;
    w0->fence = fence;
    w0->after = comm->last_fence;
    comm->last_fence = fence;
    uint32_t nchans = w0->nchans > 1 ? w0->nchans : 1;
    struct bt_work tw; /* the planned work, kept for the other channels */
    if (nchans > 1)
        tw = *w0;
    for (uint32_t c = 0; c < nchans; c++) {
        struct bt_work *w = c == 0 ? w0 : new_work(), down;
        if (c > 0)
            *w = tw;
        int has_down = bt_plan_channel(w, c, &down);
        if (c == 0 && w->algo == BT_ALGO_RING && w->split_max)
            comm->stats.ring_split++;
        fence->remaining += 1 + has_down;
        BT_CHECK(push(&comm->channels[c].lane, w));
        BT_CHECK(coll_conns(comm, t.algo, (int)c));
        if (has_down) {
            struct bt_work *d = new_work();
            *d = down;
            BT_CHECK(push(&comm->tree_down_lanes[c], d));
        }
    }
    return BT_OK;
}

/* An AllReduce whose input and output lie in host-memory windows every rank mapped, where the
 * tuner says the window AllReduce wins: one window work on channel 0's lane, fenced like any
 * collective (exec/host/window.h). 1 when placed (*st: the outcome). */
static int place_window(struct bt_comm *comm, const struct bt_op *op, bt_status_t *st)
{
    size_t bytes = op->count * bt_dtype_size(op->dtype);
    const struct bt_window *ws, *wr;
    if (op->coll != BT_COLL_ALLREDUCE ||
        !bt_window_pair(comm, op->sendbuf, op->recvbuf, bytes, 1, &ws, &wr) ||
        bt_tune_window(&comm->tune, &bt_tune_host_defaults, comm->nranks, bytes, 1) == 0)
        return 0;
    /* the arena holds a one-shot scratch per AllReduce (arena_reserve): far more than this */
    struct bt_host_win_args *a = (struct bt_host_win_args *)(void *)arena_take(sizeof(*a));
    *st = BT_ERR_SYSTEM;
    if (!a)
        return 1;
    size_t soff = (size_t)((const char *)op->sendbuf - ws->base);
    size_t roff = (size_t)((const char *)op->recvbuf - wr->base);
    a->n = comm->nranks;
    a->rank = comm->rank;
    for (int r = 0; r < comm->nranks; r++) {
        a->src[r] = ws->host_peers[r].base + soff;
        a->dst[r] = wr->host_peers[r].base + roff;
        a->flags[r] = ws->host_peers[r].flags; /* the input window's: one per AllReduce */
    }
    struct bt_work *w = new_work();
    memset(w, 0, sizeof(*w));
    w->coll = BT_COLL_ALLREDUCE;
    w->algo = BT_ALGO_WINDOW;
    w->redop = op->redop;
    w->sendbuf = op->sendbuf;
    w->recvbuf = op->recvbuf;
    w->esize = bt_dtype_size(op->dtype);
    w->count = op->count;
    w->nranks = comm->nranks;
    w->rank = comm->rank;
    w->nsteps = BT_HOST_WIN_STEPS;
    w->seq = op->seq;
    w->abort_flag = &comm->abort_flag;
    w->owner = comm;
    w->scratch = (char *)a;
    struct bt_fence *fence = &ls.fences[ls.nfences++];
    fence->remaining = 1;
    w->fence = fence;
    w->after = comm->last_fence;
    comm->last_fence = fence;
    comm->stats.colls++;
    comm->stats.window++;
    BT_TRACE(BT_LOG_COLL, "rank %d: AllReduce #%llu of %zu bytes through host windows", comm->rank,
             (unsigned long long)op->seq, bytes);
    *st = push(&comm->channels[0].lane, w);
    return 1;
}

/* One rank: the collective is a local copy (with the op's pre/post for reductions). */
static void run_single_rank(const struct bt_op *op)
{
    const void *src = op->sendbuf;
    switch (bt_plan_single(op)) {
    case 2:
        bt_host_reduce(&op->redop, op->recvbuf, &src, 1, 1u, 1, op->count);
        break;
    case 1:
        bt_host_copy(op->recvbuf, op->sendbuf, op->count * bt_dtype_size(op->dtype));
        break;
    }
}

static void discard_lanes(void)
{
    for (int i = 0; i < ls.nlanes; i++)
        ls.lanes[i]->head = ls.lanes[i]->tail = NULL;
    for (int i = 0; i < ls.nreqs; i++)
        ls.reqs[i].conn->pending = 0;
}

/* ---- waiting ------------------------------------------------------------------------ */

/* The executor's hang report names the peer a work waits for; add who has not arrived at
 * its collective (once per communicator and operation). */
static void hang_report(const struct bt_work *w)
{
    static __thread const void *last_comm;
    static __thread uint64_t last_seq;
    if (w->seq == 0 || (w->owner == last_comm && w->seq == last_seq))
        return; /* send/recv: no common numbering to compare */
    last_comm = w->owner;
    last_seq = w->seq;
    bt_arrival_hang(w->owner, w->seq); /* without a board the answers come in via stalled() */
}

/* Every ~50 ms of a stall, for each stuck work: answer the other ranks' questions and take in
 * the answers to ours (once per communicator and pass: its channels' works come together). */
static void stalled(const struct bt_work *w)
{
    static __thread const void *last_comm;
    static __thread uint64_t last_ns;
    uint64_t now = bt_time_ns();
    if (w->owner == last_comm && now - last_ns < 10000000ull)
        return;
    last_comm = w->owner;
    last_ns = now;
    bt_arrival_serve(w->owner);
}

/* A proxied op of the launch failed: name the peer (bt_liveness_report_net). */
static void report_proxied(const struct bt_proxied_op *po)
{
    bt_liveness_report_net(po->owner, po->peer);
}

/* The executor's liveness check of a stalled work: a local peer is down, one of the comm's
 * network ops has failed (another host: its sockets closed when it died), or, after a second
 * of stall, a peer on another host no longer listens (a network that reports nothing when
 * its peer dies: OFI, plugins), so the launch fails now instead of at TIMEOUT. */
static int peer_gone(const struct bt_work *w, int peer, uint64_t stalled_ns)
{
    const char *what = bt_coll_is_p2p(w->coll) ? "send/recv" : "collective";
    if (bt_liveness_report_down(w->owner, peer, what, w->seq, 0))
        return 1;
    const struct bt_proxied_op *po = bt_host_proxied_failed(&ls.px, w->owner);
    if (po) {
        report_proxied(po);
        return 1;
    }
    return bt_liveness_report_refused(w->owner, peer, what, w->seq, stalled_ns);
}

/* PROXY_DUMP_SIGNAL arrived since this thread last looked: report where it waits. */
static int dump_signalled(void)
{
    static __thread unsigned seen;
    unsigned g = bt_proxy_dump_generation();
    if (g == seen)
        return 0;
    seen = g;
    return 1;
}

/* ---- the host part ------------------------------------------------------------------ */

bt_status_t bt_launch_host(struct bt_op *ops, int nops)
{
    bt_status_t st = BT_OK;
    if (!ls.works)
        ls_arm();
    ls.nworks = ls.nlanes = ls.nreqs = ls.nfences = 0;
    bt_host_proxied_begin(&ls.px);
    for (int i = 0; i < nops; i++)
        ops[i].comm->last_fence = NULL;
    if (bt_array_grow((void **)&ls.works, &ls.works_cap, works_needed(ops, nops),
                      sizeof(*ls.works)) != 0 ||
        bt_array_grow((void **)&ls.fences, &ls.fences_cap, nops, sizeof(*ls.fences)) != 0 ||
        arena_reserve(ops, nops) != 0) {
        BT_WARN("out of memory planning %d operations", nops);
        return BT_ERR_SYSTEM;
    }

    for (int i = 0; i < nops; i++) {
        struct bt_op *op = &ops[i];
        struct bt_comm *comm = op->comm;
        BT_CHECK_GOTO(bt_plan_begin(op), st, fail);
        if (bt_coll_is_p2p(op->coll)) {
            if (op->self_src && op->recvbuf != op->self_src) /* paired by bt_plan_check */
                memmove(op->recvbuf, op->self_src, op->self_bytes);
            if (op->count == 0 || op->peer == comm->rank)
                continue;
            BT_CHECK_GOTO(place_p2p(comm, op), st, fail);
        } else if (op->count == 0) {
            continue;
        } else if (comm->nranks == 1) {
            run_single_rank(op);
        } else if (!place_window(comm, op, &st)) {
            BT_CHECK_GOTO(place_coll(comm, op), st, fail);
        } else if (st != BT_OK) {
            goto fail;
        }
    }

    if (ls.nreqs > 0) {
        st = bt_connect_all(ls.reqs, ls.nreqs);
        for (int i = 0; i < ls.nreqs; i++)
            ls.reqs[i].conn->pending = 0;
        if (st != BT_OK)
            goto fail;
    }
    int drive = bt_param_proxy_drive() != 0;
    for (int i = 0; i < ls.nworks; i++) {
        struct bt_comm *comm = ls.works[i].owner;
        if (ls.works[i].algo == BT_ALGO_WINDOW)
            continue; /* no connectors */
        BT_CHECK_GOTO(
            bt_host_proxied_post(&ls.px, &ls.works[i], comm->shm_all ? NULL : &comm->tctx, drive),
            st, fail);
    }
    if (ls.nlanes > 0) {
        struct bt_wait_policy wait = {.spin = (uint64_t)bt_param_spin_count(),
                                      .yields = (uint64_t)bt_param_yield_count(),
                                      .poll = ls.px.ndrive ? bt_host_proxied_poll : NULL,
                                      .block = ls.px.ndrive ? bt_host_proxied_block : NULL,
                                      .arg = &ls.px,
                                      .hang_ns = (uint64_t)bt_param_hang_report() * 1000000000ull,
                                      .hang = hang_report,
                                      .report_now = dump_signalled,
                                      .peer_gone = peer_gone,
                                      .stalled = stalled};
        for (int i = 0; i < nops; i++)
            if (ops[i].comm->oversubscribed)
                wait.spin = 0;
        if (ls.px.nops > 0)
            wait.spin = 0; /* the proxy needs the core we would spin on */
        st = bt_host_exec(ls.lanes, ls.nlanes, &wait, NULL);
        if (st != BT_OK)
            goto fail;
    }
    /* The executor is done when the last data is in the FIFOs; the proxy may still be
     * sending it. */
    BT_CHECK_GOTO(bt_host_proxied_finish(&ls.px, BT_OK, report_proxied), st, fail);
    for (int i = 0; i < nops; i++) /* each comm's last collective of the launch is done */
        bt_arrival_done(ops[i].comm, ops[i].comm->ncolls);
    return BT_OK;

fail:
    bt_host_proxied_finish(&ls.px, st, NULL);
    discard_lanes();
    return st;
}

/* ---- the launch --------------------------------------------------------------------- */

/* GPU communicators' operations on device buffers run as kernels (core/launch_gpu.c); the
 * rest on the host. Reorder ops (stably) so the host ones come first, then the GPU ones
 * grouped by communicator, each keeping its order: a communicator's sends and receives of a
 * group then share one kernel. Returns how many are GPU ops. */
static int op_is_gpu(const struct bt_op *op)
{
    return op->comm->cuda_dev >= 0 &&
           (bt_device_ptr_is_device(op->sendbuf) || bt_device_ptr_is_device(op->recvbuf));
}

static int gpu_ops_last(struct bt_op *ops, int nops)
{
    if (nops == 1) /* the common call outside a group: one pointer query, no allocation */
        return op_is_gpu(&ops[0]);
    /* one pointer query per op (~0.1-0.15 us each): into a small array, the heap past it */
    char small[64], *gpu = nops <= (int)sizeof(small) ? small : malloc((size_t)nops);
    if (!gpu)
        return -1;
    int ngpu = 0, ordered = 1;
    for (int i = 0; i < nops; i++) {
        gpu[i] = (char)op_is_gpu(&ops[i]);
        ngpu += gpu[i];
        /* in order already: host ops first, then each communicator's GPU ops together */
        if (i > 0 && gpu[i - 1] && !gpu[i])
            ordered = 0;
        if (i > 0 && gpu[i - 1] && gpu[i] && ops[i].comm != ops[i - 1].comm)
            for (int j = 0; j < i - 1 && ordered; j++)
                ordered = !(gpu[j] && ops[j].comm == ops[i].comm);
    }
    struct bt_op *tmp = NULL;
    if (ngpu > 0 && !ordered && !(tmp = malloc(sizeof(*tmp) * (size_t)nops)))
        ngpu = -1;
    if (tmp) {
        int n = 0;
        for (int i = 0; i < nops; i++)
            if (!gpu[i])
                tmp[n++] = ops[i];
        for (int i = 0; i < nops; i++) { /* each communicator's GPU ops, at its first one */
            if (!gpu[i])
                continue;
            struct bt_comm *c = ops[i].comm;
            for (int j = i; j < nops; j++)
                if (gpu[j] && ops[j].comm == c) {
                    tmp[n++] = ops[j];
                    gpu[j] = 0;
                }
        }
        memcpy(ops, tmp, sizeof(*tmp) * (size_t)nops);
        free(tmp);
    }
    if (gpu != small)
        free(gpu);
    return ngpu;
}

/* Mark the comms busy for the launch so ncclCommAbort from another thread waits for the
 * launch to notice the abort before it frees what the launch uses. */
bt_status_t bt_launch(struct bt_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        if (!bt_comm_acquire(ops[i].comm)) {
            BT_WARN("communicator %p was destroyed or aborted before its operation ran",
                    (void *)ops[i].comm);
            while (--i >= 0)
                bt_comm_release(ops[i].comm);
            return BT_ERR_INVALID_USAGE;
        }
    }
    /* Nothing has run while these fail: the communicators stay as they are. */
    bt_status_t st = bt_check_colls(ops, nops);
    if (st == BT_OK)
        st = bt_plan_check(ops, nops, op_is_gpu); /* the group's order: self pairs */
    int ngpu = st == BT_OK ? gpu_ops_last(ops, nops) : 0;
    if (ngpu < 0)
        st = BT_ERR_SYSTEM;
    if (st == BT_OK && ngpu > 0)
        st = bt_launch_gpu_check(ops + nops - ngpu, ngpu);
    /* From here ops run: a failure may leave the ranks apart (bt_plan_fail). */
    bt_status_t run = BT_OK;
    if (st == BT_OK && nops > ngpu)
        run = bt_launch_host(ops, nops - ngpu);
    if (st == BT_OK && run == BT_OK && ngpu > 0)
        run = bt_launch_gpu(ops + nops - ngpu, ngpu);
    if (run != BT_OK)
        bt_plan_fail(ops, nops, run);
    for (int i = 0; i < nops; i++)
        bt_comm_release(ops[i].comm);
    return st != BT_OK ? st : run;
}
