/* One-sided calls on host memory (rma.h). */
#include "core/rma.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "core/liveness.h"
#include "core/window.h"
#include "util/hostmem.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define SIGNAL_STRIDE 64 /* bytes per counter: one cache line each */
#define WIN_SYMMETRIC 0x01

static _Atomic uint64_t *counter(char *board, int from)
{
    return (_Atomic uint64_t *)(board + (size_t)from * SIGNAL_STRIDE);
}

bt_status_t bt_rma_window_added(struct bt_comm *comm, struct bt_window *win)
{
    if (comm->signals || !win->mapped || win->ex != &bt_exec_host)
        return BT_OK;
    size_t bytes = (size_t)comm->nranks * SIGNAL_STRIDE;
    void *board = NULL;
    BT_CHECK(bt_hostmem_alloc(bytes, &board));
    memset(board, 0, bytes);
    comm->signal_seen = calloc((size_t)comm->nranks, sizeof(uint64_t));
    struct bt_window *sw = NULL;
    bt_status_t st = comm->signal_seen
                         ? bt_window_register_plain(comm, board, bytes, WIN_SYMMETRIC, &sw)
                         : BT_ERR_SYSTEM;
    if (st == BT_OK && !sw->mapped) {
        /* cannot be: the user's window of the same memory kind mapped a moment ago */
        BT_WARN("rank %d: the one-sided signal board did not map", comm->rank);
        st = BT_ERR_INTERNAL;
    }
    if (sw) { /* the comm's own: not on the user's list */
        comm->windows = sw->next;
        sw->next = NULL;
    }
    comm->signals = sw;
    if (st != BT_OK) {
        bt_rma_free(comm);
        if (!sw)
            bt_hostmem_free(board);
    }
    return st;
}

void bt_rma_free(struct bt_comm *comm)
{
    struct bt_window *sw = comm->signals;
    comm->signals = NULL;
    if (sw) {
        void *board = sw->base;
        sw->next = comm->windows; /* deregister finds it on the list */
        comm->windows = sw;
        bt_window_deregister(comm, sw);
        bt_hostmem_free(board);
    }
    free(comm->signal_seen);
    comm->signal_seen = NULL;
}

/* Why a one-sided call to `peer` cannot be served, or NULL when it can. */
static const char *unservable(const struct bt_comm *comm, const struct bt_window *win)
{
    if (win && win->ex != &bt_exec_host)
        return "the window is device memory (one-sided calls on GPU memory come with the "
               "device API)";
    if (win && !win->mapped)
        return "the window is not mapped here (register ncclMemAlloc memory with "
               "NCCL_WIN_COLL_SYMMETRIC, every rank on one host)";
    if (!comm->signals)
        return "no window of this communicator is mapped (register one with "
               "NCCL_WIN_COLL_SYMMETRIC, every rank on one host, first)";
    return NULL;
}

bt_status_t bt_rma_put(struct bt_comm *comm, const void *src, size_t bytes, int peer,
                       struct bt_window *win, size_t offset, const char *fn)
{
    const char *why = unservable(comm, win);
    if (why) {
        BT_WARN("%s: rank %d to rank %d: %s", fn, comm->rank, peer, why);
        return BT_ERR_INVALID_USAGE;
    }
    if (win) {
        size_t size = win->peer_size[peer];
        if (offset > size || bytes > size - offset) {
            BT_WARN("%s: %zu bytes at offset %zu do not fit rank %d's window of %zu bytes", fn,
                    bytes, offset, peer, size);
            return BT_ERR_INVALID_ARG;
        }
        if (bytes)
            memcpy(win->peers[peer].base + offset, src, bytes);
    }
    /* the data before the signal: a waiter that sees the count sees the bytes */
    atomic_fetch_add_explicit(counter(comm->signals->peers[peer].base, comm->rank), 1,
                              memory_order_release);
    return BT_OK;
}

/* Whether every wait is met; consumes nothing. */
static int all_met(struct bt_comm *comm, int n, const int *peers, const uint64_t *want, int *late)
{
    char *mine = comm->signals->peers[comm->rank].base;
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(counter(mine, peers[i]), memory_order_acquire) < want[i]) {
            *late = peers[i];
            return 0;
        }
    return 1;
}

bt_status_t bt_rma_wait(struct bt_comm *comm, int n, const int *peers, const int *ops)
{
    const char *why = unservable(comm, NULL);
    if (why) {
        BT_WARN("ncclWaitSignal: rank %d: %s", comm->rank, why);
        return BT_ERR_INVALID_USAGE;
    }
    uint64_t *want = calloc((size_t)n, sizeof(uint64_t));
    if (!want)
        return BT_ERR_SYSTEM;
    /* several descriptors may name one peer: each adds to what that peer owes */
    for (int i = 0; i < n; i++) {
        want[i] = comm->signal_seen[peers[i]];
        for (int j = 0; j <= i; j++)
            if (peers[j] == peers[i])
                want[i] += (uint64_t)ops[j];
    }
    uint64_t start = bt_time_ns(), timeout = (uint64_t)bt_param_timeout() * 1000000000ull;
    bt_status_t st = BT_OK;
    int late = -1;
    for (unsigned spins = 0; !all_met(comm, n, peers, want, &late); spins++) {
        if (spins < 1000)
            continue;
        if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) {
            st = BT_ERR_REMOTE;
            break;
        }
        if (bt_liveness_report_down(comm, late, "ncclWaitSignal", 0, 0)) {
            st = BT_ERR_REMOTE;
            break;
        }
        if (bt_time_ns() - start > timeout) {
            BT_WARN("ncclWaitSignal: rank %d waited %d s for a signal from rank %d (TIMEOUT): "
                    "did it put or signal as many times as waited for?",
                    comm->rank, (int)bt_param_timeout(), late);
            st = BT_ERR_REMOTE;
            break;
        }
        /* past the spin: sleep a little, longer the longer it waits (at most 1 ms) */
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
