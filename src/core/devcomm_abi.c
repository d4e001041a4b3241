/* The device API's host structs, release by release (devcomm_abi.h). */
#include "core/devcomm_abi.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

/* The offsets NCCL's releases have (interface facts: a program's kernels read them). */
#define AT(T, f, off) _Static_assert(offsetof(T, f) == (off), #T "." #f " is not at " #off)
AT(struct ncclDevComm, lsaBarrier, 120);
AT(struct ncclDevComm, ginSignalShadows, 192);
_Static_assert(sizeof(struct ncclDevComm) == 200, "2.28's ncclDevComm is 200 bytes");
AT(struct bt_devapi_devcomm_v22907, ginContextCount, 200);
AT(struct bt_devapi_devcomm_v22907, ginContextBase, 204);
AT(struct bt_devapi_devcomm_v22907, ginIsRailed, 208);
AT(struct bt_devapi_devcomm_v22907, abortFlag, 216);
_Static_assert(sizeof(struct bt_devapi_devcomm_v22907) == 224, "2.29.7's ncclDevComm: 224");
AT(struct bt_devapi_devcomm_v23000, rank, 8);
AT(struct bt_devapi_devcomm_v23000, lsaSize_rcp32, 28);
AT(struct bt_devapi_devcomm_v23000, windowTable, 32);
AT(struct bt_devapi_devcomm_v23000, resourceWindow, 40);
AT(struct bt_devapi_devcomm_v23000, resourceWindow_inlined.lsaFlatBase, 56);
AT(struct bt_devapi_devcomm_v23000, resourceWindow_inlined.stride4G, 72);
AT(struct bt_devapi_devcomm_v23000, resourceWindow_inlined.mcOffset4K, 76);
AT(struct bt_devapi_devcomm_v23000, hybridWorldGinBarrier, 112);
AT(struct bt_devapi_devcomm_v23000, lsaMultimem, 120);
AT(struct bt_devapi_devcomm_v23000, lsaBarrier, 128);
AT(struct bt_devapi_devcomm_v23000, railGinBarrier, 136);
AT(struct bt_devapi_devcomm_v23000, ginConnectionCount, 144);
AT(struct bt_devapi_devcomm_v23000, ginNetDeviceTypes, 145);
AT(struct bt_devapi_devcomm_v23000, ginHandles, 152);
AT(struct bt_devapi_devcomm_v23000, ginSignalCount, 184);
AT(struct bt_devapi_devcomm_v23000, ginSignalShadows, 192);
AT(struct bt_devapi_devcomm_v23000, ginContextCount, 200);
AT(struct bt_devapi_devcomm_v23000, ginConnectionsRailed, 204);
AT(struct bt_devapi_devcomm_v23000, abortFlag, 208);
AT(struct bt_devapi_devcomm_v23000, hybridLsaBarrier, 216);
AT(struct bt_devapi_devcomm_v23000, hybridRailGinBarrier, 224);
AT(struct bt_devapi_devcomm_v23000, worldGinBarrier, 232);
_Static_assert(sizeof(struct bt_devapi_devcomm_v23000) == 240, "2.30's ncclDevComm: 240");
AT(struct bt_devapi_reqs_v2, resourceRequirementsList, 16);
AT(struct bt_devapi_reqs_v2, lsaMultimem, 32);
AT(struct bt_devapi_reqs_v2, ginCounterCount, 68);
AT(struct bt_devapi_reqs_v2, ginConnectionType, 72);
AT(struct bt_devapi_reqs_v2, ginQueueDepth, 80);
AT(struct bt_devapi_reqs_v2, worldGinBarrierCount, 88);
AT(struct bt_devapi_reqs_v2, ginVaSignalsRequired, 93);
_Static_assert(sizeof(struct bt_devapi_reqs_v2) == 96, "2.30.7's requirements: 96 bytes");
AT(struct bt_devapi_window, ginMultiSegmentWins, 72);
AT(struct bt_devapi_window, numSegments, 80);
AT(struct bt_devapi_window, segment, 88);
_Static_assert(sizeof(struct bt_devapi_segment_window) == 48, "ncclSegmentWindow: 48 bytes");
#undef AT

/* The shortest versioned requirements (2.29.2's: through ginCounterCount). */
#define REQS_V2_MIN (offsetof(struct bt_devapi_reqs_v2, ginCounterCount) + sizeof(int))

