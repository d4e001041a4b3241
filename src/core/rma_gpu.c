/* One-sided calls on a GPU communicator, in stream order (rma_gpu.h). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "core/rma_gpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "core/rma.h"
#include "core/window.h"
#include "device/device.h"
#include "transport/rma_net.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define STRIDE BT_CACHELINE    /* bytes per counter on the board */
#define NO_WINDOW UINT32_MAX   /* a signal alone */
#define ABORT_RAISE (1u << 30) /* what an abort adds to every counter */
#define CLOSE_POLL_NS 1000000  /* close's look at the host functions still queued */
#define POOL_START 16 /* chunks made at open (4 MB): puts up to that size allocate nothing */

/* Pinned host memory a put's bytes wait in (BT_RMA_NET_CHUNK). */
struct chunk {
    void *h;
    struct chunk *next;
};

/* One message to send when its stream gets there (a host function hands it over). */
struct job {
    struct bt_rma_gpu *g;
    int peer;
    struct bt_rma_msg m;
    struct chunk *c; /* its bytes; NULL: a signal alone */
    struct job *next;
};

struct bt_rma_gpu {
    struct bt_comm *comm;
    int rank, nranks, dev;
    char *board_h;  /* [nranks] 32-bit counters, STRIDE apart: what rank r's puts raised */
    void *board_d;  /* ... as the device addresses them */
    uint32_t *seen; /* [nranks]: signals consumed by waits queued so far (the owner's) */
    struct bt_rma_net *link;
    void *land_stream; /* the link thread's copies into windows */
    pthread_t poster;
    int running;
    pthread_mutex_t lock; /* the queue, the free chunks, stop */
    pthread_cond_t cond;
    struct job *head, *tail;
    struct chunk *free_chunks;
    int stop;
    unsigned char *failed; /* [nranks]: a put to it failed; later ones are dropped (poster) */
    _Atomic int inflight;  /* host functions queued and not yet run */
    _Atomic int aborted;   /* the counters were raised (once: twice would wrap them) */
    _Atomic int dead;      /* close gave up on the queued host functions: they free their jobs */
};

static __thread int land_dev = -1; /* the device the landing thread has set */

static _Atomic uint32_t *counter(const struct bt_rma_gpu *g, int from)
{
    return (_Atomic uint32_t *)(g->board_h + (size_t)from * STRIDE);
}

/* A chunk from the pool, or a new one (a put never waits for a stream). */
static bt_status_t take_chunk(struct bt_rma_gpu *g, struct chunk **c_p)
{
    pthread_mutex_lock(&g->lock);
    struct chunk *c = g->free_chunks;
    if (c)
        g->free_chunks = c->next;
    pthread_mutex_unlock(&g->lock);
    if (!c) {
        c = calloc(1, sizeof(*c));
        void *d;
        if (!c || bt_device_host_mapped(&c->h, &d, BT_RMA_NET_CHUNK) != BT_OK) {
            free(c);
            return BT_ERR_SYSTEM;
        }
    }
    *c_p = c;
    return BT_OK;
}

static void give_chunk(struct bt_rma_gpu *g, struct chunk *c)
{
    pthread_mutex_lock(&g->lock);
    c->next = g->free_chunks;
    g->free_chunks = c;
    pthread_mutex_unlock(&g->lock);
}

/* A host function: the stream has reached the job (its bytes are in its chunk). A signal to
 * this rank itself is raised here (its copy is done); the rest goes to the poster. */
static void hand_over(void *arg)
{
    struct job *j = arg;
    struct bt_rma_gpu *g = j->g;
    if (atomic_load_explicit(&g->dead, memory_order_acquire)) { /* nobody sends it now */
        free(j); /* (its chunk stays with g, which is never freed now) */
    } else if (j->peer == g->rank) {
        uint32_t v = atomic_fetch_add_explicit(counter(g, g->rank), 1, memory_order_release);
        BT_TRACE(BT_LOG_P2P, "rank %d: one-sided signal to itself: counter %u", g->rank, v + 1);
        free(j);
    } else {
        BT_TRACE(BT_LOG_P2P, "rank %d: stream reached a put to rank %d (%llu bytes at %llu%s)",
                 g->rank, j->peer, (unsigned long long)j->m.bytes, (unsigned long long)j->m.offset,
                 (j->m.flags & BT_RMA_MSG_SIGNAL) ? ", signal" : "");
        pthread_mutex_lock(&g->lock);
        if (g->tail)
            g->tail->next = j;
        else
            g->head = j;
        g->tail = j;
        pthread_cond_signal(&g->cond);
        pthread_mutex_unlock(&g->lock);
    }
    atomic_fetch_sub_explicit(&g->inflight, 1, memory_order_release);
}

