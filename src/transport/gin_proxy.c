/* GIN in proxy mode: the thread that serves a device communicator's descriptor queues
 * (gin_proxy.h). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "transport/gin_proxy.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/device.h"
#include "nccl_device/layout.h"
#include "transport/rma_net.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* How long the thread polls the queues after its last descriptor before it naps, and its
 * naps: short at first (a kernel's next put is usually near), longer as it idles on. */
#define SPIN_NS 2000000ull  /* 2 ms */
#define NAP_SHORT_NS 20000  /* 20 us, up to 200 ms idle */
#define NAP_LONG_NS 1000000 /* 1 ms after that */
#define LONG_IDLE_NS 200000000ull

/* The contexts' layouts the device code reads (interface facts: NCCL 2.28's 48 bytes, 2.30.7's
 * 72; unit/test_devapi_layout compares them with NVIDIA's headers in lab builds). */
_Static_assert(sizeof(ncclGinProxyGpuCtx_t) == 48, "2.28's GIN proxy context");
_Static_assert(sizeof(struct bt_gin_ctx_v2) == 72 &&
                   offsetof(struct bt_gin_ctx_v2, signalOffsets) == 48 &&
                   offsetof(struct bt_gin_ctx_v2, lastVisibleGet) == 64,
               "2.30.7's GIN proxy context");

/* A get a peer asked of this rank (served by the GIN thread: it alone sends). */
struct get_req {
    struct get_req *next;
    int from;
    struct bt_rma_msg m;
};

struct bt_gin_proxy {
    struct bt_transport_ctx *ctx;
    struct bt_gin_proxy_cfg cfg;
    int rank, nranks;
    uint32_t nqueues; /* ncontexts * nranks: queue q is context q / nranks's to rank q % nranks */
    int qwords;       /* per descriptor: 8 (V1) or 16 (V2) */
    /* what the device reads and writes: queues, consumer indices, signals, counters in host
     * memory it maps (*_h: this side's addresses); producer indices, the contexts, the
     * signals' offsets and the get tracking in device memory */
    uint64_t *queues_h;
    uint32_t *cis_h;
    uint64_t *signals_h, *counters_h;
    void *pis_d, *ctx_d, *sigoff_d, *gets_d;
    void *queues_d, *cis_d, *signals_d, *counters_d;
    uint32_t *taken;     /* [nqueues]: descriptors taken from each queue (the next slot's) */
    uint32_t *gets_sent; /* [nqueues]: V2 gets sent from each queue ... */
    _Atomic uint32_t *gets_done; /* ... those whose bytes have all landed here ... */
    uint32_t *gets_given_up;     /* ... and those given up (TIMEOUT, abort: never a hang) */
    uint64_t *get_deadline;      /* [nqueues]: when the queue's pending get is given up */
    char *stage_h;               /* pinned: a put's bytes on their way out (BT_RMA_NET_CHUNK) */
    void *stage_d;
    void *stream;      /* the serving thread's copies */
    void *land_stream; /* the landing thread's copies */
    struct bt_rma_net *link;
    pthread_mutex_t lock; /* the get requests below, and every VA signal's read-add-write */
    struct get_req *gets_head, **gets_tail;
    uint64_t *va_word_h; /* pinned: a VA signal's word on its way through the host */
    pthread_t thread;
    int running;
    _Atomic int stop;
    _Atomic int error; /* bt_status_t of the first failure */
};

static __thread int land_dev = -1; /* the device the landing thread has set */

static void fail(struct bt_gin_proxy *gp, bt_status_t st)
{
    int none = BT_OK;
    if (atomic_compare_exchange_strong(&gp->error, &none, (int)st) && gp->cfg.failed)
        gp->cfg.failed(gp->cfg.arg, st);
}

/* The window of `handle` holding [off, off + bytes), as a device address; NULL (WARNed) if
 * none does. */
static char *window_at(struct bt_gin_proxy *gp, uint64_t handle, uint64_t off, uint64_t bytes,
                       int from)
{
    char *base = NULL;
    size_t size = 0;
    if (gp->cfg.window(gp->cfg.arg, handle, &base, &size) && off <= size && bytes <= size - off)
        return base + off;
    BT_WARN("rank %d: a GIN operation from rank %d names window handle %llu, %llu bytes at "
            "%llu: no such window here (deregistered? not registered on every rank?)",
            gp->rank, from, (unsigned long long)handle, (unsigned long long)bytes,
            (unsigned long long)off);
    return NULL;
}

