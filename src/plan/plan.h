/*
 * The planner: what an operation becomes on an executor, the same way for both. Pure
 * functions of an operation and a target (what the executor offers); it never sees the
 * communicator. The executors (exec/host, exec/cuda) call it when they place an operation;
 * unit/test_schedule plans through it with a target of its own, and baton-topo asks it what a
 * machine not at hand would pick.
 *
 *   bt_plan_single  a one-rank collective: nothing, a copy, or a scaling
 *   bt_plan_coll    a collective -> the tuner's choice and one work standing for each channel
 *                   it uses (bt_work_channel makes channel i's; on host channels
 *                   bt_plan_channel, with a tree's down halves)
 *   bt_plan_p2p     a send or a receive -> a work per part
 *   bt_plan_pick    what bt_plan_coll would pick for a size (tools, tests)
 *   bt_plan_predict_us  the model's time of an operation (ncclGroupSimulateEnd)
 * An executor describes itself in a struct bt_plan_target; the planner knows nothing else of
 * it, and places no work: the host executor puts works on lanes, the CUDA executor in a
 * kernel's parameters.
 */
#ifndef BT_PLAN_PLAN_H
#define BT_PLAN_PLAN_H

#include "coll/work.h"
#include "plan/op.h"
#include "tune/tuner.h"

/* The tuner's last choices for a target: the tuner is a pure function of the collective, its
 * size and what the target offers (fixed for a communicator's executor), so a repeated call
 * (the common case: a few collectives and sizes again and again, such as a step's buckets and
 * a barrier between them) takes its choice from here. Replaced round robin. */
#define BT_TUNE_MEMO 4
struct bt_tune_memo {
    struct bt_tune_memo_entry {
        int coll;
        size_t bytes, esize; /* esize 0: empty */
        struct bt_tune_out out;
    } e[BT_TUNE_MEMO];
    int next;
};

/* The executor a plan is for, and what it offers: its tuner defaults, its channels and
 * connectors, what one step of each protocol carries. Addresses may be device memory: the
 * planner only stores them in works. */
struct bt_plan_target {
    int rank, nranks;
    const struct bt_tune_settings *set; /* rank 0's settings, the same on every rank */
    const struct bt_tune_defaults *def; /* the executor's measured defaults */
    volatile int *abort_flag;           /* where works watch for an abort (host executor) */
    void *owner;                        /* the communicator, for reports */
    int max_channels;
    size_t simple_slot, ll_payload; /* bytes a Simple step, an LL step carries */
    size_t ll128_payload;           /* 0: no LL128 */
    size_t direct_ll128_payload;    /* bytes a one-shot LL128 step carries */
    size_t pat_scratch;             /* scratch bytes a PAT ReduceScatter's channel may keep its
                                       partial sums in (at `scratch`, `scratch_stride` apart);
                                       0: BT_PAT_SCRATCH_MAX, allocated after planning */
    size_t direct_slot;             /* bytes a one-shot Simple step carries */
    int direct_ok, direct_max_channels, tree_ok, shm_all;
    int tree_max_channels, nhosts;           /* bt_tune_in's */
    int pat_ok, one_per_host;                /* bt_tune_in's */
    int shared_gpu;                          /* ranks share a GPU (bt_tune_in's) */
    float net_gbps, net_latency_us;          /* the network's reported figures (bt_tune_in's) */
    size_t align;                            /* bytes: channel shares and send/recv parts start at
                                                multiples of this (0: elements) */
    int zero_copy;                           /* works may send from / land in user buffers (NET) */
    struct bt_channel *chan;                 /* channel 0; channel i is chan + i */
    const struct bt_channel *host_chan;      /* the same when it is host memory (ring splits are
                                                read from it), else NULL: equal blocks */
    struct bt_conn **peer_send, **peer_recv; /* one-shot: [nranks] per channel, to each rank */
    char *scratch;                           /* one-shot partial results, per channel (a PAT
                                                ReduceScatter's: the executor's, after planning) */
    size_t scratch_stride;
    /* send/recv: a message is cut into at most p2p_parts parts of at least p2p_min_part bytes
     * (both ends cut alike, by size alone); LL lines up to p2p_ll_max bytes (0: never) */
    int p2p_parts;
    size_t p2p_min_part, p2p_ll_max;
    size_t p2p_slot;           /* bytes a Simple step of a send/recv connector carries */
    struct bt_tune_memo *memo; /* the target's last tuner choices, or NULL: ask every time */
};

/* The size nccl-tests reports for a collective: the per-rank buffer it moves. */
size_t bt_plan_bytes(const struct bt_op *op, int nranks);

/* A PreMulSum scalar's value, stored as op->dtype at v, into op (at enqueue for host-immediate
 * scalars, at launch for scalars read from memory). */
void bt_redop_scalar_from_bytes(struct bt_redop *op, const void *v);

/* A one-rank collective: the output is the input, pre-multiplied and divided as the op says.
 * 0: nothing to do; 1: a plain copy (also when the scaling is by 1, as a one-rank average's
 * division and a PreMulSum by 1 are); 2: a reduction of one source by a scalar other than 1. */
int bt_plan_single(const struct bt_op *op);

/*
 * A collective of nranks > 1 with count > 0: the tuner's choice (*t) and the work of channel
 * 0 (*w), which stands for every channel the collective uses (w->nchans, 1 or more; channel
 * i's work is bt_work_channel(copy, i), with its own steps). Every rank decides the same.
 */
void bt_plan_coll(const struct bt_plan_target *tg, const struct bt_op *op, struct bt_tune_out *t,
                  struct bt_work *w);

/* Whether bt_plan_coll puts the collective on the send/recv connectors with every peer (the
 * one-shot, two-shot, PAT): the tuner's choice alone, no work made (what an executor that
 * connects peers at first use asks before the launch). */
int bt_plan_all_peers(const struct bt_plan_target *tg, const struct bt_op *op);

/* The time the tuner's cost model gives an operation (a collective, a send or a receive) on
 * the target, in microseconds; 0 for one rank or no elements (ncclGroupSimulateEnd). */
double bt_plan_predict_us(const struct bt_plan_target *tg, const struct bt_op *op);

/* What bt_plan_coll picks for a collective of `bytes` (as nccl-tests counts them) of `dtype`:
 * the tuner's choice, with the channels that get elements (tools and tests). */
void bt_plan_pick(const struct bt_plan_target *tg, int coll, size_t bytes, int dtype,
                  struct bt_tune_out *t);

/*
 * Channel c (< the planned work's nchans, or 0) of a planned collective, for an executor whose
 * channels are host memory: *w holds a copy of bt_plan_coll's work (for c = 0 it may be that
 * work itself) and is made channel c's (bt_work_channel); for a tree where this rank has a
 * parent on that channel, *down gets the work's down half and 1 is returned (the root runs
 * its channel's whole work as the up half), else 0.
 */
int bt_plan_channel(struct bt_work *w, uint32_t c, struct bt_work *down);

/*
 * A send or a receive (to another rank, count > 0): its parts, each a byte copy on its own
 * connector pair: works[k] for part k = 0..n-1 (returned n, at most tg->p2p_parts), every
 * field set but p2p_conn, which the executor fills for (op->peer, direction, part k).
 */
int bt_plan_p2p(const struct bt_plan_target *tg, const struct bt_op *op, struct bt_work *works);

#endif /* BT_PLAN_PLAN_H */
