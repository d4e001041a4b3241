/*
 * Windows on GPU memory (exec/exec.h's win_* of the CUDA executor; core/window.c registers them
 * collectively). Each rank exports its window and the barrier flags its window kernels use
 * (struct bt_win_flags, one cudaMalloc of its own, shared through CUDA IPC); every rank maps
 * every peer's, in one of two ways:
 *   - VMM memory (ncclMemAlloc's, CUMEM_ENABLE=1): the window's allocation is mapped again,
 *     with every peer's, into one virtual range the exporter reserves, rank r's at
 *     r * stride (a multiple of 4 GiB): NCCL's device API layout (ncclWindow_vidmem's
 *     lsaFlatBase and stride4G). A peer of this process maps the allocation's handle; a
 *     peer of another process imports it from the file descriptor the exporter hands out
 *     (util/fdpass.h). Every rank's window must sit at the same offset in allocations of
 *     the same stride (a symmetric registration of ncclMemAlloc buffers does).
 *   - other device memory (cudaMalloc): the plain pointers when the peer is this process,
 *     else cudaIpcOpenMemHandle of the allocation that holds the window.
 * Either needs the same host and IPC namespace.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/cuda_vmm.h"
#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "exec/exec.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/param.h"

static bt_status_t cuda_status(cudaError_t e, const char *what)
{
    return bt_device_error((int)e, what);
}

#define STRIDE_UNIT (1ull << 32) /* the device API's stride4G counts 4 GiB */

/* What a rank tells its peers of its GPU window. */
struct cuda_win_blob {
    void *base;                 /* the window, in the exporter's address space */
    struct bt_win_flags *flags; /* its barrier flags (device memory it allocated) */
    int dev;
    int vmm;                        /* VMM memory: alloc_bytes..fd_name; else data_handle */
    uint64_t data_off;              /* the window's offset in its allocation */
    unsigned char flags_handle[64]; /* cudaIpcMemHandle_t of the flags */
    unsigned char data_handle[64];  /* cudaIpcMemHandle_t of the allocation */
    uint64_t alloc_bytes, stride;   /* VMM: the allocation's size; the flat range's stride */
    uint64_t handle;                /* VMM: its CUmemGenericAllocationHandle (this process) */
    char fd_name[BT_FD_NAME_BYTES]; /* VMM: where its file descriptor is handed out */
};
_Static_assert(sizeof(struct cuda_win_blob) <= BT_WIN_BLOB_BYTES, "GPU window blob too large");
_Static_assert(sizeof(cudaIpcMemHandle_t) <= 64, "cudaIpcMemHandle_t larger than its field");

/* This rank's VMM export (mine->priv): the flat range and what serves the peers. */
struct vmm_export {
    CUmemGenericAllocationHandle handle; /* retained until unexport: this process's peers map it */
    CUdeviceptr range;                   /* nranks * stride, reserved */
    uint64_t range_bytes, alloc_bytes, stride;
    int rank;
    int fd;                      /* the allocation as a file descriptor, or -1 */
    struct bt_fd_server *server; /* hands it to this host's other processes, or NULL */
};

/* map->priv of a peer's mapping in the flat range (map->opened[0]: where, len[0]: bytes). */
static char vmm_peer_mark;

/* The ranks of this host in other processes: the ones that will fetch the descriptor. */
static int other_processes(const struct bt_exec_comm *ec)
{
    const struct bt_peer_info *me = &ec->tctx->peers[ec->rank];
    int n = 0;
    for (int r = 0; r < ec->nranks; r++) {
        const struct bt_peer_info *p = &ec->tctx->peers[r];
        n += r != ec->rank && p->host_hash == me->host_hash &&
             !(p->pid == me->pid && p->pid_ns == me->pid_ns);
    }
    return n;
}