static void signal_add(struct bt_gin_proxy *gp, uint32_t context, uint32_t id, uint64_t add,
                       int from)
{
    if (id >= gp->cfg.nsignals || context >= gp->cfg.ncontexts) {
        BT_WARN("rank %d: a GIN signal from rank %d names signal %u of %u (context %u of %u): "
                "dropped",
                gp->rank, from, id, gp->cfg.nsignals, context, gp->cfg.ncontexts);
        fail(gp, BT_ERR_INVALID_USAGE);
        return;
    }
    /* release: the bytes landed before (a copy waited for) are seen by whoever sees the add */
    __atomic_fetch_add(&gp->signals_h[(size_t)context * gp->cfg.nsignals + id], add,
                       __ATOMIC_RELEASE);
}

/* The calling thread's copies on the communicator's device (a landing thread's first). */
static bt_status_t on_device(struct bt_gin_proxy *gp)
{
    if (land_dev == gp->cfg.dev)
        return BT_OK;
    bt_status_t st = bt_device_set(gp->cfg.dev);
    bt_device_thread_capture_relaxed();
    land_dev = st == BT_OK ? gp->cfg.dev : -1;
    return st;
}

/* A VA signal: the 64-bit word at `off` of window `handle` (device memory) gains `add`. */
static bt_status_t va_signal_add(struct bt_gin_proxy *gp, uint64_t handle, uint64_t off,
                                 uint64_t add, int from, void *stream)
{
    uint64_t *word = (uint64_t *)window_at(gp, handle, off, sizeof(uint64_t), from);
    if (!word || ((uintptr_t)word & 7)) {
        if (word)
            BT_WARN("rank %d: a GIN VA signal from rank %d at offset %llu is not 8-byte aligned",
                    gp->rank, from, (unsigned long long)off);
        return BT_ERR_INVALID_USAGE;
    }
    BT_CHECK(on_device(gp));
    pthread_mutex_lock(&gp->lock);
    bt_status_t st = bt_device_copy_wait(gp->va_word_h, word, sizeof(uint64_t), stream);
    if (st == BT_OK) /* written whole: the kernel polls the word */
        st = bt_device_write_u64(stream, word, *gp->va_word_h + add);
    pthread_mutex_unlock(&gp->lock);
    return st;
}

/* On the link's thread (or the GIN thread driving it): a message from rank `src`
 * (gin_proxy.h: bytes first, then the signal). */
static void land(void *arg, int src, const struct bt_rma_msg *m, const void *payload)
{
    struct bt_gin_proxy *gp = arg;
    BT_TRACE(BT_LOG_NET,
             "rank %d: GIN message from rank %d: flags %#x, window %u, %llu bytes at %llu, "
             "context %u",
             gp->rank, src, m->flags, m->win, (unsigned long long)m->bytes,
             (unsigned long long)m->offset, m->context);
    if (m->flags & BT_RMA_MSG_GET) { /* the GIN thread answers it */
        struct get_req *g = malloc(sizeof(*g));
        if (!g) {
            fail(gp, BT_ERR_SYSTEM);
            return;
        }
        g->next = NULL;
        g->from = src;
        g->m = *m;
        pthread_mutex_lock(&gp->lock);
        *gp->gets_tail = g;
        gp->gets_tail = &g->next;
        pthread_mutex_unlock(&gp->lock);
        return;
    }
    bt_status_t st = BT_OK;
    if (m->flags & BT_RMA_MSG_DATA) {
        char *dst = window_at(gp, m->win, m->offset, m->bytes, src);
        st = dst ? on_device(gp) : BT_ERR_INVALID_USAGE;
        if (st == BT_OK)
            st = bt_device_copy_wait(dst, payload, m->bytes, gp->land_stream);
    }
    if (st == BT_OK && (m->flags & BT_RMA_MSG_SIGNAL_VA))
        st = va_signal_add(gp, m->win, m->offset, m->signal_add, src, gp->land_stream);
    if (st != BT_OK)
        fail(gp, st); /* no signal for bytes that did not land: the waiter times out */
    else if (m->flags & BT_RMA_MSG_SIGNAL)
        signal_add(gp, m->context, m->signal, m->signal_add, src);
    /* a get's end moves its queue on even when its bytes failed (the error is raised): the
     * kernel waiting on it must not hang */
    if ((m->flags & BT_RMA_MSG_GET_DONE) && m->context < gp->cfg.ncontexts)
        atomic_fetch_add_explicit(&gp->gets_done[(size_t)m->context * gp->nranks + src], 1,
                                  memory_order_release);
}

