/*
 * NET transport: connectors between ranks that share no memory (other hosts, or when
 * SHM_DISABLE=1). Each end keeps its FIFO in its own memory, so the executor's view is the
 * same as with shm; the communicator's CPU proxy moves the bytes with a network backend
 * (transport/net.h, the socket backend today):
 *
 *   send end: executor fills slot s, publishes tail = s+1
 *             proxy: isend(slot s) once tail > s  ->  test() done  ->  head = s+1 (credit)
 *   recv end: proxy: irecv(slot s) once the executor freed it (s < head + NSTEPS)
 *             -> test() done -> sizes[s] = bytes, tail = s+1 (release)
 *             executor consumes slot s, publishes head = s+1
 *
 * The proxy learns how many steps each connector moves from the executor (the table's
 * `post`, bt_transport_post), one op per (work, connector), so it idles between
 * collectives. Ops of one connector move its steps in order through per-connector cursors.
 * The backend is the first of net_backends[] that finds a device: a new backend is one new
 * file behind transport/net.h's table and one line there.
 * Only the Simple protocol crosses the network (the tuner keeps LL and one-shot for
 * shared memory): a network receive lands in arbitrary pieces, which LL's per-line flags
 * cannot tolerate.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/proxy.h"
#include "transport/net.h"
#include "transport/transport.h"
#include "util/param.h"
#include "util/time.h"

struct net_info {
    unsigned char handle[BT_NET_HANDLE_BYTES];
    struct bt_fifo_sizes sizes;
};
_Static_assert(sizeof(struct net_info) <= BT_CONNECT_INFO_BYTES, "net connect info too large");

/* Per-connector state. The cursors and requests belong to the progress thread. */
struct net_conn {
    const struct bt_net_ops *net;
    struct bt_conn *conn;
    struct bt_transport_ctx *ctx;              /* a connect or accept stops when the peer is down */
    char via[32];                              /* "NET/<backend>/<device>", for logs */
    unsigned char handle[BT_NET_HANDLE_BYTES]; /* connect() is keyed by this buffer */
    void *listen_comm, *send_comm, *recv_comm;
    void *fifo;
    int dev;         /* the backend's device (NIC) this connector listens on */
    uint64_t posted; /* next step to isend / irecv */
    uint64_t done;   /* next step whose request is not complete */
    void *req[BT_NSTEPS];
};

/* One op: the steps [base, base + nsteps) of one connector for one work. */
struct net_op {
    struct bt_transport_op top; /* first: the proxy hands back &top.args */
    uint64_t base;
    struct bt_zc_step *zc; /* receive: per step, the user's output to land in, or NULL */
};

/* The backends, in order of preference. */
static const struct bt_net_ops *const net_backends[] = {
    &bt_net_socket,
};

/* The first backend that finds a device (and its device count); NULL when none does. */
static const struct bt_net_ops *net_backend(int *ndev_p)
{
    for (size_t i = 0; i < sizeof(net_backends) / sizeof(net_backends[0]); i++) {
        int ndev = 0;
        if (net_backends[i]->init(&ndev) == BT_OK && ndev > 0) {
            *ndev_p = ndev;
            return net_backends[i];
        }
    }
    BT_WARN("NET: no network backend found a device");
    return NULL;
}

static int net_can_connect(const struct bt_transport_ctx *ctx, int peer)
{
    (void)ctx;
    (void)peer;
    return !bt_param_net_disable();
}

