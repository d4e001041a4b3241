/*
 * GPU connectors through host connectors: when a rank is on another host (or P2P and
 * shared memory are both disabled), the kernels run the same Simple steps over FIFOs in
 * host memory that the host transports own, and the CPU proxy moves them:
 *
 *   setup   connect the comm's rings (link BT_LINK_GPU_RING, channel c) and a send/recv pair
 *           per peer (BT_LINK_GPU_P2P) with the host's connection machinery; register each
 *           FIFO with cudaHostRegister; the kernels get device views of them. Where ranks sit
 *           on several hosts and GPU_TREES asks, each channel's tree too (graph/channel.h:
 *           chains inside hosts, binary trees between them; links BT_LINK_GPU_TREE_*; up to 6
 *           FIFOs on each of the channels a tree may use, half of them). Here, not at the first
 * tree AllReduce: setup is where every rank of the group connects together (a thread driving
 * several ranks launches their collectives one after another, so one rank's connect there would
 * wait for a rank whose turn has not come) launch  per work, count the steps of each NET connector
 * (bt_work_conn_steps, as the host launch does) and post them to the proxy: it isends a slot once
 * the kernel's tail passes it and returns credit in head; it irecvs into a slot once the kernel's
 * head frees it and publishes tail. The launch does not wait: the ops are reaped at later launches
 * and when the comm is freed.
 *
 * These connectors are the GPU's own (their own link keys): the host executor's connectors
 * of the same comm keep their own step counters. Where NET_GDR_LEVEL admits the GPU's path to
 * a NIC (gpu_near, gpu_far), a network that reaches GPU memory keeps their Simple slots there
 * (GPUDirect RDMA, transport/net.c). Only Simple crosses (LL needs whole 16-byte stores,
 * which a network receive does not make), BT_GPU_NET_NCHANNELS ring channels (or
 * MIN_NCHANNELS), one part per send/recv.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/algo.h"
#include "coll/steps.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "exec/cuda/kargs.h"
#include "topo/topo.h"
#include "transport/connect.h"
#include "transport/transport.h"
#include "util/array.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

static size_t page_round(size_t b)
{
    return (b + 4095) & ~(size_t)4095;
}

/* Channels through the network: each is a ring of its own connections, so more channels
 * keep more sockets and proxy steps in flight (2 x H200 over loopback sockets, AllReduce
 * 64 MB: 1 channel 2.4-4.3 GB/s, 4 channels 8.3-10.7, 8 channels 12.5-15.9; NCCL 7.5-11). */
#define BT_GPU_NET_NCHANNELS 8

void bt_cuda_hostconn_geometry(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc)
{
    int nch = ec->tune->min_nchannels > BT_GPU_NET_NCHANNELS ? ec->tune->min_nchannels
                                                             : BT_GPU_NET_NCHANNELS;
    if (nch > BT_MAX_CHANNELS) /* the host's channel limit */
        nch = BT_MAX_CHANNELS;
    if (nch > cc->nch)
        nch = cc->nch;
    cc->nch = nch < 1 ? 1 : nch;
    cc->np2p = cc->np2p_run = 1;
    cc->slot = ec->simple_slot; /* steps are the host connectors' slots */
}

/* The device view of a connected host connector: its FIFO registered with CUDA (with
 * GPUDirect RDMA, h->gdr: its control block alone; the Simple slots are GPU memory already). */
