/* Windows on host memory (win_map.h). */
#include "exec/host/win_map.h"

#include <string.h>

#include "exec/host/win_allreduce.h"
#include "util/hostmem.h"
#include "util/param.h"

/* What a rank tells its peers of its host window. */
struct host_win_blob {
    void *base, *flags; /* as the exporting rank addresses them */
    int fd, flags_fd;   /* their memfds in the exporting process; fd -1: not shareable */
    uint64_t off, len, flags_len;
};
_Static_assert(sizeof(struct host_win_blob) <= BT_WIN_BLOB_BYTES, "host window blob too large");

int bt_host_win_export(const struct bt_exec_comm *ec, void *buf, size_t size,
                       struct bt_win_map *mine, void *blob)
{
    /* not with SHM_DISABLE=1, which asks for no shared memory between the ranks; the window
     * AllReduce folds up to BT_HOST_WIN_MAX_RANKS inputs at once */
    if (bt_param_shm_disable() || ec->nranks > BT_HOST_WIN_MAX_RANKS)
        return 0;
    void *f = NULL;
    if (bt_hostmem_alloc(sizeof(struct bt_win_flags), &f) != BT_OK)
        return 0;
    memset(mine, 0, sizeof(*mine));
    mine->base = buf;
    mine->flags = f;
    struct host_win_blob *b = blob;
    size_t off = 0, len = 0, foff = 0, flen = 0;
    b->base = buf;
    b->flags = f;
    b->fd = -1;
    if (bt_hostmem_find(buf, &b->fd, &off, &len) && off + size > len)
        b->fd = -1; /* reaches past its allocation: not shareable */
    b->off = off;
    b->len = len;
    bt_hostmem_find(f, &b->flags_fd, &foff, &flen);
    b->flags_len = flen;
    return 1;
}

bt_status_t bt_host_win_open(const struct bt_exec_comm *ec, int peer, int same_process,
                             const struct bt_win_map *mine, const void *blob,
                             struct bt_win_map *map)
{
    (void)mine; /* host windows map peer by peer */
    const struct host_win_blob *b = blob;
    const struct bt_peer_info *me = &ec->tctx->peers[ec->rank], *p = &ec->tctx->peers[peer];
    memset(map, 0, sizeof(*map));
    if (same_process) {
        map->base = b->base;
        map->flags = b->flags;
        return BT_OK;
    }
    /* a peer process's memory is opened through /proc/<pid>/fd: its pid must mean it here */
    if (b->fd < 0 || b->flags_fd < 0 || p->pid_ns != me->pid_ns)
        return BT_ERR_INVALID_USAGE;
    BT_CHECK(bt_hostmem_map(p->pid, b->fd, b->len, &map->opened[0]));
    map->len[0] = b->len;
    bt_status_t st = bt_hostmem_map(p->pid, b->flags_fd, b->flags_len, &map->opened[1]);
    if (st != BT_OK) {
        bt_host_win_close(map);
        return st;
    }
    map->len[1] = b->flags_len;
    map->base = (char *)map->opened[0] + b->off;
    map->flags = map->opened[1];
    return BT_OK;
}

void bt_host_win_close(struct bt_win_map *map)
{
    bt_hostmem_unmap(map->opened[0], map->len[0]);
    bt_hostmem_unmap(map->opened[1], map->len[1]);
    memset(map, 0, sizeof(*map));
}

void bt_host_win_unexport(struct bt_win_map *mine)
{
    if (mine->flags)
        bt_hostmem_free(mine->flags);
    memset(mine, 0, sizeof(*mine));
}
