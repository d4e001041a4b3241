/* device.h over the CUDA runtime (a build with nvcc). */
#include "device/device.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "device/cuda_vmm.h"
#include "util/log.h"
#include "util/param.h"

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

/* The driver's query of the two attributes a collective needs: cudaPointerGetAttributes fills
 * every field, 0.11 us a call against 0.065 on one H100 (tests/gpu/lab/launch_cost.cu), and
 * an 8-rank call from one thread makes eight. The runtime's where the driver's entry is
 * missing. (Resolving the entry initializes the runtime, as the runtime's query would.) */
static CUresult (*ptr_attrs)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
static pthread_once_t ptr_once = PTHREAD_ONCE_INIT;

static void *driver_fn(const char *name);
static void ptr_resolve(void)
{
    ptr_attrs = (CUresult(*)(unsigned, CUpointer_attribute *, void **, CUdeviceptr))driver_fn(
        "cuPointerGetAttributes");
}

int bt_device_ptr_is_device(const void *p)
{
    if (!p)
        return 0;
    pthread_once(&ptr_once, ptr_resolve);
    if (ptr_attrs) {
        CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_IS_MANAGED};
        unsigned type = 0;
        int managed = 0;
        void *data[2] = {&type, &managed};
        /* memory CUDA does not know: success, type 0; an error (no context on this thread,
         * say): the runtime's query below, which sets one up */
        if (ptr_attrs(2, at, data, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS)
            return type == CU_MEMORYTYPE_DEVICE || managed;
    }
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* ---- VMM (cuda_vmm.h) ------------------------------------------------------------------ */

static struct bt_vmm vmm;
static int vmm_ok;
static pthread_once_t vmm_once = PTHREAD_ONCE_INIT;

static void *driver_fn(const char *name)
{
    enum cudaDriverEntryPointQueryResult q;
    void *f = NULL;
    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return f;
}

static void vmm_resolve(void)
{
    struct {
        void **slot;
        const char *name;
    } fns[] = {
        {(void **)&vmm.create, "cuMemCreate"},
        {(void **)&vmm.release, "cuMemRelease"},
        {(void **)&vmm.reserve, "cuMemAddressReserve"},
        {(void **)&vmm.addr_free, "cuMemAddressFree"},
        {(void **)&vmm.map, "cuMemMap"},
        {(void **)&vmm.unmap, "cuMemUnmap"},
        {(void **)&vmm.set_access, "cuMemSetAccess"},
        {(void **)&vmm.granularity, "cuMemGetAllocationGranularity"},
        {(void **)&vmm.retain, "cuMemRetainAllocationHandle"},
        {(void **)&vmm.range, "cuMemGetAddressRange"},
        {(void **)&vmm.export_fd, "cuMemExportToShareableHandle"},
        {(void **)&vmm.import_fd, "cuMemImportFromShareableHandle"},
    };
    vmm_ok = 1;
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        vmm_ok &= (*fns[i].slot = driver_fn(fns[i].name)) != NULL;
}

const struct bt_vmm *bt_vmm(void)
{
    pthread_once(&vmm_once, vmm_resolve);
    return vmm_ok ? &vmm : NULL;
}

bt_status_t bt_vmm_map(const struct bt_vmm *v, CUdeviceptr va, size_t bytes,
                       CUmemGenericAllocationHandle h, int dev)
{
    CUresult r = v->map(va, bytes, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        BT_WARN("cuMemMap of %zu bytes at 0x%llx failed: CUresult %d", bytes,
                (unsigned long long)va, (int)r);
        return BT_ERR_CUDA;
    }
    CUmemAccessDesc a = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    r = v->set_access(va, bytes, &a, 1);
    if (r != CUDA_SUCCESS) {
        BT_WARN("cuMemSetAccess of %zu bytes at 0x%llx for GPU %d failed: CUresult %d", bytes,
                (unsigned long long)va, dev, (int)r);
        v->unmap(va, bytes);
        return BT_ERR_CUDA;
    }
    return BT_OK;
}

/* ncclMemAlloc's VMM memory on the current device: its own virtual range, mapped for it,
 * exportable as a file descriptor (exec/cuda/win_map.c maps it into windows' flat ranges). */
static bt_status_t vmm_alloc(const struct bt_vmm *v, void **ptr_p, size_t bytes)
{
    int dev = bt_device_get();
    if (dev < 0)
        return BT_ERR_CUDA;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0;
    if (v->granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !gran)
        return BT_ERR_CUDA;
    size_t size = (bytes ? bytes + gran - 1 : gran) / gran * gran;
    CUmemGenericAllocationHandle h;
    CUresult r = v->create(&h, size, &prop, 0);
    if (r != CUDA_SUCCESS) {
        BT_INFO(BT_LOG_INIT, "ncclMemAlloc: cuMemCreate of %zu bytes failed (CUresult %d)", size,
                (int)r);
        return r == CUDA_ERROR_OUT_OF_MEMORY ? BT_ERR_SYSTEM : BT_ERR_CUDA;
    }
    CUdeviceptr va = 0;
    bt_status_t st = v->reserve(&va, size, gran, 0, 0) == CUDA_SUCCESS ? BT_OK : BT_ERR_CUDA;
    if (st == BT_OK) {
        st = bt_vmm_map(v, va, size, h, dev);
        if (st != BT_OK)
            v->addr_free(va, size);
    }
    v->release(h); /* the mapping keeps the memory until ncclMemFree unmaps it */
    if (st == BT_OK)
        *ptr_p = (void *)(uintptr_t)va;
    return st;
}

bt_status_t bt_device_mem_alloc(void **ptr_p, size_t bytes)
{
    const struct bt_vmm *v = bt_param_cumem_enable() ? bt_vmm() : NULL;
    if (v) {
        bt_status_t st = vmm_alloc(v, ptr_p, bytes);
        if (st == BT_OK || st == BT_ERR_SYSTEM)
            return st;
        BT_INFO(BT_LOG_INIT, "ncclMemAlloc: no VMM memory here: cudaMalloc");
    }
    return cuda_status(cudaMalloc(ptr_p, bytes ? bytes : 1), "ncclMemAlloc: cudaMalloc");
}

int bt_device_mem_is_vmm(void)
{
    return bt_param_cumem_enable() && bt_vmm() != NULL;
}

bt_status_t bt_device_mem_free(void *ptr)
{
    const struct bt_vmm *v = bt_vmm();
    CUmemGenericAllocationHandle h;
    if (v && v->retain(&h, ptr) == CUDA_SUCCESS) { /* VMM memory: ncclMemAlloc's own range */
        v->release(h);
        CUdeviceptr base = 0;
        size_t size = 0;
        if (v->range(&base, &size, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS ||
            base != (CUdeviceptr)(uintptr_t)ptr) {
            BT_WARN("ncclMemFree: %p is not the start of an ncclMemAlloc allocation", ptr);
            return BT_ERR_INVALID_ARG;
        }
        CUresult r = v->unmap(base, size);
        if (r == CUDA_SUCCESS)
            r = v->addr_free(base, size);
        if (r != CUDA_SUCCESS) {
            BT_WARN("ncclMemFree: unmapping %p (%zu bytes) failed: CUresult %d", ptr, size, (int)r);
            return BT_ERR_CUDA;
        }
        return BT_OK;
    }
    (void)cudaGetLastError();
    return cuda_status(cudaFree(ptr), "ncclMemFree: cudaFree");
}

bt_status_t bt_device_zero(void *p, size_t bytes)
{
    BT_CHECK(cuda_status(cudaMemset(p, 0, bytes), "cudaMemset"));
    return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after cudaMemset)");
}

bt_status_t bt_device_alloc_zeroed(void **p, size_t bytes)
{
    *p = NULL;
    BT_CHECK(cuda_status(cudaMalloc(p, bytes ? bytes : 1), "cudaMalloc"));
    bt_status_t st = bt_device_zero(*p, bytes ? bytes : 1);
    if (st != BT_OK) {
        cudaFree(*p);
        *p = NULL;
    }
    return st;
}

void bt_device_free(void *p)
{
    if (p && cudaFree(p) != cudaSuccess)
        (void)cudaGetLastError();
}

bt_status_t bt_device_host_mapped(void **host, void **dev, size_t bytes)
{
    *host = *dev = NULL;
    BT_CHECK(cuda_status(
        cudaHostAlloc(host, bytes ? bytes : 1, cudaHostAllocMapped | cudaHostAllocPortable),
        "cudaHostAlloc (mapped)"));
    memset(*host, 0, bytes ? bytes : 1);
    bt_status_t st =
        cuda_status(cudaHostGetDevicePointer(dev, *host, 0), "cudaHostGetDevicePointer");
    if (st != BT_OK) {
        cudaFreeHost(*host);
        *host = NULL;
    }
    return st;
}

void bt_device_host_free(void *host)
{
    if (host && cudaFreeHost(host) != cudaSuccess)
        (void)cudaGetLastError();
}

bt_status_t bt_device_upload(void *dst, const void *src, size_t bytes)
{
    return cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
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

bt_status_t bt_device_stream_create(void **stream)
{
    cudaStream_t s = NULL;
    *stream = NULL;
    BT_CHECK(cuda_status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                         "cudaStreamCreateWithFlags"));
    *stream = s;
    return BT_OK;
}

void bt_device_stream_destroy(void *stream)
{
    if (stream && cudaStreamDestroy((cudaStream_t)stream) != cudaSuccess)
        (void)cudaGetLastError();
}

bt_status_t bt_device_copy_wait(void *dst, const void *src, size_t bytes, void *stream)
{
    BT_CHECK(bt_device_copy_async(dst, src, bytes, stream));
    return cuda_status(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
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

bt_status_t bt_device_host_func(void *stream, void (*fn)(void *), void *arg)
{
    return cuda_status(cudaLaunchHostFunc((cudaStream_t)stream, fn, arg), "cudaLaunchHostFunc");
}

/* ---- dma-buf (GPUDirect RDMA) ---------------------------------------------------------- */

static CUresult (*range_handle)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
                                unsigned long long);
static CUresult (*dev_attr)(int *, CUdevice_attribute, CUdevice);
static CUresult (*dev_get)(CUdevice *, int);
static pthread_once_t dmabuf_once = PTHREAD_ONCE_INIT;

static void dmabuf_resolve(void)
{
    range_handle = (CUresult(*)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
                                unsigned long long))driver_fn("cuMemGetHandleForAddressRange");
    dev_attr = (CUresult(*)(int *, CUdevice_attribute, CUdevice))driver_fn("cuDeviceGetAttribute");
    dev_get = (CUresult(*)(CUdevice *, int))driver_fn("cuDeviceGet");
}

int bt_device_dmabuf_supported(void)
{
    pthread_once(&dmabuf_once, dmabuf_resolve);
    static int said[64]; /* the answer logged once per device */
    int dev = bt_device_get(), ok = 0;
    CUdevice cu;
    if (!range_handle || !dev_attr || !dev_get || dev < 0 || dev_get(&cu, dev) != CUDA_SUCCESS ||
        dev_attr(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, cu) != CUDA_SUCCESS)
        ok = 0;
    if (dev >= 0 && dev < 64 && !__atomic_exchange_n(&said[dev], 1, __ATOMIC_RELAXED))
        BT_INFO(BT_LOG_NET | BT_LOG_INIT, "GPU %d exports dma-bufs: %s", dev, ok ? "yes" : "no");
    return ok != 0;
}

bt_status_t bt_device_dmabuf_fd(void *p, size_t bytes, int *fd)
{
    pthread_once(&dmabuf_once, dmabuf_resolve);
    *fd = -1;
    if (!range_handle)
        return BT_ERR_CUDA;
    int h = -1;
    CUresult r =
        range_handle(&h, (CUdeviceptr)(uintptr_t)p, bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS || h < 0) {
        BT_WARN("cuMemGetHandleForAddressRange (dma-buf) of %zu bytes at %p failed: CUresult %d",
                bytes, p, (int)r);
        return BT_ERR_CUDA;
    }
    *fd = h;
    return BT_OK;
}

/* cuStreamWaitValue32 from the driver (the library links no libcuda), resolved once. */
static CUresult (*wait_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static pthread_once_t wait_once = PTHREAD_ONCE_INIT;

/* ... and cuStreamWriteValue64 */
static CUresult (*write_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

static void wait_resolve(void)
{
    wait_value32 = (CUresult(*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int))driver_fn(
        "cuStreamWaitValue32");
    write_value64 = (CUresult(*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int))driver_fn(
        "cuStreamWriteValue64");
}

bt_status_t bt_device_stream_wait_check(void)
{
    pthread_once(&wait_once, wait_resolve);
    if (!wait_value32) {
        BT_WARN("the driver has no cuStreamWaitValue32");
        return BT_ERR_CUDA;
    }
    return BT_OK;
}

void bt_device_thread_capture_relaxed(void)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess)
        (void)cudaGetLastError();
}

bt_status_t bt_device_stream_wait_u32(void *stream, void *dev_addr, uint32_t value)
{
    BT_CHECK(bt_device_stream_wait_check());
    CUresult r = wait_value32((CUstream)stream, (CUdeviceptr)(uintptr_t)dev_addr, value,
                              CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS) {
        BT_WARN("cuStreamWaitValue32 failed: CUresult %d", (int)r);
        return BT_ERR_CUDA;
    }
    return BT_OK;
}

bt_status_t bt_device_write_u64(void *stream, void *dev_addr, uint64_t value)
{
    pthread_once(&wait_once, wait_resolve);
    if (!write_value64) {
        BT_WARN("the driver has no cuStreamWriteValue64");
        return BT_ERR_CUDA;
    }
    CUresult r = write_value64((CUstream)stream, (CUdeviceptr)(uintptr_t)dev_addr, value, 0);
    if (r != CUDA_SUCCESS) {
        BT_WARN("cuStreamWriteValue64 failed: CUresult %d", (int)r);
        return BT_ERR_CUDA;
    }
    return cuda_status(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
}
