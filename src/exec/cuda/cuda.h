/*
 * The CUDA executor, as the launch (core/launch_gpu.c) sees it. A GPU communicator's CUDA
 * state (struct bt_cuda_comm, exec/cuda/cuda_comm.h) is made at its first GPU operation:
 * connectors between the ranks' GPUs (exec/cuda/p2p.c, or through the host's network
 * connectors: exec/cuda/host_conns.c) and the host-mapped words its kernels report through.
 * A launch is a struct bt_cuda_kargs of planned works (core/plan.h), queued as one kernel on
 * the caller's stream. Without CUDA (no nvcc at build time) exec/nocuda provides these
 * functions: nothing is ever created.
 */
#ifndef BT_EXEC_CUDA_CUDA_H
#define BT_EXEC_CUDA_CUDA_H

#include <stddef.h>

#include "exec/cuda/kargs.h"
#include "util/status.h"

struct bt_channel;
struct bt_cuda_comm;
struct bt_transport_ctx;

/* What a GPU communicator's setup is given: the communicator as its connectors see it, and
 * what the host side has decided already. */
struct bt_cuda_setup {
    struct bt_transport_ctx *ctx;   /* ranks, bootstrap, abort flag; the setup sets the proxy's
                                       CPUs and the NIC from the topology */
    int dev;                        /* the CUDA device (current while the setup runs) */
    int shm_all;                    /* every peer reachable through host shared memory */
    const struct bt_channel *rings; /* the communicator's host channels: their ring order */
    int nrings;
    int min_nchannels; /* MIN_NCHANNELS (or config.minCTAs, the larger), rank 0's */
    int max_nchannels; /* config.maxCTAs: at most this many blocks per collective */
    size_t host_slot;  /* Simple slot of the communicator's host connectors */
};

/* Make the CUDA state (collective: every rank calls it at its first GPU operation, with the
 * device current). */
bt_status_t bt_cuda_comm_create(const struct bt_cuda_setup *s, struct bt_cuda_comm **cc_p);

/* Wait for the communicator's kernels (they use the FIFOs); then it may be freed. */
void bt_cuda_comm_sync(struct bt_cuda_comm *cc);
/* Free the CUDA state, after bt_cuda_comm_sync. Accepts NULL. */
void bt_cuda_comm_free(struct bt_cuda_comm *cc);

/* The first error a kernel of the communicator reported (abort, timeout), or BT_OK. NULL ok. */
bt_status_t bt_cuda_comm_error(const struct bt_cuda_comm *cc);

/* Raise the kernels' abort flag: a kernel waiting on a peer ends with an error. NULL ok. */
void bt_cuda_comm_abort(struct bt_cuda_comm *cc);

/* A launch: empty, then a work for `block` (and the blocks after it, for a work standing for
 * several channels), then queued on `stream` (cudaStream_t) after the communicator's kernels
 * before it, whatever their streams. A full one (BT_CUDA_MAX_WORKS) must be launched before
 * more are added. */
void bt_cuda_kargs_init(struct bt_cuda_kargs *a, const struct bt_cuda_comm *cc);
struct bt_work *bt_cuda_kargs_add(struct bt_cuda_kargs *a, int block);
bt_status_t bt_cuda_kargs_launch(struct bt_cuda_comm *cc, const struct bt_cuda_kargs *a,
                                 void *stream);

/* ---- windows (exec/cuda/window.c; core/window.c registers them) ---- */

/* What a rank tells its peers of its window. */
struct bt_cuda_win_export {
    void *base;                 /* the window, in the exporter's address space */
    struct bt_win_flags *flags; /* its barrier flags (device memory it allocated) */
    int dev;
    uint64_t data_off;              /* the window's offset in its allocation */
    unsigned char data_handle[64];  /* cudaIpcMemHandle_t of that allocation */
    unsigned char flags_handle[64]; /* ... and of the flags */
};

/* A peer's window as this rank addresses it. */
struct bt_cuda_win_map {
    char *base;
    struct bt_win_flags *flags;
    void *opened_data, *opened_flags; /* cudaIpcOpenMemHandle's mappings, or NULL */
};

/* Export the window at `buf` (device memory of the current device): allocates its zeroed
 * flags. unexport frees them (after the window's kernels are done). */
bt_status_t bt_cuda_window_export(void *buf, struct bt_cuda_win_export *out);
void bt_cuda_window_unexport(struct bt_cuda_win_export *mine);

/* Map a peer's export (same_process: its pointers are ours) / unmap it. */
bt_status_t bt_cuda_window_open(const struct bt_cuda_win_export *peer, int same_process,
                                struct bt_cuda_win_map *map);
void bt_cuda_window_close(struct bt_cuda_win_map *map);

/* Queue a window AllReduce (a's h is filled here) on `stream`, in the communicator's kernel
 * order. */
bt_status_t bt_cuda_window_launch(struct bt_cuda_comm *cc, struct bt_cuda_wargs *a, int nblocks,
                                  void *stream);

#endif
