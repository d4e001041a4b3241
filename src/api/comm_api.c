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
#include "core/init.h"
#include "core/split.h"
#include "core/window.h"
#include "device/device.h"
#include "nccl.h"
#include "util/hostmem.h"
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
    if (bt_group_depth() > 0 || !cfg.blocking) {
        /* Joined at ncclGroupEnd, concurrently with the group's other inits; non-blocking
         * outside a group: a group of one, which ends in the background. */
        if (bt_group_depth() > 0) {
            st = bt_group_add_init(&job);
            if (st != BT_OK)
                goto fail;
            *newcomm = (ncclComm_t)comm;
            return ncclSuccess;
        }
        bt_group_start();
        st = bt_group_add_init(&job);
        bt_status_t end = bt_group_end(); /* BT_IN_PROGRESS, or why it could not start */
        if (st != BT_OK)
            goto fail;
        *newcomm = (ncclComm_t)comm; /* failed to start: its async error says why */
        return (ncclResult_t)end;
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
    /* Every rank meets at the first id's root. Baton's root sends each rank the whole address
     * table, so more roots would not shrink what travels (docs/ENV.md); the others' roots,
     * which their makers among the ranks run, are stopped now instead of waiting out
     * BOOTSTRAP_TIMEOUT. */
    for (int k = 1; k < nId; k++)
        if (memcmp(&commIds[k], &commIds[0], sizeof(commIds[0])) != 0)
            bt_bootstrap_root_cancel(commIds[k].internal);
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

BT_API ncclResult_t batonCommGetStats(ncclComm_t comm, batonCommStats_t *stats, size_t size)
{
    struct bt_comm *c = (struct bt_comm *)comm;
    if (!c || !bt_comm_is_live(c)) {
        BT_WARN("batonCommGetStats: comm %p is not a live communicator", (void *)comm);
        return ncclInvalidArgument;
    }
    if (!stats) {
        BT_WARN("batonCommGetStats: stats is NULL");
        return ncclInvalidArgument;
    }
    const struct bt_comm_stats *s = &c->stats;
    batonCommStats_t all = {
        .colls = s->colls,
        .ring = s->by_algo[BT_ALGO_RING],
        .tree = s->by_algo[BT_ALGO_TREE],
        .oneshot = s->by_algo[BT_ALGO_DIRECT],
        .twoshot = s->by_algo[BT_ALGO_TWOSHOT],
        .window = s->window,
        .ring_split = s->ring_split,
    };
    memcpy(stats, &all, size < sizeof(all) ? size : sizeof(all));
    return ncclSuccess;
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
    if (res == ncclSuccess && end == ncclInProgress)
        return ncclInProgress; /* COMM_BLOCKING=0: the comms finish in the background */
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
    BT_API_CHECK_READY(comm, "ncclCommCount");
    BT_API_CHECK_PTR(count, "ncclCommCount", "count");
    *count = ((struct bt_comm *)comm)->nranks;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    BT_API_CHECK_READY(comm, "ncclCommUserRank");
    BT_API_CHECK_PTR(rank, "ncclCommUserRank", "rank");
    *rank = ((struct bt_comm *)comm)->rank;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    BT_API_CHECK_READY(comm, "ncclCommCuDevice");
    BT_API_CHECK_PTR(device, "ncclCommCuDevice", "device");
    *device = ((struct bt_comm *)comm)->cuda_dev;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    BT_API_CHECK_COMM(comm, "ncclCommGetAsyncError");
    BT_API_CHECK_PTR(asyncError, "ncclCommGetAsyncError", "asyncError");
    struct bt_comm *c = (struct bt_comm *)comm;
    *asyncError = bt_comm_busy(c) ? ncclInProgress : (ncclResult_t)bt_comm_async_error(c);
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
    /* Host collectives complete before they return: nothing is outstanding but a
     * non-blocking group still running, which ends (or times out) by itself. */
    bt_comm_wait_idle(c);
    c->finalized = 1;
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess; /* as NCCL: destroying NULL is a no-op */
    BT_API_CHECK_COMM(comm, "ncclCommDestroy");
    struct bt_comm *c = (struct bt_comm *)comm;
    if (atomic_load_explicit(&c->busy, memory_order_acquire) == BT_BUSY_INIT) {
        /* Its init may wait for a rank that never comes: end it rather than wait. */
        BT_INFO(BT_LOG_INIT, "ncclCommDestroy: comm %p is still initializing; its init is aborted",
                (void *)c);
        bt_comm_abort_signal(c);
    }
    bt_comm_wait_idle(c); /* a non-blocking group on it ends, or times out */
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

/* Queue a split or shrink in the caller's group, or in a group of one (a non-blocking
 * parent outside a group: ncclInProgress). The job owns job->excl from here on. */
static ncclResult_t group_add_job(struct bt_init_job *job)
{
    int own = bt_group_depth() == 0;
    if (own)
        bt_group_start();
    bt_status_t st = bt_group_add_init(job);
    if (st != BT_OK) {
        free(job->excl);
        bt_group_set_error(st);
    }
    if (!own)
        return (ncclResult_t)st;
    bt_status_t end = bt_group_end();
    return (ncclResult_t)(st != BT_OK ? st : end);
}

BT_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
    BT_API_CHECK_READY(comm, "ncclCommSplit");
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
    if (bt_group_depth() > 0 || !parent->config.blocking) {
        /* Run at ncclGroupEnd with the group's other inits and splits: one thread may
         * split several ranks of the parent. *newcomm is written then. */
        struct bt_init_job job = {.parent = parent,
                                  .color = color,
                                  .key = key,
                                  .has_config = cfgp != NULL,
                                  .newcomm_p = (struct bt_comm **)newcomm};
        if (cfgp)
            job.config = *cfgp;
        return group_add_job(&job);
    }
    if (!bt_comm_acquire(parent)) {
        BT_WARN("ncclCommSplit: comm %p is being aborted", (void *)parent);
        return ncclInvalidUsage;
    }
    struct bt_comm *nc = NULL;
    bt_status_t st = bt_comm_split(parent, color, key, cfgp, &nc);
    bt_comm_release(parent);
    bt_log_set_comm(parent->rank, parent->config.name);
    if (st != BT_OK)
        return (ncclResult_t)st;
    *newcomm = (ncclComm_t)nc;
    return ncclSuccess;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

BT_API ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                   ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    const char *fn = "ncclCommShrink";
    BT_API_CHECK_COMM(comm, fn);
    BT_API_CHECK_PTR(newcomm, fn, "newcomm");
    *newcomm = NULL;
    struct bt_comm *parent = (struct bt_comm *)comm;
    if (shrinkFlags & ~NCCL_SHRINK_ABORT) {
        BT_WARN("%s: shrinkFlags 0x%x has unknown bits (NCCL_SHRINK_DEFAULT or "
                "NCCL_SHRINK_ABORT)",
                fn, shrinkFlags);
        return ncclInvalidArgument;
    }
    if (excludeRanksCount < 1 || excludeRanksCount >= parent->nranks) {
        BT_WARN("%s: excludeRanksCount %d is out of range [1, %d)", fn, excludeRanksCount,
                parent->nranks);
        return ncclInvalidArgument;
    }
    BT_API_CHECK_PTR(excludeRanksList, fn, "excludeRanksList");
    int *excl = malloc(sizeof(int) * (size_t)excludeRanksCount);
    if (!excl) {
        BT_WARN("%s: out of memory copying %d excluded ranks", fn, excludeRanksCount);
        return ncclSystemError;
    }
    memcpy(excl, excludeRanksList, sizeof(int) * (size_t)excludeRanksCount);
    qsort(excl, (size_t)excludeRanksCount, sizeof(int), int_cmp);
    const char *bad = NULL;
    int badv = 0;
    for (int i = 0; i < excludeRanksCount && !bad; i++) {
        badv = excl[i];
        if (excl[i] < 0 || excl[i] >= parent->nranks)
            bad = "is out of range";
        else if (i > 0 && excl[i] == excl[i - 1])
            bad = "is listed twice";
        else if (excl[i] == parent->rank)
            bad = "is the calling rank (excluded ranks do not call ncclCommShrink)";
    }
    if (bad) {
        BT_WARN("%s: excludeRanksList: rank %d %s (communicator of %d ranks)", fn, badv, bad,
                parent->nranks);
        free(excl);
        return ncclInvalidArgument;
    }
    struct bt_init_job job = {.parent = parent,
                              .shrink = 1,
                              .shrink_flags = shrinkFlags,
                              .excl = excl,
                              .nexcl = excludeRanksCount,
                              .newcomm_p = (struct bt_comm **)newcomm};
    if (config) {
        bt_status_t st = bt_api_config_parse(config, &job.config, fn);
        if (st != BT_OK) {
            free(excl);
            return (ncclResult_t)st;
        }
        job.has_config = 1;
    }
    if (atomic_load_explicit(&parent->busy, memory_order_acquire) == BT_BUSY_INIT) {
        free(excl);
        BT_API_CHECK_READY(comm, fn); /* still initializing: warns and fails */
    }
    if (shrinkFlags & NCCL_SHRINK_ABORT) {
        /* After a failure: stop what still runs on the parent (a stuck collective, a
         * non-blocking group) before anything waits on it. */
        bt_comm_revoke(parent);
        bt_comm_wait_idle(parent);
    } else if (bt_comm_busy(parent)) {
        free(excl);
        BT_API_CHECK_READY(comm, fn); /* warns and fails */
    }
    if (bt_group_depth() > 0 || !parent->config.blocking)
        return group_add_job(&job);
    struct bt_comm *nc = NULL;
    bt_status_t st = bt_comm_shrink(parent, excl, excludeRanksCount, shrinkFlags,
                                    job.has_config ? &job.config : NULL, &nc);
    free(excl);
    bt_log_set_comm(parent->rank, parent->config.name);
    *newcomm = (ncclComm_t)nc;
    return (ncclResult_t)st;
}

BT_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    if (!comm)
        return ncclSuccess; /* as NCCL */
    BT_API_CHECK_COMM(comm, "ncclCommRevoke");
    struct bt_comm *c = (struct bt_comm *)comm;
    if (revokeFlags != NCCL_REVOKE_DEFAULT) {
        BT_WARN("ncclCommRevoke: revokeFlags is 0x%x, must be NCCL_REVOKE_DEFAULT (0)",
                revokeFlags);
        return ncclInvalidArgument;
    }
    if (atomic_load_explicit(&c->busy, memory_order_acquire) == BT_BUSY_INIT) {
        BT_WARN("ncclCommRevoke: comm %p is still initializing (abort or destroy it instead)",
                (void *)c);
        return ncclInvalidArgument;
    }
    if (atomic_load_explicit(&c->revoked, memory_order_acquire) || c->finalized) {
        BT_WARN("ncclCommRevoke: comm %p is already %s", (void *)c,
                c->finalized ? "finalized" : "revoked");
        return ncclInvalidArgument;
    }
    /* Local and prompt: running operations see the abort within a few ms. */
    bt_comm_revoke(c);
    bt_comm_wait_idle(c);
    return ncclSuccess;
}

