/*
 * One-shot ("direct") AllReduce for small messages on one host: every rank sends its
 * input to every other rank, then folds all n contributions itself. One hop of latency
 * instead of the ring's 2(n-1); traffic (n-1) x bytes per rank, so only for small sizes.
 *
 * Per loop of one chunk:
 *   steps 0..n-2    : send own chunk (pre-multiplied) to rank me+1+s
 *   steps n-1..2n-2 : fold contribution k = 0..n-1, in rank order, so every rank rounds
 *                     the same way and all results are identical:
 *                       k < me : scratch = fold(scratch, recv from k)   (first: = recv)
 *                       k = me : dst = fold(scratch, own input)          (own input read
 *                                before dst is written: in-place is safe)
 *                       k > me : dst = fold(dst, recv from k)
 *                     the last fold applies the final op (integer Avg).
 */
#ifndef BT_COLL_DIRECT_H
#define BT_COLL_DIRECT_H

#include "coll/work.h"

static inline BT_HD uint64_t bt_direct_allreduce_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w) * (uint64_t)(2 * w->nranks - 1);
}

static inline BT_HD void bt_direct_allreduce_prim(const struct bt_work *w, uint64_t k,
                                                  struct bt_prim *p)
{
    int n = w->nranks, me = w->rank;
    int per = 2 * n - 1;
    size_t l = (size_t)(k / (uint64_t)per);
    int j = (int)(k % (uint64_t)per);
    size_t off = w->chan_off + l * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    const char *src = w->sendbuf + off * w->esize;
    char *dst = w->recvbuf + off * w->esize;

    if (j < n - 1) {
        p->src = src;
        p->pre_src = 1;
        p->nsend = 1;
        p->send[0] = w->peer_send[(me + 1 + j) % n];
        return;
    }
    int r = j - (n - 1); /* the contribution folded now */
    p->post = r == n - 1;
    if (r < me) {
        p->nrecv = 1;
        p->recv[0] = w->peer_recv[r];
        if (r > 0)
            p->acc = w->scratch;
        p->dst = w->scratch;
    } else if (r == me) {
        if (me > 0)
            p->acc = w->scratch;
        p->src = src;
        p->pre_src = 1;
        p->dst = dst;
    } else {
        p->nrecv = 1;
        p->recv[0] = w->peer_recv[r];
        p->acc = dst;
        p->dst = dst;
    }
}

#endif
