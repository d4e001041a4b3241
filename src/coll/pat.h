/*
 * Logarithmic AllGather and ReduceScatter for one rank per host ("PAT-like": NCCL runs PAT
 * there): ceil(log2 n) rounds of distance d = 1, 2, 4, ... instead of the ring's n - 1 hops,
 * over the connector pair with each peer (the one-shot's, work.h's peer_send / peer_recv), of
 * which a rank uses 2 ceil(log2 n). Any n, powers of two or not. Blocks are named by their
 * distance from this rank: block `rel` is rank (me + rel) mod n's.
 *
 * AllGather (Bruck's order). Before the round of distance d a rank holds blocks [0, d); it
 * sends them to me - d, which lacks exactly those, and receives [d, d + c) from me + d, where
 * c = min(d, n - d) (the last round takes only what is missing). The first send also copies
 * the rank's own input into its block of the output.
 *
 * A round's sends read only blocks of earlier rounds, so they go out back to back, and the
 * round costs one hop however many blocks it has, in windows of BT_NSTEPS blocks: send a
 * window, then receive one. A window fits the FIFO, so a send waits for credit only while its
 * peer is behind (an earlier window, round or loop); every wait is on a rank further behind,
 * so none is circular. (One block at a time, send then receive, would be deadlock-free too,
 * but every block would wait for the one before it: n - 1 hops, the ring's.) A loop's
 * latency: bt_pat_hops(n) hops, ceil(log2 n) up to 16 ranks.
 *
 * ReduceScatter: the AllGather run backwards, copies turned into folds. Rounds go d = 2^(K-1)
 * down to 1. Before the round of distance d a rank holds partial sums for blocks [0, 2d)
 * (at first: its input, every block); it sends [d, d + c) to me + d, which owns those from
 * then on, and folds what me - d sends for [0, c) into its own. After d = 1 it holds block 0,
 * its output, every rank's contribution folded in once. A block folded before reads its
 * partial sum from scratch (block rel at scratch + rel chunks), else from the input
 * (pre-multiplied, as every input is exactly once); blocks rel < bt_pat_scratch_blocks(n)
 * are ever folded. Traffic per rank: (n - 1) / n of the output, as the ring's.
 *
 * Each round is 2c steps a loop (one chunk of every block); 2 (n - 1) steps a loop in all.
 */
#ifndef BT_COLL_PAT_H
#define BT_COLL_PAT_H

#include "coll/work.h"

/* A ReduceScatter's partial sums (bt_pat_scratch_blocks chunks) fit this many bytes: the
 * planner shortens its chunks where they would not. */
#define BT_PAT_SCRATCH_MAX (8u << 20)

static inline BT_HD int bt_pat_rounds(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* Blocks of round d: min(d, n - d). */
static inline BT_HD int bt_pat_count(int n, int d)
{
    return d < n - d ? d : n - d;
}

/* Partial sums a ReduceScatter keeps apart from its input: blocks [0, this) are ever folded. */
static inline BT_HD int bt_pat_scratch_blocks(int n)
{
    int most = 0;
    for (int d = 1; d < n; d *= 2)
        most = bt_pat_count(n, d) > most ? bt_pat_count(n, d) : most;
    return most;
}

static inline BT_HD uint64_t bt_pat_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w) * (uint64_t)(2 * (w->nranks - 1));
}

/* Hops in sequence of one loop: a hop per window of each round. */
static inline BT_HD int bt_pat_hops(int n)
{
    int h = 0;
    for (int d = 1; d < n; d *= 2)
        h += (bt_pat_count(n, d) + BT_NSTEPS - 1) / BT_NSTEPS;
    return h;
}

/* Step j of a loop: its round's distance d (in the schedule's order), the block i within the
 * round and whether the step sends it (else receives it). A round of c blocks is windows of
 * BT_NSTEPS sends, each followed by as many receives. */
