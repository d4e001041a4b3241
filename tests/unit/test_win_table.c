/*
 * The device API's window table (core/win_table.h) over an executor whose "device" copies are
 * host memory: made with the windows a communicator has, chained past 32 entries, kept as
 * windows come and go, and walked as NCCL's ncclFindWindow walks it (every entry of a chunk,
 * then `next`): every window found by an address inside it, a removed one no more, a freed
 * entry reused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/win_table.h"
#include "core/window.h"
#include "exec/exec.h"
#include "harness.h"
#include "nccl_device/layout.h"

static int live; /* published copies not yet given back */

static bt_status_t publish(const struct bt_exec_comm *ec, const void *src, size_t bytes,
                           void **handle)
{
    (void)ec;
    *handle = malloc(bytes);
    if (!*handle)
        return BT_ERR_SYSTEM;
    memcpy(*handle, src, bytes);
    live++;
    return BT_OK;
}

static bt_status_t update(void *handle, size_t off, const void *src, size_t bytes)
{
    memcpy((char *)handle + off, src, bytes);
    return BT_OK;
}

static void unpublish(void *handle)
{
    free(handle);
    live--;
}

/* What ncclFindWindow gives for p, reading the published copies only. */
static void *find(void *head, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (const struct ncclDevCommWindowTable *t = head; t; t = t->next)
        for (int i = 0; i < 32; i++)
            if (t->entries[i].window && a - t->entries[i].base < t->entries[i].size)
                return t->entries[i].window;
    return NULL;
}

#define NWIN 70 /* three chunks */

int main(void)
{
    struct bt_exec_ops ex;
    memset(&ex, 0, sizeof(ex));
    ex.win_publish = publish;
    ex.win_update = update;
    ex.win_unpublish = unpublish;
    struct bt_comm *comm = calloc(1, sizeof(*comm));
    static struct bt_window w[NWIN];
    static char mem[NWIN][4096];
    int handles[NWIN]; /* what each window's handle points at: any distinct address */
    for (int i = 0; i < NWIN; i++) {
        w[i].comm = comm;
        w[i].base = mem[i];
        w[i].size = sizeof(mem[i]) - 8 * (size_t)i;
        w[i].handle = &handles[i];
    }
    /* two windows before the table: it starts with them; a host window (its handle is its
     * own struct: nothing a kernel can read) is left out */
    w[0].next = &w[1];
    comm->windows = &w[0];
    struct bt_window host_win = w[2];
    host_win.handle = &host_win.vid;
    w[1].next = &host_win;
    void *head = NULL;
    BT_TEST_OK(bt_win_table_get(comm, &ex, &head));
    BT_TEST_CHECK(head && live == 1, "the first chunk: %p, %d copies", head, live);
    BT_TEST_CHECK(find(head, mem[0] + 5) == &handles[0] && find(head, mem[1]) == &handles[1] &&
                      find(head, mem[2]) == NULL,
                  "the windows registered before the table");
    void *again = NULL;
    BT_TEST_OK(bt_win_table_get(comm, &ex, &again));
    BT_TEST_CHECK(again == head && live == 1, "a second get made another table");
    for (int i = 2; i < NWIN; i++)
        BT_TEST_OK(bt_win_table_add(comm, &w[i]));
    BT_TEST_CHECK(live == 3, "%d windows in %d chunks, not 3", NWIN, live);
    for (int i = 0; i < NWIN; i++) {
        BT_TEST_CHECK(find(head, mem[i]) == &handles[i], "window %d's first byte", i);
        BT_TEST_CHECK(find(head, mem[i] + w[i].size - 1) == &handles[i], "window %d's last", i);
        if (w[i].size < sizeof(mem[i])) /* the bytes after it are in no window */
            BT_TEST_CHECK(find(head, mem[i] + w[i].size) == NULL, "past window %d's end", i);
    }
    /* removed: not found; its entry taken by the next window added */
    bt_win_table_remove(comm, &w[40]);
    bt_win_table_remove(comm, &w[5]);
    BT_TEST_CHECK(find(head, mem[40]) == NULL && find(head, mem[5]) == NULL,
                  "removed windows found");
    static char extra_mem[64];
    struct bt_window extra = w[0];
    extra.base = extra_mem;
    extra.size = sizeof(extra_mem);
    int extra_handle;
    extra.handle = &extra_handle;
    BT_TEST_OK(bt_win_table_add(comm, &extra));
    BT_TEST_CHECK(live == 3 && find(head, extra_mem + 63) == &extra_handle,
                  "a freed entry not reused (%d chunks)", live);
    const struct ncclDevCommWindowTable *t0 = head;
    BT_TEST_CHECK(t0->entries[5].window == (void *)&extra_handle,
                  "the first free entry (window 5's) not taken");
    bt_win_table_free(comm);
    BT_TEST_CHECK(live == 0 && comm->win_table == NULL, "%d copies left after free", live);
    free(comm);
    printf("test_win_table: %d windows in 3 chunks found, removed, an entry reused: ok\n", NWIN);
    return 0;
}
