/*
 * Send and Recv: the message is cut into slot-sized steps through the peer's connector.
 */
#ifndef BT_COLL_P2P_H
#define BT_COLL_P2P_H

#include "coll/work.h"

static inline BT_HD uint64_t bt_p2p_nsteps(const struct bt_work *w)
{
    return bt_work_nloops(w);
}

static inline BT_HD void bt_p2p_prim(const struct bt_work *w, uint64_t k, struct bt_prim *p)
{
    size_t off = w->chan_off + (size_t)k * w->chunk;
    bt_prim_clear(p);
    p->nelem = bt_min_sz(w->chunk, w->chan_off + w->chan_count - off);
    if (w->coll == BT_COLL_SEND) {
        p->src = w->sendbuf + off * w->esize;
        p->nsend = 1;
        p->send[0] = w->p2p_conn;
    } else {
        p->dst = w->recvbuf + off * w->esize;
        p->nrecv = 1;
        p->recv[0] = w->p2p_conn;
    }
}

#endif
