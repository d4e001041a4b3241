/*
 * A device layer (src/device/device.h) whose "device memory" is host memory, for unit tests
 * of code that moves device memory on machines without a GPU (CI): linked into such a test
 * ahead of the internal library, it defines every function device/cuda.c (or device/none.c)
 * would, so the library's own is never linked. No devices are reported (communicators are
 * host ones); the memory calls allocate and copy on the host, a stream is nothing (every
 * copy is done when it returns), and the 64-bit write is an atomic store.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

bt_status_t bt_device_error(int err, const char *what)
{
    (void)what;
    return err ? BT_ERR_CUDA : BT_OK;
}

int bt_device_count(void)
{
    return 0;
}

int bt_device_current(void)
{
    return -1;
}

int bt_device_get(void)
{
    return -1;
}

bt_status_t bt_device_set(int dev)
{
    return dev < 0 ? BT_OK : BT_ERR_CUDA;
}

bt_status_t bt_device_bus_id(int dev, char *buf, int len)
{
    (void)dev;
    if (len > 0)
        buf[0] = 0;
    return BT_ERR_CUDA;
}

int bt_device_ptr_is_device(const void *p)
{
    (void)p;
    return 0;
}

bt_status_t bt_device_mem_alloc(void **ptr_p, size_t bytes)
{
    *ptr_p = calloc(1, bytes ? bytes : 1);
    return *ptr_p ? BT_OK : BT_ERR_SYSTEM;
}

bt_status_t bt_device_mem_free(void *ptr)
{
    free(ptr);
    return BT_OK;
}

int bt_device_mem_is_vmm(void)
{
    return 0;
}

bt_status_t bt_device_zero(void *p, size_t bytes)
{
    memset(p, 0, bytes);
    return BT_OK;
}

bt_status_t bt_device_alloc_zeroed(void **p, size_t bytes)
{
    return bt_device_mem_alloc(p, bytes);
}

void bt_device_free(void *p)
{
    free(p);
}

bt_status_t bt_device_host_mapped(void **host, void **dev, size_t bytes)
{
    *host = *dev = calloc(1, bytes ? bytes : 1);
    return *host ? BT_OK : BT_ERR_SYSTEM;
}

void bt_device_host_free(void *host)
{
    free(host);
}

bt_status_t bt_device_upload(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return BT_OK;
}

bt_status_t bt_device_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)stream;
    memmove(dst, src, bytes);
    return BT_OK;
}

bt_status_t bt_device_read_after(void *dst, const void *src, size_t bytes, void *stream)
{
    return bt_device_copy_async(dst, src, bytes, stream);
}

bt_status_t bt_device_stream_create(void **stream)
{
    static char one;
    *stream = &one;
    return BT_OK;
}

void bt_device_stream_destroy(void *stream)
{
    (void)stream;
}

bt_status_t bt_device_copy_wait(void *dst, const void *src, size_t bytes, void *stream)
{
    return bt_device_copy_async(dst, src, bytes, stream);
}

int bt_device_stream_capturing(void *stream)
{
    (void)stream;
    return 0;
}

bt_status_t bt_device_host_func(void *stream, void (*fn)(void *), void *arg)
{
    (void)stream;
    fn(arg);
    return BT_OK;
}

bt_status_t bt_device_stream_wait_u32(void *stream, void *dev_addr, uint32_t value)
{
    (void)stream;
    while ((int32_t)(__atomic_load_n((uint32_t *)dev_addr, __ATOMIC_ACQUIRE) - value) < 0)
        ;
    return BT_OK;
}

bt_status_t bt_device_stream_wait_check(void)
{
    return BT_OK;
}

bt_status_t bt_device_write_u64(void *stream, void *dev_addr, uint64_t value)
{
    (void)stream;
    __atomic_store_n((uint64_t *)dev_addr, value, __ATOMIC_RELEASE);
    return BT_OK;
}

int bt_device_dmabuf_supported(void)
{
    return 0;
}

bt_status_t bt_device_dmabuf_fd(void *p, size_t bytes, int *fd)
{
    (void)p;
    (void)bytes;
    *fd = -1;
    return BT_ERR_CUDA;
}

void bt_device_thread_capture_relaxed(void)
{
}

#ifdef BATON_HAVE_CUDA
/* device/cuda.c's VMM calls, which the CUDA executor's objects name: none here */
#include "device/cuda_vmm.h"

const struct bt_vmm *bt_vmm(void)
{
    return NULL;
}

bt_status_t bt_vmm_map(const struct bt_vmm *v, CUdeviceptr va, size_t bytes,
                       CUmemGenericAllocationHandle h, int dev)
{
    (void)v;
    (void)va;
    (void)bytes;
    (void)h;
    (void)dev;
    return BT_ERR_CUDA;
}
#endif
