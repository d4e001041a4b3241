/*
 * Network backends: what the NET transport (transport/net.c) and its proxy drive. A backend
 * is an NCCL net-plugin table, ncclNet_v11_t (net/abi.h: its members and their semantics),
 * whether it is built in (one folder each: net/socket, net/ofi for libfabric) or loaded
 * from an external libnccl-net-*.so (net/plugin.c, older tables through net/shim.c).
 * Baton's own backends may add what the table cannot say (struct bt_net_backend): the
 * descriptors a blocking driver can poll, and how to give up a connect in progress.
 *
 * A communicator opens one network (struct bt_net: the backend, its init() context, its
 * devices' properties) the first time its NET transport needs one (at init when its ranks
 * span hosts, for the tuner's figures; else at its first NET connector), and closes it at
 * destroy.
 * Which: NCCL_NET_PLUGIN's libraries first (unset: libnccl-net.so if present), then the
 * built-in ones, the first that initializes and finds a device; NCCL_NET (or the config's
 * netName) names one, and then only that one will do.
 *
 * caller: the proxy threads (progress and service) of the communicator; a comm handle is
 * used by one thread at a time.
 */
#ifndef BT_NET_NET_H
#define BT_NET_NET_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "net/abi.h"
#include "util/status.h"

#define BT_NET_HANDLE_BYTES NCCL_NET_HANDLE_MAXSIZE /* listen() fills, connect() consumes */
#define BT_NET_MAX_DEVS 32                          /* devices a network shows Baton */

/* Baton's extensions to a table (each NULL when the backend has none). The same layout is
 * what a plugin may export as BT_NET_PLUGIN_EXT (below): change it only with a new name. */
struct bt_net_ext {
    /* The descriptors (and events) whose readiness would move `comm`'s requests in flight,
     * for a driver that wants to block instead of polling test(); how many it wrote (at
     * most max), 0 when the backend's own threads do the I/O or it has no descriptor, -1
     * when test() would find work now or soon (do not block: poll). NULL: the backend
     * cannot say (external plugins). */
    int (*pollfds)(void *comm, struct pollfd *fds, int max);
    /* Give up the connect in progress on `handle` (its resources close): for a caller that
     * stops calling connect() (deadline, abort, the peer gone). NULL or no-op when none. */
    void (*connect_cancel)(void *ctx, int dev, void *handle);
    /* 1 when a registration on device `dev` pins nothing (no page is held by the NIC), so a
     * cached registration of a buffer the user freed and reallocated cannot misdirect data:
     * zero-copy steps are then safe by default (NET_ZERO_COPY=-1). NULL: 0. */
    int (*zero_copy_safe)(int dev);
};

struct bt_net_backend {
    const ncclNet_v11_t *v11;
    struct bt_net_ext ext;
};

/* The built-in backends, each defined in its folder (net/socket, net/ofi), which sits above
 * this one: net/open.c and the plugins built from Baton's sources reach them through these
 * declarations, never through a backend's own header. */
extern const struct bt_net_backend bt_net_socket;
#ifdef BATON_HAVE_OFI
extern const struct bt_net_backend bt_net_ofi;
#endif

/* A communicator's network. */
struct bt_net {
    const struct bt_net_backend *be;
    const ncclNet_v11_t *v11; /* be->v11 */
    void *ctx;                /* what init() returned */
    int external;             /* loaded from a plugin library */
    char lib[64];             /* the plugin library's name, or "" */
    int ndev;
    ncclNetProperties_v11_t props[BT_NET_MAX_DEVS];
};

/* What the communicator asks for (the transport context's fields, copied: net/ sees no
 * transport). */
struct bt_net_want {
    const char *name; /* config netName, else NCCL_NET; NULL: any */
    uint64_t comm_id;
    int traffic_class; /* NCCL_NET_TRAFFIC_CLASS_UNDEF: none */
};

/* Open the network: fails (naming what it tried) when none initializes with a device, or
 * when `want->name` names one that does not. */
bt_status_t bt_net_open(const struct bt_net_want *want, struct bt_net **net_p);
/* finalize() and free; the plugin library stays loaded (other comms may use it). */
void bt_net_close(struct bt_net *net);

/* ncclResult_t of a table call as Baton's status (an unknown value: internal). */
bt_status_t bt_net_status(ncclResult_t r);

/* The logger handed to every backend's init(): its lines go to Baton's log. */
void bt_net_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- external plugins (net/plugin.c) ---- */

/* The tables NCCL_NET_PLUGIN names, loaded on first use, in order (adapted to v11). At most
 * `max`; each with its library's name. Libraries that fail to load are WARNed once and left
 * out. */
struct bt_net_plugin {
    char lib[64];
    struct bt_net_backend be; /* the table (adapted to v11); extensions from
                                 BT_NET_PLUGIN_EXT, if the library exports it */
    int version;              /* the table's own version, 6..11 */
};

/* Baton's extensions as a plugin may export them beside its table: symbol BT_NET_PLUGIN_EXT,
 * a struct bt_net_ext. libnccl-net-baton.so does, so its path blocks on its sockets, cancels
 * its connects and keeps zero-copy as the built-in backend does; other plugins do not know
 * it (NCCL ignores the symbol). */
#define BT_NET_PLUGIN_EXT "batonNetExtensions_v1"
int bt_net_plugins(const struct bt_net_plugin **plugins_p);

/* Adapt an older table to v11 (net/shim.c); NULL for a version Baton does not load. The
 * result lives as long as the process. */
const ncclNet_v11_t *bt_net_shim(const void *table, int version);

#endif
