/* One-sided calls (rma.h). */
#include "core/rma.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "core/liveness.h"
#include "core/rma_gpu.h"
#include "core/window.h"
#include "exec/exec.h"
#include "transport/rma_net.h"
#include "transport/transport.h"
#include "util/hostmem.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define SIGNAL_STRIDE BT_CACHELINE /* bytes per counter: a line of its own each */
#define NO_WINDOW UINT32_MAX       /* a signal alone */

static _Atomic uint64_t *counter(char *board, int from)
{
    return (_Atomic uint64_t *)(board + (size_t)from * SIGNAL_STRIDE);
}

/* The one-sided link's thread: a message from rank src lands in this rank's window of its
 * number (looked up under the list's lock: the owner may register meanwhile), and the put's
 * last one raises src's counter after the bytes. */
static void land(void *arg, int src, const struct bt_rma_msg *m, const void *payload)
{
    struct bt_comm *comm = arg;
    if (m->flags & BT_RMA_MSG_DATA) {
        pthread_mutex_lock(&comm->win_lock);
        struct bt_window *w = comm->windows;
        while (w && w->id != m->win)
            w = w->next;
        if (w && m->offset <= w->size && m->bytes <= w->size - m->offset)
            memcpy(w->base + m->offset, payload, m->bytes);
        else
            BT_WARN("rank %d: a put from rank %d to window #%u (%llu bytes at %llu) has no "
                    "place here (deregistered?): dropped",
                    comm->rank, src, m->win, (unsigned long long)m->bytes,
                    (unsigned long long)m->offset);
        pthread_mutex_unlock(&comm->win_lock);
    }
    if (m->flags & BT_RMA_MSG_SIGNAL)
        atomic_fetch_add_explicit(counter(comm->board, src), 1, memory_order_release);
}

/* The mapped way: a board every rank maps, registered as a window of the comm's own. */
static bt_status_t board_mapped(struct bt_comm *comm)
{
    size_t bytes = (size_t)comm->nranks * SIGNAL_STRIDE;
    void *board = NULL;
    BT_CHECK(bt_hostmem_alloc(bytes, &board));
    memset(board, 0, bytes);
    struct bt_window *sw = NULL;
    bt_status_t st = bt_window_register_plain(comm, board, bytes, BT_WIN_SYMMETRIC, &sw);
    if (st == BT_OK && !sw->mapped) {
        /* cannot be: the user's window of the same memory kind mapped a moment ago */
        BT_WARN("rank %d: the one-sided signal board did not map", comm->rank);
        st = BT_ERR_INTERNAL;
    }
    if (sw) { /* the comm's own: not on the user's list */
        pthread_mutex_lock(&comm->win_lock);
        comm->windows = sw->next;
        pthread_mutex_unlock(&comm->win_lock);
        sw->next = NULL;
        comm->signals = sw;
        comm->board = sw->base;
    } else {
        bt_hostmem_free(board);
    }
    return st;
}

/* The network way: a private board and a link to every other rank (every rank alike: the
 * comm spans hosts, so no window maps). */
static bt_status_t board_linked(struct bt_comm *comm)
{
    comm->board = calloc((size_t)comm->nranks, SIGNAL_STRIDE);
    if (!comm->board)
        return BT_ERR_SYSTEM;
    return bt_rma_net_open(&comm->tctx, &(struct bt_rma_net_opts){0}, land, comm, &comm->rma_net);
}

