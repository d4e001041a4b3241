/*
 * The schedule of every algorithm for n = 1..9 ranks, run for real in one process and one
 * thread: every rank's channels (bt_graph_channels_init), its connectors joined to its
 * peers' through FIFOs in ordinary memory (small slots, so that many steps and loops
 * happen), its works made by the planner itself (plan/plan.h: bt_plan_coll, bt_plan_channel,
 * bt_plan_p2p, as the host launch calls them, with settings that force the case's algorithm
 * and protocol), and one bt_host_exec over the lanes of all ranks together. A schedule whose two
 * ends disagree deadlocks (BATON_TIMEOUT is set to 5 s, so that fails in 5 s) or moves wrong data.
 *
 * Covered: ring AllReduce, tree AllReduce (up work + down work on two lanes per channel, the
 * root only the up work), ring AllGather, ReduceScatter, Broadcast and Reduce (roots 0, n/2,
 * n-1), Send/Recv between every pair (two messages per pair on one lane); both protocols
 * (Send/Recv too, as the GPU launch runs small ones: the host's use Simple only);
 * collective works as the planner makes them for both executors (one work standing for every
 * channel, each channel's own made from it by bt_work_channel, as the GPU kernel does; on host
 * channels split by link speed each channel gets its own blocks);
 * trees over hosts too (n >= 3: hosts of 2 ranks, and 2 hosts of alternate ranks);
 * 1..3 channels; counts 1, n-1, 7 and a few loops plus an odd remainder; a chunk of a whole
 * slot and of 3 elements; out of place and in place. The connectors of one (n, channels)
 * world live through all its cases, so steps run on across collectives and protocols as
 * they do in a communicator.
 *
 * Checked after each collective: bt_host_exec returns BT_OK and every work ran all its
 * steps; every connector's send step count equals its peer's recv step count (and head
 * equals the receiver's step); every output element equals a reference computed here
 * (integer and small-integer float inputs, so every result is exact); inputs of
 * out-of-place calls are unchanged, a Reduce's non-root outputs untouched, and guard bytes
 * after every buffer intact.
 *
 * n = 1 is included although the launches handle one rank outside the schedules: the
 * schedules then degenerate to local steps, which is checked too (the tuner runs rings there).
 *
 * Last, the executor's liveness probe's timing: a stall of 20 ms (a late rank) asks nothing
 * about the peers, one of 230 ms asks every 50 ms.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "coll/algo.h"
#include "coll/dtype.h"
#include "plan/plan.h"
#include "exec/host/lanes.h"
#include "graph/channel.h"
#include "graph/ring_plan.h"
#include "util/time.h"

#define MAXR 9
#define MAXCH 3
#define SIMPLE_SLOT 256 /* payload bytes per Simple step */
#define LL_SLOT 256     /* line bytes per LL step: 16 lines, 128 bytes of payload */
#define GUARD 64
#define NMSG 2 /* Send/Recv messages per ordered pair of ranks */
#define MAXLINKS (MAXR * MAXCH * 3 + MAXR * MAXR)
#define MAXWORKS (2 * MAXCH + 2 * NMSG * MAXR)
#define MAXLANES (MAXR * (2 * MAXCH + 2 * MAXR))
#define FILL_RECV 0xA5
#define FILL_GUARD 0x5A

/* ---------------------------------------------------------------- reductions */

struct flavor {
    const char *name;
    int dtype, op;
    int pre_mul;
    double scalar_f;
    int64_t scalar_i;
    int post_div;
};

static const struct flavor flavors[] = {
    {"int32 sum", BT_INT32, BT_OP_SUM, 0, 0, 0, 0},
    {"float32 max", BT_FLOAT32, BT_OP_MAX, 0, 0, 0, 0},
    {"uint8 min", BT_UINT8, BT_OP_MIN, 0, 0, 0, 0},
    {"int64 prod", BT_INT64, BT_OP_PROD, 0, 0, 0, 0},
    {"int32 avg (post-divide)", BT_INT32, BT_OP_SUM, 0, 0, 0, 1},
    {"float32 premulsum 0.5", BT_FLOAT32, BT_OP_SUM, 1, 0.5, 0, 0},
    {"int32 premulsum 3", BT_INT32, BT_OP_SUM, 1, 0, 3, 0},
    {"bfloat16 sum", BT_BFLOAT16, BT_OP_SUM, 0, 0, 0, 0},
};
#define NFLAVORS ((int)(sizeof(flavors) / sizeof(flavors[0])))
/* Flavors used for the collectives that only copy (AllGather, Broadcast, Send/Recv): one
 * per element size. */
static const int copy_flavors[] = {0, 2, 3, 7};
#define NCOPY ((int)(sizeof(copy_flavors) / sizeof(copy_flavors[0])))

/* Input element i of source `seed` (a rank, or a (sender, receiver, message) triple):
 * small integers, exact in every type and in every fold below. */