/* Take the next descriptor of queue q, if the device has written all of it: copy it out and
 * clear the slot. */
static int take(struct bt_gin_proxy *gp, uint32_t q, uint64_t *gfd)
{
    uint32_t qs = gp->cfg.queue_size;
    int nq = gp->qwords;
    uint64_t *slot = gp->queues_h + ((size_t)q * qs + (gp->taken[q] & (qs - 1))) * (size_t)nq;
    uint64_t q0 = __atomic_load_n(&slot[0], __ATOMIC_ACQUIRE);
    if (!(q0 & 1))
        return 0;
    gfd[0] = q0;
    for (int k = 1; k < nq; k++) { /* the rest is on its way: 16-byte stores */
        uint64_t v;
        while (!((v = __atomic_load_n(&slot[k], __ATOMIC_ACQUIRE)) & 1))
            ;
        gfd[k] = v;
    }
    for (int k = 0; k < nq; k++)
        __atomic_store_n(&slot[k], 0, __ATOMIC_RELAXED);
    gp->taken[q]++;
    return 1;
}

/* An inline value's 64 bits: bits 8-39 of the first word, then 40-55 of it, then 8-23 of the
 * second (both formats). */
static uint64_t inline_value(uint64_t lo, uint64_t hi)
{
    return ((lo >> 8) & 0xffffffffull) | (((lo >> 40) & 0xffffull) << 32) |
           (((hi >> 8) & 0xffffull) << 48);
}

bt_status_t bt_gin_gfd_decode(int format, const uint64_t *q, struct bt_gin_gfd *f)
{
    memset(f, 0, sizeof(*f));
    if (format != BT_GIN_V2) { /* V1, V1_WIDE: the op in the header */
        f->op = (unsigned)(q[ncclGinProxyGfdHeader] >> 1) & 0x3f;
        f->strong = 1;
        f->size = q[ncclGinProxyGfdHeader] >> 7;
        f->src_off = q[ncclGinProxyGfdSrcOff] >> 1; /* V1_WIDE's VA signal: the same words */
        f->src_handle = q[ncclGinProxyGfdSrcHandle] >> 1;
        f->dst_off = q[ncclGinProxyGfdDstOff] >> 1;
        f->dst_handle = q[ncclGinProxyGfdDstHandle] >> 1;
        f->inline_val = inline_value(q[ncclGinProxyGfdInlineLow], q[ncclGinProxyGfdInlineHigh]);
        uint64_t c = q[ncclGinProxyGfdCompletion], s = q[ncclGinProxyGfdSignalVal];
        uint64_t value_hi = (((s >> 8) & 0xffff) << 16) | (((s >> 24) & 0xffffffffull) << 32);
        if (format == BT_GIN_V1) { /* 16-bit ids in bytes 1-2 and 3-4; no VA signals */
            f->op &= 0x1f;
            f->counter = (uint32_t)((c >> 8) & 0xffff);
            f->signal = (uint32_t)((c >> 24) & 0xffff);
            f->signal_val = ((c >> 40) & 0xffff) | value_hi;
        } else { /* V2's completion word */
            f->counter = (uint32_t)((c >> 1) & 0x7fffff);
            f->signal = (uint32_t)((c >> 24) & 0xffffff);
            f->signal_val = (c >> 48) | value_hi;
        }
        return BT_OK;
    }
    uint64_t h = q[BT_GIN_V2_HEADER];
    if (((h >> 1) & 0xf) != BT_GIN_V2_GFD_VERSION)
        return BT_ERR_INVALID_USAGE;
    f->op = (unsigned)(q[BT_GIN_V2_HEADER_EXT] >> 8) & 0xffff;
    f->size = h >> 7;
    f->src_off = q[BT_GIN_V2_SRC_OFF] >> 1; /* a VA signal's offset and window: the same words */
    f->src_handle = q[BT_GIN_V2_SRC_HANDLE] >> 1;
    f->dst_off = q[BT_GIN_V2_DST_OFF] >> 1;
    f->dst_handle = q[BT_GIN_V2_DST_HANDLE] >> 1;
    f->inline_val = inline_value(q[BT_GIN_V2_INLINE_LOW], q[BT_GIN_V2_INLINE_HIGH]);
    uint64_t c = q[BT_GIN_V2_COMPLETION], s = q[BT_GIN_V2_SIGNAL_VAL];
    f->counter = (uint32_t)((c >> 1) & 0x7fffff);
    f->signal = (uint32_t)((c >> 24) & 0xffffff);
    f->signal_val = (c >> 48) | (((s >> 8) & 0xffff) << 16) | (((s >> 24) & 0xffffffffull) << 32);
    f->strong = (int)((s >> 1) & 1);
    return BT_OK;
}

