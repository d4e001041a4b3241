#include "coll/steps.h"

#include <stdlib.h>

#include "coll/algo.h"
#include "transport/transport.h"

bt_status_t bt_work_conn_steps(const struct bt_work *w, int (*want)(const struct bt_conn *c),
                               int zc, struct bt_conn_steps *t, int max, int *nt_p, int *other_p)
{
    int nt = 0;
    bt_status_t st = BT_OK;
    for (uint64_t k = 0; k < w->nsteps && st == BT_OK; k++) {
        struct bt_prim p;
        bt_algo_prim(w, k, &p);
        struct bt_conn *cs[2 * BT_PRIM_MAX_PEERS];
        int nc = 0;
        for (int j = 0; j < p.nrecv; j++)
            cs[nc++] = p.recv[j];
        for (int j = 0; j < p.nsend; j++)
            cs[nc++] = p.send[j];
        for (int j = 0; j < nc; j++) {
            if (!want(cs[j])) {
                if (other_p)
                    *other_p = 1;
                continue;
            }
            int e = 0;
            while (e < nt && t[e].conn != cs[j])
                e++;
            if (e == nt) {
                if (nt == max) {
                    st = BT_ERR_INTERNAL;
                    break;
                }
                t[nt++] = (struct bt_conn_steps){cs[j], 0, NULL};
            }
            if (zc && w->zero_copy && !cs[j]->is_send && cs[j]->zero_copy &&
                bt_prim_pure_recv(w, &p)) {
                if (!t[e].zc && !(t[e].zc = calloc(w->nsteps, sizeof(*t[e].zc)))) {
                    st = BT_ERR_SYSTEM;
                    break;
                }
                t[e].zc[t[e].nsteps] = (struct bt_zc_step){p.dst, p.nelem * w->esize};
            }
            t[e].nsteps++;
        }
    }
    if (st != BT_OK) {
        for (int e = 0; e < nt; e++)
            free(t[e].zc);
        nt = 0;
    }
    *nt_p = nt;
    return st;
}
