/*
 * NCCL 2.30.7's device-API host structs, as Baton writes and reads them (core/devcomm_abi.h)
 * and as NVIDIA's 2.30.7 headers define them: F(T, name, field) a field whose offset and size
 * must agree (T the side's type, name NCCL's), S(T, name) a struct whose size must. NVIDIA's
 * side is built only where a lab build points BATON_NVIDIA_DEVAPI_V2_DIR at those headers
 * (tests/gpu/lab/nvidia_headers.sh makes them); CI pins the same offsets by static
 * assertions (src/core/devcomm_abi.c).
 */
#define BT_DEVAPI_LAYOUT_V2(F, S, DC, RQ, SEG, WIN)                                                \
    S(DC, "ncclDevComm")                                                                           \
    F(DC, "ncclDevComm", magic)                                                                    \
    F(DC, "ncclDevComm", version)                                                                  \
    F(DC, "ncclDevComm", rank)                                                                     \
    F(DC, "ncclDevComm", nRanks)                                                                   \
    F(DC, "ncclDevComm", nRanks_rcp32)                                                             \
    F(DC, "ncclDevComm", lsaRank)                                                                  \
    F(DC, "ncclDevComm", lsaSize)                                                                  \
    F(DC, "ncclDevComm", lsaSize_rcp32)                                                            \
    F(DC, "ncclDevComm", windowTable)                                                              \
    F(DC, "ncclDevComm", resourceWindow)                                                           \
    F(DC, "ncclDevComm", resourceWindow_inlined)                                                   \
    F(DC, "ncclDevComm", resourceWindow_inlined.lsaFlatBase)                                       \
    F(DC, "ncclDevComm", resourceWindow_inlined.stride4G)                                          \
    F(DC, "ncclDevComm", resourceWindow_inlined.mcOffset4K)                                        \
    F(DC, "ncclDevComm", hybridWorldGinBarrier)                                                    \
    F(DC, "ncclDevComm", lsaMultimem)                                                              \
    F(DC, "ncclDevComm", lsaBarrier)                                                               \
    F(DC, "ncclDevComm", railGinBarrier)                                                           \
    F(DC, "ncclDevComm", ginConnectionCount)                                                       \
    F(DC, "ncclDevComm", ginNetDeviceTypes)                                                        \
    F(DC, "ncclDevComm", ginHandles)                                                               \
    F(DC, "ncclDevComm", ginSignalCount)                                                           \
    F(DC, "ncclDevComm", ginCounterCount)                                                          \
    F(DC, "ncclDevComm", ginSignalShadows)                                                         \
    F(DC, "ncclDevComm", ginContextCount)                                                          \
    F(DC, "ncclDevComm", ginConnectionsRailed)                                                     \
    F(DC, "ncclDevComm", ginStrongLegacySignals)                                                   \
    F(DC, "ncclDevComm", ginContextsRailed)                                                        \
    F(DC, "ncclDevComm", abortFlag)                                                                \
    F(DC, "ncclDevComm", hybridLsaBarrier)                                                         \
    F(DC, "ncclDevComm", hybridRailGinBarrier)                                                     \
    F(DC, "ncclDevComm", worldGinBarrier)                                                          \
    S(RQ, "ncclDevCommRequirements")                                                               \
    F(RQ, "ncclDevCommRequirements", size)                                                         \
    F(RQ, "ncclDevCommRequirements", magic)                                                        \
    F(RQ, "ncclDevCommRequirements", version)                                                      \
    F(RQ, "ncclDevCommRequirements", resourceRequirementsList)                                     \
    F(RQ, "ncclDevCommRequirements", teamRequirementsList)                                         \
    F(RQ, "ncclDevCommRequirements", lsaMultimem)                                                  \
    F(RQ, "ncclDevCommRequirements", barrierCount)                                                 \
    F(RQ, "ncclDevCommRequirements", lsaBarrierCount)                                              \
    F(RQ, "ncclDevCommRequirements", railGinBarrierCount)                                          \
    F(RQ, "ncclDevCommRequirements", lsaLLA2ABlockCount)                                           \
    F(RQ, "ncclDevCommRequirements", lsaLLA2ASlotCount)                                            \
    F(RQ, "ncclDevCommRequirements", ginForceEnable)                                               \
    F(RQ, "ncclDevCommRequirements", ginContextCount)                                              \
    F(RQ, "ncclDevCommRequirements", ginSignalCount)                                               \
    F(RQ, "ncclDevCommRequirements", ginCounterCount)                                              \
    F(RQ, "ncclDevCommRequirements", ginConnectionType)                                            \
    F(RQ, "ncclDevCommRequirements", ginExclusiveContexts)                                         \
    F(RQ, "ncclDevCommRequirements", ginQueueDepth)                                                \
    F(RQ, "ncclDevCommRequirements", ginTrafficClass)                                              \
    F(RQ, "ncclDevCommRequirements", worldGinBarrierCount)                                         \
    F(RQ, "ncclDevCommRequirements", ginStrongSignalsRequired)                                     \
    F(RQ, "ncclDevCommRequirements", ginVaSignalsRequired)                                         \
    S(struct ncclDevResourceRequirements, "ncclDevResourceRequirements")                           \
    F(struct ncclDevResourceRequirements, "ncclDevResourceRequirements", outGinCounterStart)       \
    S(struct ncclTeamRequirements, "ncclTeamRequirements")                                         \
    F(struct ncclTeamRequirements, "ncclTeamRequirements", outMultimemHandle)                      \
    S(struct ncclLsaBarrierHandle, "ncclLsaBarrierHandle")                                         \
    S(struct ncclGinBarrierHandle, "ncclGinBarrierHandle")                                         \
    S(struct ncclDevCommWindowTable, "ncclDevCommWindowTable")                                     \
    S(SEG, "ncclSegmentWindow")                                                                    \
    F(SEG, "ncclSegmentWindow", ginWins)                                                           \
    F(SEG, "ncclSegmentWindow", segmentSize)                                                       \
    F(SEG, "ncclSegmentWindow", memType)                                                           \
    F(WIN, "ncclWindow_vidmem", ginMultiSegmentWins)                                               \
    F(WIN, "ncclWindow_vidmem", numSegments)

