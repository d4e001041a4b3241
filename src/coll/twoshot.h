/*
 * Two-shot AllReduce over the one-shot's connectors (one pair with every peer per channel):
 * a reduce-scatter by direct sends (rank q receives part q of every rank's input and folds
 * it), then an all-gather by direct sends (rank q sends the reduced part q to every rank).
 * Two hops of latency instead of the ring's 2(n - 1), the ring's traffic: each rank sends
 * 2(n - 1)/n x bytes. For mid sizes on machines where every GPU reaches every other at full
 * speed (NVSwitch), where the one-shot's (n - 1) x bytes cost too much and the ring's hops too.
 *
 * Per loop of up to n x chunk elements, cut into n equal parts (the last ones short or empty;
 * part q is rank q's), at rank me, peers taken from me + 1 on (every rank sends to rank
 * me + s while rank me - s sends to it, so no peer is everyone's first):
 *   steps 0 .. n-2        send own input's part of rank me+1+s (pre-multiplied) to it
 *   steps n-1 .. n-2+F    fold part me: F = ceil((n - 1) / 2) steps of two peers each (the
 *                         first also folds own input, pre-multiplied; then the partial result
 *                         in the output); the last applies the final op (integer Avg)
 *   next F steps          send the reduced part me to two peers at a time
 *   last n-1 steps        receive part me-1-s from rank me-1-s into the output
 * Folds and receives take the peers in the order they send to this rank (rank me-1 first).
 * Only rank q folds part q, so every rank gets the same bits whatever the order of folds.
 * In place is safe: the parts are sent before the output is written (by the same thread that
 * read the input), and the received parts land where this rank has sent from already.
 */
#ifndef BT_COLL_TWOSHOT_H
#define BT_COLL_TWOSHOT_H

#include "coll/work.h"

/* Fold (or all-gather send) steps per loop: two peers each. */
static inline BT_HD int bt_twoshot_pairs(int n)
{
    return n / 2; /* ceil((n - 1) / 2) */
}

static inline BT_HD uint64_t bt_twoshot_steps_per_loop(int n)
{
    return (uint64_t)(2 * (n - 1) + 2 * bt_twoshot_pairs(n));
}

static inline BT_HD size_t bt_twoshot_loop(const struct bt_work *w)
{
    return (size_t)w->nranks * w->chunk;
}

static inline BT_HD uint64_t bt_twoshot_allreduce_nsteps(const struct bt_work *w)
{
    return (uint64_t)bt_div_up(w->chan_count, bt_twoshot_loop(w)) *
           bt_twoshot_steps_per_loop(w->nranks);
}

/* Part q of a loop of `rem` elements: [*start, *start + returned). */
static inline BT_HD size_t bt_twoshot_part(int n, int q, size_t rem, size_t *start)
{
    size_t real = bt_div_up(rem, (size_t)n);
    *start = (size_t)q * real;
    return *start < rem ? bt_min_sz(real, rem - *start) : 0;
}

static inline BT_HD void bt_twoshot_allreduce_prim(const struct bt_work *w, uint64_t k,
                                                   struct bt_prim *p)
{
    int n = w->nranks, me = w->rank, pairs = bt_twoshot_pairs(n);
    uint64_t per = bt_twoshot_steps_per_loop(n);
    size_t l = (size_t)(k / per);
    int j = (int)(k % per);
    size_t off = w->chan_off + l * bt_twoshot_loop(w);
    size_t rem = bt_min_sz(bt_twoshot_loop(w), w->chan_off + w->chan_count - off);
    size_t start;
    bt_prim_clear(p);

    if (j < n - 1) { /* reduce-scatter: my input's part of rank me+1+j */
        int q = (me + 1 + j) % n;
        p->nelem = bt_twoshot_part(n, q, rem, &start);
        p->src = w->sendbuf + (off + start) * w->esize;
        p->pre_src = 1;
        p->nsend = 1;
        p->send[0] = w->peer_send[q];
        return;
    }
    j -= n - 1;
    size_t mine = bt_twoshot_part(n, me, rem, &start);
    char *part = w->recvbuf + (off + start) * w->esize;
    if (j < pairs) { /* fold peers me-2j-1, me-2j-2 into part me: rank me-1 sent first */
        p->nelem = mine;
        for (int s = 2 * j + 1; s <= 2 * j + 2 && s < n; s++)
            p->recv[p->nrecv++] = w->peer_recv[(me - s + n) % n];
        if (j == 0) {
            p->src = w->sendbuf + (off + start) * w->esize;
            p->pre_src = 1;
        } else {
            p->acc = part;
        }
        p->dst = part;
        p->post = j == pairs - 1;
        return;
    }
    j -= pairs;
    if (j < pairs) { /* all-gather: the reduced part me to peers 2j+1, 2j+2 */
        p->nelem = mine;
        p->src = part;
        for (int s = 2 * j + 1; s <= 2 * j + 2 && s < n; s++)
            p->send[p->nsend++] = w->peer_send[(me + s) % n];
        return;
    }
    j -= pairs; /* the part of rank me-1-j, from it: rank me-1 sent first */
    int q = (me - 1 - j + n) % n;
    p->nelem = bt_twoshot_part(n, q, rem, &start);
    p->nrecv = 1;
    p->recv[0] = w->peer_recv[q];
    p->dst = w->recvbuf + (off + start) * w->esize;
}

#endif
