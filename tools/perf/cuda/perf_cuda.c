/*
 * Device memory behind baton-perf's buffers (built when CUDA is): cudaMalloc'ed buffers,
 * copies and memsets on the benchmark's stream, and sync = cudaStreamSynchronize. The
 * device is chosen from the local rank (rank % devices on one host) before the
 * communicator is made, as nccl-tests does with one GPU per process.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "perf.h"

static cudaStream_t perf_stream;

static int perf_cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "baton-perf: %s failed: %s\n", what, cudaGetErrorString(e));
    return -1;
}

static int perf_cuda_alloc(void **ptr_p, size_t bytes)
{
    return perf_cuda_ok(cudaMalloc(ptr_p, bytes > 0 ? bytes : 256), "cudaMalloc");
}

static void perf_cuda_free(void *ptr)
{
    cudaFree(ptr);
}

/* Copies go on the benchmark's stream: a plain cudaMemcpy runs on the legacy stream, which
 * does not wait for a non-blocking stream's memset or collective. */
static int perf_cuda_to_host(void *dst, const void *src, size_t bytes)
{
    if (perf_cuda_ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, perf_stream),
                     "cudaMemcpyAsync D2H") != 0)
        return -1;
    return perf_cuda_ok(cudaStreamSynchronize(perf_stream), "cudaStreamSynchronize");
}

static int perf_cuda_from_host(void *dst, const void *src, size_t bytes)
{
    if (perf_cuda_ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, perf_stream),
                     "cudaMemcpyAsync H2D") != 0)
        return -1;
    return perf_cuda_ok(cudaStreamSynchronize(perf_stream), "cudaStreamSynchronize");
}

static int perf_cuda_memset(void *ptr, int v, size_t bytes)
{
    return perf_cuda_ok(cudaMemsetAsync(ptr, v, bytes, perf_stream), "cudaMemsetAsync");
}

static int perf_cuda_sync(void *stream)
{
    return perf_cuda_ok(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
}

static int perf_cuda_capture_begin(void *stream)
{
    return perf_cuda_ok(
        cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
}

static int perf_cuda_capture_end(void *stream, void **graph_p)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    if (perf_cuda_ok(cudaStreamEndCapture((cudaStream_t)stream, &g), "cudaStreamEndCapture") != 0)
        return -1;
    int rc = perf_cuda_ok(cudaGraphInstantiate(&ge, g, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(g);
    *graph_p = ge;
    return rc;
}

static int perf_cuda_graph_launch(void *graph, void *stream)
{
    return perf_cuda_ok(cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)stream),
                        "cudaGraphLaunch");
}

static void perf_cuda_graph_free(void *graph)
{
    if (graph)
        cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static long long perf_cuda_device_used(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return (long long)(total_b - free_b);
}

const struct perf_mem_ops perf_mem_cuda = {
    .device_used = perf_cuda_device_used,
    .name = "cuda",
    .capture_begin = perf_cuda_capture_begin,
    .capture_end = perf_cuda_capture_end,
    .graph_launch = perf_cuda_graph_launch,
    .graph_free = perf_cuda_graph_free,
    .alloc = perf_cuda_alloc,
    .free = perf_cuda_free,
    .to_host = perf_cuda_to_host,
    .from_host = perf_cuda_from_host,
    .memset = perf_cuda_memset,
    .sync = perf_cuda_sync,
    .host_accessible = 0,
};

int perf_cuda_setup(int rank, int *dev_p, void **stream_p)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return 1; /* no device: host memory */
    }
    int dev = rank % n;
    if (perf_cuda_ok(cudaSetDevice(dev), "cudaSetDevice") != 0 ||
        perf_cuda_ok(cudaStreamCreateWithFlags(&perf_stream, cudaStreamNonBlocking),
                     "cudaStreamCreate") != 0)
        return -1;
    *dev_p = dev;
    *stream_p = perf_stream;
    return 0;
}

void perf_cuda_teardown(void)
{
    if (perf_stream)
        cudaStreamDestroy(perf_stream);
    perf_stream = NULL;
}
