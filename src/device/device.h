/*
 * The CUDA runtime as the library uses it outside the CUDA executor: which devices there
 * are, which one is current, their PCI bus ids, whether a pointer is device memory, device
 * memory for ncclMemAlloc, and the few stream-ordered copies a launch makes itself (a
 * send/recv to oneself, a one-rank collective, reading a PreMulSum scalar). Topology,
 * the API and the launch call these; only the executor (exec/cuda) calls CUDA directly.
 * A build without nvcc links device/none.c: no devices, nothing is device memory.
 */
#ifndef BT_DEVICE_DEVICE_H
#define BT_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* A CUDA runtime call's result (cudaError_t): BT_OK for success, else a WARN naming `what`
 * and CUDA's name and text for the error, and BT_ERR_CUDA. */
bt_status_t bt_device_error(int err, const char *what);

/* Devices this process can use (0 without CUDA or a driver); the current one or -1. */
int bt_device_count(void);
int bt_device_current(void);
/* The current device without counting devices first (the launch path, where one exists). */
int bt_device_get(void);

/* Make `dev` current (BT_ERR_CUDA, logged, when it cannot be). */
bt_status_t bt_device_set(int dev);

/* The PCI bus id of device `dev` ("0000:3b:00.0"). */
bt_status_t bt_device_bus_id(int dev, char *buf, int len);

/* Whether `p` is device (or managed) memory; NULL is not. */
int bt_device_ptr_is_device(const void *p);

/* Device memory on the current device (ncclMemAlloc in CUDA mode); free what it gave. */
bt_status_t bt_device_mem_alloc(void **ptr_p, size_t bytes);
bt_status_t bt_device_mem_free(void *ptr);
/* Whether bt_device_mem_alloc gives CUDA VMM memory (CUMEM_ENABLE, and the driver has it):
 * what peers map flat, as the device API needs. */
int bt_device_mem_is_vmm(void);

/* Zero `bytes` of device memory at `p` and wait until it is done. */
bt_status_t bt_device_zero(void *p, size_t bytes);

/* Device memory of the current device, zeroed (cudaMalloc), and its release. */
bt_status_t bt_device_alloc_zeroed(void **p, size_t bytes);
void bt_device_free(void *p);

/* Pinned host memory the device reads and writes (*dev: its device address), zeroed; and
 * its release. */
bt_status_t bt_device_host_mapped(void **host, void **dev, size_t bytes);
void bt_device_host_free(void *host);

/* Copy `bytes` from host memory to device memory, done when it returns. */
bt_status_t bt_device_upload(void *dst, const void *src, size_t bytes);

/* Queue a copy of `bytes` on `stream` (cudaStream_t); either side may be device memory. */
bt_status_t bt_device_copy_async(void *dst, const void *src, size_t bytes, void *stream);

/* Copy `bytes` of device memory to the host once `stream`'s work so far is done (a value
 * the stream's earlier kernels may write). */
bt_status_t bt_device_read_after(void *dst, const void *src, size_t bytes, void *stream);

/* A stream of the current device that does not wait for the legacy default stream
 * (cudaStreamNonBlocking: a service thread's copies run beside the users' kernels), and its
 * release. */
bt_status_t bt_device_stream_create(void **stream);
void bt_device_stream_destroy(void *stream);

/* Copy `bytes` on `stream` and wait until it is done (either side device or host memory;
 * pageable host memory too: the wait covers the staging). */
bt_status_t bt_device_copy_wait(void *dst, const void *src, size_t bytes, void *stream);

/* Whether `stream` is being captured into a CUDA graph. */
int bt_device_stream_capturing(void *stream);

/* Run fn(arg) on a host thread of CUDA's once `stream`'s work before it is done
 * (cudaLaunchHostFunc). fn must not call CUDA nor wait for anything the device does. */
bt_status_t bt_device_host_func(void *stream, void (*fn)(void *), void *arg);

/* `stream` waits until the 32-bit word at `dev_addr` (device-visible: device memory or mapped
 * host memory) reaches `value`, compared cyclically ((int32_t)(*word - value) >= 0): the
 * driver's cuStreamWaitValue32, no kernel. */
bt_status_t bt_device_stream_wait_u32(void *stream, void *dev_addr, uint32_t value);
/* BT_OK when bt_device_stream_wait_u32 can be used (the driver has the call). */
bt_status_t bt_device_stream_wait_check(void);

/* Write the 64-bit word at `dev_addr` (device memory) whole, on `stream` once its work so far
 * is done, and wait until it is written (cuStreamWriteValue64: one 64-bit write, which a
 * kernel polling the word never sees torn, as it might a copy's). */
bt_status_t bt_device_write_u64(void *stream, void *dev_addr, uint64_t value);

/* GPUDirect RDMA by dma-buf: 1 when the current device exports its memory as dma-buf
 * (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, and the driver has cuMemGetHandleForAddressRange). */
int bt_device_dmabuf_supported(void);
/* A dma-buf file descriptor for device memory [p, p + bytes), p and bytes multiples of the
 * host's page size (cuMemGetHandleForAddressRange); the caller closes *fd. */
bt_status_t bt_device_dmabuf_fd(void *p, size_t bytes, int *fd);

/* This thread's CUDA calls allowed while another thread captures a graph in global mode
 * (cudaThreadExchangeStreamCaptureMode relaxed): for the library's own threads. */
void bt_device_thread_capture_relaxed(void);

#endif
