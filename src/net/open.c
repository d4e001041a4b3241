/*
 * Choosing a communicator's network: the external plugins NCCL_NET_PLUGIN names (loaded by
 * net/plugin.c), then the built-in backends, in that order; the first whose init() works
 * and whose devices() finds a device. NCCL_NET (or the config's netName) names one: then
 * only that one, and failing to find it is an error naming it, as NCCL does.
 *
 * A plugin that fails init or shows no device is one WARN per process (then the next one
 * is tried); a built-in backend that finds nothing is an INFO line (sockets on a machine
 * without libfabric is the normal case).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/net.h"
#include "util/param.h"

/* The built-in backends, in order of preference (OFI only claims a device by default when
 * it has a hardware provider: net/ofi/ofi.c). */
static const struct bt_net_backend *const builtin[] = {
#ifdef BATON_HAVE_OFI
    &bt_net_ofi,
#endif
    &bt_net_socket,
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

bt_status_t bt_net_status(ncclResult_t r)
{
    return r >= ncclSuccess && r <= ncclInProgress ? (bt_status_t)r : BT_ERR_INTERNAL;
}

void bt_net_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                const char *fmt, ...)
{
    int lvl = level == NCCL_LOG_WARN || level == NCCL_LOG_ABORT ? BT_LEVEL_WARN
              : level == NCCL_LOG_INFO                          ? BT_LEVEL_INFO
              : level == NCCL_LOG_TRACE                         ? BT_LEVEL_TRACE
              : level == NCCL_LOG_VERSION                       ? BT_LEVEL_VERSION
                                                                : BT_LEVEL_NONE;
    unsigned sub = BT_LOG_NET | (flags & NCCL_LOGSUB_INIT ? BT_LOG_INIT : 0) |
                   (flags & NCCL_LOGSUB_ENV ? BT_LOG_ENV : 0);
    if (lvl == BT_LEVEL_NONE || !bt_log_enabled(lvl, sub))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t n = strlen(msg); /* plugins often end their lines with a newline */
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    bt_log(lvl, lvl == BT_LEVEL_WARN ? BT_LOG_ALL : sub, file ? file : "plugin", line, "%s", msg);
}

/* What was said once per process about a candidate that could not be used. */
static pthread_mutex_t told_mu = PTHREAD_MUTEX_INITIALIZER;
static char told[16][64];
static int ntold;

static int first_time(const char *what)
{
    pthread_mutex_lock(&told_mu);
    int seen = 0;
    for (int i = 0; i < ntold && !seen; i++)
        seen = strcmp(told[i], what) == 0;
    if (!seen && ntold < 16)
        snprintf(told[ntold++], sizeof(told[0]), "%s", what);
    pthread_mutex_unlock(&told_mu);
    return !seen;
}

/* Say why a candidate is not used: a plugin warns (once), a built-in one informs. */
#define SKIP(external, key, ...)                                                                   \
    do {                                                                                           \
        if (!(external))                                                                           \
            BT_INFO(BT_LOG_NET | BT_LOG_INIT, __VA_ARGS__);                                        \
        else if (first_time(key))                                                                  \
            BT_WARN(__VA_ARGS__);                                                                  \
    } while (0)

