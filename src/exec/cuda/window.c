/*
 * Windows on GPU memory (core/window.c decides what to map; this file does the CUDA part):
 * each rank exports its window (a CUDA IPC handle of the allocation that holds it, and the
 * window's offset there) and the barrier flags its window kernels use (struct bt_win_flags,
 * one cudaMalloc of its own); every rank maps every peer's: the plain pointers when the peer
 * is this process (ranks of one process, one GPU or peer-enabled GPUs), else
 * cudaIpcOpenMemHandle. And the window AllReduce's launch, in the communicator's kernel order.
 */
#include <cuda.h> /* CUdeviceptr, CUresult: the driver entry point's signature */
#include <cuda_runtime_api.h>
#include <string.h>

#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "util/log.h"
#include "util/param.h"

static bt_status_t cuda_status(cudaError_t e, const char *what)
{
    return bt_device_error((int)e, what);
}

/* The start of the allocation that holds `p` (the driver's cuMemGetAddressRange, found
 * through the runtime so that the library needs no libcuda at link time). */
static bt_status_t alloc_base(const void *p, char **base_p)
{
    typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
    static range_fn fn;
    if (!fn) {
        enum cudaDriverEntryPointQueryResult q;
        void *f = NULL;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault,
                                             &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !f) {
            (void)cudaGetLastError();
            BT_WARN("window: the driver has no cuMemGetAddressRange");
            return BT_ERR_CUDA;
        }
        fn = (range_fn)f;
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    if (fn(&base, &size, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) {
        BT_WARN("window: %p is not in a device allocation", p);
        return BT_ERR_INVALID_ARG;
    }
    *base_p = (char *)(uintptr_t)base;
    return BT_OK;
}

bt_status_t bt_cuda_window_export(void *buf, struct bt_cuda_win_export *out)
{
    memset(out, 0, sizeof(*out));
    out->base = buf;
    BT_CHECK(cuda_status(cudaGetDevice(&out->dev), "cudaGetDevice"));
    BT_CHECK(cuda_status(cudaMalloc((void **)&out->flags, sizeof(struct bt_win_flags)),
                         "cudaMalloc (window flags)"));
    bt_status_t st = cuda_status(cudaMemset(out->flags, 0, sizeof(struct bt_win_flags)),
                                 "cudaMemset (window flags)");
    if (st == BT_OK) /* zeroed before any peer's kernel may write them */
        st = cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize (window flags)");
    char *abase = NULL;
    if (st == BT_OK)
        st = alloc_base(buf, &abase);
    if (st == BT_OK) {
        out->data_off = (uint64_t)((char *)buf - abase);
        st = cuda_status(cudaIpcGetMemHandle((cudaIpcMemHandle_t *)out->data_handle, abase),
                         "cudaIpcGetMemHandle (window)");
    }
    if (st == BT_OK)
        st = cuda_status(cudaIpcGetMemHandle((cudaIpcMemHandle_t *)out->flags_handle, out->flags),
                         "cudaIpcGetMemHandle (window flags)");
    if (st != BT_OK) {
        (void)cudaGetLastError();
        cudaFree(out->flags);
        out->flags = NULL;
    }
    return st;
}

void bt_cuda_window_unexport(struct bt_cuda_win_export *mine)
{
    if (mine->flags)
        cudaFree(mine->flags);
    mine->flags = NULL;
}

bt_status_t bt_cuda_window_open(const struct bt_cuda_win_export *peer, int same_process,
                                struct bt_cuda_win_map *map)
{
    memset(map, 0, sizeof(*map));
    int dev = -1;
    BT_CHECK(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    if (same_process) {
        if (peer->dev != dev) {
            cudaError_t e = cudaDeviceEnablePeerAccess(peer->dev, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled)
                (void)cudaGetLastError();
            else if (e != cudaSuccess)
                return cuda_status(e, "cudaDeviceEnablePeerAccess (window)");
        }
        map->base = (char *)peer->base;
        map->flags = peer->flags;
        return BT_OK;
    }
    void *data = NULL, *flags = NULL;
    cudaIpcMemHandle_t h;
    memcpy(&h, peer->data_handle, sizeof(h));
    BT_CHECK(cuda_status(cudaIpcOpenMemHandle(&data, h, cudaIpcMemLazyEnablePeerAccess),
                         "cudaIpcOpenMemHandle (a peer's window)"));
    memcpy(&h, peer->flags_handle, sizeof(h));
    bt_status_t st = cuda_status(cudaIpcOpenMemHandle(&flags, h, cudaIpcMemLazyEnablePeerAccess),
                                 "cudaIpcOpenMemHandle (a peer's window flags)");
    if (st != BT_OK) {
        cudaIpcCloseMemHandle(data);
        return st;
    }
    map->opened_data = data;
    map->opened_flags = flags;
    map->base = (char *)data + peer->data_off;
    map->flags = (struct bt_win_flags *)flags;
    return BT_OK;
}

void bt_cuda_window_close(struct bt_cuda_win_map *map)
{
    if (map->opened_data && cudaIpcCloseMemHandle(map->opened_data) != cudaSuccess)
        (void)cudaGetLastError();
    if (map->opened_flags && cudaIpcCloseMemHandle(map->opened_flags) != cudaSuccess)
        (void)cudaGetLastError();
    memset(map, 0, sizeof(*map));
}
