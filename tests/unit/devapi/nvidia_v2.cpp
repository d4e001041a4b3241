/*
 * unit/test_devapi_layout's reference side for NCCL 2.30.7's layouts: NVIDIA's 2.30.7
 * headers alone on this file's include path (tests/gpu/lab/nvidia_headers.sh makes them);
 * built where a lab build sets BATON_NVIDIA_DEVAPI_V2_DIR.
 */
#include <cstddef>
#include <cstdint>

#include <nccl_device.h>

#include "fields.h"
#include "fields_v2.h"

extern "C" const struct bt_devapi_row bt_devapi_nvidia_v2[];
BT_DEVAPI_V2_TABLE(bt_devapi_nvidia_v2, struct ncclDevComm, struct ncclDevCommRequirements,
                   struct ncclSegmentWindow, struct ncclWindow_vidmem);

/* NCCL 2.30.7's GIN proxy context and descriptors, as its own header lays them out, for
 * unit/test_devapi_layout to set against transport/gin_proxy.h's. */
#include <cstring>

#include <nccl_device/gin/proxy/gin_proxy_device_host_common.h>

#include "gfd_fields.h"

extern "C" const long long bt_devapi_nvidia_v2_ctx[] = {
    (long long)sizeof(ncclGinProxyGpuCtx_t),
    (long long)offsetof(ncclGinProxyGpuCtx_t, nranks),
    (long long)offsetof(ncclGinProxyGpuCtx_t, queueSize),
    (long long)offsetof(ncclGinProxyGpuCtx_t, queues),
    (long long)offsetof(ncclGinProxyGpuCtx_t, pis),
    (long long)offsetof(ncclGinProxyGpuCtx_t, cis),
    (long long)offsetof(ncclGinProxyGpuCtx_t, counters),
    (long long)offsetof(ncclGinProxyGpuCtx_t, signals),
    (long long)offsetof(ncclGinProxyGpuCtx_t, signalOffsets),
    (long long)offsetof(ncclGinProxyGpuCtx_t, lastIssuedGet),
    (long long)offsetof(ncclGinProxyGpuCtx_t, lastVisibleGet),
    (long long)sizeof(ncclGinProxyGfd_t),
    -1};

/* A descriptor of kind (BT_DEVAPI_GFD2_*: fields.h's values), every qword flagged as the
 * device code leaves them. */
extern "C" void bt_devapi_nvidia_v2_gfd(int kind, uint64_t out[16])
{
    ncclGinProxyGfd_t g;
    memset(&g, 0, sizeof(g));
    for (int i = 0; i < ncclGinProxyGfdQwords; i++)
        g.qword[i].flag.v = 1;
    int op = 0;
    switch (kind) {
    case BT_DEVAPI_GFD2_PUT:
        op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd;
        break;
    case BT_DEVAPI_GFD2_INLINE:
        op = ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithSignalInc;
        break;
    case BT_DEVAPI_GFD2_VA_SIGNAL:
        op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalAdd;
        break;
    case BT_DEVAPI_GFD2_GET:
        op = ncclGinProxyOpGet;
        break;
    default:
        op = ncclGinProxyOpFlush;
        break;
    }
    g.qword[ncclGinProxyGfdHeader].header.version = NCCL_GIN_PROXY_GFD_VERSION;
    g.qword[ncclGinProxyGfdHeader].header.size = kind == BT_DEVAPI_GFD2_FLUSH ? 0
                                                 : kind == BT_DEVAPI_GFD2_INLINE
                                                     ? 8
                                                     : BT_DEVAPI_GFD_SIZE;
    g.qword[ncclGinProxyGfdHeaderExt].headerExt.op = (uint16_t)op;
    if (kind != BT_DEVAPI_GFD2_FLUSH) {
        bt_devapi_gfd_fields(&g, kind);
        g.qword[ncclGinProxyGfdSignalVal].signalVal.isStrongSignal =
            kind == BT_DEVAPI_GFD2_PUT ? 1 : 0;
    }
    memcpy(out, &g, sizeof(g));
}
