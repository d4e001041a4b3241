/*
 * Memory windows (ncclCommWindowRegister): a buffer every rank registers together. Where the
 * registration asks for symmetric use (NCCL_WIN_COLL_SYMMETRIC) and every rank is on this host,
 * each rank exports its window through the executor of its memory (exec/exec.h's win_*: GPU
 * memory the CUDA executor's, host memory the host executor's) and maps every peer's; when
 * every rank mapped every peer's (an allgather of the outcomes: all or nothing), the window is
 * mapped, and an AllReduce whose input and output lie in mapped windows may read the peers'
 * inputs straight from their memory (the executor's window operation decides, by the tuner's
 * bt_tune_window). Where the ranks span hosts, GPU windows are mapped the same way within each
 * LSA team (the ranks of a host, core/comm.h's bt_comm_lsa), for the device API's peers.
 * Anywhere else a window is registered and accepted, and collectives on it run as on any
 * buffer.
 *
 * The handle the user gets (ncclWindow_t) is the window as NCCL's device API reads it: a
 * struct ncclWindow_vidmem (include/nccl_device/layout.h) in memory the window's executor's
 * kernels read (the CUDA executor's copy in device memory), whose winHost is the bt_window;
 * bt_window_of finds the window of a handle.
 */
#ifndef BT_CORE_WINDOW_H
#define BT_CORE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "exec/exec.h"
#include "nccl_device/layout.h"
#include "util/status.h"

struct bt_comm;

#define BT_WIN_SYMMETRIC 0x01 /* NCCL_WIN_COLL_SYMMETRIC: peers may read the window */

struct bt_window {
    struct ncclWindow_vidmem vid; /* what its handle holds (NCCL's layout) */
    void *handle;                 /* ncclWindow_t: vid, or the executor's copy of it */
    struct bt_comm *comm;
    char *base;
    size_t size;
    int flags;                    /* NCCL_WIN_* */
    const struct bt_exec_ops *ex; /* the executor of its memory */
    int mapped;                   /* every rank's window is mapped here (peers) */
    int lsa_mapped;               /* this rank's LSA team's are (all ranks': also mapped) */
    struct bt_win_map mine;       /* this rank's export (its flags), while mapped */
    struct bt_win_map *peers;     /* [nranks] when mapped (own: mine's) */
    uint64_t *peer_size;          /* [nranks]: each rank's registered size */
    uint32_t id;                  /* its registration's number (the same on every rank) */
    struct bt_window *next;       /* the comm's list */
};

/* Collective: every rank of `comm` registers its own buffer (its own size); the first window
 * that maps also brings the one-sided calls' signal board (core/rma.h). */
bt_status_t bt_window_register(struct bt_comm *comm, void *buf, size_t size, int flags,
                               struct bt_window **win_p);
/* The same without the signal board (the board's own registration). */
bt_status_t bt_window_register_plain(struct bt_comm *comm, void *buf, size_t size, int flags,
                                     struct bt_window **win_p);

/* Local: waits for the comm's work on the window's executor, unmaps the peers' windows and
 * frees this rank's flags. A window of another comm, or one deregistered already:
 * BT_ERR_INVALID_ARG. */
bt_status_t bt_window_deregister(struct bt_comm *comm, struct bt_window *win);

/* The window of GIN handle `handle` (its ncclWindow_vidmem.ginWins[0]: the registration's
 * number + 1): its base and bytes; 0 if none. Any thread. */
int bt_window_gin_find(struct bt_comm *comm, uint64_t handle, char **base, size_t *bytes);

/* The registered window whose handle (ncclWindow_t) is `handle`, or NULL. Thread-safe. */
struct bt_window *bt_window_of(const void *handle);

/* BT_OK when win is one of comm's registered windows; else BT_ERR_INVALID_ARG, WARNed
 * naming fn. caller: the comm's owner. */
bt_status_t bt_window_check(struct bt_comm *comm, const struct bt_window *win, const char *fn);

/* Every window still registered (bt_comm_free, after the executors' work). */
void bt_window_free_all(struct bt_comm *comm);

/* Whether an AllReduce's input and output ([send|recv, + bytes)) both lie in mapped windows of
 * executor `ex`'s memory: the window AllReduce's condition; *wp then says where every rank's
 * are. */
int bt_window_pair(const struct bt_comm *comm, const void *send, const void *recv, size_t bytes,
                   const struct bt_exec_ops *ex, struct bt_win_pair *wp);

#endif
