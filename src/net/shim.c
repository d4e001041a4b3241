/*
 * Older NCCL net tables (v6..v10) seen as v11, so the NET transport drives one interface.
 * Each shim is a v11 table whose members call the older table's, filling what the older
 * version lacks:
 *   v10  init without a context; connect takes the comm's config (kept from init); no
 *        finalize or setNetAttr
 *   v9   init without a profiler; connect without a config; isend/irecv without phandles
 *   v8   int sizes on the data path (a message over INT_MAX is refused); properties without
 *        forceFlush, virtual devices or size limits (NCCL's 1 GB default)
 *   v7   int registration size; properties without regIsGlobal
 *   v6   no device handles in connect/accept, no getDeviceMr or irecvConsumed
 * One v10 table, one v9 and one of v8/v7/v6 per process (the shims' members reach them
 * through statics): NCCL itself keeps one plugin in use; a second library that needs a shim
 * already taken is refused.
 */
#include <limits.h>
#include <string.h>

#include "net/net.h"

#define MAX_NET_SIZE ((size_t)1 << 30) /* NCCL's size limit for tables that do not say */
#define SHIM_MAX_RECVS 8

static const ncclNet_v10_t *v10;
static const ncclNet_v9_t *v9;
static const ncclNet_v8_t *v8;
static const ncclNet_v7_t *v7;
static const ncclNet_v6_t *v6;
static int v10_tc = NCCL_NET_TRAFFIC_CLASS_UNDEF;

static int g_ctx; /* the context older tables do not have */

/* ---- what every shim shares ---- */

static ncclResult_t no_finalize(void *ctx)
{
    (void)ctx;
    return ncclSuccess;
}

static ncclResult_t no_attr(void *ctx, ncclNetAttr_v11_t *attr)
{
    (void)ctx, (void)attr;
    return ncclSuccess;
}

/* Properties of v6..v8 that v11 adds, as NCCL assumes them. */
static void props_defaults(int dev, ncclNetProperties_v11_t *p)
{
    p->vProps.ndevs = 1;
    p->vProps.devs[0] = dev;
    p->maxP2pBytes = MAX_NET_SIZE;
    p->maxCollBytes = MAX_NET_SIZE;
    p->maxMultiRequestSize = 1;
}

static int size_fits(size_t size)
{
    if (size <= INT_MAX)
        return 1;
    BT_WARN("NET/Plugin: a %zu-byte message is too large for this plugin's table (int sizes)",
            size);
    return 0;
}

/* ---- v10 ---- */

static ncclResult_t s10_init(void **ctx, uint64_t id, ncclNetCommConfig_v11_t *cfg,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    (void)id;
    v10_tc = cfg ? cfg->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
    *ctx = &g_ctx;
    return v10->init(log, prof);
}

static ncclResult_t s10_props(int dev, ncclNetProperties_v11_t *p)
{
    ncclNetProperties_v10_t o;
    memset(&o, 0, sizeof(o));
    ncclResult_t r = v10->getProperties(dev, &o);
    memset(p, 0, sizeof(*p));
    memcpy(p, &o, sizeof(o)); /* v11 appends maxMultiRequestSize to v10's layout */
    p->maxMultiRequestSize = 1;
    return r;
}

static ncclResult_t s10_listen(void *ctx, int dev, void *h, void **lc)
{
    (void)ctx;
    return v10->listen(dev, h, lc);
}

static ncclResult_t s10_connect(void *ctx, int dev, void *h, void **sc,
                                ncclNetDeviceHandle_v11_t **dc)
{
    (void)ctx;
    ncclNetCommConfig_v10_t cfg = {.trafficClass = v10_tc};
    return v10->connect(dev, &cfg, h, sc, dc);
}

/* the members whose signatures v10 shares with v11 are the plugin's own (bt_net_shim) */
static ncclNet_v11_t shim10 = {
    .init = s10_init,
    .getProperties = s10_props,
    .listen = s10_listen,
    .connect = s10_connect,
    .finalize = no_finalize,
    .setNetAttr = no_attr,
};

/* ---- v9 ---- */

static ncclResult_t s9_init(void **ctx, uint64_t id, ncclNetCommConfig_v11_t *cfg,
                            ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    (void)id, (void)cfg, (void)prof;
    *ctx = &g_ctx;
    return v9->init(log);
}

