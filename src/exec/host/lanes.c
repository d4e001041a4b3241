#include "exec/host/lanes.h"
#include "exec/host/win_allreduce.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "coll/algo.h"
#include "exec/host/helpers.h"
#include "exec/host/reduce.h"
#include "util/time.h"

/* ---- connector readiness ---------------------------------------------------------- */

static inline uint32_t ll_flag(uint64_t step)
{
    return (uint32_t)(step + 1);
}

static inline size_t ll_lines(size_t nbytes)
{
    size_t n = (nbytes + BT_LL_PAYLOAD - 1) / BT_LL_PAYLOAD;
    return n ? n : 1; /* an empty step still carries one line, so both sides stay in step */
}

static int send_ready(struct bt_conn *c)
{
    if (c->cap && bt_time_ns() < c->cap->free_ns)
        return 0; /* an injected slow link is still busy with earlier steps */
    if (c->step < c->cached + BT_NSTEPS)
        return 1;
    c->cached = atomic_load_explicit(&c->ctrl->head, memory_order_acquire);
    return c->step < c->cached + BT_NSTEPS;
}

static int recv_ready(struct bt_conn *c, int proto, size_t nbytes)
{
    if (proto == BT_PROTO_SIMPLE) {
        if (c->cached >= c->step + 1)
            return 1;
        c->cached = atomic_load_explicit(&c->ctrl->tail, memory_order_acquire);
        return c->cached >= c->step + 1;
    }
    /* LL: the sender stores lines in order with release semantics, so seeing the last
     * line's flags means every earlier line is visible too. */
    union bt_ll_line *l = (union bt_ll_line *)bt_conn_slot(c, BT_PROTO_LL, c->step);
    size_t last = ll_lines(nbytes) - 1;
    uint64_t v1 = __atomic_load_n(&l[last].v[1], __ATOMIC_ACQUIRE);
    uint64_t v0 = __atomic_load_n(&l[last].v[0], __ATOMIC_ACQUIRE);
    uint32_t f = ll_flag(c->step);
    return (uint32_t)(v0 >> 32) == f && (uint32_t)(v1 >> 32) == f;
}

/* ---- LL packing ------------------------------------------------------------------- */

/* Full lines move 8 bytes as one word (a constant-size memcpy, compiled to a move); only
 * the last, partial line copies a variable number of bytes. */
static void ll_pack(struct bt_conn *c, const char *data, size_t nbytes)
{
    union bt_ll_line *l = (union bt_ll_line *)bt_conn_slot(c, BT_PROTO_LL, c->step);
    uint64_t flag = (uint64_t)ll_flag(c->step) << 32;
    size_t full = nbytes / BT_LL_PAYLOAD, n = ll_lines(nbytes);
    for (size_t i = 0; i < full; i++) {
        uint64_t x;
        memcpy(&x, data + i * BT_LL_PAYLOAD, sizeof(x));
        /* data and flag travel in one 8-byte store; release orders lines one after another */
        __atomic_store_n(&l[i].v[0], (x & 0xffffffffu) | flag, __ATOMIC_RELEASE);
        __atomic_store_n(&l[i].v[1], (x >> 32) | flag, __ATOMIC_RELEASE);
    }
    if (n > full) {
        uint64_t x = 0;
        memcpy(&x, data + full * BT_LL_PAYLOAD, nbytes - full * BT_LL_PAYLOAD);
        __atomic_store_n(&l[full].v[0], (x & 0xffffffffu) | flag, __ATOMIC_RELEASE);
        __atomic_store_n(&l[full].v[1], (x >> 32) | flag, __ATOMIC_RELEASE);
    }
}

/* One line's 8 bytes of payload, once both halves carry flag `f`. */
static inline uint64_t ll_read_line(union bt_ll_line *l, uint32_t f)
{
    uint64_t v0, v1;
    do { /* recv_ready saw the last line, so this loop does not spin in practice */
        v0 = __atomic_load_n(&l->v[0], __ATOMIC_ACQUIRE);
        v1 = __atomic_load_n(&l->v[1], __ATOMIC_ACQUIRE);
    } while ((uint32_t)(v0 >> 32) != f || (uint32_t)(v1 >> 32) != f);
    return (v0 & 0xffffffffu) | (v1 << 32);
}

