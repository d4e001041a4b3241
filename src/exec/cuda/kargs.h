/*
 * What one kernel launch of the CUDA executor carries, by value in the kernel's parameter
 * space (up to 32 KB on Volta and later with CUDA 12.1+): the works to run and where to
 * report. Shared by the host side (launch.c, C) and the kernel (kernel.cu, C++).
 */
#ifndef BT_EXEC_CUDA_KARGS_H
#define BT_EXEC_CUDA_KARGS_H

#include <stdint.h>

#include "coll/work.h"

#define BT_CUDA_MAX_WORKS 128 /* per launch (27 KB of parameters); more: several launches */
#define BT_CUDA_THREADS 512   /* per block: one block per channel (or per p2p lane) */

/* Kernel errors, written to the host-mapped error word (first one wins). */
enum bt_cuda_kerr {
    BT_CUDA_KERR_NONE = 0,
    BT_CUDA_KERR_ABORT = 1,   /* the communicator's abort flag was raised */
    BT_CUDA_KERR_TIMEOUT = 2, /* a wait saw no progress for TIMEOUT seconds */
};

struct bt_cuda_khdr {
    int nworks;
    volatile int *abort_flag; /* host-mapped: ncclCommAbort sets it */
    int *error;               /* host-mapped: enum bt_cuda_kerr, plus details below */
    int *error_info;          /* [0] peer, [1] work index, [2] 1 = waiting to send */
    uint64_t timeout_ns;      /* 0: none */
};

/* What the host fills; the kernel gets the header and the first nworks entries. */
struct bt_cuda_kargs {
    struct bt_cuda_khdr h;
    uint16_t block[BT_CUDA_MAX_WORKS]; /* the block that runs works[i]; in order per block */
    struct bt_work works[BT_CUDA_MAX_WORKS];
};

#ifdef __cplusplus
extern "C" {
#endif
/* Launch the kernel for the works' dtype (all works of a launch share it) with `nblocks`
 * blocks on `stream` (cudaStream_t); returns the CUDA error code (0 = cudaSuccess). */
int bt_cuda_kernel_launch(const struct bt_cuda_kargs *args, int nblocks, void *stream);
#ifdef __cplusplus
}
#endif

#endif