static double gen(int fl, int seed, size_t i)
{
    long long s = seed, x = (long long)(i % 100003);
    static const int prod_tab[5] = {1, 2, -1, 3, -2};
    switch (fl) {
    case 1:
        return (double)((s * 37 + x * 11) % 101 - 50);
    case 2:
        return (double)((s * 31 + x * 7 + 3) % 251);
    case 3:
        return (double)prod_tab[(s * 3 + x) % 5];
    case 5:
        return (double)((s * 13 + x * 5) % 41 - 20);
    case 7:
        return (double)((s * 3 + x) % 21 - 10);
    default:
        return (double)(((s + 1) * 7919 + x * 31) % 2001 - 1000);
    }
}

static void store(int dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case BT_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case BT_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case BT_INT64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case BT_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    case BT_BFLOAT16:
        ((uint16_t *)buf)[i] = bt_float_to_bf16((float)v);
        break;
    default:
        abort();
    }
}

static double load(int dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case BT_INT32:
        return ((const int32_t *)buf)[i];
    case BT_UINT8:
        return ((const uint8_t *)buf)[i];
    case BT_INT64:
        return (double)((const int64_t *)buf)[i];
    case BT_FLOAT32:
        return ((const float *)buf)[i];
    case BT_BFLOAT16:
        return bt_bf16_to_float(((const uint16_t *)buf)[i]);
    default:
        abort();
    }
}

/* The reduction over ranks 0..n-1 of element `idx` of their inputs, each pre-multiplied once,
 * the result post-divided once. Inputs are small integers: the fold is exact in double. */
static double reference(int fl, int n, size_t idx)
{
    const struct flavor *f = &flavors[fl];
    int is_float = bt_dtype_is_float(f->dtype);
    double acc = 0;
    for (int r = 0; r < n; r++) {
        double x = gen(fl, r, idx);
        if (f->pre_mul)
            x = is_float ? x * f->scalar_f : x * (double)f->scalar_i;
        if (r == 0)
            acc = x;
        else if (f->op == BT_OP_SUM)
            acc += x;
        else if (f->op == BT_OP_PROD)
            acc *= x;
        else if (f->op == BT_OP_MAX)
            acc = x > acc ? x : acc;
        else
            acc = x < acc ? x : acc;
    }
    if (f->post_div)
        acc = (double)((int64_t)acc / (int64_t)n); /* truncation toward zero */
    return acc;
}

/* ---------------------------------------------------------------- the simulated ranks */

struct link {
    struct bt_conn *s, *r;
    int from, to;
    void *mem;
};

struct world {
    int n, nch;
    int planned, nsplit; /* rings planned; channels with unequal blocks */
    const int *host;     /* ranks' hosts (trees over hosts, graph/channel.h) or NULL */
    struct bt_channel ch[MAXR][MAXCH];
    struct bt_lane down[MAXR][MAXCH]; /* tree down halves (comm->tree_down_lanes) */
    struct bt_conn p2p_send[MAXR][MAXR], p2p_recv[MAXR][MAXR];
    struct bt_lane p2p_send_lane[MAXR][MAXR], p2p_recv_lane[MAXR][MAXR];
    struct link links[MAXLINKS];
    int nlinks;
    struct bt_work works[MAXR][MAXWORKS];
    int nworks[MAXR];
};
static struct world W;

static void conn_init(struct bt_conn *c, int peer, int is_send, void *mem, const char *kind,
                      int chan)
{
    memset(c, 0, sizeof(*c));
    c->peer = peer;
    c->is_send = is_send;
    c->connected = 1;
    c->sizes.slot_bytes[BT_PROTO_SIMPLE] = SIMPLE_SLOT;
    c->sizes.slot_bytes[BT_PROTO_LL] = LL_SLOT;
    c->ctrl = (struct bt_fifo_ctrl *)mem;
    for (int p = 0; p < BT_NUM_PROTOS; p++)
        c->buf[p] = (char *)mem + bt_fifo_proto_offset(&c->sizes, p);
    c->kind = kind;
    c->channel = chan;
}

/* Join rank `from`'s send connector s to rank `to`'s recv connector r through one FIFO. */
static void link_conns(struct bt_conn *s, int from, struct bt_conn *r, int to, const char *kind,
                       int chan)
{
    struct bt_fifo_sizes sz;
    sz.slot_bytes[BT_PROTO_SIMPLE] = SIMPLE_SLOT;
    sz.slot_bytes[BT_PROTO_LL] = LL_SLOT;
    sz.slot_bytes[BT_PROTO_LL128] = 0;
    size_t bytes = (bt_fifo_bytes(&sz) + BT_CACHELINE - 1) & ~(size_t)(BT_CACHELINE - 1);
    void *mem = aligned_alloc(BT_CACHELINE, bytes);
    BT_TEST_CHECK(mem != NULL, "out of memory");
    memset(mem, 0, bytes);
    struct bt_fifo_ctrl *ctrl = mem;
    for (int i = 0; i < BT_NSTEPS; i++)
        atomic_store(&ctrl->sizes[i], -1);
    conn_init(s, to, 1, mem, kind, chan);
    conn_init(r, from, 0, mem, kind, chan);
    BT_TEST_CHECK(W.nlinks < MAXLINKS, "too many links");
    W.links[W.nlinks++] = (struct link){s, r, from, to, mem};
}

