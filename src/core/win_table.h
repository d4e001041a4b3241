/*
 * The device API's window table (ncclDevComm.windowTable): the windows of a communicator that
 * kernels can reach, by address, so that NCCL's inline ncclFindWindow turns a pointer into its
 * window. Tables of 32 entries {base, size, window handle} chained by `next`
 * (include/nccl_device/layout.h), in memory the communicator's kernels read (the executor's
 * published copies), made at the communicator's first device communicator with the windows
 * it has then, and kept as windows come and go.
 *
 * Called by the communicator's owner (its registrations and device communicators are never
 * concurrent); the device copy changes between kernels that use those windows.
 */
#ifndef BT_CORE_WIN_TABLE_H
#define BT_CORE_WIN_TABLE_H

#include "util/status.h"

struct bt_comm;
struct bt_exec_ops;
struct bt_window;

/* The table's first chunk as kernels address it, made at the first call in memory executor
 * `ex` publishes (its win_publish / win_update / win_unpublish: the CUDA executor's). */
bt_status_t bt_win_table_get(struct bt_comm *comm, const struct bt_exec_ops *ex, void **dev);

/* A window published to the device was registered / is being deregistered: its entry, if
 * the comm has a table. */
bt_status_t bt_win_table_add(struct bt_comm *comm, const struct bt_window *w);
void bt_win_table_remove(struct bt_comm *comm, const struct bt_window *w);

/* At the comm's end. */
void bt_win_table_free(struct bt_comm *comm);

#endif
