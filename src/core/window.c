/* Memory windows (window.h). */
#include "core/window.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "device/device.h"
#include "exec/cuda/kargs.h"
#include "util/log.h"

#define WIN_SYMMETRIC 0x01 /* NCCL_WIN_COLL_SYMMETRIC */

/* What each rank tells the others at registration. */
struct win_info {
    int on_device; /* the buffer is device memory of the comm's GPU */
    int exported;  /* `exp` is valid */
    uint64_t size;
    struct bt_cuda_win_export exp;
};

/* Whether rank r's window can be mapped here at all: GPU memory on this host, in this IPC
 * namespace (CUDA IPC handles open only there). */
static int mappable(const struct bt_comm *comm, const struct win_info *all, int r)
{
    const struct bt_peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[r];
    return all[r].on_device && all[r].exported && p->host_hash == me->host_hash &&
           p->shm_ns == me->shm_ns;
}

static int same_process(const struct bt_comm *comm, int r)
{
    const struct bt_peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[r];
    return p->pid == me->pid && p->pid_ns == me->pid_ns && p->host_hash == me->host_hash;
}

static void unmap(struct bt_window *w)
{
    if (!w->peers)
        return;
    for (int r = 0; r < w->comm->nranks; r++)
        if (r != w->comm->rank)
            bt_cuda_window_close(&w->peers[r]);
    free(w->peers);
    w->peers = NULL;
}

/* Map every peer's window; 1 when all are. */
static int map_all(struct bt_window *w, const struct win_info *all)
{
    struct bt_comm *comm = w->comm;
    w->peers = calloc((size_t)comm->nranks, sizeof(*w->peers));
    if (!w->peers)
        return 0;
    for (int r = 0; r < comm->nranks; r++) {
        if (r == comm->rank) {
            w->peers[r] = (struct bt_cuda_win_map){.base = w->base, .flags = w->mine.flags};
            continue;
        }
        if (bt_cuda_window_open(&all[r].exp, same_process(comm, r), &w->peers[r]) != BT_OK) {
            BT_INFO(BT_LOG_INIT, "rank %d: window %p: rank %d's window cannot be mapped here",
                    comm->rank, (void *)w->base, r);
            return 0;
        }
    }
    return 1;
}

bt_status_t bt_window_register(struct bt_comm *comm, void *buf, size_t size, int flags,
                               struct bt_window **win_p)
{
    *win_p = NULL;
    struct bt_window *w = calloc(1, sizeof(*w));
    struct win_info *all = calloc((size_t)comm->nranks, sizeof(*all));
    bt_status_t st = BT_OK;
    if (!w || !all) {
        BT_WARN("out of memory registering a window of %d ranks", comm->nranks);
        free(w);
        free(all);
        return BT_ERR_SYSTEM;
    }
    w->comm = comm;
    w->base = buf;
    w->size = size;
    w->flags = flags;
    struct win_info *me = &all[comm->rank];
    me->size = size;
    /* Only symmetric windows on a GPU communicator of one host may be read by peers. */
    int want = (flags & WIN_SYMMETRIC) && comm->cuda_dev >= 0 && comm->nranks > 1 &&
               comm->nranks <= BT_WIN_MAX_RANKS && comm->local_ranks == comm->nranks;
    int prev = -1;
    if (want && bt_device_ptr_is_device(buf)) {
        prev = bt_device_get();
        me->on_device = 1;
        if (bt_device_set(comm->cuda_dev) == BT_OK && bt_cuda_window_export(buf, &me->exp) == BT_OK)
            me->exported = 1;
        w->mine = me->exp;
    }
    BT_CHECK_GOTO(bt_bootstrap_allgather(comm->bs, all, sizeof(*all)), st, fail);
    int ok = want;
    for (int r = 0; r < comm->nranks && ok; r++)
        ok = mappable(comm, all, r);
    ok = ok && map_all(w, all);
    /* Direct only if every rank mapped every peer: all of them take the same path. */
    int *oks = calloc((size_t)comm->nranks, sizeof(int));
    if (!oks) {
        st = BT_ERR_SYSTEM;
        goto fail;
    }
    oks[comm->rank] = ok;
    st = bt_bootstrap_allgather(comm->bs, oks, sizeof(int));
    int direct = st == BT_OK;
    for (int r = 0; r < comm->nranks && direct; r++)
        direct = oks[r];
    free(oks);
    if (st != BT_OK)
        goto fail;
    w->direct = direct;
    if (!direct) {
        unmap(w);
        bt_cuda_window_unexport(&w->mine);
    }
    if (prev >= 0)
        (void)bt_device_set(prev);
    BT_INFO(BT_LOG_INIT, "rank %d: window %p + %zu registered%s", comm->rank, buf, size,
            direct ? ": every rank's mapped, AllReduce reads the peers' inputs directly"
            : want ? ": not every rank's window could be mapped, collectives run as usual"
                   : "");
    free(all);
    w->next = comm->windows;
    comm->windows = w;
    *win_p = w;
    return BT_OK;

fail:
    unmap(w);
    bt_cuda_window_unexport(&w->mine);
    if (prev >= 0)
        (void)bt_device_set(prev);
    free(all);
    free(w);
    return st;
}

static void window_free(struct bt_window *w)
{
    unmap(w);
    bt_cuda_window_unexport(&w->mine);
    free(w);
}

bt_status_t bt_window_deregister(struct bt_comm *comm, struct bt_window *win)
{
    struct bt_window **pp = &comm->windows;
    while (*pp && *pp != win)
        pp = &(*pp)->next;
    if (!*pp) {
        BT_WARN("ncclCommWindowDeregister: window %p is not registered with comm %p (another "
                "comm's, or deregistered already)",
                (void *)win, (void *)comm);
        return BT_ERR_INVALID_ARG;
    }
    *pp = win->next;
    /* Its kernels (and the peers' that wrote this rank's flags before they ended) are done
     * once this comm's are. */
    if (win->direct)
        bt_cuda_comm_sync(comm->cuda);
    window_free(win);
    return BT_OK;
}

void bt_window_free_all(struct bt_comm *comm)
{
    while (comm->windows) {
        struct bt_window *w = comm->windows;
        comm->windows = w->next;
        window_free(w);
    }
}

const struct bt_window *bt_window_find(const struct bt_comm *comm, const void *p, size_t bytes)
{
    const char *c = p;
    for (const struct bt_window *w = comm->windows; w; w = w->next)
        if (w->direct && c >= w->base && bytes <= w->size &&
            (size_t)(c - w->base) <= w->size - bytes)
            return w;
    return NULL;
}
