/* The window AllReduce on host memory (win_allreduce.h). */
#include "exec/host/win_allreduce.h"

#include "exec/host/reduce.h"

static void tell(struct bt_host_win_args *a, uint64_t v)
{
    for (int r = 0; r < a->n; r++)
        if (r != a->rank) /* release: what this rank wrote before is seen first */
            __atomic_store_n(&a->flags[r]->flag[0][a->rank], v, __ATOMIC_RELEASE);
}

static int reached(const struct bt_host_win_args *a, int r, uint64_t v)
{
    return __atomic_load_n(&a->flags[a->rank]->flag[0][r], __ATOMIC_ACQUIRE) >= v;
}

int bt_host_window_waiting(const struct bt_work *w, int *peers)
{
    const struct bt_host_win_args *a = (const struct bt_host_win_args *)w->scratch;
    if (w->step == 0 || w->step >= BT_HOST_WIN_STEPS)
        return 0;
    uint64_t v = 2 * a->epoch - (w->step == 1);
    int k = 0;
    for (int r = 0; r < a->n; r++)
        if (r != a->rank && !reached(a, r, v))
            peers[k++] = r;
    return k;
}

int bt_host_window_step(const struct bt_work *w)
{
    struct bt_host_win_args *a = (struct bt_host_win_args *)w->scratch;
    int peers[BT_HOST_WIN_MAX_RANKS];
    if (w->step == 0) {
        a->epoch = a->flags[a->rank]->count[0] + 1;
        tell(a, 2 * a->epoch - 1);
        return 1;
    }
    if (bt_host_window_waiting(w, peers) > 0)
        return 0;
    if (w->step == 2) {
        a->flags[a->rank]->count[0] = a->epoch;
        return 1;
    }
    /* step 1: part `rank` of the elements */
    size_t per = bt_div_up(w->count, (size_t)a->n), lo = per * (size_t)a->rank;
    size_t hi = lo + per < w->count ? lo + per : w->count;
    if (hi > lo) {
        size_t off = lo * w->esize, bytes = (hi - lo) * w->esize;
        const void *srcs[BT_HOST_WIN_MAX_RANKS];
        for (int r = 0; r < a->n; r++)
            srcs[r] = a->src[r] + off;
        /* into this rank's output first (it may be this rank's input: the fold allows it),
         * then a copy into every peer's: rank r's part `rank` is read by this rank only */
        char *mine = a->dst[a->rank] + off;
        bt_host_reduce(&w->redop, mine, srcs, a->n, (1u << a->n) - 1, 1, hi - lo);
        for (int r = 0; r < a->n; r++)
            if (r != a->rank)
                bt_host_copy(a->dst[r] + off, mine, bytes);
    }
    tell(a, 2 * a->epoch);
    return 1;
}
