/*
 * A work's steps per connector: its schedule walked once, on the host, as an executor will
 * run it. Connectors a proxy moves (transport.h: bt_conn_proxied) must be told how many
 * steps each work moves through them before the work runs; the host launch
 * (exec/host/proxied.c) and the CUDA executor's connectors through the network
 * (exec/cuda/host_conns.c) both count them here.
 */
#ifndef BT_COLL_STEPS_H
#define BT_COLL_STEPS_H

#include "coll/work.h"
#include "util/status.h"

struct bt_zc_step;

/* One connector's share of a work. */
struct bt_conn_steps {
    struct bt_conn *conn;
    uint64_t nsteps;
    /* With `zc` asked and the work zero-copy: per step of this connector, the user's output a
     * pure receive step lands in (malloc'ed, nsteps entries, entries NULL for other steps),
     * or NULL when it has none. The caller owns it. */
    struct bt_zc_step *zc;
};

/* Distinct connectors a work walks: a ring's or tree's few, PAT's two per round (coll/pat.h:
 * 62 at 2^31 ranks). */
#define BT_WORK_MAX_CONNS (2 * BT_PRIM_MAX_PEERS + 64)

/*
 * Walk work w's steps and count, for each distinct connector want(c) selects, how many steps
 * it moves; t[] gets one entry per such connector (*nt_p of them, at most max). *other_p
 * (may be NULL) is set to 1 when some step uses a connector want() did not select. On
 * failure (more connectors than max, out of memory) the zc arrays made so far are freed.
 */
bt_status_t bt_work_conn_steps(const struct bt_work *w, int (*want)(const struct bt_conn *c),
                               int zc, struct bt_conn_steps *t, int max, int *nt_p, int *other_p);

#endif
