/*
 * Handing a file descriptor to other processes of this host: an abstract-namespace Unix
 * socket whose thread sends the descriptor (SCM_RIGHTS) to each process of the same user
 * that connects. CUDA VMM memory travels this way (a POSIX file descriptor is its shareable
 * handle): /proc/<pid>/fd/<n> reopens a file by its path, which for the driver's descriptor
 * is not the same object, and pidfd_getfd needs ptrace rights that Yama denies between
 * sibling processes (torchrun's ranks).
 */
#ifndef BT_UTIL_FDPASS_H
#define BT_UTIL_FDPASS_H

#include "util/status.h"

#define BT_FD_NAME_BYTES 48 /* a server's name, NUL included */

struct bt_fd_server;

/* Serve `fd` (the caller keeps it open until bt_fd_serve_stop returns) to `count`
 * connections, in a thread; *name gets the name to give bt_fd_fetch. */
bt_status_t bt_fd_serve(int fd, int count, char name[BT_FD_NAME_BYTES], struct bt_fd_server **out);

/* Stop serving (the thread ends, whether or not every connection came) and free. */
void bt_fd_serve_stop(struct bt_fd_server *s);

/* The descriptor server `name` hands out, within timeout_ms; the caller closes it. */
bt_status_t bt_fd_fetch(const char *name, int timeout_ms, int *fd_out);

#endif