static void ll_unpack(struct bt_conn *c, char *data, size_t nbytes)
{
    union bt_ll_line *l = (union bt_ll_line *)bt_conn_slot(c, BT_PROTO_LL, c->step);
    uint32_t f = ll_flag(c->step);
    size_t full = nbytes / BT_LL_PAYLOAD, n = ll_lines(nbytes);
    for (size_t i = 0; i < full; i++) {
        uint64_t x = ll_read_line(&l[i], f);
        memcpy(data + i * BT_LL_PAYLOAD, &x, sizeof(x));
    }
    if (n > full) {
        uint64_t x = ll_read_line(&l[full], f);
        memcpy(data + full * BT_LL_PAYLOAD, &x, nbytes - full * BT_LL_PAYLOAD);
    }
}

/* ---- completion ------------------------------------------------------------------- */

static void send_done(struct bt_conn *c, int proto, size_t nbytes)
{
    if (c->cap) { /* the link carries these bytes at its capped rate after what it has */
        uint64_t now = bt_time_ns(), from = c->cap->free_ns > now ? c->cap->free_ns : now;
        c->cap->free_ns = from + (uint64_t)((double)nbytes / c->cap->bytes_per_ns);
    }
    if (proto == BT_PROTO_SIMPLE) {
        atomic_store_explicit(&c->ctrl->sizes[c->step % BT_NSTEPS], (int32_t)nbytes,
                              memory_order_relaxed);
        /* data and size before tail: the receiver reads tail, then the slot */
        atomic_store_explicit(&c->ctrl->tail, c->step + 1, memory_order_release);
    }
    c->step++;
}

static void recv_done(struct bt_conn *c)
{
    atomic_store_explicit(&c->ctrl->sizes[c->step % BT_NSTEPS], -1, memory_order_relaxed);
    /* our reads of the slot and the size reset before head: the sender may then reuse it */
    atomic_store_explicit(&c->ctrl->head, c->step + 1, memory_order_release);
    c->step++;
}

/* ---- one primitive ---------------------------------------------------------------- */

/* Scratch for LL steps: one slot of payload per source plus the result. */
#define BT_LL_SCRATCH (64 * 1024)
static __thread char ll_scratch[BT_PRIM_MAX_PEERS + 1][BT_LL_SCRATCH];

/* Result bytes produced at a time when a step has several destinations: the copies to
 * the others then read what is still in L1, instead of a second pass over memory. */
#define BT_HOST_BLOCK (16 * 1024)

/* Simple: fold the sources into the first destination (the user's output, else the first
 * send slot) and copy each block to the other destinations right after it is made. */
static void simple_produce(const struct bt_work *w, const struct bt_prim *p, const void **srcs,
                           int nsrcs, unsigned pre_mask, int post, int transform)
{
    char *dsts[BT_PRIM_MAX_PEERS + 1];
    int ndst = 0;
    if (p->dst)
        dsts[ndst++] = p->dst;
    for (int i = 0; i < p->nsend; i++)
        dsts[ndst++] = bt_conn_slot(p->send[i], BT_PROTO_SIMPLE, p->send[i]->step);
    if (ndst == 0 || p->nelem == 0)
        return;
    size_t es = w->esize;
    size_t blk = ndst > 1 ? BT_HOST_BLOCK / es : p->nelem;
    for (size_t e = 0; e < p->nelem; e += blk) {
        size_t ne = bt_min_sz(blk, p->nelem - e), off = e * es;
        const void *bs[BT_PRIM_MAX_PEERS + 2];
        for (int i = 0; i < nsrcs; i++)
            bs[i] = (const char *)srcs[i] + off;
        char *out = dsts[0] + off;
        if (transform)
            bt_host_reduce(&w->redop, out, bs, nsrcs, pre_mask, post, ne);
        else if (out != bs[0])
            bt_host_copy(out, bs[0], ne * es);
        for (int d = 1; d < ndst; d++)
            bt_host_copy(dsts[d] + off, out, ne * es);
    }
}

/* Simple, zero-copy connectors: publish where each send slot's data is (the user's input
 * for a pure send, else the slot), and say whether the step moves no bytes here: a pure
 * send the network sends from the input, or a pure receive the network already landed in
 * the output (the proxy names it in the slot). */
