/*
 * Entry points: versions, ids, errors, communicator lifecycle.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/check.h"
#include "baton.h"
#include "core/comm.h"
#include "core/group.h"
#include "device/device.h"
#include "nccl.h"
#include "util/param.h"

BT_API const char *batonVersionString(void)
{
    return "Baton " BATON_VERSION_STRING ", NCCL 2.28.9 interface";
}

BT_API void batonParamsPrint(FILE *out)
{
    bt_param_print_all(out ? out : stdout);
}

BT_API ncclResult_t ncclGetVersion(int *version)
{
    if (!version) {
        BT_WARN("ncclGetVersion: version is NULL");
        return ncclInvalidArgument;
    }
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

BT_API const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the Baton developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

BT_API const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return bt_log_last_error();
}

BT_API void ncclResetDebugInit(void)
{
    /* Parameters are cached for the life of the process; logging re-reads nothing. */
}

BT_API ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (!uniqueId) {
        BT_WARN("ncclGetUniqueId: uniqueId is NULL");
        return ncclInvalidArgument;
    }
    memset(uniqueId, 0, sizeof(*uniqueId));
    return (ncclResult_t)bt_bootstrap_unique_id(uniqueId->internal);
}

/* ---- init --------------------------------------------------------------------------- */

/*
 * With BATON_COMM_ID / NCCL_COMM_ID set, the rendezvous is at that address whatever id the
 * caller passes (ncclGetUniqueId names the same address then; a zeroed id is fine, so ranks
 * need not exchange one), and rank 0 starts the root there.
 */
static bt_status_t resolve_id(const ncclUniqueId *in, int rank, unsigned char *out)
{
    if (bt_param_str_comm_id())
        return bt_bootstrap_unique_id_from_env(rank, out);
    memcpy(out, in->internal, BT_UNIQUE_ID_BYTES);
    return BT_OK;
}

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, const ncclUniqueId *id, int rank,
                              const ncclConfig_t *config, const char *fn)
{
    struct bt_comm_config cfg;
    struct bt_comm *comm = NULL;
    bt_status_t st;

    if (!newcomm) {
        BT_WARN("%s: comm (the output pointer) is NULL", fn);
        return ncclInvalidArgument;
    }
    *newcomm = NULL;
    if (nranks < 1) {
        BT_WARN("%s: nranks %d is invalid (must be >= 1)", fn, nranks);
        return ncclInvalidArgument;
    }
    if (rank < 0 || rank >= nranks) {
        BT_WARN("%s: rank %d is out of range [0, %d)", fn, rank, nranks);
        return ncclInvalidArgument;
    }
    st = bt_api_config_parse(config, &cfg, fn);
    if (st != BT_OK) {
        bt_group_set_error(st);
        return (ncclResult_t)st;
    }

    st = bt_comm_alloc(nranks, rank, &comm);
    if (st != BT_OK)
        return (ncclResult_t)st;
    comm->config = cfg;
    /* A GPU communicator when a device is current (CUDA built in, a driver, a GPU); its
     * operations on host buffers still run on the host. batonCommInitRankHost or
     * DEVICE=cpu: never. */
    const char *devp = bt_param_str_device();
    int host_only = strcmp(fn, "batonCommInitRankHost") == 0 || (devp && strcmp(devp, "cpu") == 0);
    comm->cuda_dev = host_only ? -1 : bt_device_current();

    struct bt_init_job job = {.comm = comm};
    st = resolve_id(id, rank, job.id);
    if (st != BT_OK)
        goto fail;
    if (bt_group_depth() > 0) {
        /* Joined at ncclGroupEnd, concurrently with the group's other inits. */
        st = bt_group_add_init(&job);
        if (st != BT_OK)
            goto fail;
        *newcomm = (ncclComm_t)comm;
        return ncclSuccess;
    }
    st = bt_comm_start(comm, job.id);
    if (st != BT_OK)
        goto fail;
    *newcomm = (ncclComm_t)comm;
    return ncclSuccess;

fail:
    bt_comm_free(comm);
    return (ncclResult_t)st;
}

BT_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, &commId, rank, NULL, "ncclCommInitRank");
}

BT_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                           int rank, ncclConfig_t *config)
{
    return init_rank(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig");
}

BT_API ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                             ncclUniqueId *commIds, ncclConfig_t *config)
{
    if (nId < 1 || nId > nranks) {
        BT_WARN("ncclCommInitRankScalable: nId %d is out of range [1, %d]", nId, nranks);
        return ncclInvalidArgument;
    }
    if (!commIds) {
        BT_WARN("ncclCommInitRankScalable: commIds is NULL");
        return ncclInvalidArgument;
    }
    /* One rendezvous root serves every rank; the extra ids only spread load in NCCL. */
    return init_rank(newcomm, nranks, &commIds[0], myrank, config, "ncclCommInitRankScalable");
}