static inline BT_HD void bt_pat_locate(int n, int reverse, int j, int *d_p, int *i_p, int *send_p)
{
    int k = reverse ? bt_pat_rounds(n) - 1 : 0;
    for (;;) {
        int d = 1 << k, c = bt_pat_count(n, d);
        if (j < 2 * c) {
            int w = j / (2 * BT_NSTEPS), first = w * BT_NSTEPS, at = j - 2 * first;
            int size = c - first < BT_NSTEPS ? c - first : BT_NSTEPS;
            *d_p = d;
            *send_p = at < size;
            *i_p = first + (at < size ? at : at - size);
            return;
        }
        j -= 2 * c;
        k += reverse ? -1 : 1;
    }
}

static inline BT_HD size_t bt_pat_block(const struct bt_work *w, int rel)
{
    return (size_t)((w->rank + rel) % w->nranks);
}

/* Step k of the work (`reverse`: ReduceScatter's order): its round's distance, block and
 * direction (bt_pat_locate), p cleared and sized for the step's loop; returns the loop's
 * offset in each block. */
static inline BT_HD size_t bt_pat_step(const struct bt_work *w, uint64_t k, int reverse,
                                       struct bt_prim *p, int *d_p, int *i_p, int *send_p)
{
    uint64_t per = 2 * (uint64_t)(w->nranks - 1);
    bt_pat_locate(w->nranks, reverse, (int)(k % per), d_p, i_p, send_p);
    size_t off = w->chan_off + (size_t)(k / per) * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    return off;
}

static inline BT_HD void bt_pat_allgather_prim(const struct bt_work *w, uint64_t k,
                                               struct bt_prim *p)
{
    int n = w->nranks, me = w->rank, d, i, send;
    size_t off = bt_pat_step(w, k, 0, p, &d, &i, &send);
    if (send) {
        char *blk = w->recvbuf + (bt_pat_block(w, i) * w->count + off) * w->esize;
        p->nsend = 1;
        p->send[0] = w->peer_send[(me - d + n) % n];
        if (d == 1) { /* block 0: the rank's own input, into its output too */
            p->src = w->sendbuf + off * w->esize;
            p->dst = blk;
        } else {
            p->src = blk;
        }
    } else {
        p->nrecv = 1;
        p->recv[0] = w->peer_recv[(me + d) % n];
        p->dst = w->recvbuf + (bt_pat_block(w, d + i) * w->count + off) * w->esize;
    }
}

/* The ReduceScatter's partial sum of block rel before round d: scratch if a round before it
 * (larger distances) folded rel. */
static inline BT_HD int bt_pat_folded(int n, int d, int rel)
{
    for (int e = d * 2; e < n; e *= 2)
        if (rel < bt_pat_count(n, e))
            return 1;
    return 0;
}

static inline BT_HD void bt_pat_reducescatter_prim(const struct bt_work *w, uint64_t k,
                                                   struct bt_prim *p)
{
    int n = w->nranks, me = w->rank, d, i, send;
    size_t off = bt_pat_step(w, k, 1, p, &d, &i, &send);
    int rel = send ? d + i : i;
    const char *input = w->sendbuf + (bt_pat_block(w, rel) * w->count + off) * w->esize;
    char *partial = w->scratch + (size_t)rel * w->chunk * w->esize;
    int folded = bt_pat_folded(n, d, rel);
    if (send) {
        p->nsend = 1;
        p->send[0] = w->peer_send[(me + d) % n];
        p->src = folded ? partial : input;
        p->pre_src = !folded;
        return;
    }
    p->nrecv = 1;
    p->recv[0] = w->peer_recv[(me - d + n) % n];
    if (folded)
        p->acc = partial;
    else {
        p->src = input;
        p->pre_src = 1;
    }
    if (d == 1) { /* block 0 complete: the output */
        p->dst = w->recvbuf + off * w->esize;
        p->post = 1;
    } else {
        p->dst = partial;
    }
}

#endif
