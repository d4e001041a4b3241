/*
 * Net plugins for the loader's tests (tests/plugins/loader.sh, ctest mp/plugin_loader), one library
 * per mode, built from this file with FAKE_MODE set: 1 FakeV6     exports only ncclNetPlugin_v6:
 * Baton's socket backend behind the oldest table, so that collectives run through
 * transport/net_shim.c's v6 adapter 2 FakeFail   a v11 table whose init fails 3 FakeEmpty  a v11
 * table that finds no device 4 (none)     a library that exports no net table at all
 */
#include <string.h>

#include "transport/net.h"

#define EXPORT __attribute__((visibility("default")))

static void *sock_ctx __attribute__((unused));

#if FAKE_MODE == 1

static const ncclNet_v11_t *sock;

static ncclResult_t f_init(ncclDebugLogger_t log)
{
    sock = bt_net_socket.v11;
    return sock->init(&sock_ctx, 0, NULL, log, NULL);
}
static ncclResult_t f_devices(int *n)
{
    return sock->devices(n);
}
static ncclResult_t f_props(int dev, ncclNetProperties_v6_t *p)
{
    ncclNetProperties_v11_t q;
    ncclResult_t r = sock->getProperties(dev, &q);
    memset(p, 0, sizeof(*p));
    p->name = q.name, p->pciPath = q.pciPath, p->guid = q.guid, p->ptrSupport = q.ptrSupport;
    p->speed = q.speed, p->port = q.port, p->latency = q.latency, p->maxComms = q.maxComms;
    p->maxRecvs = q.maxRecvs;
    return r;
}
static ncclResult_t f_listen(int dev, void *h, void **l)
{
    return sock->listen(sock_ctx, dev, h, l);
}
static ncclResult_t f_connect(int dev, void *h, void **s)
{
    return sock->connect(sock_ctx, dev, h, s, NULL);
}
static ncclResult_t f_accept(void *l, void **r)
{
    return sock->accept(l, r, NULL);
}
static ncclResult_t f_reg(void *c, void *d, int n, int t, void **mh)
{
    return sock->regMr(c, d, (size_t)n, t, mh);
}
static ncclResult_t f_isend(void *c, void *d, int n, int tag, void *mh, void **r)
{
    return sock->isend(c, d, (size_t)n, tag, mh, NULL, r);
}
static ncclResult_t f_irecv(void *c, int n, void **d, int *s, int *t, void **mh, void **r)
{
    size_t sizes[8];
    for (int i = 0; i < n && i < 8; i++)
        sizes[i] = (size_t)s[i];
    return sock->irecv(c, n, d, sizes, t, mh, NULL, r);
}
/* an old plugin that never writes test()'s size: Baton must not rely on it */
static ncclResult_t f_test(void *r, int *done, int *sizes)
{
    (void)sizes;
    return sock->test(r, done, NULL);
}

EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = "FakeV6",
    .init = f_init,
    .devices = f_devices,
    .getProperties = f_props,
    .listen = f_listen,
    .connect = f_connect,
    .accept = f_accept,
    .regMr = f_reg,
    .isend = f_isend,
    .irecv = f_irecv,
    .test = f_test,
};

/* the remaining members point into the socket table, known only at load */
__attribute__((constructor)) static void fill(void)
{
    const ncclNet_v11_t *s = bt_net_socket.v11;
    ncclNetPlugin_v6.regMrDmaBuf = s->regMrDmaBuf;
    ncclNetPlugin_v6.deregMr = s->deregMr;
    ncclNetPlugin_v6.iflush = s->iflush;
    ncclNetPlugin_v6.closeSend = s->closeSend;
    ncclNetPlugin_v6.closeRecv = s->closeRecv;
    ncclNetPlugin_v6.closeListen = s->closeListen;
}

#elif FAKE_MODE == 2 || FAKE_MODE == 3

static ncclResult_t f_init(void **ctx, uint64_t id, ncclNetCommConfig_v11_t *cfg,
                           ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    (void)id, (void)cfg, (void)prof;
    *ctx = &sock_ctx;
    if (FAKE_MODE == 2) {
        log(NCCL_LOG_WARN, NCCL_LOGSUB_NET, __FILE__, __LINE__, "FakeFail: refusing to start\n");
        return ncclSystemError;
    }
    return ncclSuccess;
}
static ncclResult_t f_devices(int *n)
{
    *n = 0;
    return ncclSuccess;
}
static ncclResult_t f_finalize(void *ctx)
{
    (void)ctx;
    return ncclSuccess;
}

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = FAKE_MODE == 2 ? "FakeFail" : "FakeEmpty",
    .init = f_init,
    .devices = f_devices,
    .finalize = f_finalize,
};

#else

EXPORT int fake_net_nothing_here = 1;

#endif
