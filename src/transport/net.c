/*
 * NET transport: connectors between ranks that share no memory (other hosts, or when
 * SHM_DISABLE=1). Each end keeps its FIFO in its own memory, so the executor's view is the
 * same as with shm; the communicator's CPU proxy moves the bytes with a network backend, an
 * NCCL v11 net table (net/net.h: Baton's sockets, libfabric, or an external plugin):
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
 * The communicator opens its network (net/open.c chooses it) the first time it needs one: at
 * init when its ranks span hosts (net_link: the figures the tuner's network costs are
 * bounded by), else at its first NET connector; it closes it at destroy
 * (bt_transport_ctx_fini). Each connector registers its FIFO with its
 * comm once, and the user buffers its zero-copy steps use once (a small cache per
 * connector, deregistered when the connector is freed).
 * Only the Simple protocol crosses the network (the tuner keeps LL for shared memory): a
 * network receive lands in arbitrary pieces, which LL's per-line flags cannot tolerate.
 *
 * GPUDirect RDMA: a connector the GPU executor's kernels fill or drain, whose GPU's path to
 * the NIC it uses NET_GDR_LEVEL admits (GDR_ENABLE=1; conn->gpu_near / gpu_far: the executor
 * decides), keeps its Simple slots in GPU memory when the device can register them: by
 * dma-buf (regMrDmaBuf, type NCCL_PTR_CUDA, of a descriptor from the GPU for exactly the
 * slots, offset 0, as NCCL does) where it reports NCCL_PTR_DMABUF, the GPU
 * exports dma-bufs and DMABUF_ENABLE allows, else as NCCL_PTR_CUDA where it reports that (the
 * sending side also needs NET_GDR_READ); its control block (head,
 * tail, sizes) stays in host memory, which the proxy reads and writes. A receive into GPU memory is
 * flushed (iflush) before the kernel may read it (unless NET_FORCE_FLUSH=0 and the device does not
 * ask: forceFlush). Everything else keeps host memory.
 */
#include <ctype.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "device/device.h"
#include "net/net.h"
#include "proxy/proxy.h"
#include "transport/transport.h"
#include "util/param.h"
#include "util/time.h"

struct net_info {
    unsigned char handle[BT_NET_HANDLE_BYTES];
    struct bt_fifo_sizes sizes;
};
_Static_assert(sizeof(struct net_info) <= BT_CONNECT_INFO_BYTES, "net connect info too large");

/* A registration of a user buffer a zero-copy step used. */
struct net_mr {
    char *ptr;
    size_t bytes;
    void *mh;
    uint64_t used; /* for eviction: the least recently used goes */
};
#define NET_MR_CACHE 64

/* Per-connector state. The cursors, requests and registrations belong to the progress
 * thread (setup and close run when it does not touch the connector). */
struct net_conn {
    struct bt_net *net;
    const ncclNet_v11_t *t; /* net->v11 */
    struct bt_conn *conn;
    struct bt_transport_ctx *ctx;              /* a connect or accept stops when the peer is down */
    char via[48];                              /* "NET/<backend>/<device>", for logs */
    unsigned char handle[BT_NET_HANDLE_BYTES]; /* connect() is keyed by this buffer */
    void *listen_comm, *send_comm, *recv_comm;
    void *fifo;
    size_t fifo_bytes;
    void *fifo_mh;    /* the FIFO's registration with send_comm / recv_comm */
    char *gpu_data;   /* GPUDirect RDMA: the Simple slots in GPU memory (the FIFO is then the */
    size_t gpu_bytes; /* control block alone), registered as fifo_mh, of device gpu_dev */
    int gpu_dev;
    int gpu_reg;     /* how they register: NCCL_PTR_DMABUF or NCCL_PTR_CUDA (gdr_reg_type) */
    int dev;         /* the backend's device (NIC) this connector uses */
    int flush;       /* the device asks for iflush after every receive (forceFlush) */
    uint64_t posted; /* next step to isend / irecv */
    uint64_t done;   /* next step whose request is not complete */
    void *req[BT_NSTEPS];
    struct {
        void *data, *mh; /* where step s's receive lands, and its registration (iflush) */
        int bytes;
    } rstep[BT_NSTEPS];
    void *flush_req; /* the iflush of step `done` in flight, or NULL */
    int flushing;    /* step `done` received; its flush is posted (or not needed yet) */
    struct net_mr mr[NET_MR_CACHE];
    uint64_t mr_clock;
};

