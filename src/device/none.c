/* device.h in a build without CUDA: no devices, so every communicator works on host memory;
 * the calls that need a device are unreachable and fail if reached. */
#include "device/device.h"

bt_status_t bt_device_error(int err, const char *what)
{
    (void)what;
    return err == 0 ? BT_OK : BT_ERR_CUDA;
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
    (void)dev;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_bus_id(int dev, char *buf, int len)
{
    (void)dev;
    (void)buf;
    (void)len;
    return BT_ERR_INTERNAL;
}

int bt_device_ptr_is_device(const void *p)
{
    (void)p;
    return 0;
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
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_mem_alloc(void **ptr_p, size_t bytes)
{
    (void)ptr_p;
    (void)bytes;
    return BT_ERR_INTERNAL;
}

int bt_device_mem_is_vmm(void)
{
    return 0;
}

bt_status_t bt_device_mem_free(void *ptr)
{
    (void)ptr;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_zero(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_alloc_zeroed(void **p, size_t bytes)
{
    (void)bytes;
    *p = NULL;
    return BT_ERR_INTERNAL;
}

void bt_device_free(void *p)
{
    (void)p;
}

bt_status_t bt_device_host_mapped(void **host, void **dev, size_t bytes)
{
    (void)bytes;
    *host = *dev = NULL;
    return BT_ERR_INTERNAL;
}

void bt_device_host_free(void *host)
{
    (void)host;
}

bt_status_t bt_device_upload(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_stream_create(void **stream)
{
    *stream = NULL;
    return BT_ERR_INTERNAL;
}

void bt_device_stream_destroy(void *stream)
{
    (void)stream;
}

bt_status_t bt_device_copy_wait(void *dst, const void *src, size_t bytes, void *stream)
{
    return bt_device_copy_async(dst, src, bytes, stream);
}

bt_status_t bt_device_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst;
    (void)src;
    (void)bytes;
    (void)stream;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_read_after(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst;
    (void)src;
    (void)bytes;
    (void)stream;
    return BT_ERR_INTERNAL;
}

int bt_device_stream_capturing(void *stream)
{
    (void)stream;
    return 0;
}

bt_status_t bt_device_host_func(void *stream, void (*fn)(void *), void *arg)
{
    (void)stream;
    (void)fn;
    (void)arg;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_stream_wait_u32(void *stream, void *dev_addr, uint32_t value)
{
    (void)stream;
    (void)dev_addr;
    (void)value;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_stream_wait_check(void)
{
    return BT_ERR_INTERNAL;
}

bt_status_t bt_device_write_u64(void *stream, void *dev_addr, uint64_t value)
{
    (void)stream;
    (void)dev_addr;
    (void)value;
    return BT_ERR_INTERNAL;
}

void bt_device_thread_capture_relaxed(void)
{
}
