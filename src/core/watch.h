/*
 * The watcher (core/watch.c): a thread, while GPU communicators exist, that prints what their
 * kernels report (exec/cuda's host-mapped report): a wait past HANG_REPORT (with the ranks
 * that have not arrived at the collective) and the error that ended a kernel; also a GPU
 * setup that waits past HANG_REPORT. setup: before the comm's GPU setup (its first GPU
 * operation; `seq` the collective it runs for, 0 for a send/recv); setup_done: after it
 * (success or not); remove: after its kernels finished, before its CUDA state is freed.
 */
#ifndef BT_CORE_WATCH_H
#define BT_CORE_WATCH_H

#include <stdint.h>

struct bt_comm;

void bt_watch_setup(struct bt_comm *comm, uint64_t seq);
void bt_watch_setup_done(struct bt_comm *comm);
void bt_watch_remove(struct bt_comm *comm);

#endif