static bt_status_t fifo_alloc(struct net_conn *nc, struct bt_conn *conn,
                              const struct bt_fifo_sizes *sizes)
{
    size_t bytes = bt_fifo_bytes(sizes);
    bytes = (bytes + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(4096, bytes);
    if (!p) {
        BT_WARN("out of memory allocating a %zu-byte network FIFO", bytes);
        return BT_ERR_SYSTEM;
    }
    memset(p, 0, bytes);
    nc->fifo = p;
    conn->sizes = *sizes;
    conn->ctrl = p;
    for (int s = 0; s < BT_NSTEPS; s++)
        atomic_store_explicit(&conn->ctrl->sizes[s], -1, memory_order_relaxed);
    for (int pr = 0; pr < BT_NUM_PROTOS; pr++)
        conn->buf[pr] = (char *)p + bt_fifo_proto_offset(sizes, pr);
    return BT_OK;
}

static bt_status_t net_listen_rpc(void *arg);

/* The device (NIC) a receiving connector listens on. CROSS_NIC=0 keeps each channel on one
 * rail on every rank: channel c on device c mod ndev. Otherwise a GPU rank uses the device
 * nearest its GPU when the topology names one (ctx->nic, rail-optimized: GPU k of every
 * host on NIC k), and host ranks spread their channels over the devices the same way. */
static int pick_dev(const struct bt_transport_ctx *ctx, const struct bt_conn *conn,
                    const struct bt_net_ops *net, int ndev)
{
    if (ndev <= 1)
        return 0;
    if (bt_param_cross_nic() != 0 && ctx->nic[0] && net->dev_name)
        for (int d = 0; d < ndev; d++)
            if (strcmp(net->dev_name(d), ctx->nic) == 0)
                return d;
    return conn->channel % ndev;
}

static bt_status_t net_setup(struct bt_transport_ctx *ctx, struct bt_conn *conn, void *info_p)
{
    struct net_info *info = info_p;
    memset(info, 0, sizeof(*info));
    int ndev = 0;
    const struct bt_net_ops *net = net_backend(&ndev);
    if (!net)
        return BT_ERR_SYSTEM;
    if (!ctx->proxy)
        BT_CHECK(bt_proxy_create(ctx->name, ctx->abort_flag, ctx->proxy_cpus, &ctx->proxy));
    struct net_conn *nc = calloc(1, sizeof(*nc));
    if (!nc)
        return BT_ERR_SYSTEM;
    nc->net = net;
    nc->conn = conn;
    nc->ctx = ctx;
    conn->tp_priv = nc;
    conn->zero_copy = 1;
    snprintf(nc->via, sizeof(nc->via), "NET/%s/0", net->name);
    if (conn->is_send)
        return BT_OK;                        /* the FIFO is sized by the receiver's blob */
    conn->sizes.slot_bytes[BT_PROTO_LL] = 0; /* Simple only over the network */
    nc->dev = pick_dev(ctx, conn, net, ndev);
    snprintf(nc->via, sizeof(nc->via), "NET/%s/%d", net->name, nc->dev);
    BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET: %s channel %d from rank %d on device %d (%s)",
            conn->kind, conn->channel, conn->peer, nc->dev,
            net->dev_name ? net->dev_name(nc->dev) : "?");
    BT_CHECK(fifo_alloc(nc, conn, &conn->sizes));
    BT_CHECK(bt_proxy_call(ctx->proxy, net_listen_rpc, nc));
    memcpy(info->handle, nc->handle, sizeof(info->handle));
    info->sizes = conn->sizes;
    return BT_OK;
}

/* One non-blocking try of a connect or an accept: *done_p = 1 once the comm is made. */
typedef bt_status_t (*net_try_fn)(struct net_conn *nc, int *done_p);

static bt_status_t try_connect(struct net_conn *nc, int *done_p)
{
    BT_CHECK(nc->net->connect(0, nc->handle, &nc->send_comm));
    *done_p = nc->send_comm != NULL;
    return BT_OK;
}

static bt_status_t try_accept(struct net_conn *nc, int *done_p)
{
    BT_CHECK(nc->net->accept(nc->listen_comm, &nc->recv_comm));
    *done_p = nc->recv_comm != NULL;
    return BT_OK;
}

/* Try until done, the deadline, an abort or the peer is down (gone, or failed: looked for
 * every 50 ms; transport/connect.c then names it). */