static int zero_copy_step(const struct bt_work *w, const struct bt_prim *p)
{
    int pure_send = w->zero_copy && bt_prim_pure_send(w, p) && p->send[0]->zero_copy;
    for (int i = 0; i < p->nsend; i++) {
        struct bt_conn *c = p->send[i];
        if (c->zero_copy)
            atomic_store_explicit(&c->ctrl->zc[c->step % BT_NSTEPS],
                                  pure_send ? (void *)p->src : NULL, memory_order_relaxed);
    }
    if (pure_send)
        return 1;
    if (w->zero_copy && bt_prim_pure_recv(w, p) && p->recv[0]->zero_copy) {
        struct bt_conn *c = p->recv[0];
        return atomic_load_explicit(&c->ctrl->zc[c->step % BT_NSTEPS], memory_order_relaxed) ==
               (void *)p->dst;
    }
    return 0;
}

int bt_host_prim_try(const struct bt_work *w, const struct bt_prim *p)
{
    int proto = w->proto;
    size_t nbytes = p->nelem * w->esize;

    for (int i = 0; i < p->nrecv; i++)
        if (!recv_ready(p->recv[i], proto, nbytes))
            return 0;
    for (int i = 0; i < p->nsend; i++)
        if (!send_ready(p->send[i]))
            return 0;

    /* Sources: a partial result, what arrived, then the user's input. */
    const void *srcs[BT_PRIM_MAX_PEERS + 2];
    int nsrcs = 0;
    if (p->acc)
        srcs[nsrcs++] = p->acc;
    for (int i = 0; i < p->nrecv; i++) {
        if (proto == BT_PROTO_SIMPLE) {
            srcs[nsrcs++] = bt_conn_slot(p->recv[i], proto, p->recv[i]->step);
        } else {
            ll_unpack(p->recv[i], ll_scratch[i], nbytes);
            srcs[nsrcs++] = ll_scratch[i];
        }
    }
    unsigned pre_mask = 0;
    if (p->src) {
        if (p->pre_src && w->redop.pre_mul)
            pre_mask = 1u << nsrcs;
        srcs[nsrcs++] = p->src;
    }
    int post = p->post && w->redop.post_div;
    int transform = nsrcs > 1 || pre_mask || post;

    if (proto == BT_PROTO_SIMPLE) {
        if (!zero_copy_step(w, p))
            simple_produce(w, p, srcs, nsrcs, pre_mask, post, transform);
    } else {
        /* LL: the result goes to the user's output or scratch, then into each peer's lines. */
        char *out = p->dst ? p->dst : ll_scratch[BT_PRIM_MAX_PEERS];
        if (nbytes > 0) {
            if (transform)
                bt_host_reduce(&w->redop, out, srcs, nsrcs, pre_mask, post, p->nelem);
            else if (out != srcs[0])
                bt_host_copy(out, srcs[0], nbytes);
        }
        for (int i = 0; i < p->nsend; i++)
            ll_pack(p->send[i], out, nbytes);
    }
    for (int i = 0; i < p->nsend; i++)
        send_done(p->send[i], proto, nbytes);
    for (int i = 0; i < p->nrecv; i++)
        recv_done(p->recv[i]);
    return 1;
}

/* ---- the loop --------------------------------------------------------------------- */

/* Whether w waits for the previous collective of its communicator. Fences are the one thing
 * lanes driven by different threads share (bt_wait_policy.threads): counted down with release,
 * read with acquire, so a work that starts sees all its predecessor wrote. */
static int waits_fence(const struct bt_work *w)
{
    return w->after && __atomic_load_n(&w->after->remaining, __ATOMIC_ACQUIRE) > 0;
}

/* The connectors work w's current step waits on (receives without data, sends without a
 * free slot); returns how many. None while it waits for the previous collective, which its
 * own lane reports. */
static int blocked_conns(const struct bt_work *w, struct bt_conn **out)
{
    if ((w->step == 0 && waits_fence(w)) || w->algo == BT_ALGO_WINDOW)
        return 0; /* a window work waits on peers, not connectors: bt_host_window_waiting */
    struct bt_prim p;
    bt_algo_prim(w, w->step, &p);
    size_t nbytes = p.nelem * w->esize;
    int n = 0;
    for (int i = 0; i < p.nrecv; i++)
        if (!recv_ready(p.recv[i], w->proto, nbytes))
            out[n++] = p.recv[i];
    for (int i = 0; i < p.nsend; i++)
        if (!send_ready(p.send[i]))
            out[n++] = p.send[i];
    return n;
}

/* Say which connector a blocked work waits on ("timed out", or a hang report's "has made
 * no progress for N s"). */
