/*
 * Transports: how a connector's FIFO reaches the peer. A table of functions, filled with
 * designated initializers; selection per peer pair takes the first whose can_connect
 * says yes (shm, then net). The CUDA executor maps its own GPU FIFOs (exec/cuda/fifos.c).
 *
 * Connecting one connector (both ends run this; transport/connect.c drives it in phases so
 * one thread can connect several communicators of one process without deadlock):
 *   setup()     allocate local resources; fill a blob for the peer
 *   -- blobs exchanged over bootstrap --
 *   connect()   map/attach the peer's resources described by its blob
 *   -- the sender's acknowledgement --
 *   connected() (the receiver first) both ends are attached: drop names that let a crash
 *               leak (unlink), or finish what needs the peer's attach first (accept)
 *   -- the receiver's acknowledgement, then the sender's connected() --
 * So a sender uses its connector only after the receiver's connected() returned.
 *
 * Connectors of most transports are moved by the executors alone, through memory both ends
 * map. A transport with `post` (net) is moved by the communicator's CPU proxy: the executor
 * hands it, per work and connector, the number of steps the work moves (bt_transport_post),
 * and later waits for or reaps that op (bt_transport_op_*).
 */
#ifndef BT_TRANSPORT_H
#define BT_TRANSPORT_H

#include <stdint.h>

#include "proxy/proxy.h"
#include "transport/conn.h"
#include "util/status.h"

#define BT_CONNECT_INFO_BYTES 256
/* How long a failure path keeps looking for a peer that is dying: its sockets close before
 * its process is gone (and it stays a zombie until reaped). */
#define BT_PEER_DYING_MS 200
/* How often a wait on one rank asks whether it is down. */
#define BT_PEER_CHECK_NS 50000000ull

struct bt_bootstrap;
struct bt_net;

/* Where a rank runs, as every rank tells the others at init. */
struct bt_peer_info {
    int rank;
    int pid;
    int cuda_dev;
    int is_host;
    uint64_t host_hash; /* same value <=> same host (hostname + boot id) */
    uint64_t shm_ns;    /* IPC namespace inode: shm works only inside one namespace */
    uint64_t pid_ns;    /* PID namespace inode: `pid` means the same process only inside it */
};

/*
 * A communicator as its transports (and the CUDA executor's connectors) see it: who the
 * ranks are and where they run, the bootstrap the connection blobs travel on, the abort
 * flag, the CPU proxy, and whether a peer is down. Core fills it at init (core/comm.c) and
 * injects the liveness test (core/liveness.c); transports never see the communicator.
 */
struct bt_transport_ctx {
    int rank, nranks;
    const struct bt_peer_info *peers; /* [nranks] */
    struct bt_bootstrap *bs;
    volatile int *abort_flag;
    char name[112];         /* for the proxy's threads and logs */
    struct bt_proxy *proxy; /* the CPU proxy, started by the first connector that needs one */
    char proxy_cpus[256];   /* cpulist for the proxy's threads (a GPU's NUMA node), or "" */
    char nic[32];           /* network device nearest this rank's GPU (topology), or "" */
    int nic_path;           /* its path class from the GPU (topo/topo.h BT_PATH_*), or -1 */
    /* The network (net/net.h), opened when first needed (at init across hosts, else by the
     * first NET connector); what it asks for:
     * a network by name (the config's netName; "" : NCCL_NET, else any), the comm's id and
     * traffic class (handed to the backend's init). */
    struct bt_net *net;
    char net_name[64];
    uint64_t comm_id;
    int traffic_class;
    /* Whether rank `peer` is down: gone, or failed and staying out (cheap; any thread). */
    int (*peer_down)(void *arg, int peer);
    /* If `peer` is down: say so (WARN, naming the rank whose death started it), record it
     * as this rank's cause and return 1; `what` waited. Else 0, after up to wait_ms. */
    int (*report_down)(void *arg, int peer, const char *what, int wait_ms);
    /* Whether rank `peer`, waited on without progress for stalled_ns, is down by what only
     * a rank of another host needs: it said it failed (a bootstrap message), or it is gone
     * though its host still answers (its bootstrap listener refuses), for networks that say
     * nothing when a peer dies. The probe waits until the stall is long enough to ask (the
     * policy is the caller's: core/liveness.h); rate-limited; not logged (the failure's
     * report names it). */
    int (*peer_lost)(void *arg, int peer, uint64_t stalled_ns);
    void *live_arg;
    /* [nranks]: 1 for a rank this one has, or is making, a connector with (any transport,
     * any executor); set before a connection setup's first message (transport/connect.c),
     * NULL before the first. */
    unsigned char *linked_peers;
};

/* A receive step that lands in the user's output instead of a slot: where, and its exact
 * size (ptr NULL: into the slot, as usual). */
struct bt_zc_step {
    void *ptr;
    size_t bytes;
};

/* Steps of one connector handed to a proxy (bt_transport_post). A transport's op starts
 * with this; the proxy owns it until args.complete. */
struct bt_transport_op {
    struct bt_proxy_args args;
    struct bt_transport_ctx *ctx;
    int peer;
    void (*release)(struct bt_transport_op *op); /* frees the transport's op */
};

struct bt_link_figures;

