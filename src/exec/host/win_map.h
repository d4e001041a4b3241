/*
 * Windows on host memory (exec/exec.h's win_* of the host executor; core/window.c registers
 * them collectively): every rank's window and barrier flags as this rank addresses them. A
 * peer of this process is reached through its own pointers; a peer process through the memfd
 * its ncclMemAlloc made (util/hostmem.h), mapped from /proc/<pid>/fd/<fd>, which needs the
 * same host and PID namespace. Other host buffers stay private: their windows are registered
 * but not mapped.
 */
#ifndef BT_EXEC_HOST_WIN_MAP_H
#define BT_EXEC_HOST_WIN_MAP_H

#include "exec/exec.h"

int bt_host_win_export(const struct bt_exec_comm *ec, void *buf, size_t size,
                       struct bt_win_map *mine, void *blob);
bt_status_t bt_host_win_open(const struct bt_exec_comm *ec, int peer, int same_process,
                             const struct bt_win_map *mine, const void *blob,
                             struct bt_win_map *map);
void bt_host_win_close(struct bt_win_map *map);
void bt_host_win_unexport(struct bt_win_map *mine);

#endif