static void vmm_unexport(struct vmm_export *x)
{
    const struct bt_vmm *v = bt_vmm();
    bt_fd_serve_stop(x->server);
    if (x->fd >= 0)
        close(x->fd);
    if (x->range) {
        v->unmap(x->range + (CUdeviceptr)x->rank * x->stride, x->alloc_bytes);
        v->addr_free(x->range, x->range_bytes);
    }
    v->release(x->handle);
    free(x);
}

/* The VMM half of an export: the flat range with this rank's own part mapped, the handle
 * and the file descriptor for the peers. BT_ERR_INVALID_ARG: not VMM memory. */
static bt_status_t vmm_export(const struct bt_exec_comm *ec, char *buf, struct cuda_win_blob *b,
                              struct bt_win_map *mine)
{
    const struct bt_vmm *v = bt_param_cumem_enable() ? bt_vmm() : NULL;
    struct vmm_export *x = NULL;
    CUmemGenericAllocationHandle h;
    if (!v || v->retain(&h, buf) != CUDA_SUCCESS)
        return BT_ERR_INVALID_ARG;
    x = calloc(1, sizeof(*x));
    if (!x) {
        v->release(h);
        return BT_ERR_SYSTEM;
    }
    x->handle = h;
    x->fd = -1;
    x->rank = ec->rank;
    CUdeviceptr abase = 0;
    size_t abytes = 0;
    bt_status_t st = BT_ERR_CUDA;
    if (v->range(&abase, &abytes, (CUdeviceptr)(uintptr_t)buf) != CUDA_SUCCESS)
        goto fail;
    x->alloc_bytes = abytes;
    x->stride = (abytes + STRIDE_UNIT - 1) / STRIDE_UNIT * STRIDE_UNIT;
    x->range_bytes = x->stride * (uint64_t)ec->nranks;
    if (v->reserve(&x->range, x->range_bytes, 0, 0, 0) != CUDA_SUCCESS) {
        BT_INFO(BT_LOG_INIT, "window: no %llu bytes of address range to map %d ranks' windows",
                (unsigned long long)x->range_bytes, ec->nranks);
        x->range = 0;
        goto fail;
    }
    st = bt_vmm_map(v, x->range + (CUdeviceptr)ec->rank * x->stride, abytes, h, ec->dev);
    if (st != BT_OK) {
        v->addr_free(x->range, x->range_bytes);
        x->range = 0;
        goto fail;
    }
    int others = other_processes(ec);
    if (others > 0) {
        int fd = -1;
        st = BT_ERR_CUDA;
        if (v->export_fd(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS) {
            BT_INFO(BT_LOG_INIT, "window: the allocation cannot be exported as a descriptor");
            goto fail;
        }
        x->fd = fd;
        st = bt_fd_serve(fd, others, b->fd_name, &x->server);
        if (st != BT_OK)
            goto fail;
    }
    b->vmm = 1;
    b->data_off = (uint64_t)(buf - (char *)(uintptr_t)abase);
    b->alloc_bytes = abytes;
    b->stride = x->stride;
    b->handle = (uint64_t)h;
    mine->priv = x;
    mine->stride = x->stride;
    mine->flat = (char *)(uintptr_t)x->range + b->data_off;
    return BT_OK;

fail:
    vmm_unexport(x);
    return st;
}

/* The start of the allocation that holds `p` (device memory from cudaMalloc). */
static bt_status_t alloc_base(const void *p, char **base_p)
{
    const struct bt_vmm *v = bt_vmm();
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!v || v->range(&base, &size, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) {
        BT_WARN("window: %p is not in a device allocation", p);
        return BT_ERR_INVALID_ARG;
    }
    *base_p = (char *)(uintptr_t)base;
    return BT_OK;
}

/* The blob of the window at `buf` (device memory of the current device), with its zeroed
 * flags allocated: the VMM export where the memory is VMM, else a CUDA IPC handle. */
static bt_status_t export_blob(const struct bt_exec_comm *ec, void *buf, struct cuda_win_blob *out,
                               struct bt_win_map *mine)
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
    if (st == BT_OK)
        st = cuda_status(cudaIpcGetMemHandle((cudaIpcMemHandle_t *)out->flags_handle, out->flags),
                         "cudaIpcGetMemHandle (window flags)");
    if (st == BT_OK) {
        st = vmm_export(ec, buf, out, mine);
        if (st == BT_ERR_INVALID_ARG) { /* not VMM memory */
            char *abase = NULL;
            st = alloc_base(buf, &abase);
            if (st == BT_OK) {
                out->data_off = (uint64_t)((char *)buf - abase);
                st = cuda_status(cudaIpcGetMemHandle((cudaIpcMemHandle_t *)out->data_handle, abase),
                                 "cudaIpcGetMemHandle (window)");
            }
        }
    }
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
    memset(mine, 0, sizeof(*mine));
    bt_status_t st = bt_device_set(ec->dev);
    if (st == BT_OK)
        st = export_blob(ec, buf, b, mine);
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st != BT_OK)
        return 0;
    mine->base = buf;
    mine->flags = b->flags;
    return 1;
}