static uint64_t total_steps; /* connector steps moved, all worlds */

static void world_free(void)
{
    for (int i = 0; i < W.nlinks; i++) {
        total_steps += W.links[i].s->step;
        free(W.links[i].mem);
    }
    for (int r = 0; r < W.n; r++)
        bt_graph_channels_free(W.ch[r], W.nch);
    W.nlinks = 0;
}

/* Planned rings (graph/ring_plan.h) over links of unequal speed that no ring avoids: every
 * link of rank 0 at half speed, 2 -> 3 at 70%: the ring order is the search's, reversed on
 * odd channels, and the ring AllReduce cuts its loops into unequal blocks. */
static void plan_channels(int n, int nch)
{
    double m[MAXR * MAXR] = {0};
    int best[MAXR];
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            m[a * n + b] = a == b ? 0 : (a == 0 || b == 0) ? 5 : (a == 2 && b == 3) ? 7 : 10;
    bt_ring_search(n, m, best);
    for (int r = 0; r < n; r++) {
        BT_TEST_CHECK(bt_graph_channels_plan(W.ch[r], nch, n, r, best, m, 1) == 0, "plan");
        for (int c = 0; c < nch; c++) {
            const struct bt_ring *g = &W.ch[r][c].ring;
            BT_TEST_CHECK(g->order[g->index] == r, "n=%d: rank %d not at its ring index", n, r);
            if (!g->split)
                continue;
            BT_TEST_CHECK(g->split[0] == 0 && g->split[n] == BT_RING_SPLIT_TOTAL,
                          "n=%d: split spans %u..%u", n, g->split[0], g->split[n]);
            W.nsplit++;
        }
    }
}

static void world_init(int n, int nch, int planned)
{
    const int *host = W.host;
    memset(&W, 0, sizeof(W));
    W.host = host;
    W.n = n;
    W.nch = nch;
    W.planned = planned;
    for (int r = 0; r < n; r++)
        BT_TEST_OK(bt_graph_channels_init(W.ch[r], nch, n, r, W.host));
    if (planned)
        plan_channels(n, nch);
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < nch; c++) {
            struct bt_channel *x = &W.ch[r][c];
            struct bt_channel *nx = &W.ch[x->ring.next][c];
            BT_TEST_CHECK(nx->ring.prev == r, "n=%d channel %d: rank %d's ring next %d has prev %d",
                          n, c, r, x->ring.next, nx->ring.prev);
            link_conns(&x->ring_send, r, &nx->ring_recv, x->ring.next, "ring", c);
            for (int k = 0; k < x->tree.ndown; k++) {
                int d = x->tree.down[k];
                struct bt_channel *dx = &W.ch[d][c];
                BT_TEST_CHECK(dx->tree.up == r,
                              "n=%d channel %d: rank %d lists child %d whose parent is %d", n, c, r,
                              d, dx->tree.up);
                link_conns(&x->tree_down_send[k], r, &dx->tree_up_recv, d, "tree down", c);
                link_conns(&dx->tree_up_send, d, &x->tree_down_recv[k], r, "tree up", c);
            }
        }
        for (int q = 0; q < n; q++)
            if (q != r)
                link_conns(&W.p2p_send[r][q], r, &W.p2p_recv[q][r], q, "p2p", 0);
    }
}

/* ---------------------------------------------------------------- one collective */

struct op {
    int coll, algo, proto, fl;
    size_t count, chunk;
    int root, inplace, reverse;
};

static const char *coll_names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                   "Reduce",    "SendRecv",  "Recv"};

static char case_text[256];
static int case_failed, failures, deadlocks;
static long ncases;

static void describe(const struct op *o)
{
    snprintf(case_text, sizeof(case_text),
             "%s%s %s n=%d channels=%d count=%zu chunk=%zu %s root=%d %s lanes %s",
             coll_names[o->coll],
             o->coll == BT_COLL_ALLREDUCE ? (o->algo == BT_ALGO_RING ? " ring" : " tree") : "",
             o->proto == BT_PROTO_LL ? "LL" : "Simple", W.n, W.nch, o->count, o->chunk,
             flavors[o->fl].name, o->root, o->inplace ? "in-place" : "out-of-place",
             o->reverse ? "reversed" : "in order");
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    failures++;
    if (!case_failed && failures <= 40)
        fprintf(stderr, "FAIL %s\n", case_text);
    case_failed = 1;
    if (failures <= 40) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "    ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    } else if (failures == 41) {
        fprintf(stderr, "(further failures not printed)\n");
    }
}