/* The poster: sends the jobs in the order their streams handed them over. */
static void *poster_main(void *arg)
{
    struct bt_rma_gpu *g = arg;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (!g->head && !g->stop)
            pthread_cond_wait(&g->cond, &g->lock);
        struct job *j = g->head;
        if (!j)
            break; /* stopped, and nothing left */
        g->head = j->next;
        if (!g->head)
            g->tail = NULL;
        pthread_mutex_unlock(&g->lock);
        /* after a failed message to a peer nothing more goes there: a later chunk's signal
         * would count a put with a hole */
        bt_status_t st = g->failed[j->peer]
                             ? BT_ERR_REMOTE
                             : bt_rma_net_put(g->link, j->peer, &j->m, j->c ? j->c->h : NULL);
        if (st != BT_OK && !g->failed[j->peer]) {
            BT_WARN("rank %d: a one-sided put to rank %d (%llu bytes) could not be sent (error "
                    "%d): no later put or signal goes to it",
                    g->rank, j->peer, (unsigned long long)j->m.bytes, (int)st);
            g->failed[j->peer] = 1;
            bt_comm_set_async_error(g->comm, st);
        }
        BT_TRACE(BT_LOG_P2P, "rank %d: put to rank %d (%llu bytes) sent: %d", g->rank, j->peer,
                 (unsigned long long)j->m.bytes, (int)st);
        if (j->c)
            give_chunk(g, j->c);
        free(j);
        pthread_mutex_lock(&g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* The link's thread: a message from rank src lands in this rank's window of its number (a
 * copy waited for), and the put's last one raises src's counter after the bytes. */
static void land(void *arg, int src, const struct bt_rma_msg *m, const void *payload)
{
    struct bt_rma_gpu *g = arg;
    if (m->flags & BT_RMA_MSG_DATA) {
        bt_status_t st = BT_OK;
        if (land_dev != g->dev) { /* this thread's first: its device, and its copies allowed
                                   * while another thread captures a graph */
            st = bt_device_set(g->dev);
            bt_device_thread_capture_relaxed();
            land_dev = st == BT_OK ? g->dev : -1;
        }
        struct bt_comm *comm = g->comm;
        pthread_mutex_lock(&comm->win_lock);
        struct bt_window *w = comm->windows;
        while (w && w->id != m->win)
            w = w->next;
        if (!w || m->offset > w->size || m->bytes > w->size - m->offset) {
            BT_WARN("rank %d: a put from rank %d to window #%u (%llu bytes at %llu) has no "
                    "place here (deregistered?): dropped",
                    g->rank, src, m->win, (unsigned long long)m->bytes,
                    (unsigned long long)m->offset);
            st = BT_ERR_INVALID_USAGE;
        } else if (st == BT_OK) {
            st = bt_device_copy_wait(w->base + m->offset, payload, m->bytes, g->land_stream);
        }
        pthread_mutex_unlock(&comm->win_lock);
        if (st != BT_OK) {
            bt_comm_set_async_error(comm, st);
            return; /* no signal for bytes that did not land: the waiter's stream holds */
        }
    }
    if (m->flags & BT_RMA_MSG_SIGNAL) {
        uint32_t v = atomic_fetch_add_explicit(counter(g, src), 1, memory_order_release);
        BT_TRACE(BT_LOG_P2P, "rank %d: %llu bytes from rank %d landed; its counter %u", g->rank,
                 (unsigned long long)m->bytes, src, v + 1);
    }
}

static void release(struct bt_rma_gpu *g)
{
    if (atomic_load_explicit(&g->aborted, memory_order_acquire)) {
        /* after an abort a stream may still be held (another communicator's wait, a kernel)
         * and cudaFreeHost waits for the whole device: the pinned memory is left */
        BT_INFO(BT_LOG_INIT, "rank %d: one-sided calls' pinned memory left after the abort",
                g->rank);
        free(g->failed);
        free(g->seen);
        return;
    }
    while (g->free_chunks) {
        struct chunk *c = g->free_chunks;
        g->free_chunks = c->next;
        bt_device_host_free(c->h);
        free(c);
    }
    bt_device_stream_destroy(g->land_stream);
    bt_device_host_free(g->board_h);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g->failed);
    free(g->seen);
    free(g);
}

bt_status_t bt_rma_gpu_open(struct bt_comm *comm, struct bt_rma_gpu **g_p)
{
    *g_p = NULL;
    struct bt_rma_gpu *g = calloc(1, sizeof(*g));
    if (!g)
        return BT_ERR_SYSTEM;
    g->comm = comm;
    g->rank = comm->rank;
    g->nranks = comm->nranks;
    g->dev = comm->cuda_dev;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->seen = calloc((size_t)g->nranks, sizeof(uint32_t));
    g->failed = calloc((size_t)g->nranks, 1);
    bt_status_t st = g->seen && g->failed ? BT_OK : BT_ERR_SYSTEM;
    int prev = bt_device_get();
    if (st == BT_OK)
        st = bt_device_set(g->dev); /* the landing stream on the communicator's device */
    if (st == BT_OK)
        st = bt_device_stream_wait_check(); /* the driver has cuStreamWaitValue32 */
    if (st == BT_OK)
        st = bt_device_host_mapped((void **)&g->board_h, &g->board_d, (size_t)g->nranks * STRIDE);
    if (st == BT_OK)
        st = bt_device_stream_create(&g->land_stream);
    struct chunk *made[POOL_START] = {NULL}; /* pinned now, not under a put */
    for (int i = 0; i < POOL_START && st == BT_OK; i++)
        st = take_chunk(g, &made[i]);
    for (int i = 0; i < POOL_START; i++)
        if (made[i])
            give_chunk(g, made[i]);
    /* collective: every rank reaches it at the same registration, failed or not */
    bt_status_t lst =
        bt_rma_net_open(&comm->tctx, &(struct bt_rma_net_opts){.pinned = 1}, land, g, &g->link);
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st == BT_OK)
        st = lst;
    if (st == BT_OK) {
        if (pthread_create(&g->poster, NULL, poster_main, g) == 0) {
            g->running = 1;
            if (bt_param_set_thread_name())
                pthread_setname_np(g->poster, "baton RMA post");
        } else {
            st = BT_ERR_SYSTEM;
        }
    }
    if (st != BT_OK) {
        BT_WARN("rank %d: one-sided calls on GPU memory could not be set up (error %d)", comm->rank,
                (int)st);
        bt_rma_net_close(g->link);
        release(g);
        return st;
    }
    *g_p = g;
    return BT_OK;
}

