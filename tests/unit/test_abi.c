/*
 * include/nccl.h against the NCCL ABI facts (2.28.9, and what 2.29-2.30.7 appended): enum
 * values, struct sizes and offsets, initializer contents, constants. A program built against
 * NVIDIA's header passes these structs and values to Baton, so every one of them must match bit for
 * bit. Also checks that the not-yet-supported entry points fail cleanly.
 */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "nccl.h"

#include "harness.h"
#include "util/log.h"

#define CHECK_EQ(a, b)                                                                             \
    BT_TEST_CHECK((long long)(a) == (long long)(b), "%s = %lld, expected %lld", #a,                \
                  (long long)(a), (long long)(b))

static void check_version(void)
{
    CHECK_EQ(NCCL_MAJOR, 2);
    CHECK_EQ(NCCL_MINOR, 28);
    CHECK_EQ(NCCL_PATCH, 9);
    BT_TEST_CHECK(strcmp(NCCL_SUFFIX, "") == 0, "NCCL_SUFFIX is \"%s\"", NCCL_SUFFIX);
    CHECK_EQ(NCCL_VERSION_CODE, 22809); /* the header's; the library reports 23007 */
    CHECK_EQ(NCCL_VERSION(2, 28, 9), 22809);
    CHECK_EQ(NCCL_VERSION(2, 30, 7), 23007);
    CHECK_EQ(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_VERSION_CODE);
    /* The old encoding up to 2.8, the new one from 2.9. */
    CHECK_EQ(NCCL_VERSION(2, 8, 4), 2804);
    CHECK_EQ(NCCL_VERSION(2, 9, 6), 20906);
    CHECK_EQ(NCCL_VERSION(3, 0, 0), 30000);
}

static void check_enums(void)
{
    CHECK_EQ(sizeof(ncclResult_t), 4);
    CHECK_EQ(ncclSuccess, 0);
    CHECK_EQ(ncclUnhandledCudaError, 1);
    CHECK_EQ(ncclSystemError, 2);
    CHECK_EQ(ncclInternalError, 3);
    CHECK_EQ(ncclInvalidArgument, 4);
    CHECK_EQ(ncclInvalidUsage, 5);
    CHECK_EQ(ncclRemoteError, 6);
    CHECK_EQ(ncclInProgress, 7);
    CHECK_EQ(ncclTimeout, 8);
    CHECK_EQ(ncclNumResults, 9);

    CHECK_EQ(sizeof(ncclDataType_t), 4);
    CHECK_EQ(ncclInt8, 0);
    CHECK_EQ(ncclChar, 0);
    CHECK_EQ(ncclUint8, 1);
    CHECK_EQ(ncclInt32, 2);
    CHECK_EQ(ncclInt, 2);
    CHECK_EQ(ncclUint32, 3);
    CHECK_EQ(ncclInt64, 4);
    CHECK_EQ(ncclUint64, 5);
    CHECK_EQ(ncclFloat16, 6);
    CHECK_EQ(ncclHalf, 6);
    CHECK_EQ(ncclFloat32, 7);
    CHECK_EQ(ncclFloat, 7);
    CHECK_EQ(ncclFloat64, 8);
    CHECK_EQ(ncclDouble, 8);
    CHECK_EQ(ncclBfloat16, 9);
    CHECK_EQ(ncclFloat8e4m3, 10);
    CHECK_EQ(ncclFloat8e5m2, 11);
    CHECK_EQ(ncclNumTypes, 12);

    CHECK_EQ(sizeof(ncclRedOp_t), 4);
    CHECK_EQ(ncclSum, 0);
    CHECK_EQ(ncclProd, 1);
    CHECK_EQ(ncclMax, 2);
    CHECK_EQ(ncclMin, 3);
    CHECK_EQ(ncclAvg, 4);
    CHECK_EQ(ncclNumOps, 5);
    CHECK_EQ(ncclMaxRedOp, 0x7fffffff);

    CHECK_EQ(sizeof(ncclScalarResidence_t), 4);
    CHECK_EQ(ncclScalarDevice, 0);
    CHECK_EQ(ncclScalarHostImmediate, 1);
}

