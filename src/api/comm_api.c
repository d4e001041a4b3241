/*
 * Entry points: versions, ids, errors, communicator lifecycle.
 */
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <limits.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/check.h"
#include "baton.h"
#include "core/comm.h"
#include "core/devcomm_abi.h"
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
    return "Baton " BATON_VERSION_STRING ", NCCL " BATON_NCCL_INTERFACE " interface";
}

BT_API void batonParamsPrint(FILE *out)
{
    bt_param_print_all(out ? out : stdout);
}

/* The version ncclGetVersion reports: the interface Baton implements whole (nccl.h's), or
 * REPORT_VERSION where it names a release whose device-API layouts Baton serves (programs
 * built against 2.29+ headers refuse their device API below 2.29; core/devcomm_abi.h says what
 * those releases get). Read once. */
static int reported_version(void)
{
    static _Atomic int cached;
    int v = atomic_load_explicit(&cached, memory_order_acquire);
    if (v)
        return v;
    v = BATON_NCCL_CODE;
    const char *s = bt_param_str_report_version();
    unsigned major, minor, patch;
    char tail;
    if (s && *s) {
        if (sscanf(s, "%u.%u.%u%c", &major, &minor, &patch, &tail) == 3 && major == 2 &&
            minor < 100 && patch < 100 && bt_devapi_version_served(20000 + minor * 100 + patch))
            v = (int)(20000 + minor * 100 + patch);
        else
            BT_WARN("REPORT_VERSION=%s: not X.Y.Z of a release whose device-API layouts Baton "
                    "serves (2.28.x, 2.29.2-2.29.3, 2.29.5-2.29.7, 2.30.0-2.30.7): reporting "
                    "%d",
                    s, BATON_NCCL_CODE);
    }
    atomic_store_explicit(&cached, v, memory_order_release);
    return v;
}

BT_API ncclResult_t ncclGetVersion(int *version)
{
    if (!version) {
        BT_WARN("ncclGetVersion: version is NULL");
        return ncclInvalidArgument;
    }
    *version = reported_version();
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
    case ncclTimeout:
        return "operation timed out";
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

/* A new communicator: allocate it and join the rendezvous at `id` (the raw bytes, resolved),
 * now, at the group's end, or in the background (non-blocking). cuda_dev -1: host memory. */
static ncclResult_t start_comm(ncclComm_t *newcomm, int nranks, int rank, const unsigned char *id,
                               const struct bt_comm_config *cfg, int cuda_dev)
{
    struct bt_comm *comm = NULL;
    bt_status_t st = bt_comm_alloc(nranks, rank, &comm);
    if (st != BT_OK)
        return (ncclResult_t)st;
    comm->config = *cfg;
    comm->cuda_dev = cuda_dev;
    struct bt_init_job job = {.comm = comm};
    memcpy(job.id, id, BT_UNIQUE_ID_BYTES);
    if (bt_group_depth() > 0 || !cfg->blocking) {
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

/* The device a new communicator runs on: the current one when CUDA is built in, a driver
 * and a GPU are there (its operations on host buffers still run on the host); -1 (host
 * memory) for host_only, batonCommInitRankHost, or DEVICE=cpu. */
static int device_of_new(int host_only)
{
    const char *devp = bt_param_str_device();
    return host_only || (devp && strcmp(devp, "cpu") == 0) ? -1 : bt_device_current();
}

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, const ncclUniqueId *id, int rank,
                              const ncclConfig_t *config, const char *fn)
{
    struct bt_comm_config cfg;
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

    unsigned char raw[BT_UNIQUE_ID_BYTES];
    st = resolve_id(id, rank, raw);
    if (st != BT_OK)
        return (ncclResult_t)st;
    return start_comm(newcomm, nranks, rank, raw, &cfg,
                      device_of_new(strcmp(fn, "batonCommInitRankHost") == 0));
}

BT_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, &commId, rank, NULL, "ncclCommInitRank");
}

/* ---- growing a communicator (NCCL 2.29+) ------------------------------------------------ */