static ncclResult_t s9_props(int dev, ncclNetProperties_v11_t *p)
{
    ncclNetProperties_v9_t o;
    memset(&o, 0, sizeof(o));
    ncclResult_t r = v9->getProperties(dev, &o);
    memset(p, 0, sizeof(*p));
    memcpy(p, &o, sizeof(o)); /* the v10 layout */
    p->maxMultiRequestSize = 1;
    return r;
}

static ncclResult_t s9_listen(void *ctx, int dev, void *h, void **lc)
{
    (void)ctx;
    return v9->listen(dev, h, lc);
}
static ncclResult_t s9_connect(void *ctx, int dev, void *h, void **sc,
                               ncclNetDeviceHandle_v11_t **dc)
{
    (void)ctx;
    return v9->connect(dev, h, sc, dc);
}
static ncclResult_t s9_isend(void *c, void *d, size_t n, int tag, void *mh, void *ph, void **r)
{
    (void)ph;
    return v9->isend(c, d, n, tag, mh, r);
}
static ncclResult_t s9_irecv(void *c, int n, void **d, size_t *s, int *t, void **mh, void **ph,
                             void **r)
{
    (void)ph;
    return v9->irecv(c, n, d, s, t, mh, r);
}

/* as for v10, the members v9 shares with v11 are the plugin's own (bt_net_shim) */
static ncclNet_v11_t shim9 = {
    .init = s9_init,
    .getProperties = s9_props,
    .listen = s9_listen,
    .connect = s9_connect,
    .isend = s9_isend,
    .irecv = s9_irecv,
    .finalize = no_finalize,
    .setNetAttr = no_attr,
};

/* ---- v8, v7, v6: one set of members; the version's differences are in the branches ---- */

static int old_version; /* 8, 7 or 6: the one table of these loaded */

static ncclResult_t so_init(void **ctx, uint64_t id, ncclNetCommConfig_v11_t *cfg,
                            ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    (void)id, (void)cfg, (void)prof;
    *ctx = &g_ctx;
    return old_version == 8 ? v8->init(log) : old_version == 7 ? v7->init(log) : v6->init(log);
}

static ncclResult_t so_devices(int *n)
{
    return old_version == 8 ? v8->devices(n) : old_version == 7 ? v7->devices(n) : v6->devices(n);
}

static ncclResult_t so_props(int dev, ncclNetProperties_v11_t *p)
{
    ncclResult_t r;
    memset(p, 0, sizeof(*p));
    if (old_version == 8) {
        ncclNetProperties_v8_t o;
        memset(&o, 0, sizeof(o));
        r = v8->getProperties(dev, &o);
        p->name = o.name, p->pciPath = o.pciPath, p->guid = o.guid;
        p->ptrSupport = o.ptrSupport, p->regIsGlobal = o.regIsGlobal, p->speed = o.speed;
        p->port = o.port, p->latency = o.latency, p->maxComms = o.maxComms;
        p->maxRecvs = o.maxRecvs, p->netDeviceType = o.netDeviceType;
        p->netDeviceVersion = o.netDeviceVersion;
    } else if (old_version == 7) {
        ncclNetProperties_v7_t o;
        memset(&o, 0, sizeof(o));
        r = v7->getProperties(dev, &o);
        p->name = o.name, p->pciPath = o.pciPath, p->guid = o.guid;
        p->ptrSupport = o.ptrSupport, p->speed = o.speed, p->port = o.port;
        p->latency = o.latency, p->maxComms = o.maxComms, p->maxRecvs = o.maxRecvs;
        p->netDeviceType = o.netDeviceType, p->netDeviceVersion = o.netDeviceVersion;
    } else {
        ncclNetProperties_v6_t o;
        memset(&o, 0, sizeof(o));
        r = v6->getProperties(dev, &o);
        p->name = o.name, p->pciPath = o.pciPath, p->guid = o.guid;
        p->ptrSupport = o.ptrSupport, p->speed = o.speed, p->port = o.port;
        p->latency = o.latency, p->maxComms = o.maxComms, p->maxRecvs = o.maxRecvs;
    }
    props_defaults(dev, p);
    return r;
}

