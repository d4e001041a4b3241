#include "gpu_spin.h"

#include <cuda_runtime.h>
#include <stdint.h>

static volatile int *spin_stop_h, *spin_running_h;
static cudaStream_t spin_stream;

static __device__ uint64_t spin_clock(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __global__ void spin_kernel(volatile int *stop, volatile int *running, uint64_t max_ns)
{
    extern __shared__ char fill[]; /* the SM's shared memory: nothing else fits beside */
    if (threadIdx.x == 0) {
        fill[0] = 1;
        atomicAdd((int *)running, 1);
        uint64_t t0 = spin_clock();
        while (!*stop && spin_clock() - t0 < max_ns)
            ;
    }
    __syncthreads();
}

int bt_test_spin_start(int free_sms, double max_s)
{
    int dev = 0, sms = 0, smem = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return -1;
    int hold = sms - free_sms;
    if (hold < 1)
        return -1;
    if (cudaHostAlloc((void **)&spin_stop_h, 2 * sizeof(int), cudaHostAllocMapped) != cudaSuccess)
        return -1;
    spin_running_h = spin_stop_h + 1;
    spin_stop_h[0] = spin_stop_h[1] = 0;
    int *stop_d, *running_d;
    cudaHostGetDevicePointer((void **)&stop_d, (void *)spin_stop_h, 0);
    running_d = stop_d + 1;
    if (cudaFuncSetAttribute(spin_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
            cudaSuccess ||
        cudaStreamCreateWithFlags(&spin_stream, cudaStreamNonBlocking) != cudaSuccess)
        return -1;
    spin_kernel<<<hold, 1024, smem, spin_stream>>>(stop_d, running_d, (uint64_t)(max_s * 1e9));
    if (cudaGetLastError() != cudaSuccess)
        return -1;
    while (*spin_running_h < hold)
        ;
    return hold;
}

void bt_test_spin_stop(void)
{
    if (!spin_stop_h)
        return;
    *spin_stop_h = 1;
    cudaStreamSynchronize(spin_stream);
    cudaStreamDestroy(spin_stream);
    cudaFreeHost((void *)spin_stop_h);
    spin_stop_h = spin_running_h = NULL;
}
