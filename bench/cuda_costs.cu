/*
 * The host's cost per call of what a GPU collective's launch does (microseconds, the mean of
 * many back-to-back calls): cudaPointerGetAttributes, cudaGetDevice, cudaSetDevice to the
 * current device, cudaStreamIsCapturing, and kernel launches carrying 64 B .. 29 KB of
 * parameters (the launch returns before the empty kernel runs), through the runtime (<<<>>>) and
 * through the driver (cuLaunchKernel / cuLaunchKernelEx, found with
 * cudaGetDriverEntryPointByVersion, so no -lcuda). Run on a GPU machine: baton-cuda-costs
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

template <int B> struct Params {
    char b[B];
};

template <int B> __global__ void empty_kernel(const __grid_constant__ Params<B> p)
{
    if (p.b[0] == 123 && threadIdx.x == 1000)
        printf("never\n");
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#define N 20000

/* The host's mean time per call of launch(i) over N calls (us); the queue is drained every
 * 256 launches so it never fills. launch returns false when a launch failed: timing stops
 * there and *ok says so. */
template <typename F> static double mean_launch_us(F launch, bool *ok = NULL)
{
    double t = 0;
    int i = 0;
    bool good = true;
    for (; i < N && good; i++) {
        double t0 = now_us();
        good = launch(i);
        t += now_us() - t0;
        if (i % 256 == 255)
            cudaDeviceSynchronize();
    }
    cudaDeviceSynchronize();
    if (ok)
        *ok = good;
    return t / i;
}

template <int B> static void launch_cost(cudaStream_t s, int threads, int blocks = 1)
{
    Params<B> p = {};
    double us = mean_launch_us([&](int) {
        empty_kernel<B><<<blocks, threads, 0, s>>>(p);
        return true;
    });
    printf("kernel launch <<<>>>, %5d bytes of parameters, %2d x %3d threads: %.2f us\n", B, blocks,
           threads, us);
}

/* Launches alternating between two streams (one process driving two ranks does so). */
template <int B> static void two_stream_cost(cudaStream_t s0, cudaStream_t s1)
{
    Params<B> p = {};
    double us = mean_launch_us([&](int i) {
        empty_kernel<B><<<1, 512, 0, i % 2 ? s1 : s0>>>(p);
        return true;
    });
    printf("kernel launch <<<>>>, %5d bytes, two streams alternating: %.2f us\n", B, us);
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);

static void *driver_fn(const char *name)
{
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        return NULL;
    return f;
}

/* how: 0 cuLaunchKernel with kernelParams, 1 with a packed buffer (extra), 2 cuLaunchKernelEx,
 * 3 cuLaunchKernel naming the kernel by its context-free handle (cudaGetKernel) */
template <int B> static void driver_cost(cudaStream_t s, int blocks, int threads, int how)
{
    static launch_fn launch = (launch_fn)driver_fn("cuLaunchKernel");
    static launch_ex_fn launch_ex = (launch_ex_fn)driver_fn("cuLaunchKernelEx");
    cudaFunction_t f;
    cudaKernel_t kh;
    if (!launch || !launch_ex ||
        cudaGetFuncBySymbol(&f, (const void *)empty_kernel<B>) != cudaSuccess ||
        cudaGetKernel(&kh, (const void *)empty_kernel<B>) != cudaSuccess) {
        printf("driver launch: entry points not found\n");
        return;
    }
    static Params<B> p;
    size_t size = sizeof(p);
    void *params[] = {&p};
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &p, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    CUlaunchConfig cfg = {};
    cfg.gridDimX = blocks;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = (CUstream)s;
    bool ok;
    double us = mean_launch_us(
        [&](int) {
            CUresult r;
            if (how == 0)
                r = launch((CUfunction)f, blocks, 1, 1, threads, 1, 1, 0, (CUstream)s, params,
                           NULL);
            else if (how == 1)
                r = launch((CUfunction)f, blocks, 1, 1, threads, 1, 1, 0, (CUstream)s, NULL, extra);
            else if (how == 2)
                r = launch_ex(&cfg, (CUfunction)f, params, NULL);
            else
                r = launch((CUfunction)kh, blocks, 1, 1, threads, 1, 1, 0, (CUstream)s, params,
                           NULL);
            return r == CUDA_SUCCESS;
        },
        &ok);
    static const char *name[] = {"cuLaunchKernel (params)", "cuLaunchKernel (extra buffer)",
                                 "cuLaunchKernelEx", "cuLaunchKernel (CUkernel handle)"};
    printf("%s, %5d bytes, %2d x %3d threads: %.2f us%s\n", name[how], B, blocks, threads, us,
           ok ? "" : " (FAILED)");
}

int main(void)
{
    void *d = NULL;
    cudaSetDevice(0);
    cudaMalloc(&d, 1 << 20);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    empty_kernel<64><<<1, 32, 0, s>>>(Params<64>{});
    cudaStreamSynchronize(s);

    double t0 = now_us();
    for (int i = 0; i < N; i++) {
        cudaPointerAttributes a;
        cudaPointerGetAttributes(&a, (char *)d + i % 1024);
    }
    printf("cudaPointerGetAttributes (device memory): %.3f us\n", (now_us() - t0) / N);
    int dev;
    t0 = now_us();
    for (int i = 0; i < N; i++)
        cudaGetDevice(&dev);
    printf("cudaGetDevice: %.3f us\n", (now_us() - t0) / N);
    t0 = now_us();
    for (int i = 0; i < N; i++)
        cudaSetDevice(0);
    printf("cudaSetDevice (current): %.3f us\n", (now_us() - t0) / N);
    t0 = now_us();
    for (int i = 0; i < N; i++) {
        cudaStreamCaptureStatus cs;
        cudaStreamIsCapturing(s, &cs);
    }
    printf("cudaStreamIsCapturing: %.3f us\n", (now_us() - t0) / N);
    t0 = now_us();
    for (int i = 0; i < N; i++)
        (void)cudaGetLastError();
    printf("cudaGetLastError: %.3f us\n", (now_us() - t0) / N);
    launch_cost<64>(s, 512);
    launch_cost<1024>(s, 512);
    launch_cost<4096>(s, 512);
    launch_cost<7424>(s, 512);
    launch_cost<14592>(s, 512);
    launch_cost<28968>(s, 512);
    launch_cost<1024>(s, 32);
    cudaStream_t s1;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    two_stream_cost<1024>(s, s1);
    launch_cost<1024>(s, 512, 1);
    two_stream_cost<1024>(s, s1);
    /* runtime against driver, interleaved five times (the machine's launch cost drifts) */
    for (int pass = 0; pass < 8; pass++) {
        launch_cost<1024>(s, 512, 1);
        driver_cost<1024>(s, 1, 512, 0);
        driver_cost<1024>(s, 1, 512, 3);
    }
    for (int how = 1; how < 3; how++)
        driver_cost<1024>(s, 1, 512, how);
    cudaFree(d);
    return 0;
}
