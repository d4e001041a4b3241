/*
 * Memory windows (ncclCommWindowRegister): a buffer every rank registers together. Where
 * every rank's window is GPU memory on one host and the registration asked for symmetric use
 * (NCCL_WIN_COLL_SYMMETRIC), every rank maps every peer's window and its barrier flags
 * (exec/cuda/window.c) and an AllReduce whose input lies in the window runs the window
 * kernel: each rank reads the peers' inputs straight from their memory (launch_gpu.c decides
 * where, tune/tuner.h's bt_tune_window). On host memory likewise where every rank can map
 * every peer's window: ranks of one process, or processes of one host whose windows are
 * ncclMemAlloc's shareable memory (util/hostmem.h); the host executor then runs the same
 * AllReduce (exec/host/window.h). Anywhere else a window is registered and accepted, and
 * collectives on it run as on any buffer.
 */
#ifndef BT_CORE_WINDOW_H
#define BT_CORE_WINDOW_H

#include <stddef.h>

#include "exec/cuda/cuda.h"
#include "util/status.h"

struct bt_comm;

struct bt_window {
    struct bt_comm *comm;
    char *base;
    size_t size;
    int flags;   /* NCCL_WIN_* */
    int direct;  /* every rank's window is mapped here: the window kernel may read it */
    int on_host; /* host memory (direct: host_peers), else GPU memory (direct: peers) */
    struct bt_cuda_win_export mine;
    struct bt_cuda_win_map *peers; /* [nranks] when direct (own: mine) */
    struct bt_host_win_peer {
        char *base;
        struct bt_win_flags *flags;
        void *map, *fmap; /* this rank's mappings of the peer's memory (or NULL) */
        size_t map_len, fmap_len;
    } * host_peers;                  /* [nranks] when direct on host memory */
    struct bt_win_flags *host_flags; /* this rank's, shareable (util/hostmem.h) */
    struct bt_window *next;          /* the comm's list */
};

/* Collective: every rank of `comm` registers its own buffer (its own size). */
bt_status_t bt_window_register(struct bt_comm *comm, void *buf, size_t size, int flags,
                               struct bt_window **win_p);

/* Local: waits for the comm's kernels, unmaps the peers' windows and frees this rank's
 * flags. A window of another comm, or one deregistered already: BT_ERR_INVALID_ARG. */
bt_status_t bt_window_deregister(struct bt_comm *comm, struct bt_window *win);

/* Every window still registered (bt_comm_free, after the kernels). */
void bt_window_free_all(struct bt_comm *comm);

/* The direct window holding [p, p + bytes), or NULL. */
const struct bt_window *bt_window_find(const struct bt_comm *comm, const void *p, size_t bytes);

/* Whether an AllReduce's input and output ([send|recv, + bytes)) both lie in direct windows
 * of one kind (on_host: host memory, else GPU memory): the window AllReduce's condition; the
 * windows in *ws_p, *wr_p. */
int bt_window_pair(const struct bt_comm *comm, const void *send, const void *recv, size_t bytes,
                   int on_host, const struct bt_window **ws_p, const struct bt_window **wr_p);

#endif
