/*
 * The executor interface: all that core sees of an executor. An executor runs planned
 * operations on one kind of memory: exec/host on host memory (the launching thread drives
 * every lane to completion), exec/cuda on GPU memory (kernels on the callers' streams). Each
 * exports one table, struct bt_exec_ops, and core's launch (core/launch.c) drives both through
 * it, in one loop:
 *
 *   per communicator, at its first operation on the executor: create its state (the CUDA
 *     executor's is collective: every rank makes it at the same operation)
 *   begin()
 *   per operation, in group order:   a send/recv to itself -> copy
 *                                    a send or a receive   -> p2p
 *                                    a one-rank collective -> copy, or scale
 *                                    an AllReduce in windows every rank mapped -> window
 *                                    any other collective  -> coll
 *   run()     (host: connect, post what the proxy moves, drive every lane to the end;
 *              GPU: queue what is still held back; kernels finish on their streams)
 *   discard() when a placement or run failed
 *
 * What an executor knows of a communicator comes in struct bt_exec_comm, which core fills at
 * init; what it asks of core while it waits (reports, liveness) goes through the hooks there.
 * Core includes this header and no other of an executor's; an executor never sees the
 * communicator. Placement and run: the launching thread (an executor keeps its launch's
 * scratch per thread).
 */
#ifndef BT_EXEC_EXEC_H
#define BT_EXEC_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "coll/window.h"
#include "exec/report.h"
#include "graph/channel.h"
#include "plan/plan.h"
#include "transport/transport.h"
#include "util/status.h"

enum bt_exec_kind {
    BT_EXEC_HOST = 0, /* host memory: exec/host */
    BT_EXEC_CUDA = 1, /* GPU memory: exec/cuda (exec/nocuda without nvcc) */
    BT_EXEC_KINDS,
};

struct bt_exec_comm;

/* What core does for an executor while it waits on peers (core/arrival.c, core/liveness.c).
 * Each takes the communicator's executor view; `what` and `seq` name what waited
 * ("collective" #seq; 0: a send/recv, no number). */
struct bt_exec_hooks {
    /* A wait passed HANG_REPORT: add who has not arrived at collective `seq`. */
    void (*hang)(const struct bt_exec_comm *ec, uint64_t seq);
    /* Every ~50 ms of a stall: answer the other ranks' questions, take in their answers. */
    void (*stalled)(const struct bt_exec_comm *ec);
    /* Whether `peer` is down (gone, or failed and staying out): 1 after saying so. */
    int (*peer_down)(const struct bt_exec_comm *ec, int peer, const char *what, uint64_t seq);
    /* Whether `peer`, of another host and waited on for stalled_ns, said it failed or no
     * longer listens: 1 after saying so (networks that report nothing when a peer dies). */
    int (*peer_lost)(const struct bt_exec_comm *ec, int peer, const char *what, uint64_t seq,
                     uint64_t stalled_ns);
    /* A network transfer with `peer` failed: name it, and the rank whose death started it. */
    void (*net_failed)(const struct bt_exec_comm *ec, int peer);
};

/* A communicator as the executors see it: who the ranks are, where the connectors and
 * settings are. Core fills it at init (core/init.c); it lives as long as the communicator. */
