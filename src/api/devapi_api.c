/*
 * The host side of NCCL's device API that needs no device communicator: teams (the world,
 * this host's LSA team, the rail across hosts) and the requirement builders that size the
 * buffers, signals and counters ncclDevCommCreate lays out in the resource window. The sizes
 * are what the device API's inline code (NVIDIA's nccl_device headers) addresses in those
 * buffers; include/nccl_device/layout.h has the structs.
 */
#include <string.h>

#include "api/api.h"
#include "api/check.h"
#include "core/comm.h"
#include "core/devcomm.h"
#include "core/group.h"
#include "nccl.h"
#include "nccl_device/layout.h"
#include "util/log.h"

/* A team of ranks `size` long starting at this rank's `base`, strided 1 (or the rail). */
static ncclTeam_t team(int nranks, int rank, int stride)
{
    ncclTeam_t t = {nranks, rank, stride};
    return t;
}

/* The comm as a live communicator, or NULL (logged; the team functions cannot return an
 * error: they return the empty team, which has no member). */
static const struct bt_comm *team_comm(ncclComm_t comm, const char *fn)
{
    if (!comm || !bt_comm_is_live((const struct bt_comm *)comm)) {
        BT_WARN("%s: comm %p is not a live communicator: the empty team", fn, (void *)comm);
        return NULL;
    }
    return (const struct bt_comm *)comm;
}

BT_API ncclTeam_t ncclTeamWorld(ncclComm_t comm)
{
    const struct bt_comm *c = team_comm(comm, "ncclTeamWorld");
    return c ? team(c->nranks, c->rank, 1) : team(0, 0, 0);
}

BT_API ncclTeam_t ncclTeamLsa(ncclComm_t comm)
{
    const struct bt_comm *c = team_comm(comm, "ncclTeamLsa");
    if (!c)
        return team(0, 0, 0);
    int base, size;
    bt_comm_lsa(c, &base, &size);
    return team(size, c->rank - base, 1);
}

/* The ranks at this rank's place in every LSA team: one per host, LSA-size apart. */
BT_API ncclTeam_t ncclTeamRail(ncclComm_t comm)
{
    const struct bt_comm *c = team_comm(comm, "ncclTeamRail");
    if (!c)
        return team(0, 0, 0);
    int base, size;
    bt_comm_lsa(c, &base, &size);
    return team(c->nranks / size, c->rank / size, size);
}

/* Member `rank` of `t` (a team this rank is in) as a world rank; -1 for a dead comm. As
 * NCCL, a rank outside the team is not checked: the result is where it would be. */
BT_API int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t t, int rank)
{
    const struct bt_comm *c = team_comm(comm, "ncclTeamRankToWorld");
    return c ? c->rank + (rank - t.rank) * t.stride : -1;
}

/* Member `rank` of `t` as an index in this rank's LSA team (outside it when the rank is on
 * another host); -1 for a dead comm. */
BT_API int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t t, int rank)
{
    const struct bt_comm *c = team_comm(comm, "ncclTeamRankToLsa");
    if (!c)
        return -1;
    int base, size;
    bt_comm_lsa(c, &base, &size);
    return c->rank - base + (rank - t.rank) * t.stride;
}

/* ---- device communicators ------------------------------------------------------------------ */

/* Collective, like NCCL's: in a group it runs at ncclGroupEnd with the group's other jobs (one
 * thread may create the device communicators of several ranks). */
BT_API ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const *reqs,
                                      ncclDevComm_t *outDevComm)
{
    const char *fn = "ncclDevCommCreate";
    BT_API_CHECK_READY(comm, fn);
    BT_API_CHECK_PTR(reqs, fn, "reqs");
    BT_API_CHECK_PTR(outDevComm, fn, "outDevComm");
    /* the program's release: its headers' layouts of reqs and of *outDevComm */
    struct bt_devcomm_reqs r;
    bt_status_t st = bt_devcomm_reqs_read(reqs, &r, fn);
    if (st != BT_OK)
        return (ncclResult_t)st;
    struct bt_comm *c = (struct bt_comm *)comm;
    if (bt_group_depth() > 0 || !c->config.blocking) {
        struct bt_init_job job = {.parent = c, .devcomm = 1, .dc_reqs = r, .dc_out = outDevComm};
        return (ncclResult_t)bt_api_group_job(&job);
    }
    /* held for the call, as a group job holds it: an abort from another thread waits */
    if (!bt_comm_acquire(c)) {
        BT_WARN("%s: comm %p is aborted or destroyed", fn, (void *)c);
        return ncclInvalidUsage;
    }
    st = bt_devcomm_create(c, &r, outDevComm);
    bt_comm_release(c);
    return (ncclResult_t)st;
}

/* Local: the kernels using it must be done. After its communicator's destroy (PyTorch's
 * symmetric memory does that at exit) there is nothing left to free: said at INFO. */
BT_API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const *devComm)
{
    const char *fn = "ncclDevCommDestroy";
    if (comm && !bt_comm_is_live((const struct bt_comm *)comm)) {
        BT_INFO(BT_LOG_INIT,
                "%s: comm %p is destroyed already: its device communicators went "
                "with it",
                fn, (void *)comm);
        return ncclInvalidArgument;
    }
    BT_API_CHECK_READY(comm, fn);
    BT_API_CHECK_PTR(devComm, fn, "devComm");
    return (ncclResult_t)bt_devcomm_destroy((struct bt_comm *)comm, devComm);
}

