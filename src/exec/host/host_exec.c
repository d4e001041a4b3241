/*
 * The host executor as core drives it (exec/exec.h): a communicator's state on host memory,
 * how its operations become works on lanes, and the run in the launching thread.
 *
 *   coll    bt_plan_coll -> the work of each channel (bt_plan_channel) on the channel's lane,
 *           a tree's down half on a second lane; fenced after the comm's previous collective
 *   p2p     bt_plan_p2p -> one work on the (peer, direction) lane
 *   window  one work of three steps (win_allreduce.h) on channel 0's lane, fenced likewise
 *   run     connect what the works need (every communicator at once) -> post the steps the
 *           proxy moves (proxied.h) -> bt_host_exec drives every lane to the end (lanes.h;
 *           large launches with CPUs to spare share their lanes with helper threads,
 *           helpers.h) -> wait for the proxy's last sends
 * Ops of one communicator on one lane run in the order they were issued, which is what NCCL
 * guarantees for a stream. A work's owner is its communicator's struct bt_exec_comm, through
 * which the waits reach core's hooks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algo.h"
#include "exec/exec.h"
#include "exec/host/helpers.h"
#include "exec/host/lanes.h"
#include "exec/host/proxied.h"
#include "exec/host/reduce.h"
#include "exec/host/win_allreduce.h"
#include "exec/host/win_map.h"
#include "transport/connect.h"
#include "util/arena.h"
#include "util/array.h"
#include "util/param.h"
#include "util/time.h"

/* Connectors to one peer, connected on first use: send/recv, and the one- and two-shot's
 * (kept apart so the two never interleave steps on one FIFO). */
struct host_peer {
    struct bt_conn send, recv;
    struct bt_lane send_lane, recv_lane;
    struct bt_conn direct_send, direct_recv;
};

/* A communicator's state on the host executor. */
struct host_comm {
    const struct bt_exec_comm *ec;
    struct bt_plan_target tg; /* what it offers the planner (fixed once made) */
    struct bt_tune_memo memo;
    struct host_peer *peers;                         /* [nranks] */
    struct bt_conn **direct_send, **direct_recv;     /* [nranks]: &peers[r].direct_* */
    struct bt_lane tree_down_lanes[BT_MAX_CHANNELS]; /* the down halves of tree works */
    struct bt_fence *last_fence; /* the launch in progress: its latest collective's fence */
    uint64_t launch;             /* the launch that last_fence belongs to */
    int retained;                /* it counts among the helpers' users (helpers.h) */
    unsigned helpers_token;      /* ... with this token */
};

/* A launch, per thread, reused: the launch path allocates nothing once warm. */
struct launch {
    unsigned gen;           /* this launch's number in the thread */
    struct bt_arena arena;  /* works, fences, one-shot scratch, window arguments */
    struct bt_lane **lanes; /* every lane a work went on */
    int nlanes, lanes_cap;
    struct bt_conn_req *reqs; /* connectors to connect before the run */
    int nreqs, reqs_cap;
    int spin;                  /* no communicator of the launch has more ranks here than CPUs */
    int cpus;                  /* the fewest CPUs per local rank among its communicators */
    int caps;                  /* a communicator of the launch has link caps (INJECT_LINK_BW) */
    size_t bytes;              /* what its operations move (their sizes, as nccl-tests counts) */
    struct bt_host_proxied px; /* the launch's steps that proxies move */
};
static __thread struct launch ls;
/* Launches are numbered across threads: a communicator's launches may come from several
 * (non-blocking groups run in threads of their own). */
static _Atomic uint64_t launches;

/* The scratch of a thread is freed when the thread exits. */
static pthread_key_t ls_key;
static pthread_once_t ls_key_once = PTHREAD_ONCE_INIT;

static void ls_free(void *unused)
{
    (void)unused;
    bt_arena_free(&ls.arena);
    free(ls.lanes);
    free(ls.reqs);
    bt_host_proxied_free(&ls.px);
    memset(&ls, 0, sizeof(ls));
}

static void ls_key_create(void)
{
    pthread_key_create(&ls_key, ls_free);
}

/* ---- the communicator's state -------------------------------------------------------- */