static ncclResult_t so_listen(void *ctx, int dev, void *h, void **lc)
{
    (void)ctx;
    return old_version == 8   ? v8->listen(dev, h, lc)
           : old_version == 7 ? v7->listen(dev, h, lc)
                              : v6->listen(dev, h, lc);
}

static ncclResult_t so_connect(void *ctx, int dev, void *h, void **sc,
                               ncclNetDeviceHandle_v11_t **dc)
{
    (void)ctx;
    return old_version == 8   ? v8->connect(dev, h, sc, dc)
           : old_version == 7 ? v7->connect(dev, h, sc, dc)
                              : v6->connect(dev, h, sc);
}

static ncclResult_t so_accept(void *lc, void **rc, ncclNetDeviceHandle_v11_t **dc)
{
    return old_version == 8   ? v8->accept(lc, rc, dc)
           : old_version == 7 ? v7->accept(lc, rc, dc)
                              : v6->accept(lc, rc);
}

static ncclResult_t so_reg(void *c, void *d, size_t n, int t, void **mh)
{
    if (old_version == 8)
        return v8->regMr(c, d, n, t, mh);
    if (!size_fits(n))
        return ncclInternalError;
    return old_version == 7 ? v7->regMr(c, d, (int)n, t, mh) : v6->regMr(c, d, (int)n, t, mh);
}

static ncclResult_t so_regdb(void *c, void *d, size_t n, int t, uint64_t o, int fd, void **mh)
{
    return old_version == 8   ? v8->regMrDmaBuf(c, d, n, t, o, fd, mh)
           : old_version == 7 ? v7->regMrDmaBuf(c, d, n, t, o, fd, mh)
                              : v6->regMrDmaBuf(c, d, n, t, o, fd, mh);
}

static ncclResult_t so_dereg(void *c, void *mh)
{
    return old_version == 8   ? v8->deregMr(c, mh)
           : old_version == 7 ? v7->deregMr(c, mh)
                              : v6->deregMr(c, mh);
}

static ncclResult_t so_isend(void *c, void *d, size_t n, int tag, void *mh, void *ph, void **r)
{
    (void)ph;
    if (!size_fits(n))
        return ncclInternalError;
    return old_version == 8   ? v8->isend(c, d, (int)n, tag, mh, r)
           : old_version == 7 ? v7->isend(c, d, (int)n, tag, mh, r)
                              : v6->isend(c, d, (int)n, tag, mh, r);
}

static ncclResult_t so_irecv(void *c, int n, void **d, size_t *s, int *t, void **mh, void **ph,
                             void **r)
{
    (void)ph;
    int sizes[SHIM_MAX_RECVS];
    if (n < 1 || n > SHIM_MAX_RECVS) {
        BT_WARN("NET/Plugin: irecv of %d buffers (at most %d through an old table)", n,
                SHIM_MAX_RECVS);
        return ncclInternalError;
    }
    for (int i = 0; i < n; i++) {
        if (!size_fits(s[i]))
            return ncclInternalError;
        sizes[i] = (int)s[i];
    }
    return old_version == 8   ? v8->irecv(c, n, d, sizes, t, mh, r)
           : old_version == 7 ? v7->irecv(c, n, d, sizes, t, mh, r)
                              : v6->irecv(c, n, d, sizes, t, mh, r);
}

static ncclResult_t so_iflush(void *c, int n, void **d, int *s, void **mh, void **r)
{
    return old_version == 8   ? v8->iflush(c, n, d, s, mh, r)
           : old_version == 7 ? v7->iflush(c, n, d, s, mh, r)
                              : v6->iflush(c, n, d, s, mh, r);
}

static ncclResult_t so_test(void *r, int *done, int *s)
{
    return old_version == 8   ? v8->test(r, done, s)
           : old_version == 7 ? v7->test(r, done, s)
                              : v6->test(r, done, s);
}

static ncclResult_t so_close_send(void *c)
{
    return old_version == 8   ? v8->closeSend(c)
           : old_version == 7 ? v7->closeSend(c)
                              : v6->closeSend(c);
}

