/* GIN in proxy mode: the thread that serves a device communicator's descriptor queues
 * (gin_proxy.h). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "transport/gin_proxy.h"

#include <pthread.h>
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

struct bt_gin_proxy {
    struct bt_transport_ctx *ctx;
    struct bt_gin_proxy_cfg cfg;
    int rank, nranks;
    /* what the device reads and writes: queues, consumer indices, signals, counters in host
     * memory it maps (*_h: this side's addresses); producer indices and the context in
     * device memory */
    ncclGinProxyGfd_t *queues_h;
    uint32_t *cis_h;
    uint64_t *signals_h, *counters_h;
    void *pis_d, *ctx_d;
    void *queues_d, *cis_d, *signals_d, *counters_d;
    uint32_t *taken; /* [nranks]: descriptors taken from each queue (the next slot's index) */
    char *stage_h;   /* pinned: a put's bytes on their way out (BT_RMA_NET_CHUNK) */
    void *stage_d;
    void *stream;      /* the serving thread's copies */
    void *land_stream; /* the landing thread's copies */
    struct bt_rma_net *link;
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
    BT_WARN("rank %d: a GIN put from rank %d names window handle %llu, %llu bytes at %llu: no "
            "such window here (deregistered? not registered on every rank?)",
            gp->rank, from, (unsigned long long)handle, (unsigned long long)bytes,
            (unsigned long long)off);
    return NULL;
}

static void signal_add(struct bt_gin_proxy *gp, uint32_t id, uint64_t add, int from)
{
    if (id >= gp->cfg.nsignals) {
        BT_WARN("rank %d: a GIN signal from rank %d names signal %u of %u: dropped", gp->rank, from,
                id, gp->cfg.nsignals);
        fail(gp, BT_ERR_INVALID_USAGE);
        return;
    }
    /* release: the bytes landed before (a copy waited for) are seen by whoever sees the add */
    __atomic_fetch_add(&gp->signals_h[id], add, __ATOMIC_RELEASE);
}

/* On the link's thread: a message from rank `src` (gin_proxy.h: bytes first, then the
 * signal). */
static void land(void *arg, int src, const struct bt_rma_msg *m, const void *payload)
{
    struct bt_gin_proxy *gp = arg;
    BT_TRACE(BT_LOG_NET,
             "rank %d: GIN message from rank %d: flags %#x, window %u, %llu bytes at %llu",
             gp->rank, src, m->flags, m->win, (unsigned long long)m->bytes,
             (unsigned long long)m->offset);
    if (m->flags & BT_RMA_MSG_DATA) {
        char *dst = window_at(gp, m->win, m->offset, m->bytes, src);
        bt_status_t st = dst ? BT_OK : BT_ERR_INVALID_USAGE;
        if (st == BT_OK && land_dev != gp->cfg.dev) {
            st = bt_device_set(gp->cfg.dev);
            bt_device_thread_capture_relaxed();
            land_dev = st == BT_OK ? gp->cfg.dev : -1;
        }
        if (st == BT_OK)
            st = bt_device_copy_wait(dst, payload, m->bytes, gp->land_stream);
        if (st != BT_OK) {
            fail(gp, st);
            return; /* no signal for bytes that did not land: the waiter times out, not errs */
        }
    }
    if (m->flags & BT_RMA_MSG_SIGNAL)
        signal_add(gp, m->signal, m->signal_add, src);
}

/* Take the next descriptor of peer pe's queue, if the device has written all of it: copy it
 * out and clear the slot. */
static int take(struct bt_gin_proxy *gp, int pe, ncclGinProxyGfd_t *gfd)
{
    uint32_t qs = gp->cfg.queue_size;
    ncclGinProxyGfd_t *slot = &gp->queues_h[(size_t)pe * qs + (gp->taken[pe] & (qs - 1))];
    uint64_t q0 = __atomic_load_n(&slot->qword[0], __ATOMIC_ACQUIRE);
    if (!(q0 & 1))
        return 0;
    gfd->qword[0] = q0;
    for (int k = 1; k < ncclGinProxyGfdQwords; k++) { /* the rest is on its way: 16-byte stores */
        uint64_t v;
        while (!((v = __atomic_load_n(&slot->qword[k], __ATOMIC_ACQUIRE)) & 1))
            ;
        gfd->qword[k] = v;
    }
    for (int k = 0; k < ncclGinProxyGfdQwords; k++)
        __atomic_store_n(&slot->qword[k], 0, __ATOMIC_RELAXED);
    gp->taken[pe]++;
    return 1;
}