static bt_status_t dview(const struct bt_conn *h, struct bt_conn *d, int ch)
{
    size_t bytes =
        page_round(h->gdr ? bt_fifo_proto_offset(&h->sizes, 0) : bt_fifo_bytes(&h->sizes));
    void *dptr = NULL;
    cudaError_t e =
        cudaHostRegister(h->ctrl, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (e == cudaSuccess)
        e = cudaHostGetDevicePointer(&dptr, h->ctrl, 0);
    if (e != cudaSuccess) {
        BT_WARN("cudaHostRegister of a %zu-byte %s FIFO with rank %d failed: %s", bytes,
                h->tp ? h->tp->name : "host", h->peer, cudaGetErrorString(e));
        return BT_ERR_CUDA;
    }
    bt_cuda_dconn_init(d, dptr, &h->sizes, h->peer, h->is_send, ch);
    for (int pr = 0; h->gdr && pr < BT_NUM_PROTOS; pr++) /* Simple alone: GPU memory */
        d->buf[pr] = pr == BT_PROTO_SIMPLE ? h->buf[pr] : NULL;
    return BT_OK;
}

/* GPU memory a connected host connector's transport holds for the kernels (GPUDirect RDMA's
 * slots), for the executor's count (ncclCommMemStats). */
static size_t gpu_slot_bytes(const struct bt_conn *h)
{
    return h->gdr ? (size_t)h->sizes.slot_bytes[BT_PROTO_SIMPLE] * BT_NSTEPS : 0;
}

/* Whether NET_GDR_LEVEL admits GPU memory for this rank's network FIFOs (GPUDirect RDMA,
 * transport/net.c; only with GDR_ENABLE=1 while it is unproven): on the GPU's nearest NIC
 * (*near: the topology's path to it, fifos.c found it) and on any other (*far: SYS). */
static void gdr_admitted(const struct bt_transport_ctx *ctx, int *near, int *far)
{
    *near = *far = 0;
    if (!bt_param_gdr_enable())
        return;
    const char *s = bt_param_str_net_gdr_level();
    int level = bt_topo_path_parse(s);
    if (level == -2) {
        BT_WARN("NET_GDR_LEVEL=%s names no path class (LOC, PIX, PXB, PHB, NODE, SYS): "
                "GPUDirect RDMA stays off",
                s);
        return;
    }
    *near = level >= 0 && (ctx->nic_path >= 0 ? ctx->nic_path : BT_PATH_SYS) <= level;
    *far = level >= BT_PATH_SYS;
}

/* The connectors of channel h's tree, each with its link kind: the parent's pair, then each
 * child's. Returns how many (<= 2 + 2 * BT_TREE_ARITY). */
struct tree_conn {
    struct bt_conn *conn;
    int peer, is_send;
    enum bt_link_kind kind;
};
static int tree_conns(struct bt_channel *h, struct tree_conn *t)
{
    int n = 0;
    if (h->tree.up >= 0) {
        t[n++] = (struct tree_conn){&h->tree_up_send, h->tree.up, 1, BT_LINK_GPU_TREE_UP};
        t[n++] = (struct tree_conn){&h->tree_up_recv, h->tree.up, 0, BT_LINK_GPU_TREE_DOWN};
    }
    for (int k = 0; k < h->tree.ndown; k++) {
        int d = h->tree.down[k];
        t[n++] = (struct tree_conn){&h->tree_down_recv[k], d, 0, BT_LINK_GPU_TREE_UP};
        t[n++] = (struct tree_conn){&h->tree_down_send[k], d, 1, BT_LINK_GPU_TREE_DOWN};
    }
    return n;
}
#define MAX_TREE_CONNS (2 + 2 * BT_TREE_ARITY)

bt_status_t bt_cuda_hostconn_connect(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc,
                                     struct bt_channel *ch, int *order, struct bt_conn *p2p)
{
    int gdr_near, gdr_far;
    gdr_admitted(ec->tctx, &gdr_near, &gdr_far);
    int n = cc->nranks, me = cc->rank;
    /* Simple only through host connectors; their slots are the communicator's */
    struct bt_fifo_sizes z = {{0}};
    z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)ec->simple_slot;
    cc->hchan = calloc((size_t)cc->nch, sizeof(*cc->hchan));
    cc->hp2p = calloc(2 * (size_t)n, sizeof(*cc->hp2p));
    cc->hpeer = calloc(2 * (size_t)n, sizeof(*cc->hpeer));
    /* Trees where they can beat the ring: ranks on more than one host (on one host the
     * kernels meet in shared memory, where the ring and one-shot serve), GPU_TREES and ALGO
     * allowing; rank 0's settings, so every rank agrees. */
    cc->trees = ec->host && ec->nhosts > 1 && ec->tune->tree_ok && ec->tune->gpu_trees &&
                bt_cuda_tree_channels(cc) > 0;
    struct bt_conn_req *reqs =
        calloc((size_t)(2 + MAX_TREE_CONNS) * (size_t)cc->nch + 2 * (size_t)n, sizeof(*reqs));
    if (!cc->hchan || !cc->hp2p || !cc->hpeer || !reqs) {
        free(reqs);
        BT_WARN("out of memory setting up GPU connectors over the network");
        return BT_ERR_SYSTEM;
    }
    int nreq = 0;
#define REQ(conn_, peer_, send_, kind_, ch_)                                                       \
    do {                                                                                           \
        bt_connect_prepare((conn_), (peer_), (send_), (kind_), (ch_), &z);                         \
        (conn_)->gpu_near = gdr_near; /* GPUDirect RDMA: transport/net.c */                        \
        (conn_)->gpu_far = gdr_far;                                                                \
        reqs[nreq].ctx = ec->tctx;                                                                 \
        reqs[nreq].conn = (conn_);                                                                 \
        reqs[nreq++].key = bt_link_key((kind_), (ch_));                                            \
    } while (0)
    for (int c = 0; c < cc->nch; c++) {
        struct bt_channel *h = &cc->hchan[c];
        h->id = c;
        h->ring = ec->channels[c % ec->nchannels].ring; /* the order stays the comm's */
        REQ(&h->ring_send, h->ring.next, 1, BT_LINK_GPU_RING, c);
        REQ(&h->ring_recv, h->ring.prev, 0, BT_LINK_GPU_RING, c);
        h->tree = (struct bt_tree){.up = -1, .down = {-1, -1}};
        if (!cc->trees || c >= bt_cuda_tree_channels(cc))
            continue;
        bt_graph_tree(n, me, ec->host, c % 2, &h->tree); /* channels take the trees in turn */
        struct tree_conn t[MAX_TREE_CONNS];
        for (int k = 0, nt = tree_conns(h, t); k < nt; k++)
            REQ(t[k].conn, t[k].peer, t[k].is_send, t[k].kind, c);
    }
    for (int r = 0; r < n; r++) {
        if (r == me)
            continue;
        REQ(&cc->hp2p[bt_cuda_p2p_index(cc, r, 0, 0)], r, 1, BT_LINK_GPU_P2P, 0);
        REQ(&cc->hp2p[bt_cuda_p2p_index(cc, r, 1, 0)], r, 0, BT_LINK_GPU_P2P, 0);
    }
#undef REQ
    bt_status_t st = bt_connect_all(reqs, nreq);
    free(reqs);
    if (st != BT_OK)
        return st;

    for (int c = 0; c < cc->nch; c++) {
        const struct bt_channel *h = &cc->hchan[c];
        memcpy(order + (size_t)c * n, h->ring.order, sizeof(int) * (size_t)n);
        int *dorder = ch[c].ring.order; /* set by the caller: device memory */
        ch[c].ring = h->ring;
        ch[c].ring.order = dorder;
        ch[c].ring.split = NULL; /* host memory; GPU rings use equal blocks */
        ch[c].ring.split_max = 0;
        BT_CHECK(dview(&h->ring_send, &ch[c].ring_send, c));
        BT_CHECK(dview(&h->ring_recv, &ch[c].ring_recv, c));
        cc->dev_bytes += gpu_slot_bytes(&h->ring_send) + gpu_slot_bytes(&h->ring_recv);
        ch[c].tree = h->tree;
        struct tree_conn t[MAX_TREE_CONNS];
        for (int k = 0, nt = tree_conns(&cc->hchan[c], t); k < nt; k++) {
            /* the device connector at the host one's place in the channel */
            struct bt_conn *d =
                (struct bt_conn *)((char *)&ch[c] + ((char *)t[k].conn - (char *)&cc->hchan[c]));
            BT_CHECK(dview(t[k].conn, d, c));
            cc->dev_bytes += gpu_slot_bytes(t[k].conn);
        }
    }
    for (int r = 0; r < n; r++) {
        for (int d = 0; d < 2 && r != me; d++) {
            int i = bt_cuda_p2p_index(cc, r, d, 0);
            BT_CHECK(dview(&cc->hp2p[i], &p2p[i], 0));
            cc->dev_bytes += gpu_slot_bytes(&cc->hp2p[i]);
            cc->hpeer[(size_t)d * n + r] = &cc->hp2p[i]; /* laid out as fifos.c's upload */
        }
    }
    BT_INFO(BT_LOG_INIT, "GPU %d: %d channel(s) through host connectors (%s), %u-byte slots%s",
            cc->dev, cc->nch, bt_conn_via(&cc->hchan[0].ring_send),
            cc->hchan[0].ring_send.sizes.slot_bytes[BT_PROTO_SIMPLE],
            cc->trees ? ", trees over hosts" : "");
    return BT_OK;
}

