/* Memory windows (window.h). */
#include "core/window.h"

#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/devcomm_abi.h"
#include "core/rma.h"
#include "core/win_table.h"
#include "device/device.h"
#include "util/array.h"
#include "util/log.h"

/* What each rank tells the others at registration. */
struct win_info {
    int on_device; /* the buffer is device memory: the CUDA executor's */
    int exported;  /* the executor exported it: blob is valid */
    uint64_t size;
    _Alignas(16) unsigned char blob[BT_WIN_BLOB_BYTES];
};

/* Every registered window of every communicator, for bt_window_of (handles carry no comm). */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bt_ptrs handles;

static bt_status_t handle_add(struct bt_window *w)
{
    pthread_mutex_lock(&handles_lock);
    int rc = bt_ptrs_add(&handles, w);
    pthread_mutex_unlock(&handles_lock);
    return rc == 0 ? BT_OK : BT_ERR_SYSTEM;
}

static void handle_remove(struct bt_window *w)
{
    pthread_mutex_lock(&handles_lock);
    bt_ptrs_remove(&handles, w);
    pthread_mutex_unlock(&handles_lock);
}

struct bt_window *bt_window_of(const void *handle)
{
    struct bt_window *w = NULL;
    pthread_mutex_lock(&handles_lock);
    for (int i = 0; i < handles.n && !w; i++)
        if (((struct bt_window *)handles.p[i])->handle == handle)
            w = handles.p[i];
    pthread_mutex_unlock(&handles_lock);
    return w;
}

/* The handle kernels read: every release's window (2.28's fields, then 2.30.7's GIN
 * segments: one, the whole window, which ginMultiSegmentWins points at in the copy). */
static bt_status_t publish_device(struct bt_window *w)
{
    struct bt_devapi_window dw;
    memset(&dw, 0, sizeof(dw));
    dw.v228 = w->vid;
    dw.numSegments = 1;
    memcpy(dw.segment.ginWins, w->vid.ginWins, sizeof(dw.segment.ginWins));
    dw.segment.segmentSize = w->size;
    dw.segment.memType = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
    BT_CHECK(w->ex->win_publish(&w->comm->ec, &dw, sizeof(dw), &w->handle));
    dw.ginMultiSegmentWins =
        (struct bt_devapi_segment_window *)((char *)w->handle +
                                            offsetof(struct bt_devapi_window, segment));
    bt_status_t st =
        w->ex->win_update(w->handle, offsetof(struct bt_devapi_window, ginMultiSegmentWins),
                          &dw.ginMultiSegmentWins, sizeof(dw.ginMultiSegmentWins));
    if (st != BT_OK) {
        w->ex->win_unpublish(w->handle);
        w->handle = &w->vid;
    }
    return st;
}

/* The window as the device API reads it (ncclWindow_vidmem), published where the
 * executor's kernels read it. Not flat-mapped: the LSA base is this rank's own window and
 * the stride 0 (only the own part has an address through it). */
static bt_status_t publish(struct bt_window *w)
{
    struct bt_comm *comm = w->comm;
    int base, size;
    bt_comm_lsa(comm, &base, &size);
    memset(&w->vid, 0, sizeof(w->vid));
    w->vid.winHost = w;
    w->vid.lsaRank = comm->rank - base;
    w->vid.worldRank = comm->rank;
    /* the GIN handle: the registration's number + 1, the same on every rank (GIN's proxy
     * resolves it, bt_window_gin_find) */
    w->vid.ginWins[0] = (ncclGinWindow_t)(uintptr_t)(w->id + 1);
    if (w->lsa_mapped && w->mine.flat) { /* the flat range holds every rank's place */
        w->vid.lsaFlatBase = w->mine.flat + (uint64_t)base * w->mine.stride;
        w->vid.stride4G = (uint32_t)(w->mine.stride >> 32);
    } else {
        w->vid.lsaFlatBase = w->base;
        w->vid.lsaRank = 0; /* lsaFlatBase + lsaRank * stride is the own part all the same */
    }
    w->handle = &w->vid;
    if (w->ex->win_publish)
        BT_CHECK(publish_device(w));
    bt_status_t st = handle_add(w);
    if (st == BT_OK)
        st = bt_win_table_add(comm, w);
    if (st != BT_OK) {
        handle_remove(w);
        if (w->handle != &w->vid)
            w->ex->win_unpublish(w->handle);
        w->handle = NULL;
    }
    return st;
}

static void unpublish(struct bt_window *w)
{
    if (!w->handle)
        return;
    bt_win_table_remove(w->comm, w);
    handle_remove(w);
    if (w->handle != &w->vid)
        w->ex->win_unpublish(w->handle);
    w->handle = NULL;
}

static int same_process(const struct bt_comm *comm, int r)
{
    const struct bt_peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[r];
    return p->pid == me->pid && p->pid_ns == me->pid_ns && p->host_hash == me->host_hash;
}

