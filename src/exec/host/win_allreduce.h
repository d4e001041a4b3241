/*
 * The window AllReduce on host memory (coll/window.h's layout): a work of three steps, each
 * tried by the executor like any primitive, so one thread can drive every rank:
 *   0  arrive: tell every peer (its flag of this rank: 2e - 1, e = this collective's count)
 *   1  once every peer has arrived: reduce part r of the elements from every rank's input
 *      (in rank order) into this rank's output, copy it into every peer's output, tell
 *      every peer (2e)
 *   2  once every peer is done: count e; every part of this rank's output is written and no
 *      peer reads its input any more.
 */
#ifndef BT_EXEC_HOST_WIN_ALLREDUCE_H
#define BT_EXEC_HOST_WIN_ALLREDUCE_H

#include "coll/window.h"
#include "coll/work.h"

#define BT_HOST_WIN_MAX_RANKS 8 /* bt_host_reduce folds up to 8 sources at once */
#define BT_HOST_WIN_STEPS 3

/* What a window work reads and writes, as this rank addresses it (in its `scratch`). */
struct bt_host_win_args {
    int n, rank;
    const char *src[BT_HOST_WIN_MAX_RANKS];
    char *dst[BT_HOST_WIN_MAX_RANKS];
    struct bt_win_flags *flags[BT_HOST_WIN_MAX_RANKS];
    uint64_t epoch; /* set by step 0 */
};

/* Run step w->step of a window work if it can run now; 1 if it ran. */
int bt_host_window_step(const struct bt_work *w);

/* The peers the work's current step waits for, into peers[] (at most n - 1); their count. */
int bt_host_window_waiting(const struct bt_work *w, int *peers);

#endif
