/*
 * Connecting connectors. A launch (or a GPU communicator's setup) gathers every connector it
 * needs that is not connected yet, across all communicators of the group, and connects them
 * in four phases (setup + send blobs; receive blobs + attach + the sender's ack; receivers:
 * that ack + finish + their ack; senders: that ack + finish), each waiting only on the one
 * before, so that one thread can connect several ranks of one process without waiting on
 * itself, and a sender's connector is used only after its receiver finished.
 */
#ifndef BT_TRANSPORT_CONNECT_H
#define BT_TRANSPORT_CONNECT_H

#include "transport/transport.h"

/* Which link a connector belongs to; both ends compute the same key (bt_link_key). */
enum bt_link_kind {
    BT_LINK_RING = 1,
    BT_LINK_TREE_UP = 2,   /* child -> parent data */
    BT_LINK_TREE_DOWN = 3, /* parent -> child data */
    BT_LINK_P2P = 4,
    BT_LINK_DIRECT = 5, /* one-shot AllReduce, one per peer pair and direction */
    /* GPU connectors through host connectors (exec/cuda over the network): apart from the
     * host executor's, whose step counters they do not share */
    BT_LINK_GPU_RING = 6,
    BT_LINK_GPU_P2P = 7,
    BT_LINK_GPU_TREE_UP = 8,
    BT_LINK_GPU_TREE_DOWN = 9,
    BT_NUM_LINK_KINDS
};
#define BT_LINK_CHANNELS 64 /* channels a link kind may have */

static inline int bt_link_key(enum bt_link_kind kind, int channel)
{
    return (int)kind * BT_LINK_CHANNELS + channel;
}

struct bt_conn_req {
    struct bt_transport_ctx *ctx;
    struct bt_conn *conn;
    int key;                                                /* bt_link_key */
    _Alignas(16) unsigned char info[BT_CONNECT_INFO_BYTES]; /* transports cast it to their struct */
};

/* Make an unconnected `conn` a connector of link (kind, channel) with `peer`, its FIFO of
 * `sizes` (the receiver's travel in its blob; the sender adopts them). A connected one is
 * left as it is. */
void bt_connect_prepare(struct bt_conn *conn, int peer, int is_send, enum bt_link_kind kind,
                        int channel, const struct bt_fifo_sizes *sizes);

/* Connect every request; on failure the connectors already set up are freed, and a peer
 * found down is named (the ctx's report_down). */
bt_status_t bt_connect_all(struct bt_conn_req *reqs, int nreqs);

#endif
