/* The device API's window table (win_table.h). */
#include "core/win_table.h"

#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/window.h"
#include "exec/exec.h"
#include "nccl_device/layout.h"
#include "util/log.h"

#define ENTRIES 32

struct chunk {
    struct ncclDevCommWindowTable host; /* what the device copy holds */
    void *dev;
    struct chunk *next;
};

struct bt_win_table {
    const struct bt_exec_ops *ex; /* the executor whose kernels read it */
    struct chunk *head;
};

/* Entry `i` of chunk c (or, i < 0, its `next`) written to the device copy. */
static bt_status_t sync_entry(const struct bt_win_table *t, struct chunk *c, int i)
{
    if (i < 0)
        return t->ex->win_update(c->dev, offsetof(struct ncclDevCommWindowTable, next),
                                 &c->host.next, sizeof(c->host.next));
    return t->ex->win_update(c->dev,
                             offsetof(struct ncclDevCommWindowTable, entries) +
                                 (size_t)i * sizeof(c->host.entries[0]),
                             &c->host.entries[i], sizeof(c->host.entries[0]));
}

/* A free entry (a new chunk at the end when every one is taken). */
static bt_status_t free_entry(struct bt_comm *comm, struct bt_win_table *t, struct chunk **cp,
                              int *ip)
{
    struct chunk **pp = &t->head, *last = NULL;
    for (; *pp; last = *pp, pp = &(*pp)->next)
        for (int i = 0; i < ENTRIES; i++)
            if (!(*pp)->host.entries[i].window) {
                *cp = *pp;
                *ip = i;
                return BT_OK;
            }
    struct chunk *c = calloc(1, sizeof(*c));
    if (!c)
        return BT_ERR_SYSTEM;
    bt_status_t st = t->ex->win_publish(&comm->ec, &c->host, sizeof(c->host), &c->dev);
    if (st != BT_OK) {
        free(c);
        return st;
    }
    if (last) {
        last->host.next = c->dev;
        st = sync_entry(t, last, -1);
        if (st != BT_OK) {
            last->host.next = NULL;
            t->ex->win_unpublish(c->dev);
            free(c);
            return st;
        }
    }
    *pp = c;
    *cp = c;
    *ip = 0;
    return BT_OK;
}

static bt_status_t add(struct bt_comm *comm, struct bt_win_table *t, const struct bt_window *w)
{
    struct chunk *c;
    int i;
    BT_CHECK(free_entry(comm, t, &c, &i));
    c->host.entries[i].base = (uintptr_t)w->base;
    c->host.entries[i].size = w->size;
    c->host.entries[i].window = w->handle;
    bt_status_t st = sync_entry(t, c, i);
    if (st != BT_OK)
        memset(&c->host.entries[i], 0, sizeof(c->host.entries[i]));
    return st;
}

/* Whether kernels can address w: its handle is the executor's published copy. */
static int on_device(const struct bt_window *w)
{
    return w->handle && w->handle != &w->vid;
}

bt_status_t bt_win_table_get(struct bt_comm *comm, const struct bt_exec_ops *ex, void **dev)
{
    if (!comm->win_table) {
        if (!ex->win_publish || !ex->win_update || !ex->win_unpublish)
            return BT_ERR_INTERNAL; /* (a device communicator needs the CUDA executor) */
        struct bt_win_table *t = calloc(1, sizeof(*t));
        if (!t)
            return BT_ERR_SYSTEM;
        t->ex = ex;
        comm->win_table = t;
        struct chunk *c;
        int i;
        bt_status_t st = free_entry(comm, t, &c, &i); /* the first chunk, even if empty */
        for (const struct bt_window *w = comm->windows; w && st == BT_OK; w = w->next)
            if (on_device(w))
                st = add(comm, t, w);
        if (st != BT_OK) {
            bt_win_table_free(comm);
            return st;
        }
    }
    *dev = comm->win_table->head->dev;
    return BT_OK;
}

bt_status_t bt_win_table_add(struct bt_comm *comm, const struct bt_window *w)
{
    if (!comm->win_table || !on_device(w))
        return BT_OK;
    return add(comm, comm->win_table, w);
}

void bt_win_table_remove(struct bt_comm *comm, const struct bt_window *w)
{
    struct bt_win_table *t = comm->win_table;
    if (!t || !w->handle)
        return;
    for (struct chunk *c = t->head; c; c = c->next)
        for (int i = 0; i < ENTRIES; i++)
            if (c->host.entries[i].window == w->handle) {
                memset(&c->host.entries[i], 0, sizeof(c->host.entries[i]));
                if (sync_entry(t, c, i) != BT_OK)
                    BT_WARN("rank %d: window %p could not be taken out of the device API's "
                            "window table",
                            comm->rank, (void *)w->base);
                return;
            }
}

void bt_win_table_free(struct bt_comm *comm)
{
    struct bt_win_table *t = comm->win_table;
    if (!t)
        return;
    while (t->head) {
        struct chunk *c = t->head;
        t->head = c->next;
        t->ex->win_unpublish(c->dev);
        free(c);
    }
    free(t);
    comm->win_table = NULL;
}
