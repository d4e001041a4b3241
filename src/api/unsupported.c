/*
 * Entry points of the NCCL 2.28 interface that Baton does not implement yet: the device API
 * (device communicators, teams, barrier and all-to-all requirement builders).
 *
 * They are exported anyway because clients link against every symbol of libnccl.so.2 (a
 * missing one makes `import torch` fail). Each one logs a WARN, which ncclGetLastError then
 * reports, and fails with ncclInvalidUsage without touching its output arguments. Functions
 * whose return type is not ncclResult_t return a neutral value, stated at each.
 */
#include "nccl.h"

#include "api/api.h"
#include "util/log.h"

#define BT_UNSUPPORTED() BT_WARN("%s is not supported by Baton yet", __func__)

BT_API ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const *reqs,
                                      ncclDevComm_t *outDevComm)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

BT_API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const *devComm)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

/* Returns the empty team {nRanks 0, rank 0, stride 0}: no rank is a member of it. */
BT_API ncclTeam_t ncclTeamWorld(ncclComm_t comm)
{
    ncclTeam_t none = {0, 0, 0};

    BT_UNSUPPORTED();
    return none;
}

/* Returns the empty team, as ncclTeamWorld. */
BT_API ncclTeam_t ncclTeamLsa(ncclComm_t comm)
{
    ncclTeam_t none = {0, 0, 0};

    BT_UNSUPPORTED();
    return none;
}

/* Returns the empty team, as ncclTeamWorld. */
BT_API ncclTeam_t ncclTeamRail(ncclComm_t comm)
{
    ncclTeam_t none = {0, 0, 0};

    BT_UNSUPPORTED();
    return none;
}

/* Returns -1, which is no rank. */
BT_API int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank)
{
    BT_UNSUPPORTED();
    return -1;
}

/* Returns -1, which is no rank. */
BT_API int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank)
{
    BT_UNSUPPORTED();
    return -1;
}

BT_API ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                                    ncclLsaBarrierHandle_t *outHandle,
                                                    ncclDevResourceRequirements_t *outReq)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

BT_API ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                                    ncclGinBarrierHandle_t *outHandle,
                                                    ncclDevResourceRequirements_t *outReq)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

/* Returns 0 slots: a requirement built from it asks for no buffer. */
BT_API int ncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    BT_UNSUPPORTED();
    return 0;
}

BT_API ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots,
                                               ncclLLA2AHandle_t *outHandle,
                                               ncclDevResourceRequirements_t *outReq)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

/* NVLink multicast: Baton never creates multicast objects (they can take shared GPUs out of
 * service), so there is no multicast address to give. */
BT_API ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                                    void **outPtr)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

BT_API ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                                 ncclMultimemHandle_t multimem, void **outPtr)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

BT_API ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                                   ncclGinOutboxHandle *outHandle,
                                                   ncclDevResourceRequirements_t *outReq)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

BT_API ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                                     ncclGinInboxA2AHandle *outHandle,
                                                     ncclDevResourceRequirements_t *outReq)
{
    BT_UNSUPPORTED();
    return ncclInvalidUsage;
}

/* Profiling aliases (see api.h). */
BT_PNCCL(ncclDevCommCreate);
BT_PNCCL(ncclDevCommDestroy);
BT_PNCCL(ncclTeamWorld);
BT_PNCCL(ncclTeamLsa);
BT_PNCCL(ncclTeamRail);
BT_PNCCL(ncclTeamRankToWorld);
BT_PNCCL(ncclTeamRankToLsa);
BT_PNCCL(ncclLsaBarrierCreateRequirement);
BT_PNCCL(ncclGinBarrierCreateRequirement);
BT_PNCCL(ncclLLA2ACalcSlots);
BT_PNCCL(ncclLLA2ACreateRequirement);
BT_PNCCL(ncclGetLsaMultimemDevicePointer);
BT_PNCCL(ncclGetMultimemDevicePointer);
BT_PNCCL(ncclGinOutboxCreateRequirement);
BT_PNCCL(ncclGinInboxA2ACreateRequirement);