static void host_target(struct host_comm *hc)
{
    const struct bt_exec_comm *ec = hc->ec;
    hc->tg = (struct bt_plan_target){
        .rank = ec->rank,
        .nranks = ec->nranks,
        .set = ec->tune,
        .def = &bt_tune_host_defaults,
        .abort_flag = ec->abort_flag,
        .owner = (void *)ec,
        .max_channels = ec->nchannels,
        .simple_slot = ec->simple_slot,
        .ll_payload = ec->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD,
        .direct_slot = ec->direct_slot,
        .direct_ok = (ec->local_ranks == ec->nranks && ec->shm_all) || ec->nranks == 2,
        .direct_max_channels = 1, /* one connector pair per peer */
        .tree_ok = 1,
        .pat_ok = 1,
        .one_per_host = ec->one_per_host,
        .nhosts = ec->nhosts,
        .shm_all = ec->shm_all,
        .net_gbps = ec->net_link.gbps,
        .net_latency_us = ec->net_link.latency_us,
        .zero_copy = 1,
        .chan = ec->channels,
        .host_chan = ec->channels,
        .peer_send = hc->direct_send,
        .peer_recv = hc->direct_recv,
        .p2p_parts = 1,
        .p2p_slot = ec->p2p_slot,
        .memo = &hc->memo,
    };
}

static const struct bt_plan_target *host_target_of(const void *state)
{
    return &((const struct host_comm *)state)->tg;
}

static void host_destroy(void *state);

static bt_status_t host_create(const struct bt_exec_comm *ec, void **state_p)
{
    struct host_comm *hc = calloc(1, sizeof(*hc));
    if (hc) {
        hc->ec = ec;
        hc->peers = calloc((size_t)ec->nranks, sizeof(*hc->peers));
        hc->direct_send = calloc((size_t)ec->nranks, sizeof(*hc->direct_send));
        hc->direct_recv = calloc((size_t)ec->nranks, sizeof(*hc->direct_recv));
    }
    if (!hc || !hc->peers || !hc->direct_send || !hc->direct_recv) {
        BT_WARN("rank %d: out of memory for the host executor's state of %d ranks", ec->rank,
                ec->nranks);
        host_destroy(hc);
        return BT_ERR_SYSTEM;
    }
    for (int r = 0; r < ec->nranks; r++) {
        hc->direct_send[r] = &hc->peers[r].direct_send;
        hc->direct_recv[r] = &hc->peers[r].direct_recv;
    }
    host_target(hc);
    hc->helpers_token = bt_host_helpers_retain();
    hc->retained = 1;
    *state_p = hc;
    return BT_OK;
}

/* fn(conn, arg) for every host connector: the channels' (which only this executor connects)
 * and the peers'. */
static void each_conn(struct host_comm *hc, void (*fn)(struct bt_conn *, void *), void *arg)
{
    for (int c = 0; c < hc->ec->nchannels; c++) {
        struct bt_channel *ch = &hc->ec->channels[c];
        struct bt_conn *fixed[] = {&ch->ring_send, &ch->ring_recv, &ch->tree_up_send,
                                   &ch->tree_up_recv};
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            fn(fixed[i], arg);
        for (int k = 0; k < BT_TREE_ARITY; k++) {
            fn(&ch->tree_down_send[k], arg);
            fn(&ch->tree_down_recv[k], arg);
        }
    }
    for (int r = 0; hc->peers && r < hc->ec->nranks; r++) {
        struct host_peer *p = &hc->peers[r];
        fn(&p->send, arg);
        fn(&p->recv, arg);
        fn(&p->direct_send, arg);
        fn(&p->direct_recv, arg);
    }
}

static void free_conn(struct bt_conn *c, void *arg)
{
    (void)arg;
    bt_conn_free(c);
}

static void add_held(struct bt_conn *c, void *arg)
{
    *(uint64_t *)arg += c->held;
}

/* The FIFO memory its connectors made (host memory: ncclCommMemStats). */
static uint64_t host_held(void *state)
{
    uint64_t bytes = 0;
    each_conn(state, add_held, &bytes);
    return bytes;
}

static void host_destroy(void *state)
{
    struct host_comm *hc = state;
    if (!hc)
        return;
    each_conn(hc, free_conn, NULL);
    if (hc->retained)
        bt_host_helpers_release(hc->helpers_token);
    free(hc->peers);
    free(hc->direct_send);
    free(hc->direct_recv);
    free(hc);
}

/* ---- placing works ------------------------------------------------------------------ */

