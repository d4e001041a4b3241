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
    int min_nchannels; /* MIN_NCHANNELS, rank 0's */
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

#endif