static void unmap(struct bt_window *w)
{
    if (w->peers) {
        for (int r = 0; r < w->comm->nranks; r++)
            if (r != w->comm->rank)
                w->ex->win_close(&w->peers[r]);
        free(w->peers);
        w->peers = NULL;
    }
    if (w->mine.flags)
        w->ex->win_unexport(&w->mine);
}

/* Map the windows of ranks first .. first + n - 1 (every rank, or this rank's LSA team); 1
 * when all are (each exported one of this executor's). */
static int map_ranks(struct bt_window *w, const struct win_info *all, int on_device, int first,
                     int n)
{
    struct bt_comm *comm = w->comm;
    w->peers = calloc((size_t)comm->nranks, sizeof(*w->peers));
    if (!w->peers)
        return 0;
    for (int r = first; r < first + n; r++)
        if (!all[r].exported || all[r].on_device != on_device)
            return 0;
    for (int r = first; r < first + n; r++) {
        if (r == comm->rank) {
            w->peers[r] = w->mine; /* its own: nothing opened */
            continue;
        }
        if (w->ex->win_open(&comm->ec, r, same_process(comm, r), &w->mine, all[r].blob,
                            &w->peers[r]) != BT_OK) {
            BT_INFO(BT_LOG_INIT, "rank %d: window %p: rank %d's window cannot be mapped here",
                    comm->rank, (void *)w->base, r);
            return 0;
        }
    }
    return 1;
}

/* Whether every rank says yes: all of them take the same path. */
static bt_status_t all_agree(struct bt_comm *comm, int mine, int *all_p)
{
    int *oks = calloc((size_t)comm->nranks, sizeof(int));
    if (!oks)
        return BT_ERR_SYSTEM;
    oks[comm->rank] = mine;
    bt_status_t st = bt_bootstrap_allgather(comm->bs, oks, sizeof(int));
    int all = st == BT_OK;
    for (int r = 0; r < comm->nranks && all; r++)
        all = oks[r];
    free(oks);
    *all_p = all;
    return st;
}

/* Where comm's list holds win, or NULL (WARNed, naming fn) when it does not. */
static struct bt_window **list_slot(struct bt_comm *comm, const struct bt_window *win,
                                    const char *fn)
{
    struct bt_window **pp = &comm->windows;
    while (*pp && *pp != win)
        pp = &(*pp)->next;
    if (*pp)
        return pp;
    BT_WARN("%s: window %p is not registered with comm %p (another comm's, or deregistered "
            "already)",
            fn, (const void *)win, (void *)comm);
    return NULL;
}