/* Init the candidate and read its devices; 0 with *net filled, else -1 (said why). */
static int try_open(const struct bt_net_want *want, const struct bt_net_backend *be,
                    const char *lib, struct bt_net *net)
{
    const ncclNet_v11_t *t = be->v11;
    int external = lib[0] != '\0';
    char key[64];
    snprintf(key, sizeof(key), "%s", external ? lib : t->name);
    ncclNetCommConfig_v11_t cfg = {.trafficClass = want->traffic_class};
    void *ctx = NULL;
    ncclResult_t r = t->init(&ctx, want->comm_id, &cfg, bt_net_log, NULL);
    if (r != ncclSuccess) {
        SKIP(external, key, "NET: %s%s%s init failed (error %d); trying the next network", t->name,
             external ? " from " : "", lib, (int)r);
        return -1;
    }
    int ndev = 0;
    r = t->devices(&ndev);
    if (r != ncclSuccess || ndev <= 0) {
        SKIP(external, key, "NET: %s%s%s has no device%s; trying the next network", t->name,
             external ? " from " : "", lib, r != ncclSuccess ? " (devices() failed)" : "");
        if (t->finalize)
            t->finalize(ctx);
        return -1;
    }
    if (ndev > BT_NET_MAX_DEVS)
        ndev = BT_NET_MAX_DEVS;
    memset(net, 0, sizeof(*net));
    for (int d = 0; d < ndev; d++) {
        ncclNetProperties_v11_t *p = &net->props[d];
        r = t->getProperties(d, p);
        if (r != ncclSuccess) {
            SKIP(external, key, "NET: %s: properties of device %d failed (error %d)", t->name, d,
                 (int)r);
            if (t->finalize)
                t->finalize(ctx);
            return -1;
        }
        /* fields Baton relies on, checked rather than trusted */
        if (p->maxRecvs < 1)
            p->maxRecvs = 1;
        if (p->maxComms < 1)
            p->maxComms = 1;
        if (!(p->ptrSupport & NCCL_PTR_HOST)) {
            SKIP(external, key, "NET: %s device %d cannot send from host memory (ptrSupport %d)",
                 t->name, d, p->ptrSupport);
            if (t->finalize)
                t->finalize(ctx);
            return -1;
        }
        BT_INFO(BT_LOG_NET | BT_LOG_INIT,
                "NET/%s: device %d %s speed %d Mbps latency %.1f us maxRecvs %d pci %s", t->name, d,
                p->name ? p->name : "?", p->speed, (double)p->latency, p->maxRecvs,
                p->pciPath ? p->pciPath : "-");
    }
    net->be = be;
    net->v11 = t;
    net->ctx = ctx;
    net->external = external;
    snprintf(net->lib, sizeof(net->lib), "%s", lib);
    net->ndev = ndev;
    return 0;
}

bt_status_t bt_net_open(const struct bt_net_want *want, struct bt_net **net_p)
{
    *net_p = NULL;
    struct bt_net *net = calloc(1, sizeof(*net));
    if (!net) {
        BT_WARN("NET: out of memory opening the network");
        return BT_ERR_SYSTEM;
    }
    const char *name = want->name && want->name[0] ? want->name : NULL;
    char tried[256] = "";
    const struct bt_net_plugin *plugins = NULL;
    int nplugins = bt_net_plugins(&plugins);
    int total = nplugins + (int)NBUILTIN;
    for (int i = 0; i < total; i++) {
        const struct bt_net_backend *be = i < nplugins ? &plugins[i].be : builtin[i - nplugins];
        const char *lib = i < nplugins ? plugins[i].lib : "";
        size_t len = strlen(tried);
        snprintf(tried + len, sizeof(tried) - len, "%s%s", len ? ", " : "", be->v11->name);
        if (name && strcasecmp(name, be->v11->name) != 0)
            continue;
        if (try_open(want, be, lib, net) != 0)
            continue;
        BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET: using %s%s%s (%d device%s)", net->v11->name,
                net->external ? " from " : "", net->lib, net->ndev, net->ndev == 1 ? "" : "s");
        *net_p = net;
        return BT_OK;
    }
    free(net);
    if (name) {
        BT_WARN("NET: NCCL_NET/netName asks for network '%s', which is not available (known: "
                "%s; each either absent, failing init, or without a device)",
                name, tried);
        return BT_ERR_INVALID_USAGE;
    }
    BT_WARN("NET: no network found a device (tried %s)", tried);
    return BT_ERR_SYSTEM;
}

void bt_net_close(struct bt_net *net)
{
    if (!net)
        return;
    if (net->v11->finalize)
        net->v11->finalize(net->ctx);
    free(net);
}
