/*
 * Works and primitives: the interface between algorithms and executors.
 *
 * A work is one collective's share on one channel (or one point-to-point op). An
 * algorithm is a schedule: bt_algo_prim(work, k, &prim) says what primitive step k of
 * the work does: which connectors it receives from, whether it folds in the user's input,
 * where the result goes (connectors and/or the user's output). Every step moves at most
 * one slot per connector. The host executor tries a step when its connectors are ready
 * and moves on to another lane otherwise; the CUDA executor will run the same steps in a
 * loop with blocking device primitives. This header is plain C for both compilers.
 *
 * One primitive, NCCL's family in one shape:
 *   value = fold(acc, recv[0], recv[1], src * pre)   then  post (final division)
 *   value -> send[0], send[1], dst
 *   send            : src            -> send
 *   recvReduceSend  : recv + src     -> send
 *   recvReduceCopySend: recv + src   -> dst, send
 *   recvCopySend    : recv           -> dst, send
 *   recv            : recv           -> dst
 */
#ifndef BT_COLL_WORK_H
#define BT_COLL_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "coll/redop.h"
#include "graph/channel.h"
#include "transport/conn.h"

enum bt_coll {
    BT_COLL_ALLREDUCE = 0,
    BT_COLL_ALLGATHER,
    BT_COLL_REDUCESCATTER,
    BT_COLL_BROADCAST,
    BT_COLL_REDUCE,
    BT_COLL_SEND,
    BT_COLL_RECV,
    BT_NUM_COLLS,
};

/* Send and Recv are the point-to-point ops: no common numbering, no fence. */
static inline BT_HD int bt_coll_is_p2p(int coll)
{
    return coll == BT_COLL_SEND || coll == BT_COLL_RECV;
}

/* The collective's name, for messages. */
static inline const char *bt_coll_name(int coll)
{
    static const char *const names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                        "Reduce",    "Send",      "Recv"};
    return coll >= 0 && coll < BT_NUM_COLLS ? names[coll] : "?";
}

enum bt_algo {
    BT_ALGO_RING = 0,
    BT_ALGO_TREE = 1,    /* a tree work's up half (the whole work at the root) */
    BT_ALGO_DIRECT = 2,  /* one-shot: every rank sends to every rank (coll/direct.h) */
    BT_ALGO_TWOSHOT = 3, /* reduce-scatter, all-gather by direct sends (coll/twoshot.h) */
    BT_ALGO_PAT = 4,     /* AllGather, ReduceScatter in log2 rounds (coll/pat.h) */
    BT_NUM_ALGOS,
    BT_ALGO_TREE_DOWN = BT_NUM_ALGOS, /* a tree work's down half: internal to the launch */
    /* an AllReduce through windows on host memory (exec/host/win_allreduce.h): no connectors, its
     * steps are the window barriers'; its `scratch` holds its struct bt_host_win_args */
    BT_ALGO_WINDOW,
};

/* The algorithms that run over the connector pairs with peers (the one-shot's: with every
 * peer; PAT uses 2 log2(n) of them). */
static inline BT_HD int bt_algo_all_peers(int algo)
{
    return algo == BT_ALGO_DIRECT || algo == BT_ALGO_TWOSHOT || algo == BT_ALGO_PAT;
}

#define BT_PRIM_MAX_PEERS 2

struct bt_prim {
    uint8_t nrecv, nsend;
    uint8_t pre_src; /* multiply src by the op's scalar before folding */
    uint8_t post;    /* apply the op's final division (integer Avg) */
    struct bt_conn *recv[BT_PRIM_MAX_PEERS];
    struct bt_conn *send[BT_PRIM_MAX_PEERS];
    const char *acc; /* a partial result to fold in first (no pre), or NULL */
    const char *src; /* user input to fold in, or NULL */
    char *dst;       /* user output to write, or NULL */
    size_t nelem;
};

/* Order between collectives of one communicator: the works of a collective count down
 * their fence as they finish; the works of the communicator's next collective start only
 * once that fence is zero. (A channel's works run in order on its lane anyway, but a
 * collective may use other channels or a tree's second lane, and read what the previous
 * one writes.) Point-to-point works have no fence: a group's sends and receives must run
 * concurrently. */
