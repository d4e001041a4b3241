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
 * The proxy learns how many steps each connector moves from the launch
 * (bt_net_post_ops), one op per (work, connector), so it idles between collectives. Ops
 * of one connector move its steps in order through per-connector cursors.
 * Only the Simple protocol crosses the network (the tuner keeps LL and one-shot for
 * shared memory): a network receive lands in arbitrary pieces, which LL's per-line flags
 * cannot tolerate.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arrival.h"
#include "core/comm.h"
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
    struct bt_comm *comm; /* a connect or accept stops when the peer is down */
    volatile int *abort_flag;
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
    struct bt_proxy_args args; /* first: the proxy hands back &args */
    uint64_t base;
    struct bt_net_zc *zc; /* receive: per step, the user's output to land in, or NULL */
};

static const struct bt_net_ops *net_backend(void)
{
    return &bt_net_socket;
}

static int net_can_connect(const struct bt_comm *comm, int peer)
{
    (void)comm;
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
 * nearest its GPU when the topology names one (comm->nic, rail-optimized: GPU k of every
 * host on NIC k), and host ranks spread their channels over the devices the same way. */
static int pick_dev(const struct bt_comm *comm, const struct bt_conn *conn,
                    const struct bt_net_ops *net, int ndev)
{
    if (ndev <= 1)
        return 0;
    if (bt_param_cross_nic() != 0 && comm->nic[0] && net->dev_name)
        for (int d = 0; d < ndev; d++)
            if (strcmp(net->dev_name(d), comm->nic) == 0)
                return d;
    return conn->channel % ndev;
}

static bt_status_t net_setup(struct bt_comm *comm, struct bt_conn *conn, void *info_p)
{
    struct net_info *info = info_p;
    memset(info, 0, sizeof(*info));
    const struct bt_net_ops *net = net_backend();
    int ndev = 0;
    BT_CHECK(net->init(&ndev));
    if (!comm->proxy) {
        char name[64];
        snprintf(name, sizeof(name), "comm %p rank %d", (void *)comm, comm->rank);
        BT_CHECK(bt_proxy_create(name, &comm->abort_flag, comm->proxy_cpus, &comm->proxy));
    }
    struct net_conn *nc = calloc(1, sizeof(*nc));
    if (!nc)
        return BT_ERR_SYSTEM;
    nc->net = net;
    nc->conn = conn;
    nc->comm = comm;
    nc->abort_flag = &comm->abort_flag;
    conn->tp_priv = nc;
    conn->zero_copy = 1;
    if (conn->is_send)
        return BT_OK;                        /* the FIFO is sized by the receiver's blob */
    conn->sizes.slot_bytes[BT_PROTO_LL] = 0; /* Simple only over the network */
    nc->dev = pick_dev(comm, conn, net, ndev);
    BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET: %s channel %d from rank %d on device %d (%s)",
            conn->kind, conn->channel, conn->peer, nc->dev,
            net->dev_name ? net->dev_name(nc->dev) : "?");
    BT_CHECK(fifo_alloc(nc, conn, &conn->sizes));
    BT_CHECK(bt_proxy_call(comm->proxy, net_listen_rpc, nc));
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

#define NET_PEER_CHECK_NS 50000000ull /* 50 ms */

/* Try until done, the deadline, an abort or the peer is down (gone, or failed: looked for
 * every 50 ms; core/connect.c then names it). */
static bt_status_t net_wait(struct net_conn *nc, net_try_fn try_once, const char *what)
{
    int peer = nc->conn->peer;
    uint64_t deadline = bt_deadline_from_now(), check = bt_time_ns() + NET_PEER_CHECK_NS;
    for (;;) {
        int done = 0;
        BT_CHECK(try_once(nc, &done));
        if (done)
            return BT_OK;
        if (*nc->abort_flag) {
            BT_WARN("%s with rank %d aborted", what, peer);
            return BT_ERR_REMOTE;
        }
        uint64_t now = bt_time_ns();
        if (now >= check) {
            check = now + NET_PEER_CHECK_NS;
            if (bt_arrival_peer_down(nc->comm, peer)) {
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

static bt_status_t net_connect(struct bt_comm *comm, struct bt_conn *conn, const void *peer_info)
{
    (void)comm;
    struct net_conn *nc = conn->tp_priv;
    const struct net_info *info = peer_info;
    if (!conn->is_send)
        return BT_OK; /* accepted in net_connected, once every rank has connected */
    BT_CHECK(fifo_alloc(nc, conn, &info->sizes));
    memcpy(nc->handle, info->handle, sizeof(nc->handle));
    return bt_proxy_call(comm->proxy, net_connect_rpc, nc);
}

static bt_status_t net_connected(struct bt_comm *comm, struct bt_conn *conn)
{
    (void)comm;
    struct net_conn *nc = conn->tp_priv;
    if (conn->is_send)
        return BT_OK;
    return bt_proxy_call(comm->proxy, net_accept_rpc, nc);
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

const struct bt_transport_ops bt_transport_net = {
    .name = "NET/Socket/0", /* backend/device: one device today */
    .can_connect = net_can_connect,
    .setup = net_setup,
    .connect = net_connect,
    .connected = net_connected,
    .free = net_free,
};

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
    struct net_op *op = (struct net_op *)args;
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
    struct net_op *op = (struct net_op *)args;
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
        const struct bt_net_zc *zc = op->zc ? &op->zc[s - op->base] : NULL;
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

bt_status_t bt_net_post(struct bt_comm *comm, struct bt_conn *conn, uint64_t nsteps,
                        struct bt_net_zc *zc, void **op_p)
{
    struct net_op *op = calloc(1, sizeof(*op));
    if (!op) {
        free(zc);
        BT_WARN("out of memory posting a network op");
        return BT_ERR_SYSTEM;
    }
    op->zc = zc;
    op->base = conn->proxy_base;
    conn->proxy_base += nsteps;
    op->args.progress = conn->is_send ? net_send_progress : net_recv_progress;
    op->args.pollfds = net_pollfds;
    op->args.is_send = conn->is_send;
    op->args.nsubs = 1;
    op->args.subs[0].nsteps = nsteps;
    op->args.subs[0].conn = conn->tp_priv;
    op->args.subs[0].peer = conn->peer;
    op->args.subs[0].channel = conn->channel;
    *op_p = NULL;
    bt_status_t st = bt_proxy_post(comm->proxy, &op->args);
    if (st != BT_OK) { /* malformed (untouched) or the proxy stopped (completed): ours again */
        free(op->zc);
        free(op);
        return st;
    }
    *op_p = op;
    return BT_OK;
}

/* An abort makes the proxy complete every op with an error at once, so only the deadline
 * needs watching here. */
bt_status_t bt_net_wait(void *op_v, int peer, int (*poll)(void), int (*block)(void))
{
    struct net_op *op = op_v;
    const struct net_conn *nc = op->args.subs[0].conn;
    uint64_t deadline = bt_deadline_from_now(), check = bt_time_ns() + NET_PEER_CHECK_NS;
    const uint64_t yields = (uint64_t)bt_param_yield_count();
    uint64_t idle = 0;
    int timed_out = 0;
    while (!atomic_load_explicit(&op->args.complete, memory_order_acquire)) {
        if (poll && poll()) {
            idle = 0;
            if (!timed_out) /* the timeout counts time without progress */
                deadline = bt_deadline_from_now();
            continue;
        }
        if (++idle < yields) {
            sched_yield();
            continue;
        }
        uint64_t now = bt_time_ns();
        /* Every 50 ms, progress elsewhere or not (other ops of the launch may move while
         * this one's peer is down). A peer that failed and stays keeps its sockets open:
         * only the board tells. The op comes back at the proxy's next round; the caller
         * names the peer. */
        if (now >= check && !atomic_load_explicit(&op->args.cancel, memory_order_relaxed)) {
            check = now + NET_PEER_CHECK_NS;
            if (bt_arrival_peer_down(nc->comm, peer))
                bt_proxy_cancel(&op->args);
        }
        if (now > deadline && !timed_out) {
            BT_WARN("network op with rank %d timed out: stage %s, %llu of %llu steps done", peer,
                    __atomic_load_n(&op->args.subs[0].stage, __ATOMIC_RELAXED),
                    (unsigned long long)__atomic_load_n(&op->args.subs[0].done, __ATOMIC_RELAXED),
                    (unsigned long long)op->args.subs[0].nsteps);
            /* given up: the proxy hands it back at its next round, then it is freed below */
            bt_proxy_cancel(&op->args);
            timed_out = 1;
            deadline = now + 1000000000ull;
        } else if (now > deadline) {
            BT_INFO(BT_LOG_NET,
                    "network op %p with rank %d not handed back 1 s after its "
                    "timeout: left to the proxy",
                    (void *)op, peer);
            return BT_ERR_REMOTE;
        }
        if (block && block())
            continue; /* it waited on the sockets (bounded) */
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    bt_status_t st = timed_out ? BT_ERR_REMOTE : op->args.status;
    free(op->zc);
    free(op);
    return st;
}

void bt_net_cancel(void *op_v)
{
    struct net_op *op = op_v;
    bt_proxy_cancel(&op->args);
}

int bt_net_failed(const void *op_v)
{
    const struct net_op *op = op_v;
    return atomic_load_explicit(&op->args.complete, memory_order_acquire) &&
           op->args.status != BT_OK;
}

int bt_net_test(void *op_v, bt_status_t *st)
{
    struct net_op *op = op_v;
    if (!atomic_load_explicit(&op->args.complete, memory_order_acquire))
        return 0;
    *st = op->args.status;
    free(op->zc);
    free(op);
    return 1;
}