static void check_constants(void)
{
    CHECK_EQ(NCCL_UNIQUE_ID_BYTES, 128);
    CHECK_EQ(sizeof(ncclUniqueId), 128);
    CHECK_EQ(NCCL_SPLIT_NOCOLOR, -1);
    CHECK_EQ(NCCL_CONFIG_UNDEF_INT, INT_MIN);
    BT_TEST_CHECK(NCCL_CONFIG_UNDEF_PTR == NULL, "NCCL_CONFIG_UNDEF_PTR is not NULL");
    BT_TEST_CHECK(NCCL_UNDEF_FLOAT == -1.0f, "NCCL_UNDEF_FLOAT is %f", (double)NCCL_UNDEF_FLOAT);
    CHECK_EQ(NCCL_WIN_DEFAULT, 0);
    CHECK_EQ(NCCL_WIN_COLL_SYMMETRIC, 1);
    CHECK_EQ(NCCL_WIN_STRICT_ORDERING, 2);
    CHECK_EQ(NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
    CHECK_EQ(NCCL_SUSPEND_MEM, 1);
    CHECK_EQ(ncclStatGpuMemSuspend, 0);
    CHECK_EQ(ncclStatGpuMemSuspended, 1);
    CHECK_EQ(ncclStatGpuMemPersist, 2);
    CHECK_EQ(ncclStatGpuMemTotal, 3);
    CHECK_EQ(sizeof(ncclCommMemStat_t), 4);
    CHECK_EQ(sizeof(ncclWaitSignalDesc_t), 16);
    CHECK_EQ(offsetof(ncclWaitSignalDesc_t, opCnt), 0);
    CHECK_EQ(offsetof(ncclWaitSignalDesc_t, peer), 4);
    CHECK_EQ(offsetof(ncclWaitSignalDesc_t, sigIdx), 8);
    CHECK_EQ(offsetof(ncclWaitSignalDesc_t, ctx), 12);
    CHECK_EQ(NCCL_CTA_POLICY_DEFAULT, 0);
    CHECK_EQ(NCCL_CTA_POLICY_EFFICIENCY, 1);
    CHECK_EQ(NCCL_CTA_POLICY_ZERO, 2);
    CHECK_EQ(NCCL_SHRINK_DEFAULT, 0);
    CHECK_EQ(NCCL_SHRINK_ABORT, 1);
    CHECK_EQ(NCCL_REVOKE_DEFAULT, 0);
    BT_TEST_CHECK(NCCL_COMM_NULL == NULL, "NCCL_COMM_NULL is not NULL");
}

static void check_config(void)
{
    /* The LP64 layout of struct ncclConfig_v23000: 2.28's 80 bytes, then 2.30's four ints. */
    CHECK_EQ(sizeof(ncclConfig_t), 96);
    CHECK_EQ(sizeof(struct ncclConfig_v23000), 96);
    CHECK_EQ(offsetof(ncclConfig_t, size), 0);
    CHECK_EQ(offsetof(ncclConfig_t, magic), 8);
    CHECK_EQ(offsetof(ncclConfig_t, version), 12);
    CHECK_EQ(offsetof(ncclConfig_t, blocking), 16);
    CHECK_EQ(offsetof(ncclConfig_t, cgaClusterSize), 20);
    CHECK_EQ(offsetof(ncclConfig_t, minCTAs), 24);
    CHECK_EQ(offsetof(ncclConfig_t, maxCTAs), 28);
    CHECK_EQ(offsetof(ncclConfig_t, netName), 32);
    CHECK_EQ(offsetof(ncclConfig_t, splitShare), 40);
    CHECK_EQ(offsetof(ncclConfig_t, trafficClass), 44);
    CHECK_EQ(offsetof(ncclConfig_t, commName), 48);
    CHECK_EQ(offsetof(ncclConfig_t, collnetEnable), 56);
    CHECK_EQ(offsetof(ncclConfig_t, CTAPolicy), 60);
    CHECK_EQ(offsetof(ncclConfig_t, shrinkShare), 64);
    CHECK_EQ(offsetof(ncclConfig_t, nvlsCTAs), 68);
    CHECK_EQ(offsetof(ncclConfig_t, nChannelsPerNetPeer), 72);
    CHECK_EQ(offsetof(ncclConfig_t, nvlinkCentricSched), 76);
    CHECK_EQ(offsetof(ncclConfig_t, graphUsageMode), 80);
    CHECK_EQ(offsetof(ncclConfig_t, numRmaCtx), 84);
    CHECK_EQ(offsetof(ncclConfig_t, maxP2pPeers), 88);
    CHECK_EQ(offsetof(ncclConfig_t, graphStreamOrdering), 92);

    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    CHECK_EQ(c.size, 96);
    CHECK_EQ(c.magic, 0xcafebeef);
    CHECK_EQ(c.version, 22809);
    const int ints[] = {c.blocking,
                        c.cgaClusterSize,
                        c.minCTAs,
                        c.maxCTAs,
                        c.splitShare,
                        c.trafficClass,
                        c.collnetEnable,
                        c.CTAPolicy,
                        c.shrinkShare,
                        c.nvlsCTAs,
                        c.nChannelsPerNetPeer,
                        c.nvlinkCentricSched,
                        c.graphUsageMode,
                        c.numRmaCtx,
                        c.maxP2pPeers,
                        c.graphStreamOrdering};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        BT_TEST_CHECK(ints[i] == INT_MIN, "int field %zu of NCCL_CONFIG_INITIALIZER is %d", i,
                      ints[i]);
    BT_TEST_CHECK(c.netName == NULL, "netName is not NULL");
    BT_TEST_CHECK(c.commName == NULL, "commName is not NULL");
}

static void check_sim_info(void)
{
    CHECK_EQ(sizeof(ncclSimInfo_t), 24);
    CHECK_EQ(offsetof(ncclSimInfo_t, size), 0);
    CHECK_EQ(offsetof(ncclSimInfo_t, magic), 8);
    CHECK_EQ(offsetof(ncclSimInfo_t, version), 12);
    CHECK_EQ(offsetof(ncclSimInfo_t, estimatedTime), 16);

    ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
    CHECK_EQ(s.size, 24);
    CHECK_EQ(s.magic, 0x74685283);
    CHECK_EQ(s.version, 22809);
    BT_TEST_CHECK(s.estimatedTime == -1.0f, "estimatedTime is %f", (double)s.estimatedTime);
}

static void check_properties(void)
{
    /* ncclCommProperties_t as NCCL 2.30.7's nccl_device/core.h lays it out (LP64) */
    CHECK_EQ(sizeof(ncclCommProperties_t), 56);
    CHECK_EQ(offsetof(ncclCommProperties_t, magic), 8);
    CHECK_EQ(offsetof(ncclCommProperties_t, version), 12);
    CHECK_EQ(offsetof(ncclCommProperties_t, rank), 16);
    CHECK_EQ(offsetof(ncclCommProperties_t, nRanks), 20);
    CHECK_EQ(offsetof(ncclCommProperties_t, cudaDev), 24);
    CHECK_EQ(offsetof(ncclCommProperties_t, nvmlDev), 28);
    CHECK_EQ(offsetof(ncclCommProperties_t, deviceApiSupport), 32);
    CHECK_EQ(offsetof(ncclCommProperties_t, multimemSupport), 33);
    CHECK_EQ(offsetof(ncclCommProperties_t, ginType), 36);
    CHECK_EQ(offsetof(ncclCommProperties_t, nLsaTeams), 40);
    CHECK_EQ(offsetof(ncclCommProperties_t, hostRmaSupport), 44);
    CHECK_EQ(offsetof(ncclCommProperties_t, railedGinType), 48);
    CHECK_EQ(sizeof(ncclGinType_t), 4);
    CHECK_EQ(NCCL_GIN_TYPE_NONE, 0);
    CHECK_EQ(NCCL_GIN_TYPE_PROXY, 2);
    CHECK_EQ(NCCL_GIN_TYPE_GDAKI, 3);
    CHECK_EQ(NCCL_GIN_TYPE_GPI, 4);
    ncclCommProperties_t p = NCCL_COMM_PROPERTIES_INITIALIZER;
    CHECK_EQ(p.size, 56);
    CHECK_EQ(p.magic, 0xcafebeef);
}

static void check_team(void)
{
    /* Passed and returned by value between NVIDIA-built clients and Baton. */
    CHECK_EQ(sizeof(ncclTeam_t), 12);
    CHECK_EQ(offsetof(ncclTeam_t, nRanks), 0);
    CHECK_EQ(offsetof(ncclTeam_t, rank), 4);
    CHECK_EQ(offsetof(ncclTeam_t, stride), 8);
}

/* The device API is not implemented: each call fails cleanly and says why. */
static void check_unsupported(void)
{
    ncclTeam_t t = {4, 1, 1};

    /* implemented now: NULL comms answer as NCCL does */
    CHECK_EQ(ncclCommRevoke(NULL, NCCL_REVOKE_DEFAULT), ncclSuccess);
    CHECK_EQ(ncclCommShrink(NULL, NULL, 0, NULL, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
    CHECK_EQ(ncclCommWindowRegister(NULL, NULL, 0, NULL, NCCL_WIN_DEFAULT), ncclInvalidArgument);
    CHECK_EQ(ncclCommWindowDeregister(NULL, NULL), ncclInvalidArgument);
    CHECK_EQ(ncclDevCommCreate(NULL, NULL, NULL), ncclInvalidArgument);
    BT_TEST_CHECK(strstr(bt_log_last_error(), "ncclDevCommCreate: comm is NULL"),
                  "last error is \"%s\"", bt_log_last_error());
    CHECK_EQ(ncclDevCommDestroy(NULL, NULL), ncclInvalidArgument);
    /* the requirement builders work (mp/test_devapi_host): NULL outputs are bad arguments */
    CHECK_EQ(ncclLsaBarrierCreateRequirement(t, 1, NULL, NULL), ncclInvalidArgument);
    CHECK_EQ(ncclGinBarrierCreateRequirement(NULL, t, 1, NULL, NULL), ncclInvalidArgument);
    CHECK_EQ(ncclLLA2ACreateRequirement(1, 1, NULL, NULL), ncclInvalidArgument);
    CHECK_EQ(ncclLLA2ACalcSlots(16, 8), 16);
    ncclMultimemHandle_t mm = {NULL};
    void *ptr = NULL;
    CHECK_EQ(ncclGetLsaMultimemDevicePointer(NULL, 0, &ptr), ncclInvalidUsage);
    CHECK_EQ(ncclGetMultimemDevicePointer(NULL, 0, mm, &ptr), ncclInvalidUsage);
    CHECK_EQ(ncclGinOutboxCreateRequirement(1, 12, NULL, NULL), ncclInvalidUsage);
    CHECK_EQ(ncclGinInboxA2ACreateRequirement(t, 1, 12, NULL, NULL), ncclInvalidUsage);
    CHECK_EQ(sizeof(ncclMultimemHandle_t), sizeof(void *));
    CHECK_EQ(ncclTeamRankToWorld(NULL, t, 0), -1);
    CHECK_EQ(ncclTeamRankToLsa(NULL, t, 0), -1);
    t = ncclTeamWorld(NULL);
    CHECK_EQ(t.nRanks, 0);
    t = ncclTeamLsa(NULL);
    CHECK_EQ(t.nRanks, 0);
    t = ncclTeamRail(NULL);
    CHECK_EQ(t.nRanks, 0);
    BT_TEST_CHECK(strstr(bt_log_last_error(), "ncclTeamRail"), "last error is \"%s\"",
                  bt_log_last_error());
}

int main(void)
{
    check_version();
    check_enums();
    check_constants();
    check_config();
    check_sim_info();
    check_team();
    check_properties();
    check_unsupported();
    return 0;
}