BT_API ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)
{
    const char *fn = "ncclCommGetUniqueId";
    BT_API_CHECK_READY(comm, fn);
    BT_API_CHECK_PTR(uniqueId, fn, "uniqueId");
    struct bt_comm *c = (struct bt_comm *)comm;
    if (c->grow_pending) {
        BT_WARN("%s: rank %d: the id made before has not been used by an ncclCommGrow yet (one "
                "id per grow, one at a time)",
                fn, c->rank);
        return ncclInvalidUsage;
    }
    /* A root of its own, whatever COMM_ID says: the ranks to come meet there. */
    memset(uniqueId, 0, sizeof(*uniqueId));
    bt_status_t st = bt_bootstrap_unique_id_new(uniqueId->internal);
    if (st != BT_OK)
        return (ncclResult_t)st;
    memcpy(c->grow_id, uniqueId->internal, BT_UNIQUE_ID_BYTES);
    c->grow_pending = 1;
    return ncclSuccess;
}

/* What each existing rank tells the others when they grow: the id, from the one that has it. */
struct grow_offer {
    int32_t has;
    unsigned char id[BT_UNIQUE_ID_BYTES];
};

/* The existing ranks agree on the grow's id (the root's), over the parent's bootstrap. */
static bt_status_t grow_agree(struct bt_comm *c, const ncclUniqueId *mine, unsigned char *id)
{
    struct grow_offer *all = calloc((size_t)c->nranks, sizeof(*all));
    if (!all)
        return BT_ERR_SYSTEM;
    if (mine) {
        all[c->rank].has = 1;
        memcpy(all[c->rank].id, mine->internal, BT_UNIQUE_ID_BYTES);
    }
    bt_status_t st = bt_bootstrap_allgather(c->bs, all, sizeof(*all));
    int root = -1;
    for (int r = 0; r < c->nranks && st == BT_OK; r++) {
        if (!all[r].has)
            continue;
        if (root >= 0 && memcmp(all[r].id, all[root].id, BT_UNIQUE_ID_BYTES) != 0) {
            BT_WARN("ncclCommGrow: ranks %d and %d of the communicator both pass an id, and they "
                    "differ: one rank (the grow's root) passes the id, the others NULL",
                    root, r);
            st = BT_ERR_INVALID_USAGE;
        }
        root = root < 0 ? r : root;
    }
    if (st == BT_OK && root < 0) {
        BT_WARN("ncclCommGrow: no rank of the communicator passed the id: the rank that made it "
                "(ncclCommGetUniqueId) passes it, the others NULL");
        st = BT_ERR_INVALID_USAGE;
    }
    if (st == BT_OK)
        memcpy(id, all[root].id, BT_UNIQUE_ID_BYTES);
    free(all);
    return st;
}