static void report_blocked(const struct bt_work *w, const char *why, int is_report)
{
    if (w->algo == BT_ALGO_WINDOW) {
        int peers[BT_HOST_WIN_MAX_RANKS], n = bt_host_window_waiting(w, peers);
        for (int i = 0; i < n; i++)
            bt_log(is_report ? BT_LEVEL_REPORT : BT_LEVEL_WARN, BT_LOG_ALL, __FILE__, __LINE__,
                   "%s #%llu (%llu x %zu bytes, through windows) %s at step %llu/%llu waiting "
                   "for rank %d to %s",
                   bt_coll_name(w->coll), (unsigned long long)w->seq, (unsigned long long)w->count,
                   w->esize, why, (unsigned long long)w->step, (unsigned long long)w->nsteps,
                   peers[i], w->step == 1 ? "arrive" : "finish its part");
        return;
    }
    struct bt_conn *c[2 * BT_PRIM_MAX_PEERS];
    int n = blocked_conns(w, c);
    for (int i = 0; i < n; i++) {
        char what[64], tail[48] = "";
        if (c[i]->is_send && c[i]->cap && bt_time_ns() < c[i]->cap->free_ns) {
            snprintf(what, sizeof(what), "held by INJECT_LINK_BW's cap on the link to rank %d",
                     c[i]->peer);
        } else if (c[i]->is_send) {
            snprintf(what, sizeof(what), "waiting for rank %d to free a slot", c[i]->peer);
            snprintf(tail, sizeof(tail), ", peer consumed %llu", (unsigned long long)c[i]->cached);
        } else {
            snprintf(what, sizeof(what), "waiting for data from rank %d", c[i]->peer);
        }
        bt_log(
            is_report ? BT_LEVEL_REPORT : BT_LEVEL_WARN, BT_LOG_ALL, __FILE__, __LINE__,
            "%s #%llu (%llu x %zu bytes) %s at step %llu/%llu %s (%s channel %d, %s step %llu%s)",
            bt_coll_name(w->coll), (unsigned long long)w->seq, (unsigned long long)w->count,
            w->esize, why, (unsigned long long)w->step, (unsigned long long)w->nsteps, what,
            c[i]->kind, c[i]->channel, c[i]->is_send ? "send" : "recv",
            (unsigned long long)c[i]->step, tail);
    }
}

/* Whether any peer that work w's current step waits on is gone (wait->peer_gone). */
static int waits_on_gone_peer(const struct bt_work *w, const struct bt_wait_policy *wait,
                              uint64_t stalled_ns)
{
    if (w->algo == BT_ALGO_WINDOW) {
        int peers[BT_HOST_WIN_MAX_RANKS];
        int n = bt_host_window_waiting(w, peers);
        for (int i = 0; i < n; i++)
            if (wait->peer_gone(w, peers[i], stalled_ns))
                return 1;
        return 0;
    }
    struct bt_conn *c[2 * BT_PRIM_MAX_PEERS];
    int n = blocked_conns(w, c);
    for (int i = 0; i < n; i++)
        if (wait->peer_gone(w, c[i]->peer, stalled_ns))
            return 1;
    return 0;
}

/* One pass over the lanes: each lane's head work runs as many steps as it can (finished
 * works leave their lane and count their fence down). Returns whether any lane still has
 * work; *progressed: a step ran; *blocked: the last work that could not. */
static int run_pass(struct bt_lane *const *lanes, int nlanes, int *progressed,
                    struct bt_work **blocked)
{
    int active = 0;
    for (int i = 0; i < nlanes; i++) {
        struct bt_lane *ln = lanes[i];
        while (ln->head) {
            struct bt_work *w = ln->head;
            if (w->step == w->nsteps) {
                ln->head = w->next;
                if (!ln->head)
                    ln->tail = NULL;
                if (w->fence)
                    __atomic_sub_fetch(&w->fence->remaining, 1, __ATOMIC_RELEASE);
                *progressed = 1;
                continue;
            }
            if (w->step == 0 && waits_fence(w)) {
                *blocked = w; /* the previous collective is still running */
                break;
            }
            int ran;
            if (w->algo == BT_ALGO_WINDOW) {
                ran = bt_host_window_step(w);
            } else {
                struct bt_prim p;
                bt_algo_prim(w, w->step, &p);
                ran = bt_host_prim_try(w, &p);
            }
            if (!ran) {
                *blocked = w;
                break;
            }
            w->step++;
            *progressed = 1;
        }
        active |= ln->head != NULL;
    }
    return active;
}