static struct bt_work *new_work(int r)
{
    BT_TEST_CHECK(W.nworks[r] < MAXWORKS, "too many works");
    return &W.works[r][W.nworks[r]++];
}

static struct bt_redop make_redop(int fl, int n)
{
    struct bt_redop op;
    memset(&op, 0, sizeof(op));
    op.dtype = (uint8_t)flavors[fl].dtype;
    op.op = (uint8_t)flavors[fl].op;
    op.pre_mul = (uint8_t)flavors[fl].pre_mul;
    op.scalar_f = flavors[fl].scalar_f;
    op.scalar_i = flavors[fl].scalar_i;
    op.post_div = (uint8_t)flavors[fl].post_div;
    op.divisor = (uint64_t)n;
    return op;
}

/* Tuner defaults that spread every size over every channel (a channel per byte, up to the
 * world's) and choose nothing else: the case's settings allow one algorithm and protocol. */
static const struct bt_tune_defaults test_defaults = {
    .bytes_per_channel = 1,
    .ll_bytes_per_channel = 1,
    .net_bytes_per_channel = 1,
};

/* The planner's view of rank r for case o (plan/plan.h): the world's channels and FIFOs,
 * one step carrying o->chunk elements, PROTO and ALGO set to the case's. */
static void target(int r, const struct op *o, struct bt_tune_settings *set,
                   struct bt_plan_target *tg)
{
    size_t step = o->chunk * bt_dtype_size(flavors[o->fl].dtype);
    memset(set, 0, sizeof(*set));
    set->ll_threshold = set->tree_threshold = set->direct_threshold = set->ll128_threshold = -1;
    set->ll_ok = o->proto == BT_PROTO_LL;
    set->simple_ok = o->proto == BT_PROTO_SIMPLE;
    set->ring_ok = o->algo == BT_ALGO_RING;
    set->tree_ok = o->algo == BT_ALGO_TREE;
    *tg = (struct bt_plan_target){
        .rank = r,
        .nranks = W.n,
        .set = set,
        .def = &test_defaults,
        .max_channels = W.nch,
        .simple_slot = step,
        .ll_payload = step,
        .tree_ok = 1,
        .shm_all = 1,
        .chan = W.ch[r],
        .host_chan = W.ch[r],
        .p2p_parts = 1,
        .p2p_slot = step,
        .p2p_ll_max = o->proto == BT_PROTO_LL ? SIZE_MAX : 0,
    };
}

/* The works of one collective on rank r, planned as the host launch plans them
 * (bt_plan_coll, then bt_plan_channel per channel: the channel's own share, ring split and
 * steps; a tree's down half on a second lane for every non-root). */
static void plan_coll(int r, const struct op *o, const char *sendbuf, char *recvbuf)
{
    struct bt_tune_settings set;
    struct bt_plan_target tg;
    target(r, o, &set, &tg);
    struct bt_op op = {.coll = o->coll,
                       .sendbuf = sendbuf,
                       .recvbuf = recvbuf,
                       .count = o->count,
                       .dtype = flavors[o->fl].dtype,
                       .redop = make_redop(o->fl, W.n),
                       .peer = o->root};
    struct bt_tune_out t;
    struct bt_work tw;
    bt_plan_coll(&tg, &op, &t, &tw);
    if (t.proto != o->proto || t.chunk != o->chunk ||
        (W.n > 1 && o->coll == BT_COLL_ALLREDUCE && t.algo != o->algo))
        fail("the tuner chose algo %d proto %d chunk %zu", t.algo, t.proto, t.chunk);
    uint32_t nchans = tw.nchans > 1 ? tw.nchans : 1;
    size_t share = tw.chan_count;
    for (uint32_t c = 0; c < nchans; c++) {
        struct bt_work *w = new_work(r), down;
        *w = tw;
        int has_down = bt_plan_channel(w, c, &down);
        size_t off = (size_t)c * share;
        if (w->chan != &W.ch[r][c] || w->chan_off != off ||
            w->chan_count != bt_min_sz(share, o->count - off) ||
            w->split_max != (W.ch[r][c].ring.split ? W.ch[r][c].ring.split_max : 0))
            fail("channel %u's work: channel %p off %zu count %zu split_max %u", c, (void *)w->chan,
                 w->chan_off, w->chan_count, w->split_max);
        bt_lane_push(&W.ch[r][c].lane, w);
        if (has_down) {
            struct bt_work *d = new_work(r);
            *d = down;
            bt_lane_push(&W.down[r][c], d);
        }
    }
}

/* A send or receive of `count` elements, planned as the host launch plans it (bt_plan_p2p:
 * one part on the host) on the (peer, direction) lane. */