#define BT_DEVAPI_V2_ROW_F(T, name, f)                                                             \
    {name "." #f, (long long)offsetof(T, f), (long long)sizeof(((T *)0)->f)},
#define BT_DEVAPI_V2_ROW_S(T, name) {"sizeof " name, 0, (long long)sizeof(T)},
#define BT_DEVAPI_V2_TABLE(tab, DC, RQ, SEG, WIN)                                                  \
    const struct bt_devapi_row tab[] = {                                                           \
        BT_DEVAPI_LAYOUT_V2(BT_DEVAPI_V2_ROW_F, BT_DEVAPI_V2_ROW_S, DC, RQ, SEG, WIN){NULL, 0, 0}}

/* NCCL 2.30.5+'s GIN proxy descriptors (version 2, 16 qwords), one of each kind, fields as
 * fields.h's descriptor has them but for ids of 2.30's widths (23-bit counter, 24-bit signal):
 * a put adding to a signal and counting (strong), an 8-byte inline put incrementing a signal,
 * a VA signal (its word at the source fields), a get (from the source fields), a flush. */
#define BT_DEVAPI_GFD2_PUT 0
#define BT_DEVAPI_GFD2_INLINE 1
#define BT_DEVAPI_GFD2_VA_SIGNAL 2
#define BT_DEVAPI_GFD2_GET 3
#define BT_DEVAPI_GFD2_FLUSH 4
#define BT_DEVAPI_GFD2_KINDS 5
#define BT_DEVAPI_GFD2_COUNTER 0x6a5b3cu
#define BT_DEVAPI_GFD2_SIGNAL 0xa1b2c3u