BT_API ncclResult_t batonCommInitRankHost(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                          int rank)
{
    return init_rank(comm, nranks, &commId, rank, NULL, "batonCommInitRankHost");
}

BT_API int batonCommIsHost(ncclComm_t comm)
{
    struct bt_comm *c = (struct bt_comm *)comm;
    return c && bt_comm_is_live(c) && c->cuda_dev < 0;
}

BT_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms) {
        BT_WARN("ncclCommInitAll: comms is NULL");
        return ncclInvalidArgument;
    }
    if (ndev < 1) {
        BT_WARN("ncclCommInitAll: ndev %d is invalid (must be >= 1)", ndev);
        return ncclInvalidArgument;
    }
    const char *devp = bt_param_str_device();
    int ngpus = devp && strcmp(devp, "cpu") == 0 ? 0 : bt_device_count();
    for (int r = 0; r < ndev; r++) {
        comms[r] = NULL;
        int d = devlist ? devlist[r] : r;
        if (ngpus > 0 && (d < 0 || d >= ngpus)) {
            BT_WARN("ncclCommInitAll: devlist[%d] = %d is not a device (this process sees %d)", r,
                    d, ngpus);
            return ncclInvalidArgument;
        }
    }
    ncclUniqueId id;
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess)
        return res;
    bt_group_start();
    int queued = 0;
    for (; queued < ndev; queued++) {
        res = ncclCommInitRank(&comms[queued], ndev, id, queued);
        if (res != ncclSuccess)
            break;
        if (ngpus > 0) /* rank r drives devlist[r] (or device r) */
            ((struct bt_comm *)comms[queued])->cuda_dev = devlist ? devlist[queued] : queued;
    }
    if (res != ncclSuccess) {
        /* Do not start the inits already queued: their missing peers would never come. */
        for (int r = 0; r < queued; r++) {
            bt_group_drop_comm((struct bt_comm *)comms[r]);
            bt_comm_free((struct bt_comm *)comms[r]);
            comms[r] = NULL;
        }
    }
    ncclResult_t end = (ncclResult_t)bt_group_end();
    if (res == ncclSuccess && end != ncclSuccess) {
        res = end;
        for (int r = 0; r < ndev; r++) {
            bt_comm_free((struct bt_comm *)comms[r]);
            comms[r] = NULL;
        }
    }
    return res;
}

/* ---- queries -------------------------------------------------------------------------- */

BT_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    BT_API_CHECK_COMM(comm, "ncclCommCount");
    BT_API_CHECK_PTR(count, "ncclCommCount", "count");
    *count = ((struct bt_comm *)comm)->nranks;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    BT_API_CHECK_COMM(comm, "ncclCommUserRank");
    BT_API_CHECK_PTR(rank, "ncclCommUserRank", "rank");
    *rank = ((struct bt_comm *)comm)->rank;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    BT_API_CHECK_COMM(comm, "ncclCommCuDevice");
    BT_API_CHECK_PTR(device, "ncclCommCuDevice", "device");
    *device = ((struct bt_comm *)comm)->cuda_dev;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    BT_API_CHECK_COMM(comm, "ncclCommGetAsyncError");
    BT_API_CHECK_PTR(asyncError, "ncclCommGetAsyncError", "asyncError");
    *asyncError = (ncclResult_t)bt_comm_async_error((struct bt_comm *)comm);
    return ncclSuccess;
}

/* ---- teardown ------------------------------------------------------------------------- */

