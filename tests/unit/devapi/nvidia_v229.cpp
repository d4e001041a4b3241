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
    if (kind == BT_DEVAPI_GFD2_INLINE) {
        g.qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow = (uint32_t)BT_DEVAPI_GFD_INLINE;
        g.qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow2 =
            (uint16_t)(BT_DEVAPI_GFD_INLINE >> 32);
        g.qword[ncclGinProxyGfdInlineHigh].inlineHigh.inlineValHigh =
            (uint16_t)(BT_DEVAPI_GFD_INLINE >> 48);
    } else if (kind == BT_DEVAPI_GFD2_VA_SIGNAL) {
        g.qword[ncclGinProxyGfdVASignalOff].vaSignalOff.vaSignalOff = BT_DEVAPI_GFD_SRC_OFF;
        g.qword[ncclGinProxyGfdVASignalHandle].vaSignalHandle.vaSignalHandle =
            BT_DEVAPI_GFD_SRC_HANDLE;
    } else {
        g.qword[ncclGinProxyGfdSrcOff].srcOff.srcOff = BT_DEVAPI_GFD_SRC_OFF;
        g.qword[ncclGinProxyGfdSrcHandle].srcHandle.srcHandle = BT_DEVAPI_GFD_SRC_HANDLE;
    }
    g.qword[ncclGinProxyGfdDstOff].dstOff.dstOff = BT_DEVAPI_GFD_DST_OFF;
    g.qword[ncclGinProxyGfdDstHandle].dstHandle.dstHandle = BT_DEVAPI_GFD_DST_HANDLE;
    g.qword[ncclGinProxyGfdCompletion].completion.counterId = BT_DEVAPI_GFD2_COUNTER;
    g.qword[ncclGinProxyGfdCompletion].completion.signalId = BT_DEVAPI_GFD2_SIGNAL;
    g.qword[ncclGinProxyGfdCompletion].completion.signalValLow =
        (uint16_t)BT_DEVAPI_GFD_SIGNAL_VALUE;
    g.qword[ncclGinProxyGfdSignalVal].signalVal.signalValLow2 =
        (uint16_t)(BT_DEVAPI_GFD_SIGNAL_VALUE >> 16);
    g.qword[ncclGinProxyGfdSignalVal].signalVal.signalValHigh =
        (uint32_t)(BT_DEVAPI_GFD_SIGNAL_VALUE >> 32);
    memcpy(out, &g, sizeof(g));
}
