/* device.h over the CUDA runtime (a build with nvcc). */
#include "device/device.h"

#include <cuda_runtime_api.h>

bt_status_t bt_device_error(int err, const char *what)
{
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess)
        return BT_OK;
    BT_WARN("%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return BT_ERR_CUDA;
}

static bt_status_t cuda_status(cudaError_t e, const char *what)
{
    return bt_device_error((int)e, what);
}

int bt_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

int bt_device_current(void)
{
    return bt_device_count() == 0 ? -1 : bt_device_get();
}

int bt_device_get(void)
{
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return d;
}

bt_status_t bt_device_set(int dev)
{
    return cuda_status(cudaSetDevice(dev), "cudaSetDevice");
}

bt_status_t bt_device_bus_id(int dev, char *buf, int len)
{
    return cuda_status(cudaDeviceGetPCIBusId(buf, len, dev), "cudaDeviceGetPCIBusId");
}

int bt_device_ptr_is_device(const void *p)
{
    if (!p)
        return 0;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

bt_status_t bt_device_mem_alloc(void **ptr_p, size_t bytes)
{
    return cuda_status(cudaMalloc(ptr_p, bytes ? bytes : 1), "ncclMemAlloc: cudaMalloc");
}

bt_status_t bt_device_mem_free(void *ptr)
{
    return cuda_status(cudaFree(ptr), "ncclMemFree: cudaFree");
}

bt_status_t bt_device_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    return cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream),
                       "cudaMemcpyAsync");
}

bt_status_t bt_device_read_after(void *dst, const void *src, size_t bytes, void *stream)
{
    BT_CHECK(cuda_status(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize"));
    return cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

int bt_device_stream_capturing(void *stream)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing((cudaStream_t)stream, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return cs != cudaStreamCaptureStatusNone;
}