/* Send `n` bytes at device (or host) address src (NULL: none) to rank pe as message m. */
static bt_status_t send_from(struct bt_gin_proxy *gp, int pe, struct bt_rma_msg *m, const char *src,
                             uint64_t n)
{
    m->bytes = n;
    if (n && src)
        BT_CHECK(bt_device_copy_wait(gp->stage_d, src, n, gp->stream));
    if (n)
        m->flags |= BT_RMA_MSG_DATA;
    return bt_rma_net_put(gp->link, pe, m, gp->stage_h);
}

/* Carry one put (with its signal) of context `cx` to rank pe; its bytes have left the
 * source when it returns. */
static bt_status_t serve_put(struct bt_gin_proxy *gp, uint32_t cx, int pe,
                             const struct bt_gin_gfd *f)
{
    int has_signal = (f->op & (ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithSignalAdd)) != 0;
    uint64_t add = (f->op & ncclGinProxyOpWithSignalInc) ? 1 : f->signal_val;
    const char *src = NULL;
    uint64_t inline_val = f->inline_val;
    if (f->size && (f->op & ncclGinProxyOpWithInline)) {
        if (f->size > sizeof(inline_val))
            return BT_ERR_INVALID_USAGE;
        src = (const char *)&inline_val; /* little-endian: the value's low bytes first */
    } else if (f->size) {
        src = window_at(gp, f->src_handle, f->src_off, f->size, gp->rank);
        if (!src)
            return BT_ERR_INVALID_USAGE;
    }
    if (pe == gp->rank) { /* to itself: a copy, then the signal */
        if (f->size) {
            char *dst = window_at(gp, f->dst_handle, f->dst_off, f->size, gp->rank);
            if (!dst)
                return BT_ERR_INVALID_USAGE;
            BT_CHECK(bt_device_copy_wait(dst, src, f->size, gp->stream));
        }
        if (has_signal)
            signal_add(gp, cx, f->signal, add, gp->rank);
        return BT_OK;
    }
    /* to a peer: through the staging buffer, a chunk at a time; the last raises the signal */
    uint64_t off = 0;
    do {
        uint64_t n = f->size - off < BT_RMA_NET_CHUNK ? f->size - off : BT_RMA_NET_CHUNK;
        struct bt_rma_msg m = {.win = (uint32_t)f->dst_handle,
                               .offset = f->dst_off + off,
                               .signal = f->signal,
                               .signal_add = add,
                               .context = cx};
        m.flags = has_signal && off + n == f->size ? BT_RMA_MSG_SIGNAL : 0;
        if (n && src == (const char *)&inline_val) {
            memcpy(gp->stage_h, src, n);
            BT_CHECK(send_from(gp, pe, &m, NULL, n));
        } else if (n || m.flags) {
            BT_CHECK(send_from(gp, pe, &m, n ? src + off : NULL, n));
        }
        off += n;
    } while (off < f->size);
    return BT_OK;
}

/* A VA signal of context cx to rank pe: after every earlier put to it (the same comm). */
static bt_status_t serve_va_signal(struct bt_gin_proxy *gp, uint32_t cx, int pe,
                                   const struct bt_gin_gfd *f)
{
    uint64_t add = (f->op & ncclGinProxyOpWithSignalInc) ? 1 : f->signal_val;
    if (pe == gp->rank)
        return va_signal_add(gp, f->src_handle, f->src_off, add, gp->rank, gp->stream);
    struct bt_rma_msg m = {.win = (uint32_t)f->src_handle,
                           .offset = f->src_off,
                           .flags = BT_RMA_MSG_SIGNAL_VA,
                           .signal_add = add,
                           .context = cx};
    return send_from(gp, pe, &m, NULL, 0);
}

/* A get of context cx from rank pe: 1 if its bytes are still to come (the queue waits for
 * them), 0 if they are here (from this rank itself: a copy). */