/* The host connector a device connector pointer of a work stands for: the same place in the
 * host's channels (a ring's or tree's) or send/recv connectors. */
static struct bt_conn *host_of(struct bt_cuda_comm *cc, const struct bt_conn *d)
{
    uintptr_t p = (uintptr_t)d;
    uintptr_t c0 = (uintptr_t)cc->dchan, c1 = (uintptr_t)(cc->dchan + cc->nch);
    if (p >= c0 && p < c1)
        return (struct bt_conn *)((char *)cc->hchan + (p - c0));
    return &cc->hp2p[d - cc->dp2p];
}

/* Hand the proxy the network steps of one work (one channel's). */
static bt_status_t post_work(struct bt_cuda_comm *cc, struct bt_work w)
{
    /* walk the schedule over the host's channel: same peers, host connectors */
    int c = w.chan ? (int)(w.chan - cc->dchan) : -1;
    if (c >= 0)
        w.chan = &cc->hchan[c];
    if (w.p2p_conn)
        w.p2p_conn = host_of(cc, w.p2p_conn);
    if (w.peer_send) { /* PAT: the peer tables' host twins (np2p = 1: one table each way) */
        w.peer_send = cc->hpeer + (w.peer_send - cc->dpeer_send);
        w.peer_recv = cc->hpeer + (w.peer_recv - cc->dpeer_send);
    }
    struct bt_conn_steps t[BT_WORK_MAX_CONNS];
    int nt = 0;
    /* shared memory: the kernels meet in the FIFO */
    BT_CHECK(bt_work_conn_steps(&w, bt_conn_proxied, 0, t, BT_WORK_MAX_CONNS, &nt, NULL));
    for (int e = 0; e < nt; e++) {
        if (bt_array_grow((void **)&cc->netops, &cc->netops_cap, cc->nnetops + 1,
                          sizeof(*cc->netops)) != 0)
            return BT_ERR_SYSTEM;
        BT_CHECK(
            bt_transport_post(cc->ctx, t[e].conn, t[e].nsteps, NULL, &cc->netops[cc->nnetops].op));
        cc->netops[cc->nnetops++].peer = t[e].conn->peer;
    }
    return BT_OK;
}

