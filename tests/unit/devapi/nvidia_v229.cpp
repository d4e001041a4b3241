/*
 * unit/test_devapi_layout's reference side for NCCL 2.29.5-2.29.7's GIN proxy descriptors:
 * NVIDIA's headers of such a release alone on this file's include path (lab builds set
 * BATON_NVIDIA_DEVAPI_V229_DIR; tests/gpu/lab/nvidia_headers.sh makes them).
 */
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <nccl_device/gin/proxy/gin_proxy_device_host_common.h>

#include "fields.h"
#include "fields_v2.h"
#include "gfd_fields.h"

extern "C" const long long bt_devapi_nvidia_v229_ctx = (long long)sizeof(ncclGinProxyGpuCtx_t);

/* A descriptor of kind (fields_v2.h's BT_DEVAPI_GFD2_PUT, _INLINE or _VA_SIGNAL: 2.29 has no
 * gets or flushes), every qword flagged as 2.29.7's device code leaves them. */
extern "C" void bt_devapi_nvidia_v229_gfd(int kind, uint64_t out[8])
{
    ncclGinProxyGfd_t g;
    memset(&g, 0, sizeof(g));
    for (int i = 0; i < ncclGinProxyGfdQwords; i++)
        g.qword[i].flag.v = 1;
    int op = kind == BT_DEVAPI_GFD2_PUT
                 ? ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd
             : kind == BT_DEVAPI_GFD2_INLINE
                 ? ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithSignalInc
                 : ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalAdd;
    g.qword[ncclGinProxyGfdHeader].header.op = op;
    g.qword[ncclGinProxyGfdHeader].header.size = kind == BT_DEVAPI_GFD2_INLINE ? 8
                                                 : kind == BT_DEVAPI_GFD2_VA_SIGNAL
                                                     ? 0
                                                     : BT_DEVAPI_GFD_SIZE;
    bt_devapi_gfd_fields(&g, kind);
    memcpy(out, &g, sizeof(g));
}
