#include "transport/transport.h"

#include <string.h>

#include "util/param.h"

/* In order of preference. */
static const struct bt_transport_ops *const bt_transports[] = {
    &bt_transport_shm,
    &bt_transport_net,
};

const struct bt_transport_ops *bt_transport_select(const struct bt_transport_ctx *ctx, int peer)
{
    for (size_t i = 0; i < sizeof(bt_transports) / sizeof(bt_transports[0]); i++)
        if (bt_transports[i]->can_connect(ctx, peer))
            return bt_transports[i];
    const struct bt_peer_info *me = &ctx->peers[ctx->rank], *p = &ctx->peers[peer];
    BT_WARN("no transport can connect rank %d to rank %d: %s (SHM_DISABLE=%lld, NET_DISABLE=%lld)",
            ctx->rank, peer,
            me->host_hash != p->host_hash ? "they are on different hosts"
            : me->shm_ns != p->shm_ns     ? "they are in different IPC namespaces"
                                          : "shared memory is disabled",
            (long long)bt_param_shm_disable(), (long long)bt_param_net_disable());
    return NULL;
}

int bt_conn_proxied(const struct bt_conn *c)
{
    return c->tp && c->tp->post;
}

const char *bt_conn_via(const struct bt_conn *c)
{
    return !c->tp ? "?" : c->tp->via ? c->tp->via(c) : c->tp->name;
}

int bt_transport_mapped(const struct bt_transport_ctx *ctx, int peer)
{
    for (size_t i = 0; i < sizeof(bt_transports) / sizeof(bt_transports[0]); i++)
        if (bt_transports[i]->can_connect(ctx, peer))
            return bt_transports[i]->post == NULL;
    return 0;
}

int bt_transport_linked_peer(const struct bt_transport_ctx *ctx, int peer)
{
    return ctx->linked_peers && ctx->linked_peers[peer];
}

void bt_transport_link(struct bt_transport_ctx *ctx, int peer, struct bt_link_figures *f)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < sizeof(bt_transports) / sizeof(bt_transports[0]); i++)
        if (bt_transports[i]->can_connect(ctx, peer)) {
            if (bt_transports[i]->link)
                bt_transports[i]->link(ctx, f);
            return;
        }
}

void bt_transport_ctx_stop(struct bt_transport_ctx *ctx)
{
    bt_proxy_stop(ctx->proxy);
}

void bt_transport_ctx_join(struct bt_transport_ctx *ctx)
{
    bt_proxy_destroy(ctx->proxy);
    ctx->proxy = NULL;
}

void bt_conn_free(struct bt_conn *conn)
{
    if (!conn)
        return;
    if (conn->tp && conn->tp->free)
        conn->tp->free(conn);
    conn->tp = NULL;
    conn->held = 0;
    conn->connected = 0;
    conn->ctrl = NULL;
    for (int p = 0; p < BT_NUM_PROTOS; p++)
        conn->buf[p] = NULL;
}
