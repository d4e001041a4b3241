/*
 * The device API's layouts, as a list both sides of unit/test_devapi_layout expand: each
 * F(type, field) is a field whose offset and size must agree, each S(type) a struct whose
 * size must, each V(name) a constant whose value must. `type` is spelled so that C and C++
 * accept it (a tag for tagged structs, the typedef for NCCL's untagged ones).
 */
#define BT_DEVAPI_LAYOUT(F, S, V)                                                                  \
    S(struct ncclWindow_vidmem)                                                                    \
    F(struct ncclWindow_vidmem, winHost)                                                           \
    F(struct ncclWindow_vidmem, lsaFlatBase)                                                       \
    F(struct ncclWindow_vidmem, lsaRank)                                                           \
    F(struct ncclWindow_vidmem, worldRank)                                                         \
    F(struct ncclWindow_vidmem, stride4G)                                                          \
    F(struct ncclWindow_vidmem, mcOffset4K)                                                        \
    F(struct ncclWindow_vidmem, ginOffset4K)                                                       \
    F(struct ncclWindow_vidmem, ginWins)                                                           \
    S(struct ncclDevCommWindowTable)                                                               \
    F(struct ncclDevCommWindowTable, entries)                                                      \
    F(struct ncclDevCommWindowTable, entries[1].base)                                              \
    F(struct ncclDevCommWindowTable, entries[1].size)                                              \
    F(struct ncclDevCommWindowTable, entries[1].window)                                            \
    F(struct ncclDevCommWindowTable, next)                                                         \
    S(struct ncclTeam)                                                                             \
    F(struct ncclTeam, nRanks)                                                                     \
    F(struct ncclTeam, rank)                                                                       \
    F(struct ncclTeam, stride)                                                                     \
    S(struct ncclMultimemHandle)                                                                   \
    F(struct ncclMultimemHandle, mcBasePtr)                                                        \
    S(struct ncclLsaBarrierHandle)                                                                 \
    F(struct ncclLsaBarrierHandle, bufHandle)                                                      \
    F(struct ncclLsaBarrierHandle, nBarriers)                                                      \
    S(struct ncclGinBarrierHandle)                                                                 \
    F(struct ncclGinBarrierHandle, signal0)                                                        \
    F(struct ncclGinBarrierHandle, bufHandle)                                                      \
    S(struct ncclLLA2AHandle)                                                                      \
    F(struct ncclLLA2AHandle, bufHandle)                                                           \
    F(struct ncclLLA2AHandle, nSlots)                                                              \
    S(struct ncclDevComm)                                                                          \
    F(struct ncclDevComm, rank)                                                                    \
    F(struct ncclDevComm, nRanks)                                                                  \
    F(struct ncclDevComm, nRanks_rcp32)                                                            \
    F(struct ncclDevComm, lsaRank)                                                                 \
    F(struct ncclDevComm, lsaSize)                                                                 \
    F(struct ncclDevComm, lsaSize_rcp32)                                                           \
    F(struct ncclDevComm, windowTable)                                                             \
    F(struct ncclDevComm, resourceWindow)                                                          \
    F(struct ncclDevComm, resourceWindow_inlined)                                                  \
    F(struct ncclDevComm, lsaMultimem)                                                             \
    F(struct ncclDevComm, lsaBarrier)                                                              \
    F(struct ncclDevComm, railGinBarrier)                                                          \
    F(struct ncclDevComm, ginContextCount)                                                         \
    F(struct ncclDevComm, ginTypes)                                                                \
    F(struct ncclDevComm, ginHandles)                                                              \
    F(struct ncclDevComm, ginSignalBase)                                                           \
    F(struct ncclDevComm, ginSignalCount)                                                          \
    F(struct ncclDevComm, ginCounterBase)                                                          \
    F(struct ncclDevComm, ginCounterCount)                                                         \
    F(struct ncclDevComm, ginSignalShadows)                                                        \
    S(struct ncclDevResourceRequirements)                                                          \
    F(struct ncclDevResourceRequirements, next)                                                    \
    F(struct ncclDevResourceRequirements, bufferSize)                                              \
    F(struct ncclDevResourceRequirements, bufferAlign)                                             \
    F(struct ncclDevResourceRequirements, outBufferHandle)                                         \
    F(struct ncclDevResourceRequirements, ginSignalCount)                                          \
    F(struct ncclDevResourceRequirements, ginCounterCount)                                         \
    F(struct ncclDevResourceRequirements, outGinSignalStart)                                       \
    F(struct ncclDevResourceRequirements, outGinCounterStart)                                      \
    S(struct ncclTeamRequirements)                                                                 \
    F(struct ncclTeamRequirements, next)                                                           \
    F(struct ncclTeamRequirements, team)                                                           \
    F(struct ncclTeamRequirements, multimem)                                                       \
    F(struct ncclTeamRequirements, outMultimemHandle)                                              \
    S(struct ncclDevCommRequirements)                                                              \
    F(struct ncclDevCommRequirements, resourceRequirementsList)                                    \
    F(struct ncclDevCommRequirements, teamRequirementsList)                                        \
    F(struct ncclDevCommRequirements, lsaMultimem)                                                 \
    F(struct ncclDevCommRequirements, barrierCount)                                                \
    F(struct ncclDevCommRequirements, lsaBarrierCount)                                             \
    F(struct ncclDevCommRequirements, railGinBarrierCount)                                         \
    F(struct ncclDevCommRequirements, lsaLLA2ABlockCount)                                          \
    F(struct ncclDevCommRequirements, lsaLLA2ASlotCount)                                           \
    F(struct ncclDevCommRequirements, ginForceEnable)                                              \
    F(struct ncclDevCommRequirements, ginContextCount)                                             \
    F(struct ncclDevCommRequirements, ginSignalCount)                                              \
    F(struct ncclDevCommRequirements, ginCounterCount)                                             \
    S(ncclGinProxyGfd_t)                                                                           \
    F(ncclGinProxyGfd_t, qword)                                                                    \
    S(ncclGinProxyGpuCtx_t)                                                                        \
    F(ncclGinProxyGpuCtx_t, nranks)                                                                \
    F(ncclGinProxyGpuCtx_t, queueSize)                                                             \
    F(ncclGinProxyGpuCtx_t, queues)                                                                \
    F(ncclGinProxyGpuCtx_t, pis)                                                                   \
    F(ncclGinProxyGpuCtx_t, cis)                                                                   \
    F(ncclGinProxyGpuCtx_t, counters)                                                              \
    F(ncclGinProxyGpuCtx_t, signals)                                                               \
    S(ncclDevResourceHandle_t)                                                                     \
    S(ncclGinSignal_t)                                                                             \
    S(ncclGinCounter_t)                                                                            \
    S(ncclGinWindow_t)                                                                             \
    V(NCCL_GIN_MAX_CONTEXTS)                                                                       \
    V(NCCL_GIN_PROXY_VERSION)                                                                      \
    V(ncclGinSignalInc)                                                                            \
    V(ncclGinSignalAdd)                                                                            \
    V(ncclGinProxyOpPut)                                                                           \
    V(ncclGinProxyOpBaseMask)                                                                      \
    V(ncclGinProxyOpWithInline)                                                                    \
    V(ncclGinProxyOpWithCounter)                                                                   \
    V(ncclGinProxyOpWithSignalInc)                                                                 \
    V(ncclGinProxyOpWithSignalAdd)                                                                 \
    V(ncclGinProxyOpComplMask)                                                                     \
    V(ncclGinProxyGfdHeader)                                                                       \
    V(ncclGinProxyGfdInlineLow)                                                                    \
    V(ncclGinProxyGfdInlineHigh)                                                                   \
    V(ncclGinProxyGfdSrcOff)                                                                       \
    V(ncclGinProxyGfdSrcHandle)                                                                    \
    V(ncclGinProxyGfdDstOff)                                                                       \
    V(ncclGinProxyGfdDstHandle)                                                                    \
    V(ncclGinProxyGfdCompletion)                                                                   \
    V(ncclGinProxyGfdSignalVal)                                                                    \
    V(ncclGinProxyGfdReserved)                                                                     \
    V(ncclGinProxyGfdQwords)

