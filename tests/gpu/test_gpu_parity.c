/*
 * The GPU half of the host/GPU parity cases (threads/parity.h): two ranks of one process on
 * GPU 0 (BATON_TEST_SAME_GPU=1, set here), device buffers, a stream each.
 */
#include <cuda_runtime_api.h>

#include "../threads/parity.h"

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

static cudaStream_t streams[2];

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes));
    return p;
}

static void dev_release(void *p)
{
    CUDA_OK(cudaFree(p));
}

static void dev_put(void *dst, const void *host, size_t bytes)
{
    CUDA_OK(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice));
}

static void dev_get(void *host, const void *src, size_t bytes)
{
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
}

static void *dev_stream(int rank)
{
    return streams[rank];
}

static void dev_sync(int rank)
{
    CUDA_OK(cudaStreamSynchronize(streams[rank]));
}

static void dev_init(void)
{
    CUDA_OK(cudaSetDevice(0)); /* current at init: both communicators are GPU 0's */
    for (int r = 0; r < 2; r++)
        CUDA_OK(cudaStreamCreate(&streams[r]));
}

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes);
    BT_TEST_CHECK(p != NULL, "out of memory");
    return p;
}

static const struct parity_backend gpu = {
    .name = "gpu",
    .alloc = dev_alloc,
    .release = dev_release,
    .put = dev_put,
    .get = dev_get,
    .stream = dev_stream,
    .sync = dev_sync,
    .init = dev_init,
    .other_alloc = host_alloc,
    .other_release = free,
};

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        fprintf(stderr, "no GPU: this test needs one\n");
        return 1;
    }
    setenv("BATON_TEST_SAME_GPU", "1", 1);
    parity_run(&gpu);
    for (int r = 0; r < 2; r++)
        CUDA_OK(cudaStreamDestroy(streams[r]));
    return 0;
}
