/*
 * Connecting connectors on demand. A launch gathers every connector its works need that
 * is not connected yet, across all communicators of the group, and connects them in three
 * phases (setup+send blobs, receive blobs+attach+ack, receive acks+finish) so that one
 * thread can connect several ranks of one process without waiting on itself.
 */
#ifndef BT_CORE_CONNECT_H
#define BT_CORE_CONNECT_H

#include "core/comm.h"
#include "transport/transport.h"

/* Which link a connector belongs to; both ends compute the same key. */
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
};

struct bt_conn_req {
    struct bt_comm *comm;
    struct bt_conn *conn;
    int key; /* link kind * BT_MAX_CHANNELS + channel */
    _Alignas(16) unsigned char info[BT_CONNECT_INFO_BYTES]; /* transports cast it to their struct */
};

/* Prepare `conn` (peer, direction, FIFO sizes) as a connector of link (kind, channel). */
void bt_conn_prepare(struct bt_comm *comm, struct bt_conn *conn, int peer, int is_send,
                     enum bt_link_kind kind, int channel);

/* Connect every request; on failure the connectors already set up are freed. */
bt_status_t bt_connect_all(struct bt_conn_req *reqs, int nreqs);

#endif