/* Hand job j over when the stream gets there. */
static bt_status_t queue(struct bt_rma_gpu *g, struct job *j, void *stream)
{
    atomic_fetch_add_explicit(&g->inflight, 1, memory_order_relaxed);
    bt_status_t st = bt_device_host_func(stream, hand_over, j);
    if (st != BT_OK)
        atomic_fetch_sub_explicit(&g->inflight, 1, memory_order_relaxed);
    return st;
}

/* A CUDA graph would replay a host function whose job is gone: refused. */
static bt_status_t not_captured(void *stream, const char *fn)
{
    if (!bt_device_stream_capturing(stream))
        return BT_OK;
    BT_WARN("%s: the stream is being captured into a CUDA graph: Baton's one-sided calls on GPU "
            "memory run in stream order only, not in graphs",
            fn);
    return BT_ERR_INVALID_USAGE;
}

bt_status_t bt_rma_gpu_put(struct bt_rma_gpu *g, const void *src, size_t bytes, int peer,
                           const struct bt_window *win, size_t offset, void *stream)
{
    BT_CHECK(not_captured(stream, win ? "ncclPutSignal" : "ncclSignal"));
    if (peer == g->rank) { /* a copy on the stream, then the signal */
        if (bytes)
            BT_CHECK(bt_device_copy_async(win->base + offset, src, bytes, stream));
        struct job *j = calloc(1, sizeof(*j));
        if (!j)
            return BT_ERR_SYSTEM;
        j->g = g;
        j->peer = peer;
        bt_status_t st = queue(g, j, stream);
        if (st != BT_OK)
            free(j);
        return st;
    }
    size_t off = 0;
    do { /* a chunk at a time; the last one carries the signal */
        size_t n = bytes - off < BT_RMA_NET_CHUNK ? bytes - off : BT_RMA_NET_CHUNK;
        struct job *j = calloc(1, sizeof(*j));
        if (!j)
            return BT_ERR_SYSTEM;
        j->g = g;
        j->peer = peer;
        j->m.win = win ? win->id : NO_WINDOW;
        j->m.offset = offset + off;
        j->m.bytes = n;
        j->m.flags = (n ? BT_RMA_MSG_DATA : 0u) | (off + n == bytes ? BT_RMA_MSG_SIGNAL : 0u);
        bt_status_t st = BT_OK;
        if (n) {
            st = take_chunk(g, &j->c);
            if (st == BT_OK)
                st = bt_device_copy_async(j->c->h, (const char *)src + off, n, stream);
        }
        if (st == BT_OK)
            st = queue(g, j, stream);
        if (st != BT_OK) {
            if (j->c)
                give_chunk(g, j->c);
            free(j);
            return st;
        }
        off += n;
    } while (off < bytes);
    return BT_OK;
}

