#include "core/connect.h"

#include <string.h>

#include "core/arrival.h"

/* Bootstrap tags of connection messages: 4 per link key. Message types, named from the
 * point of view of the link's data direction: */
#define MSG_SENDER_INFO 0
#define MSG_RECEIVER_INFO 1
#define MSG_SENDER_ACK 2
#define MSG_RECEIVER_ACK 3
#define BT_TAG_CONNECT_BASE 0x10000

static int tag_of(const struct bt_conn_req *r, int msg)
{
    return BT_TAG_CONNECT_BASE + r->key * 4 + msg;
}

static const char *kind_name(enum bt_link_kind k)
{
    switch (k) {
    case BT_LINK_RING:
        return "ring";
    case BT_LINK_TREE_UP:
        return "tree-up";
    case BT_LINK_TREE_DOWN:
        return "tree-down";
    case BT_LINK_DIRECT:
        return "direct";
    case BT_LINK_GPU_RING:
        return "gpu-ring";
    case BT_LINK_GPU_P2P:
        return "gpu-p2p";
    default:
        return "p2p";
    }
}

void bt_conn_prepare(struct bt_comm *comm, struct bt_conn *conn, int peer, int is_send,
                     enum bt_link_kind kind, int channel)
{
    if (conn->connected)
        return;
    memset(conn, 0, sizeof(*conn));
    conn->peer = peer;
    conn->is_send = is_send;
    conn->kind = kind_name(kind);
    conn->channel = channel;
    if (is_send && comm->link_caps && comm->link_caps[peer].bytes_per_ns > 0)
        conn->cap = &comm->link_caps[peer];
    /* The receiver's sizes travel in its blob; the sender adopts them. */
    conn->sizes.slot_bytes[BT_PROTO_LL128] = 0; /* the CUDA executor's own FIFOs only */
    if (kind == BT_LINK_P2P) {
        conn->sizes.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->p2p_slot;
        conn->sizes.slot_bytes[BT_PROTO_LL] = 0;
    } else if (kind == BT_LINK_DIRECT) {
        conn->sizes.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->direct_slot;
        conn->sizes.slot_bytes[BT_PROTO_LL] = (uint32_t)comm->ll_slot;
    } else if (kind == BT_LINK_GPU_RING || kind == BT_LINK_GPU_P2P) {
        conn->sizes.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->simple_slot;
        conn->sizes.slot_bytes[BT_PROTO_LL] = 0; /* Simple only through host connectors */
    } else {
        conn->sizes.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)comm->simple_slot;
        conn->sizes.slot_bytes[BT_PROTO_LL] = (uint32_t)comm->ll_slot;
    }
}

bt_status_t bt_connect_all(struct bt_conn_req *reqs, int nreqs)
{
    bt_status_t st = BT_OK;
    int i;

    /* Phase 1: local resources, then our blob to the peer. Sends do not wait for the
     * peer to read, so every rank finishes this phase. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        const struct bt_transport_ops *tp = bt_transport_select(r->comm, r->conn->peer);
        if (!tp) {
            st = BT_ERR_INVALID_USAGE;
            goto fail;
        }
        r->conn->tp = tp;
        BT_CHECK_GOTO(tp->setup(r->comm, r->conn, r->info), st, fail);
        int msg = r->conn->is_send ? MSG_SENDER_INFO : MSG_RECEIVER_INFO;
        BT_CHECK_GOTO(
            bt_bootstrap_send(r->comm->bs, r->conn->peer, tag_of(r, msg), r->info, sizeof(r->info)),
            st, fail);
    }
    /* Phase 2: the peer's blob, attach, acknowledge. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        int msg = r->conn->is_send ? MSG_RECEIVER_INFO : MSG_SENDER_INFO;
        BT_CHECK_GOTO(
            bt_bootstrap_recv(r->comm->bs, r->conn->peer, tag_of(r, msg), r->info, sizeof(r->info)),
            st, fail);
        BT_CHECK_GOTO(r->conn->tp->connect(r->comm, r->conn, r->info), st, fail);
        int ack = 1;
        msg = r->conn->is_send ? MSG_SENDER_ACK : MSG_RECEIVER_ACK;
        BT_CHECK_GOTO(
            bt_bootstrap_send(r->comm->bs, r->conn->peer, tag_of(r, msg), &ack, sizeof(ack)), st,
            fail);
    }
    /* Phase 3: both ends attached; names may go. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        int ack = 0;
        int msg = r->conn->is_send ? MSG_RECEIVER_ACK : MSG_SENDER_ACK;
        BT_CHECK_GOTO(
            bt_bootstrap_recv(r->comm->bs, r->conn->peer, tag_of(r, msg), &ack, sizeof(ack)), st,
            fail);
        if (r->conn->tp->connected)
            BT_CHECK_GOTO(r->conn->tp->connected(r->comm, r->conn), st, fail);
        r->conn->connected = 1;
        r->conn->step = r->conn->cached = 0;
        BT_INFO(BT_LOG_INIT | BT_LOG_SHM | BT_LOG_NET,
                "Channel %02d/0 : %d[%d] %s %d[%d] [%s] via %s (%s)", r->conn->channel,
                r->comm->rank, r->comm->rank, r->conn->is_send ? "->" : "<-", r->conn->peer,
                r->conn->peer, r->conn->is_send ? "send" : "receive", r->conn->tp->name,
                r->conn->kind);
    }
    return BT_OK;

fail:
    /* i: the request whose step failed. A wait on a local rank that died ends early (the
     * bootstrap's and the network's peer checks), and a connection it was making breaks:
     * name it, or the rank whose death it failed on. Not after an abort (ncclCommAbort). */
    if (st == BT_ERR_REMOTE && !reqs[i].comm->abort_flag)
        bt_arrival_report_down(reqs[i].comm, reqs[i].conn->peer, "connection setup", 0,
                               BT_ARRIVAL_DYING_MS);
    for (int k = 0; k < nreqs; k++)
        if (!reqs[k].conn->connected)
            bt_conn_free(reqs[k].conn);
    return st;
}