static ncclResult_t so_close_recv(void *c)
{
    return old_version == 8   ? v8->closeRecv(c)
           : old_version == 7 ? v7->closeRecv(c)
                              : v6->closeRecv(c);
}

static ncclResult_t so_close_listen(void *c)
{
    return old_version == 8   ? v8->closeListen(c)
           : old_version == 7 ? v7->closeListen(c)
                              : v6->closeListen(c);
}

static ncclNet_v11_t shim_old = {
    .init = so_init,
    .devices = so_devices,
    .getProperties = so_props,
    .listen = so_listen,
    .connect = so_connect,
    .accept = so_accept,
    .regMr = so_reg,
    .regMrDmaBuf = so_regdb,
    .deregMr = so_dereg,
    .isend = so_isend,
    .irecv = so_irecv,
    .iflush = so_iflush,
    .test = so_test,
    .closeSend = so_close_send,
    .closeRecv = so_close_recv,
    .closeListen = so_close_listen,
    .finalize = no_finalize,
    .setNetAttr = no_attr,
};

const ncclNet_v11_t *bt_net_shim(const void *table, int version)
{
    const ncclNet_v11_t *out = NULL;
    int taken = 0;
    switch (version) {
    case 10:
        taken = v10 != NULL;
        if (!taken) {
            v10 = table;
            shim10.name = v10->name;
            shim10.devices = v10->devices;
            shim10.accept = v10->accept;
            shim10.regMr = v10->regMr;
            shim10.regMrDmaBuf = v10->regMrDmaBuf;
            shim10.deregMr = v10->deregMr;
            shim10.isend = v10->isend;
            shim10.irecv = v10->irecv;
            shim10.iflush = v10->iflush;
            shim10.test = v10->test;
            shim10.closeSend = v10->closeSend;
            shim10.closeRecv = v10->closeRecv;
            shim10.closeListen = v10->closeListen;
            shim10.getDeviceMr = v10->getDeviceMr;
            shim10.irecvConsumed = v10->irecvConsumed;
            shim10.makeVDevice = v10->makeVDevice; /* the same virtual-device layout */
            out = &shim10;
        }
        break;
    case 9:
        taken = v9 != NULL;
        if (!taken) {
            v9 = table;
            shim9.name = v9->name;
            shim9.devices = v9->devices;
            shim9.accept = v9->accept;
            shim9.regMr = v9->regMr;
            shim9.regMrDmaBuf = v9->regMrDmaBuf;
            shim9.deregMr = v9->deregMr;
            shim9.iflush = v9->iflush;
            shim9.test = v9->test;
            shim9.closeSend = v9->closeSend;
            shim9.closeRecv = v9->closeRecv;
            shim9.closeListen = v9->closeListen;
            shim9.getDeviceMr = v9->getDeviceMr;
            shim9.irecvConsumed = v9->irecvConsumed;
            shim9.makeVDevice = v9->makeVDevice;
            out = &shim9;
        }
        break;
    case 8:
    case 7:
    case 6:
        taken = old_version != 0;
        if (!taken) {
            old_version = version;
            if (version == 8) {
                v8 = table;
                shim_old.name = v8->name;
                shim_old.getDeviceMr = v8->getDeviceMr;
                shim_old.irecvConsumed = v8->irecvConsumed;
            } else if (version == 7) {
                v7 = table;
                shim_old.name = v7->name;
                shim_old.getDeviceMr = v7->getDeviceMr;
                shim_old.irecvConsumed = v7->irecvConsumed;
            } else {
                v6 = table;
                shim_old.name = v6->name;
            }
            /* regMrDmaBuf where the plugin has one (callers test it for NULL) */
            void *db = version == 8   ? (void *)v8->regMrDmaBuf
                       : version == 7 ? (void *)v7->regMrDmaBuf
                                      : (void *)v6->regMrDmaBuf;
            shim_old.regMrDmaBuf = db ? so_regdb : NULL;
            out = &shim_old;
        }
        break;
    default:
        BT_WARN("NET/Plugin: net table version %d is not one Baton loads (6..11)", version);
        return NULL;
    }
    if (taken)
        BT_WARN("NET/Plugin: a second v%d net table; Baton adapts one per version (the first "
                "is kept)",
                version <= 8 ? old_version : version);
    return out;
}