bt_status_t bt_window_register_plain(struct bt_comm *comm, void *buf, size_t size, int flags,
                                     struct bt_window **win_p)
{
    *win_p = NULL;
    struct bt_window *w = calloc(1, sizeof(*w));
    struct win_info *all = calloc((size_t)comm->nranks, sizeof(*all));
    bt_status_t st = BT_OK;
    if (w)
        w->peer_size = calloc((size_t)comm->nranks, sizeof(uint64_t));
    if (!w || !all || !w->peer_size) {
        BT_WARN("out of memory registering a window of %d ranks", comm->nranks);
        if (w)
            free(w->peer_size);
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
    /* Only symmetric windows of ranks on one host may be read by peers; the executor of the
     * buffer's memory decides whether it can export it (its own limits: ranks, SHM_DISABLE). */
    me->on_device = bt_device_ptr_is_device(buf);
    w->ex = bt_exec_of(me->on_device ? BT_EXEC_CUDA : BT_EXEC_HOST);
    /* Every rank on this host: all map each other (the window AllReduce may read them). Ranks
     * across hosts: device memory is mapped within each LSA team (the device API's
     * ncclGetLsaPointer), host memory not at all. */
    int lsa_base, lsa_size;
    bt_comm_lsa(comm, &lsa_base, &lsa_size);
    int all_local = comm->local_ranks == comm->nranks;
    int want = (flags & BT_WIN_SYMMETRIC) && comm->nranks > 1 &&
               (all_local || (me->on_device && lsa_size > 1));
    if (want && w->ex->win_export)
        me->exported = w->ex->win_export(&comm->ec, buf, size, &w->mine, me->blob);
    BT_CHECK_GOTO(bt_bootstrap_allgather(comm->bs, all, sizeof(*all)), st, fail);
    for (int r = 0; r < comm->nranks; r++)
        w->peer_size[r] = all[r].size;
    /* (every rank on this host: the LSA team is every rank) */
    int ok = me->exported && map_ranks(w, all, me->on_device, lsa_base, lsa_size);
    /* On the list before the last exchange: once any rank has returned, every rank has it
     * listed, so a put that follows at once finds it (core/rma.c's landing). */
    pthread_mutex_lock(&comm->win_lock);
    w->id = comm->win_seq++;
    w->next = comm->windows;
    comm->windows = w;
    pthread_mutex_unlock(&comm->win_lock);
    st = all_agree(comm, ok, &w->lsa_mapped);
    w->mapped = w->lsa_mapped && all_local;
    if (st != BT_OK) {
        pthread_mutex_lock(&comm->win_lock);
        *list_slot(comm, w, "ncclCommWindowRegister") = w->next;
        pthread_mutex_unlock(&comm->win_lock);
        goto fail;
    }
    if (!w->lsa_mapped)
        unmap(w);
    st = publish(w);
    if (st != BT_OK) {
        pthread_mutex_lock(&comm->win_lock);
        *list_slot(comm, w, "ncclCommWindowRegister") = w->next;
        pthread_mutex_unlock(&comm->win_lock);
        goto fail;
    }
    BT_INFO(BT_LOG_INIT, "rank %d: window %p + %zu registered%s", comm->rank, buf, size,
            w->mapped       ? ": every rank's mapped, AllReduce reads the peers' inputs directly"
            : w->lsa_mapped ? ": the LSA team's mapped (the device API's peers)"
            : want          ? ": not every rank's window could be mapped, collectives run as usual"
                            : "");
    free(all);
    *win_p = w;
    return BT_OK;

fail:
    unmap(w);
    free(all);
    free(w->peer_size);
    free(w);
    return st;
}

bt_status_t bt_window_register(struct bt_comm *comm, void *buf, size_t size, int flags,
                               struct bt_window **win_p)
{
    BT_CHECK(bt_window_register_plain(comm, buf, size, flags, win_p));
    bt_status_t st = bt_rma_window_added(comm, *win_p);
    if (st != BT_OK) {
        bt_window_deregister(comm, *win_p);
        *win_p = NULL;
    }
    return st;
}

int bt_window_gin_find(struct bt_comm *comm, uint64_t handle, char **base, size_t *bytes)
{
    pthread_mutex_lock(&comm->win_lock);
    struct bt_window *w = comm->windows;
    while (w && (uint64_t)w->id + 1 != handle)
        w = w->next;
    if (w) {
        *base = w->base;
        *bytes = w->size;
    }
    pthread_mutex_unlock(&comm->win_lock);
    return w != NULL;
}

bt_status_t bt_window_check(struct bt_comm *comm, const struct bt_window *win, const char *fn)
{
    return list_slot(comm, win, fn) ? BT_OK : BT_ERR_INVALID_ARG;
}

bt_status_t bt_window_deregister(struct bt_comm *comm, struct bt_window *win)
{
    pthread_mutex_lock(&comm->win_lock);
    struct bt_window **pp = list_slot(comm, win, "ncclCommWindowDeregister");
    if (pp)
        *pp = win->next;
    pthread_mutex_unlock(&comm->win_lock);
    if (!pp)
        return BT_ERR_INVALID_ARG;
    /* Its kernels (and the peers' that wrote this rank's flags before they ended) are done
     * once this comm's are. */
    void *state = comm->exec[win->ex == &bt_exec_cuda ? BT_EXEC_CUDA : BT_EXEC_HOST];
    if (win->lsa_mapped && win->ex->sync && state)
        win->ex->sync(state);
    unpublish(win);
    unmap(win);
    free(win->peer_size);
    free(win);
    return BT_OK;
}

void bt_window_free_all(struct bt_comm *comm)
{
    bt_rma_free(comm); /* the signal board: the comm's own window */
    while (comm->windows) {
        struct bt_window *w = comm->windows;
        comm->windows = w->next;
        unpublish(w);
        unmap(w);
        free(w->peer_size);
        free(w);
    }
    bt_win_table_free(comm);
}

/* The mapped window of executor ex holding [p, p + bytes), or NULL. */
static const struct bt_window *find(const struct bt_comm *comm, const void *p, size_t bytes,
                                    const struct bt_exec_ops *ex)
{
    const char *c = p;
    for (const struct bt_window *w = comm->windows; w; w = w->next)
        if (w->mapped && w->ex == ex && c >= w->base && bytes <= w->size &&
            (size_t)(c - w->base) <= w->size - bytes)
            return w;
    return NULL;
}

int bt_window_pair(const struct bt_comm *comm, const void *send, const void *recv, size_t bytes,
                   const struct bt_exec_ops *ex, struct bt_win_pair *wp)
{
    if (!comm->windows)
        return 0;
    const struct bt_window *ws = find(comm, send, bytes, ex);
    const struct bt_window *wr = ws ? find(comm, recv, bytes, ex) : NULL;
    if (!wr)
        return 0;
    wp->src = ws->peers;
    wp->dst = wr->peers;
    wp->soff = (size_t)((const char *)send - ws->base);
    wp->roff = (size_t)((const char *)recv - wr->base);
    return 1;
}