struct bt_exec_comm {
    int rank, nranks;
    int dev;                       /* CUDA device (-1: a host-memory communicator) */
    void *owner;                   /* the communicator: for core's hooks, never dereferenced here */
    volatile int *abort_flag;      /* ncclCommAbort, revoke: every wait ends */
    struct bt_transport_ctx *tctx; /* peers, bootstrap, proxy, liveness tests */
    const struct bt_tune_settings *tune; /* rank 0's: the same on every rank */
    const struct bt_exec_hooks *hooks;
    struct bt_link_figures net_link; /* the network between hosts (zeros: one host) */
    int shm_all;                     /* every peer through shared memory (no NET) */
    int local_ranks;                 /* ranks on this host */
    int one_per_host;                /* every rank on a host of its own (the same everywhere) */
    const int *host;                 /* [nranks]: each rank's host, numbered by first appearance */
    int nhosts;
    int oversubscribed; /* more local ranks than CPUs: waits yield at once */
    int cpus_per_rank;  /* CPUs this process may run on, over the host's ranks (0: fewer than 1) */
    int nchannels;
    struct bt_channel *channels;   /* rings and trees, their host connectors */
    struct bt_link_cap *link_caps; /* [nranks] send caps (INJECT_LINK_BW) or NULL */
    /* FIFO geometry of host connectors (bytes per slot), the same on every rank */
    size_t simple_slot, ll_slot, p2p_slot, direct_slot;
    int max_ctas;     /* config.maxCTAs (0: none) */
    const char *name; /* config.commName, for logs ("" : none) */
};

/* A mapped window: a rank's buffer (or a peer's, as this rank addresses it) and its barrier
 * flags (struct bt_win_flags), with what the executor opened to reach them. */
struct bt_win_map {
    char *base;
    struct bt_win_flags *flags;
    void *opened[2]; /* executor's mappings (data, flags), or NULL */
    size_t len[2];
    /* this rank's export only: where every rank's part is mapped in one range (NCCL's
     * device API layout: rank r's window at flat + r * stride), or NULL */
    char *flat;
    uint64_t stride;
    void *priv; /* the executor's own record of the export or mapping */
};

/* An AllReduce whose input and output lie in windows every rank mapped: each rank's window
 * as mapped here ([nranks]) and the op's offsets in them (every rank's the same). */
struct bt_win_pair {
    const struct bt_win_map *src, *dst;
    size_t soff, roff;
};

/* Rank r's input, output and flags (the input window's: one set per AllReduce) for a window
 * AllReduce of `nranks`: the one fill both executors use. */
static inline void bt_win_pair_fill(const struct bt_win_pair *wp, int nranks, const char **src,
                                    char **dst, struct bt_win_flags **flags)
{
    for (int r = 0; r < nranks; r++) {
        src[r] = wp->src[r].base + wp->soff;
        dst[r] = wp->dst[r].base + wp->roff;
        flags[r] = wp->src[r].flags;
    }
}

/* Bytes of the blob a rank hands every peer about its window. */
#define BT_WIN_BLOB_BYTES 256

/* What an executor placed for a collective (batonCommGetStats counts it). */
struct bt_exec_placed {
    int algo;  /* enum bt_algo */
    int split; /* a ring AllReduce with blocks in proportion to the ring's links */
};

struct bt_exec_ops {
    const char *name; /* for logs: "host", "CUDA" */
    /* The communicator's state on this executor, made at its first operation there.
     * collective_setup: every rank makes it at the same operation (core watches the wait and
     * makes several communicators' at once, one thread each). */
    int collective_setup;
    bt_status_t (*create)(const struct bt_exec_comm *ec, void **state_p);
    /* Wait for the state's work in flight (NULL: nothing runs past a launch). */
    void (*sync)(void *state);
    /* After sync, while the transport's proxy still runs: wait for what the proxy moves for
     * that work (NULL: nothing). */
    void (*drain)(void *state);
    /* Free it, after drain and after the transport's proxy has ended (the proxy's threads use
     * the connectors). Accepts NULL. */
    void (*destroy)(void *state);
    /* Work in flight that waits on peers ends with an error (NULL: the abort flag is enough).
     * Any thread. */
    void (*abort)(void *state);
    /* The first error its work reported after its launch returned (NULL: none can). Any
     * thread. */
    bt_status_t (*error)(const void *state);
    /* Where its work reports for the watcher (NULL: nothing outlives a launch). */
    volatile struct bt_exec_report *(*report)(void *state);

