/*
 * The one-sided link over the network: puts to ranks whose memory this rank cannot map (other
 * hosts), landed by the target without its owner's part. Each rank keeps, per linked peer, a
 * send comm (this rank's puts to it) and a recv comm (its puts here) of the communicator's
 * network (net/net.h), and one thread, "baton RMA", that keeps receives posted on every recv
 * comm and hands each message to the owner's `land` callback. A put is cut into messages of
 * at most BT_RMA_NET_CHUNK bytes, each a header and its bytes; one comm carries them in
 * order, so a put's last message (flagged: raise the signal) lands after all of its data and
 * after every earlier put from the same rank. The thread blocks on the comms' descriptors
 * when the backend can name them (Baton's sockets), else sleeps in short slices: an idle
 * link costs no core.
 */
#ifndef BT_TRANSPORT_RMA_NET_H
#define BT_TRANSPORT_RMA_NET_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

struct bt_transport_ctx;
struct bt_rma_net;

#define BT_RMA_NET_CHUNK (256u << 10) /* payload bytes per message */

/* What each message carries before its bytes. */
struct bt_rma_msg {
    uint32_t win;   /* the target's window, by registration number (GIN: its handle) */
    uint32_t flags; /* BT_RMA_MSG_SIGNAL: the put's last message */
    uint64_t offset;
    uint64_t bytes;      /* payload after this header */
    uint64_t signal_add; /* GIN: what the signal gains (the host calls: 1, their own board) */
    uint32_t signal;     /* GIN: which signal */
    uint32_t context;    /* GIN: the context whose signal (and queue) it is */
    /* GIN get request (no payload): get_bytes of win at offset, to go to the requester's
     * window reply_win at reply_offset */
    uint64_t get_bytes;
    uint64_t reply_offset;
    uint32_t reply_win;
    uint32_t reserved;
};
#define BT_RMA_MSG_SIGNAL 0x1
#define BT_RMA_MSG_DATA 0x2      /* the put has bytes (a signal alone has none) */
#define BT_RMA_MSG_CLOSE 0x4     /* the sender closes its link: nothing more comes (not landed) */
#define BT_RMA_MSG_SIGNAL_VA 0x8 /* GIN: add signal_add to the 64-bit word at offset of win */
#define BT_RMA_MSG_GET 0x10      /* GIN: a get request (get_bytes, reply_*) */
#define BT_RMA_MSG_GET_DONE 0x20 /* GIN: the last reply to a get (context's queue to src) */

/* Called on the link's thread for each message from rank `src`, in arrival order. */
typedef void (*bt_rma_land_fn)(void *arg, int src, const struct bt_rma_msg *m, const void *payload);

/* How a link behaves. */
struct bt_rma_net_opts {
    /* how long its thread keeps polling after the last message before it blocks or naps (0:
     * a few yields; a link whose waiter is a spinning kernel wants more) */
    uint64_t spin_ns;
    /* its message buffers in pinned host memory (device/device.h): a landing that copies
     * into GPU memory then never goes through CUDA's pageable staging, which can wait behind
     * the application's own pageable copies (and they behind a kernel waiting for this) */
    int pinned;
};

/*
 * Link this rank with every other rank of ctx (collective: each pair links both ways; handles
 * travel over the bootstrap), then start the thread. On failure nothing is left. caller: the
 * communicator's owner.
 */
bt_status_t bt_rma_net_open(struct bt_transport_ctx *ctx, const struct bt_rma_net_opts *opts,
                            bt_rma_land_fn land, void *arg, struct bt_rma_net **rn_p);

/* One put to linked rank `peer`: its messages sent (the source may be reused on return).
 * caller: the owner (one put at a time). */
bt_status_t bt_rma_net_put(struct bt_rma_net *rn, int peer, const struct bt_rma_msg *m,
                           const void *src);

/* Land what has arrived, on the calling thread, unless the link's thread is at it: for an
 * owner that waits for a signal (the thread may be asleep). Returns how many messages. */
int bt_rma_net_drive(struct bt_rma_net *rn);

/* Whether `peer` is linked. */
int bt_rma_net_linked(const struct bt_rma_net *rn, int peer);

/* Stop the thread, close every comm, free. NULL ok. */
void bt_rma_net_close(struct bt_rma_net *rn);

#endif
