/*
 * The host's cost per call of what a GPU collective's launch does (microseconds, the mean of
 * many back-to-back calls): cudaPointerGetAttributes, cudaGetDevice, cudaSetDevice to the
 * current device, cudaStreamIsCapturing, and kernel launches carrying 64 B .. 29 KB of
 * parameters (the launch returns before the empty kernel runs; the queue is drained every
 * 256 launches so it never fills). Run on a GPU machine: baton-cuda-costs
 */
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

template <int B> static void launch_cost(cudaStream_t s, int threads)
{
    Params<B> p = {};
    double t = 0;
    for (int i = 0; i < N; i++) {
        double t0 = now_us();
        empty_kernel<B><<<1, threads, 0, s>>>(p);
        t += now_us() - t0;
        if (i % 256 == 255)
            cudaStreamSynchronize(s);
    }
    cudaStreamSynchronize(s);
    printf("kernel launch, %5d bytes of parameters, %3d threads: %.2f us\n", B, threads, t / N);
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
    cudaFree(d);
    return 0;
}
