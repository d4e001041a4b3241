/*
 * What one kernel launch of the CUDA executor carries, by value in the kernel's parameter
 * space (up to 32 KB on Volta and later with CUDA 12.1+): the works to run and where to
 * report. Shared by the host side (enqueue.c, C) and the kernels (device/kernels.cuh, C++).
 */
#ifndef BT_EXEC_CUDA_KARGS_H
#define BT_EXEC_CUDA_KARGS_H

#include <stdint.h>

#include "coll/window.h"
#include "coll/work.h"
#include "exec/report.h"

#define BT_CUDA_MAX_WORKS 128 /* per launch (31 KB of parameters); more: several launches */
#define BT_CUDA_THREADS 512   /* per block: one block per channel (or per p2p lane) */

/* The one-shot AllReduce with LL or LL128 lines runs each chunk in one pass, in a kernel of
 * its own (device/kernels.cuh: bt_cuda_direct_kernel), up to this many ranks and channels;
 * beyond them it steps through its schedule in the general kernel, as every other work. */
#define BT_CUDA_ONEPASS_MAX_RANKS 16
#define BT_CUDA_ONEPASS_MAX_WORKS 32
static inline BT_HD int bt_cuda_onepass(const struct bt_work *w)
{
    return w->algo == BT_ALGO_DIRECT && w->coll == BT_COLL_ALLREDUCE &&
           w->nranks <= BT_CUDA_ONEPASS_MAX_RANKS &&
           (w->proto == BT_PROTO_LL || w->proto == BT_PROTO_LL128);
}

struct bt_cuda_khdr {
    int nworks;
    volatile int *abort_flag;      /* host-mapped: ncclCommAbort sets it */
    struct bt_exec_report *report; /* host-mapped */
    uint64_t timeout_ns;           /* 0: none */
    uint64_t hang_ns;              /* a wait this long is reported once (0: never) */
    /* A kernel that times out tells every peer at once, so that a peer's block that had not
     * even started when the wait began (the GPU full, its SMs held by other work) fails at
     * its first wait instead of waiting TIMEOUT again: each rank has a word in its FIFO
     * memory that peers set to their rank + 1 (exec/cuda/fifos.c). NULL through the network. */
    volatile uint32_t *failed;   /* this rank's word: read by every wait's stall check */
    uint32_t *const *fail_words; /* [nranks]: every rank's word as addressed here */
    int rank, nranks;
};

/* What the host fills; the kernel gets the header and the first nworks entries. */
struct bt_cuda_kargs {
    struct bt_cuda_khdr h;
    uint16_t block[BT_CUDA_MAX_WORKS]; /* the block that runs works[i]; in order per block */
    struct bt_work works[BT_CUDA_MAX_WORKS];
};

/* A kernel's parameters may take 32764 bytes (Volta and later, CUDA 12.1+): a field added to
 * struct bt_work costs BT_CUDA_MAX_WORKS times its size here. */
#define BT_CUDA_PARAM_LIMIT 32764
#ifdef __cplusplus
static_assert(sizeof(struct bt_cuda_kargs) <= BT_CUDA_PARAM_LIMIT, "kernel parameters too large");
#else
_Static_assert(sizeof(struct bt_cuda_kargs) <= BT_CUDA_PARAM_LIMIT, "kernel parameters too large");
#endif

/* The window AllReduce (kernel_window.cu): every rank's input and output lie in registered
 * windows every rank has mapped, so rank r reduces part r of the elements straight from the
 * ranks' inputs and writes it into every rank's output (a two-shot without FIFOs). Entry and
 * exit barriers per block, through flags in each rank's window state: flags[block][rank]
 * (written by the peers) and the block's own count of collectives run. */
struct bt_cuda_wargs {
    struct bt_cuda_khdr h;
    const char *src[BT_WIN_MAX_RANKS];            /* rank r's input, as this rank addresses it */
    char *dst[BT_WIN_MAX_RANKS];                  /* rank r's output, likewise */
    struct bt_win_flags *flags[BT_WIN_MAX_RANKS]; /* rank r's flags, as addressed here */
    size_t count;                                 /* elements */
    struct bt_redop redop;
    int nranks, rank;
    uint64_t seq; /* the collective's number, for reports */
};

#ifdef __cplusplus
extern "C" {
#endif
/* Launch the window AllReduce for `a->redop.dtype` with `nblocks` blocks (<=
 * BT_WIN_MAX_BLOCKS); the CUDA error code of the launch. done_event: as below. */
int bt_cuda_window_kernel_launch(const struct bt_cuda_wargs *a, int nblocks, void *stream,
                                 void *done_event);
/* Launch the kernel for the works' dtype (all works of a launch share it) with `nblocks`
 * blocks on `stream` (cudaStream_t); returns the CUDA error code (0 = cudaSuccess).
 * done_event (a cudaEvent_t, or NULL; sm_90+): the launch records it, triggered when every
 * block has ended (device/launch.cuh). */
int bt_cuda_kernel_launch(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                          void *done_event);
#ifdef __cplusplus
}
#endif

#endif