/* One row of a side's table: a field (offset, size), a struct or type (0, size) or a
 * constant (value, 0). */
struct bt_devapi_row {
    const char *name;
    long long a, b;
};

#define BT_DEVAPI_ROW_F(T, f)                                                                      \
    {#T "." #f, (long long)offsetof(T, f), (long long)sizeof(((T *)0)->f)},
#define BT_DEVAPI_ROW_S(T) {"sizeof " #T, 0, (long long)sizeof(T)},
#define BT_DEVAPI_ROW_V(v) {#v, (long long)(v), 0},
#define BT_DEVAPI_TABLE(name)                                                                      \
    const struct bt_devapi_row name[] = {                                                          \
        BT_DEVAPI_LAYOUT(BT_DEVAPI_ROW_F, BT_DEVAPI_ROW_S, BT_DEVAPI_ROW_V){NULL, 0, 0}}

/* A descriptor with every field set to a known value: a put of 0x123456789 bytes from
 * offset 0x0abcdef012345 of window 0x1f2e3d4c5b6a7 to offset 0x76543210fedcb of window
 * 0x2468ace13579b, counting in counter 0x1234 and adding 0x123456789abcdef0 to signal 0x5678
 * (`inline_data` 0); or an inline put of the 8 bytes 0x0123456789abcdef. Every flag set. */
#define BT_DEVAPI_GFD_SIZE 0x123456789ull
#define BT_DEVAPI_GFD_SRC_OFF 0x0abcdef012345ull
#define BT_DEVAPI_GFD_SRC_HANDLE 0x1f2e3d4c5b6a7ull
#define BT_DEVAPI_GFD_DST_OFF 0x76543210fedcbull
#define BT_DEVAPI_GFD_DST_HANDLE 0x2468ace13579bull
#define BT_DEVAPI_GFD_COUNTER 0x1234u
#define BT_DEVAPI_GFD_SIGNAL 0x5678u
#define BT_DEVAPI_GFD_SIGNAL_VALUE 0x123456789abcdef0ull
#define BT_DEVAPI_GFD_INLINE 0x0123456789abcdefull
