/*
 * unit/test_devapi_layout's reference side: the layouts as NVIDIA's nccl_device.h (2.28.9)
 * defines them, compiled against that header alone (Baton's headers are not on this file's
 * include path: both define the same names).
 */
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <nccl_device.h>
#include <nccl_device/gin/proxy/gin_proxy_device_host_common.h> /* not in nccl_device.h */

#include "fields.h"

extern "C" const struct bt_devapi_row bt_devapi_nvidia[];
BT_DEVAPI_TABLE(bt_devapi_nvidia);

/* The descriptor of fields.h, written through NVIDIA's own field definitions. */
extern "C" void bt_devapi_nvidia_gfd(int inline_data, uint64_t out[8])
{
    ncclGinProxyGfd_t g;
    memset(&g, 0, sizeof(g));
    int op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd;
    if (inline_data)
        op |= ncclGinProxyOpWithInline;
    g.qword[ncclGinProxyGfdHeader].header.flag = 1;
    g.qword[ncclGinProxyGfdHeader].header.op = op;
    g.qword[ncclGinProxyGfdHeader].header.size = BT_DEVAPI_GFD_SIZE;
    if (inline_data) {
        g.qword[ncclGinProxyGfdInlineLow].inlineLow.flag = 1;
        g.qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow = (uint32_t)BT_DEVAPI_GFD_INLINE;
        g.qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow2 =
            (uint16_t)(BT_DEVAPI_GFD_INLINE >> 32);
        g.qword[ncclGinProxyGfdInlineHigh].inlineHigh.flag = 1;
        g.qword[ncclGinProxyGfdInlineHigh].inlineHigh.inlineValHigh =
            (uint16_t)(BT_DEVAPI_GFD_INLINE >> 48);
    } else {
        g.qword[ncclGinProxyGfdSrcOff].srcOff.flag = 1;
        g.qword[ncclGinProxyGfdSrcOff].srcOff.srcOff = BT_DEVAPI_GFD_SRC_OFF;
        g.qword[ncclGinProxyGfdSrcHandle].srcHandle.flag = 1;
        g.qword[ncclGinProxyGfdSrcHandle].srcHandle.srcHandle = BT_DEVAPI_GFD_SRC_HANDLE;
    }
    g.qword[ncclGinProxyGfdDstOff].dstOff.flag = 1;
    g.qword[ncclGinProxyGfdDstOff].dstOff.dstOff = BT_DEVAPI_GFD_DST_OFF;
    g.qword[ncclGinProxyGfdDstHandle].dstHandle.flag = 1;
    g.qword[ncclGinProxyGfdDstHandle].dstHandle.dstHandle = BT_DEVAPI_GFD_DST_HANDLE;
    g.qword[ncclGinProxyGfdCompletion].completion.flag = 1;
    g.qword[ncclGinProxyGfdCompletion].completion.counterId = BT_DEVAPI_GFD_COUNTER;
    g.qword[ncclGinProxyGfdCompletion].completion.signalId = BT_DEVAPI_GFD_SIGNAL;
    g.qword[ncclGinProxyGfdCompletion].completion.signalValLow =
        (uint16_t)BT_DEVAPI_GFD_SIGNAL_VALUE;
    g.qword[ncclGinProxyGfdSignalVal].signalVal.flag = 1;
    g.qword[ncclGinProxyGfdSignalVal].signalVal.signalValLow2 =
        (uint16_t)(BT_DEVAPI_GFD_SIGNAL_VALUE >> 16);
    g.qword[ncclGinProxyGfdSignalVal].signalVal.signalValHigh =
        (uint32_t)(BT_DEVAPI_GFD_SIGNAL_VALUE >> 32);
    g.qword[ncclGinProxyGfdReserved].flag.v = 1;
    for (int i = 0; i < 8; i++)
        out[i] = g.qword[i].raw;
}