BT_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                           ncclWindow_t *win, int winFlags)
{
    const char *fn = "ncclCommWindowRegister";
    BT_API_CHECK_READY(comm, fn);
    BT_API_CHECK_PTR(win, fn, "win");
    *win = NULL;
    if (!buff || size == 0) {
        BT_WARN("%s: buff %p with size %zu: a window needs a buffer", fn, buff, size);
        return ncclInvalidArgument;
    }
    if (winFlags & ~NCCL_WIN_COLL_SYMMETRIC) {
        BT_WARN("%s: winFlags 0x%x has unknown bits (NCCL_WIN_DEFAULT or NCCL_WIN_COLL_SYMMETRIC)",
                fn, winFlags);
        return ncclInvalidArgument;
    }
    struct bt_comm *c = (struct bt_comm *)comm;
    /* Collective: in a group (one thread may register several ranks' windows) it runs at
     * ncclGroupEnd, with the group's other registrations and inits. */
    struct bt_init_job job = {.parent = c,
                              .win = 1,
                              .win_buf = buff,
                              .win_size = size,
                              .win_flags = winFlags,
                              .win_out = (struct bt_window **)win};
    if (bt_group_depth() > 0 || !c->config.blocking)
        return group_add_job(&job);
    struct bt_window *w = NULL;
    bt_status_t st = bt_window_register(c, buff, size, winFlags, &w);
    *win = (ncclWindow_t)w;
    return (ncclResult_t)st;
}