struct bt_fence {
    int remaining;
};

struct bt_work {
    struct bt_work *next;         /* in its lane */
    struct bt_fence *fence;       /* counted down when this work finishes, or NULL */
    const struct bt_fence *after; /* must be zero before this work starts, or NULL */
    uint8_t coll, algo, proto;
    struct bt_redop redop;
    const char *sendbuf;
    char *recvbuf;
    size_t esize;
    size_t count; /* elements: total (AllReduce, Bcast, Reduce), per rank (AllGather,
                     ReduceScatter), or of the message (Send, Recv) */
    int root;     /* Bcast/Reduce root; Send/Recv peer */
    int nranks;
    /* This channel's share: elements [chan_off, chan_off + chan_count) of the per-rank
       (or total) range, moved `chunk` elements per step at most. */
    size_t chan_off, chan_count, chunk;
    struct bt_channel *chan;
    /* Ring AllReduce: the channel's largest block share (chan->ring.split_max), 0 for equal
     * blocks. Copied when the work is planned so that counting steps never reads the channel,
     * which for GPU works is device memory. */
    uint32_t split_max;
    /* GPU launches: > 1 when this work stands for one collective on `nchans` channels, chan
     * .. chan + nchans - 1, one block each; its channel fields (and nsteps) are channel 0's
     * (a share of chan_count elements each, the last one shorter) and bt_work_channel makes
     * channel i's work. A launch then carries one work whatever its channel count (the
     * kernel's parameters are copied at every launch). 0 or 1: one channel. */
    uint32_t nchans;
    size_t scratch_stride;                   /* Direct, PAT: scratch bytes per channel */
    struct bt_conn *p2p_conn;                /* Send/Recv */
    struct bt_conn **peer_send, **peer_recv; /* Direct: connector to/from each rank */
    char *scratch;                           /* Direct, PAT: chunk-sized partial results */
    int rank;                                /* my rank (Direct) */
    uint64_t step, nsteps;                   /* progress */
    uint64_t seq;                            /* the communicator's operation number (logs) */
    /* Connectors that can (NET) may send a pure send step straight from the user's input
     * and land a pure receive step straight in the user's output: the user's buffers do
     * not overlap, so neither is written while the other is read. */
    uint8_t zero_copy;
    volatile int *abort_flag;
    void *owner; /* the communicator, for errors */
};

/* A step that only forwards the user's input to one connector. */
static inline BT_HD int bt_prim_pure_send(const struct bt_work *w, const struct bt_prim *p)
{
    return p->nsend == 1 && p->nrecv == 0 && !p->acc && p->src && !p->dst &&
           !(p->pre_src && w->redop.pre_mul) && !(p->post && w->redop.post_div);
}

/* A step that only lands what one connector brings in the user's output. Not in scratch
 * (Direct's partial results, always at the channel's scratch base): every loop reuses it,
 * and a network receive landing there directly could be posted for the next loop before
 * this loop's fold has read it. */
static inline BT_HD int bt_prim_pure_recv(const struct bt_work *w, const struct bt_prim *p)
{
    return p->nrecv == 1 && p->nsend == 0 && !p->acc && !p->src && p->dst && p->dst != w->scratch &&
           !(p->post && w->redop.post_div);
}

static inline BT_HD size_t bt_div_up(size_t a, size_t b)
{
    return (a + b - 1) / b;
}
static inline BT_HD size_t bt_min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A step that does nothing, for a schedule to fill in. */
static inline BT_HD void bt_prim_clear(struct bt_prim *p)
{
    p->nrecv = p->nsend = p->pre_src = p->post = 0;
    p->acc = NULL;
    p->src = NULL;
    p->dst = NULL;
    p->nelem = 0;
}

/* Chunks in this channel's share: the loops of a schedule that moves one chunk per step. */
static inline BT_HD uint64_t bt_work_nloops(const struct bt_work *w)
{
    return (uint64_t)bt_div_up(w->chan_count, w->chunk);
}

#endif
