/* Memory windows (window.h). */
#include "core/window.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "device/device.h"
#include "exec/cuda/kargs.h"
#include "exec/host/window.h"
#include "util/hostmem.h"
#include "util/log.h"
#include "util/param.h"

#define WIN_SYMMETRIC 0x01 /* NCCL_WIN_COLL_SYMMETRIC */

/* What each rank tells the others at registration. */
struct win_info {
    int on_device; /* the buffer is device memory of the comm's GPU */
    int exported;  /* `exp` (GPU) or the host fields are valid */
    uint64_t size;
    struct bt_cuda_win_export exp;
    /* host memory: the buffer and the flags as this rank addresses them, and where a peer
     * process finds them (util/hostmem.h; fd -1: not shareable, same process only) */
    void *hbase, *hflags;
    int hfd, hflags_fd;
    uint64_t hoff, hlen, hflags_len;
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

static void unmap_host(struct bt_window *w)
{
    if (w->host_peers) {
        for (int r = 0; r < w->comm->nranks; r++) {
            bt_hostmem_unmap(w->host_peers[r].map, w->host_peers[r].map_len);
            bt_hostmem_unmap(w->host_peers[r].fmap, w->host_peers[r].fmap_len);
        }
        free(w->host_peers);
        w->host_peers = NULL;
    }
    if (w->host_flags)
        bt_hostmem_free(w->host_flags);
    w->host_flags = NULL;
}

/* Host memory: map every peer's window and flags; 1 when all are. */
static int map_all_host(struct bt_window *w, const struct win_info *all)
{
    struct bt_comm *comm = w->comm;
    w->host_peers = calloc((size_t)comm->nranks, sizeof(*w->host_peers));
    if (!w->host_peers)
        return 0;
    for (int r = 0; r < comm->nranks; r++) {
        struct bt_host_win_peer *p = &w->host_peers[r];
        const struct win_info *i = &all[r];
        if (r == comm->rank || same_process(comm, r)) {
            p->base = i->hbase;
            p->flags = i->hflags;
            continue;
        }
        if (i->hfd < 0 || i->hflags_fd < 0 ||
            bt_hostmem_map(comm->peers[r].pid, i->hfd, i->hlen, &p->map) != BT_OK)
            return 0;
        p->map_len = i->hlen;
        if (bt_hostmem_map(comm->peers[r].pid, i->hflags_fd, i->hflags_len, &p->fmap) != BT_OK)
            return 0;
        p->fmap_len = i->hflags_len;
        p->base = (char *)p->map + i->hoff;
        p->flags = p->fmap;
    }
    return 1;
}

/* Host memory: fill this rank's host fields; 0 when the window cannot be direct. */
static int export_host(struct bt_window *w, struct win_info *me)
{
    void *f = NULL;
    if (bt_hostmem_alloc(sizeof(struct bt_win_flags), &f) != BT_OK)
        return 0;
    w->host_flags = f;
    size_t off = 0, len = 0;
    me->hbase = w->base;
    me->hflags = f;
    me->hfd = -1;
    if (bt_hostmem_find(w->base, &me->hfd, &off, &len) && off + w->size > len)
        me->hfd = -1; /* reaches past its allocation: not shareable */
    me->hoff = off;
    me->hlen = len;
    size_t foff = 0;
    bt_hostmem_find(f, &me->hflags_fd, &foff, &len);
    me->hflags_len = len;
    return 1;
}

static void unmap(struct bt_window *w)
{
    unmap_host(w);
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
    int on_device = bt_device_ptr_is_device(buf);
    /* host memory: ranks of one process, or processes of one host and PID namespace (a
     * peer's memory is opened through /proc/<pid>/fd); not with SHM_DISABLE=1, which asks for no
     * shared memory between the ranks */
    int want_host = (flags & WIN_SYMMETRIC) && !on_device && !bt_param_shm_disable() &&
                    comm->nranks > 1 && comm->nranks <= BT_HOST_WIN_MAX_RANKS &&
                    comm->local_ranks == comm->nranks;
    for (int r = 0; r < comm->nranks && want_host; r++)
        want_host = comm->peers[r].pid_ns == comm->peers[comm->rank].pid_ns;
    if (want_host) {
        w->on_host = 1;
        me->exported = export_host(w, me);
        want = 1;
    } else if (want && on_device) {
        prev = bt_device_get();
        me->on_device = 1;
        if (bt_device_set(comm->cuda_dev) == BT_OK && bt_cuda_window_export(buf, &me->exp) == BT_OK)
            me->exported = 1;
        w->mine = me->exp;
    }
    BT_CHECK_GOTO(bt_bootstrap_allgather(comm->bs, all, sizeof(*all)), st, fail);
    int ok = want;
    for (int r = 0; r < comm->nranks && ok; r++)
        ok = w->on_host ? all[r].exported && !all[r].on_device : mappable(comm, all, r);
    ok = ok && (w->on_host ? map_all_host(w, all) : map_all(w, all));
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

int bt_window_pair(const struct bt_comm *comm, const void *send, const void *recv, size_t bytes,
                   int on_host, const struct bt_window **ws_p, const struct bt_window **wr_p)
{
    if (!comm->windows)
        return 0;
    const struct bt_window *ws = bt_window_find(comm, send, bytes);
    if (!ws || ws->on_host != on_host)
        return 0;
    const struct bt_window *wr = bt_window_find(comm, recv, bytes);
    if (!wr || wr->on_host != on_host)
        return 0;
    *ws_p = ws;
    *wr_p = wr;
    return 1;
}
