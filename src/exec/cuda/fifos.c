/*
 * GPU connectors between the ranks' GPUs: each rank's receive FIFOs live in its own GPU
 * memory, and every sender maps the receiver's allocations into its address space: with
 * cudaIpcOpenMemHandle between processes (the handle names the allocation's base, the FIFO
 * is at a fixed offset from it), or the plain pointer with peer access enabled when both
 * GPUs belong to this process (ncclCommInitAll, or one thread per GPU). The sender's kernel
 * writes data and tail into the receiver's memory; the receiver's kernel writes head into
 * its own FIFO, which the sender reads through the mapping.
 *
 * A rank's allocations: the nch ring FIFOs in one (ring FIFO i receives ring channel i from
 * the ring's previous rank), then the "a peer timed out" line; and one per peer r it has
 * exchanged send/recv traffic with (p2p_own[r]): np2p FIFOs, FIFO k receiving part k of the
 * traffic from r (a large message is cut into np2p parts, one block each; the one-shot
 * AllReduce's channel k uses part k with every peer). Those are made when an operation first
 * needs them (bt_cuda_p2p_connect, called from core's launch before the op is placed: a
 * send or receive with r, or a collective the planner puts on every peer's connectors), as
 * NVIDIA's NCCL connects send/recv peers lazily: a job that never sends to a peer holds
 * nothing for it (7 x 8 x 5 MB of an 8-rank communicator's 420 MB). A rank sends to itself by
 * a copy, so it has no FIFOs from itself, and a one-rank communicator has none at all (its
 * collectives are copies). Every FIFO: the control block (tail, head, sizes), then BT_NSTEPS
 * slots of each protocol in enum order (bt_fifo_proto_offset): a send/recv FIFO 5 MB (4 MB
 * Simple, 512 KB LL, 512 KB LL128), a ring FIFO's LL128 slots 64 MB over the rank's ring
 * channels instead (1-4 MB a FIFO: cuda_comm.h, agree_geometry; LL128_BUFFSIZE sets them:
 * fifo_sizes), the most of a communicator's GPU memory (docs/ARCHITECTURE.md, "GPU
 * memory").
 *
 * Without peer access (P2P_DISABLE=1, or GPUs that cannot reach each other) the FIFOs live
 * in host shared memory instead, every peer's send/recv FIFOs in the one segment after the
 * rings (FIFO p2p_slot(r, owner) * np2p + k), connected at setup: each rank creates a
 * segment, every rank maps
 * its peers' segments, and each mapping is registered with cudaHostRegister so the kernels
 * read and write it over PCIe (the SHM path; names are unlinked once all have mapped them).
 *
 * Set up collectively at the first GPU operation of a communicator (every rank reaches it
 * at the same operation): allgathers of {pid, device, geometry}, then {handle or name}.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "graph/ring_plan.h"
#include "topo/topo.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/param.h"
#include "util/shm.h"

struct fifo_info {
    int pid;
    int dev;
    int want_shm; /* P2P_DISABLE=1 here */
    char bus[32]; /* PCI bus id: device indices differ between processes */
    int nch, np2p;
    int resident; /* blocks of the kernels this GPU runs at once: one per SM */
    int mps;      /* this process's contexts on the GPU are shared through CUDA MPS */
    uint64_t host_hash;
    uint64_t slot, ll_slot, ll128_slot;
    int ll128_set; /* LL128_BUFFSIZE set the ring slot (else the channels do, once agreed) */
    void *base;
    cudaIpcMemHandle_t handle;
    char shm_name[BT_SHM_NAME_MAX];
};

#define BT_FAIL_LINE 4096 /* after a rank's FIFOs: the word its peers set when they time out */

#define CUDA_TRY(call, what) BT_CHECK_GOTO(bt_device_error((int)(call), (what)), st, fail)
/* cudaMalloc of device memory the communicator holds, counted in cc->dev_bytes. */
#define DEV_ALLOC(ptr, bytes, what)                                                                \
    do {                                                                                           \
        size_t b_ = (bytes);                                                                       \
        CUDA_TRY(cudaMalloc((void **)(ptr), b_), (what));                                          \
        cc->dev_bytes += b_;                                                                       \
    } while (0)

/* The slots of a ring FIFO, or of a send/recv FIFO (ring 0: bt_cuda_p2p_ll128_slot). */
static struct bt_fifo_sizes fifo_sizes(const struct bt_cuda_comm *cc, int ring)
{
    struct bt_fifo_sizes z;
    z.slot_bytes[BT_PROTO_LL] = (uint32_t)cc->ll_slot;
    z.slot_bytes[BT_PROTO_SIMPLE] = (uint32_t)cc->slot;
    z.slot_bytes[BT_PROTO_LL128] = (uint32_t)(ring ? cc->ll128_slot : bt_cuda_p2p_ll128_slot(cc));
    return z;
}

static size_t fifo_bytes(const struct bt_fifo_sizes *z)
{
    return (bt_fifo_bytes(z) + 4095) & ~(size_t)4095;
}

/* Where sender `r`'s send/recv FIFOs are among those of `owner` (r != owner): none from itself. */
static int p2p_slot(int r, int owner)
{
    return r < owner ? r : r - 1;
}