BT_API ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId,
                                 int rank, ncclComm_t *newcomm, ncclConfig_t *config)
{
    const char *fn = "ncclCommGrow";
    BT_API_CHECK_PTR(newcomm, fn, "newcomm");
    *newcomm = NULL;
    struct bt_comm_config cfg;
    if (!comm) { /* a rank that joins, at the rank it was given */
        BT_API_CHECK_PTR(uniqueId, fn, "uniqueId (a joining rank passes the grow's id)");
        if (nRanks < 2 || rank < 0 || rank >= nRanks) {
            BT_WARN("%s: a joining rank needs 0 <= rank < nRanks (rank %d, nRanks %d)", fn, rank,
                    nRanks);
            return ncclInvalidArgument;
        }
        bt_status_t st = bt_api_config_parse(config, &cfg, fn);
        if (st != BT_OK)
            return (ncclResult_t)st;
        return start_comm(newcomm, nRanks, rank, (const unsigned char *)uniqueId->internal, &cfg,
                          device_of_new(0));
    }
    BT_API_CHECK_READY(comm, fn);
    struct bt_comm *c = (struct bt_comm *)comm;
    if (rank != -1) {
        BT_WARN("%s: rank %d of the communicator passes rank %d: an existing rank passes -1 (it "
                "keeps its rank)",
                fn, c->rank, rank);
        return ncclInvalidArgument;
    }
    if (nRanks <= c->nranks) {
        BT_WARN("%s: nRanks %d does not grow the communicator of %d ranks", fn, nRanks, c->nranks);
        return ncclInvalidArgument;
    }
    if (uniqueId &&
        (!c->grow_pending || memcmp(uniqueId->internal, c->grow_id, BT_UNIQUE_ID_BYTES) != 0)) {
        BT_WARN("%s: rank %d passes an id this communicator did not make (ncclCommGetUniqueId), "
                "or one used already",
                fn, c->rank);
        return ncclInvalidArgument;
    }
    if (bt_group_depth() > 0) {
        BT_WARN("%s: called inside ncclGroupStart/ncclGroupEnd: call it outside a group", fn);
        return ncclInvalidUsage;
    }
    if (config) {
        bt_status_t st = bt_api_config_parse(config, &cfg, fn);
        if (st != BT_OK)
            return (ncclResult_t)st;
    } else {
        cfg = c->config; /* the parent's */
    }
    unsigned char id[BT_UNIQUE_ID_BYTES];
    if (!bt_comm_acquire(c)) {
        BT_WARN("%s: communicator %p was destroyed or aborted", fn, (void *)comm);
        return ncclInvalidUsage;
    }
    bt_status_t st = grow_agree(c, uniqueId, id);
    bt_comm_release(c);
    if (st != BT_OK)
        return (ncclResult_t)st;
    c->grow_pending = 0; /* consumed, whatever the join says */
    return start_comm(newcomm, nRanks, c->rank, id, &cfg, c->cuda_dev);
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
        .pat = s->by_algo[BT_ALGO_PAT],
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
int bt_api_group_job(struct bt_init_job *job)
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
        return (ncclResult_t)bt_api_group_job(&job);
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
        return (ncclResult_t)bt_api_group_job(&job);
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
    /* NCCL_WIN_STRICT_ORDERING asks one-sided operations to land in order, which Baton's
     * always do (one FIFO per peer): accepted, nothing to change. */
    if (winFlags & ~(NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING)) {
        BT_WARN("%s: winFlags 0x%x has unknown bits (NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC, "
                "NCCL_WIN_STRICT_ORDERING)",
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
                              .win_out = (void **)win};
    if (bt_group_depth() > 0 || !c->config.blocking)
        return (ncclResult_t)bt_api_group_job(&job);
    struct bt_window *w = NULL;
    /* held for the call, as a group job holds it: an abort from another thread waits */
    if (!bt_comm_acquire(c)) {
        BT_WARN("ncclCommWindowRegister: comm %p is aborted or destroyed", (void *)c);
        return ncclInvalidUsage;
    }
    bt_status_t st = bt_window_register(c, buff, size, winFlags, &w);
    bt_comm_release(c);
    *win = w ? (ncclWindow_t)w->handle : NULL;
    return (ncclResult_t)st;
}

BT_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    BT_API_CHECK_READY(comm, "ncclCommWindowDeregister");
    if (!win)
        return ncclSuccess; /* as NCCL: what a registration without windows gave */
    struct bt_window *w = bt_api_window(win, "ncclCommWindowDeregister");
    if (!w)
        return ncclInvalidArgument;
    return (ncclResult_t)bt_window_deregister((struct bt_comm *)comm, w);
}

/* ---- suspend and resume (NCCL 2.29+) ------------------------------------------------------ */

/* Suspend or resume: outside a group, on a communicator no launch uses. */
static ncclResult_t suspend_or_resume(ncclComm_t comm, int suspend, const char *fn)
{
    if (bt_group_depth() > 0) {
        BT_WARN("%s: called inside ncclGroupStart/ncclGroupEnd: call it outside a group", fn);
        return ncclInvalidUsage;
    }
    struct bt_comm *c = (struct bt_comm *)comm;
    if (!bt_comm_acquire(c)) {
        BT_WARN("%s: communicator %p was destroyed or aborted", fn, (void *)comm);
        return ncclInvalidUsage;
    }
    bt_status_t st = suspend ? bt_comm_suspend(c) : bt_comm_resume(c);
    bt_comm_release(c);
    return (ncclResult_t)st;
}

BT_API ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)
{
    BT_API_CHECK_READY(comm, "ncclCommSuspend");
    if (flags & ~NCCL_SUSPEND_MEM) {
        BT_WARN("ncclCommSuspend: flags 0x%x has unknown bits (NCCL_SUSPEND_MEM is 0x%x)", flags,
                NCCL_SUSPEND_MEM);
        return ncclInvalidArgument;
    }
    if (!(flags & NCCL_SUSPEND_MEM))
        return ncclSuccess; /* as NCCL: nothing asked, nothing suspended */
    return suspend_or_resume(comm, 1, "ncclCommSuspend");
}

BT_API ncclResult_t ncclCommResume(ncclComm_t comm)
{
    BT_API_CHECK_READY(comm, "ncclCommResume");
    return suspend_or_resume(comm, 0, "ncclCommResume");
}

/* The Gpu* stats count the communicator's own memory kind: a GPU communicator's device memory,
 * a host communicator's host memory (its "device" is the host). Everything Baton holds for a
 * communicator there is released by a suspend: nothing persists. */