static void version_string(unsigned v, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
}

/* The release a versioned layout of `version` belongs to; -1: none Baton reads. */
static int abi_of(unsigned version)
{
    if (version >= 22902 && version <= 22903)
        return BT_DEVAPI_ABI_2_29_2;
    if (version >= 22905 && version <= 22907)
        return BT_DEVAPI_ABI_2_29_5;
    if (version >= 23000 && version <= BT_DEVAPI_NEWEST)
        return BT_DEVAPI_ABI_2_30;
    return -1;
}

int bt_devapi_version_served(unsigned version)
{
    return (version >= 22800 && version <= 22899) || abi_of(version) >= 0;
}

/* Whether the requirements name GIN resources: signals, counters, or GIN barriers (from
 * 2.29.5 a world barrier is one: an LSA barrier joined by GIN across hosts). */
static int gin_resources(const struct bt_devapi_reqs_v2 *r, int barriers_are_gin)
{
    int any = r->ginSignalCount > 0 || r->ginCounterCount > 0 || r->worldGinBarrierCount > 0 ||
              (barriers_are_gin && (r->barrierCount > 0 || r->railGinBarrierCount > 0));
    for (const struct ncclDevResourceRequirements *n = r->resourceRequirementsList; n && !any;
         n = n->next)
        any = n->ginSignalCount > 0 || n->ginCounterCount > 0;
    return any;
}

/* 2.29+'s requirements into 2.28's terms, with each release's rules (NCCL's). */
static bt_status_t read_v2(const struct bt_devapi_reqs_v2 *r, enum bt_devapi_abi abi,
                           struct bt_devcomm_reqs *out, const char *fn)
{
    char v[16];
    version_string(r->version, v, sizeof(v));
    int connection = r->ginForceEnable ? 1 /* FULL */ : r->ginConnectionType;
    /* 2.29.2-3: GIN forced or GIN resources; from 2.29.5 a connection type (or
     * ginForceEnable), resources or not: a kernel that only puts, flushes or signals VA
     * words asks none */
    int gin_asked =
        abi == BT_DEVAPI_ABI_2_29_2 ? r->ginForceEnable || gin_resources(r, 0) : connection != 0;
    /* 2.29.2-2.29.3's GIN is 2.28's (descriptors, contexts, barriers); 2.29.5-2.29.7's and
     * 2.30.5+'s have formats of their own (transport/gin_proxy.h); 2.30.0-2.30.4 wrote
     * others */
    int gin_served = abi == BT_DEVAPI_ABI_2_29_2 || abi == BT_DEVAPI_ABI_2_29_5 ||
                     (abi == BT_DEVAPI_ABI_2_30 && r->version >= BT_DEVAPI_GIN_V2_FIRST);
    if (gin_asked && !gin_served) {
        BT_WARN("%s: the program was built against NCCL %s's device-API headers and asks for GIN "
                "(a connection type, ginForceEnable or GIN signals/counters); Baton serves GIN "
                "to programs built against NCCL 2.28's, 2.29's or 2.30.5-2.30.7's headers (or "
                "Baton's own): 2.30.0-2.30.4 wrote other versions of GIN's descriptors (LSA is "
                "served)",
                fn, v);
        return BT_ERR_INVALID_USAGE;
    }
    if (abi != BT_DEVAPI_ABI_2_29_2 && connection == 0 && gin_resources(r, 1)) {
        BT_WARN("%s: the requirements ask for GIN resources (ginSignalCount %d, ginCounterCount "
                "%d, barrierCount %d, railGinBarrierCount %d, worldGinBarrierCount %d, or a "
                "resource requirement's signals/counters) but ginConnectionType is "
                "NCCL_GIN_CONNECTION_NONE (NCCL %s's headers: barrierCount is a GIN barrier "
                "there; an LSA-only kernel asks lsaBarrierCount)",
                fn, r->ginSignalCount, r->ginCounterCount, r->barrierCount, r->railGinBarrierCount,
                r->worldGinBarrierCount, v);
        return BT_ERR_INVALID_ARG;
    }
    if (gin_asked && connection == 2 /* RAIL */ && r->worldGinBarrierCount > 0) {
        BT_WARN("%s: worldGinBarrierCount %d with ginConnectionType NCCL_GIN_CONNECTION_RAIL: a "
                "world GIN barrier needs every rank connected (NCCL_GIN_CONNECTION_FULL)",
                fn, r->worldGinBarrierCount);
        return BT_ERR_INVALID_ARG;
    }
    if (gin_asked && (connection < 0 || connection > 2)) {
        BT_WARN("%s: ginConnectionType %d is none of NONE (0), FULL (1), RAIL (2)", fn, connection);
        return BT_ERR_INVALID_ARG;
    }
    struct ncclDevCommRequirements *q = &out->q;
    memset(q, 0, sizeof(*q));
    q->resourceRequirementsList = r->resourceRequirementsList;
    q->teamRequirementsList = r->teamRequirementsList;
    q->lsaMultimem = r->lsaMultimem;
    q->lsaBarrierCount = r->lsaBarrierCount;
    /* 2.29.2-2.29.3: a world barrier was the LSA team's alone (NCCL reads it so since) */
    if (abi == BT_DEVAPI_ABI_2_29_2 && r->barrierCount > q->lsaBarrierCount)
        q->lsaBarrierCount = r->barrierCount;
    q->lsaLLA2ABlockCount = r->lsaLLA2ABlockCount;
    q->lsaLLA2ASlotCount = r->lsaLLA2ASlotCount;
    out->gin_connection = 0;
    out->world_gin_barriers = 0;
    if (gin_asked) { /* the counts every release's GIN has */
        /* barrierCount: a world barrier, whose rail GIN barrier (2.29) or GIN barriers of
         * its own (2.30) are GIN's too */
        q->barrierCount = r->barrierCount;
        q->railGinBarrierCount = r->railGinBarrierCount;
        q->ginContextCount = r->ginContextCount;
        q->ginSignalCount = r->ginSignalCount;
        q->ginCounterCount = r->ginCounterCount;
        if (abi == BT_DEVAPI_ABI_2_29_2) { /* 2.28's GIN, read by 2.28's rules */
            q->ginForceEnable = r->ginForceEnable;
        } else { /* 2.29.5+: a connection type, contexts, a queue depth */
            out->gin_connection = connection;
            out->gin_queue_depth = r->ginQueueDepth;
        }
        if (abi == BT_DEVAPI_ABI_2_30) { /* 2.30.5+: world GIN barriers, strong signals */
            out->world_gin_barriers = r->worldGinBarrierCount;
            out->gin_strong = r->ginStrongSignalsRequired;
        }
    }
    /* without GIN ginContextCount is a hint (2.30's initializer says 4): no context */
    return BT_OK;
}

