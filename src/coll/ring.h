/*
 * Ring algorithms as schedules. n ranks in ring order; p = my ring position; the block a
 * step handles is named by the rank that owns it, order[pos mod n]. Every step moves at
 * most `chunk` elements, so the data of a channel is processed in loops.
 */
#ifndef BT_COLL_RING_H
#define BT_COLL_RING_H

#include "coll/work.h"

static inline BT_HD int bt_ring_block(const struct bt_work *w, int pos)
{
    int n = w->nranks;
    return w->chan->ring.order[((pos % n) + n) % n];
}

/*
 * Ring AllReduce, n ranks. Per loop the channel's range is cut into n blocks, equal (the
 * last ones may be short or empty) or split in proportion to the ring's links:
 *   step 0         : send block p-1 (own input)
 *   steps 1..n-2   : recv block p-1-j, reduce with own input, send on   (reduce-scatter)
 *   step n-1       : recv block p, reduce, final op, write output, send  (last reduce + gather)
 *   steps n..2n-3  : recv block p-(j-n+1), write output, send on          (all-gather)
 *   step 2n-2      : recv block p+1, write output
 * Traffic per rank: 2(n-1)/n x bytes. Latency: 2(n-1) hops per loop.
 */
/* Elements per loop: n blocks of at most `chunk` each (equal, or the ring's split, whose
 * largest block then gets `chunk`). */
static inline BT_HD size_t bt_ring_allreduce_loop(const struct bt_work *w)
{
    if (!w->split_max)
        return (size_t)w->nranks * w->chunk;
    size_t loop = w->chunk * BT_RING_SPLIT_TOTAL / w->split_max;
    return loop ? loop : 1;
}

/* Block b's elements [*start, *start + len) of a loop of `rem`: equal blocks of
 * ceil(rem / n) (the last ones short or empty), or the ring's split (exact, adding up to
 * rem; a block never exceeds chunk since rem <= loop). */
static inline BT_HD size_t bt_ring_allreduce_block(const struct bt_work *w, size_t b, size_t rem,
                                                   size_t *start)
{
    const struct bt_ring *r = &w->chan->ring;
    if (!w->split_max) {
        size_t real = bt_div_up(rem, (size_t)w->nranks);
        *start = b * real;
        return *start < rem ? bt_min_sz(real, rem - *start) : 0;
    }
    *start = rem * r->split[b] / BT_RING_SPLIT_TOTAL;
    return rem * r->split[b + 1] / BT_RING_SPLIT_TOTAL - *start;
}

static inline BT_HD uint64_t bt_ring_allreduce_nsteps(const struct bt_work *w)
{
    return (uint64_t)bt_div_up(w->chan_count, bt_ring_allreduce_loop(w)) *
           (uint64_t)(2 * w->nranks - 1);
}

static inline BT_HD void bt_ring_allreduce_prim(const struct bt_work *w, uint64_t k,
                                                struct bt_prim *p)
{
    int n = w->nranks, pos = w->chan->ring.index;
    int per = 2 * n - 1;
    size_t l = (size_t)(k / (uint64_t)per);
    int j = (int)(k % (uint64_t)per);
    size_t loop = bt_ring_allreduce_loop(w);
    size_t off = w->chan_off + l * loop;
    size_t rem = bt_min_sz(loop, w->chan_off + w->chan_count - off);

    int bpos;
    bt_prim_clear(p);
    if (j == 0) {
        bpos = pos - 1;
    } else if (j < n - 1) {
        bpos = pos - 1 - j;
    } else if (j == n - 1) {
        bpos = pos;
    } else if (j < 2 * n - 2) {
        bpos = pos - (j - n + 1);
    } else {
        bpos = pos + 1;
    }
    size_t start;
    p->nelem = bt_ring_allreduce_block(w, (size_t)bt_ring_block(w, bpos), rem, &start);
    size_t byteoff = (off + start) * w->esize;

    if (j > 0) {
        p->nrecv = 1;
        p->recv[0] = &w->chan->ring_recv;
    }
    if (j < 2 * n - 2) {
        p->nsend = 1;
        p->send[0] = &w->chan->ring_send;
    }
    if (j <= n - 1) {
        p->src = w->sendbuf + byteoff;
        p->pre_src = 1;
    }
    if (j >= n - 1)
        p->dst = w->recvbuf + byteoff;
    if (j == n - 1)
        p->post = 1;
}

/*
 * Ring ReduceScatter, n ranks; block b is rank b's output (count elements each).
 *   step 0       : send block p-1 of own input
 *   steps 1..n-2 : recv block p-1-j, reduce with own input, send on
 *   step n-1     : recv block p, reduce with own input, final op, write output
 * Traffic per rank: (n-1)/n x input bytes.
 */
