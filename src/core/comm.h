/*
 * The communicator: one rank of a group. Everything a collective needs to find its
 * peers, connectors and settings hangs off it. The object's life is core/comm.c; its init
 * core/init.h; split and shrink core/split.h.
 */
#ifndef BT_CORE_COMM_H
#define BT_CORE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bootstrap/bootstrap.h"
#include "coll/redop.h"
#include "exec/exec.h"
#include "graph/channel.h"
#include "transport/conn.h"
#include "transport/transport.h"
#include "tune/tuner.h"
#include "util/status.h"

#define BT_COMM_MAGIC 0xba70c0111c0ffee1ull
#define BT_COMM_DEAD 0xdeadc0111deadbadull
#define BT_MAX_CUSTOM_OPS 1024
#define BT_DIRECT_SLOT_MAX (32 * 1024)

/* A PreMulSum operator made by ncclRedOpCreatePreMulSum. */
struct bt_custom_op {
    int in_use;
    int dtype;
    int residence; /* 0: scalar is a pointer read when the collective runs; 1: value copied */
    const void *scalar_ptr;
    unsigned char scalar[8];
};

struct bt_comm_config {
    int blocking; /* 0: init, split, shrink and group ends finish in the background */
    int cga_cluster_size;
    int min_ctas, max_ctas;
    int split_share;
    int traffic_class;
    int collnet_enable;
    int cta_policy;
    int shrink_share;
    int nvls_ctas;
    int nchannels_per_net_peer;
    int nvlink_centric_sched;
    /* NCCL 2.30's: kept as given (docs/ENV.md says what Baton makes of each) */
    int graph_usage_mode;      /* 0, 1, 2 (default) */
    int num_rma_ctx;           /* one-sided contexts: 1 (default); 0: one-sided calls refused */
    int max_p2p_peers;         /* 0: unset */
    int graph_stream_ordering; /* 0 or 1 (default) */
    char name[64];
    char net_name[64]; /* netName: the network to use ("": NCCL_NET, else any) */
};

/* What the communicator's collectives ran as (batonCommGetStats): written by the launching
 * thread. */
struct bt_comm_stats {
    uint64_t colls;                 /* planned: nranks > 1, count > 0 */
    uint64_t by_algo[BT_NUM_ALGOS]; /* enum bt_algo: through FIFOs */
    uint64_t window;                /* AllReduce straight from the peers' windows */
    uint64_t ring_split;            /* ring AllReduces with blocks in proportion to links */
};

struct bt_arrival_line;
struct bt_arrival_query;
struct bt_shm_seg;
struct bt_window;
struct bt_win_table;
struct bt_rma_gpu;
struct bt_rma_net;

struct bt_comm {
    uint64_t magic; /* BT_COMM_MAGIC while usable, BT_COMM_DEAD after destroy */
    int rank, nranks;
    int cuda_dev; /* -1: host-memory communicator */
    uint64_t comm_hash;
    struct bt_comm_config config;
    struct bt_bootstrap *bs;
    struct bt_peer_info *peers;
    uint64_t *probed_ns; /* per rank: when liveness last probed its listener (liveness.c) */
    /* the network between hosts as its devices report it, every rank's slowest (zeros: one
     * host, or not reported); the tuner bounds its network figures by it */
    struct bt_link_figures net_link;
    /* The communicator as its transports see it (the same bootstrap, peers and abort flag;
     * the proxy, the NIC and proxy CPUs; the liveness tests core/liveness.c installs): filled
     * at init. */
    struct bt_transport_ctx tctx;
    /* ... and as its executors see it (filled at init), and each executor's state, made at the
     * communicator's first operation on it (exec[BT_EXEC_CUDA] is read by other threads:
     * published whole, with release) */
    struct bt_exec_comm ec;
    void *exec[BT_EXEC_KINDS];

    int local_ranks;  /* ranks of this communicator on this host */
    int one_per_host; /* every rank on a host of its own (from the host hashes: global) */
    int *host;        /* [nranks]: each rank's host, numbered by first appearance */
    int nhosts;
    int shm_all;        /* every peer reachable through shared memory (else some use NET) */
    int oversubscribed; /* more local ranks than CPUs this process may run on */
    int cpus_per_rank;  /* those CPUs over the local ranks (rounded down) */

    int nchannels;
    struct bt_channel channels[BT_MAX_CHANNELS];
    struct bt_link_cap *link_caps; /* [nranks] or NULL (core/links.h) */

    struct bt_tune_settings tune; /* rank 0's, the same on every rank */
    int check_coll;               /* CHECK_COLL, rank 0's */

    /* FIFO geometry of this communicator's connectors (bytes per slot) */
    size_t simple_slot, ll_slot, p2p_slot, direct_slot;

    volatile int abort_flag;
    _Atomic int active_launches; /* launches using this comm now: abort waits for them */
    _Atomic int busy;            /* a non-blocking group job uses it (BT_BUSY_*, core/group.c) */
    _Atomic int revoked;         /* ncclCommRevoke or a NCCL_SHRINK_ABORT shrink stopped it */
    _Atomic int suspended;       /* ncclCommSuspend freed its buffers; ncclCommResume clears it */
    int grow_pending;            /* ncclCommGetUniqueId made grow_id; ncclCommGrow consumes it */
    /* one-sided calls (core/rma.h): this rank's signal board ([nranks] counters, 128 bytes
     * apart), shared as a window where windows map (signals), else private and raised by the
     * network link's thread (rma_net); signals consumed by waits, per rank */
    char *board;
    struct bt_window *signals;
    struct bt_rma_net *rma_net;
    uint64_t *signal_seen;
    /* ... or, on a GPU communicator, in stream order (core/rma_gpu.h); the abort path reads
     * it from any thread */
    struct bt_rma_gpu *_Atomic rma_gpu;
    int rma_gpu_failed; /* its setup failed at a registration: not tried again, calls refused */
    uint32_t win_seq;   /* windows registered so far: the next one's number */
    pthread_mutex_t win_lock; /* the windows list, against the one-sided link's lookups */
    unsigned char grow_id[BT_UNIQUE_ID_BYTES];
    _Atomic int async_error; /* ncclResult_t of a failure seen in the background */
    int init_done;
    int finalized;
    bt_status_t init_status; /* nonblocking init: result to report */