bt_status_t bt_devcomm_reqs_read(const void *reqs, struct bt_devcomm_reqs *out, const char *fn)
{
    memset(out, 0, sizeof(*out));
    unsigned head[2]; /* where 2.29+ have magic and version; 2.28 its second pointer */
    memcpy(head, (const char *)reqs + sizeof(size_t), sizeof(head));
    if (head[0] != NCCL_CONFIG_MAGIC) { /* an aligned pointer's low half is never odd */
        out->abi = BT_DEVAPI_ABI_2_28;
        out->version = 22800;
        memcpy(&out->q, reqs, sizeof(out->q));
        return BT_OK;
    }
    char v[16];
    version_string(head[1], v, sizeof(v));
    int abi = abi_of(head[1]);
    if (abi < 0) {
        BT_WARN("%s: the program was built against NCCL %s's device-API headers; Baton reads "
                "the layouts of NCCL 2.28.x, 2.29.2-2.29.3, 2.29.5-2.29.7 and 2.30.0-2.30.7%s",
                fn, v,
                head[1] > BT_DEVAPI_NEWEST ? " (rebuild against one of those, or Baton's own "
                                             "nccl_device.h)"
                                           : "");
        return BT_ERR_INVALID_USAGE;
    }
    size_t size;
    memcpy(&size, reqs, sizeof(size));
    if (size < REQS_V2_MIN) {
        BT_WARN("%s: reqs says it is %zu bytes (NCCL %s's headers); its fields need %zu: was it "
                "made with NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER?",
                fn, size, v, REQS_V2_MIN);
        return BT_ERR_INVALID_ARG;
    }
    /* what the program's headers have of 2.30.7's struct; the rest as its initializer */
    struct bt_devapi_reqs_v2 r;
    memset(&r, 0, sizeof(r));
    r.ginStrongSignalsRequired = r.ginVaSignalsRequired = true;
    memcpy(&r, reqs, size < sizeof(r) ? size : sizeof(r));
    out->abi = (enum bt_devapi_abi)abi;
    out->version = head[1];
    return read_v2(&r, out->abi, out, fn);
}