bt_status_t bt_cuda_hostconn_post(struct bt_cuda_comm *cc, const struct bt_cuda_kargs *a)
{
    if (!cc->net)
        return BT_OK;
    for (int i = 0; i < a->h.nworks; i++) {
        uint32_t nchans = a->works[i].nchans > 1 ? a->works[i].nchans : 1;
        for (uint32_t c = 0; c < nchans; c++) {
            struct bt_work w = a->works[i];
            if (nchans > 1)
                bt_work_channel(&w, c);
            BT_CHECK(post_work(cc, w));
        }
    }
    return BT_OK;
}

bt_status_t bt_cuda_hostconn_reap(struct bt_cuda_comm *cc, int wait)
{
    if (!cc || !cc->net)
        return BT_OK;
    bt_status_t st = BT_OK;
    int keep = 0;
    uint64_t deadline = wait ? bt_deadline_from_now() : 0;
    for (int i = 0; i < cc->nnetops; i++) {
        struct bt_cuda_netop *o = &cc->netops[i];
        bt_status_t s = BT_OK;
        int done = bt_transport_op_test(o->op, &s); /* frees the op once it is complete */
        while (!done && wait && bt_time_ns() < deadline) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
            done = bt_transport_op_test(o->op, &s);
        }
        if (!done) { /* in flight (or past TIMEOUT): the proxy still holds it */
            cc->netops[keep++] = *o;
            continue;
        }
        if (s != BT_OK && st == BT_OK) {
            BT_WARN("rank %d: network transfer with rank %d for a GPU operation failed (error %d)",
                    cc->rank, o->peer, (int)s);
            st = s;
        }
    }
    cc->nnetops = keep;
    if (wait && keep > 0 && st == BT_OK)
        st = BT_ERR_REMOTE;
    return st;
}