/* A launch's time without progress. */
struct stall {
    uint64_t since;       /* when it began (0: not yet looked) */
    uint64_t deadline;    /* TIMEOUT from the first look (0: not set) */
    uint64_t liveness_at; /* the peers were last asked about (or the stall began) */
    int hang_reported;
};

/* A failure of the launch: the failing work for the caller. */
static bt_status_t failed(struct bt_work *w, struct bt_work **failed_p)
{
    if (failed_p)
        *failed_p = w;
    return BT_ERR_REMOTE;
}

/* Looked at every 64 passes without progress: an abort of any communicator of the launch (not
 * only the one whose work is blocked), a peer gone (every ~50 ms), the hang report (once, or
 * on the dump signal), the deadline. BT_OK: keep waiting. */
static bt_status_t stall_check(struct bt_lane *const *lanes, int nlanes,
                               const struct bt_wait_policy *wait, struct stall *s,
                               struct bt_work *blocked, struct bt_work **failed_p)
{
    for (int i = 0; i < nlanes; i++) {
        struct bt_work *h = lanes[i]->head;
        if (h && h->abort_flag && *h->abort_flag) {
            BT_WARN("%s aborted (ncclCommAbort or a failed peer)", bt_coll_name(h->coll));
            return failed(h, failed_p);
        }
    }
    uint64_t now = bt_time_ns();
    /* The peers are first asked 50 ms into a stall, then every 50 ms: most stalls are a peer
     * a few microseconds late, and asking costs more than that (a /proc read per local peer:
     * util/proc.h). A launch that asked at its first look paid it on nearly every small
     * collective. */
    if (s->since == 0)
        s->since = s->liveness_at = now;
    if ((wait->peer_gone || wait->stalled) && now - s->liveness_at > 50000000ull) {
        s->liveness_at = now;
        for (int i = 0; i < nlanes; i++) {
            struct bt_work *h = lanes[i]->head;
            if (h && wait->stalled)
                wait->stalled(h);
            if (h && wait->peer_gone && waits_on_gone_peer(h, wait, now - s->since))
                return failed(h, failed_p);
        }
    }
    int signalled = wait->report_now && wait->report_now();
    if (signalled || (wait->hang_ns && !s->hang_reported && now - s->since > wait->hang_ns)) {
        s->hang_reported |= !signalled;
        char why[80];
        snprintf(why, sizeof(why), "has made no progress for %.0f s (%s)",
                 (double)(now - s->since) / 1e9, signalled ? "dump signal" : "hang report");
        for (int i = 0; i < nlanes; i++) {
            if (!lanes[i]->head)
                continue;
            report_blocked(lanes[i]->head, why, 1);
            if (wait->hang)
                wait->hang(lanes[i]->head);
        }
    }
    if (s->deadline == 0) {
        s->deadline = bt_deadline_from_now();
    } else if (now > s->deadline) {
        for (int i = 0; i < nlanes; i++)
            if (lanes[i]->head)
                report_blocked(lanes[i]->head, "timed out", 0);
        return failed(blocked, failed_p);
    }
    return BT_OK;
}

/* The single-threaded loop: every lane of the launch in this thread, with every duty of a
 * wait (progress callbacks, liveness, reports, the deadline). until_progress: return BT_OK at
 * the first pass that moves, lanes left or not (the helpers' way back in), the stall (NULL:
 * this call's own) kept by the caller across such calls, so that liveness is asked every
 * ~50 ms of stall however often the lanes are shared out in between. */
static bt_status_t exec_loop(struct bt_lane *const *lanes, int nlanes,
                             const struct bt_wait_policy *wait, struct bt_work **failed_p,
                             int until_progress, struct stall *s)
{
    const uint64_t spin = wait->spin;
    const uint64_t yields = wait->yields;
    uint64_t idle = 0;
    struct stall own = {0};
    if (!s)
        s = &own;

    for (;;) {
        int progressed = 0;
        struct bt_work *blocked = NULL;
        if (!run_pass(lanes, nlanes, &progressed, &blocked))
            return BT_OK;
        if (!progressed && wait->poll)
            progressed = wait->poll(wait->arg);
        if (progressed) {
            s->since = s->deadline = 0; /* the timeout counts time without progress */
            s->hang_reported = 0;
            if (until_progress)
                return BT_OK;
            idle = 0;
            continue;
        }

        idle++;
        if (idle < spin) {
            bt_cpu_relax();
        } else if (idle < spin + yields) {
            sched_yield();
        } else if (wait->block && wait->block(wait->arg)) {
            /* woken by the network, or a bounded wait passed */
        } else {
            struct timespec ts = {0, 20000}; /* 20 us: waits this long are not latency-bound */
            nanosleep(&ts, NULL);
        }
        if ((idle & 63) == 0)
            BT_CHECK(stall_check(lanes, nlanes, wait, s, blocked, failed_p));
    }
}