/* One op: the steps [base, base + nsteps) of one connector for one work. */
struct net_op {
    struct bt_transport_op top; /* first: the proxy hands back &top.args */
    uint64_t base;
    struct bt_zc_step *zc; /* receive: per step, the user's output to land in, or NULL */
};

/* The comm's network, opened the first time one is needed (net_link at init, a connector, or
 * the one-sided link). */
bt_status_t bt_transport_network(struct bt_transport_ctx *ctx, struct bt_net **net_p)
{
    if (!ctx->net) {
        struct bt_net_want want = {
            .name = ctx->net_name[0] ? ctx->net_name : bt_param_str_net(),
            .comm_id = ctx->comm_id,
            .traffic_class = ctx->traffic_class,
        };
        BT_CHECK(bt_net_open(&want, &ctx->net));
    }
    *net_p = ctx->net;
    return BT_OK;
}

void bt_transport_ctx_fini(struct bt_transport_ctx *ctx)
{
    bt_net_close(ctx->net);
    ctx->net = NULL;
    free(ctx->linked_peers);
    ctx->linked_peers = NULL;
}

static int net_can_connect(const struct bt_transport_ctx *ctx, int peer)
{
    (void)ctx;
    (void)peer;
    return !bt_param_net_disable();
}

static int dev_is_nic(const ncclNetProperties_v11_t *p, const char *nic);

/* How device `dev` registers GPU memory (GPUDirect RDMA, above): NCCL_PTR_DMABUF where it
 * takes dma-bufs, DMABUF_ENABLE allows them and the current GPU exports them; else
 * NCCL_PTR_CUDA where it takes GPU pointers; 0: neither. */
static int gdr_reg_type(const struct bt_net *net, int dev)
{
    int ptr = net->props[dev].ptrSupport;
    if ((ptr & NCCL_PTR_DMABUF) && net->v11->regMrDmaBuf && bt_param_dmabuf_enable() != 0 &&
        bt_device_dmabuf_supported())
        return NCCL_PTR_DMABUF;
    return ptr & NCCL_PTR_CUDA ? NCCL_PTR_CUDA : 0;
}

/* Whether connector conn's Simple slots go in GPU memory (GPUDirect RDMA, above): the
 * executor admitted it for the NIC this connector uses (its GPU's nearest, or another: the
 * topology's path, or SYS) and the device can register GPU memory. */
static int gdr_wanted(const struct bt_transport_ctx *ctx, const struct bt_conn *conn,
                      const struct bt_net *net, int dev)
{
    int near = ctx->nic[0] && dev_is_nic(&net->props[dev], ctx->nic);
    if (!(near ? conn->gpu_near : conn->gpu_far) || gdr_reg_type(net, dev) == 0)
        return 0;
    return !conn->is_send || bt_param_net_gdr_read() != 0;
}

