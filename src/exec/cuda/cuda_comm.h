/*
 * A GPU communicator's CUDA state, built by its first GPU operation (cuda_comm.c): the device
 * copies of its channels and connectors the kernels run over, and the host-mapped words
 * kernels report through. Made and changed by exec/cuda only; its geometry becomes the
 * planner's target (target.c), and core's watcher (core/watch.c) reads the report through
 * the executor's table and clears its `stalled` word once it has printed it
 * (exec/report.h).
 */
#ifndef BT_EXEC_CUDA_CUDA_COMM_H
#define BT_EXEC_CUDA_CUDA_COMM_H

#include <stddef.h>

#include "exec/cuda/kargs.h"
#include "graph/channel.h"
#include "util/shm.h"
#include "util/status.h"

/* Geometry the planner takes from here (target.c). */
#define BT_CUDA_ALIGN 512               /* bytes: channel shares and send/recv parts start here */
#define BT_CUDA_P2P_MIN_PART (8 * 1024) /* bytes: smaller messages use fewer blocks */
#define BT_CUDA_P2P_LL_MAX (64 * 1024)  /* send/recv up to this size in LL lines */
#define BT_CUDA_P2P_PARTS 32            /* at most this many blocks per peer and direction */

/* Channels: one block each. Measured on 2 x H200 (docs/TUNING.md), AllReduce busbw at 1 GB:
 * 16 channels 188 GB/s, 32 307, 48 325, 64 341 (NCCL 327-331); a block moves 5-12 GB/s. */
#define BT_GPU_NCHANNELS 64           /* default MAX_NCHANNELS */
#define BT_GPU_MAX_CHANNELS 64        /* MAX_NCHANNELS may ask for up to this many */
#define BT_GPU_SLOT (512 * 1024)      /* bytes per Simple slot: 4 MB FIFOs */
#define BT_GPU_LL_SLOT (64 * 1024)    /* bytes per LL slot (32 KB of payload) */
#define BT_GPU_LL128_SLOT (64 * 1024) /* bytes per send/recv LL128 slot (60 KB of payload) */
/* A rank's ring FIFOs' LL128 slots, unless LL128_BUFFSIZE sets them: 64 MB over its ring
 * channels (bt_cuda_ll128_ring_slot), within 128 KB-512 KB a slot (8 channels: 32 MB). A step moves
 * one slot at most, and with fewer channels each carries more of a message: 64 KB slots left the
 * 8-rank one-GPU ring at 0.79 of Simple's speed at 64 MB, 512 KB ones at 0.91 (16 channels;
 * NVIDIA's NCCL gives LL128 about 4.7 MB a connector) */
#define BT_GPU_LL128_RING_BYTES (64u << 20)
#define BT_GPU_LL128_RING_SLOT_MAX (512 * 1024)

struct bt_transport_ctx;

struct bt_cuda_comm {
    int dev;
    int rank, nranks;
    struct bt_transport_ctx *ctx; /* the communicator's: bootstrap, proxy, liveness */
    int nch;                      /* channels (blocks) collectives may use */
    int np2p;                     /* connector pairs (blocks) per peer for send/recv */
    int np2p_run;                 /* of those, the parts a send/recv launch uses (residency) */
    int nsame;                    /* most ranks of the communicator sharing one GPU */
    size_t slot;                  /* bytes of each Simple slot */
    size_t ll_slot;               /* bytes of each LL slot (lines: half of it is payload) */
    size_t ll128_slot; /* bytes of each LL128 slot (120 of each 128 are payload); 0 unless
                          every pair of the communicator's GPUs is NVLink (fifos.c) */

    /* device memory */
    struct bt_channel *dchan; /* [nch]: rings with device connectors */
    int *dorder;              /* [nch * nranks]: the rings' orders */
    struct bt_conn *dp2p;     /* [2 * nranks * np2p]: see bt_cuda_p2p_index */
    /* One-shot AllReduce on channel c uses the send/recv connectors of part c with every
     * peer: [np2p * nranks] pointers to them (NULL for this rank), and a scratch of one
     * slot per channel for its partial results. */
    struct bt_conn **dpeer_send, **dpeer_recv;
    char *dscratch;
    size_t scratch_bytes; /* per channel: the larger slot */
    /* Every rank's "a peer timed out" word (kargs.h: bt_cuda_khdr.failed), the line after its
     * FIFOs: this rank's own (device address) and [nranks] each rank's as mapped here; NULL
     * through the network. */
    uint32_t *dfail_own;
    uint32_t **dfail;

