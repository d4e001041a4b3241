/*
 * Tree AllReduce over one binary tree per channel (channels alternate between the two
 * trees of the double binary tree). One step per chunk; the up and down halves run as
 * two works on two lanes so a node can pass results down while it still sends partial
 * sums up (sequential halves would deadlock once the FIFOs fill).
 *
 *   up   (phase 0): leaf   : own input -> parent
 *                   inner  : recv children, reduce with own input -> parent
 *                   root   : recv children, reduce with own input, final op -> output, children
 *   down (phase 1): inner  : recv parent -> output, children
 *                   leaf   : recv parent -> output
 * Latency: 2 log2(n) hops; traffic per rank about 2x bytes (x1 at the leaves).
 */
#ifndef BT_COLL_TREE_H
#define BT_COLL_TREE_H

#include "coll/work.h"

static inline BT_HD uint64_t bt_tree_allreduce_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w);
}

/* `down` selects the phase-1 schedule: at the root every step is empty (its up half does the
 * whole work), for an executor whose one down work stands for channels where this rank is
 * the root of some (the CUDA kernel's: the channels take the two trees in turn). */
static inline BT_HD void bt_tree_allreduce_prim(const struct bt_work *w, int down, uint64_t k,
                                                struct bt_prim *p)
{
    const struct bt_tree *t = &w->chan->tree;
    size_t off = w->chan_off + (size_t)k * w->chunk;
    bt_prim_clear(p);
    if (down && t->up < 0)
        return;
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    if (!down) {
        for (int c = 0; c < t->ndown; c++)
            p->recv[p->nrecv++] = &w->chan->tree_down_recv[c];
        p->src = w->sendbuf + off * w->esize;
        p->pre_src = 1;
        if (t->up >= 0) {
            p->send[p->nsend++] = &w->chan->tree_up_send;
        } else {
            p->post = 1;
            p->dst = w->recvbuf + off * w->esize;
            for (int c = 0; c < t->ndown; c++)
                p->send[p->nsend++] = &w->chan->tree_down_send[c];
        }
    } else {
        p->recv[p->nrecv++] = &w->chan->tree_up_recv;
        p->dst = w->recvbuf + off * w->esize;
        for (int c = 0; c < t->ndown; c++)
            p->send[p->nsend++] = &w->chan->tree_down_send[c];
    }
}

#endif
