/* Device communicators (devcomm.h). */
#include "core/devcomm.h"

#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/window.h"
#include "device/device.h"
#include "util/log.h"

#define UNIT 128 /* a resource handle counts 128-byte units of the resource window */

struct bt_devcomm {
    struct bt_devcomm *next;
    void *buf;             /* the resource window's memory (ncclMemAlloc's) */
    struct bt_window *win; /* ... registered */
};

/* 2^32 / x as NCCL's device code divides with it (a power of two's rounds up to 2^32 / x). */
static uint32_t rcp32(uint32_t x)
{
    return UINT32_MAX / x + ((x & (x - 1)) == 0);
}

static size_t round_up(size_t x, size_t unit)
{
    return (x + unit - 1) / unit * unit;
}

/* What this implementation cannot give yet, WARNed naming it; BT_OK if nothing. */
static bt_status_t refuse_unsupported(const struct bt_comm *comm,
                                      const struct ncclDevCommRequirements *q, int lsa_size)
{
    const char *what = NULL;
    int gin_res = 0;
    for (const struct ncclDevResourceRequirements *r = q->resourceRequirementsList; r; r = r->next)
        gin_res |= r->ginSignalCount > 0 || r->ginCounterCount > 0;
    int mm = q->lsaMultimem;
    for (const struct ncclTeamRequirements *t = q->teamRequirementsList; t; t = t->next)
        mm |= t->multimem;
    if (comm->cuda_dev < 0)
        what = "a device communicator of a host-memory communicator (it needs GPU memory)";
    else if (mm)
        what = "multimem (NVLink multicast is never offered)";
    else if (q->ginForceEnable || q->ginSignalCount > 0 || q->ginCounterCount > 0 ||
             q->barrierCount > 0 || q->railGinBarrierCount > 0 || gin_res)
        what = "GIN (signals, counters, world or rail barriers: not served yet)";
    else if (lsa_size != comm->nranks)
        what = "a device communicator whose ranks are not all on one host (GIN is not served "
               "yet)";
    if (!what)
        return BT_OK;
    BT_WARN("ncclDevCommCreate: rank %d: %s", comm->rank, what);
    return BT_ERR_INVALID_USAGE;
}

bt_status_t bt_devcomm_create(struct bt_comm *comm, const struct ncclDevCommRequirements *q,
                              struct ncclDevComm *out)
{
    int lsa_base, lsa_size;
    bt_comm_lsa(comm, &lsa_base, &lsa_size);
    BT_CHECK(refuse_unsupported(comm, q, lsa_size));
    if (q->lsaBarrierCount < 0 || q->lsaLLA2ABlockCount < 0 || q->lsaLLA2ASlotCount < 0) {
        BT_WARN("ncclDevCommCreate: negative counts (lsaBarrierCount %d, lsaLLA2ABlockCount "
                "%d, lsaLLA2ASlotCount %d)",
                q->lsaBarrierCount, q->lsaLLA2ABlockCount, q->lsaLLA2ASlotCount);
        return BT_ERR_INVALID_ARG;
    }
    /* the layout: the LSA barriers, then each requirement's buffer at its alignment */
    size_t off = 0, nb = (size_t)q->lsaBarrierCount;
    ncclDevResourceHandle_t bar_handle = 0;
    if (nb > 0) {
        bar_handle = 0;
        off = round_up(sizeof(uint32_t) * nb * (3 + (size_t)lsa_size), UNIT);
    }
    for (const struct ncclDevResourceRequirements *r = q->resourceRequirementsList; r;
         r = r->next) {
        size_t align = r->bufferAlign > UNIT ? r->bufferAlign : UNIT;
        if (align & (align - 1)) {
            BT_WARN("ncclDevCommCreate: a resource requirement's bufferAlign %zu is not a power "
                    "of two",
                    r->bufferAlign);
            return BT_ERR_INVALID_ARG;
        }
        off = round_up(off, align);
        if (r->outBufferHandle)
            *r->outBufferHandle = (ncclDevResourceHandle_t)(off / UNIT);
        off += round_up(r->bufferSize, UNIT);
    }
    size_t total = off > UNIT ? off : UNIT;

    struct bt_devcomm *d = calloc(1, sizeof(*d));
    if (!d)
        return BT_ERR_SYSTEM;
    int prev = bt_device_get();
    bt_status_t st = bt_device_set(comm->cuda_dev);
    if (st == BT_OK)
        st = bt_device_mem_alloc(&d->buf, total);
    if (st == BT_OK)
        st = bt_device_zero(d->buf, total); /* barrier epochs and inboxes start at 0 */
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st != BT_OK) { /* (the other ranks wait in the registration until TIMEOUT) */
        if (d->buf)
            bt_device_mem_free(d->buf);
        free(d);
        return st;
    }
    st = bt_window_register(comm, d->buf, total, BT_WIN_SYMMETRIC, &d->win);
    if (st == BT_OK && comm->nranks > 1 && !(d->win->mapped && d->win->mine.flat)) {
        BT_WARN("ncclDevCommCreate: rank %d: the resource window could not be mapped flat on "
                "every rank (ncclMemAlloc's memory is not VMM here? CUMEM_ENABLE=0?)",
                comm->rank);
        st = BT_ERR_INVALID_USAGE;
    }
    if (st != BT_OK) {
        if (d->win)
            bt_window_deregister(comm, d->win);
        bt_device_mem_free(d->buf);
        free(d);
        return st;
    }
    memset(out, 0, sizeof(*out));
    out->rank = comm->rank;
    out->nRanks = comm->nranks;
    out->nRanks_rcp32 = rcp32((uint32_t)comm->nranks);
    out->lsaRank = comm->rank - lsa_base;
    out->lsaSize = lsa_size;
    out->lsaSize_rcp32 = rcp32((uint32_t)lsa_size);
    out->resourceWindow = d->win->handle;
    out->resourceWindow_inlined = d->win->vid;
    out->lsaBarrier.bufHandle = bar_handle;
    out->lsaBarrier.nBarriers = (int)nb;
    d->next = comm->devcomms;
    comm->devcomms = d;
    BT_INFO(BT_LOG_INIT, "rank %d: device communicator: %zu bytes of resources, %zu LSA barriers",
            comm->rank, total, nb);
    return BT_OK;
}

static void free_one(struct bt_comm *comm, struct bt_devcomm *d)
{
    bt_window_deregister(comm, d->win);
    bt_device_mem_free(d->buf);
    free(d);
}

bt_status_t bt_devcomm_destroy(struct bt_comm *comm, const struct ncclDevComm *dc)
{
    struct bt_devcomm **pp = &comm->devcomms;
    while (*pp && (*pp)->win->handle != dc->resourceWindow)
        pp = &(*pp)->next;
    if (!*pp) {
        BT_WARN("ncclDevCommDestroy: rank %d: %p is not a device communicator of comm %p "
                "(destroyed already?)",
                comm->rank, (const void *)dc, (void *)comm);
        return BT_ERR_INVALID_ARG;
    }
    struct bt_devcomm *d = *pp;
    *pp = d->next;
    free_one(comm, d);
    return BT_OK;
}

void bt_devcomm_free_all(struct bt_comm *comm)
{
    while (comm->devcomms) {
        struct bt_devcomm *d = comm->devcomms;
        comm->devcomms = d->next;
        free_one(comm, d);
    }
}