static void hconn_free(struct bt_conn *h)
{
    if (h->ctrl && h->connected && cudaHostUnregister(h->ctrl) != cudaSuccess)
        (void)cudaGetLastError(); /* not registered: setup failed before it */
    bt_conn_free(h);
}

/* caller: after the comm's kernels have finished, while the proxy still runs */
void bt_cuda_hostconn_drain(struct bt_cuda_comm *cc)
{
    if (!cc || !cc->net)
        return;
    /* The proxy must be done with the FIFOs. Once the kernels are over, only the last
     * sends may still be in flight; after a kernel error nothing will move them, so the
     * proxy is told to drop them (the comm is going away), and once more after TIMEOUT. */
    if (cc->nnetops > 0 && cc->report_h && cc->report_h->error != BT_EXEC_ERR_NONE)
        __atomic_store_n(cc->ctx->abort_flag, 1, __ATOMIC_RELEASE);
    (void)bt_cuda_hostconn_reap(cc, 1);
    if (cc->nnetops > 0) {
        __atomic_store_n(cc->ctx->abort_flag, 1, __ATOMIC_RELEASE);
        (void)bt_cuda_hostconn_reap(cc, 1);
    }
}

/* caller: after bt_cuda_hostconn_drain and after the proxy has ended */
void bt_cuda_hostconn_free(struct bt_cuda_comm *cc)
{
    if (cc->nnetops > 0) {
        BT_WARN("rank %d: %d network transfers of GPU operations did not finish; their FIFOs "
                "are left allocated",
                cc->rank, cc->nnetops);
        cc->hchan = NULL;
        cc->hp2p = NULL;
    }
    free(cc->netops);
    cc->netops = NULL;
    cc->nnetops = cc->netops_cap = 0;
    for (int c = 0; cc->hchan && c < cc->nch; c++) {
        hconn_free(&cc->hchan[c].ring_send);
        hconn_free(&cc->hchan[c].ring_recv);
        struct tree_conn t[MAX_TREE_CONNS];
        for (int k = 0, nt = tree_conns(&cc->hchan[c], t); k < nt; k++)
            hconn_free(t[k].conn);
    }
    for (int i = 0; cc->hp2p && i < 2 * cc->nranks; i++)
        hconn_free(&cc->hp2p[i]);
    free(cc->hchan);
    free(cc->hp2p);
    free(cc->hpeer);
    cc->hchan = NULL;
    cc->hp2p = NULL;
    cc->hpeer = NULL;
}
