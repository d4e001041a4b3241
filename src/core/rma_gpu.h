/*
 * One-sided calls (ncclPutSignal, ncclSignal, ncclWaitSignal: core/rma.h) on a GPU
 * communicator, in stream order and without a kernel:
 *   - a put copies its bytes out of the source on the caller's stream into pinned chunks
 *     (BT_RMA_NET_CHUNK each), then a host function (cudaLaunchHostFunc) hands each chunk to
 *     the communicator's poster thread, which sends it over the one-sided link
 *     (transport/rma_net.h) to the target; the stream goes on as soon as its bytes are in
 *     the chunks, so the source may be reused in stream order, as NCCL promises. Chunks come
 *     from a pool (16 made at open) that grows rather than waits for a stream;
 *   - the target's link thread copies the bytes into its window (a copy it waits for) and only
 *     then raises the sender's counter on the signal board: 32-bit counters in pinned host
 *     memory the device maps, one per source rank;
 *   - a wait is cuStreamWaitValue32 on the stream: the stream holds until the counter reaches
 *     what was consumed so far plus the count asked (cyclic comparison); no thread spins;
 *   - to itself: a device copy on the stream, then a host function raises its own counter.
 * Every rank links with every other, over the communicator's network (one host too: the
 * bytes cross the host's memory, as NCCL's proxy puts do without an RDMA NIC). An abort
 * raises every counter by 2^30, so a stream held in a wait goes on (the error is the
 * communicator's).
 */
#ifndef BT_CORE_RMA_GPU_H
#define BT_CORE_RMA_GPU_H

#include <stddef.h>

#include "util/status.h"

struct bt_comm;
struct bt_rma_gpu;
struct bt_window;

/* Collective over comm's ranks (at the first GPU window's registration): the board, the link
 * with every other rank, the poster thread. caller: the owner. */
bt_status_t bt_rma_gpu_open(struct bt_comm *comm, struct bt_rma_gpu **g_p);

/* Queue a put of `bytes` of `src` to `offset` of rank `peer`'s part of `win` (bytes 0, win
 * NULL: a signal alone) on `stream`, and the signal after it. caller: the owner. */
bt_status_t bt_rma_gpu_put(struct bt_rma_gpu *g, const void *src, size_t bytes, int peer,
                           const struct bt_window *win, size_t offset, void *stream);

/* Queue on `stream` a wait for ops[i] more signals from peers[i], each i (consumed). */
bt_status_t bt_rma_gpu_wait(struct bt_rma_gpu *g, int n, const int *peers, const int *ops,
                            void *stream);

/* Release every stream waiting on a signal (the communicator is aborted). Any thread. */
void bt_rma_gpu_abort(struct bt_rma_gpu *g);

/* Wait (up to TIMEOUT) for the host functions queued so far, stop the poster, close the link,
 * free. NULL ok. */
void bt_rma_gpu_close(struct bt_rma_gpu *g);

#endif