BT_API ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    BT_API_CHECK_READY(comm, "ncclCommMemStats");
    BT_API_CHECK_PTR(value, "ncclCommMemStats", "value");
    struct bt_comm *c = (struct bt_comm *)comm;
    switch (stat) {
    case ncclStatGpuMemSuspend:
    case ncclStatGpuMemTotal:
        *value = bt_comm_held(c);
        return ncclSuccess;
    case ncclStatGpuMemPersist:
        *value = 0;
        return ncclSuccess;
    case ncclStatGpuMemSuspended:
        *value = (uint64_t)atomic_load_explicit(&c->suspended, memory_order_acquire);
        return ncclSuccess;
    default:
        BT_WARN("ncclCommMemStats: stat %d is not an ncclCommMemStat_t (0..3)", (int)stat);
        return ncclInvalidArgument;
    }
}

/* ---- the device API's properties (NCCL 2.29+) ----------------------------------------------- */

/* The index NVML gives the GPU of CUDA device `dev`: its place among the machine's NVIDIA GPUs
 * in PCI bus order (/proc/driver/nvidia/gpus names one directory per bus id); -1 unknown. */
static int nvml_index(int dev)
{
    char mine[32];
    if (dev < 0 || bt_device_bus_id(dev, mine, sizeof(mine)) != BT_OK)
        return -1;
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d)
        return -1;
    int below = 0, found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        int c = strcasecmp(e->d_name, mine);
        below += c < 0;
        found |= c == 0;
    }
    closedir(d);
    return found ? below : -1;
}

BT_API ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t *props)
{
    const char *fn = "ncclCommQueryProperties";
    BT_API_CHECK_READY(comm, fn);
    BT_API_CHECK_PTR(props, fn, "props");
    size_t size = props->size;
    if (props->magic != NCCL_CONFIG_MAGIC || size < offsetof(ncclCommProperties_t, rank)) {
        BT_WARN("%s: props (magic 0x%x, size %zu) was not made with "
                "NCCL_COMM_PROPERTIES_INITIALIZER",
                fn, props->magic, size);
        return ncclInvalidArgument;
    }
    /* the program's headers: 2.28 (Baton's nccl.h declares the call) or a release whose
     * device-API layouts Baton serves; others are refused, as NCCL refuses them */
    unsigned v = props->version;
    if (v >= 22900 && !bt_devapi_version_served(v)) {
        BT_WARN("%s: props is from NCCL %u.%u.%u's headers; Baton serves the device API of NCCL "
                "2.28.x, 2.29.2-2.29.3, 2.29.5-2.29.7 and 2.30.0-2.30.7",
                fn, v / 10000, v / 100 % 100, v % 100);
        return ncclInvalidUsage;
    }
    struct bt_comm *c = (struct bt_comm *)comm;
    ncclCommProperties_t p;
    memset(&p, 0, sizeof(p));
    p.rank = c->rank;
    p.nRanks = c->nranks;
    p.cudaDev = c->cuda_dev;
    p.nvmlDev = nvml_index(c->cuda_dev);
    /* The device API (core/devcomm_abi.h) on a GPU communicator whose LSA peers map flat
     * (VMM memory). A program of 2.28's, 2.29's or 2.30.5+'s headers gets GIN too (proxy
     * type, every rank connected to every rank: railed requests are served by it as well);
     * one of 2.30.0-2.30.4's no GIN, so its kernels reach LSA peers only: as NCCL tells such
     * programs, supported where the LSA team is every rank (one host). Not offered: NVLink
     * multicast (off on these machines). */
    int lsa_base, lsa_size;
    bt_comm_lsa(c, &lsa_base, &lsa_size);
    int flat = lsa_size == 1 || bt_device_mem_is_vmm();
    int gin = c->cuda_dev >= 0 && (v < 23000 || v >= BT_DEVAPI_GIN_V2_FIRST);
    p.deviceApiSupport = c->cuda_dev >= 0 && flat && (gin || lsa_size == c->nranks);
    p.multimemSupport = 0;
    p.ginType = gin ? NCCL_GIN_TYPE_PROXY : NCCL_GIN_TYPE_NONE;
    p.railedGinType = gin && v >= 22905 ? NCCL_GIN_TYPE_PROXY : NCCL_GIN_TYPE_NONE;
    p.nLsaTeams = c->nranks / (c->local_ranks > 0 ? c->local_ranks : 1);
    /* one-sided calls (rma.h): on host memory, through mapped windows on one host and the
     * network across hosts; on a GPU communicator in stream order (rma_gpu.h) unless turned
     * off or its links failed */
    p.hostRmaSupport = c->config.num_rma_ctx > 0 &&
                       (c->cuda_dev < 0 || (bt_param_rma_gpu() && !c->rma_gpu_failed));
    /* the caller's struct may be older (smaller): copy what it holds, its header kept */
    size_t head = offsetof(ncclCommProperties_t, rank);
    memcpy((char *)props + head, (char *)&p + head, (size < sizeof(p) ? size : sizeof(p)) - head);
    return ncclSuccess;
}

