/*
 * The tuner: for one collective, which algorithm, protocol, number of channels and chunk
 * size. Every rank must decide the same from the same inputs (count, type, nranks,
 * parameters), since the schedules of all ranks must match step for step.
 */
#ifndef BT_TUNE_TUNER_H
#define BT_TUNE_TUNER_H

#include <stddef.h>
#include <stdint.h>

#include "coll/work.h"
#include "tune/cost.h"

/* What the environment says about choices (PROTO, ALGO, thresholds). Read by each rank at
 * init; every rank then uses rank 0's, so a stray difference cannot split a schedule. */
struct bt_tune_settings {
    int64_t ll_threshold, tree_threshold, direct_threshold; /* bytes; -1: the default */
    int64_t ll128_threshold;
    int64_t win_min, win_max; /* bytes: the window AllReduce between these (-1: default) */
    int32_t min_nchannels;
    uint8_t ll_ok, simple_ok, ll128_ok, ring_ok, tree_ok, direct_ok, twoshot_ok, pat_ok;
    uint8_t gpu_trees; /* GPU_TREES: GPUs on several hosts may run trees */
};

void bt_tune_settings_from_env(struct bt_tune_settings *set);

struct bt_tune_defaults;

/* An AllReduce of `bytes` on `nranks` ranks whose input lies in a window every rank mapped
 * (core/window.h): the blocks the window kernel should run it with (at most `max_blocks`; the
 * host executor passes 1), or 0 when the FIFO paths win there. `def`: the executor's defaults
 * (win_min); the measurements behind them: docs/TUNING.md. */
int bt_tune_window(const struct bt_tune_settings *set, const struct bt_tune_defaults *def,
                   int nranks, size_t bytes, int max_blocks);

/* The defaults the settings fall back on, per executor: measured on host memory for the host
 * executor (bt_tune_host_defaults), on the GPU machine for CUDA mode (bt_tune_gpu_defaults);
 * the measurements are in docs/TUNING.md. Byte counts are the collective's size as nccl-tests
 * counts it. AllReduce picks its algorithm and protocol by the cost model (tune/cost.h); the
 * other collectives run rings, LL up to ll_threshold; AllGather and ReduceScatter with one
 * rank per host run PAT where the model says it is cheaper than the ring. */
struct bt_tune_defaults {
    int64_t ll_threshold;            /* rings of the other collectives: LL up to this */
    int64_t ll_cap_off_nvlink;       /* AllReduce without LL128 (GPUs not all joined by
                                        NVLink: the figures are NVLink's): LL up to this */
    struct bt_tune_costs local;      /* AllReduce, every peer through shm or peer mappings */
    struct bt_tune_costs net;        /* AllReduce, some peer behind the network */
    struct bt_tune_costs shared_gpu; /* AllReduce, ranks sharing one GPU (TEST_SAME_GPU): every
                                        byte moves within its memory, its SMs split between them;
                                        all zero: use `local` */
    size_t shared_gpu_direct_max;    /* ranks sharing a GPU: one-shot while ranks x bytes <= */
    size_t bytes_per_channel;        /* Simple ring: a channel per this many bytes */
    size_t ll_bytes_per_channel;     /* LL ring: likewise; 0: one channel */
    size_t direct_bytes_per_channel; /* one-shot: likewise; 0: one channel */
    size_t net_bytes_per_channel;    /* through the network: likewise; 0: one channel */
    size_t win_min;                  /* AllReduce through windows from this many bytes */
};

extern const struct bt_tune_defaults bt_tune_host_defaults;
extern const struct bt_tune_defaults bt_tune_gpu_defaults; /* the CUDA executor's */

struct bt_tune_in {
    const struct bt_tune_settings *set;
    const struct bt_tune_defaults *def;
    int coll;
    int nranks;
    size_t bytes; /* the collective's size as nccl-tests counts it (per-rank buffer) */
    size_t esize;
    int max_channels;
    size_t simple_slot, ll_payload; /* bytes one step carries per protocol */
    size_t direct_slot;             /* Simple bytes per step of the one-shot connectors */
    size_t ll128_payload;           /* LL128 bytes per step (every connector); 0: no LL128
                                       (not every GPU pair is NVLink, or the host) */
    size_t direct_ll128_payload;    /* LL128 bytes per step of the one-shot (<= ll128_payload) */
    int direct_ok;                  /* every rank on this host and reachable through shm */
    int direct_max_channels;        /* channels one-shot may use (its connectors per peer) */
    int tree_ok;                    /* the executor runs trees */
    int tree_max_channels;          /* channels a tree may use (0: max_channels): the CUDA
                                       executor's trees take two blocks a channel */
    int nhosts;                     /* hosts the ranks are on (0 or 1: one; the trees' shape) */
    int pat_ok;                     /* the executor runs PAT (AllGather, ReduceScatter) */
    int one_per_host;               /* every rank on a host of its own: PAT by default where
                                       the model prefers it (else only when ALGO forces it) */
    int shm_all;                    /* 0: some peer is behind the network (Simple only) */
    int shared_gpu;                 /* ranks share a GPU (TEST_SAME_GPU): def->shared_gpu */
    /* The network between hosts as its devices report it (every rank's slowest device: the
     * same on every rank), 0: unknown or no other host. A link slower than the fitted
     * figures bounds them (tune/cost.h). */
    float net_gbps, net_latency_us;
};

struct bt_tune_out {
    int algo;
    int proto;
    int nchannels;
    size_t chunk; /* elements per step */
    double us;    /* the cost model's time for the choice (tune/cost.h), microseconds */
};

void bt_tune_coll(const struct bt_tune_in *in, struct bt_tune_out *out);

#endif
