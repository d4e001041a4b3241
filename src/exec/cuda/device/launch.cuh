/*
 * How the library's kernels are launched, and how each begins: a launch may record the
 * communicator's order event itself (exec/cuda/enqueue.c, order_streams): CUDA's programmatic
 * event, triggered once every block of the kernel has ended (no block triggers it earlier),
 * in the same call as the launch instead of a cudaEventRecord after it. A kernel queued on
 * another stream behind such an event may be started as soon as it triggers, so every kernel
 * opens with order_wait: on sm_90 and later it waits there until the kernels it depends on
 * that way have ended and their writes are visible to it (griddepcontrol.wait; without such a
 * dependency it returns at once).
 */
#ifndef BT_EXEC_CUDA_DEVICE_LAUNCH_CUH
#define BT_EXEC_CUDA_DEVICE_LAUNCH_CUH

#include <cuda_runtime.h>
#include <utility>

#include "exec/cuda/kargs.h"

static __device__ __forceinline__ void order_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Launch `kernel` over nblocks blocks of BT_CUDA_THREADS on `stream`; done_event (a
 * cudaEvent_t, or NULL): recorded by the launch, triggered when every block has ended. */
template <typename... P, typename... A>
static void bt_launch(void (*kernel)(P...), int nblocks, cudaStream_t stream, void *done_event,
                      A &&...args)
{
    if (!done_event) {
        kernel<<<nblocks, BT_CUDA_THREADS, 0, stream>>>(std::forward<A>(args)...);
        return;
    }
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticEvent;
    at[0].val.programmaticEvent.event = (cudaEvent_t)done_event;
    at[0].val.programmaticEvent.flags = 0;
    at[0].val.programmaticEvent.triggerAtBlockStart = 0;
    cfg.gridDim = dim3((unsigned)nblocks);
    cfg.blockDim = dim3(BT_CUDA_THREADS);
    cfg.stream = stream;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}

#endif
