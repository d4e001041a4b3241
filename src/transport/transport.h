/*
 * Transports: how a connector's FIFO reaches the peer. A table of functions, filled with
 * designated initializers; selection per peer pair takes the first whose can_connect
 * says yes (p2p, shm, net).
 *
 * Connecting one connector (both ends run this, core/connect.c drives it in phases so one
 * thread can connect several communicators of one process without deadlock):
 *   setup()     allocate local resources; fill a blob for the peer
 *   -- blobs exchanged over bootstrap --
 *   connect()   map/attach the peer's resources described by its blob
 *   -- acknowledgements exchanged --
 *   connected() both ends are attached: drop names that let a crash leak (unlink), or
 *               finish what needs the peer's attach first (accept)
 */
#ifndef BT_TRANSPORT_H
#define BT_TRANSPORT_H

#include "transport/conn.h"
#include "util/status.h"

#define BT_CONNECT_INFO_BYTES 256

struct bt_comm;

struct bt_transport_ops {
    const char *name;
    int (*can_connect)(const struct bt_comm *comm, int peer);
    bt_status_t (*setup)(struct bt_comm *comm, struct bt_conn *conn, void *info_p);
    bt_status_t (*connect)(struct bt_comm *comm, struct bt_conn *conn, const void *peer_info);
    bt_status_t (*connected)(struct bt_comm *comm, struct bt_conn *conn);
    void (*free)(struct bt_conn *conn);
};

extern const struct bt_transport_ops bt_transport_shm;
extern const struct bt_transport_ops bt_transport_net;

/* The transport for a connector to `peer`, or NULL (logged) when none can connect. */
const struct bt_transport_ops *bt_transport_select(const struct bt_comm *comm, int peer);

/*
 * NET connectors are moved by the communicator's proxy: the launch posts, per work and
 * connector, how many steps it moves (bt_net_post), then waits for them (bt_net_wait,
 * which frees the op). While waiting it calls poll() (may be NULL), which drives the proxy
 * (bt_proxy_drive) and returns whether anything moved, and when poll moved nothing,
 * block() (may be NULL; as in struct bt_wait_policy, bounded). It gives the op up (cancels
 * it, waits for the proxy to hand it back, and fails) after TIMEOUT without progress, or
 * once the op's peer is down (bt_arrival_peer_down, asked every 50 ms without progress).
 */
/* A receive step the network lands in the user's output: where, and its exact size. */
struct bt_net_zc {
    void *ptr; /* NULL: into the slot, as usual */
    size_t bytes;
};
/* zc (may be NULL; nsteps entries, malloc'ed; the op owns it from here, even on failure). */
bt_status_t bt_net_post(struct bt_comm *comm, struct bt_conn *conn, uint64_t nsteps,
                        struct bt_net_zc *zc, void **op_p);
bt_status_t bt_net_wait(void *op, int peer, int (*poll)(void), int (*block)(void));
/* Without waiting: 1 when the op is complete (then freed, its result in *st), else 0.
 * For ops whose steps a GPU kernel produces (exec/cuda), reaped at later launches. */
int bt_net_test(void *op, bt_status_t *st);
/* Without waiting or freeing: 1 when the op has already failed (a connection closed or
 * reset), so a launch waiting on other connectors can stop instead of waiting for TIMEOUT. */
int bt_net_failed(const void *op);
/* Give up an op (its launch fails): it completes with BT_ERR_REMOTE at the proxy's next round;
 * still bt_net_wait for it, which frees it. */
void bt_net_cancel(void *op);

/* Release a connector's transport resources and mark it unconnected. Accepts NULL. */
void bt_conn_free(struct bt_conn *conn);

#endif