static void plan_p2p(int r, int peer, int is_send, const struct op *o, size_t count,
                     const char *sendbuf, char *recvbuf)
{
    struct bt_tune_settings set;
    struct bt_plan_target tg;
    target(r, o, &set, &tg);
    struct bt_op op = {.coll = is_send ? BT_COLL_SEND : BT_COLL_RECV,
                       .sendbuf = sendbuf,
                       .recvbuf = recvbuf,
                       .count = count,
                       .dtype = flavors[o->fl].dtype,
                       .peer = peer};
    struct bt_work *w = new_work(r);
    BT_TEST_CHECK(bt_plan_p2p(&tg, &op, w) == 1, "a host send/recv is one part");
    if (w->proto != o->proto)
        fail("send/recv planned with protocol %d", w->proto);
    w->p2p_conn = is_send ? &W.p2p_send[r][peer] : &W.p2p_recv[r][peer];
    bt_lane_push(is_send ? &W.p2p_send_lane[r][peer] : &W.p2p_recv_lane[r][peer], w);
}

static size_t p2p_count(size_t count, int m)
{
    return m == 0 ? count : count / 3 + 1;
}

static int rank_of_work(const struct bt_work *w)
{
    for (int r = 0; r < W.n; r++)
        if (w >= W.works[r] && w < W.works[r] + MAXWORKS)
            return r;
    return -1;
}

/* Element counts of each rank's send and recv buffers. */
static void buffer_counts(const struct op *o, size_t *ns, size_t *nr)
{
    size_t n = (size_t)W.n;
    switch (o->coll) {
    case BT_COLL_ALLGATHER:
        *ns = o->count;
        *nr = n * o->count;
        break;
    case BT_COLL_REDUCESCATTER:
        *ns = n * o->count;
        *nr = o->count;
        break;
    case BT_COLL_SEND:
        *ns = *nr = n * NMSG * o->count;
        break;
    default:
        *ns = *nr = o->count;
    }
}

static int guard_ok(const char *p)
{
    for (int i = 0; i < GUARD; i++)
        if ((unsigned char)p[i] != FILL_GUARD)
            return 0;
    return 1;
}

/* Compare `cnt` elements at `got` with expected values; report the first mismatch. */
static void check_elems(int r, const char *what, const char *got, size_t cnt, int dtype,
                        double (*expect)(const struct op *, int, size_t), const struct op *o)
{
    size_t es = bt_dtype_size(dtype);
    char e[8];
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < cnt; i++) {
        store(dtype, e, 0, expect(o, r, i));
        if (memcmp(e, got + i * es, es) != 0 && bad++ == 0)
            first = i;
    }
    if (bad)
        fail("rank %d %s: %zu of %zu elements wrong, first at %zu: got %g, expected %g", r, what,
             bad, cnt, first, load(dtype, got, first), expect(o, r, first));
}

/* Expected output element i of rank r. */
static double expect_out(const struct op *o, int r, size_t i)
{
    switch (o->coll) {
    case BT_COLL_ALLREDUCE:
    case BT_COLL_REDUCE:
        return reference(o->fl, W.n, i);
    case BT_COLL_REDUCESCATTER:
        return reference(o->fl, W.n, (size_t)r * o->count + i);
    case BT_COLL_ALLGATHER:
        return gen(o->fl, (int)(i / o->count), i % o->count);
    case BT_COLL_BROADCAST:
        return gen(o->fl, o->root, i);
    default: { /* Send/Recv: block (q, m) holds message m from q */
        size_t blk = i / o->count, j = i % o->count;
        int q = (int)(blk / NMSG), m = (int)(blk % NMSG);
        if (q == r || j >= p2p_count(o->count, m))
            return -1; /* untouched: never compared */
        return gen(o->fl, 1000 + q * 16 + r + 200 * m, j);
    }
    }
}

/* Input element i of rank r. */
static double input_of(const struct op *o, int r, size_t i)
{
    if (o->coll == BT_COLL_SEND) {
        size_t blk = i / o->count, j = i % o->count;
        int q = (int)(blk / NMSG), m = (int)(blk % NMSG);
        return gen(o->fl, 1000 + r * 16 + q + 200 * m, j);
    }
    return gen(o->fl, r, i);
}

/* The liveness probe's timing (exec/host/lanes.c, stall_check): with rank n-1's works held
 * back for late_ms, the other ranks' lanes stall; the waiting thread must first ask about the
 * peers (wait.stalled, wait.peer_gone) 50 ms into the stall, then every 50 ms. Asking costs
 * more than most stalls last (a /proc read per local peer): a launch that asked at its first
 * look paid that on nearly every small collective. */
static struct {
    int late_ms;         /* 0: no probe case */
    uint64_t release_at; /* when the held lanes get their works back */
    struct bt_lane *held[MAXLANES];
    struct bt_lane saved[MAXLANES];
    int nheld;
    int asked; /* calls of wait.stalled and wait.peer_gone */
} probe;

static int probe_release(void *arg)
{
    (void)arg;
    if (probe.nheld == 0 || bt_time_ns() < probe.release_at)
        return 0;
    for (int i = 0; i < probe.nheld; i++)
        *probe.held[i] = probe.saved[i];
    probe.nheld = 0;
    return 1;
}

static void probe_stalled(const struct bt_work *w)
{
    (void)w;
    probe.asked++;
}