static bt_status_t serve_get(struct bt_gin_proxy *gp, uint32_t cx, int pe,
                             const struct bt_gin_gfd *f, int *pending)
{
    *pending = 0;
    if (pe == gp->rank) {
        char *src = window_at(gp, f->src_handle, f->src_off, f->size, gp->rank);
        char *dst = window_at(gp, f->dst_handle, f->dst_off, f->size, gp->rank);
        if (!src || !dst)
            return BT_ERR_INVALID_USAGE;
        return f->size ? bt_device_copy_wait(dst, src, f->size, gp->stream) : BT_OK;
    }
    /* the window it lands in must be here before the peer sends */
    if (f->size && !window_at(gp, f->dst_handle, f->dst_off, f->size, gp->rank))
        return BT_ERR_INVALID_USAGE;
    struct bt_rma_msg m = {.win = (uint32_t)f->src_handle,
                           .offset = f->src_off,
                           .flags = BT_RMA_MSG_GET,
                           .context = cx,
                           .get_bytes = f->size,
                           .reply_win = (uint32_t)f->dst_handle,
                           .reply_offset = f->dst_off};
    BT_CHECK(send_from(gp, pe, &m, NULL, 0));
    size_t q = (size_t)cx * gp->nranks + pe;
    gp->gets_sent[q]++;
    gp->get_deadline[q] = bt_deadline_from_now();
    *pending = 1;
    return BT_OK;
}

/* Answer the gets peers asked of this rank: their bytes from its window, the last message
 * flagged done. Returns how many. */
static int answer_gets(struct bt_gin_proxy *gp)
{
    pthread_mutex_lock(&gp->lock);
    struct get_req *list = gp->gets_head;
    gp->gets_head = NULL;
    gp->gets_tail = &gp->gets_head;
    pthread_mutex_unlock(&gp->lock);
    int n = 0;
    while (list) {
        struct get_req *g = list;
        list = g->next;
        const struct bt_rma_msg *r = &g->m;
        const char *src = window_at(gp, r->win, r->offset, r->get_bytes, g->from);
        bt_status_t st = BT_OK;
        uint64_t off = 0;
        do { /* a missing window still answers (no bytes): the asker's queue goes on */
            uint64_t left = src ? r->get_bytes - off : 0;
            uint64_t k = left < BT_RMA_NET_CHUNK ? left : BT_RMA_NET_CHUNK;
            struct bt_rma_msg m = {.win = r->reply_win,
                                   .offset = r->reply_offset + off,
                                   .context = r->context,
                                   .flags = k == left ? BT_RMA_MSG_GET_DONE : 0};
            st = send_from(gp, g->from, &m, k ? src + off : NULL, k);
            off += k;
        } while (st == BT_OK && src && off < r->get_bytes);
        if (st != BT_OK) { /* the asker's queue moves on at once if this still goes */
            struct bt_rma_msg m = {
                .win = r->reply_win, .context = r->context, .flags = BT_RMA_MSG_GET_DONE};
            (void)send_from(gp, g->from, &m, NULL, 0);
        }
        if (st != BT_OK || !src) {
            BT_WARN("rank %d: a GIN get of rank %d (%llu bytes of window %u) could not be "
                    "answered%s",
                    gp->rank, g->from, (unsigned long long)r->get_bytes, r->win,
                    src ? " (the link failed)" : ": no such window (its bytes never come)");
            fail(gp, st != BT_OK ? st : BT_ERR_INVALID_USAGE);
        }
        free(g);
        n++;
    }
    return n;
}

/* Serve one descriptor of context cx to rank pe. *pending: a get whose bytes are to come. */
static bt_status_t serve(struct bt_gin_proxy *gp, uint32_t cx, int pe, const struct bt_gin_gfd *f,
                         int *pending)
{
    *pending = 0;
    if (f->op & BT_GIN_OP_FLUSH) /* every get before it landed before its queue moved on */
        return BT_OK;
    if (f->op & BT_GIN_OP_GET)
        return serve_get(gp, cx, pe, f, pending);
    if (f->op & BT_GIN_OP_VA_SIGNAL)
        return serve_va_signal(gp, cx, pe, f);
    return serve_put(gp, cx, pe, f);
}