void bt_gin_gfd_decode(const uint64_t q[8], struct bt_gin_gfd *f)
{
    f->op = (unsigned)(q[ncclGinProxyGfdHeader] >> 1) & 0x3f;
    f->size = q[ncclGinProxyGfdHeader] >> 7;
    f->src_off = q[ncclGinProxyGfdSrcOff] >> 1;
    f->src_handle = q[ncclGinProxyGfdSrcHandle] >> 1;
    f->dst_off = q[ncclGinProxyGfdDstOff] >> 1;
    f->dst_handle = q[ncclGinProxyGfdDstHandle] >> 1;
    /* inline: bits 8-39 of qword 1 and 40-55 of it, then bits 8-23 of qword 2 */
    f->inline_val = ((q[ncclGinProxyGfdInlineLow] >> 8) & 0xffffffffull) |
                    (((q[ncclGinProxyGfdInlineLow] >> 40) & 0xffffull) << 32) |
                    (((q[ncclGinProxyGfdInlineHigh] >> 8) & 0xffffull) << 48);
    uint64_t c = q[ncclGinProxyGfdCompletion], s = q[ncclGinProxyGfdSignalVal];
    f->counter = (uint32_t)((c >> 8) & 0xffff);
    f->signal = (uint32_t)((c >> 24) & 0xffff);
    f->signal_val =
        ((c >> 40) & 0xffff) | (((s >> 8) & 0xffff) << 16) | (((s >> 24) & 0xffffffffull) << 32);
}

/* Carry one descriptor to rank pe; its bytes have left the source when it returns. */
static bt_status_t serve(struct bt_gin_proxy *gp, int pe, const struct bt_gin_gfd *f)
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
            signal_add(gp, f->signal, add, gp->rank);
        return BT_OK;
    }
    /* to a peer: through the staging buffer, a chunk at a time; the last raises the signal */
    uint64_t off = 0;
    do {
        uint64_t n = f->size - off < BT_RMA_NET_CHUNK ? f->size - off : BT_RMA_NET_CHUNK;
        struct bt_rma_msg m = {.win = (uint32_t)f->dst_handle,
                               .offset = f->dst_off + off,
                               .bytes = n,
                               .signal = f->signal,
                               .signal_add = add};
        m.flags =
            (n ? BT_RMA_MSG_DATA : 0) | (has_signal && off + n == f->size ? BT_RMA_MSG_SIGNAL : 0);
        if (n && src == (const char *)&inline_val)
            memcpy(gp->stage_h, src, n);
        else if (n)
            BT_CHECK(bt_device_copy_wait(gp->stage_d, src + off, n, gp->stream));
        if (m.flags)
            BT_CHECK(bt_rma_net_put(gp->link, pe, &m, gp->stage_h));
        off += n;
    } while (off < f->size);
    return BT_OK;
}