struct bt_transport_ops {
    const char *name;
    int (*can_connect)(const struct bt_transport_ctx *ctx, int peer);
    bt_status_t (*setup)(struct bt_transport_ctx *ctx, struct bt_conn *conn, void *info_p);
    bt_status_t (*connect)(struct bt_transport_ctx *ctx, struct bt_conn *conn,
                           const void *peer_info);
    bt_status_t (*connected)(struct bt_transport_ctx *ctx, struct bt_conn *conn);
    void (*free)(struct bt_conn *conn);
    /* How a connected connector shows in logs ("NET/Socket/0"); NULL: `name`. */
    const char *(*via)(const struct bt_conn *conn);
    /* Connectors the proxy moves (NULL: the executors move them alone). Hand the proxy
     * `nsteps` steps of `conn` that an executor produces (send) or consumes (recv), after
     * those posted before on the same connector. zc (may be NULL; nsteps entries, malloc'ed;
     * the op owns it from here, even on failure): where pure receive steps land. */
    bt_status_t (*post)(struct bt_transport_ctx *ctx, struct bt_conn *conn, uint64_t nsteps,
                        struct bt_zc_step *zc, struct bt_transport_op **op_p);
    /* What this transport's links can do as its devices report it (NULL: nothing to say);
     * may open what the connectors would open first (the network). */
    void (*link)(struct bt_transport_ctx *ctx, struct bt_link_figures *f);
};

/* A link's reported figures (a network device's properties): 0 where unknown. */
struct bt_link_figures {
    float gbps;       /* line rate, GB/s (10^9 bytes per second) */
    float latency_us; /* one way */
};

/* The figures of the links connectors to `peer` would use (zeros when unknown). */
void bt_transport_link(struct bt_transport_ctx *ctx, int peer, struct bt_link_figures *f);

extern const struct bt_transport_ops bt_transport_shm;
extern const struct bt_transport_ops bt_transport_net;

/*
 * The end of a communicator's transports, in this order (core/comm.c):
 *   bt_transport_ctx_stop   (revoke) the first half of join: the proxy completes every op
 *                           it holds with an error, fails later posts and ends its progress
 *                           thread; the ops stay readable, the proxy and connectors allocated
 *   bt_transport_ctx_join   stop if not yet, join the proxy's threads and free the proxy:
 *                           after it no thread touches a connector
 *   bt_conn_free            each connector (the proxy's threads used them, so after join)
 *   bt_transport_ctx_fini   what the connectors shared (the network), after every connector
 * Each accepts a context whose proxy never started or whose network never opened.
 * caller: the communicator's owner, never a proxy thread.
 */
void bt_transport_ctx_stop(struct bt_transport_ctx *ctx);
void bt_transport_ctx_join(struct bt_transport_ctx *ctx);
void bt_transport_ctx_fini(struct bt_transport_ctx *ctx);

/* The transport for a connector to `peer`, or NULL (logged) when none can connect. */
const struct bt_transport_ops *bt_transport_select(const struct bt_transport_ctx *ctx, int peer);

/* Whether connectors to `peer` would be moved by the executors alone, through memory both
 * ends map (the transport selected has no `post`); 0 when none can connect. Not logged. */
int bt_transport_mapped(const struct bt_transport_ctx *ctx, int peer);

/* The communicator's network, opened now if it was not yet (transport/net.c). */
struct bt_net;
bt_status_t bt_transport_network(struct bt_transport_ctx *ctx, struct bt_net **net_p);

/* Whether this rank has, or is making, a connector with `peer`: a rank that can see this one
 * fail through it, or waits on it in connection setup. Any thread that owns the context. */
int bt_transport_linked_peer(const struct bt_transport_ctx *ctx, int peer);

/* Post `nsteps` steps of a proxied connector (bt_conn_proxied; see `post` above). */
static inline bt_status_t bt_transport_post(struct bt_transport_ctx *ctx, struct bt_conn *conn,
                                            uint64_t nsteps, struct bt_zc_step *zc,
                                            struct bt_transport_op **op_p)
{
    return conn->tp->post(ctx, conn, nsteps, zc, op_p);
}

/* ---- ops a proxy moves (transport/proxy_op.c) ---- */

/*
 * Wait for a posted op, then free it. While waiting it calls poll(arg) (may be NULL), which
 * drives the proxy (bt_proxy_drive) and returns whether anything moved, and when poll moved
 * nothing, block(arg) (may be NULL; bounded, as in exec/host's wait policy). It gives the op
 * up (cancels it, waits for the proxy to hand it back, and fails) after TIMEOUT without
 * progress, or once the op's peer is down (ctx->peer_down, asked every 50 ms, and
 * ctx->peer_lost).
 */
bt_status_t bt_transport_op_wait(struct bt_transport_op *op, int (*poll)(void *),
                                 int (*block)(void *), void *arg);
/* Without waiting: 1 when the op is complete (then freed, its result in *st), else 0. For
 * ops whose steps a GPU kernel produces (exec/cuda), reaped at later launches. */
int bt_transport_op_test(struct bt_transport_op *op, bt_status_t *st);
/* Without waiting or freeing: 1 when the op has already failed (a connection closed or
 * reset), so a launch waiting on other connectors can stop instead of waiting for TIMEOUT. */
int bt_transport_op_failed(const struct bt_transport_op *op);
/* Give up an op (its launch fails): it completes with BT_ERR_REMOTE at the proxy's next
 * round; still bt_transport_op_wait for it, which frees it. */
void bt_transport_op_cancel(struct bt_transport_op *op);

#endif