    pthread_mutex_t ops_lock; /* custom ops table */
    struct bt_custom_op *custom_ops;
    int ncustom_ops;

    uint64_t ncolls;                 /* collectives issued: the same sequence on every rank */
    struct bt_arrival_line *arrival; /* core/arrival.h: [nranks] in shared memory, or NULL */
    struct bt_shm_seg *arrival_seg;
    struct bt_arrival_query *query; /* core/arrival.h: no board, a hang report's question */
    _Atomic uint64_t arrived;       /* the last collective called (bt_arrival_start): answers */
    int cause_sent;     /* this rank told the others which rank died (no board: across hosts) */
    uint64_t split_seq; /* splits done: distinct bootstrap tags for each */
    unsigned char unique_id[BT_UNIQUE_ID_BYTES]; /* the rendezvous it joined (bt_comm_init) */
    struct bt_window *windows;                   /* registered windows (core/window.h) */
    struct bt_devcomm *devcomms;                 /* device communicators (core/devcomm.h) */
    struct bt_win_table *win_table; /* their window table (core/win_table.h), from the first */
    /* their abort flag (host-mapped, nonzero once aborted: NCCL 2.29.5+'s abortFlag), from the
     * first; the host address published whole (the abort path reads it from any thread) */
    uint32_t *_Atomic devapi_abort_h;
    uint32_t *devapi_abort_d;
    struct bt_comm_stats stats;
};

/* What a running non-blocking job does with a communicator (bt_comm.busy). */
#define BT_BUSY_OPS 1  /* runs its operations, a split or a shrink of it: destroy waits */
#define BT_BUSY_INIT 2 /* initializes it: destroy aborts the init */

/* 1 if `c` is a communicator that exists and is not destroyed. Thread-safe. */
int bt_comm_is_live(const struct bt_comm *c);

/* The communicator's LSA team (load/store access: the ranks of one host, whose memory maps
 * into each other's), as NCCL's device API numbers it: world ranks *base .. *base + *size - 1,
 * in rank order (a team's stride is 1). That needs every host's ranks to be one run of
 * consecutive ranks, all runs of one length (the rail team strides over them); otherwise each
 * rank is a team of its own. */
void bt_comm_lsa(const struct bt_comm *c, int *base, int *size);

/* 1 if `c` is a live non-blocking communicator, 0 if a live blocking one, -1 if it is not
 * live (destroyed, perhaps by another thread, while an op of it was queued here). */
int bt_comm_nonblocking(const struct bt_comm *c);

/* Take (and give back) a use of a live, not aborted communicator for the length of a
 * launch or split; ncclCommAbort waits until no use is left before freeing. Returns 0
 * when the handle is dead, destroyed or aborted (nothing is touched then). */
int bt_comm_acquire(struct bt_comm *c);
void bt_comm_release(struct bt_comm *c);

/* Create the communicator object (not yet joined). */
bt_status_t bt_comm_alloc(int nranks, int rank, struct bt_comm **comm_p);

/* ncclCommGetAsyncError's answer: the first failure seen in the background, or else the
 * first error a kernel of the communicator reported (an abort, a timeout). */
bt_status_t bt_comm_async_error(struct bt_comm *comm);

/* Free everything the communicator holds (after abort or destroy). Accepts NULL. */
void bt_comm_free(struct bt_comm *comm);

/* Make every wait of this communicator fail promptly. Thread-safe. */
void bt_comm_abort_signal(struct bt_comm *comm);

/* Record a failure seen in the background (first one wins). */
void bt_comm_set_async_error(struct bt_comm *comm, bt_status_t st);

/* 1 while a non-blocking job uses the communicator (its calls then answer ncclInProgress). */
static inline int bt_comm_busy(struct bt_comm *c)
{
    return atomic_load_explicit(&c->busy, memory_order_acquire) != 0;
}

/* Wait until no non-blocking job uses the communicator. */
void bt_comm_wait_idle(struct bt_comm *comm);

/* ncclCommRevoke: stop the communicator's operations on this rank (running ones end with an
 * error, later ones are refused) and its proxy, keeping the bootstrap usable so that a shrink
 * can follow. Idempotent. caller: any thread but one of the comm's launches. */
void bt_comm_revoke(struct bt_comm *comm);

/*
 * ncclCommSuspend (collective): once the comm's work is done here, a barrier (no rank frees
 * what a peer may still use), then every executor's state goes (connectors, FIFOs, GPU
 * memory: what bt_comm_held counts) and the proxy ends; bootstrap, peers, windows and
 * settings stay. Operations are refused until bt_comm_resume, after which the states are made
 * again at the next operation, as at the first. caller: the comm's owner, outside a group.
 */
bt_status_t bt_comm_suspend(struct bt_comm *comm);
bt_status_t bt_comm_resume(struct bt_comm *comm);

/* Bytes of buffers the communicator holds in its own memory kind (a GPU communicator's
 * device memory, a host communicator's host memory), all of which a suspend gives back. */
uint64_t bt_comm_held(struct bt_comm *comm);

#endif