bt_status_t bt_rma_window_added(struct bt_comm *comm, struct bt_window *win)
{
    if (comm->board || comm->rma_gpu || comm->nranks < 2 || comm->config.num_rma_ctx == 0)
        return BT_OK;
    bt_status_t st = BT_OK;
    if (comm->cuda_dev >= 0 && win->ex == &bt_exec_cuda && bt_param_rma_gpu()) {
        if (comm->rma_gpu_failed)
            return BT_OK; /* not again: a rank whose setup worked would not join it */
        struct bt_rma_gpu *g = NULL;
        st = bt_rma_gpu_open(comm, &g); /* WARNs why it failed */
        atomic_store_explicit(&comm->rma_gpu, g, memory_order_release);
        /* the window itself is fine: it is registered, and the one-sided calls on this
         * communicator are refused, naming this */
        comm->rma_gpu_failed = st != BT_OK;
        return BT_OK;
    }
    comm->signal_seen = calloc((size_t)comm->nranks, sizeof(uint64_t));
    if (!comm->signal_seen)
        return BT_ERR_SYSTEM;
    if (win->mapped && win->ex == &bt_exec_host)
        st = board_mapped(comm);
    else if (comm->local_ranks < comm->nranks && comm->cuda_dev < 0)
        st = board_linked(comm);
    else { /* one host, a window that does not map: nothing to serve puts with yet */
        free(comm->signal_seen);
        comm->signal_seen = NULL;
        return BT_OK;
    }
    if (st != BT_OK)
        bt_rma_free(comm);
    return st;
}

void bt_rma_abort(struct bt_comm *comm)
{
    struct bt_rma_gpu *g = atomic_load_explicit(&comm->rma_gpu, memory_order_acquire);
    if (g)
        bt_rma_gpu_abort(g);
}

void bt_rma_free(struct bt_comm *comm)
{
    bt_rma_gpu_close(atomic_exchange_explicit(&comm->rma_gpu, NULL, memory_order_acq_rel));
    bt_rma_net_close(comm->rma_net); /* no more landings */
    comm->rma_net = NULL;
    struct bt_window *sw = comm->signals;
    comm->signals = NULL;
    if (sw) {
        void *board = sw->base;
        pthread_mutex_lock(&comm->win_lock);
        sw->next = comm->windows; /* deregister finds it on the list */
        comm->windows = sw;
        pthread_mutex_unlock(&comm->win_lock);
        bt_window_deregister(comm, sw);
        bt_hostmem_free(board);
    } else {
        free(comm->board);
    }
    comm->board = NULL;
    free(comm->signal_seen);
    comm->signal_seen = NULL;
}

/* Why a one-sided call to `peer` cannot be served, or NULL when it can. */
static const char *unservable(const struct bt_comm *comm, const struct bt_window *win, int peer)
{
    if (comm->rma_gpu)
        return NULL; /* every rank linked, any window of the comm */
    if (win && win->ex != &bt_exec_host)
        return "the window is device memory, and this communicator's one-sided calls are set "
               "up for host memory (its first symmetric window was host memory)";
    if (comm->cuda_dev >= 0 && !comm->board && !bt_param_rma_gpu())
        return "one-sided calls on GPU communicators are off (RMA_GPU=0; docs/ENV.md)";
    if (comm->cuda_dev >= 0 && !comm->board && comm->rma_gpu_failed)
        return "this communicator's one-sided links could not be made at its first GPU window's "
               "registration (the WARN then says why)";
    if (comm->cuda_dev >= 0 && !comm->board)
        return "no GPU window of this communicator is registered yet (one-sided calls on a GPU "
               "communicator start with its first: ncclCommWindowRegister)";
    if (!comm->board)
        return "no window of this communicator serves one-sided calls (register one with "
               "NCCL_WIN_COLL_SYMMETRIC first: ncclMemAlloc memory when every rank is on one "
               "host)";
    if (comm->rma_net)
        return peer < 0 || bt_rma_net_linked(comm->rma_net, peer) || peer == comm->rank
                   ? NULL
                   : "the peer is not linked";
    if (win && !win->mapped)
        return "the window is not mapped here (register ncclMemAlloc memory with "
               "NCCL_WIN_COLL_SYMMETRIC, every rank on one host)";
    return NULL;
}

