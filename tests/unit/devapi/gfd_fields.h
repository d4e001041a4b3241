/*
 * The fields NCCL 2.29.5+'s and 2.30.5+'s GIN proxy descriptors share (the source or inline
 * value or VA signal word, the destination, the completion word, the signal value), set through
 * NVIDIA's bitfields to fields_v2.h's values for a descriptor of `kind`: included by the
 * reference file of each release (nvidia_v229.cpp, nvidia_v2.cpp), after that release's
 * gin_proxy_device_host_common.h. The header words (op, size, version) and 2.30's strong bit
 * differ between them and stay with their file.
 */
#ifndef BT_DEVAPI_GFD_FIELDS_H
#define BT_DEVAPI_GFD_FIELDS_H

static void bt_devapi_gfd_fields(ncclGinProxyGfd_t *g, int kind)
{
    if (kind == BT_DEVAPI_GFD2_INLINE) {
        g->qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow = (uint32_t)BT_DEVAPI_GFD_INLINE;
        g->qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow2 =
            (uint16_t)(BT_DEVAPI_GFD_INLINE >> 32);
        g->qword[ncclGinProxyGfdInlineHigh].inlineHigh.inlineValHigh =
            (uint16_t)(BT_DEVAPI_GFD_INLINE >> 48);
    } else if (kind == BT_DEVAPI_GFD2_VA_SIGNAL) {
        g->qword[ncclGinProxyGfdVASignalOff].vaSignalOff.vaSignalOff = BT_DEVAPI_GFD_SRC_OFF;
        g->qword[ncclGinProxyGfdVASignalHandle].vaSignalHandle.vaSignalHandle =
            BT_DEVAPI_GFD_SRC_HANDLE;
    } else {
        g->qword[ncclGinProxyGfdSrcOff].srcOff.srcOff = BT_DEVAPI_GFD_SRC_OFF;
        g->qword[ncclGinProxyGfdSrcHandle].srcHandle.srcHandle = BT_DEVAPI_GFD_SRC_HANDLE;
    }
    g->qword[ncclGinProxyGfdDstOff].dstOff.dstOff = BT_DEVAPI_GFD_DST_OFF;
    g->qword[ncclGinProxyGfdDstHandle].dstHandle.dstHandle = BT_DEVAPI_GFD_DST_HANDLE;
    g->qword[ncclGinProxyGfdCompletion].completion.counterId = BT_DEVAPI_GFD2_COUNTER;
    g->qword[ncclGinProxyGfdCompletion].completion.signalId = BT_DEVAPI_GFD2_SIGNAL;
    g->qword[ncclGinProxyGfdCompletion].completion.signalValLow =
        (uint16_t)BT_DEVAPI_GFD_SIGNAL_VALUE;
    g->qword[ncclGinProxyGfdSignalVal].signalVal.signalValLow2 =
        (uint16_t)(BT_DEVAPI_GFD_SIGNAL_VALUE >> 16);
    g->qword[ncclGinProxyGfdSignalVal].signalVal.signalValHigh =
        (uint32_t)(BT_DEVAPI_GFD_SIGNAL_VALUE >> 32);
}

#endif