static bt_status_t fifo_alloc(struct net_conn *nc, struct bt_conn *conn,
                              const struct bt_fifo_sizes *sizes)
{
    int gdr = gdr_wanted(nc->ctx, conn, nc->net, nc->dev);
    /* GPUDirect RDMA: the control block in host memory, the Simple slots in GPU memory */
    size_t bytes = gdr ? bt_fifo_proto_offset(sizes, 0) : bt_fifo_bytes(sizes);
    bytes = (bytes + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(4096, bytes);
    if (!p) {
        BT_WARN("out of memory allocating a %zu-byte network FIFO", bytes);
        return BT_ERR_SYSTEM;
    }
    memset(p, 0, bytes);
    nc->fifo = p;
    nc->fifo_bytes = bytes;
    conn->held = bytes;
    conn->sizes = *sizes;
    conn->ctrl = p;
    for (int s = 0; s < BT_NSTEPS; s++)
        atomic_store_explicit(&conn->ctrl->sizes[s], -1, memory_order_relaxed);
    for (int pr = 0; pr < BT_NUM_PROTOS; pr++)
        conn->buf[pr] = (char *)p + bt_fifo_proto_offset(sizes, pr);
    if (gdr) {
        /* whole pages: a dma-buf covers exactly what it registers */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        nc->gpu_bytes = (size_t)sizes->slot_bytes[BT_PROTO_SIMPLE] * BT_NSTEPS;
        nc->gpu_bytes = (nc->gpu_bytes + page - 1) / page * page;
        nc->gpu_dev = bt_device_get(); /* the comm's: registrations run on the proxy's thread */
        nc->gpu_reg = gdr_reg_type(nc->net, nc->dev);
        void *d = NULL;
        bt_status_t st = bt_device_alloc_zeroed(&d, nc->gpu_bytes ? nc->gpu_bytes : 1);
        if (st != BT_OK) {
            BT_WARN("%s: %zu bytes of GPU memory for a GPUDirect RDMA FIFO: not given", nc->via,
                    nc->gpu_bytes);
            for (int pr = 0; pr < BT_NUM_PROTOS; pr++)
                conn->buf[pr] = NULL;
            return st;
        }
        nc->gpu_data = d;
        for (int pr = 0; pr < BT_NUM_PROTOS; pr++) /* Simple alone crosses the network */
            conn->buf[pr] = pr == BT_PROTO_SIMPLE ? nc->gpu_data : NULL;
        conn->gdr = 1;
        conn->zero_copy = 0; /* the kernels fill the slots; user buffers are not the proxy's */
        /* (held counts host memory; the GPU executor counts these bytes) */
        nc->flush = nc->flush || bt_param_net_force_flush() != 0; /* -1 (default): flush */
        BT_INFO(BT_LOG_NET | BT_LOG_INIT,
                "%s: %s channel %d with rank %d: Simple slots in GPU memory (GPUDirect RDMA, "
                "%zu bytes, %s)%s",
                nc->via, conn->kind, conn->channel, conn->peer, nc->gpu_bytes,
                nc->gpu_reg == NCCL_PTR_DMABUF ? "dma-buf" : "CUDA pointer",
                !conn->is_send && nc->flush ? ", receives flushed" : "");
    }
    return BT_OK;
}

static bt_status_t net_listen_rpc(void *arg);

/* The last PCI function ("dddd:bb:dd.f") along a sysfs path, copied to out; 0 when none.
 * A NIC is one PCI function however it is named: /sys/class/net/<if>/device and
 * /sys/class/infiniband/<dev>/device of one card resolve to paths through the same function
 * (a plugin's pciPath may end below it, as a virtio device does). */
static int pci_function(const char *path, char *out, size_t len)
{
    static const char shape[] = "xxxx:xx:xx.x"; /* x: a hex digit */
    const size_t n = sizeof(shape) - 1;
    int found = 0;
    for (const char *c = path; c && *c; c = strchr(c, '/')) {
        c += *c == '/';
        size_t k = 0;
        while (k < n && c[k] &&
               (shape[k] == 'x' ? isxdigit((unsigned char)c[k]) : c[k] == shape[k]))
            k++;
        if (k == n && (c[n] == '/' || c[n] == '\0')) {
            snprintf(out, len, "%.*s", (int)n, c);
            found = 1;
        }
    }
    return found;
}

/* Whether network device d is the interface the topology named (ctx->nic): by name (the
 * socket backend's devices are interfaces), else by PCI function (verbs and plugin devices
 * have their own names, mlx5_0 or rdmap0s6, for the card of interface ib0 or eth1). */
static int dev_is_nic(const ncclNetProperties_v11_t *p, const char *nic)
{
    if (p->name && strcmp(p->name, nic) == 0)
        return 1;
    char path[320], real[PATH_MAX], a[16], b[16];
    snprintf(path, sizeof(path), "/sys/class/net/%s/device", nic);
    return p->pciPath && realpath(path, real) && pci_function(real, a, sizeof(a)) &&
           pci_function(p->pciPath, b, sizeof(b)) && strcasecmp(a, b) == 0;
}

/* The device (NIC) a receiving connector listens on. CROSS_NIC=0 keeps each channel on one
 * rail on every rank: channel c on device c mod ndev. Otherwise a GPU rank uses the device
 * nearest its GPU when the topology names one (ctx->nic, rail-optimized: GPU k of every
 * host on NIC k), and host ranks spread their channels over the devices the same way. */
static int pick_dev(const struct bt_transport_ctx *ctx, const struct bt_conn *conn,
                    const struct bt_net *net)
{
    if (net->ndev <= 1)
        return 0;
    if (bt_param_cross_nic() != 0 && ctx->nic[0])
        for (int d = 0; d < net->ndev; d++)
            if (dev_is_nic(&net->props[d], ctx->nic))
                return d;
    return conn->channel % net->ndev;
}

/* Whether this connector's steps may use user buffers directly (NET_ZERO_COPY). */
static int zero_copy_ok(const struct bt_net *net, int dev)
{
    int64_t p = bt_param_net_zero_copy();
    if (p >= 0)
        return p != 0;
    return net->be->ext.zero_copy_safe && net->be->ext.zero_copy_safe(dev);
}

static bt_status_t net_setup(struct bt_transport_ctx *ctx, struct bt_conn *conn, void *info_p)
{
    struct net_info *info = info_p;
    memset(info, 0, sizeof(*info));
    struct bt_net *net = NULL;
    BT_CHECK(bt_transport_network(ctx, &net));
    if (!ctx->proxy)
        BT_CHECK(bt_proxy_create(ctx->name, ctx->abort_flag, ctx->proxy_cpus, &ctx->proxy));
    struct net_conn *nc = calloc(1, sizeof(*nc));
    if (!nc)
        return BT_ERR_SYSTEM;
    nc->net = net;
    nc->t = net->v11;
    nc->conn = conn;
    nc->ctx = ctx;
    conn->tp_priv = nc;
    nc->dev = pick_dev(ctx, conn, net);
    nc->flush = net->props[nc->dev].forceFlush != 0;
    conn->zero_copy = zero_copy_ok(net, nc->dev);
    snprintf(nc->via, sizeof(nc->via), "NET/%s/%d", nc->t->name, nc->dev);
    if (conn->is_send)
        return BT_OK;                        /* the FIFO is sized by the receiver's blob */
    conn->sizes.slot_bytes[BT_PROTO_LL] = 0; /* Simple only over the network */
    const char *dname = net->props[nc->dev].name;
    BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET: %s channel %d from rank %d on %s device %d (%s)",
            conn->kind, conn->channel, conn->peer, nc->t->name, nc->dev, dname ? dname : "?");
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
    BT_CHECK(
        bt_net_status(nc->t->connect(nc->net->ctx, nc->dev, nc->handle, &nc->send_comm, NULL)));
    *done_p = nc->send_comm != NULL;
    return BT_OK;
}