static void host_begin(void)
{
    if (!ls.gen) { /* the thread's first launch: arm the exit hook */
        pthread_once(&ls_key_once, ls_key_create);
        pthread_setspecific(ls_key, &ls);
    }
    ls.gen = atomic_fetch_add_explicit(&launches, 1, memory_order_relaxed) + 1;
    bt_arena_reset(&ls.arena);
    ls.nlanes = ls.nreqs = 0;
    ls.spin = 1;
    ls.cpus = BT_HOST_MAX_HELPERS + 1;
    ls.caps = 0;
    ls.bytes = 0;
    bt_host_proxied_begin(&ls.px);
}

/* The state as this launch uses it: its fences start over at the launch's first op on it. */
static struct host_comm *touch(void *state)
{
    struct host_comm *hc = state;
    if (hc->launch != ls.gen) {
        hc->launch = ls.gen;
        hc->last_fence = NULL;
        if (hc->ec->oversubscribed)
            ls.spin = 0;
        if (hc->ec->cpus_per_rank < ls.cpus)
            ls.cpus = hc->ec->cpus_per_rank;
        ls.caps |= hc->ec->link_caps != NULL;
    }
    return hc;
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
    bt_lane_push(ln, w);
    return BT_OK;
}

static struct bt_work *new_work(void)
{
    return bt_arena_take(&ls.arena, sizeof(struct bt_work));
}

/* A fence for the collective about to be placed: after the comm's previous one. */
static struct bt_fence *new_fence(struct host_comm *hc, struct bt_work *w, int remaining)
{
    struct bt_fence *f = bt_arena_take(&ls.arena, sizeof(*f));
    if (!f)
        return NULL;
    f->remaining = remaining;
    w->fence = f;
    w->after = hc->last_fence;
    hc->last_fence = f;
    return f;
}

/* The FIFO each kind of host connector gets (the receiver's travels in its blob). */
static struct bt_fifo_sizes host_sizes(const struct bt_exec_comm *ec, enum bt_link_kind kind)
{
    struct bt_fifo_sizes z = {{0}};
    if (kind == BT_LINK_P2P) {
        z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)ec->p2p_slot;
    } else if (kind == BT_LINK_DIRECT) {
        z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)ec->direct_slot;
        z.slot_bytes[BT_PROTO_LL] = (uint32_t)ec->ll_slot;
    } else {
        z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)ec->simple_slot;
        z.slot_bytes[BT_PROTO_LL] = (uint32_t)ec->ll_slot;
    }
    return z; /* no LL128: the CUDA executor's own FIFOs only */
}

/* A connector the launch's works use: queued for connection unless it is (or will be). */
static bt_status_t need_conn(const struct bt_exec_comm *ec, struct bt_conn *conn, int peer,
                             int is_send, enum bt_link_kind kind, int channel)
{
    if (conn->connected || conn->pending)
        return BT_OK;
    struct bt_fifo_sizes z = host_sizes(ec, kind);
    bt_connect_prepare(conn, peer, is_send, kind, channel, &z);
    if (is_send && ec->link_caps && ec->link_caps[peer].bytes_per_ns > 0)
        conn->cap = &ec->link_caps[peer];
    if (bt_array_grow((void **)&ls.reqs, &ls.reqs_cap, ls.nreqs + 1, sizeof(*ls.reqs)) != 0)
        return BT_ERR_SYSTEM;
    conn->pending = 1;
    struct bt_conn_req *r = &ls.reqs[ls.nreqs++];
    r->ctx = ec->tctx;
    r->conn = conn;
    r->key = bt_link_key(kind, channel);
    return BT_OK;
}