/* A connector's device view: the FIFO at `fifo` (ours or mapped), stepping from 0. */
void bt_cuda_dconn_init(struct bt_conn *c, char *fifo, const struct bt_fifo_sizes *z, int peer,
                        int is_send, int ch)
{
    memset(c, 0, sizeof(*c));
    c->peer = peer;
    c->is_send = is_send;
    c->connected = 1;
    c->ctrl = (struct bt_fifo_ctrl *)fifo;
    c->sizes = *z;
    for (int p = 0; p < BT_NUM_PROTOS; p++)
        c->buf[p] = fifo + bt_fifo_proto_offset(z, p);
    c->channel = ch;
}

/* The connectors of send/recv traffic with rank `r` (r != this rank), np2p parts each way, at
 * conns[bt_cuda_p2p_index(cc, r, 0, 0)] on: sends into `theirs` (r's FIFOs from this rank, as
 * mapped here), receives from `own` (this rank's FIFOs from r). */
static void p2p_conns(const struct bt_cuda_comm *cc, int r, char *theirs, char *own,
                      struct bt_conn *conns)
{
    struct bt_fifo_sizes zp = fifo_sizes(cc, 0);
    size_t fbp = fifo_bytes(&zp);
    /* bt_cuda_p2p_index: the sends' parts, then the receives' */
    for (int k = 0; k < cc->np2p; k++) {
        bt_cuda_dconn_init(&conns[k], theirs + (size_t)k * fbp, &zp, r, 1, k);
        bt_cuda_dconn_init(&conns[cc->np2p + k], own + (size_t)k * fbp, &zp, r, 0, k);
    }
}

/* The staging copies of what the kernels see, filled by one of the two ways of connecting
 * and then copied to the device: channels (rings with device connectors), ring orders,
 * send/recv connectors (bt_cuda_p2p_index). */
struct stage {
    struct bt_channel *ch;
    int *order;
    struct bt_conn *p2p;
    int *best;       /* the ring over the ranks channel 0 follows (odd channels: reversed) */
    uint32_t **fail; /* [nranks]: every rank's failure word as mapped here */
};

/*
 * What the machine's topology (topo/topo.h) says: for this rank's GPU, the NUMA CPUs for the
 * proxy's threads and the nearest network device (ctx->proxy_cpus, ctx->nic); for ranks
 * that all share this host (!remote), the ring along the widest paths between their GPUs
 * and whether P2P_LEVEL keeps P2P off between two of them. Each rank works this out from its
 * own view of the machine; rank 0's ring and any rank's "P2P off" then hold for all (an
 * allgather), so the ranks agree even if their views differed. Without a topology: rank
 * order, P2P wherever CUDA allows. *nvl: 1 when every rank sees NVLink between every pair
 * of the communicator's GPUs (LL128 needs it). Returns 1 when P2P must stay off, 0, or -1 on
 * failure.
 */
static int gpu_topology(struct bt_transport_ctx *ctx, const struct fifo_info *all, int remote,
                        int *best, int *nvl)
{
    int n = ctx->nranks, me = ctx->rank, off = 0, w = n + 2; /* a vote: off, nvl, ring */
    int *votes = calloc((size_t)n * (size_t)w, sizeof(int));
    if (!votes)
        return -1;
    struct bt_topo *t = malloc(sizeof(*t));
    int *gpu = malloc(sizeof(int) * (size_t)n);
    /* no memory for the topology: rank order, and still join the allgather below */
    int known = t && gpu && bt_topo_get(t, me == 0) == BT_OK;
    int mine = known ? bt_topo_gpu_index(t, all[me].bus, all[me].dev) : -1;
    if (mine >= 0) {
        const char *cpus = bt_topo_numa_cpulist(t, t->nodes[t->gpu_node[mine]].numa);
        /* a list that filled its buffer may be cut inside a number: better not to pin */
        if (cpus && strlen(cpus) < sizeof(t->nodes[0].cpus) - 1)
            snprintf(ctx->proxy_cpus, sizeof(ctx->proxy_cpus), "%s", cpus);
        int nic[BT_TOPO_MAX_GPUS];
        bt_topo_nics(t, nic);
        if (nic[mine] >= 0) {
            snprintf(ctx->nic, sizeof(ctx->nic), "%s", t->nodes[nic[mine]].name);
            ctx->nic_path = bt_topo_path(t, t->gpu_node[mine], nic[mine]).cls;
        }
        BT_INFO(BT_LOG_INIT, "topology: GPU %s: proxy threads on CPUs %s, nearest NIC %s",
                all[me].bus, ctx->proxy_cpus[0] ? ctx->proxy_cpus : "(any)",
                ctx->nic[0] ? ctx->nic : "(none)");
    }
    known = known && !remote;
    for (int r = 0; r < n && known; r++) {
        gpu[r] = bt_topo_gpu_index(t, all[r].bus, all[r].dev);
        for (int q = 0; q < r && known && gpu[r] >= 0; q++) {
            if (gpu[q] == gpu[r]) { /* a TOPO_FILE matched by device numbers of two processes */
                BT_INFO(BT_LOG_INIT,
                        "topology: ranks %d and %d map to its GPU %d; rings in rank order", q, r,
                        gpu[r]);
                known = 0;
            }
        }
        if (gpu[r] < 0) {
            BT_INFO(BT_LOG_INIT, "topology: rank %d's GPU (%s) is not in it; rings in rank order",
                    r, all[r].bus);
            known = 0;
        }
    }
    const char *lvl = bt_param_str_p2p_level();
    if (!known && !remote && lvl && *lvl && me == 0)
        BT_WARN("P2P_LEVEL=%s: the GPUs' paths are not known (no topology); P2P wherever CUDA "
                "allows",
                lvl);
    *nvl = 0;
    if (known) {
        int x = 0, y = 0;
        *nvl = bt_topo_p2p_within(t, n, gpu, BT_PATH_NVL, &x, &y);
        double bottleneck = bt_topo_rank_ring(t, n, gpu, best);
        if (me == 0 && n > 2)
            BT_INFO(BT_LOG_INIT, "topology: GPU ring bottleneck %.1f GB/s, rank 0's next is %d",
                    bottleneck, best[1]);
        int level = bt_topo_path_parse(lvl), a = 0, b = 0;
        if (lvl && *lvl && level == -2)
            BT_WARN("P2P_LEVEL=%s is not a path class (LOC, NVL, PIX, PXB, PHB, NODE, SYS); "
                    "ignored",
                    lvl);
        else if (lvl && *lvl && !bt_topo_p2p_within(t, n, gpu, level, &a, &b))
            off = 1;
        if (off && me == 0) {
            int cls = bt_topo_path(t, t->gpu_node[gpu[a]], t->gpu_node[gpu[b]]).cls;
            BT_INFO(BT_LOG_INIT,
                    "P2P_LEVEL=%s: ranks %d and %d are %s apart: GPU connectors go through "
                    "host shared memory",
                    lvl, a, b, bt_topo_path_name(cls));
        }
    }
    /* agree: rank 0's ring, P2P off if any rank says so, NVLink if every rank says so */
    int *row = votes + (size_t)me * (size_t)w;
    row[0] = off;
    row[1] = *nvl;
    memcpy(row + 2, best, sizeof(int) * (size_t)n);
    int rc = bt_bootstrap_allgather(ctx->bs, votes, sizeof(int) * (size_t)w) == BT_OK ? 0 : -1;
    for (int r = 0; r < n && rc == 0; r++) {
        off |= votes[(size_t)r * (size_t)w];
        *nvl &= votes[(size_t)r * (size_t)w + 1];
    }
    if (rc == 0)
        memcpy(best, votes + 2, sizeof(int) * (size_t)n);
    free(t);
    free(gpu);
    free(votes);
    return rc < 0 ? -1 : off;
}