static bt_status_t try_accept(struct net_conn *nc, int *done_p)
{
    BT_CHECK(bt_net_status(nc->t->accept(nc->listen_comm, &nc->recv_comm, NULL)));
    *done_p = nc->recv_comm != NULL;
    return BT_OK;
}

/* Try until done, the deadline, an abort or the peer is down (gone, or failed; of another
 * host: said so, or its listener refuses a second into the wait: looked for every 50 ms;
 * transport/connect.c then names it). A connect to a peer that died keeps being refused or
 * retried by the backend, so only these checks end it before TIMEOUT. */
static bt_status_t net_wait(struct net_conn *nc, net_try_fn try_once, const char *what)
{
    int peer = nc->conn->peer;
    uint64_t start = bt_time_ns(), deadline = bt_deadline_from_now();
    uint64_t check = start + BT_PEER_CHECK_NS;
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
            if ((nc->ctx->peer_down && nc->ctx->peer_down(nc->ctx->live_arg, peer)) ||
                (nc->ctx->peer_lost && nc->ctx->peer_lost(nc->ctx->live_arg, peer, now - start))) {
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

/* Connection control runs on the proxy's service thread (setup, connect and close are the
 * service plane; data is the progress plane). caller: service thread. */
static bt_status_t net_listen_rpc(void *arg)
{
    struct net_conn *nc = arg;
    return bt_net_status(nc->t->listen(nc->net->ctx, nc->dev, nc->handle, &nc->listen_comm));
}

/* GPU slots by dma-buf, as NCCL hands them to a plugin: a descriptor for exactly the slots
 * (page-aligned, whole pages: fifo_alloc), type NCCL_PTR_CUDA (the descriptor says dma-buf),
 * offset 0, closed once registered. Where the slots are not page-aligned (a cudaMalloc may
 * be), or the GPU gives no descriptor: as a CUDA pointer where the device also takes one. */
static ncclResult_t reg_dmabuf(struct net_conn *nc, void *comm)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int fd = -1;
    if ((uintptr_t)nc->gpu_data % page != 0 || nc->gpu_bytes % page != 0 ||
        bt_device_dmabuf_fd(nc->gpu_data, nc->gpu_bytes, &fd) != BT_OK) {
        if (!(nc->net->props[nc->dev].ptrSupport & NCCL_PTR_CUDA))
            return ncclSystemError;
        BT_INFO(BT_LOG_NET, "%s: no dma-buf for the GPU slots; registering them as a CUDA pointer",
                nc->via);
        return nc->t->regMr(comm, nc->gpu_data, nc->gpu_bytes, NCCL_PTR_CUDA, &nc->fifo_mh);
    }
    ncclResult_t r =
        nc->t->regMrDmaBuf(comm, nc->gpu_data, nc->gpu_bytes, NCCL_PTR_CUDA, 0, fd, &nc->fifo_mh);
    close(fd);
    return r;
}

/* The FIFO's slots are registered once, with the comm that moves them: the host FIFO, or
 * (GPUDirect RDMA) the Simple slots in GPU memory, by dma-buf or as a CUDA pointer
 * (gdr_reg_type). */
static bt_status_t fifo_register(struct net_conn *nc, void *comm)
{
    void *data = nc->gpu_data ? (void *)nc->gpu_data : nc->fifo;
    size_t bytes = nc->gpu_data ? nc->gpu_bytes : nc->fifo_bytes;
    int type = nc->gpu_data ? nc->gpu_reg : NCCL_PTR_HOST;
    if (nc->gpu_data && bt_device_set(nc->gpu_dev) != BT_OK) /* a backend asks which GPU */
        return BT_ERR_CUDA;
    ncclResult_t r = type == NCCL_PTR_DMABUF ? reg_dmabuf(nc, comm)
                                             : nc->t->regMr(comm, data, bytes, type, &nc->fifo_mh);
    if (r != ncclSuccess) {
        BT_WARN("%s: registering the %zu-byte FIFO (%s) with rank %d failed (error %d)", nc->via,
                bytes,
                type == NCCL_PTR_DMABUF ? "GPU memory, dma-buf"
                : nc->gpu_data          ? "GPU memory"
                                        : "host memory",
                nc->conn->peer, (int)r);
        return bt_net_status(r);
    }
    return BT_OK;
}

static bt_status_t net_connect_rpc(void *arg)
{
    struct net_conn *nc = arg;
    bt_status_t st = net_wait(nc, try_connect, "network connect");
    if (st != BT_OK) {
        if (nc->net->be->ext.connect_cancel) /* the attempt's resources, if it still has some */
            nc->net->be->ext.connect_cancel(nc->net->ctx, nc->dev, nc->handle);
        return st;
    }
    return fifo_register(nc, nc->send_comm);
}

static bt_status_t net_accept_rpc(void *arg)
{
    struct net_conn *nc = arg;
    BT_CHECK(net_wait(nc, try_accept, "network accept"));
    nc->t->closeListen(nc->listen_comm);
    nc->listen_comm = NULL;
    return fifo_register(nc, nc->recv_comm);
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
    void *comm = nc->send_comm ? nc->send_comm : nc->recv_comm;
    for (int i = 0; i < NET_MR_CACHE; i++)
        if (nc->mr[i].mh)
            nc->t->deregMr(comm, nc->mr[i].mh);
    if (nc->fifo_mh)
        nc->t->deregMr(comm, nc->fifo_mh);
    if (nc->send_comm)
        nc->t->closeSend(nc->send_comm);
    if (nc->recv_comm)
        nc->t->closeRecv(nc->recv_comm);
    if (nc->listen_comm)
        nc->t->closeListen(nc->listen_comm);
    free(nc->fifo);
    bt_device_free(nc->gpu_data);
    free(nc);
    conn->tp_priv = NULL;
}

static const char *net_via(const struct bt_conn *conn)
{
    const struct net_conn *nc = conn->tp_priv;
    return nc ? nc->via : "NET";
}

/* ---- proxy progress ----------------------------------------------------------------- */

/* The registration covering [ptr, ptr + bytes) for zero-copy steps: the FIFO's, a cached
 * one, or a new one (the least recently used is dropped when the cache is full).
 * caller: progress thread. */
static bt_status_t net_mr(struct net_conn *nc, void *comm, void *ptr, size_t bytes, void **mh_p)
{
    char *p = ptr;
    if ((p >= (char *)nc->fifo && p + bytes <= (char *)nc->fifo + nc->fifo_bytes) ||
        (nc->gpu_data && p >= nc->gpu_data && p + bytes <= nc->gpu_data + nc->gpu_bytes)) {
        *mh_p = nc->fifo_mh;
        return BT_OK;
    }
    int lru = 0;
    for (int i = 0; i < NET_MR_CACHE; i++) {
        struct net_mr *m = &nc->mr[i];
        if (m->mh && p >= m->ptr && p + bytes <= m->ptr + m->bytes) {
            m->used = ++nc->mr_clock;
            *mh_p = m->mh;
            return BT_OK;
        }
        if (m->used < nc->mr[lru].used)
            lru = i;
    }
    struct net_mr *m = &nc->mr[lru];
    if (m->mh)
        nc->t->deregMr(comm, m->mh);
    m->mh = NULL;
    ncclResult_t r = nc->t->regMr(comm, ptr, bytes, NCCL_PTR_HOST, &m->mh);
    if (r != ncclSuccess) {
        m->mh = NULL;
        BT_WARN("%s: registering a %zu-byte user buffer failed (error %d)", nc->via, bytes, (int)r);
        return bt_net_status(r);
    }
    m->ptr = p;
    m->bytes = bytes;
    m->used = ++nc->mr_clock;
    *mh_p = m->mh;
    return BT_OK;
}

/* Test the oldest request of the connector that is inside this op's steps; 1 when it
 * finished (nc->done then moves past it). A receive on a device that asks for it is
 * flushed before it counts as finished. caller: progress. */
static bt_status_t net_test_next(struct net_op *op, struct net_conn *nc, struct bt_proxy_sub *sub,
                                 int *done_p, size_t *size_p)
{
    uint64_t end = op->base + sub->nsteps;
    *done_p = 0;
    if (nc->done < op->base || nc->done >= nc->posted || nc->done >= end)
        return BT_OK;
    bt_proxy_sub_stage(sub, "network completion");
    if (!nc->flushing) {
        int done = 0, size = -1; /* an old plugin may leave the size unset */
        BT_CHECK(bt_net_status(nc->t->test(nc->req[nc->done % BT_NSTEPS], &done, &size)));
        if (!done)
            return BT_OK;
        *size_p = size > 0 ? (size_t)size : 0;
        nc->flushing = 1;
        if (nc->flush && !op->top.args.is_send) {
            /* the bytes that landed, in the buffer they landed in (a slot, or a user buffer
             * through its own registration) */
            const int k = (int)(nc->done % BT_NSTEPS);
            void *data = nc->rstep[k].data;
            int bytes = size > 0 ? size : nc->rstep[k].bytes;
            nc->flush_req = NULL;
            BT_CHECK(bt_net_status(
                nc->t->iflush(nc->recv_comm, 1, &data, &bytes, &nc->rstep[k].mh, &nc->flush_req)));
        }
    }
    if (nc->flush_req) {
        int done = 0;
        BT_CHECK(bt_net_status(nc->t->test(nc->flush_req, &done, NULL)));
        if (!done)
            return BT_OK;
        nc->flush_req = NULL;
    }
    nc->flushing = 0;
    *done_p = 1;
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
        size_t bytes = (size_t)(size > 0 ? size : 0);
        if (!data || bytes == 0)
            data = bt_conn_slot(c, BT_PROTO_SIMPLE, s);
        void *req = NULL, *mh = NULL;
        BT_CHECK(net_mr(nc, nc->send_comm, data, bytes, &mh));
        BT_CHECK(bt_net_status(nc->t->isend(nc->send_comm, data, bytes, 0, mh, NULL, &req)));
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
        int zc_here = zc && zc->ptr && zc->bytes > 0;
        void *data = zc_here ? zc->ptr : bt_conn_slot(c, BT_PROTO_SIMPLE, s);
        size_t bytes = zc_here ? zc->bytes : c->sizes.slot_bytes[BT_PROTO_SIMPLE];
        void *req = NULL, *mh = NULL;
        int tag = 0;
        BT_CHECK(net_mr(nc, nc->recv_comm, data, bytes, &mh));
        BT_CHECK(
            bt_net_status(nc->t->irecv(nc->recv_comm, 1, &data, &bytes, &tag, &mh, NULL, &req)));
        if (!req)
            break;
        nc->req[s % BT_NSTEPS] = req;
        nc->rstep[s % BT_NSTEPS].data = data;
        nc->rstep[s % BT_NSTEPS].mh = mh;
        nc->rstep[s % BT_NSTEPS].bytes = (int)bytes;
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
    if (!nc->net->be->ext.pollfds || nc->done < op->base || nc->done >= nc->posted ||
        nc->done >= end)
        return 0;
    return nc->net->be->ext.pollfds(args->is_send ? nc->send_comm : nc->recv_comm, fds, max);
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

/* The network's figures for the tuner: the slowest device this rank may use (channels spread
 * over them), its speed and latency as the backend reports them. */
static void net_link(struct bt_transport_ctx *ctx, struct bt_link_figures *f)
{
    struct bt_net *net = NULL;
    if (bt_transport_network(ctx, &net) != BT_OK)
        return; /* the first connector says why */
    for (int d = 0; d < net->ndev; d++) {
        const ncclNetProperties_v11_t *p = &net->props[d];
        float gbps = p->speed > 0 ? (float)p->speed / 8000.0f : 0.0f; /* Mbps */
        if (gbps > 0 && (f->gbps == 0 || gbps < f->gbps))
            f->gbps = gbps;
        if (p->latency > f->latency_us)
            f->latency_us = p->latency;
    }
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
    .link = net_link,
};