/* The connectors of channel c's work for algorithm `algo`. */
static bt_status_t coll_conns(struct host_comm *hc, int algo, int c)
{
    const struct bt_exec_comm *ec = hc->ec;
    struct bt_channel *ch = &ec->channels[c];
    if (algo == BT_ALGO_RING) {
        BT_CHECK(need_conn(ec, &ch->ring_send, ch->ring.next, 1, BT_LINK_RING, c));
        return need_conn(ec, &ch->ring_recv, ch->ring.prev, 0, BT_LINK_RING, c);
    }
    if (algo == BT_ALGO_PAT) { /* the peers at distance 2^k both ways */
        for (int d = 1; d < ec->nranks; d *= 2) {
            int up = (ec->rank + d) % ec->nranks, down = (ec->rank - d + ec->nranks) % ec->nranks;
            for (int k = 0; k < 2; k++) {
                int r = k ? down : up;
                BT_CHECK(need_conn(ec, hc->direct_send[r], r, 1, BT_LINK_DIRECT, 0));
                BT_CHECK(need_conn(ec, hc->direct_recv[r], r, 0, BT_LINK_DIRECT, 0));
            }
        }
        return BT_OK;
    }
    if (bt_algo_all_peers(algo)) {
        for (int r = 0; r < ec->nranks; r++) {
            if (r == ec->rank)
                continue;
            BT_CHECK(need_conn(ec, hc->direct_send[r], r, 1, BT_LINK_DIRECT, 0));
            BT_CHECK(need_conn(ec, hc->direct_recv[r], r, 0, BT_LINK_DIRECT, 0));
        }
        return BT_OK;
    }
    const struct bt_tree *tr = &ch->tree; /* links to the parent and children */
    for (int k = 0; k < tr->ndown; k++) {
        BT_CHECK(need_conn(ec, &ch->tree_down_recv[k], tr->down[k], 0, BT_LINK_TREE_UP, c));
        BT_CHECK(need_conn(ec, &ch->tree_down_send[k], tr->down[k], 1, BT_LINK_TREE_DOWN, c));
    }
    if (tr->up >= 0) {
        BT_CHECK(need_conn(ec, &ch->tree_up_send, tr->up, 1, BT_LINK_TREE_UP, c));
        BT_CHECK(need_conn(ec, &ch->tree_up_recv, tr->up, 0, BT_LINK_TREE_DOWN, c));
    }
    return BT_OK;
}

/* A send or receive to another rank: one work on the (peer, direction) lane. */
static bt_status_t host_p2p(void *state, const struct bt_op *op)
{
    struct host_comm *hc = touch(state);
    struct bt_work *w = new_work();
    if (!w)
        return BT_ERR_SYSTEM;
    if (bt_plan_p2p(&hc->tg, op, w) != 1)
        return BT_ERR_INTERNAL;
    struct host_peer *pp = &hc->peers[op->peer];
    int is_send = op->coll == BT_COLL_SEND;
    ls.bytes += op->count * bt_dtype_size(op->dtype);
    w->p2p_conn = is_send ? &pp->send : &pp->recv;
    BT_CHECK(need_conn(hc->ec, w->p2p_conn, op->peer, is_send, BT_LINK_P2P, 0));
    return push(is_send ? &pp->send_lane : &pp->recv_lane, w);
}

/* The one-shot's scratch of one slot, the larger of its protocols'. */
static size_t direct_scratch(const struct bt_exec_comm *ec)
{
    return ec->direct_slot > ec->ll_slot ? ec->direct_slot : ec->ll_slot;
}

/* A collective: the planned work made channel c's for each channel, on the channel's lane;
 * a tree's non-roots get a down half on a second lane. The works wait for the comm's previous
 * collective of the launch (a fence) and count down their own. */
static bt_status_t host_coll(void *state, const struct bt_op *op, struct bt_exec_placed *placed)
{
    struct host_comm *hc = touch(state);
    struct bt_plan_target *tg = &hc->tg;
    tg->scratch = NULL;
    if (op->coll == BT_COLL_ALLREDUCE &&
        !(tg->scratch = bt_arena_take(&ls.arena, direct_scratch(hc->ec))))
        return BT_ERR_SYSTEM;
    ls.bytes +=
        op->count * bt_dtype_size(op->dtype) *
        (op->coll == BT_COLL_ALLGATHER || op->coll == BT_COLL_REDUCESCATTER ? (size_t)hc->ec->nranks
                                                                            : 1);
    struct bt_tune_out t;
    struct bt_work *w0 = new_work(); /* the planned work, then channel 0's */
    if (!w0)
        return BT_ERR_SYSTEM;
    bt_plan_coll(tg, op, &t, w0);
    if (t.algo == BT_ALGO_PAT && op->coll == BT_COLL_REDUCESCATTER &&
        !(w0->scratch = bt_arena_take(&ls.arena, (size_t)bt_pat_scratch_blocks(hc->ec->nranks) *
                                                     w0->chunk * w0->esize)))
        return BT_ERR_SYSTEM;
    struct bt_fence *fence = new_fence(hc, w0, 0);
    if (!fence)
        return BT_ERR_SYSTEM;
    uint32_t nchans = w0->nchans > 1 ? w0->nchans : 1;
    struct bt_work tw; /* the planned work, kept for the other channels */
    if (nchans > 1)
        tw = *w0;
    for (uint32_t c = 0; c < nchans; c++) {
        struct bt_work *w = c == 0 ? w0 : new_work(), down;
        if (!w)
            return BT_ERR_SYSTEM;
        if (c > 0)
            *w = tw;
        int has_down = bt_plan_channel(w, c, &down);
        if (c == 0) {
            placed->algo = t.algo;
            /* only the ring AllReduce cuts its loops by the shares (coll/ring.h) */
            placed->split =
                w->algo == BT_ALGO_RING && w->coll == BT_COLL_ALLREDUCE && w->split_max != 0;
        }
        fence->remaining += 1 + has_down;
        BT_CHECK(push(&hc->ec->channels[c].lane, w));
        BT_CHECK(coll_conns(hc, t.algo, (int)c));
        if (has_down) {
            struct bt_work *d = new_work();
            if (!d)
                return BT_ERR_SYSTEM;
            *d = down;
            BT_CHECK(push(&hc->tree_down_lanes[c], d));
        }
    }
    return BT_OK;
}