/* GPU FIFOs in GPU memory mapped between the ranks, or in host shared memory registered
 * with CUDA (cc->shm): every rank lays out its FIFOs alike (see the top of this file). */
static bt_status_t map_fifos(struct bt_transport_ctx *ctx, struct bt_cuda_comm *cc,
                             struct fifo_info *all, struct stage *sg)
{
    bt_status_t st = BT_OK;
    int n = ctx->nranks, me = ctx->rank;
    struct fifo_info *mine = &all[me];
    struct bt_fifo_sizes zr = fifo_sizes(cc, 1), zp = fifo_sizes(cc, 0);
    size_t fbr = fifo_bytes(&zr), fbp = fifo_bytes(&zp); /* ring FIFOs first, then send/recv */
    size_t rings = fbr * (size_t)cc->nch;
    /* host memory: the send/recv FIFOs too; GPU memory: those come per peer at first use */
    size_t fifos = rings + (cc->shm ? fbp * (size_t)((n - 1) * cc->np2p) : 0);
    size_t total = fifos + BT_FAIL_LINE; /* then the "a peer timed out" word */
    if (cc->shm) {
        BT_CHECK(bt_shm_create(total, &cc->shm_own));
        CUDA_TRY(cudaHostRegister(cc->shm_own.ptr, total,
                                  cudaHostRegisterMapped | cudaHostRegisterPortable),
                 "cudaHostRegister of the shared-memory FIFOs");
        CUDA_TRY(cudaHostGetDevicePointer(&cc->fifo_base, cc->shm_own.ptr, 0),
                 "cudaHostGetDevicePointer");
        snprintf(mine->shm_name, sizeof(mine->shm_name), "%s", cc->shm_own.name);
    } else {
        DEV_ALLOC(&cc->fifo_base, total, "cudaMalloc of the GPU FIFOs");
        CUDA_TRY(cudaMemset(cc->fifo_base, 0, total), "cudaMemset of the GPU FIFOs");
        CUDA_TRY(cudaIpcGetMemHandle(&mine->handle, cc->fifo_base), "cudaIpcGetMemHandle");
        CUDA_TRY(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the FIFO memset");
    }
    mine->base = cc->fifo_base;
    BT_CHECK(bt_bootstrap_allgather(ctx->bs, all, sizeof(*all)));

    /* Map every peer's FIFOs. */
    for (int r = 0; r < n; r++) {
        if (r == me) {
            cc->peer_base[r] = cc->fifo_base;
            continue;
        }
        if (cc->shm) {
            struct bt_shm_seg *seg = &cc->shm_peer[r];
            BT_CHECK(bt_shm_open(all[r].shm_name, total, seg));
            CUDA_TRY(cudaHostRegister(seg->ptr, total,
                                      cudaHostRegisterMapped | cudaHostRegisterPortable),
                     "cudaHostRegister of a peer's shared-memory FIFOs");
            CUDA_TRY(cudaHostGetDevicePointer(&cc->peer_base[r], seg->ptr, 0),
                     "cudaHostGetDevicePointer");
        } else if (all[r].pid == mine->pid) {
            /* one process: the peer's pointer works here once peer access is on (possible:
             * otherwise the shared-memory path was chosen) */
            if (all[r].dev != cc->dev) {
                cudaError_t e = cudaDeviceEnablePeerAccess(all[r].dev, 0);
                if (e == cudaErrorPeerAccessAlreadyEnabled)
                    (void)cudaGetLastError();
                else if (e != cudaSuccess)
                    CUDA_TRY(e, "cudaDeviceEnablePeerAccess");
            }
            cc->peer_base[r] = all[r].base;
        } else {
            CUDA_TRY(cudaIpcOpenMemHandle(&cc->peer_base[r], all[r].handle,
                                          cudaIpcMemLazyEnablePeerAccess),
                     "cudaIpcOpenMemHandle of a peer's FIFOs (no P2P between these GPUs? "
                     "P2P_DISABLE=1 goes through host memory)");
            cc->peer_opened[r] = 1;
        }
        BT_INFO(BT_LOG_INIT, "GPU connectors with rank %d (GPU %d) via %s", r, all[r].dev,
                cc->shm              ? "SHM (host memory, cudaHostRegister)"
                : cc->peer_opened[r] ? "P2P/IPC"
                                     : "P2P/direct pointer");
    }
    if (cc->shm) { /* every rank has mapped every segment: the names can go */
        BT_CHECK(bt_bootstrap_barrier(ctx->bs));
        bt_shm_unlink(&cc->shm_own);
    }

    for (int c = 0; c < cc->nch; c++) {
        struct bt_channel *x = &sg->ch[c];
        int *ord = &sg->order[c * n];
        bt_ring_channel_order(sg->best, n, c, ord);
        struct bt_ring place = {.order = ord}; /* x->ring.order is device memory */
        bt_ring_place(&place, n, me);
        x->ring.index = place.index;
        x->ring.next = place.next;
        x->ring.prev = place.prev;
        char *next = (char *)cc->peer_base[x->ring.next];
        char *own = (char *)cc->fifo_base;
        bt_cuda_dconn_init(&x->ring_send, next + (size_t)c * fbr, &zr, x->ring.next, 1, c);
        bt_cuda_dconn_init(&x->ring_recv, own + (size_t)c * fbr, &zr, x->ring.prev, 0, c);
    }
    size_t per_peer = fbp * (size_t)cc->np2p;
    for (int r = 0; r < n && cc->shm; r++) {
        if (r != me)
            p2p_conns(cc, r, (char *)cc->peer_base[r] + rings + (size_t)p2p_slot(me, r) * per_peer,
                      (char *)cc->fifo_base + rings + (size_t)p2p_slot(r, me) * per_peer,
                      &sg->p2p[bt_cuda_p2p_index(cc, r, 0, 0)]);
    }
    cc->p2p_missing = cc->shm ? 0 : n - 1;
    for (int r = 0; r < n; r++)
        sg->fail[r] = (uint32_t *)((char *)cc->peer_base[r] + fifos);
    cc->dfail_own = sg->fail[me];
    /* No rank may write into a peer's FIFOs before the peer has zeroed them (done before
     * the second allgather) - and no kernel runs before setup returns. */
    BT_INFO(BT_LOG_INIT, "GPU %d: %d channels, %zu-byte slots, %zu bytes of FIFOs in %s", cc->dev,
            cc->nch, cc->slot, total, cc->shm ? "host shared memory" : "GPU memory");
    return BT_OK;
fail:
    return st;
}

/* Attribute `a` of device `dev`, or 0 when CUDA cannot say. */
static int device_attr(int dev, enum cudaDeviceAttr a)
{
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return v;
}

/* Whether this process reaches device `dev` through CUDA MPS: then its kernels and other
 * processes' run on the GPU at once, as the kernels of one process do. */
static int mps_enabled(int dev)
{
    return device_attr(dev, cudaDevAttrMpsEnabled) != 0;
}

/* Blocks of our kernels device `dev` runs at once: __launch_bounds__(BT_CUDA_THREADS, 1)
 * promises one per SM, and no more is counted on (0: unknown, no cap). */
static int resident_blocks(int dev)
{
    return device_attr(dev, cudaDevAttrMultiProcessorCount);
}

/*
 * A block that waits spins until its peer's block has run: every block of a collective must
 * be resident at once, or the resident ones wait for the others until TIMEOUT. One rank per
 * GPU fits (64 channels, 132 SMs on an H100/H200); ranks sharing a GPU (TEST_SAME_GPU) share
 * its SMs, and a send/recv group with every peer takes 2 (n - 1) blocks per part. So the
 * channels and send/recv parts are cut until the kernels of all ranks on the most crowded GPU
 * fit it (the parts a send/recv launch uses; the one-shot and two-shot use part c's
 * connectors on channel c, a block per channel); every rank computes the same from the
 * allgathered figures. Other work holding SMs
 * cannot be known here: then the deadline and the peers' failure word end the waits.
 */
static void fit_residency(struct bt_cuda_comm *cc, const struct fifo_info *all, int n)
{
    int cap = 0, most = 1;
    for (int r = 0; r < n; r++) {
        int same = 0;
        for (int q = 0; q < n; q++)
            same += all[q].host_hash == all[r].host_hash && strcmp(all[q].bus, all[r].bus) == 0;
        if (all[r].resident > 0 && (cap == 0 || all[r].resident / same < cap))
            cap = all[r].resident / same;
        if (same > most)
            most = same;
    }
    cc->nsame = most;
    cc->np2p_run = cc->np2p;
    if (cap <= 0 || n < 2)
        return;
    int nch = cc->nch < cap ? cc->nch : cap;
    int run = cap / (2 * (n - 1));
    if (run < 1)
        run = 1;
    if (run > cc->np2p)
        run = cc->np2p;
    if (nch != cc->nch || run != cc->np2p)
        BT_INFO(BT_LOG_INIT,
                "%d ranks share a GPU that runs %d blocks at once: %d channels (of %d), "
                "send/recv groups in %d parts per peer (of %d)",
                most, cap * most, nch, cc->nch, run, cc->np2p);
    if (2 * (n - 1) > cap)
        BT_WARN("%d ranks share a GPU that runs %d blocks at once: a send/recv group with "
                "every peer needs %d blocks per rank, more than fit; such a group may wait "
                "until TIMEOUT",
                most, cap * most, 2 * (n - 1));
    cc->nch = nch; /* >= 1: cap > 0 */
    cc->np2p_run = run;
}

/* Agree on the geometry first: every rank must lay out its FIFOs alike (the fewest channels,
 * the smallest slots). Two ranks may share a GPU when their kernels run on it at once: ranks
 * of one process when asked (TEST_SAME_GPU), ranks of processes that both reach it through
 * CUDA MPS. *remote: some rank is on another host. */
static bt_status_t agree_geometry(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc,
                                  struct fifo_info *all, int *remote)
{
    struct bt_transport_ctx *ctx = ec->tctx;
    int n = ctx->nranks, me = ctx->rank;
    struct fifo_info *mine = &all[me];
    mine->pid = (int)getpid();
    mine->dev = cc->dev;
    mine->nch = cc->nch;
    mine->np2p = cc->np2p;
    mine->slot = cc->slot;
    mine->ll_slot = cc->ll_slot;
    mine->ll128_slot = cc->ll128_slot;
    mine->ll128_set = bt_param_env("LL128_BUFFSIZE") != NULL;
    mine->host_hash = ctx->peers[me].host_hash;
    mine->resident = resident_blocks(cc->dev);
    mine->mps = mps_enabled(cc->dev);
    mine->want_shm = bt_param_p2p_disable() != 0;
    BT_CHECK(bt_device_error((int)cudaDeviceGetPCIBusId(mine->bus, (int)sizeof(mine->bus), cc->dev),
                             "cudaDeviceGetPCIBusId"));
    BT_CHECK(bt_bootstrap_allgather(ctx->bs, all, sizeof(*all)));
    *remote = 0;
    for (int r = 0; r < n; r++) {
        if (all[r].nch < cc->nch)
            cc->nch = all[r].nch;
        if (all[r].np2p != cc->np2p) {
            BT_WARN("rank %d cuts send/recv into %d parts, this rank into %d", r, all[r].np2p,
                    cc->np2p);
            return BT_ERR_INTERNAL;
        }
        if (all[r].slot < cc->slot)
            cc->slot = (size_t)all[r].slot;
        if (all[r].ll_slot < cc->ll_slot)
            cc->ll_slot = (size_t)all[r].ll_slot;
        if (all[r].ll128_slot < cc->ll128_slot)
            cc->ll128_slot = (size_t)all[r].ll128_slot;
        /* Ranks sharing a GPU need their kernels resident at once (each spins on the
         * other's steps): ranks of one process get that from the GPU when it holds them
         * both (asked for: tests on a one-GPU machine), ranks of several processes from
         * MPS; without it the driver time-slices the processes' contexts. */
        int same_gpu =
            r != me && strcmp(all[r].bus, mine->bus) == 0 && all[r].host_hash == mine->host_hash;
        int one_process = all[r].pid == mine->pid;
        if (same_gpu && one_process && !bt_param_test_same_gpu()) {
            BT_WARN("ranks %d and %d of this process use the same GPU (%s): give each rank its "
                    "own GPU (TEST_SAME_GPU=1 lets tests share one)",
                    me, r, mine->bus);
            return BT_ERR_INVALID_USAGE;
        }
        if (same_gpu && !one_process && !(mine->mps && all[r].mps)) {
            BT_WARN("ranks %d and %d (processes %d and %d) use the same GPU (%s), and rank %d "
                    "does not reach it through CUDA MPS: their kernels would take turns and "
                    "wait on each other; start MPS (nvidia-cuda-mps-control -d) before the "
                    "processes, or give each rank its own GPU",
                    me, r, mine->pid, all[r].pid, mine->bus, mine->mps ? r : me);
            return BT_ERR_INVALID_USAGE;
        }
        *remote |= all[r].host_hash != mine->host_hash;
    }
    fit_residency(cc, all, n);
    /* the default ring LL128 slot follows the channels that remain (cuda_comm.h) */
    int ll128_set = 0;
    for (int r = 0; r < n; r++)
        ll128_set |= all[r].ll128_set;
    if (!ll128_set)
        cc->ll128_slot = bt_cuda_ll128_ring_slot(cc->nch);
    return BT_OK;
}

/*
 * Which way the FIFOs go, every rank alike: through host connectors (the network) when a rank
 * is on another host, or when P2P is off and shared memory too (SHM_DISABLE=1: shm_all is the
 * same on every rank); else host shared memory if any rank asks for it or two GPUs driven by
 * one process cannot reach each other (device numbers only mean the same thing inside one
 * process; between processes CUDA IPC itself says whether P2P works); else GPU memory mapped
 * between the ranks. And whether LL128 slots exist. best: the ring the topology chose.
 */
static bt_status_t choose_path(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc,
                               struct fifo_info *all, int remote, int *best)
{
    struct bt_transport_ctx *ctx = ec->tctx;
    int n = ctx->nranks;
    const struct fifo_info *mine = &all[ctx->rank];
    for (int r = 0; r < n; r++)
        cc->shm |= all[r].want_shm;
    int nvl = 0;
    int off = gpu_topology(ctx, all, remote, best, &nvl); /* collective */
    if (off < 0)
        return BT_ERR_SYSTEM;
    cc->shm |= off;
    cc->net = remote || (cc->shm && !ec->shm_all);
    cc->shm = cc->shm && !cc->net;
    for (int r = 0; r < n && !cc->shm && !cc->net; r++) {
        for (int q = 0; q < n && !cc->shm; q++) {
            int can = 1;
            if (all[r].pid == all[q].pid && all[r].dev != all[q].dev &&
                cudaDeviceCanAccessPeer(&can, all[r].dev, all[q].dev) != cudaSuccess) {
                (void)cudaGetLastError();
                can = 0;
            }
            cc->shm |= !can;
        }
    }
    /* LL128 lines need NVLink's whole 128-byte stores (transport/conn.h): GPU FIFOs only,
     * and only when every pair is NVLink; elsewhere no LL128 slots at all */
    /* Every rank on one GPU (ranks of one process with TEST_SAME_GPU, or processes under
     * MPS: agree_geometry let them): LL128 too, so that a one-GPU machine runs its code.
     * Whether the GPU's own memory shows a warp's 128-byte store whole, as NVLink does, the
     * memory model does not promise: a failure there may be that. */
    int one_gpu = 1;
    for (int r = 0; r < n && one_gpu; r++)
        one_gpu = all[r].host_hash == mine->host_hash && strcmp(all[r].bus, mine->bus) == 0;
    if (cc->shm || cc->net || !(nvl || one_gpu))
        cc->ll128_slot = 0;
    if (cc->net)
        bt_cuda_hostconn_geometry(ec, cc);
    return BT_OK;
}

/* The tables the kernels read, from the staging copies to device memory: channels, ring orders,
 * send/recv connectors, the one-shot's connector table (on channel k: part k's connectors with
 * every peer) and scratch, every rank's failure word. */
static bt_status_t upload(struct bt_cuda_comm *cc, int n, int me, const struct stage *sg,
                          struct bt_conn **hpeer)
{
    bt_status_t st = BT_OK;
    for (int r = 0; r < n; r++) {
        for (int k = 0; k < cc->np2p && r != me; k++) {
            hpeer[(size_t)k * n + r] = &cc->dp2p[bt_cuda_p2p_index(cc, r, 0, k)];
            hpeer[(size_t)(cc->np2p + k) * n + r] = &cc->dp2p[bt_cuda_p2p_index(cc, r, 1, k)];
        }
    }
    size_t npeer = 2 * (size_t)n * (size_t)cc->np2p;
    DEV_ALLOC(&cc->dpeer_send, sizeof(*hpeer) * npeer, "cudaMalloc");
    cc->dpeer_recv = cc->dpeer_send + (size_t)cc->np2p * n;
    CUDA_TRY(cudaMemcpy(cc->dpeer_send, hpeer, sizeof(*hpeer) * npeer, cudaMemcpyHostToDevice),
             "cudaMemcpy of the one-shot connector table");
    cc->scratch_bytes = cc->slot > cc->ll_slot ? cc->slot : cc->ll_slot;
    DEV_ALLOC(&cc->dscratch, cc->scratch_bytes * (size_t)cc->np2p,
              "cudaMalloc of the one-shot scratch");
    CUDA_TRY(
        cudaMemcpy(cc->dchan, sg->ch, sizeof(*sg->ch) * (size_t)cc->nch, cudaMemcpyHostToDevice),
        "cudaMemcpy of the channels");
    CUDA_TRY(cudaMemcpy(cc->dorder, sg->order, sizeof(int) * (size_t)cc->nch * (size_t)n,
                        cudaMemcpyHostToDevice),
             "cudaMemcpy of the ring orders");
    CUDA_TRY(cudaMemcpy(cc->dp2p, sg->p2p, sizeof(*sg->p2p) * 2 * (size_t)n * (size_t)cc->np2p,
                        cudaMemcpyHostToDevice),
             "cudaMemcpy of the p2p connectors");
    if (cc->dfail_own) {
        DEV_ALLOC(&cc->dfail, sizeof(*sg->fail) * (size_t)n, "cudaMalloc");
        CUDA_TRY(
            cudaMemcpy(cc->dfail, sg->fail, sizeof(*sg->fail) * (size_t)n, cudaMemcpyHostToDevice),
            "cudaMemcpy of the failure words");
    }
fail:
    return st;
}

bt_status_t bt_cuda_fifos_setup(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc)
{
    bt_status_t st = BT_OK;
    int n = ec->nranks, me = ec->rank, remote = 0;
    struct fifo_info *all = calloc((size_t)n, sizeof(*all));
    struct stage sg = {
        .ch = calloc((size_t)cc->nch, sizeof(*sg.ch)),
        .order = calloc((size_t)cc->nch * (size_t)n, sizeof(int)),
        .p2p = calloc(2 * (size_t)n * (size_t)cc->np2p, sizeof(*sg.p2p)),
        .best = calloc((size_t)n, sizeof(int)),
        .fail = calloc((size_t)n, sizeof(uint32_t *)),
    };
    struct bt_conn **hpeer = calloc(2 * (size_t)n * (size_t)cc->np2p, sizeof(*hpeer));
    cc->peer_base = calloc((size_t)n, sizeof(void *));
    cc->peer_opened = calloc((size_t)n, sizeof(int));
    cc->p2p_own = calloc(2 * (size_t)n, sizeof(void *)); /* then p2p_peer */
    cc->p2p_peer = cc->p2p_own ? cc->p2p_own + n : NULL;
    cc->p2p_opened = calloc((size_t)n, 1);
    cc->shm_peer = calloc((size_t)n, sizeof(*cc->shm_peer));
    if (!all || !sg.ch || !sg.order || !sg.p2p || !sg.best || !sg.fail || !hpeer ||
        !cc->peer_base || !cc->peer_opened || !cc->shm_peer || !cc->p2p_own || !cc->p2p_opened) {
        BT_WARN("out of memory setting up GPU connectors");
        st = BT_ERR_SYSTEM;
        goto fail;
    }
    for (int i = 0; i < n; i++) /* rank order until the topology says otherwise */
        sg.best[i] = i;
    BT_CHECK_GOTO(agree_geometry(ec, cc, all, &remote), st, fail);
    if (n == 1) /* no peers: no connectors, no tables (its operations are copies) */
        goto out;
    BT_CHECK_GOTO(choose_path(ec, cc, all, remote, sg.best), st, fail);

    DEV_ALLOC(&cc->dchan, sizeof(*sg.ch) * (size_t)cc->nch, "cudaMalloc");
    DEV_ALLOC(&cc->dorder, sizeof(int) * (size_t)cc->nch * (size_t)n, "cudaMalloc");
    DEV_ALLOC(&cc->dp2p, sizeof(*sg.p2p) * 2 * (size_t)n * (size_t)cc->np2p, "cudaMalloc");
    for (int c = 0; c < cc->nch; c++) {
        sg.ch[c].id = c;
        sg.ch[c].ring.order = cc->dorder + c * n;
    }
    if (cc->net)
        st = bt_cuda_hostconn_connect(ec, cc, sg.ch, sg.order, sg.p2p);
    else
        st = map_fifos(ec->tctx, cc, all, &sg);
    if (st == BT_OK)
        st = upload(cc, n, me, &sg, hpeer);
    if (st == BT_OK)
        goto out;
fail:
    bt_cuda_fifos_free(cc);
out:
    free(all);
    free(sg.ch);
    free(sg.order);
    free(sg.p2p);
    free(sg.best);
    free(sg.fail);
    free(hpeer);
    return st;
}

/* ---- send/recv FIFOs, per peer at first use ------------------------------------------------ */

#define BT_TAG_GPU_P2P 0x30010 /* bootstrap tag of the send/recv FIFO cards */

/* What a rank tells a peer about the FIFOs it receives from it on: in this process, the
 * address; else an IPC handle. */
struct p2p_card {
    int pid, dev;
    void *base;
    cudaIpcMemHandle_t handle;
};

/* This rank's FIFOs from rank r, zeroed before any peer may write into them: the card for r. */
static bt_status_t p2p_make(struct bt_cuda_comm *cc, int r, cudaStream_t s, struct p2p_card *card)
{
    bt_status_t st = BT_OK;
    struct bt_fifo_sizes zp = fifo_sizes(cc, 0);
    size_t bytes = fifo_bytes(&zp) * (size_t)cc->np2p;
    DEV_ALLOC(&cc->p2p_own[r], bytes, "cudaMalloc of send/recv FIFOs");
    CUDA_TRY(cudaMemsetAsync(cc->p2p_own[r], 0, bytes, s), "cudaMemsetAsync of send/recv FIFOs");
    CUDA_TRY(cudaStreamSynchronize(s), "cudaStreamSynchronize after the FIFO memset");
    memset(card, 0, sizeof(*card));
    card->pid = (int)getpid();
    card->dev = cc->dev;
    card->base = cc->p2p_own[r];
    CUDA_TRY(cudaIpcGetMemHandle(&card->handle, cc->p2p_own[r]), "cudaIpcGetMemHandle");
fail:
    return st;
}

/* Rank r's FIFOs from this rank, from its card: mapped here, then both directions' connectors
 * written into the kernels' table (dp2p). */
static bt_status_t p2p_map(struct bt_cuda_comm *cc, int r, const struct p2p_card *card,
                           cudaStream_t s)
{
    bt_status_t st = BT_OK;
    struct bt_conn *conns = calloc(2 * (size_t)cc->np2p, sizeof(*conns));
    if (!conns)
        return BT_ERR_SYSTEM;
    if (card->pid == (int)getpid()) {
        cc->p2p_peer[r] = card->base; /* peer access is on since setup (map_fifos) */
    } else {
        CUDA_TRY(
            cudaIpcOpenMemHandle(&cc->p2p_peer[r], card->handle, cudaIpcMemLazyEnablePeerAccess),
            "cudaIpcOpenMemHandle of a peer's send/recv FIFOs");
        cc->p2p_opened[r] = 1;
    }
    p2p_conns(cc, r, cc->p2p_peer[r], cc->p2p_own[r], conns);
    CUDA_TRY(cudaMemcpyAsync(&cc->dp2p[bt_cuda_p2p_index(cc, r, 0, 0)], conns,
                             2 * (size_t)cc->np2p * sizeof(*conns), cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync of send/recv connectors");
    CUDA_TRY(cudaStreamSynchronize(s), "cudaStreamSynchronize after the connectors' copy");
    cc->p2p_missing--;
    BT_INFO(BT_LOG_P2P, "rank %d: send/recv FIFOs with rank %d (%d parts, %s)", cc->rank, r,
            cc->np2p, cc->p2p_opened[r] ? "P2P/IPC" : "P2P/direct pointer");
fail:
    free(conns);
    return st;
}

bt_status_t bt_cuda_p2p_connect(struct bt_cuda_comm *cc, const unsigned char *want)
{
    bt_status_t st = BT_OK;
    int n = cc->nranks;
    /* kernels of this communicator may be in flight, and the caller's stream in a graph
     * capture: a private stream, and the capture rules relaxed for these calls */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaStream_t s = NULL;
    struct p2p_card *cards = calloc((size_t)n, sizeof(*cards));
    if (!cards) {
        st = BT_ERR_SYSTEM;
        goto fail;
    }
    CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    /* every card out before any is awaited: a peer may be waiting for this rank's, and
     * this rank's other peers for theirs */
    for (int r = 0; r < n; r++) {
        if (!want[r] || r == cc->rank || cc->p2p_own[r])
            continue;
        BT_CHECK_GOTO(p2p_make(cc, r, s, &cards[r]), st, fail);
        BT_CHECK_GOTO(
            bt_bootstrap_send(cc->ctx->bs, r, BT_TAG_GPU_P2P, &cards[r], sizeof(cards[r])), st,
            fail);
    }
    for (int r = 0; r < n; r++) {
        if (!want[r] || r == cc->rank || cc->p2p_peer[r])
            continue;
        BT_CHECK_GOTO(
            bt_bootstrap_recv(cc->ctx->bs, r, BT_TAG_GPU_P2P, &cards[r], sizeof(cards[r])), st,
            fail);
        BT_CHECK_GOTO(p2p_map(cc, r, &cards[r], s), st, fail);
    }
fail:
    if (st != BT_OK)
        BT_WARN("rank %d: connecting send/recv FIFOs with its peers failed", cc->rank);
    if (s)
        cudaStreamDestroy(s);
    free(cards);
    cudaThreadExchangeStreamCaptureMode(&mode);
    return st;
}

void bt_cuda_fifos_free(struct bt_cuda_comm *cc)
{
    for (int r = 0; r < cc->nranks && cc->p2p_own && cc->p2p_opened; r++) {
        if (cc->p2p_opened[r])
            cudaIpcCloseMemHandle(cc->p2p_peer[r]);
        cudaFree(cc->p2p_own[r]);
    }
    free(cc->p2p_own);
    cc->p2p_own = cc->p2p_peer = NULL;
    free(cc->p2p_opened);
    cc->p2p_opened = NULL;
    if (cc->peer_base && cc->peer_opened) {
        for (int r = 0; r < cc->nranks; r++)
            if (cc->peer_opened[r] && cc->peer_base[r])
                cudaIpcCloseMemHandle(cc->peer_base[r]);
    }
    if (cc->shm_peer) {
        for (int r = 0; r < cc->nranks; r++) {
            if (cc->shm_peer[r].ptr) {
                cudaHostUnregister(cc->shm_peer[r].ptr);
                bt_shm_close(&cc->shm_peer[r]);
            }
        }
    }
    free(cc->shm_peer);
    cc->shm_peer = NULL;
    free(cc->peer_base);
    free(cc->peer_opened);
    cc->peer_base = NULL;
    cc->peer_opened = NULL;
    bt_cuda_hostconn_free(cc);
    if (cc->shm) {
        if (cc->shm_own.ptr) {
            cudaHostUnregister(cc->shm_own.ptr);
            bt_shm_close(&cc->shm_own);
        }
        cc->fifo_base = NULL; /* a device alias of shm_own */
    }
    cudaFree(cc->fifo_base);
    cudaFree(cc->dchan);
    cudaFree(cc->dorder);
    cudaFree(cc->dp2p);
    cudaFree(cc->dpeer_send);
    cudaFree(cc->dscratch);
    cudaFree(cc->dfail);
    cc->dfail = NULL;
    cc->dfail_own = NULL;
    cc->dpeer_send = cc->dpeer_recv = NULL;
    cc->dscratch = NULL;
    cc->fifo_base = NULL;
    cc->dchan = NULL;
    cc->dorder = NULL;
    cc->dp2p = NULL;
}
