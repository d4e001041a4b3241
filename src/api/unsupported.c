/*
 * Entry points of the NCCL interface that Baton does not implement yet: multicast, and the
 * GIN outbox/inbox builders of 2.29-2.30.
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
BT_PNCCL(ncclGetLsaMultimemDevicePointer);
BT_PNCCL(ncclGetMultimemDevicePointer);
BT_PNCCL(ncclGinOutboxCreateRequirement);
BT_PNCCL(ncclGinInboxA2ACreateRequirement);