static inline BT_HD uint64_t bt_ring_reducescatter_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w) * (uint64_t)w->nranks;
}

static inline BT_HD void bt_ring_reducescatter_prim(const struct bt_work *w, uint64_t k,
                                                    struct bt_prim *p)
{
    int n = w->nranks, pos = w->chan->ring.index;
    size_t l = (size_t)(k / (uint64_t)n);
    int j = (int)(k % (uint64_t)n);
    size_t off = w->chan_off + l * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    size_t b = (size_t)bt_ring_block(w, j == n - 1 ? pos : pos - 1 - j);
    p->src = w->sendbuf + (b * w->count + off) * w->esize;
    p->pre_src = 1;
    if (j > 0) {
        p->nrecv = 1;
        p->recv[0] = &w->chan->ring_recv;
    }
    if (j < n - 1) {
        p->nsend = 1;
        p->send[0] = &w->chan->ring_send;
    } else {
        p->dst = w->recvbuf + off * w->esize;
        p->post = 1;
    }
}

/*
 * Ring AllGather, n ranks; block b is rank b's input (count elements each).
 *   step 0       : own input -> own block of the output, send
 *   steps 1..n-2 : recv block p-j, write output, send on
 *   step n-1     : recv block p+1, write output
 * Traffic per rank: (n-1)/n x output bytes.
 */
static inline BT_HD uint64_t bt_ring_allgather_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w) * (uint64_t)w->nranks;
}

static inline BT_HD void bt_ring_allgather_prim(const struct bt_work *w, uint64_t k,
                                                struct bt_prim *p)
{
    int n = w->nranks, pos = w->chan->ring.index;
    size_t l = (size_t)(k / (uint64_t)n);
    int j = (int)(k % (uint64_t)n);
    size_t off = w->chan_off + l * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    size_t b = (size_t)bt_ring_block(w, pos - j);
    p->dst = w->recvbuf + (b * w->count + off) * w->esize;
    if (j == 0) {
        p->src = w->sendbuf + off * w->esize;
    } else {
        p->nrecv = 1;
        p->recv[0] = &w->chan->ring_recv;
    }
    if (j < n - 1) {
        p->nsend = 1;
        p->send[0] = &w->chan->ring_send;
    }
}

/* Position of the root in this channel's ring. */
static inline BT_HD int bt_ring_root_pos(const struct bt_work *w)
{
    for (int i = 0; i < w->nranks; i++)
        if (w->chan->ring.order[i] == w->root)
            return i;
    return 0;
}

/*
 * Ring Broadcast: a chain starting at the root, one step per chunk.
 *   root   : own input -> output (if out of place), send
 *   middle : recv, write output, send on
 *   last   : recv, write output
 */
static inline BT_HD uint64_t bt_ring_broadcast_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w);
}

static inline BT_HD void bt_ring_broadcast_prim(const struct bt_work *w, uint64_t k,
                                                struct bt_prim *p)
{
    int n = w->nranks;
    int q = ((w->chan->ring.index - bt_ring_root_pos(w)) % n + n) % n;
    size_t off = w->chan_off + (size_t)k * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    p->dst = w->recvbuf + off * w->esize;
    if (q == 0) {
        p->src = w->sendbuf + off * w->esize;
    } else {
        p->nrecv = 1;
        p->recv[0] = &w->chan->ring_recv;
    }
    if (q < n - 1) {
        p->nsend = 1;
        p->send[0] = &w->chan->ring_send;
    }
}

/*
 * Ring Reduce: a chain that starts after the root and ends at it, one step per chunk.
 *   first  : own input -> send
 *   middle : recv, reduce with own input, send on
 *   root   : recv, reduce with own input, final op, write output
 */
static inline BT_HD uint64_t bt_ring_reduce_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w);
}

static inline BT_HD void bt_ring_reduce_prim(const struct bt_work *w, uint64_t k, struct bt_prim *p)
{
    int n = w->nranks;
    int q = ((w->chan->ring.index - bt_ring_root_pos(w) - 1) % n + n) % n;
    size_t off = w->chan_off + (size_t)k * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    p->src = w->sendbuf + off * w->esize;
    p->pre_src = 1;
    if (q > 0) {
        p->nrecv = 1;
        p->recv[0] = &w->chan->ring_recv;
    }
    if (q < n - 1) {
        p->nsend = 1;
        p->send[0] = &w->chan->ring_send;
    } else {
        p->dst = w->recvbuf + off * w->esize;
        p->post = 1;
    }
}

#endif