/* An AllReduce whose input and output lie in host-memory windows every rank mapped, where the
 * tuner says the window AllReduce wins: one window work on channel 0's lane, fenced like any
 * collective (win_allreduce.h). */
static int host_window(void *state, const struct bt_op *op, const struct bt_win_pair *wp,
                       bt_status_t *st)
{
    struct host_comm *hc = touch(state);
    const struct bt_exec_comm *ec = hc->ec;
    size_t es = bt_dtype_size(op->dtype), bytes = op->count * es;
    if (bt_tune_window(ec->tune, &bt_tune_host_defaults, ec->nranks, bytes, 1) == 0)
        return 0;
    ls.bytes += bytes;
    struct bt_host_win_args *a = bt_arena_take(&ls.arena, sizeof(*a));
    struct bt_work *w = new_work();
    *st = BT_ERR_SYSTEM;
    if (!a || !w)
        return 1;
    memset(w, 0, sizeof(*w));
    if (!new_fence(hc, w, 1))
        return 1;
    a->n = ec->nranks;
    a->rank = ec->rank;
    bt_win_pair_fill(wp, ec->nranks, a->src, a->dst, a->flags);
    w->coll = BT_COLL_ALLREDUCE;
    w->algo = BT_ALGO_WINDOW;
    w->redop = op->redop;
    w->sendbuf = op->sendbuf;
    w->recvbuf = op->recvbuf;
    w->esize = es;
    w->count = op->count;
    w->nranks = ec->nranks;
    w->rank = ec->rank;
    w->nsteps = BT_HOST_WIN_STEPS;
    w->seq = op->seq;
    w->abort_flag = ec->abort_flag;
    w->owner = (void *)ec;
    w->scratch = (char *)a;
    BT_TRACE(BT_LOG_COLL, "rank %d: AllReduce #%llu of %zu bytes through host windows", ec->rank,
             (unsigned long long)op->seq, bytes);
    *st = push(&ec->channels[0].lane, w);
    return 1;
}

/* A send/recv to oneself, a one-rank collective's output: host memory, now. */
static bt_status_t host_copy(void *state, void *dst, const void *src, size_t bytes, void *stream)
{
    (void)state;
    (void)stream;
    const char *d = dst, *s = src;
    if (d + bytes <= s || s + bytes <= d)
        bt_host_copy(dst, src, bytes);
    else if (d != s)
        memmove(dst, src, bytes);
    return BT_OK;
}

/* A one-rank collective that scales: a reduction of one source. */
static bt_status_t host_scale(void *state, const struct bt_op *op)
{
    (void)state;
    const void *src = op->sendbuf;
    bt_host_reduce(&op->redop, op->recvbuf, &src, 1, 1u, 1, op->count);
    return BT_OK;
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
    const struct bt_exec_comm *ec = w->owner;
    ec->hooks->hang(ec, w->seq); /* without a board the answers come in via stalled() */
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
    const struct bt_exec_comm *ec = w->owner;
    ec->hooks->stalled(ec);
}

/* A proxied op of the launch failed: name the peer. */
static void report_proxied(const struct bt_proxied_op *po)
{
    const struct bt_exec_comm *ec = po->owner;
    ec->hooks->net_failed(ec, po->peer);
}

/* The liveness check of a stalled work: a peer is down, one of the comm's network ops has
 * failed (another host: its sockets closed when it died), a peer on another host said it
 * failed, or, after a second of stall, no longer listens (a network that reports nothing when its
 * peer dies: OFI, plugins), so the launch fails now instead of at TIMEOUT. */
