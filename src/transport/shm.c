/*
 * Shared-memory transport: the receiver creates a POSIX shm segment holding the FIFO
 * (control block + slots of every protocol); the sender maps it and writes slots
 * directly. The name is unlinked as soon as the sender has mapped it.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"
#include "util/param.h"
#include "util/shm.h"

struct shm_info {
    char name[BT_SHM_NAME_MAX];
    uint64_t bytes;
    struct bt_fifo_sizes sizes;
};

_Static_assert(sizeof(struct shm_info) <= BT_CONNECT_INFO_BYTES, "shm connect info too large");

static int shm_can_connect(const struct bt_transport_ctx *ctx, int peer)
{
    if (bt_param_shm_disable())
        return 0;
    const struct bt_peer_info *me = &ctx->peers[ctx->rank], *p = &ctx->peers[peer];
    return me->host_hash == p->host_hash && me->shm_ns == p->shm_ns;
}

static void fifo_attach(struct bt_conn *conn, char *base, const struct bt_fifo_sizes *sizes)
{
    conn->sizes = *sizes;
    conn->ctrl = (struct bt_fifo_ctrl *)base;
    for (int p = 0; p < BT_NUM_PROTOS; p++)
        conn->buf[p] = base + bt_fifo_proto_offset(sizes, p);
}

static bt_status_t shm_setup(struct bt_transport_ctx *ctx, struct bt_conn *conn, void *info_p)
{
    struct shm_info *info = info_p;
    memset(info, 0, sizeof(*info));
    if (conn->is_send)
        return BT_OK; /* the receiver owns the memory */

    struct bt_shm_seg *seg = calloc(1, sizeof(*seg));
    if (!seg)
        return BT_ERR_SYSTEM;
    size_t bytes = bt_fifo_bytes(&conn->sizes);
    bt_status_t st = bt_shm_create(bytes, seg);
    if (st != BT_OK) {
        free(seg);
        return st;
    }
    struct bt_fifo_ctrl *ctrl = seg->ptr;
    for (int s = 0; s < BT_NSTEPS; s++)
        atomic_store_explicit(&ctrl->sizes[s], -1, memory_order_relaxed);
    fifo_attach(conn, seg->ptr, &conn->sizes);
    conn->tp_priv = seg;
    conn->held = bytes;

    snprintf(info->name, sizeof(info->name), "%s", seg->name);
    info->bytes = bytes;
    info->sizes = conn->sizes;
    return BT_OK;
}

static bt_status_t shm_connect(struct bt_transport_ctx *ctx, struct bt_conn *conn,
                               const void *peer_info)
{
    const struct shm_info *info = peer_info;
    if (!conn->is_send)
        return BT_OK;
    struct bt_shm_seg *seg = calloc(1, sizeof(*seg));
    if (!seg)
        return BT_ERR_SYSTEM;
    bt_status_t st = bt_shm_open(info->name, info->bytes, seg);
    if (st != BT_OK) {
        free(seg);
        return st;
    }
    fifo_attach(conn, seg->ptr, &info->sizes);
    conn->tp_priv = seg;
    return BT_OK;
}

static bt_status_t shm_connected(struct bt_transport_ctx *ctx, struct bt_conn *conn)
{
    if (conn->tp_priv)
        bt_shm_unlink(conn->tp_priv);
    return BT_OK;
}

static void shm_free(struct bt_conn *conn)
{
    struct bt_shm_seg *seg = conn->tp_priv;
    if (seg) {
        bt_shm_close(seg);
        free(seg);
    }
    conn->tp_priv = NULL;
}

const struct bt_transport_ops bt_transport_shm = {
    .name = "SHM",
    .can_connect = shm_can_connect,
    .setup = shm_setup,
    .connect = shm_connect,
    .connected = shm_connected,
    .free = shm_free,
};