BT_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    BT_API_CHECK_READY(comm, "ncclCommWindowDeregister");
    if (!win)
        return ncclSuccess; /* as NCCL: what a registration without windows gave */
    return (ncclResult_t)bt_window_deregister((struct bt_comm *)comm, (struct bt_window *)win);
}

/* ---- memory ----------------------------------------------------------------------------- */

BT_API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    BT_API_CHECK_PTR(ptr, "ncclMemAlloc", "ptr");
    /* CUDA mode: device memory on the current device (PyTorch's NCCL pool expects it). */
    const char *devp = bt_param_str_device();
    if (!(devp && strcmp(devp, "cpu") == 0) && bt_device_current() >= 0)
        return (ncclResult_t)bt_device_mem_alloc(ptr, size);
    /* Without a device the memory collectives use is host memory, page-aligned like cuMem
     * and shareable: a window on it can be mapped by the other processes of the host. */
    return (ncclResult_t)bt_hostmem_alloc(size ? size : 1, ptr);
}

BT_API ncclResult_t ncclMemFree(void *ptr)
{
    if (!ptr || bt_hostmem_free(ptr))
        return ncclSuccess;
    if (bt_device_ptr_is_device(ptr))
        return (ncclResult_t)bt_device_mem_free(ptr);
    free(ptr); /* not ours: what a caller may pass after mixing up allocators */
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
BT_PNCCL(ncclCommShrink);
BT_PNCCL(ncclCommRevoke);
BT_PNCCL(ncclCommWindowRegister);
BT_PNCCL(ncclCommWindowDeregister);
BT_PNCCL(ncclMemAlloc);
BT_PNCCL(ncclMemFree);
BT_PNCCL(ncclCommRegister);
BT_PNCCL(ncclCommDeregister);
