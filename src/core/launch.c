/*
 * The launch: turn a group's ops into works on lanes, connect what they need, run them.
 *
 *   for each op:  checks -> tuner (algorithm, protocol, channels, chunk) -> one work per
 *                 channel (tree: two, the up and down halves) appended to lanes
 *   connect:      every connector the works use that is not connected yet (all comms)
 *   run:          the host executor drives every lane to completion
 * Ops of one communicator on one lane run in the order they were issued, which is what
 * NCCL guarantees for a stream.
 */
#define _GNU_SOURCE /* ppoll */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algo.h"
#include "coll/dtype.h"
#include "core/arrival.h"
#include "core/connect.h"
#include "core/group.h"
#include "exec/cuda/cuda.h"
#include "exec/host/executor.h"
#include "exec/host/reduce.h"
#include "proxy/proxy.h"
#include "transport/transport.h"
#include "tune/tuner.h"
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
    struct net_posted *netops; /* proxy ops of NET connectors, waited for after the run */
    int nnetops, netops_cap;
    struct bt_proxy **drive; /* proxies this thread drives while it waits (distinct) */
    int ndrive, drive_cap;
    int all_net; /* every connector of the launch is NET: only sockets can wake it */
};

struct net_posted {
    void *op;
    struct bt_comm *comm;
    int peer;
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
    free(ls.netops);
    free(ls.drive);
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

/* The value of a scalar stored as `dtype`, into the op's pre-multiplier. */
void bt_redop_scalar_from_bytes(struct bt_redop *op, const void *v)
{
    switch (op->dtype) {
    case BT_INT8:
        op->scalar_i = *(const int8_t *)v;
        break;
    case BT_UINT8:
        op->scalar_i = *(const uint8_t *)v;
        break;
    case BT_INT32:
        op->scalar_i = *(const int32_t *)v;
        break;
    case BT_UINT32:
        op->scalar_i = *(const uint32_t *)v;
        break;
    case BT_INT64:
    case BT_UINT64:
        memcpy(&op->scalar_i, v, 8);
        break;
    case BT_FLOAT16:
        op->scalar_f = bt_half_to_float(*(const uint16_t *)v);
        break;
    case BT_BFLOAT16:
        op->scalar_f = bt_bf16_to_float(*(const uint16_t *)v);
        break;
    case BT_FP8E4M3:
        op->scalar_f = bt_e4m3_to_float(*(const uint8_t *)v);
        break;
    case BT_FP8E5M2:
        op->scalar_f = bt_e5m2_to_float(*(const uint8_t *)v);
        break;
    case BT_FLOAT32:
        op->scalar_f = *(const float *)v;
        break;
    case BT_FLOAT64:
        op->scalar_f = *(const double *)v;
        break;
    }
}

static void lane_push(struct bt_lane *ln, struct bt_work *w)
{
    w->next = NULL;
    if (ln->tail)
        ln->tail->next = w;
    else
        ln->head = w;
    ln->tail = w;
}

static bt_status_t need_lane(struct bt_lane *ln)
{
    for (int i = 0; i < ls.nlanes; i++)
        if (ls.lanes[i] == ln)
            return BT_OK;
    if (bt_array_grow((void **)&ls.lanes, &ls.lanes_cap, ls.nlanes + 1, sizeof(*ls.lanes)) != 0)
        return BT_ERR_SYSTEM;
    ls.lanes[ls.nlanes++] = ln;
    return BT_OK;
}

static bt_status_t need_conn(struct bt_comm *comm, struct bt_conn *conn, int peer, int is_send,
                             enum bt_link_kind kind, int channel)
{
    if (conn->connected || conn->pending)
        return BT_OK;
    bt_conn_prepare(comm, conn, peer, is_send, kind, channel);
    if (bt_array_grow((void **)&ls.reqs, &ls.reqs_cap, ls.nreqs + 1, sizeof(*ls.reqs)) != 0)
        return BT_ERR_SYSTEM;
    conn->pending = 1;
    struct bt_conn_req *r = &ls.reqs[ls.nreqs++];
    r->comm = comm;
    r->conn = conn;
    r->key = (int)kind * BT_MAX_CHANNELS + channel;
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

/* Scratch for every possible one-shot work of the launch: at most one per op, of at most one
 * slot. Reserved before planning because works keep pointers into it. */
static int arena_reserve(const struct bt_op *ops, int nops)
{
    size_t need = 0;
    for (int i = 0; i < nops; i++)
        if (ops[i].coll == BT_COLL_ALLREDUCE)
            need += ((ops[i].comm->direct_slot > ops[i].comm->ll_slot ? ops[i].comm->direct_slot
                                                                      : ops[i].comm->ll_slot) +
                     63) &
                    ~(size_t)63;
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
 * for the whole launch before any pointer is taken (see count_works). */
static struct bt_work *new_work(void)
{
    struct bt_work *w = &ls.works[ls.nworks++];
    memset(w, 0, sizeof(*w));
    return w;
}

static bt_status_t plan_p2p(struct bt_op *op)
{
    struct bt_comm *comm = op->comm;
    struct bt_p2p_peer *pp = &comm->p2p[op->peer];
    int is_send = op->coll == BT_COLL_SEND;
    struct bt_conn *conn = is_send ? &pp->send : &pp->recv;
    BT_CHECK(need_conn(comm, conn, op->peer, is_send, BT_LINK_P2P, 0));

    struct bt_work *w = new_work();
    w->coll = (uint8_t)op->coll;
    w->proto = BT_PROTO_SIMPLE;
    w->redop.dtype = (uint8_t)op->dtype;
    w->sendbuf = op->sendbuf;
    w->recvbuf = op->recvbuf;
    w->esize = bt_dtype_size(op->dtype);
    w->count = op->count;
    w->root = op->peer;
    w->nranks = comm->nranks;
    w->chan_off = 0;
    w->chan_count = op->count;
    w->chunk = comm->p2p_slot / w->esize;
    w->p2p_conn = conn;
    w->zero_copy = (uint8_t)(bt_param_net_zero_copy() != 0); /* one buffer: in or out */
    w->abort_flag = &comm->abort_flag;
    w->owner = comm;
    w->seq = 0; /* send/recv sequences differ between ranks: no number */
    w->nsteps = bt_algo_nsteps(w);
    struct bt_lane *ln = is_send ? &pp->send_lane : &pp->recv_lane;
    BT_CHECK(need_lane(ln)); /* first: a failed launch must clear every lane it touched */
    lane_push(ln, w);
    return BT_OK;
}

/* The size nccl-tests reports for a collective: the per-rank buffer it moves. */
static size_t coll_bytes(const struct bt_op *op, int nranks)
{
    size_t b = op->count * bt_dtype_size(op->dtype);
    if (op->coll == BT_COLL_ALLGATHER || op->coll == BT_COLL_REDUCESCATTER)
        b *= (size_t)nranks;
    return b;
}

/* Whether the op's input and output do not overlap: then a NET connector may send from
 * the one and land data in the other directly (bt_work.zero_copy). */
static int bufs_disjoint(const struct bt_op *op, int nranks)
{
    size_t es = bt_dtype_size(op->dtype), in = op->count * es, out = in;
    if (op->coll == BT_COLL_ALLGATHER)
        out *= (size_t)nranks;
    else if (op->coll == BT_COLL_REDUCESCATTER)
        in *= (size_t)nranks;
    uintptr_t s = (uintptr_t)op->sendbuf, r = (uintptr_t)op->recvbuf;
    if (!bt_param_net_zero_copy())
        return 0;
    return !op->sendbuf || !op->recvbuf || s + in <= r || r + out <= s;
}

static bt_status_t plan_coll(struct bt_op *op)
{
    struct bt_comm *comm = op->comm;
    struct bt_tune_in in = {
        .set = &comm->tune,
        .def = &bt_tune_host_defaults,
        .coll = op->coll,
        .nranks = comm->nranks,
        .bytes = coll_bytes(op, comm->nranks),
        .esize = bt_dtype_size(op->dtype),
        .max_channels = comm->nchannels,
        .simple_slot = comm->simple_slot,
        .ll_payload = comm->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD,
        .direct_slot = comm->direct_slot,
        .direct_ok = (comm->local_ranks == comm->nranks && comm->shm_all) || comm->nranks == 2,
        .direct_max_channels = 1, /* one connector pair per peer */
        .tree_ok = 1,
        .shm_all = comm->shm_all,
    };
    struct bt_tune_out t;
    bt_tune_coll(&in, &t);
    BT_TRACE(BT_LOG_TUNING, "coll %d count %zu bytes %zu: algo %d proto %d nch %d chunk %zu",
             op->coll, op->count, in.bytes, t.algo, t.proto, t.nchannels, t.chunk);

    struct bt_fence *fence = &ls.fences[ls.nfences++];
    fence->remaining = 0;
    const struct bt_fence *after = comm->last_fence;
    comm->last_fence = fence;

    size_t share = bt_div_up(op->count, (size_t)t.nchannels);
    for (int c = 0; c < t.nchannels; c++) {
        size_t off = (size_t)c * share;
        if (off >= op->count)
            break; /* every rank stops at the same channel */
        struct bt_channel *ch = &comm->channels[c];
        struct bt_work *w = new_work();
        w->coll = (uint8_t)op->coll;
        w->algo = (uint8_t)t.algo;
        w->proto = (uint8_t)t.proto;
        w->redop = op->redop;
        w->sendbuf = op->sendbuf;
        w->recvbuf = op->recvbuf;
        w->esize = in.esize;
        w->count = op->count;
        w->root = op->peer;
        w->nranks = comm->nranks;
        w->chan_off = off;
        w->chan_count = bt_min_sz(share, op->count - off);
        w->chunk = t.chunk;
        w->chan = ch;
        w->split_max = ch->ring.split ? ch->ring.split_max : 0;
        /* Not for trees: their halves share the output between two lanes. */
        w->zero_copy = t.algo != BT_ALGO_TREE && bufs_disjoint(op, comm->nranks);
        w->abort_flag = &comm->abort_flag;
        w->owner = comm;
        w->seq = comm->ncolls;
        w->nsteps = bt_algo_nsteps(w);
        w->fence = fence;
        w->after = after;
        fence->remaining++;
        BT_CHECK(need_lane(&ch->lane));
        lane_push(&ch->lane, w);

        if (t.algo == BT_ALGO_RING) {
            BT_CHECK(need_conn(comm, &ch->ring_send, ch->ring.next, 1, BT_LINK_RING, c));
            BT_CHECK(need_conn(comm, &ch->ring_recv, ch->ring.prev, 0, BT_LINK_RING, c));
            continue;
        }
        if (t.algo == BT_ALGO_DIRECT) {
            w->rank = comm->rank;
            w->peer_send = comm->direct_send;
            w->peer_recv = comm->direct_recv;
            w->scratch = arena_take(t.chunk * in.esize);
            if (!w->scratch)
                return BT_ERR_SYSTEM;
            for (int r = 0; r < comm->nranks; r++) {
                if (r == comm->rank)
                    continue;
                BT_CHECK(need_conn(comm, comm->direct_send[r], r, 1, BT_LINK_DIRECT, 0));
                BT_CHECK(need_conn(comm, comm->direct_recv[r], r, 0, BT_LINK_DIRECT, 0));
            }
            continue;
        }
        /* Tree: links to the parent and children; non-roots get a down-half work. */
        const struct bt_tree *tr = &ch->tree;
        for (int k = 0; k < tr->ndown; k++) {
            BT_CHECK(need_conn(comm, &ch->tree_down_recv[k], tr->down[k], 0, BT_LINK_TREE_UP, c));
            BT_CHECK(need_conn(comm, &ch->tree_down_send[k], tr->down[k], 1, BT_LINK_TREE_DOWN, c));
        }
        if (tr->up >= 0) {
            BT_CHECK(need_conn(comm, &ch->tree_up_send, tr->up, 1, BT_LINK_TREE_UP, c));
            BT_CHECK(need_conn(comm, &ch->tree_up_recv, tr->up, 0, BT_LINK_TREE_DOWN, c));
            struct bt_work *d = new_work();
            *d = *w;
            d->next = NULL;
            d->algo = BT_ALGO_TREE_DOWN;
            fence->remaining++;
            BT_CHECK(need_lane(&comm->tree_down_lanes[c]));
            lane_push(&comm->tree_down_lanes[c], d);
        }
    }
    return BT_OK;
}

/* One rank: the collective is a local copy (with the op's pre/post for reductions). */
static void run_single_rank(const struct bt_op *op)
{
    size_t es = bt_dtype_size(op->dtype);
    const void *src = op->sendbuf;
    int reduces = op->coll == BT_COLL_ALLREDUCE || op->coll == BT_COLL_REDUCE ||
                  op->coll == BT_COLL_REDUCESCATTER;
    if (reduces && (op->redop.pre_mul || op->redop.post_div))
        bt_host_reduce(&op->redop, op->recvbuf, &src, 1, 1u, 1, op->count);
    else if (op->recvbuf != op->sendbuf)
        bt_host_copy(op->recvbuf, op->sendbuf, op->count * es);
}

/* Send/Recv to oneself: the k-th send pairs with the k-th recv of the same launch. */
static bt_status_t run_self_p2p(struct bt_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        struct bt_op *s = &ops[i];
        if (s->coll != BT_COLL_SEND || s->peer != s->comm->rank || s->count == 0)
            continue;
        int matched = 0;
        for (int j = 0; j < nops && !matched; j++) {
            struct bt_op *r = &ops[j];
            if (r->coll == BT_COLL_RECV && r->comm == s->comm && r->peer == r->comm->rank &&
                r->count != 0 && r->count != (size_t)-1) {
                size_t n = bt_min_sz(s->count, r->count) * bt_dtype_size(s->dtype);
                if (r->recvbuf != s->sendbuf)
                    memmove(r->recvbuf, s->sendbuf, n);
                r->count = (size_t)-1; /* consumed */
                matched = 1;
            }
        }
        if (!matched) {
            BT_WARN("rank %d: ncclSend to itself (%zu elements) has no matching ncclRecv from "
                    "itself in the same group",
                    s->comm->rank, s->count);
            return BT_ERR_INVALID_USAGE;
        }
    }
    for (int j = 0; j < nops; j++) {
        struct bt_op *r = &ops[j];
        if (r->coll == BT_COLL_RECV && r->peer == r->comm->rank && r->count != 0 &&
            r->count != (size_t)-1) {
            BT_WARN("rank %d: ncclRecv from itself (%zu elements) has no matching ncclSend to "
                    "itself in the same group",
                    r->comm->rank, r->count);
            return BT_ERR_INVALID_USAGE;
        }
    }
    return BT_OK;
}

static int works_needed(const struct bt_op *ops, int nops)
{
    int n = 0;
    for (int i = 0; i < nops; i++)
        n += ops[i].coll == BT_COLL_SEND || ops[i].coll == BT_COLL_RECV
                 ? 1
                 : 2 * ops[i].comm->nchannels;
    return n;
}

static void discard_lanes(void)
{
    for (int i = 0; i < ls.nlanes; i++)
        ls.lanes[i]->head = ls.lanes[i]->tail = NULL;
    for (int i = 0; i < ls.nreqs; i++)
        ls.reqs[i].conn->pending = 0;
}

/* A peer that failed or a resource that broke poisons the communicators involved; a usage
 * error of this call does not. */
static void fail_comms(struct bt_op *ops, int nops, bt_status_t st)
{
    if (st != BT_ERR_REMOTE && st != BT_ERR_SYSTEM && st != BT_ERR_INTERNAL)
        return;
    for (int i = 0; i < nops; i++)
        bt_comm_set_async_error(ops[i].comm, st);
}

static bt_status_t launch(struct bt_op *ops, int nops);

/*
 * Hand the proxy, per work and NET connector, the number of steps the work moves through
 * it: the schedule is walked once, as the executor will. Works of shared-memory-only
 * communicators have nothing to post.
 */
/* The launching thread runs its communicators' proxy rounds itself while it waits: the
 * executor and the sockets then share one thread, with no hand-off per step. */
static bt_status_t drive_proxy(struct bt_proxy *p)
{
    for (int i = 0; i < ls.ndrive; i++)
        if (ls.drive[i] == p)
            return BT_OK;
    if (bt_array_grow((void **)&ls.drive, &ls.drive_cap, ls.ndrive + 1, sizeof(*ls.drive)) != 0)
        return BT_ERR_SYSTEM;
    bt_proxy_drive_begin(p);
    ls.drive[ls.ndrive++] = p;
    return BT_OK;
}

static int drive_proxies(void)
{
    int moved = 0;
    for (int i = 0; i < ls.ndrive; i++)
        moved |= bt_proxy_drive(ls.drive[i]);
    return moved;
}

/* Nothing moved: when only the network can move the launch, wait in poll() for its sockets
 * instead of asking each one with a failing recv()/send() (each a system call that also
 * contends with the peer for the socket). Bounded, so abort and deadlines are still seen. */
#define BT_DRIVE_BLOCK_NS 200000
static int drive_block(void)
{
    struct pollfd fds[64];
    int n = 0;
    if (!ls.all_net)
        return 0;
    for (int i = 0; i < ls.ndrive; i++) {
        int k =
            bt_proxy_drive_pollfds(ls.drive[i], fds + n, (int)(sizeof(fds) / sizeof(fds[0])) - n);
        if (k < 0)
            return 0;
        n += k;
    }
    if (n == 0)
        return 0;
    struct timespec ts = {0, BT_DRIVE_BLOCK_NS};
    ppoll(fds, (nfds_t)n, &ts, NULL);
    return 1;
}

static void drive_proxies_end(void)
{
    for (int i = 0; i < ls.ndrive; i++)
        bt_proxy_drive_end(ls.drive[i]);
    ls.ndrive = 0;
}

static bt_status_t post_net_ops(void)
{
    ls.nnetops = 0;
    ls.all_net = 1;
    for (int i = 0; i < ls.nworks; i++) {
        struct bt_work *w = &ls.works[i];
        struct bt_comm *comm = w->owner;
        if (w->nsteps == 0)
            continue;
        if (comm->shm_all) {
            ls.all_net = 0;
            continue;
        }
        struct {
            struct bt_conn *c;
            uint64_t n;
            struct bt_net_zc *zc; /* pure receives into the user's output, or NULL */
        } t[2 * BT_PRIM_MAX_PEERS + 8];
        int nt = 0, posted = 0;
        bt_status_t st = BT_OK;
        for (uint64_t k = 0; k < w->nsteps && st == BT_OK; k++) {
            struct bt_prim p;
            bt_algo_prim(w, k, &p);
            struct bt_conn *cs[2 * BT_PRIM_MAX_PEERS];
            int nc = 0;
            for (int j = 0; j < p.nrecv; j++)
                cs[nc++] = p.recv[j];
            for (int j = 0; j < p.nsend; j++)
                cs[nc++] = p.send[j];
            for (int j = 0; j < nc; j++) {
                if (cs[j]->tp != &bt_transport_net) {
                    ls.all_net = 0;
                    continue;
                }
                int e = 0;
                while (e < nt && t[e].c != cs[j])
                    e++;
                if (e == nt) {
                    if (nt == (int)(sizeof(t) / sizeof(t[0]))) {
                        st = BT_ERR_INTERNAL;
                        break;
                    }
                    t[nt].c = cs[j];
                    t[nt].n = 0;
                    t[nt++].zc = NULL;
                }
                if (w->zero_copy && !cs[j]->is_send && cs[j]->zero_copy &&
                    bt_prim_pure_recv(w, &p)) {
                    if (!t[e].zc && !(t[e].zc = calloc(w->nsteps, sizeof(*t[e].zc)))) {
                        st = BT_ERR_SYSTEM;
                        break;
                    }
                    t[e].zc[t[e].n] = (struct bt_net_zc){p.dst, p.nelem * w->esize};
                }
                t[e].n++;
            }
        }
        if (st == BT_OK && nt > 0 && bt_param_proxy_drive())
            st = drive_proxy(comm->proxy);
        for (; st == BT_OK && posted < nt; posted++) {
            if (bt_array_grow((void **)&ls.netops, &ls.netops_cap, ls.nnetops + 1,
                              sizeof(*ls.netops)) != 0) {
                st = BT_ERR_SYSTEM;
                break;
            }
            struct net_posted *np = &ls.netops[ls.nnetops];
            st = bt_net_post(comm, t[posted].c, t[posted].n, t[posted].zc, &np->op);
            if (st != BT_OK) {
                posted++; /* its zc belongs to the op now */
                break;
            }
            np->peer = t[posted].c->peer;
            np->comm = comm;
            ls.nnetops++;
        }
        for (int f = posted; f < nt; f++)
            free(t[f].zc);
        if (st != BT_OK)
            return st;
    }
    return BT_OK;
}

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

/* A network op of the launch failed: name the peer, and the rank whose death started it when
 * the peer said so before it left (the board on one host; across hosts a bootstrap message,
 * waited for a moment: a rank that died sends none). Then pass the cause on. */
static void report_net_failure(const struct net_posted *np)
{
    /* aborted here (ncclCommAbort: the launch reports it), or the peer is gone (named now;
     * it may still be dying: its sockets close before its process is gone) */
    if (np->comm->abort_flag || bt_arrival_report_down(np->comm, np->peer, "network transfer",
                                                       np->comm->ncolls, BT_ARRIVAL_DYING_MS))
        return;
    int cause = bt_arrival_cause(np->comm, np->peer, 300);
    if (cause >= 0 && cause != np->peer) {
        BT_WARN("rank %d: the network connection with rank %d failed: rank %d failed first, "
                "because rank %d is gone (exited or killed)",
                np->comm->rank, np->peer, np->peer, cause);
    } else {
        cause = np->peer;
        BT_WARN("rank %d: the network connection with rank %d failed (closed or reset by the "
                "peer, or timed out: is rank %d still running?)",
                np->comm->rank, np->peer, np->peer);
    }
    bt_arrival_failed(np->comm, cause);
}

/* The executor's liveness check of a stalled work: a local peer's process is gone, or one of
 * the comm's network ops has failed (another host: its sockets closed when it died), so the
 * launch fails now instead of at TIMEOUT. */
static int peer_gone(const struct bt_work *w, int peer)
{
    if (bt_arrival_report_down(w->owner, peer,
                               w->coll == BT_COLL_SEND || w->coll == BT_COLL_RECV ? "send/recv"
                                                                                  : "collective",
                               w->seq, 0))
        return 1;
    for (int i = 0; i < ls.nnetops; i++) {
        const struct net_posted *np = &ls.netops[i];
        if (np->comm == w->owner && bt_net_failed(np->op)) {
            report_net_failure(np);
            return 1;
        }
    }
    return 0;
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

/* Wait for every posted proxy op, which frees it; the first failure is the result, and the
 * ops after it are given up (the launch fails: they would only wait on the same fault). With
 * `st` an error already (a launch that failed before its network ops were done), every op is
 * given up and waited for: the connectors are the failed communicator's, never used again. */
static bt_status_t finish_net_ops(bt_status_t st)
{
    for (int i = 0; i < ls.nnetops && st != BT_OK; i++)
        bt_net_cancel(ls.netops[i].op);
    for (int i = 0; i < ls.nnetops; i++) {
        const struct net_posted *np = &ls.netops[i];
        bt_status_t s = bt_net_wait(np->op, np->peer, drive_proxies, drive_block);
        if (s != BT_OK && st == BT_OK) {
            report_net_failure(np);
            st = s;
            for (int j = i + 1; j < ls.nnetops; j++)
                bt_net_cancel(ls.netops[j].op);
        }
    }
    ls.nnetops = 0;
    return st;
}

/* GPU communicators' operations on device buffers run as kernels (exec/cuda); the rest on
 * the host. Reorder ops (stably) so the host ones come first, then the GPU ones grouped by
 * communicator, each keeping its order: a communicator's sends and receives of a group then
 * share one kernel. Returns how many are GPU ops. */
static int op_is_gpu(const struct bt_op *op)
{
    return op->comm->cuda_dev >= 0 &&
           (bt_cuda_is_device_ptr(op->sendbuf) || bt_cuda_is_device_ptr(op->recvbuf));
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
    bt_status_t st = bt_check_colls(ops, nops);
    int ngpu = st == BT_OK ? gpu_ops_last(ops, nops) : 0;
    if (ngpu < 0)
        st = BT_ERR_SYSTEM;
    if (st == BT_OK && nops > ngpu)
        st = launch(ops, nops - ngpu);
    if (st == BT_OK && ngpu > 0)
        st = bt_cuda_launch(ops + nops - ngpu, ngpu);
    for (int i = 0; i < nops; i++)
        bt_comm_release(ops[i].comm);
    return st;
}

static bt_status_t launch(struct bt_op *ops, int nops)
{
    bt_status_t st = BT_OK;
    if (!ls.works)
        ls_arm();
    ls.nworks = ls.nlanes = ls.nreqs = ls.nfences = 0;
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
        if (!comm->init_done) {
            BT_WARN("rank %d: communicator %p did not finish its initialization (error %d)",
                    comm->rank, (void *)comm, (int)comm->init_status);
            st = comm->init_status != BT_OK ? comm->init_status : BT_ERR_INVALID_USAGE;
            goto fail;
        }
        int async = atomic_load_explicit(&comm->async_error, memory_order_relaxed);
        if (async != BT_OK) {
            BT_WARN("rank %d: communicator %p has failed earlier (error %d); destroy or abort it",
                    comm->rank, (void *)comm, async);
            st = (bt_status_t)async;
            goto fail;
        }
        if (op->scalar_ptr)
            bt_redop_scalar_from_bytes(&op->redop, op->scalar_ptr);
        bt_log_set_rank(comm->rank);
        comm->coll_seq++;
        if (op->coll != BT_COLL_SEND && op->coll != BT_COLL_RECV)
            bt_arrival_start(comm, ++comm->ncolls);

        if (op->coll == BT_COLL_SEND || op->coll == BT_COLL_RECV) {
            if (op->count == 0 || op->peer == comm->rank)
                continue; /* empty, or handled by run_self_p2p */
            BT_CHECK_GOTO(plan_p2p(op), st, fail);
        } else if (op->count == 0) {
            continue;
        } else if (comm->nranks == 1) {
            run_single_rank(op);
        } else {
            BT_CHECK_GOTO(plan_coll(op), st, fail);
        }
    }
    BT_CHECK_GOTO(run_self_p2p(ops, nops), st, fail);

    if (ls.nreqs > 0) {
        st = bt_connect_all(ls.reqs, ls.nreqs);
        for (int i = 0; i < ls.nreqs; i++)
            ls.reqs[i].conn->pending = 0;
        if (st != BT_OK)
            goto fail;
    }
    BT_CHECK_GOTO(post_net_ops(), st, fail);
    if (ls.nlanes > 0) {
        struct bt_work *failed = NULL;
        struct bt_wait_policy wait = {.spin = (uint64_t)bt_param_spin_count(),
                                      .yields = (uint64_t)bt_param_yield_count(),
                                      .poll = ls.ndrive ? drive_proxies : NULL,
                                      .block = ls.ndrive ? drive_block : NULL,
                                      .hang_ns = (uint64_t)bt_param_hang_report() * 1000000000ull,
                                      .hang = hang_report,
                                      .report_now = dump_signalled,
                                      .peer_gone = peer_gone,
                                      .stalled = stalled};
        for (int i = 0; i < nops; i++)
            if (ops[i].comm->oversubscribed)
                wait.spin = 0;
        if (ls.nnetops > 0)
            wait.spin = 0; /* the proxy needs the core we would spin on */
        st = bt_host_exec(ls.lanes, ls.nlanes, &wait, &failed);
        if (st != BT_OK)
            goto fail;
    }
    /* The executor is done when the last data is in the FIFOs; the proxy may still be
     * sending it. */
    BT_CHECK_GOTO(finish_net_ops(BT_OK), st, fail);
    drive_proxies_end();
    for (int i = 0; i < nops; i++) /* each comm's last collective of the launch is done */
        bt_arrival_done(ops[i].comm, ops[i].comm->ncolls);
    return BT_OK;

fail:
    finish_net_ops(st);
    drive_proxies_end();
    discard_lanes();
    fail_comms(ops, nops, st);
    return st;
}
