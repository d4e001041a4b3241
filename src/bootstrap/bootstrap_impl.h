/*
 * Bootstrap internals shared by messages.c (a rank's listener, the queue of unexpected
 * messages, point-to-point send/recv, bt_bootstrap_poll) and rendezvous.c (init: the hello to
 * the root, the address table, the ring; allgather, barrier; destroy). The rank's state is one
 * struct that both halves fill: rendezvous.c builds and frees it, messages.c moves its
 * listener and queue along. bootstrap.h stays the layer's public header.
 */
#ifndef BT_BOOTSTRAP_BOOTSTRAP_IMPL_H
#define BT_BOOTSTRAP_BOOTSTRAP_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/wire.h"
#include "util/socket.h"

/* A message that arrived before the recv that wants it. FIFO per (peer, tag). */
struct bt_bs_msg {
    struct bt_bs_msg *next;
    int peer;
    int tag;
    size_t size;
    void *data;
};

/* An accepted connection whose header has not all arrived: strangers that stall stay here
 * (until BT_BS_HELLO_TIMEOUT_S) without holding up the connections behind them. */
#define BS_MAX_PENDING 16
struct bs_pending {
    int fd;
    uint64_t drop_at;
    union bt_sockaddr from;
    size_t got;
    unsigned char hdr[sizeof(struct bt_bs_peer_hdr)];
};

struct bt_bootstrap {
    uint64_t magic;
    int rank;
    int nranks;
    volatile int *abort_flag; /* the caller's (may be NULL) */
    volatile int aborted;     /* bt_bootstrap_abort */
    /* bt_bootstrap_set_peer_check's: asked while a send or recv waits on one rank */
    int (*peer_down)(void *arg, int peer);
    int (*peer_lost)(void *arg, int peer, uint64_t waited_ns);
    void *peer_arg;
    int listen_fd;
    int ring_send_fd;         /* to rank+1 */
    int ring_recv_fd;         /* from rank-1 */
    union bt_sockaddr *peers; /* listen address of every rank */
    /* `lock` guards what follows: the queue, the pending set and accepting on listen_fd, which
     * a second thread may move along too (the GPU watcher answering other ranks' questions,
     * core/arrival.c). Held for one slice of a wait at most (BS_SLICE_NS), never across a
     * whole blocking call; the ring links and sends need none (one thread uses the ring, a
     * send opens its own connection). */
    pthread_mutex_t lock;
    struct bt_bs_msg *unexp_head, *unexp_tail;
    struct bs_pending pending[BS_MAX_PENDING];
    int npending;
};

#define BS_SLICE_NS 10000000ull /* 10 ms */

/* A wait until `deadline` that also ends when the bootstrap is aborted (the caller's flag or
 * bt_bootstrap_abort). */
static inline struct bt_socket_wait bt_bootstrap_wait(struct bt_bootstrap *bs, uint64_t deadline)
{
    struct bt_socket_wait w = {.deadline = deadline, .abort_flags = {bs->abort_flag, &bs->aborted}};
    return w;
}

static inline int bt_bootstrap_aborted(struct bt_bootstrap *bs)
{
    struct bt_socket_wait w = bt_bootstrap_wait(bs, UINT64_MAX);
    return bt_socket_wait_aborted(&w);
}

/*
 * Move the listen socket along until one connection has been dealt with (bs_handle): new
 * connections are accepted into the pending set, whose headers are read as their bytes
 * come, so a stranger that connects and stalls (or sends half a header) costs the real
 * ranks nothing; it is dropped after BT_BS_HELLO_TIMEOUT_S. `deadline` bounds the wait for a
 * connection (0: only what is ready, without waiting); a message whose header has come gets
 * until `body_by` for the rest. Returns BT_OK when one was dealt with; BT_ERR_REMOTE with
 * *expired = 1 when the deadline passed with none; otherwise (*expired = 0) an abort
 * (BT_ERR_REMOTE), a failing listen socket, or bs_handle's error (messages.c).
 * caller: holds bs->lock, or is bt_bootstrap_init's thread (no other thread has bs yet).
 */
bt_status_t bt_bootstrap_accept_one(struct bt_bootstrap *bs, uint64_t deadline, uint64_t body_by,
                                    int want_ring, int *expired);

/* Close the connections still pending and free the messages nobody received; returns how
 * many messages there were. For bt_bootstrap_destroy, after the listener is closed. */
int bt_bootstrap_queue_clear(struct bt_bootstrap *bs);

#endif