bt_status_t bt_rma_put(struct bt_comm *comm, const void *src, size_t bytes, int peer,
                       struct bt_window *win, size_t offset, void *stream, const char *fn)
{
    const char *why = unservable(comm, win, peer);
    if (why) {
        BT_WARN("%s: rank %d to rank %d: %s", fn, comm->rank, peer, why);
        return BT_ERR_INVALID_USAGE;
    }
    size_t size = win ? win->peer_size[peer] : 0;
    if (win && (offset > size || bytes > size - offset)) {
        BT_WARN("%s: %zu bytes at offset %zu do not fit rank %d's window of %zu bytes", fn, bytes,
                offset, peer, size);
        return BT_ERR_INVALID_ARG;
    }
    if (comm->rma_gpu)
        return bt_rma_gpu_put(comm->rma_gpu, src, bytes, peer, win, offset, stream);
    if (comm->rma_net && peer != comm->rank) {
        struct bt_rma_msg m = {.win = win ? win->id : NO_WINDOW,
                               .flags = BT_RMA_MSG_SIGNAL | (win ? BT_RMA_MSG_DATA : 0u),
                               .offset = offset,
                               .bytes = bytes};
        return bt_rma_net_put(comm->rma_net, peer, &m, src);
    }
    /* mapped (or to this rank itself): straight into the peer's memory, then the signal; a
     * waiter that sees the count sees the bytes */
    if (win && bytes)
        memcpy((comm->signals ? win->peers[peer].base : win->base) + offset, src, bytes);
    char *board = comm->signals ? comm->signals->peers[peer].base : comm->board;
    atomic_fetch_add_explicit(counter(board, comm->rank), 1, memory_order_release);
    return BT_OK;
}

/* Whether every wait is met; consumes nothing. */
static int all_met(struct bt_comm *comm, int n, const int *peers, const uint64_t *want, int *late)
{
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(counter(comm->board, peers[i]), memory_order_acquire) < want[i]) {
            *late = peers[i];
            return 0;
        }
    return 1;
}

bt_status_t bt_rma_wait(struct bt_comm *comm, int n, const int *peers, const int *ops, void *stream)
{
    const char *why = unservable(comm, NULL, -1);
    if (why) {
        BT_WARN("ncclWaitSignal: rank %d: %s", comm->rank, why);
        return BT_ERR_INVALID_USAGE;
    }
    if (comm->rma_gpu)
        return bt_rma_gpu_wait(comm->rma_gpu, n, peers, ops, stream);
    uint64_t *want = calloc((size_t)n, sizeof(uint64_t));
    if (!want)
        return BT_ERR_SYSTEM;
    /* several descriptors may name one peer: each adds to what that peer owes */
    for (int i = 0; i < n; i++)
        want[i] = comm->signal_seen[peers[i]] + bt_rma_owed(i, peers, ops);
    uint64_t start = bt_time_ns(), timeout = (uint64_t)bt_param_timeout() * 1000000000ull;
    uint64_t check = start; /* the peer's liveness, asked every BT_PEER_CHECK_NS */
    bt_status_t st = BT_OK;
    int late = -1;
    for (unsigned spins = 0; !all_met(comm, n, peers, want, &late); spins++) {
        if (comm->rma_net && bt_rma_net_drive(comm->rma_net))
            spins = 0; /* something landed: look again at once */
        if (spins < 1000)
            continue;
        uint64_t now = bt_time_ns(), waited = now - start;
        if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) {
            st = BT_ERR_REMOTE;
            break;
        }
        if (now >= check) {
            check = now + BT_PEER_CHECK_NS;
            if (bt_liveness_report_down(comm, late, "ncclWaitSignal", 0, 0) ||
                bt_liveness_report_lost(comm, late, "ncclWaitSignal", 0, waited)) {
                st = BT_ERR_REMOTE;
                break;
            }
        }
        if (waited > timeout) {
            BT_WARN("ncclWaitSignal: rank %d waited %d s for a signal from rank %d (TIMEOUT): "
                    "did it put or signal as many times as waited for?",
                    comm->rank, (int)bt_param_timeout(), late);
            st = BT_ERR_REMOTE;
            break;
        }
        /* past the spin: yield a while, then sleep a little (at most 1 ms) */
        struct timespec ts = {0, spins < 10000 ? 1000 : 1000000};
        if (spins < 2000)
            sched_yield();
        else
            nanosleep(&ts, NULL);
    }
    if (st == BT_OK)
        for (int i = 0; i < n; i++)
            if (want[i] > comm->signal_seen[peers[i]])
                comm->signal_seen[peers[i]] = want[i];
    free(want);
    return st;
}
