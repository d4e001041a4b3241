/*
 * Processes of this host: whether one has ended.
 */
#ifndef BT_UTIL_PROC_H
#define BT_UTIL_PROC_H

#include <sys/types.h>

/* Whether process `pid` (of this PID namespace) has ended: it is no more, or it is a zombie
 * (ended, not yet reaped by its parent: it still answers kill(pid, 0), its sockets closed
 * already; a launcher that polls its workers, as torchrun's agent does, may leave it so for
 * seconds). A kill(pid, 0), then a read of /proc/PID/stat where the process is there. */
int bt_pid_ended(pid_t pid);

#endif