/* Whether queue q waits for a get's bytes. Past TIMEOUT, or once the communicator is aborted,
 * the get is given up (WARNed, the communicator's error): a kernel must never wait forever
 * on the queue (its wait for credit does not look at the abort flag). */
static int get_pending(struct bt_gin_proxy *gp, uint32_t q)
{
    uint32_t done = atomic_load_explicit(&gp->gets_done[q], memory_order_acquire);
    if ((int32_t)(gp->gets_sent[q] - done - gp->gets_given_up[q]) <= 0)
        return 0;
    int aborted = gp->ctx->abort_flag && *gp->ctx->abort_flag;
    if (!aborted && bt_time_ns() < gp->get_deadline[q])
        return 1;
    if (!aborted)
        BT_WARN("rank %d: a GIN get from rank %d (context %u) got no answer within TIMEOUT: "
                "given up (its bytes never come)",
                gp->rank, (int)(q % (uint32_t)gp->nranks), q / (uint32_t)gp->nranks);
    fail(gp, BT_ERR_REMOTE);
    gp->gets_given_up[q] = gp->gets_sent[q] - done;
    return 0;
}

/* Take and serve what queue q has; its consumer index follows. Returns how many. */
static int serve_queue(struct bt_gin_proxy *gp, uint32_t q)
{
    uint32_t cx = q / (uint32_t)gp->nranks;
    int pe = (int)(q % (uint32_t)gp->nranks);
    if (get_pending(gp, q))
        return 0; /* a get's bytes are on their way: the queue waits for them */
    int n = 0;
    if (__atomic_load_n(&gp->cis_h[q], __ATOMIC_RELAXED) != gp->taken[q]) {
        __atomic_store_n(&gp->cis_h[q], gp->taken[q], __ATOMIC_RELEASE); /* the get landed */
        n++;
    }
    uint64_t g[BT_GIN_V2_QWORDS];
    while (take(gp, q, g)) {
        struct bt_gin_gfd f;
        int pending = 0;
        bt_status_t st = bt_gin_gfd_decode(gp->cfg.format, g, &f);
        if (st != BT_OK) {
            BT_WARN("rank %d: a GIN descriptor of version %u (this proxy reads %d): dropped",
                    gp->rank, (unsigned)(g[0] >> 1) & 0xf, BT_GIN_V2_GFD_VERSION);
        } else {
            BT_TRACE(BT_LOG_NET,
                     "rank %d: GIN descriptor %u of context %u to rank %d: op %#x, %llu bytes, "
                     "src %llu+%llu, dst %llu+%llu, signal %u (+%llu), counter %u",
                     gp->rank, gp->taken[q] - 1, cx, pe, f.op, (unsigned long long)f.size,
                     (unsigned long long)f.src_handle, (unsigned long long)f.src_off,
                     (unsigned long long)f.dst_handle, (unsigned long long)f.dst_off, f.signal,
                     (unsigned long long)f.signal_val, f.counter);
            st = serve(gp, cx, pe, &f, &pending);
        }
        if (st != BT_OK) {
            BT_WARN("rank %d: a GIN operation to rank %d (op %#x, %llu bytes) could not be "
                    "carried (error %d): its signal never comes",
                    gp->rank, pe, f.op, (unsigned long long)f.size, (int)st);
            fail(gp, st);
        }
        if ((f.op & ncclGinProxyOpWithCounter) && f.counter < gp->cfg.ncounters) {
            __atomic_fetch_add(&gp->counters_h[(size_t)cx * gp->cfg.ncounters + f.counter], 1,
                               __ATOMIC_RELEASE);
        } else if (f.op & ncclGinProxyOpWithCounter) {
            BT_WARN("rank %d: a GIN put names counter %u of %u: not counted", gp->rank, f.counter,
                    gp->cfg.ncounters);
            fail(gp, BT_ERR_INVALID_USAGE);
        }
        n++;
        if (pending)
            return n; /* the consumer index moves once the get's bytes are here */
        /* consumed: the device's credit and flush (done, or failed: never a hang) */
        __atomic_store_n(&gp->cis_h[q], gp->taken[q], __ATOMIC_RELEASE);
    }
    return n;
}

