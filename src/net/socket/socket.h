/*
 * The socket network backend (net/net.h's `bt_net_socket`), internals shared by its two files:
 * socket.c (init, listen, connect, accept, the v11 table) and socket_comm.c (a connected
 * comm: requests, the per-socket data path, helper threads).
 *
 * Wire format. Each connection is a bundle of nsocks TCP sockets (1..64). Every socket
 * opens with a 24-byte header from the connecting side, fields big-endian:
 *   {u64 magic (the listener's, from its handle), u64 bundle id, u32 nsocks, u32 index}
 * The accepting side groups sockets by bundle id and drops any socket whose header is
 * wrong, incomplete after a few seconds, or a duplicate. Nothing is answered, so connect()
 * finishes without waiting for the peer's accept().
 * Each message: socket 0 carries a u64 big-endian size, then piece 0; socket k carries
 * piece k. A message under BT_NET_SOCKET_MIN_SPLIT bytes is one piece (socket 0); a larger
 * one is cut into nsocks contiguous pieces of ceil(size / nsocks) bytes (the last ones may
 * be shorter or empty). Each socket carries its pieces in message order.
 */
#ifndef BT_NET_SOCKET_SOCKET_H
#define BT_NET_SOCKET_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "net/net.h"
#include "util/socket.h"
#include "util/status.h"

#define BT_NET_SOCKET_MAX_DEVS 8 /* interfaces used as devices */
#define BT_NET_SOCKET_MAX_THREADS 16
#define BT_NET_SOCKET_MAX_SOCKS 64
#define BT_NET_SOCKET_MAX_REQS 8 /* requests in flight per comm */
#define BT_NET_SOCKET_MIN_SPLIT (64 * 1024)
#define BT_NET_SOCKET_TAG 0x4254534f434b3031ull /* "BTSOCK01": a handle made by listen() */

/* What a comm is built with; read from the parameters unless a test overrides it. */
struct bt_net_socket_config {
    int nthreads;          /* helper threads, 0..16 (0: the caller of test() drives I/O) */
    int nsocks_per_thread; /* sockets = max(1, nthreads) * this, capped to 64 */
    int set_thread_name;
    int64_t delay_us;         /* fault injection: completion delay */
    int64_t delay_min_bytes;  /* ... for messages of at least this size */
    int64_t fail_after_bytes; /* fault injection: shut down after this many bytes sent */
};

/* The configuration new comms get (the parameters, or the override). */
void bt_net_socket_config_get(struct bt_net_socket_config *cfg_p);
/* Override the parameters for comms created from now on (tests); NULL: parameters again. */
void bt_net_socket_config_set(const struct bt_net_socket_config *cfg);
/* Sockets a comm with this configuration opens. */
int bt_net_socket_config_nsocks(const struct bt_net_socket_config *cfg);

struct bt_net_socket_comm;

/*
 * Make a comm of `nsocks` connected sockets (fds move into the comm, even on failure) and
 * start its helper threads. `is_send` chooses the direction.
 */
bt_status_t bt_net_socket_comm_create(int is_send, const int *fds, int nsocks,
                                      const struct bt_net_socket_config *cfg,
                                      struct bt_net_socket_comm **comm_p);
/* Stop and join the helpers, close the sockets, free. Accepts NULL. */
void bt_net_socket_comm_destroy(struct bt_net_socket_comm *comm);

bt_status_t bt_net_socket_comm_post(struct bt_net_socket_comm *comm, void *data, size_t size,
                                    void **request_p);
bt_status_t bt_net_socket_req_test(void *request, int *done_p, size_t *size_p);

/* bt_net_backend's pollfds for a comm: its sockets with a task pending (none with helper threads).
 */
int bt_net_socket_comm_pollfds(void *comm, struct pollfd *fds, int max);

/* Helper threads of `comm` (for tests that watch their CPU time): count, and their tids. */
int bt_net_socket_comm_helper_tids(struct bt_net_socket_comm *comm, int *tids, int max);

#endif