/* Rank `peer`'s part of window w at offset, as this rank addresses it; fn names the call. */
static ncclResult_t peer_pointer(ncclWindow_t window, size_t offset, int peer, void **out,
                                 const char *fn)
{
    BT_API_CHECK_PTR(window, fn, "window");
    BT_API_CHECK_PTR(out, fn, "outPtr");
    struct bt_window *w = bt_api_window(window, fn);
    struct bt_comm *c = w ? w->comm : NULL;
    if (!c || !bt_comm_is_live(c) || bt_window_check(c, w, fn) != BT_OK)
        return ncclInvalidArgument;
    if (peer < 0 || peer >= c->nranks) {
        BT_WARN("%s: rank %d is out of range [0, %d)", fn, peer, c->nranks);
        return ncclInvalidArgument;
    }
    if (offset >= w->peer_size[peer]) {
        BT_WARN("%s: offset %zu is past rank %d's window of %llu bytes", fn, offset, peer,
                (unsigned long long)w->peer_size[peer]);
        return ncclInvalidArgument;
    }
    if (peer != c->rank && !w->mapped) {
        BT_WARN("%s: rank %d's part of window %p is not mapped here (a symmetric window of "
                "ncclMemAlloc memory, every rank on one host, maps)",
                fn, peer, (void *)w);
        return ncclInvalidArgument;
    }
    *out = (peer == c->rank ? w->base : w->peers[peer].base) + offset;
    return ncclSuccess;
}

BT_API ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                             void **outPtr)
{
    return peer_pointer(window, offset, peer, outPtr, "ncclGetPeerDevicePointer");
}

/* The LSA team as the device API numbers it (bt_comm_lsa): windows map only within it. */
BT_API ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                            void **outPtr)
{
    const char *fn = "ncclGetLsaDevicePointer";
    BT_API_CHECK_PTR(window, fn, "window");
    struct bt_window *w = bt_api_window(window, fn);
    struct bt_comm *c = w ? w->comm : NULL;
    if (!c || !bt_comm_is_live(c)) {
        BT_WARN("%s: window %p belongs to no live communicator", fn, (void *)window);
        return ncclInvalidArgument;
    }
    int base, size;
    bt_comm_lsa(c, &base, &size);
    if (lsaRank < 0 || lsaRank >= size) {
        BT_WARN("%s: LSA rank %d is out of range [0, %d)", fn, lsaRank, size);
        return ncclInvalidArgument;
    }
    return peer_pointer(window, offset, base + lsaRank, outPtr, fn);
}

BT_API ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    const char *fn = "ncclWinGetUserPtr";
    BT_API_CHECK_READY(comm, fn);
    BT_API_CHECK_PTR(win, fn, "win");
    BT_API_CHECK_PTR(outUserPtr, fn, "outUserPtr");
    struct bt_window *w = bt_api_window(win, fn);
    if (!w || bt_window_check((struct bt_comm *)comm, w, fn) != BT_OK)
        return ncclInvalidArgument;
    *outUserPtr = w->base;
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
BT_PNCCL(ncclWinGetUserPtr);
BT_PNCCL(ncclCommQueryProperties);
BT_PNCCL(ncclGetPeerDevicePointer);
BT_PNCCL(ncclGetLsaDevicePointer);
BT_PNCCL(ncclCommGetUniqueId);
BT_PNCCL(ncclCommGrow);
BT_PNCCL(ncclCommSuspend);
BT_PNCCL(ncclCommResume);
BT_PNCCL(ncclCommMemStats);
BT_PNCCL(ncclMemAlloc);
BT_PNCCL(ncclMemFree);
BT_PNCCL(ncclCommRegister);
BT_PNCCL(ncclCommDeregister);