/* ---- requirement builders ------------------------------------------------------------------- */

/* What every builder checks: the handle and the requirement to fill, and a count >= 0. */
static ncclResult_t check_builder(const char *fn, const void *out_handle, const void *out_req,
                                  const char *count_name, int count)
{
    BT_API_CHECK_PTR(out_handle, fn, "outHandle");
    BT_API_CHECK_PTR(out_req, fn, "outReq");
    if (count < 0) {
        BT_WARN("%s: %s is %d; it must be >= 0", fn, count_name, count);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* A barrier builder's arguments (check_builder's, and a team of at least one rank); on
 * success *outHandle and *outReq are zeroed for the builder to fill. */
static ncclResult_t check_barrier_builder(const char *fn, ncclTeam_t t, int nBarriers,
                                          void *outHandle, size_t handle_bytes,
                                          ncclDevResourceRequirements_t *outReq)
{
    ncclResult_t r = check_builder(fn, outHandle, outReq, "nBarriers", nBarriers);
    if (r != ncclSuccess)
        return r;
    if (t.nRanks < 1) {
        BT_WARN("%s: the team has %d ranks", fn, t.nRanks);
        return ncclInvalidArgument;
    }
    memset(outHandle, 0, handle_bytes);
    memset(outReq, 0, sizeof(*outReq));
    return ncclSuccess;
}

/* An LSA barrier is a word of epochs, a multicast inbox word and an inbox word per team rank;
 * the device code finds them at [0, 3 nBarriers) and from 3 nBarriers on, nRanks per
 * barrier. */
BT_API ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t t, int nBarriers,
                                                    ncclLsaBarrierHandle_t *outHandle,
                                                    ncclDevResourceRequirements_t *outReq)
{
    ncclResult_t r = check_barrier_builder("ncclLsaBarrierCreateRequirement", t, nBarriers,
                                           outHandle, sizeof(*outHandle), outReq);
    if (r != ncclSuccess)
        return r;
    outHandle->nBarriers = nBarriers;
    outReq->bufferSize = sizeof(uint32_t) * (size_t)nBarriers * (3 + (size_t)t.nRanks);
    outReq->bufferAlign = sizeof(uint32_t);
    outReq->outBufferHandle = &outHandle->bufHandle;
    return ncclSuccess;
}

/* A GIN barrier: for 2.28's device code an epoch word per GIN context in the buffer and a
 * signal, per barrier; for 2.30's a signal per barrier and team rank. */
BT_API ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t t, int nBarriers,
                                                    ncclGinBarrierHandle_t *outHandle,
                                                    ncclDevResourceRequirements_t *outReq)
{
    const char *fn = "ncclGinBarrierCreateRequirement";
    BT_API_CHECK_COMM(comm, fn);
    ncclResult_t r = check_barrier_builder(fn, t, nBarriers, outHandle, sizeof(*outHandle), outReq);
    if (r != ncclSuccess)
        return r;
    outReq->bufferSize = sizeof(uint32_t) * (size_t)nBarriers * NCCL_GIN_MAX_CONTEXTS;
    outReq->bufferAlign = sizeof(uint32_t);
    outReq->outBufferHandle = &outHandle->bufHandle;
    /* a signal per barrier for 2.28's device code, per barrier and team rank for 2.30's (it
     * signals slot signal0 + index * team.nRanks + rank; no buffer): enough for either */
    outReq->ginSignalCount = nBarriers * (t.nRanks > 1 ? t.nRanks : 1);
    outReq->outGinSignalStart = &outHandle->signal0;
    return ncclSuccess;
}

/* An element of maxEltSize bytes takes a 16-byte line per 8 bytes (the other 8 carry the
 * epoch that marks the line written), in slots maxElts apart. */
BT_API int ncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    if (maxElts < 0 || maxEltSize < 0) {
        BT_WARN("ncclLLA2ACalcSlots: maxElts %d and maxEltSize %d must be >= 0", maxElts,
                maxEltSize);
        return 0;
    }
    return maxElts * ((maxEltSize + 7) / 8);
}

/* Per block a 16-byte header line and two sets of nSlots lines (epochs alternate). */
BT_API ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots,
                                               ncclLLA2AHandle_t *outHandle,
                                               ncclDevResourceRequirements_t *outReq)
{
    const char *fn = "ncclLLA2ACreateRequirement";
    ncclResult_t r = check_builder(fn, outHandle, outReq, "nBlocks", nBlocks);
    if (r != ncclSuccess)
        return r;
    if (nSlots < 0) {
        BT_WARN("%s: nSlots is %d; it must be >= 0", fn, nSlots);
        return ncclInvalidArgument;
    }
    memset(outHandle, 0, sizeof(*outHandle));
    memset(outReq, 0, sizeof(*outReq));
    outHandle->nSlots = (uint32_t)nSlots;
    outReq->bufferSize = 16 * (size_t)nBlocks * (1 + 2 * (size_t)nSlots);
    outReq->bufferAlign = 16;
    outReq->outBufferHandle = &outHandle->bufHandle;
    return ncclSuccess;
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