bt_status_t bt_rma_gpu_wait(struct bt_rma_gpu *g, int n, const int *peers, const int *ops,
                            void *stream)
{
    BT_CHECK(not_captured(stream, "ncclWaitSignal"));
    uint32_t *want = malloc(sizeof(uint32_t) * (size_t)n);
    if (!want)
        return BT_ERR_SYSTEM;
    for (int i = 0; i < n; i++) /* 32-bit counters: compared cyclically */
        want[i] = g->seen[peers[i]] + (uint32_t)bt_rma_owed(i, peers, ops);
    bt_status_t st = BT_OK;
    for (int i = 0; i < n && st == BT_OK; i++) {
        st = bt_device_stream_wait_u32(stream, (char *)g->board_d + (size_t)peers[i] * STRIDE,
                                       want[i]);
        /* queued: what it waits for is consumed (a later descriptor's failure keeps it) */
        if (st == BT_OK && (int32_t)(want[i] - g->seen[peers[i]]) > 0)
            g->seen[peers[i]] = want[i];
        BT_TRACE(BT_LOG_P2P, "rank %d: stream waits for rank %d's counter >= %u (now %u): %d",
                 g->rank, peers[i], want[i], atomic_load(counter(g, peers[i])), (int)st);
    }
    free(want);
    return st;
}

void bt_rma_gpu_abort(struct bt_rma_gpu *g)
{
    if (atomic_exchange_explicit(&g->aborted, 1, memory_order_acq_rel))
        return; /* raised already (a revoke, then the abort) */
    for (int r = 0; r < g->nranks; r++)
        atomic_fetch_add_explicit(counter(g, r), ABORT_RAISE, memory_order_release);
}

void bt_rma_gpu_close(struct bt_rma_gpu *g)
{
    if (!g)
        return;
    /* the host functions still queued use g: wait for them (a stream held by a wait the
     * abort released, or by the user's work, gets TIMEOUT) */
    uint64_t start = bt_time_ns(), limit = (uint64_t)bt_param_timeout() * 1000000000ull;
    while (atomic_load_explicit(&g->inflight, memory_order_acquire) > 0) {
        if (bt_time_ns() - start > limit) {
            BT_WARN("rank %d: %d one-sided calls are still queued on streams that did not get "
                    "to them in %d s (TIMEOUT): they will not be sent",
                    g->rank, atomic_load(&g->inflight), (int)bt_param_timeout());
            atomic_store_explicit(&g->dead, 1, memory_order_release);
            break; /* the poster and the link stop; g stays for the late host functions */
        }
        struct timespec ts = {0, CLOSE_POLL_NS};
        nanosleep(&ts, NULL);
    }
    if (g->running) {
        pthread_mutex_lock(&g->lock);
        g->stop = 1;
        pthread_cond_signal(&g->cond);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->poster, NULL); /* after it has sent what was handed over */
    }
    bt_rma_net_close(g->link); /* no more landings after this */
    if (!atomic_load_explicit(&g->dead, memory_order_acquire))
        release(g);
}