    /* fifos.c: this rank's FIFOs and the peers' it mapped */
    void *fifo_base;  /* one allocation: ring FIFOs (shm: then one per peer), the fail line */
    size_t dev_bytes; /* device memory its cudaMallocs hold (ncclCommMemStats) */
    void **peer_base; /* [nranks]: the peer's allocation, mapped here (or NULL) */
    int *peer_opened; /* [nranks]: 1 if mapped with cudaIpcOpenMemHandle */
    /* GPU memory: the send/recv FIFOs with rank r, made when an operation first needs them
     * (bt_cuda_p2p_connect): this rank's from r, r's from this rank as mapped here (NULL until
     * then), whether that one is an IPC mapping; peers not connected yet (0 with shm) */
    void **p2p_own, **p2p_peer;
    unsigned char *p2p_opened;
    int p2p_missing;
    int shm; /* FIFOs in host shared memory (P2P_DISABLE=1, or no peer access) */
    int net; /* through host connectors (exec/cuda/host_conns.c): another host, or P2P
                and shared memory both disabled */
    struct bt_shm_seg shm_own;   /* shm: our segment, registered with cudaHostRegister */
    struct bt_shm_seg *shm_peer; /* shm: [nranks] the peers' segments, mapped and registered */

    /* net: the host connectors (their FIFOs registered with CUDA) and the proxy ops posted
     * for kernels in flight, reaped at later launches */
    struct bt_channel *hchan; /* [nch]: the comm's rings, connectors of link BT_LINK_GPU_RING,
                                 and with `trees` its trees over hosts (BT_LINK_GPU_TREE_*) */
    int trees; /* the trees are connected: tree AllReduce may run (GPU_TREES, hosts, ALGO) */
    struct bt_conn *hp2p;   /* [2 * nranks]: BT_LINK_GPU_P2P, indexed like dp2p (np2p = 1) */
    struct bt_conn **hpeer; /* [2 * nranks]: dpeer_send / dpeer_recv's host twins (hp2p) */
    struct bt_cuda_netop {
        struct bt_transport_op *op;
        int peer;
    } * netops;
    int nnetops, netops_cap;

    /* the order of the comm's kernels across streams (enqueue.c: order_streams) */
    void *last_stream;               /* the stream of the comm's last kernel */
    unsigned long long last_capture; /* its capture sequence id (0: not captured) */
    int launched;                    /* a kernel has been queued */
    int multi_stream;                /* a second stream was seen (said once in the log) */
    void *order_ev;                  /* cudaEvent_t: after the comm's last kernel */
    int launch_orders;               /* sm_90+: launches record order_ev themselves */

    /* host-mapped (cudaHostAlloc): the kernels' abort flag and their report (errors, stalls) */
    int *abort_h;
    struct bt_exec_report *report_h;
    void *abort_d, *report_d;
};

/* The ring FIFOs' LL128 slot for nch channels by default: BT_GPU_LL128_RING_BYTES over their
 * BT_NSTEPS slots, whole lines, within [BT_GPU_LL128_SLOT, BT_GPU_LL128_RING_SLOT_MAX]. */
static inline size_t bt_cuda_ll128_ring_slot(int nch)
{
    size_t s = BT_GPU_LL128_RING_BYTES / (size_t)(nch > 0 ? nch : 1) / BT_NSTEPS;
    s = s / BT_LL128_LINE * BT_LL128_LINE;
    if (s > BT_GPU_LL128_RING_SLOT_MAX)
        s = BT_GPU_LL128_RING_SLOT_MAX;
    return s < BT_GPU_LL128_SLOT ? BT_GPU_LL128_SLOT : s;
}

/* The default geometry of a communicator of cc->nranks ranks, before the ranks agree on it
 * (fifos.c then cuts channels so that every rank sharing a GPU fits it, and keeps
 * LL128 slots only over NVLink): `nch` channels (<= 0: the default), send/recv parts as many
 * as fit a launch with every peer in both directions, the slots. */