BT_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    BT_API_CHECK_COMM(comm, "ncclCommFinalize");
    struct bt_comm *c = (struct bt_comm *)comm;
    if (c->finalized) {
        BT_WARN("ncclCommFinalize: comm %p is already finalized", (void *)c);
        return ncclInvalidUsage;
    }
    /* Host collectives complete before they return: nothing is outstanding. */
    c->finalized = 1;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess; /* as NCCL: destroying NULL is a no-op */
    BT_API_CHECK_COMM(comm, "ncclCommDestroy");
    struct bt_comm *c = (struct bt_comm *)comm;
    bt_group_drop_comm(c);
    bt_comm_free(c);
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    BT_API_CHECK_COMM(comm, "ncclCommAbort");
    struct bt_comm *c = (struct bt_comm *)comm;
    bt_comm_abort_signal(c);
    bt_group_drop_comm(c);
    bt_comm_free(c);
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
    BT_API_CHECK_COMM(comm, "ncclCommSplit");
    BT_API_CHECK_PTR(newcomm, "ncclCommSplit", "newcomm");
    *newcomm = NULL;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
        BT_WARN("ncclCommSplit: color %d is invalid (>= 0 or NCCL_SPLIT_NOCOLOR)", color);
        return ncclInvalidArgument;
    }
    struct bt_comm *parent = (struct bt_comm *)comm;
    struct bt_comm_config cfg, *cfgp = NULL;
    if (config) {
        bt_status_t st = bt_api_config_parse(config, &cfg, "ncclCommSplit");
        if (st != BT_OK)
            return (ncclResult_t)st;
        cfgp = &cfg;
    }
    if (bt_group_depth() > 0) {
        /* Run at ncclGroupEnd with the group's other inits and splits: one thread may
         * split several ranks of the parent. *newcomm is written then. */
        struct bt_init_job job = {.parent = parent,
                                  .color = color,
                                  .key = key,
                                  .has_config = cfgp != NULL,
                                  .newcomm_p = (struct bt_comm **)newcomm};
        if (cfgp)
            job.config = *cfgp;
        bt_status_t st = bt_group_add_init(&job);
        if (st != BT_OK)
            bt_group_set_error(st);
        return (ncclResult_t)st;
    }
    if (!bt_comm_acquire(parent)) {
        BT_WARN("ncclCommSplit: comm %p is being aborted", (void *)parent);
        return ncclInvalidUsage;
    }
    struct bt_comm *nc = NULL;
    bt_status_t st = bt_comm_split(parent, color, key, cfgp, &nc);
    bt_comm_release(parent);
    bt_log_set_rank(parent->rank);
    if (st != BT_OK)
        return (ncclResult_t)st;
    *newcomm = (ncclComm_t)nc;
    return ncclSuccess;
}

/* ---- memory ----------------------------------------------------------------------------- */

BT_API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    BT_API_CHECK_PTR(ptr, "ncclMemAlloc", "ptr");
    /* CUDA mode: device memory on the current device (PyTorch's NCCL pool expects it). */
    const char *devp = bt_param_str_device();
    if (!(devp && strcmp(devp, "cpu") == 0) && bt_device_current() >= 0)
        return (ncclResult_t)bt_device_mem_alloc(ptr, size);
    /* Without a device the memory collectives use is host memory; page-aligned like cuMem. */
    void *p = NULL;
    if (posix_memalign(&p, 4096, size ? size : 1) != 0) {
        BT_WARN("ncclMemAlloc: cannot allocate %zu bytes of host memory", size);
        return ncclSystemError;
    }
    *ptr = p;
    return ncclSuccess;
}

BT_API ncclResult_t ncclMemFree(void *ptr)
{
    if (bt_device_ptr_is_device(ptr))
        return (ncclResult_t)bt_device_mem_free(ptr);
    free(ptr);
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    BT_API_CHECK_COMM(comm, "ncclCommRegister");
    BT_API_CHECK_PTR(handle, "ncclCommRegister", "handle");
    if (!buff && size > 0) {
        BT_WARN("ncclCommRegister: buff is NULL with size %zu", size);
        return ncclInvalidArgument;
    }
    /* Host memory needs no registration; the handle only has to round-trip. */
    *handle = buff;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    BT_API_CHECK_COMM(comm, "ncclCommDeregister");
    (void)handle;
    return ncclSuccess;
}

/* Profiling aliases (see api.h). */
BT_PNCCL(ncclGetVersion);
BT_PNCCL(ncclGetErrorString);
BT_PNCCL(ncclGetLastError);
BT_PNCCL(ncclResetDebugInit);
BT_PNCCL(ncclGetUniqueId);
BT_PNCCL(ncclCommInitRank);
BT_PNCCL(ncclCommInitRankConfig);
BT_PNCCL(ncclCommInitRankScalable);
BT_PNCCL(ncclCommInitAll);
BT_PNCCL(ncclCommCount);
BT_PNCCL(ncclCommUserRank);
BT_PNCCL(ncclCommCuDevice);
BT_PNCCL(ncclCommGetAsyncError);
BT_PNCCL(ncclCommFinalize);
BT_PNCCL(ncclCommDestroy);
BT_PNCCL(ncclCommAbort);
BT_PNCCL(ncclCommSplit);
BT_PNCCL(ncclMemAlloc);
BT_PNCCL(ncclMemFree);
BT_PNCCL(ncclCommRegister);
BT_PNCCL(ncclCommDeregister);
