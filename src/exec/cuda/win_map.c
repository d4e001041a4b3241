/*
 * Windows on GPU memory (exec/exec.h's win_* of the CUDA executor; core/window.c registers them
 * collectively): each rank exports its window (a CUDA IPC handle of the allocation that holds
 * it, and the window's offset there) and the barrier flags its window kernels use (struct
 * bt_win_flags, one cudaMalloc of its own); every rank maps every peer's: the plain pointers
 * when the peer is this process (ranks of one process, one GPU or peer-enabled GPUs), else
 * cudaIpcOpenMemHandle, which needs the same host and IPC namespace.
 */
#include <cuda.h> /* CUdeviceptr, CUresult: the driver entry point's signature */
#include <cuda_runtime_api.h>
#include <string.h>

#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "exec/exec.h"
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

/* What a rank tells its peers of its GPU window. */
struct cuda_win_blob {
    void *base;                 /* the window, in the exporter's address space */
    struct bt_win_flags *flags; /* its barrier flags (device memory it allocated) */
    int dev;
    uint64_t data_off;              /* the window's offset in its allocation */
    unsigned char data_handle[64];  /* cudaIpcMemHandle_t of that allocation */
    unsigned char flags_handle[64]; /* ... and of the flags */
};
_Static_assert(sizeof(struct cuda_win_blob) <= BT_WIN_BLOB_BYTES, "GPU window blob too large");
_Static_assert(sizeof(cudaIpcMemHandle_t) <= 64, "cudaIpcMemHandle_t larger than its field");

/* The blob of the window at `buf` (device memory of the current device), with its zeroed
 * flags allocated. */
static bt_status_t export_blob(void *buf, struct cuda_win_blob *out)
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

int bt_cuda_win_export(const struct bt_exec_comm *ec, void *buf, size_t size,
                       struct bt_win_map *mine, void *blob)
{
    (void)size;
    if (ec->dev < 0 || ec->nranks > BT_WIN_MAX_RANKS) /* the window kernel's limit */
        return 0;
    int prev = bt_device_get();
    struct cuda_win_blob *b = blob;
    bt_status_t st = bt_device_set(ec->dev);
    if (st == BT_OK)
        st = export_blob(buf, b);
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st != BT_OK)
        return 0;
    memset(mine, 0, sizeof(*mine));
    mine->base = buf;
    mine->flags = b->flags;
    return 1;
}

void bt_cuda_win_unexport(struct bt_win_map *mine)
{
    if (mine->flags)
        cudaFree(mine->flags);
    memset(mine, 0, sizeof(*mine));
}

/* Map a peer's blob with the communicator's device current. */
static bt_status_t open_blob(const struct cuda_win_blob *peer, int same_process,
                             struct bt_win_map *map)
{
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
    map->opened[0] = data;
    map->opened[1] = flags;
    map->base = (char *)data + peer->data_off;
    map->flags = (struct bt_win_flags *)flags;
    return BT_OK;
}

bt_status_t bt_cuda_win_open(const struct bt_exec_comm *ec, int peer, int same_process,
                             const void *blob, struct bt_win_map *map)
{
    const struct bt_peer_info *me = &ec->tctx->peers[ec->rank], *p = &ec->tctx->peers[peer];
    memset(map, 0, sizeof(*map));
    if (!same_process && p->shm_ns != me->shm_ns) /* CUDA IPC handles open only there */
        return BT_ERR_INVALID_USAGE;
    int prev = bt_device_get();
    bt_status_t st = bt_device_set(ec->dev);
    if (st == BT_OK)
        st = open_blob(blob, same_process, map);
    if (prev >= 0)
        (void)bt_device_set(prev);
    return st;
}

void bt_cuda_win_close(struct bt_win_map *map)
{
    if (map->opened[0] && cudaIpcCloseMemHandle(map->opened[0]) != cudaSuccess)
        (void)cudaGetLastError();
    if (map->opened[1] && cudaIpcCloseMemHandle(map->opened[1]) != cudaSuccess)
        (void)cudaGetLastError();
    memset(map, 0, sizeof(*map));
}