static bt_status_t net_wait(struct net_conn *nc, net_try_fn try_once, const char *what)
{
    int peer = nc->conn->peer;
    uint64_t deadline = bt_deadline_from_now(), check = bt_time_ns() + BT_PEER_CHECK_NS;
    for (;;) {
        int done = 0;
        BT_CHECK(try_once(nc, &done));
        if (done)
            return BT_OK;
        if (*nc->ctx->abort_flag) {
            BT_WARN("%s with rank %d aborted", what, peer);
            return BT_ERR_REMOTE;
        }
        uint64_t now = bt_time_ns();
        if (now >= check) {
            check = now + BT_PEER_CHECK_NS;
            if (nc->ctx->peer_down && nc->ctx->peer_down(nc->ctx->live_arg, peer)) {
                BT_WARN("%s with rank %d stopped: the rank is gone or failed", what, peer);
                return BT_ERR_REMOTE;
            }
        }
        if (now > deadline) {
            BT_WARN("%s with rank %d timed out (TIMEOUT=%llds)", what, peer,
                    (long long)bt_param_timeout());
            return BT_ERR_REMOTE;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* Connection control runs on the proxy's service thread (DESIGN.md 5: setup, connect and
 * close are the service plane; data is the progress plane). caller: service thread. */
static bt_status_t net_listen_rpc(void *arg)
{
    struct net_conn *nc = arg;
    return nc->net->listen(nc->dev, nc->handle, &nc->listen_comm);
}

static bt_status_t net_connect_rpc(void *arg)
{
    struct net_conn *nc = arg;
    bt_status_t st = net_wait(nc, try_connect, "network connect");
    if (st != BT_OK)
        if (nc->net->connect_cancel) /* the attempt's sockets, if it still has some */
            nc->net->connect_cancel(0, nc->handle);
    return st;
}

static bt_status_t net_accept_rpc(void *arg)
{
    struct net_conn *nc = arg;
    BT_CHECK(net_wait(nc, try_accept, "network accept"));
    nc->net->close_listen(nc->listen_comm);
    nc->listen_comm = NULL;
    return BT_OK;
}

static bt_status_t net_connect(struct bt_transport_ctx *ctx, struct bt_conn *conn,
                               const void *peer_info)
{
    struct net_conn *nc = conn->tp_priv;
    const struct net_info *info = peer_info;
    if (!conn->is_send)
        return BT_OK; /* accepted in net_connected, once every rank has connected */
    BT_CHECK(fifo_alloc(nc, conn, &info->sizes));
    memcpy(nc->handle, info->handle, sizeof(nc->handle));
    return bt_proxy_call(ctx->proxy, net_connect_rpc, nc);
}

static bt_status_t net_connected(struct bt_transport_ctx *ctx, struct bt_conn *conn)
{
    struct net_conn *nc = conn->tp_priv;
    if (conn->is_send)
        return BT_OK;
    return bt_proxy_call(ctx->proxy, net_accept_rpc, nc);
}

static void net_free(struct bt_conn *conn)
{
    struct net_conn *nc = conn->tp_priv;
    if (!nc)
        return;
    if (nc->send_comm)
        nc->net->close_send(nc->send_comm);
    if (nc->recv_comm)
        nc->net->close_recv(nc->recv_comm);
    if (nc->listen_comm)
        nc->net->close_listen(nc->listen_comm);
    free(nc->fifo);
    free(nc);
    conn->tp_priv = NULL;
}

static const char *net_via(const struct bt_conn *conn)
{
    const struct net_conn *nc = conn->tp_priv;
    return nc ? nc->via : "NET";
}

/* ---- proxy progress ----------------------------------------------------------------- */

/* Test the oldest request of the connector that is inside this op's steps; 1 when it
 * finished (nc->done then moves past it, *size_p holds its bytes). caller: progress. */
static bt_status_t net_test_next(struct net_op *op, struct net_conn *nc, struct bt_proxy_sub *sub,
                                 int *done_p, size_t *size_p)
{
    uint64_t end = op->base + sub->nsteps;
    *done_p = 0;
    if (nc->done < op->base || nc->done >= nc->posted || nc->done >= end)
        return BT_OK;
    bt_proxy_sub_stage(sub, "network completion");
    BT_CHECK(nc->net->test(nc->req[nc->done % BT_NSTEPS], done_p, size_p));
    if (*done_p)
        nc->done++;
    return BT_OK;
}

/* caller: progress thread */
static bt_status_t net_send_progress(struct bt_proxy_args *args, int *done_p)
{
    struct net_op *op = (struct net_op *)args; /* args is op->top.args, its first member */
    struct bt_proxy_sub *sub = &args->subs[0];
    struct net_conn *nc = sub->conn;
    struct bt_conn *c = nc->conn;
    uint64_t end = op->base + sub->nsteps;

    /* Post sends for slots the executor filled. Earlier ops of this connector go first. */
    while (nc->posted >= op->base && nc->posted < end && nc->posted < nc->done + BT_NSTEPS) {
        uint64_t s = nc->posted;
        if (atomic_load_explicit(&c->ctrl->tail, memory_order_acquire) < s + 1) {
            bt_proxy_sub_stage(sub, "producer data");
            break;
        }
        int32_t size = atomic_load_explicit(&c->ctrl->sizes[s % BT_NSTEPS], memory_order_relaxed);
        /* a pure send step: the executor left the data in the user's input */
        void *data = atomic_load_explicit(&c->ctrl->zc[s % BT_NSTEPS], memory_order_relaxed);
        if (!data)
            data = bt_conn_slot(c, BT_PROTO_SIMPLE, s);
        void *req = NULL;
        BT_CHECK(nc->net->isend(nc->send_comm, data, (size_t)(size > 0 ? size : 0), &req));
        if (!req)
            break;
        nc->req[s % BT_NSTEPS] = req;
        nc->posted = s + 1;
        bt_proxy_sub_set(&sub->transmitted, nc->posted - op->base);
    }
    /* Complete them in order; each completion returns a credit to the executor. */
    for (;;) {
        int done = 0;
        size_t size = 0;
        BT_CHECK(net_test_next(op, nc, sub, &done, &size));
        if (!done)
            break;
        /* the slot may be refilled: the backend no longer reads it */
        atomic_store_explicit(&c->ctrl->head, nc->done, memory_order_release);
        bt_proxy_sub_set(&sub->done, nc->done - op->base);
        bt_proxy_sub_set(&sub->posted, nc->done - op->base);
    }
    *done_p = nc->done >= end;
    return BT_OK;
}

/* caller: progress thread */
static bt_status_t net_recv_progress(struct bt_proxy_args *args, int *done_p)
{
    struct net_op *op = (struct net_op *)args; /* args is op->top.args, its first member */
    struct bt_proxy_sub *sub = &args->subs[0];
    struct net_conn *nc = sub->conn;
    struct bt_conn *c = nc->conn;
    uint64_t end = op->base + sub->nsteps;

    /* Post receives into slots the executor has freed. */
    while (nc->posted >= op->base && nc->posted < end) {
        uint64_t s = nc->posted;
        if (s >= atomic_load_explicit(&c->ctrl->head, memory_order_acquire) + BT_NSTEPS) {
            bt_proxy_sub_stage(sub, "consumer");
            break;
        }
        /* a pure receive step lands in the user's output at once */
        const struct bt_zc_step *zc = op->zc ? &op->zc[s - op->base] : NULL;
        void *req = NULL;
        if (zc && zc->ptr)
            BT_CHECK(nc->net->irecv(nc->recv_comm, zc->ptr, zc->bytes, &req));
        else
            BT_CHECK(nc->net->irecv(nc->recv_comm, bt_conn_slot(c, BT_PROTO_SIMPLE, s),
                                    c->sizes.slot_bytes[BT_PROTO_SIMPLE], &req));
        if (!req)
            break;
        nc->req[s % BT_NSTEPS] = req;
        nc->posted = s + 1;
        bt_proxy_sub_set(&sub->posted, nc->posted - op->base);
    }
    /* Completed receives become visible to the executor, in order. */
    for (;;) {
        int done = 0;
        size_t size = 0;
        BT_CHECK(net_test_next(op, nc, sub, &done, &size));
        if (!done)
            break;
        uint64_t s = nc->done - 1;
        atomic_store_explicit(&c->ctrl->zc[s % BT_NSTEPS], op->zc ? op->zc[s - op->base].ptr : NULL,
                              memory_order_relaxed);
        atomic_store_explicit(&c->ctrl->sizes[s % BT_NSTEPS], (int32_t)size, memory_order_relaxed);
        /* data and size before tail: the executor reads tail, then the slot */
        atomic_store_explicit(&c->ctrl->tail, s + 1, memory_order_release);
        bt_proxy_sub_set(&sub->received, nc->done - op->base);
        bt_proxy_sub_set(&sub->flushed, nc->done - op->base);
        bt_proxy_sub_set(&sub->transmitted, nc->done - op->base);
        bt_proxy_sub_set(&sub->done, nc->done - op->base);
    }
    *done_p = nc->done >= end;
    return BT_OK;
}

/* A request of this op in flight is what the socket can move; waits on the executor
 * (producer data, consumer) have no descriptor. caller: a proxy driver. */
static int net_pollfds(struct bt_proxy_args *args, struct pollfd *fds, int max)
{
    struct net_op *op = (struct net_op *)args;
    struct net_conn *nc = args->subs[0].conn;
    uint64_t end = op->base + args->subs[0].nsteps;
    if (!nc->net->pollfds || nc->done < op->base || nc->done >= nc->posted || nc->done >= end)
        return 0;
    return nc->net->pollfds(args->is_send ? nc->send_comm : nc->recv_comm, fds, max);
}

static void net_op_release(struct bt_transport_op *top)
{
    struct net_op *op = (struct net_op *)top;
    free(op->zc);
    free(op);
}

static bt_status_t net_post(struct bt_transport_ctx *ctx, struct bt_conn *conn, uint64_t nsteps,
                            struct bt_zc_step *zc, struct bt_transport_op **op_p)
{
    struct net_op *op = calloc(1, sizeof(*op));
    *op_p = NULL;
    if (!op) {
        free(zc);
        BT_WARN("out of memory posting a network op");
        return BT_ERR_SYSTEM;
    }
    op->zc = zc;
    op->base = conn->proxy_base;
    conn->proxy_base += nsteps;
    op->top.ctx = ctx;
    op->top.peer = conn->peer;
    op->top.release = net_op_release;
    struct bt_proxy_args *args = &op->top.args;
    args->progress = conn->is_send ? net_send_progress : net_recv_progress;
    args->pollfds = net_pollfds;
    args->is_send = conn->is_send;
    args->nsubs = 1;
    args->subs[0].nsteps = nsteps;
    args->subs[0].conn = conn->tp_priv;
    args->subs[0].peer = conn->peer;
    args->subs[0].channel = conn->channel;
    bt_status_t st = bt_proxy_post(ctx->proxy, args);
    if (st != BT_OK) { /* malformed (untouched) or the proxy stopped (completed): ours again */
        net_op_release(&op->top);
        return st;
    }
    *op_p = &op->top;
    return BT_OK;
}

const struct bt_transport_ops bt_transport_net = {
    .name = "NET",
    .can_connect = net_can_connect,
    .setup = net_setup,
    .connect = net_connect,
    .connected = net_connected,
    .free = net_free,
    .via = net_via,
    .post = net_post,
};