static int probe_peer_gone(const struct bt_work *w, int peer, uint64_t stalled_ns)
{
    (void)w;
    (void)peer;
    (void)stalled_ns;
    probe.asked++;
    return 0;
}

static void run_case(const struct op *o)
{
    int n = W.n, dtype = flavors[o->fl].dtype;
    size_t es = bt_dtype_size(dtype), ns, nr;
    char *sendbuf[MAXR], *recvbuf[MAXR], *mem[MAXR], *mem2[MAXR];
    size_t sbytes, rbytes;

    ncases++;
    case_failed = 0;
    describe(o);
    buffer_counts(o, &ns, &nr);
    sbytes = ns * es;
    rbytes = nr * es;

    /* Buffers: out of place, recv and send apart; in place, one buffer with the input where
     * NCCL puts it (AllGather: own block of the output; ReduceScatter: the output is own
     * block of the input). */
    for (int r = 0; r < n; r++) {
        size_t big = sbytes > rbytes ? sbytes : rbytes;
        mem[r] = malloc(big + GUARD);
        mem2[r] = o->inplace ? NULL : malloc(sbytes + GUARD);
        BT_TEST_CHECK(mem[r] && (o->inplace || mem2[r]), "out of memory");
        memset(mem[r], FILL_RECV, big);
        memset(mem[r] + big, FILL_GUARD, GUARD);
        if (o->inplace) {
            recvbuf[r] = sendbuf[r] = mem[r];
            if (o->coll == BT_COLL_ALLGATHER)
                sendbuf[r] = mem[r] + (size_t)r * o->count * es;
            else if (o->coll == BT_COLL_REDUCESCATTER)
                recvbuf[r] = mem[r] + (size_t)r * o->count * es;
        } else {
            recvbuf[r] = mem[r];
            sendbuf[r] = mem2[r];
            memset(mem2[r] + sbytes, FILL_GUARD, GUARD);
        }
        for (size_t i = 0; i < ns; i++)
            store(dtype, sendbuf[r], i, input_of(o, r, i));
    }

    /* Works. */
    for (int r = 0; r < n; r++) {
        W.nworks[r] = 0;
        if (o->coll != BT_COLL_SEND) {
            plan_coll(r, o, sendbuf[r], recvbuf[r]);
            continue;
        }
        for (int q = 0; q < n; q++) {
            if (q == r)
                continue;
            for (int m = 0; m < NMSG; m++) {
                size_t blk_to = ((size_t)q * NMSG + (size_t)m) * o->count * es;
                size_t blk_from = ((size_t)q * NMSG + (size_t)m) * o->count * es;
                plan_p2p(r, q, 1, o, p2p_count(o->count, m), sendbuf[r] + blk_to, NULL);
                plan_p2p(r, q, 0, o, p2p_count(o->count, m), NULL, recvbuf[r] + blk_from);
            }
        }
    }

    /* Run every rank's lanes together. */
    struct bt_lane *lanes[MAXLANES];
    int nl = 0;
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < W.nch; c++) {
            lanes[nl++] = &W.ch[r][c].lane;
            lanes[nl++] = &W.down[r][c];
        }
        for (int q = 0; q < n; q++) {
            lanes[nl++] = &W.p2p_send_lane[r][q];
            lanes[nl++] = &W.p2p_recv_lane[r][q];
        }
    }
    if (o->reverse)
        for (int i = 0; i < nl / 2; i++) {
            struct bt_lane *t = lanes[i];
            lanes[i] = lanes[nl - 1 - i];
            lanes[nl - 1 - i] = t;
        }
    /* One thread drives every rank: a pass without progress is a deadlock, so waiting
     * need not spin. */
    struct bt_wait_policy wait = {.spin = 0, .yields = 0};
    if (probe.late_ms) { /* rank n-1's lanes empty until late_ms from now */
        probe.nheld = 0;
        probe.asked = 0;
        for (int i = 0; i < nl; i++)
            if (lanes[i]->head && rank_of_work(lanes[i]->head) == n - 1) {
                probe.held[probe.nheld] = lanes[i];
                probe.saved[probe.nheld++] = *lanes[i];
                lanes[i]->head = lanes[i]->tail = NULL;
            }
        probe.release_at = bt_time_ns() + (uint64_t)probe.late_ms * 1000000ull;
        wait.poll = probe_release;
        wait.stalled = probe_stalled;
        wait.peer_gone = probe_peer_gone;
    }
    struct bt_work *failed = NULL;
    bt_status_t st = bt_host_exec(lanes, nl, &wait, &failed);
    if (st != BT_OK) {
        deadlocks++;
        fail("bt_host_exec returned %d (deadlock): rank %d's %s work (algo %d) blocked at step "
             "%llu of %llu",
             (int)st, failed ? rank_of_work(failed) : -1, failed ? coll_names[failed->coll] : "?",
             failed ? failed->algo : -1, failed ? (unsigned long long)failed->step : 0ull,
             failed ? (unsigned long long)failed->nsteps : 0ull);
    } else {
        for (int r = 0; r < n; r++)
            for (int k = 0; k < W.nworks[r]; k++) {
                const struct bt_work *w = &W.works[r][k];
                if (w->step != w->nsteps)
                    fail("rank %d work %d (%s algo %d) ran %llu of %llu steps", r, k,
                         coll_names[w->coll], w->algo, (unsigned long long)w->step,
                         (unsigned long long)w->nsteps);
            }
        for (int i = 0; i < W.nlinks; i++) {
            const struct link *l = &W.links[i];
            uint64_t head = atomic_load(&l->s->ctrl->head);
            if (l->s->step != l->r->step || head != l->r->step)
                fail("%s link channel %d rank %d -> rank %d: sender at step %llu, receiver at "
                     "step %llu, head %llu (the schedules of the two ends disagree)",
                     l->s->kind, l->s->channel, l->from, l->to, (unsigned long long)l->s->step,
                     (unsigned long long)l->r->step, (unsigned long long)head);
        }
    }

    /* Outputs, inputs, guards. */
    for (int r = 0; r < n && st == BT_OK; r++) {
        size_t big = sbytes > rbytes ? sbytes : rbytes;
        if (!guard_ok(mem[r] + big) || (!o->inplace && !guard_ok(mem2[r] + sbytes)))
            fail("rank %d: bytes written past the end of a buffer", r);
        int writes = o->coll != BT_COLL_REDUCE || r == o->root;
        if (o->coll == BT_COLL_SEND) {
            for (int q = 0; q < n; q++)
                for (int m = 0; m < NMSG && q != r; m++) {
                    size_t off = ((size_t)q * NMSG + (size_t)m) * o->count;
                    size_t cnt = p2p_count(o->count, m);
                    for (size_t i = 0; i < cnt; i++) {
                        char e[8];
                        store(dtype, e, 0, expect_out(o, r, off + i));
                        if (memcmp(e, recvbuf[r] + (off + i) * es, es) != 0) {
                            fail("rank %d: message %d from rank %d (%zu elements) wrong at "
                                 "element %zu: got %g, expected %g",
                                 r, m, q, cnt, i, load(dtype, recvbuf[r], off + i),
                                 expect_out(o, r, off + i));
                            break;
                        }
                    }
                    for (size_t i = cnt; i < o->count && !o->inplace; i++)
                        if ((unsigned char)recvbuf[r][(off + i) * es] != FILL_RECV) {
                            fail("rank %d: message %d from rank %d wrote past its %zu elements", r,
                                 m, q, cnt);
                            break;
                        }
                }
        } else if (writes) {
            check_elems(r, "output", recvbuf[r], nr, dtype, expect_out, o);
        } else if (!o->inplace) {
            for (size_t i = 0; i < rbytes; i++)
                if ((unsigned char)recvbuf[r][i] != FILL_RECV) {
                    fail("rank %d: Reduce to root %d wrote the non-root's output at byte %zu", r,
                         o->root, i);
                    break;
                }
        }
        if (!o->inplace || (o->coll == BT_COLL_REDUCE && r != o->root))
            check_elems(r, "input (must not change)", sendbuf[r], ns, dtype, input_of, o);
    }

    for (int r = 0; r < n; r++) {
        free(mem[r]);
        free(mem2[r]);
    }
    if (case_failed) { /* connectors may be mid-step: start this world again */
        int nch = W.nch, planned = W.planned;
        world_free();
        world_init(n, nch, planned);
    }
    BT_TEST_CHECK(deadlocks < 3, "stopping after %d deadlocks", deadlocks);
}