void bt_host_exec_while_moving(struct bt_lane *const *lanes, int nlanes, uint64_t spin,
                               uint64_t yields)
{
    uint64_t idle = 0;
    for (;;) {
        int progressed = 0;
        struct bt_work *blocked = NULL;
        if (!run_pass(lanes, nlanes, &progressed, &blocked))
            return;
        if (progressed) {
            idle = 0;
            continue;
        }
        if (++idle >= spin + yields)
            return;
        if (idle < spin)
            bt_cpu_relax();
        else
            sched_yield();
        if ((idle & 63) == 0 && blocked && blocked->abort_flag &&
            __atomic_load_n(blocked->abort_flag, __ATOMIC_RELAXED))
            return; /* the caller's loop reports it */
    }
}

/* Whether any of the lanes still has work. */
static int lanes_busy(struct bt_lane *const *lanes, int nlanes)
{
    for (int i = 0; i < nlanes; i++)
        if (lanes[i]->head)
            return 1;
    return 0;
}

/* Keeps the lanes that still have work, in order; returns how many. */
static int lanes_left(struct bt_lane **lanes, int nlanes)
{
    int n = 0;
    for (int i = 0; i < nlanes; i++)
        if (lanes[i]->head)
            lanes[n++] = lanes[i];
    return n;
}

/*
 * The lanes split among `threads` threads, this one and helpers (helpers.h), in consecutive
 * shares (a collective's channels, or each communicator's lanes, come together), each thread
 * driving its share while it moves (this one, its share again as long as a helper still
 * moves). When all have stopped (done, or idle past the spin and yield window), this thread
 * takes every lane left and drives them alone, with every duty of a wait, until they move
 * again; then it shares them out again. So helpers run only the fast path: reports,
 * liveness and the deadline stay with the launching thread, as without them.
 */
static bt_status_t exec_threads(struct bt_lane **lanes, int nlanes,
                                const struct bt_wait_policy *wait, struct bt_work **failed_p)
{
    struct stall s = {0};
    for (;;) {
        nlanes = lanes_left(lanes, nlanes);
        if (nlanes <= 1) /* nothing to share */
            return exec_loop(lanes, nlanes, wait, failed_p, 0, &s);
        struct bt_host_job jobs[BT_HOST_MAX_HELPERS];
        int want = (wait->threads < nlanes ? wait->threads : nlanes) - 1;
        int njobs = bt_host_helpers_reserve(want, jobs);
        if (njobs == 0) /* every helper is another launch's: alone, as without them */
            return exec_loop(lanes, nlanes, wait, failed_p, 0, &s);
        int nshares = njobs + 1;
        for (int g = 1; g < nshares; g++) { /* share g: lanes [g n / s, (g + 1) n / s) */
            int a = (int)((long)g * nlanes / nshares), b = (int)((long)(g + 1) * nlanes / nshares);
            jobs[g - 1].lanes = lanes + a;
            jobs[g - 1].nlanes = b - a;
        }
        bt_host_helpers_start(jobs, njobs, wait->spin, wait->yields);
        int nmine = nlanes / nshares;
        /* its own share again while the helpers still move theirs; not where CPUs are short
         * (no spin): there the helpers need the CPU this thread would take */
        do
            bt_host_exec_while_moving(lanes, nmine, wait->spin, wait->yields);
        while (wait->spin && lanes_busy(lanes, nmine) && !bt_host_helpers_stopped(jobs, njobs));
        bt_host_helpers_join(jobs, njobs, wait->spin);
        nlanes = lanes_left(lanes, nlanes);
        if (nlanes == 0)
            return BT_OK;
        BT_CHECK(exec_loop(lanes, nlanes, wait, failed_p, 1, &s));
    }
}

bt_status_t bt_host_exec(struct bt_lane **lanes, int nlanes, const struct bt_wait_policy *wait,
                         struct bt_work **failed_p)
{
    if (wait->threads > 1 && nlanes > 1)
        return exec_threads(lanes, nlanes, wait, failed_p);
    return exec_loop(lanes, nlanes, wait, failed_p, 0, NULL);
}