    /* A launch. check: what it cannot do, before anything of the launch runs (state NULL:
     * not made yet; then checked again once it is). ops complete: placed operations are done
     * when run returns (host), else they finish later (GPU). */
    bt_status_t (*check)(const void *state, const struct bt_op *op);
    /* Connections ops need that the state lacks, made before anything of the launch is
     * placed (NULL: the state has them all from the start): lacks(state, op) whether op
     * needs one; connect(state, ops, nops) makes those that ops[], the state's in a launch,
     * need, pairwise with the peers concerned, which do the same for their matching ops
     * (core runs the communicators of one thread at once: fanout.h). */
    int (*lacks)(void *state, const struct bt_op *op);
    bt_status_t (*connect)(void *state, const struct bt_op *ops, int nops);
    int ops_complete;
    void (*begin)(void);
    bt_status_t (*copy)(void *state, void *dst, const void *src, size_t bytes, void *stream);
    /* A one-rank collective that scales (bt_plan_single 2); NULL: cannot (refused). */
    bt_status_t (*scale)(void *state, const struct bt_op *op);
    /* 1 when it placed the AllReduce through the windows (*st: how), 0 when the FIFOs win. */
    int (*window)(void *state, const struct bt_op *op, const struct bt_win_pair *wp,
                  bt_status_t *st);
    bt_status_t (*coll)(void *state, const struct bt_op *op, struct bt_exec_placed *placed);
    bt_status_t (*p2p)(void *state, const struct bt_op *op);
    bt_status_t (*run)(void);
    void (*discard)(void);

    /* Windows of this executor's memory (core/window.c registers them collectively): export
     * this rank's buffer (0: it cannot be reached from other ranks; *mine and the blob of
     * BT_WIN_BLOB_BYTES filled otherwise), map rank `peer`'s blob (same_process: its
     * addresses are ours; mine: this rank's export), unmap, unexport. */
    int (*win_export)(const struct bt_exec_comm *ec, void *buf, size_t size,
                      struct bt_win_map *mine, void *blob);
    bt_status_t (*win_open)(const struct bt_exec_comm *ec, int peer, int same_process,
                            const struct bt_win_map *mine, const void *blob,
                            struct bt_win_map *map);
    void (*win_close)(struct bt_win_map *map);
    void (*win_unexport)(struct bt_win_map *mine);
    /* The window's handle as kernels read it (ncclWindow_t: NCCL's struct ncclWindow_vidmem,
     * include/nccl_device/layout.h): a copy of *vid in memory the executor's kernels read,
     * and its release. NULL: the host struct itself is the handle. */
    bt_status_t (*win_publish)(const struct bt_exec_comm *ec, const void *vid, size_t bytes,
                               void **handle);
    /* Rewrite `bytes` of a published copy at offset `off` (the same memory serves the device
     * API's window table, core/win_table.h). */
    bt_status_t (*win_update)(void *handle, size_t off, const void *src, size_t bytes);
    void (*win_unpublish)(void *handle);

    /* Bytes of buffers the state holds in its executor's memory (the CUDA executor's: device
     * memory; the host's: its connectors' FIFOs), which destroying it gives back
     * (ncclCommMemStats); NULL: none. */
    uint64_t (*held)(void *state);

    /* The target a made state plans against (ncclGroupSimulateEnd asks it what an operation
     * would cost); NULL: the table makes no state. */
    const struct bt_plan_target *(*target)(const void *state);

    /* The target a communicator of `nranks` ranks on one host, one device each, would plan
     * against with the default geometry (every device pair NVLink when `nvlink_all`), for
     * tools and tests that ask what the tuner picks on a machine not at hand (baton-topo
     * --file); NULL: none. The target points at nothing. */
    void (*model)(int nranks, int nvlink_all, const struct bt_tune_settings *set,
                  struct bt_plan_target *tg);
};

extern const struct bt_exec_ops bt_exec_host;
extern const struct bt_exec_ops bt_exec_cuda;

/* The table of executor `kind` (enum bt_exec_kind). */
static inline const struct bt_exec_ops *bt_exec_of(int kind)
{
    return kind == BT_EXEC_CUDA ? &bt_exec_cuda : &bt_exec_host;
}

#endif