/* ---------------------------------------------------------------- the matrix */

static size_t full_chunk(int proto, int fl)
{
    size_t payload =
        proto == BT_PROTO_LL ? LL_SLOT / sizeof(union bt_ll_line) * BT_LL_PAYLOAD : SIMPLE_SLOT;
    return payload / bt_dtype_size(flavors[fl].dtype);
}

static void run_counts(struct op *o)
{
    int n = W.n;
    /* Elements one loop of a channel moves: n chunks for ring AllReduce, else one. */
    size_t unit =
        o->coll == BT_COLL_ALLREDUCE && o->algo == BT_ALGO_RING ? (size_t)n * o->chunk : o->chunk;
    size_t counts[4] = {1, (size_t)(n - 1), 7, (size_t)W.nch * unit * 3 + 5};
    for (int k = 0; k < 4; k++) {
        if (counts[k] == 0 || (k == 1 && (counts[1] == 1 || counts[1] == 7)))
            continue;
        o->count = counts[k];
        for (int ip = 0; ip < (o->coll == BT_COLL_SEND ? 1 : 2); ip++) {
            o->inplace = ip;
            o->reverse = (int)(ncases & 1);
            run_case(o);
        }
    }
}

/* A case of protocol `proto`, flavor `fl`, chunk of a whole slot or (small) of 3 elements. */
static struct op case_of(int proto, int fl, int small)
{
    struct op o;
    memset(&o, 0, sizeof(o));
    o.proto = proto;
    o.fl = fl;
    o.chunk = small ? 3 : full_chunk(proto, fl);
    return o;
}

