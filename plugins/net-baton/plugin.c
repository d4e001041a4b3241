/*
 * libnccl-net-baton.so: Baton's socket backend (src/net/socket/) as an external NCCL net
 * plugin. It exports ncclNetPlugin_v11 (NCCL 2.28) and ncclNetPlugin_v10 (NCCL 2.24-2.27),
 * so that
 *   - Baton's own plugin loader (net/plugin.c) is tested against a library built
 *     apart from libnccl.so.2 (NCCL_NET_PLUGIN=baton, NCCL_NET=BatonSocket), and
 *   - NVIDIA's NCCL can load the same backend, for cross-checks.
 * The table is the built-in one under another name ("BatonSocket"), so a run shows which
 * of the two carried its bytes. Only these symbols are exported (the build hides the
 * rest), so loading it into a process that has Baton's libnccl.so.2 binds nothing across.
 *
 * It also exports batonNetExtensions_v1 (net/net.h), the built-in backend's extensions
 * (pollfds, connect_cancel, zero_copy_safe), so that through Baton's loader it behaves as the
 * built-in table does; other NCCLs ignore the symbol.
 *
 * Logs go to Baton's log (stderr, BATON_DEBUG / NCCL_DEBUG), not to the host's logger.
 */
#include <string.h>

#include "net/net.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT ncclNet_v11_t ncclNetPlugin_v11;
EXPORT ncclNet_v10_t ncclNetPlugin_v10;

EXPORT struct bt_net_ext batonNetExtensions_v1;

static const ncclNet_v11_t *sock; /* the built-in table */
static void *sock_ctx;            /* v10 has no context: one for the process */

/* ---- v10: the v11 table without contexts ---- */

static ncclResult_t v10_init(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    return sock->init(&sock_ctx, 0, NULL, log, prof);
}

static ncclResult_t v10_props(int dev, ncclNetProperties_v10_t *props)
{
    ncclNetProperties_v11_t p;
    ncclResult_t r = sock->getProperties(dev, &p);
    if (r == ncclSuccess)
        memcpy(props, &p, sizeof(*props)); /* v10's layout is v11's without its last field */
    return r;
}

static ncclResult_t v10_listen(int dev, void *handle, void **listen_comm)
{
    return sock->listen(sock_ctx, dev, handle, listen_comm);
}

static ncclResult_t v10_connect(int dev, ncclNetCommConfig_v10_t *config, void *handle,
                                void **send_comm, ncclNetDeviceHandle_v7_t **dev_comm)
{
    (void)config;
    return sock->connect(sock_ctx, dev, handle, send_comm, dev_comm);
}

__attribute__((constructor)) static void plugin_tables(void)
{
    sock = bt_net_socket.v11;
    batonNetExtensions_v1 = bt_net_socket.ext;
    ncclNetPlugin_v11 = *sock;
    ncclNetPlugin_v11.name = "BatonSocket";

    ncclNet_v10_t *t = &ncclNetPlugin_v10;
    t->name = "BatonSocket";
    t->init = v10_init;
    t->devices = sock->devices;
    t->getProperties = v10_props;
    t->listen = v10_listen;
    t->connect = v10_connect;
    t->accept = sock->accept;
    t->regMr = sock->regMr;
    t->regMrDmaBuf = sock->regMrDmaBuf;
    t->deregMr = sock->deregMr;
    t->isend = sock->isend;
    t->irecv = sock->irecv;
    t->iflush = sock->iflush;
    t->test = sock->test;
    t->closeSend = sock->closeSend;
    t->closeRecv = sock->closeRecv;
    t->closeListen = sock->closeListen;
    t->getDeviceMr = sock->getDeviceMr;
    t->irecvConsumed = sock->irecvConsumed;
    t->makeVDevice = sock->makeVDevice;
}