static void *gin_main(void *arg)
{
    struct bt_gin_proxy *gp = arg;
    bt_status_t st = bt_device_set(gp->cfg.dev);
    if (st != BT_OK)
        fail(gp, st);
    bt_device_thread_capture_relaxed(); /* its copies while the application captures a graph */
    uint64_t last = bt_time_ns();
    while (!atomic_load_explicit(&gp->stop, memory_order_acquire)) {
        int n = 0;
        for (int pe = 0; pe < gp->nranks; pe++) {
            ncclGinProxyGfd_t g;
            while (take(gp, pe, &g)) {
                struct bt_gin_gfd f;
                bt_gin_gfd_decode(g.qword, &f);
                BT_TRACE(
                    BT_LOG_NET,
                    "rank %d: GIN descriptor %u to rank %d: op %#x, %llu bytes, src %llu+%llu, "
                    "dst %llu+%llu, signal %u (+%llu), counter %u",
                    gp->rank, gp->taken[pe] - 1, pe, f.op, (unsigned long long)f.size,
                    (unsigned long long)f.src_handle, (unsigned long long)f.src_off,
                    (unsigned long long)f.dst_handle, (unsigned long long)f.dst_off, f.signal,
                    (unsigned long long)f.signal_val, f.counter);
                st = serve(gp, pe, &f);
                if (st != BT_OK) {
                    BT_WARN("rank %d: a GIN put to rank %d (%llu bytes) could not be carried "
                            "(error %d): its signal never comes",
                            gp->rank, pe, (unsigned long long)f.size, (int)st);
                    fail(gp, st);
                }
                if ((f.op & ncclGinProxyOpWithCounter) && f.counter < gp->cfg.ncounters) {
                    __atomic_fetch_add(&gp->counters_h[f.counter], 1, __ATOMIC_RELEASE);
                } else if (f.op & ncclGinProxyOpWithCounter) {
                    BT_WARN("rank %d: a GIN put names counter %u of %u: not counted", gp->rank,
                            f.counter, gp->cfg.ncounters);
                    fail(gp, BT_ERR_INVALID_USAGE);
                }
                /* consumed: the device's credit and flush (done, or failed: never a hang) */
                __atomic_store_n(&gp->cis_h[pe], gp->taken[pe], __ATOMIC_RELEASE);
                n++;
            }
        }
        /* Land what peers put here too: the link's own thread naps long when idle (its
         * wake-ups cost CPU), and no host thread waits on a GIN signal, the device does. */
        if (gp->link)
            n += bt_rma_net_drive(gp->link);
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
    bt_device_free(gp->pis_d);
    bt_device_free(gp->ctx_d);
    bt_device_stream_destroy(gp->stream);
    bt_device_stream_destroy(gp->land_stream);
    free(gp->taken);
    free(gp);
}

static bt_status_t alloc_all(struct bt_gin_proxy *gp)
{
    size_t n = (size_t)gp->nranks;
    gp->taken = calloc(n, sizeof(uint32_t));
    if (!gp->taken)
        return BT_ERR_SYSTEM;
    BT_CHECK(bt_device_host_mapped((void **)&gp->queues_h, &gp->queues_d,
                                   sizeof(ncclGinProxyGfd_t) * gp->cfg.queue_size * n));
    BT_CHECK(bt_device_host_mapped((void **)&gp->cis_h, &gp->cis_d, sizeof(uint32_t) * n));
    BT_CHECK(bt_device_host_mapped((void **)&gp->signals_h, &gp->signals_d,
                                   sizeof(uint64_t) * (gp->cfg.nsignals ? gp->cfg.nsignals : 1)));
    BT_CHECK(bt_device_host_mapped((void **)&gp->counters_h, &gp->counters_d,
                                   sizeof(uint64_t) * (gp->cfg.ncounters ? gp->cfg.ncounters : 1)));
    BT_CHECK(bt_device_host_mapped((void **)&gp->stage_h, &gp->stage_d, BT_RMA_NET_CHUNK));
    BT_CHECK(bt_device_alloc_zeroed(&gp->pis_d, sizeof(uint32_t) * n));
    BT_CHECK(bt_device_stream_create(&gp->stream));
    BT_CHECK(bt_device_stream_create(&gp->land_stream));
    ncclGinProxyGpuCtx_t c;
    memset(&c, 0, sizeof(c));
    c.nranks = gp->nranks;
    c.queueSize = gp->cfg.queue_size;
    c.queues = gp->queues_d;
    c.pis = gp->pis_d;
    c.cis = gp->cis_d;
    c.counters = gp->counters_d;
    c.signals = gp->signals_d;
    BT_CHECK(bt_device_alloc_zeroed(&gp->ctx_d, sizeof(c)));
    return bt_device_upload(gp->ctx_d, &c, sizeof(c));
}

bt_status_t bt_gin_proxy_open(struct bt_transport_ctx *ctx, const struct bt_gin_proxy_cfg *cfg,
                              struct bt_gin_proxy **gp_p, void **dev_ctx)
{
    *gp_p = NULL;
    *dev_ctx = NULL;
    if (!cfg->queue_size || (cfg->queue_size & (cfg->queue_size - 1)))
        return BT_ERR_INTERNAL;
    struct bt_gin_proxy *gp = calloc(1, sizeof(*gp));
    if (!gp)
        return BT_ERR_SYSTEM;
    gp->ctx = ctx;
    gp->cfg = *cfg;
    gp->rank = ctx->rank;
    gp->nranks = ctx->nranks;
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