static void run_world(int n, int nch, int planned)
{
    world_init(n, nch, planned);
    int roots[3] = {0, n / 2, n - 1}, nroots = n == 1 ? 1 : n == 2 ? 2 : 3;
    if (n == 2)
        roots[1] = 1;
    for (int proto = 0; proto < BT_NUM_HOST_PROTOS; proto++) {
        for (int fl = 0; fl < NFLAVORS; fl++) {
            for (int small = 0; small < 2; small++) {
                struct op o = case_of(proto, fl, small);
                o.coll = BT_COLL_ALLREDUCE;
                o.algo = BT_ALGO_RING;
                run_counts(&o);
                o.algo = BT_ALGO_TREE;
                run_counts(&o);
                o.algo = BT_ALGO_RING;
                o.coll = BT_COLL_REDUCESCATTER;
                run_counts(&o);
                o.coll = BT_COLL_REDUCE;
                for (int k = 0; k < nroots; k++) {
                    o.root = roots[k];
                    run_counts(&o);
                }
                o.root = 0;

                int copy = 0;
                for (int k = 0; k < NCOPY; k++)
                    copy |= copy_flavors[k] == fl;
                if (!copy)
                    continue;
                o.coll = BT_COLL_ALLGATHER;
                run_counts(&o);
                o.coll = BT_COLL_BROADCAST;
                for (int k = 0; k < nroots; k++) {
                    o.root = roots[k];
                    run_counts(&o);
                }
                o.root = 0;
                o.coll = BT_COLL_SEND; /* every pair, both directions */
                run_counts(&o);
            }
        }
    }
    world_free();
}

/* Tree AllReduce over trees of hosts (chains inside each host): hosts of 2 ranks (the last
 * of 1 for odd n) and 2 hosts holding alternate ranks. */
static void run_tree_hosts(int n)
{
    static int host[MAXR];
    for (int layout = 0; layout < 2; layout++) {
        for (int r = 0; r < n; r++)
            host[r] = layout == 0 ? r / 2 : r % 2;
        W.host = host;
        world_init(n, 2, 0);
        for (int proto = 0; proto < BT_NUM_HOST_PROTOS; proto++)
            for (int fl = 0; fl < NFLAVORS; fl++)
                for (int small = 0; small < 2; small++) {
                    struct op o = case_of(proto, fl, small);
                    o.coll = BT_COLL_ALLREDUCE;
                    o.algo = BT_ALGO_TREE;
                    run_counts(&o);
                }
        world_free();
        W.host = NULL;
    }
}

/* A 2-rank ring AllReduce whose second rank comes late_ms late: returns how often the waiting
 * thread asked about its peers. */
static int probe_case(int late_ms)
{
    world_init(2, 1, 0);
    struct op o = case_of(BT_PROTO_SIMPLE, 0, 0);
    o.coll = BT_COLL_ALLREDUCE;
    o.algo = BT_ALGO_RING;
    o.count = 1000;
    probe.late_ms = late_ms;
    run_case(&o);
    probe.late_ms = 0;
    world_free();
    return probe.asked;
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    setenv("BATON_TIMEOUT", "5", 1); /* a deadlocked schedule fails in 5 s */

    uint64_t t0 = bt_time_ns();
    for (int n = 1; n <= MAXR; n++) {
        for (int nch = 1; nch <= MAXCH; nch++)
            run_world(n, nch, 0);
        if (n >= 3) { /* rings planned over unequal links: other orders, unequal blocks */
            run_world(n, 2, 1);
            BT_TEST_CHECK(W.nsplit > 0, "n=%d: no planned ring got unequal blocks", n);
            run_tree_hosts(n);
        }
        printf("n=%d done (%ld cases so far, %.2f s)\n", n, ncases,
               (double)(bt_time_ns() - t0) / 1e9);
        fflush(stdout);
    }
    int short_stall = probe_case(20), long_stall = probe_case(230);
    printf("peers asked during a 20 ms stall: %d times, during a 230 ms one: %d\n", short_stall,
           long_stall);
    BT_TEST_CHECK(short_stall == 0, "a 20 ms stall asked about the peers %d times (first at 50 ms)",
                  short_stall);
    BT_TEST_CHECK(long_stall >= 3, "a 230 ms stall asked about the peers %d times (every 50 ms)",
                  long_stall);
    printf("%ld cases, %llu connector steps, %d failed checks, %.2f s\n", ncases,
           (unsigned long long)total_steps, failures, (double)(bt_time_ns() - t0) / 1e9);
    BT_TEST_CHECK(failures == 0, "%d checks failed (see above)", failures);
    bt_test_leaks_end(&leaks);
    return 0;
}