static void write_v23000(unsigned version, const struct bt_devcomm_fill *f,
                         struct bt_devapi_devcomm_v23000 *o)
{
    const struct ncclDevComm *d = &f->v228;
    memset(o, 0, sizeof(*o));
    o->magic = NCCL_CONFIG_MAGIC;
    o->version = version;
    o->rank = d->rank;
    o->nRanks = d->nRanks;
    o->nRanks_rcp32 = d->nRanks_rcp32;
    o->lsaRank = d->lsaRank;
    o->lsaSize = d->lsaSize;
    o->lsaSize_rcp32 = d->lsaSize_rcp32;
    o->windowTable = d->windowTable;
    o->resourceWindow = d->resourceWindow;
    o->resourceWindow_inlined.lsaFlatBase = d->resourceWindow_inlined.lsaFlatBase;
    o->resourceWindow_inlined.stride4G = d->resourceWindow_inlined.stride4G;
    o->resourceWindow_inlined.mcOffset4K = d->resourceWindow_inlined.mcOffset4K;
    o->lsaMultimem = d->lsaMultimem;
    o->lsaBarrier = d->lsaBarrier;
    o->abortFlag = f->abort_flag;
    /* GIN (2.30.5+): one connection (the proxy), its contexts, the barriers of its signals;
     * without it all of these stay none */
    o->railGinBarrier = d->railGinBarrier;
    o->ginConnectionCount = d->ginContextCount;
    memcpy(o->ginNetDeviceTypes, d->ginTypes, sizeof(o->ginNetDeviceTypes));
    memcpy(o->ginHandles, d->ginHandles, sizeof(o->ginHandles));
    o->ginSignalCount = d->ginSignalCount;
    o->ginCounterCount = d->ginCounterCount;
    o->ginSignalShadows = d->ginSignalShadows;
    o->ginContextCount = f->gin_contexts;
    o->ginConnectionsRailed = false; /* every rank is connected to every rank */
    o->ginStrongLegacySignals = f->gin_strong;
    o->ginContextsRailed = f->gin_contexts_railed;
    o->hybridLsaBarrier = f->hybrid_lsa;
    o->hybridRailGinBarrier = f->hybrid_rail;
    o->hybridWorldGinBarrier = f->hybrid_world;
    o->worldGinBarrier = f->world_gin;
}

void bt_devcomm_write(enum bt_devapi_abi abi, unsigned version, const struct bt_devcomm_fill *f,
                      void *out)
{
    switch (abi) {
    case BT_DEVAPI_ABI_2_28:
    case BT_DEVAPI_ABI_2_29_2:
        memcpy(out, &f->v228, sizeof(f->v228));
        return;
    case BT_DEVAPI_ABI_2_29_5: {
        struct bt_devapi_devcomm_v22907 o;
        memset(&o, 0, sizeof(o));
        o.v228 = f->v228; /* its ginContextCount: the connections (one, the proxy's) */
        o.ginContextCount = f->gin_contexts;
        o.ginContextBase = 0;  /* each device communicator has contexts of its own */
        o.ginIsRailed = false; /* every rank is connected to every rank */
        o.abortFlag = f->abort_flag;
        memcpy(out, &o, sizeof(o));
        return;
    }
    case BT_DEVAPI_ABI_2_30: {
        struct bt_devapi_devcomm_v23000 o;
        write_v23000(version, f, &o);
        memcpy(out, &o, sizeof(o));
        return;
    }
    }
}

const void *bt_devcomm_resource_window(const void *dc)
{
    unsigned magic;
    const void *w;
    memcpy(&magic, dc, sizeof(magic));
    if (magic == NCCL_CONFIG_MAGIC)
        memcpy(&w, (const char *)dc + offsetof(struct bt_devapi_devcomm_v23000, resourceWindow),
               sizeof(w));
    else
        memcpy(&w, (const char *)dc + offsetof(struct ncclDevComm, resourceWindow), sizeof(w));
    return w;
}
