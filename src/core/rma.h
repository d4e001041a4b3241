/*
 * One-sided calls (NCCL 2.29's ncclPutSignal, ncclSignal, ncclWaitSignal) on host memory,
 * between ranks whose windows are mapped into each other (core/window.c: symmetric windows of
 * ncclMemAlloc memory, every rank on this host). A put copies straight into the peer's window
 * as mapped here, then raises the peer's signal from this rank: a counter in a small window
 * of the communicator's own (its signal board: [nranks] counters per rank, one cache line
 * each), registered with the first user window that maps; so the target takes no part, as
 * with NCCL's puts. A wait reads this rank's board. Release/acquire on the counters orders
 * each put's data before its signal. Peers on other hosts, device memory, and windows that
 * did not map are refused, naming why (the proxy's service of puts over the network is the
 * device API's to add).
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
 * (bytes may be 0: ncclSignal passes win NULL). caller: the comm's owner. */
bt_status_t bt_rma_put(struct bt_comm *comm, const void *src, size_t bytes, int peer,
                       struct bt_window *win, size_t offset, const char *fn);

/* Wait for ops[i] more signals from peers[i], each i; the counts are consumed. Fails naming
 * the peer after TIMEOUT, when the peer is down, or on an abort. */
bt_status_t bt_rma_wait(struct bt_comm *comm, int n, const int *peers, const int *ops);

#endif