static void *gin_main(void *arg)
{
    struct bt_gin_proxy *gp = arg;
    bt_status_t st = on_device(gp);
    if (st != BT_OK)
        fail(gp, st);
    uint64_t last = bt_time_ns();
    while (!atomic_load_explicit(&gp->stop, memory_order_acquire)) {
        int n = 0;
        for (uint32_t q = 0; q < gp->nqueues; q++)
            n += serve_queue(gp, q);
        /* Land what peers put here too: the link's own thread naps long when idle (its
         * wake-ups cost CPU), and no host thread waits on a GIN signal, the device does. */
        if (gp->link) {
            n += bt_rma_net_drive(gp->link);
            n += answer_gets(gp);
        }
        uint64_t now = bt_time_ns();
        if (n) {
            last = now;
        } else if (now - last > SPIN_NS) {
            struct timespec ts = {0, now - last > LONG_IDLE_NS ? NAP_LONG_NS : NAP_SHORT_NS};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void release(struct bt_gin_proxy *gp)
{
    bt_device_host_free(gp->queues_h);
    bt_device_host_free(gp->cis_h);
    bt_device_host_free(gp->signals_h);
    bt_device_host_free(gp->counters_h);
    bt_device_host_free(gp->stage_h);
    bt_device_host_free(gp->va_word_h);
    bt_device_free(gp->pis_d);
    bt_device_free(gp->ctx_d);
    bt_device_free(gp->sigoff_d);
    bt_device_free(gp->gets_d);
    bt_device_stream_destroy(gp->stream);
    bt_device_stream_destroy(gp->land_stream);
    while (gp->gets_head) {
        struct get_req *g = gp->gets_head;
        gp->gets_head = g->next;
        free(g);
    }
    pthread_mutex_destroy(&gp->lock);
    free(gp->taken);
    free(gp->gets_sent);
    free((void *)gp->gets_done);
    free(gp->gets_given_up);
    free(gp->get_deadline);
    free(gp);
}

/* The contexts as the device reads them (V1: one ncclGinProxyGpuCtx_t; V2: an array of
 * struct bt_gin_ctx_v2), each pointing at its share of the arrays. */
static bt_status_t upload_contexts(struct bt_gin_proxy *gp)
{
    size_t n = (size_t)gp->nranks, ns = gp->cfg.nsignals, nc = gp->cfg.ncounters;
    size_t one =
        gp->cfg.format == BT_GIN_V2 ? sizeof(struct bt_gin_ctx_v2) : sizeof(ncclGinProxyGpuCtx_t);
    size_t bytes = one * gp->cfg.ncontexts;
    char *all = calloc(1, bytes);
    if (!all)
        return BT_ERR_SYSTEM;
    for (uint32_t c = 0; c < gp->cfg.ncontexts; c++) {
        struct bt_gin_ctx_v2 x;
        memset(&x, 0, sizeof(x));
        x.v1.nranks = gp->nranks;
        x.v1.queueSize = gp->cfg.queue_size;
        x.v1.queues = (ncclGinProxyGfd_t *)((uint64_t *)gp->queues_d +
                                            c * n * gp->cfg.queue_size * (size_t)gp->qwords);
        x.v1.pis = (uint32_t *)gp->pis_d + c * n;
        x.v1.cis = (uint32_t *)gp->cis_d + c * n;
        x.v1.counters = (uint64_t *)gp->counters_d + c * nc;
        x.v1.signals = (uint64_t *)gp->signals_d + c * ns;
        if (gp->cfg.format == BT_GIN_V2) {
            x.signalOffsets = (uint64_t *)gp->sigoff_d + c * ns;
            x.lastIssuedGet = (uint32_t *)gp->gets_d + c * 2 * n;
            x.lastVisibleGet = (uint32_t *)gp->gets_d + c * 2 * n + n;
        }
        memcpy(all + c * one, &x, one);
    }
    bt_status_t st = bt_device_alloc_zeroed(&gp->ctx_d, bytes);
    if (st == BT_OK)
        st = bt_device_upload(gp->ctx_d, all, bytes);
    free(all);
    return st;
}

static bt_status_t alloc_all(struct bt_gin_proxy *gp)
{
    size_t nq = gp->nqueues, cx = gp->cfg.ncontexts;
    size_t ns = gp->cfg.nsignals ? gp->cfg.nsignals : 1;
    size_t nc = gp->cfg.ncounters ? gp->cfg.ncounters : 1;
    gp->taken = calloc(nq, sizeof(uint32_t));
    gp->gets_sent = calloc(nq, sizeof(uint32_t));
    gp->gets_done = calloc(nq, sizeof(*gp->gets_done));
    gp->gets_given_up = calloc(nq, sizeof(uint32_t));
    gp->get_deadline = calloc(nq, sizeof(uint64_t));
    if (!gp->taken || !gp->gets_sent || !gp->gets_done || !gp->gets_given_up || !gp->get_deadline)
        return BT_ERR_SYSTEM;
    BT_CHECK(
        bt_device_host_mapped((void **)&gp->queues_h, &gp->queues_d,
                              sizeof(uint64_t) * (size_t)gp->qwords * gp->cfg.queue_size * nq));
    BT_CHECK(bt_device_host_mapped((void **)&gp->cis_h, &gp->cis_d, sizeof(uint32_t) * nq));
    BT_CHECK(
        bt_device_host_mapped((void **)&gp->signals_h, &gp->signals_d, sizeof(uint64_t) * ns * cx));
    BT_CHECK(bt_device_host_mapped((void **)&gp->counters_h, &gp->counters_d,
                                   sizeof(uint64_t) * nc * cx));
    BT_CHECK(bt_device_host_mapped((void **)&gp->stage_h, &gp->stage_d, BT_RMA_NET_CHUNK));
    void *unused;
    BT_CHECK(bt_device_host_mapped((void **)&gp->va_word_h, &unused, sizeof(uint64_t)));
    BT_CHECK(bt_device_alloc_zeroed(&gp->pis_d, sizeof(uint32_t) * nq));
    if (gp->cfg.format == BT_GIN_V2) {
        BT_CHECK(bt_device_alloc_zeroed(&gp->sigoff_d, sizeof(uint64_t) * ns * cx));
        BT_CHECK(bt_device_alloc_zeroed(&gp->gets_d, sizeof(uint32_t) * 2 * nq));
    }
    BT_CHECK(bt_device_stream_create(&gp->stream));
    BT_CHECK(bt_device_stream_create(&gp->land_stream));
    return upload_contexts(gp);
}

bt_status_t bt_gin_proxy_open(struct bt_transport_ctx *ctx, const struct bt_gin_proxy_cfg *cfg,
                              struct bt_gin_proxy **gp_p, void **dev_ctx)
{
    *gp_p = NULL;
    *dev_ctx = NULL;
    if (!cfg->queue_size || (cfg->queue_size & (cfg->queue_size - 1)) || !cfg->ncontexts ||
        cfg->format < BT_GIN_V1 || cfg->format > BT_GIN_V1_WIDE ||
        (cfg->format == BT_GIN_V1 && cfg->ncontexts != 1))
        return BT_ERR_INTERNAL;
    struct bt_gin_proxy *gp = calloc(1, sizeof(*gp));
    if (!gp)
        return BT_ERR_SYSTEM;
    gp->ctx = ctx;
    gp->cfg = *cfg;
    gp->rank = ctx->rank;
    gp->nranks = ctx->nranks;
    gp->nqueues = cfg->ncontexts * (uint32_t)ctx->nranks;
    gp->qwords = cfg->format == BT_GIN_V2 ? BT_GIN_V2_QWORDS : ncclGinProxyGfdQwords;
    pthread_mutex_init(&gp->lock, NULL);
    gp->gets_tail = &gp->gets_head;
    bt_status_t st = alloc_all(gp);
    if (st == BT_OK && gp->nranks > 1)
        st = bt_rma_net_open(ctx, &(struct bt_rma_net_opts){.spin_ns = SPIN_NS, .pinned = 1}, land,
                             gp, &gp->link);
    if (st == BT_OK) {
        if (pthread_create(&gp->thread, NULL, gin_main, gp) == 0) {
            gp->running = 1;
            if (bt_param_set_thread_name())
                pthread_setname_np(gp->thread, "baton GIN");
        } else {
            st = BT_ERR_SYSTEM;
        }
    }
    if (st != BT_OK) {
        BT_WARN("rank %d: the GIN proxy could not be set up (error %d)", ctx->rank, (int)st);
        bt_rma_net_close(gp->link);
        release(gp);
        return st;
    }
    *gp_p = gp;
    *dev_ctx = gp->ctx_d;
    return BT_OK;
}

void bt_gin_proxy_close(struct bt_gin_proxy *gp)
{
    if (!gp)
        return;
    if (gp->running) {
        atomic_store_explicit(&gp->stop, 1, memory_order_release);
        pthread_join(gp->thread, NULL);
    }
    bt_rma_net_close(gp->link); /* its thread lands no more after this */
    release(gp);
}
