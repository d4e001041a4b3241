#include "transport/connect.h"

#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"

/* Bootstrap tags of connection messages: 4 per link key. Message types, named from the
 * point of view of the link's data direction: */
#define MSG_SENDER_INFO 0
#define MSG_RECEIVER_INFO 1
#define MSG_SENDER_ACK 2
#define MSG_RECEIVER_ACK 3
#define BT_TAG_CONNECT_BASE 0x10000

_Static_assert(BT_TAG_CONNECT_BASE + BT_NUM_LINK_KINDS * BT_LINK_CHANNELS * 4 <= 0x20000,
               "connection tags must stay below the next tag range");

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
    case BT_LINK_GPU_TREE_UP:
        return "gpu-tree-up";
    case BT_LINK_GPU_TREE_DOWN:
        return "gpu-tree-down";
    default:
        return "p2p";
    }
}

void bt_connect_prepare(struct bt_conn *conn, int peer, int is_send, enum bt_link_kind kind,
                        int channel, const struct bt_fifo_sizes *sizes)
{
    if (conn->connected)
        return;
    memset(conn, 0, sizeof(*conn));
    conn->peer = peer;
    conn->is_send = is_send;
    conn->kind = kind_name(kind);
    conn->channel = channel;
    conn->sizes = *sizes;
}

/* Remember a rank this one has, or is making, a connector with (bt_transport_linked_peer);
 * without the memory for it the rank is just not told (arrival's cause messages are best
 * effort). */
static void mark_linked_peer(struct bt_transport_ctx *ctx, int peer)
{
    if (!ctx->linked_peers)
        ctx->linked_peers = calloc((size_t)ctx->nranks, 1);
    if (ctx->linked_peers)
        ctx->linked_peers[peer] = 1;
}

/* Both ends attached (and this end's transport told): the connector is ready. */
static void connector_ready(struct bt_conn_req *r)
{
    r->conn->connected = 1;
    r->conn->step = r->conn->cached = 0;
    BT_INFO(BT_LOG_INIT | BT_LOG_SHM | BT_LOG_NET,
            "Channel %02d/0 : %d[%d] %s %d[%d] [%s] via %s (%s)", r->conn->channel, r->ctx->rank,
            r->ctx->rank, r->conn->is_send ? "->" : "<-", r->conn->peer, r->conn->peer,
            r->conn->is_send ? "send" : "receive", bt_conn_via(r->conn), r->conn->kind);
}

/* Receive the ack of `msg` for request r, then finish this end (its transport's connected). */
static bt_status_t take_ack(struct bt_conn_req *r, int msg)
{
    int ack = 0;
    BT_CHECK(bt_bootstrap_recv(r->ctx->bs, r->conn->peer, tag_of(r, msg), &ack, sizeof(ack)));
    if (r->conn->tp->connected)
        BT_CHECK(r->conn->tp->connected(r->ctx, r->conn));
    return BT_OK;
}

static bt_status_t give_ack(struct bt_conn_req *r, int msg)
{
    int ack = 1;
    return bt_bootstrap_send(r->ctx->bs, r->conn->peer, tag_of(r, msg), &ack, sizeof(ack));
}

bt_status_t bt_connect_all(struct bt_conn_req *reqs, int nreqs)
{
    bt_status_t st = BT_OK;
    int i;

    /* From here every peer of the setup may wait on this rank: if this rank fails, even on
     * its first send (to a peer that is gone), each is told why (arrival's cause messages),
     * not left to find this rank gone and name it instead of the rank it failed on. */
    for (i = 0; i < nreqs; i++)
        mark_linked_peer(reqs[i].ctx, reqs[i].conn->peer);
    /* Phase 1: local resources, then our blob to the peer. Sends do not wait for the
     * peer to read, so every rank finishes this phase. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        const struct bt_transport_ops *tp = bt_transport_select(r->ctx, r->conn->peer);
        if (!tp) {
            st = BT_ERR_INVALID_USAGE;
            goto fail;
        }
        r->conn->tp = tp;
        BT_CHECK_GOTO(tp->setup(r->ctx, r->conn, r->info), st, fail);
        int msg = r->conn->is_send ? MSG_SENDER_INFO : MSG_RECEIVER_INFO;
        BT_CHECK_GOTO(
            bt_bootstrap_send(r->ctx->bs, r->conn->peer, tag_of(r, msg), r->info, sizeof(r->info)),
            st, fail);
    }
    /* Phase 2: the peer's blob, attach; a sender acknowledges (its network connect has been
     * made). Waits only on phase 1. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        int msg = r->conn->is_send ? MSG_RECEIVER_INFO : MSG_SENDER_INFO;
        BT_CHECK_GOTO(
            bt_bootstrap_recv(r->ctx->bs, r->conn->peer, tag_of(r, msg), r->info, sizeof(r->info)),
            st, fail);
        BT_CHECK_GOTO(r->conn->tp->connect(r->ctx, r->conn, r->info), st, fail);
        if (r->conn->is_send)
            BT_CHECK_GOTO(give_ack(r, MSG_SENDER_ACK), st, fail);
    }
    /* Phase 3, receivers: the sender attached; finish (the network's accept) and say so.
     * Waits only on phase 2. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        if (r->conn->is_send)
            continue;
        BT_CHECK_GOTO(take_ack(r, MSG_SENDER_ACK), st, fail);
        BT_CHECK_GOTO(give_ack(r, MSG_RECEIVER_ACK), st, fail);
        connector_ready(r);
    }
    /* Phase 4, senders: the receiver attached and finished, so its names may go, and a
     * network comm is used only after the peer's accept returned (a plugin may finish
     * connecting in the background until then: docs/NETWORK.md). Waits only on phase 3. */
    for (i = 0; i < nreqs; i++) {
        struct bt_conn_req *r = &reqs[i];
        if (!r->conn->is_send)
            continue;
        BT_CHECK_GOTO(take_ack(r, MSG_RECEIVER_ACK), st, fail);
        connector_ready(r);
    }
    return BT_OK;

fail:
    /* i: the request whose step failed. A wait on a local rank that died ends early (the
     * bootstrap's and the network's peer checks), and a connection it was making breaks:
     * name it, or the rank whose death it failed on. Any other failure with a peer that is
     * down came from that too (a peer that failed removes the segment it offered before this
     * rank could map it): named the same, and a remote error. Not after an abort
     * (ncclCommAbort). */
    struct bt_transport_ctx *ctx = reqs[i].ctx;
    int peer = reqs[i].conn->peer;
    if (!*ctx->abort_flag && ctx->report_down) {
        if (st == BT_ERR_REMOTE)
            ctx->report_down(ctx->live_arg, peer, "connection setup", BT_PEER_DYING_MS);
        else if (ctx->peer_down && ctx->peer_down(ctx->live_arg, peer) &&
                 ctx->report_down(ctx->live_arg, peer, "connection setup", 0))
            st = BT_ERR_REMOTE;
    }
    for (int k = 0; k < nreqs; k++)
        if (!reqs[k].conn->connected)
            bt_conn_free(reqs[k].conn);
    return st;
}
