/*
 * One-sided calls (NCCL 2.29's ncclPutSignal, ncclSignal, ncclWaitSignal) on host memory. The
 * target takes no part, as with NCCL's puts; each rank's signal board holds one counter per
 * rank ([nranks], BT_CACHELINE apart), which a put raises after its data and a wait reads.
 * The first symmetric window registered decides the way, the same on every rank:
 *   - mapped (every rank on this host, the window mapped: core/window.c, ncclMemAlloc
 *     memory): the board is a window of the communicator's own that every rank maps; a put
 *     copies straight into the peer's window as mapped here, then adds to the peer's counter
 *     (release; the waiter's acquire sees the bytes);
 *   - linked (the ranks span hosts, host communicator): a private board, and the one-sided
 *     link over the network (transport/rma_net.h) to every other rank; its thread lands each
 *     put in this rank's window of that number, and the put's last message raises the
 *     counter; a waiting owner lands for itself meanwhile.
 * A GPU communicator serves them in stream order instead (core/rma_gpu.h), from its first
 * GPU window on. A host communicator on one host whose windows do not map is refused, naming
 * why.
 */
#ifndef BT_CORE_RMA_H
#define BT_CORE_RMA_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

struct bt_comm;
struct bt_window;

/* A window has just been registered: if it mapped and the comm has no signal board yet,
 * register the board (collective: every rank decides alike, as `mapped` is agreed). */
bt_status_t bt_rma_window_added(struct bt_comm *comm, struct bt_window *win);

/* The board's end (bt_window_free_all). */
void bt_rma_free(struct bt_comm *comm);

/* Put `bytes` of `src` at `offset` of rank `peer`'s part of window `win`, then signal it
 * (bytes may be 0: ncclSignal passes win NULL). Host memory: done on return; a GPU
 * communicator: queued on `stream`. caller: the comm's owner. */
bt_status_t bt_rma_put(struct bt_comm *comm, const void *src, size_t bytes, int peer,
                       struct bt_window *win, size_t offset, void *stream, const char *fn);

/* Wait for ops[i] more signals from peers[i], each i; the counts are consumed. Host memory:
 * on return (fails naming the peer after TIMEOUT, when the peer is down, or on an abort); a
 * GPU communicator: `stream` waits. */
bt_status_t bt_rma_wait(struct bt_comm *comm, int n, const int *peers, const int *ops,
                        void *stream);

/* What descriptors 0..i of a wait ask of peer peers[i] together (several may name one peer):
 * added to what that peer's earlier signals were consumed, descriptor i's target. */
static inline uint64_t bt_rma_owed(int i, const int *peers, const int *ops)
{
    uint64_t owed = 0;
    for (int j = 0; j <= i; j++)
        if (peers[j] == peers[i])
            owed += (uint64_t)ops[j];
    return owed;
}

/* The comm is aborted: streams waiting on its signals go on. Any thread. */
void bt_rma_abort(struct bt_comm *comm);

#endif