static inline void bt_cuda_geometry_default(struct bt_cuda_comm *cc, int nch)
{
    cc->nch = nch > 0 ? nch : BT_GPU_NCHANNELS;
    cc->np2p = cc->nranks > 1 ? (BT_CUDA_MAX_WORKS - 8) / (2 * (cc->nranks - 1)) : 1;
    if (cc->np2p > BT_CUDA_P2P_PARTS)
        cc->np2p = BT_CUDA_P2P_PARTS;
    if (cc->np2p < 1)
        cc->np2p = 1;
    cc->np2p_run = cc->np2p;
    cc->nsame = 1;
    cc->slot = BT_GPU_SLOT;
    cc->ll_slot = BT_GPU_LL_SLOT;
    cc->ll128_slot = bt_cuda_ll128_ring_slot(cc->nch);
}

/* A send/recv FIFO's LL128 slot: the one-shot's and two-shot's chunks, tuned at the default
 * slot (their batches), so LL128_BUFFSIZE enlarges only the ring FIFOs' (cc->ll128_slot). */
static inline size_t bt_cuda_p2p_ll128_slot(const struct bt_cuda_comm *cc)
{
    return cc->ll128_slot < BT_GPU_LL128_SLOT ? cc->ll128_slot : BT_GPU_LL128_SLOT;
}

/* Channels a tree AllReduce may use (through the network, cc->trees): half of them, as its up
 * and down halves are two blocks a channel, resident together with every rank's sharing the
 * GPU; only these channels' trees are connected. 0 (no trees) below 2 channels. */
static inline int bt_cuda_tree_channels(const struct bt_cuda_comm *cc)
{
    return cc->nch / 2;
}

/* Where the connector for part `part` of send/recv traffic with rank `peer` is in dp2p. */
static inline int bt_cuda_p2p_index(const struct bt_cuda_comm *cc, int peer, int is_recv, int part)
{
    return (peer * 2 + is_recv) * cc->np2p + part;
}

/* Connect this rank's GPU connectors with every rank (collective: every rank calls it at
 * its first GPU operation). Fills fifo_base, peer_base, and the device channel and p2p
 * connector arrays. caller: the launching thread, with the comm's device current. */
struct bt_exec_comm;
bt_status_t bt_cuda_fifos_setup(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc);
/* Connect the send/recv FIFOs with each rank r that want[r] names and that are not connected
 * yet (both directions; their entries in dp2p), pairwise: each such r calls it naming this
 * rank before its operations with this rank run (core/launch.c: several communicators of
 * one thread at once). caller: the launching thread or a fan-out thread, with the comm's
 * device current; kernels of the communicator may be in flight. */
bt_status_t bt_cuda_p2p_connect(struct bt_cuda_comm *cc, const unsigned char *want);
/* Unmap and free what bt_cuda_fifos_setup made. */
void bt_cuda_fifos_free(struct bt_cuda_comm *cc);

/* A connector's device view of a FIFO at `fifo` (device address), stepping from 0. */
struct bt_fifo_sizes;
void bt_cuda_dconn_init(struct bt_conn *c, char *fifo, const struct bt_fifo_sizes *z, int peer,
                        int is_send, int ch);

/* GPU connectors through host connectors (exec/cuda/host_conns.c). geometry: the
 * channels and parts this mode uses (every rank alike); connect: connect them (collective),
 * register their FIFOs with CUDA and fill the staging channels (ring orders included) and
 * send/recv connectors with device views; post: the proxy ops for a launch's works (NET
 * connectors); reap: free the completed ops (wait: all of them), errors as the result. */
void bt_cuda_hostconn_geometry(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc);
bt_status_t bt_cuda_hostconn_connect(const struct bt_exec_comm *ec, struct bt_cuda_comm *cc,
                                     struct bt_channel *ch, int *order, struct bt_conn *p2p);
struct bt_cuda_kargs;
bt_status_t bt_cuda_hostconn_post(struct bt_cuda_comm *cc, const struct bt_cuda_kargs *a);
bt_status_t bt_cuda_hostconn_reap(struct bt_cuda_comm *cc, int wait);
/* drain: wait for the proxy's ops of the comm's kernels, which are over (the proxy still runs);
 * free: after drain and after the proxy has ended. */
void bt_cuda_hostconn_drain(struct bt_cuda_comm *cc);
void bt_cuda_hostconn_free(struct bt_cuda_comm *cc);

#endif