void bt_cuda_win_unexport(struct bt_win_map *mine)
{
    if (mine->priv)
        vmm_unexport(mine->priv);
    if (mine->flags)
        cudaFree(mine->flags);
    memset(mine, 0, sizeof(*mine));
}

/* Map a peer's VMM allocation into this rank's flat range, at the peer's place. */
static bt_status_t vmm_open(const struct bt_exec_comm *ec, int peer, int same_process,
                            const struct vmm_export *x, const struct cuda_win_blob *b,
                            struct bt_win_map *map)
{
    const struct bt_vmm *v = bt_vmm();
    CUmemGenericAllocationHandle h = (CUmemGenericAllocationHandle)b->handle;
    int imported = 0;
    if (!same_process) {
        int fd = -1;
        BT_CHECK(bt_fd_fetch(b->fd_name, 1000 * (int)bt_param_timeout(), &fd));
        CUresult r =
            v->import_fd(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        close(fd);
        if (r != CUDA_SUCCESS) {
            BT_WARN("window: importing rank %d's allocation failed: CUresult %d", peer, (int)r);
            return BT_ERR_CUDA;
        }
        imported = 1;
    }
    CUdeviceptr at = x->range + (CUdeviceptr)peer * x->stride;
    bt_status_t st = bt_vmm_map(v, at, b->alloc_bytes, h, ec->dev);
    if (imported)
        v->release(h); /* the mapping keeps the memory */
    if (st != BT_OK)
        return st;
    map->opened[0] = (void *)(uintptr_t)at;
    map->len[0] = b->alloc_bytes;
    map->priv = &vmm_peer_mark;
    map->base = (char *)(uintptr_t)at + b->data_off;
    return BT_OK;
}

/* Map a peer's blob with the communicator's device current. */
static bt_status_t open_blob(const struct bt_exec_comm *ec, int peer, int same_process,
                             const struct bt_win_map *mine, const struct cuda_win_blob *b,
                             struct bt_win_map *map)
{
    const struct vmm_export *x = mine->priv;
    if (b->vmm != (x != NULL) ||
        (x && (b->stride != x->stride ||
               b->data_off != (uint64_t)(mine->flat - (char *)(uintptr_t)x->range)))) {
        BT_INFO(BT_LOG_INIT,
                "window: rank %d's window is %s at offset %llu (stride %llu); this "
                "rank's cannot be mapped with it",
                peer, b->vmm ? "VMM memory" : "not VMM memory", (unsigned long long)b->data_off,
                (unsigned long long)b->stride);
        return BT_ERR_INVALID_USAGE;
    }
    int dev = -1;
    BT_CHECK(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    if (same_process && b->dev != dev) { /* its flags (and cudaMalloc memory) by pointer */
        cudaError_t e = cudaDeviceEnablePeerAccess(b->dev, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled)
            (void)cudaGetLastError();
        else if (e != cudaSuccess)
            return cuda_status(e, "cudaDeviceEnablePeerAccess (window)");
    }
    void *flags = NULL;
    if (same_process) {
        flags = b->flags;
    } else {
        cudaIpcMemHandle_t h;
        memcpy(&h, b->flags_handle, sizeof(h));
        BT_CHECK(cuda_status(cudaIpcOpenMemHandle(&flags, h, cudaIpcMemLazyEnablePeerAccess),
                             "cudaIpcOpenMemHandle (a peer's window flags)"));
        map->opened[1] = flags;
    }
    map->flags = (struct bt_win_flags *)flags;
    if (x)
        return vmm_open(ec, peer, same_process, x, b, map);
    if (same_process) {
        map->base = (char *)b->base;
        return BT_OK;
    }
    void *data = NULL;
    cudaIpcMemHandle_t h;
    memcpy(&h, b->data_handle, sizeof(h));
    BT_CHECK(cuda_status(cudaIpcOpenMemHandle(&data, h, cudaIpcMemLazyEnablePeerAccess),
                         "cudaIpcOpenMemHandle (a peer's window)"));
    map->opened[0] = data;
    map->base = (char *)data + b->data_off;
    return BT_OK;
}

bt_status_t bt_cuda_win_open(const struct bt_exec_comm *ec, int peer, int same_process,
                             const struct bt_win_map *mine, const void *blob,
                             struct bt_win_map *map)
{
    const struct bt_peer_info *me = &ec->tctx->peers[ec->rank], *p = &ec->tctx->peers[peer];
    memset(map, 0, sizeof(*map));
    if (!same_process && p->shm_ns != me->shm_ns) /* IPC handles open only there */
        return BT_ERR_INVALID_USAGE;
    int prev = bt_device_get();
    bt_status_t st = bt_device_set(ec->dev);
    if (st == BT_OK)
        st = open_blob(ec, peer, same_process, mine, blob, map);
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st != BT_OK)
        bt_cuda_win_close(map);
    return st;
}

void bt_cuda_win_close(struct bt_win_map *map)
{
    if (map->priv == &vmm_peer_mark) {
        bt_vmm()->unmap((CUdeviceptr)(uintptr_t)map->opened[0], map->len[0]);
    } else if (map->opened[0] && cudaIpcCloseMemHandle(map->opened[0]) != cudaSuccess) {
        (void)cudaGetLastError();
    }
    if (map->opened[1] && cudaIpcCloseMemHandle(map->opened[1]) != cudaSuccess)
        (void)cudaGetLastError();
    memset(map, 0, sizeof(*map));
}

bt_status_t bt_cuda_win_publish(const struct bt_exec_comm *ec, const void *vid, size_t bytes,
                                void **handle)
{
    int prev = bt_device_get();
    void *d = NULL;
    bt_status_t st = bt_device_set(ec->dev >= 0 ? ec->dev : (prev >= 0 ? prev : 0));
    if (st == BT_OK)
        st = cuda_status(cudaMalloc(&d, bytes), "cudaMalloc (window handle)");
    if (st == BT_OK) {
        st = cuda_status(cudaMemcpy(d, vid, bytes, cudaMemcpyHostToDevice),
                         "cudaMemcpy (window handle)");
        if (st != BT_OK)
            cudaFree(d);
    }
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st == BT_OK)
        *handle = d;
    return st;
}

bt_status_t bt_cuda_win_update(void *handle, size_t off, const void *src, size_t bytes)
{
    /* a copy to device memory goes to the memory's own device whichever is current */
    return cuda_status(cudaMemcpy((char *)handle + off, src, bytes, cudaMemcpyHostToDevice),
                       "cudaMemcpy (window handle update)");
}

void bt_cuda_win_unpublish(void *handle)
{
    if (cudaFree(handle) != cudaSuccess)
        (void)cudaGetLastError();
}