static int peer_gone(const struct bt_work *w, int peer, uint64_t stalled_ns)
{
    const struct bt_exec_comm *ec = w->owner;
    const char *what = bt_coll_is_p2p(w->coll) ? "send/recv" : "collective";
    if (ec->hooks->peer_down(ec, peer, what, w->seq))
        return 1;
    const struct bt_proxied_op *po = bt_host_proxied_failed(&ls.px, w->owner);
    if (po) {
        report_proxied(po);
        return 1;
    }
    return ec->hooks->peer_lost(ec, peer, what, w->seq, stalled_ns);
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

/* ---- the run ------------------------------------------------------------------------- */

/* Each work's steps that its communicator's proxy moves (none when every peer of the
 * communicator is in shared memory). */
static bt_status_t post_proxied(void)
{
    int drive = bt_param_proxy_drive() != 0;
    for (int i = 0; i < ls.nlanes; i++)
        for (struct bt_work *w = ls.lanes[i]->head; w; w = w->next) {
            const struct bt_exec_comm *ec = w->owner;
            if (w->algo == BT_ALGO_WINDOW)
                continue; /* no connectors */
            BT_CHECK(bt_host_proxied_post(&ls.px, w, ec->shm_all ? NULL : ec->tctx, drive));
        }
    return BT_OK;
}

/* Threads for the launch's lanes, once it moves HOST_THREADS_MIN_BYTES over two lanes or more
 * that share nothing but fences (no proxy steps: poll; no link caps): HOST_THREADS as set, or
 * by default one per CPU each rank here has to itself, at most 4 and at most the CPUs this
 * thread may run on (its helpers run there), none where ranks outnumber CPUs. */
static int launch_threads(void)
{
    if (ls.px.nops > 0 || ls.caps || ls.nlanes < 2 ||
        ls.bytes < (size_t)bt_param_host_threads_min_bytes())
        return 1;
    int64_t t = bt_param_host_threads();
    if (t == 1 || (t <= 0 && (!ls.spin || ls.cpus < 2)))
        return 1;
    int cpus = bt_host_helpers_cpus(); /* this thread's: where its helpers will run */
    if (t <= 0) {                      /* the default */
        t = ls.cpus < 4 ? ls.cpus : 4;
        t = t < cpus ? t : cpus;
    }
    return t > BT_HOST_MAX_HELPERS + 1 ? BT_HOST_MAX_HELPERS + 1 : (int)t;
}

static bt_status_t host_run(void)
{
    if (ls.nreqs > 0) {
        bt_status_t st = bt_connect_all(ls.reqs, ls.nreqs);
        for (int i = 0; i < ls.nreqs; i++)
            ls.reqs[i].conn->pending = 0;
        ls.nreqs = 0;
        BT_CHECK(st);
    }
    BT_CHECK(post_proxied());
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
        if (!ls.spin || ls.px.nops > 0)
            wait.spin = 0; /* the ranks we wait for, or the proxy, need the core we would spin on */
        wait.threads = launch_threads();
        BT_CHECK(bt_host_exec(ls.lanes, ls.nlanes, &wait, NULL));
    }
    /* The executor is done when the last data is in the FIFOs; the proxy may still be
     * sending it. */
    return bt_host_proxied_finish(&ls.px, BT_OK, report_proxied);
}

/* A failed launch: its proxied steps given up and waited for, its lanes emptied, its
 * connectors no longer pending. */
static void host_discard(void)
{
    bt_host_proxied_finish(&ls.px, BT_ERR_REMOTE, NULL);
    for (int i = 0; i < ls.nlanes; i++)
        ls.lanes[i]->head = ls.lanes[i]->tail = NULL;
    for (int i = 0; i < ls.nreqs; i++)
        ls.reqs[i].conn->pending = 0;
    ls.nlanes = ls.nreqs = 0;
}

const struct bt_exec_ops bt_exec_host = {
    .name = "host",
    .create = host_create,
    .destroy = host_destroy,
    .ops_complete = 1,
    .begin = host_begin,
    .copy = host_copy,
    .scale = host_scale,
    .window = host_window,
    .coll = host_coll,
    .p2p = host_p2p,
    .run = host_run,
    .discard = host_discard,
    .win_export = bt_host_win_export,
    .win_open = bt_host_win_open,
    .win_close = bt_host_win_close,
    .win_unexport = bt_host_win_unexport,
    .target = host_target_of,
    .held = host_held,
};
