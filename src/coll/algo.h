/*
 * Dispatch from a work to its schedule. Tree works carry the phase in `algo`:
 * BT_ALGO_TREE for the up half (the whole work at the root), BT_ALGO_TREE_DOWN for the
 * down half.
 */
#ifndef BT_COLL_ALGO_H
#define BT_COLL_ALGO_H

#include "coll/direct.h"
#include "coll/p2p.h"
#include "coll/pat.h"
#include "coll/ring.h"
#include "coll/tree.h"
#include "coll/twoshot.h"
#include "coll/work.h"

static inline BT_HD uint64_t bt_algo_nsteps(const struct bt_work *w)
{
    switch (w->coll) {
    case BT_COLL_ALLREDUCE:
        return w->algo == BT_ALGO_RING      ? bt_ring_allreduce_nsteps(w)
               : w->algo == BT_ALGO_DIRECT  ? bt_direct_allreduce_nsteps(w)
               : w->algo == BT_ALGO_TWOSHOT ? bt_twoshot_allreduce_nsteps(w)
                                            : bt_tree_allreduce_nsteps(w);
    case BT_COLL_ALLGATHER:
        return w->algo == BT_ALGO_PAT ? bt_pat_nsteps(w) : bt_ring_allgather_nsteps(w);
    case BT_COLL_REDUCESCATTER:
        return w->algo == BT_ALGO_PAT ? bt_pat_nsteps(w) : bt_ring_reducescatter_nsteps(w);
    case BT_COLL_BROADCAST:
        return bt_ring_broadcast_nsteps(w);
    case BT_COLL_REDUCE:
        return bt_ring_reduce_nsteps(w);
    default:
        return bt_p2p_nsteps(w);
    }
}

/* Turn a copy of a work that stands for several channels (nchans > 1, work.h) into channel
 * i's work: its share of the elements, its channel, connectors and scratch, its steps. */
static inline BT_HD void bt_work_channel(struct bt_work *w, uint32_t i)
{
    size_t share = w->chan_count;
    w->chan_off += (size_t)i * share;
    w->chan_count = w->chan_off < w->count ? bt_min_sz(share, w->count - w->chan_off) : 0;
    w->chan += i;
    if (w->peer_send) {
        w->peer_send += (size_t)i * (size_t)w->nranks;
        w->peer_recv += (size_t)i * (size_t)w->nranks;
    }
    if (w->scratch)
        w->scratch += (size_t)i * w->scratch_stride;
    w->nchans = 1;
    w->nsteps = bt_algo_nsteps(w);
}

static inline BT_HD void bt_algo_prim(const struct bt_work *w, uint64_t k, struct bt_prim *p)
{
    switch (w->coll) {
    case BT_COLL_ALLREDUCE:
        if (w->algo == BT_ALGO_RING)
            bt_ring_allreduce_prim(w, k, p);
        else if (w->algo == BT_ALGO_DIRECT)
            bt_direct_allreduce_prim(w, k, p);
        else if (w->algo == BT_ALGO_TWOSHOT)
            bt_twoshot_allreduce_prim(w, k, p);
        else
            bt_tree_allreduce_prim(w, w->algo == BT_ALGO_TREE_DOWN, k, p);
        return;
    case BT_COLL_ALLGATHER:
        if (w->algo == BT_ALGO_PAT)
            bt_pat_allgather_prim(w, k, p);
        else
            bt_ring_allgather_prim(w, k, p);
        return;
    case BT_COLL_REDUCESCATTER:
        if (w->algo == BT_ALGO_PAT)
            bt_pat_reducescatter_prim(w, k, p);
        else
            bt_ring_reducescatter_prim(w, k, p);
        return;
    case BT_COLL_BROADCAST:
        bt_ring_broadcast_prim(w, k, p);
        return;
    case BT_COLL_REDUCE:
        bt_ring_reduce_prim(w, k, p);
        return;
    default:
        bt_p2p_prim(w, k, p);
        return;
    }
}

#endif
