/*
 * Network backends: the plugin-style table the NET transport and its proxy drive. Every
 * call is non-blocking: connect/accept may return a NULL comm ("not yet, call again"),
 * isend/irecv may return a NULL request ("no room now, call again"), and test says whether a
 * request finished. Buffers are host memory; iflush is for GPU-direct receives and may
 * complete at once. Backends: socket (TCP, always, net_socket.c); others can follow behind
 * the same table.
 *
 * caller: the proxy threads (progress and service) of the communicator; a comm handle is
 * used by one thread at a time.
 */
#ifndef BT_TRANSPORT_NET_H
#define BT_TRANSPORT_NET_H

#include <poll.h>
#include <stddef.h>

#include "util/status.h"

#define BT_NET_HANDLE_BYTES 128 /* what listen() publishes and connect() consumes */

struct bt_net_ops {
    const char *name;
    /* Devices (NICs) the backend can use; idempotent. */
    bt_status_t (*init)(int *ndev_p);
    /* Device `dev`'s name (the network interface's, which topology discovery also uses). */
    const char *(*dev_name)(int dev);
    /* Listen on device `dev`; fill `handle` for the peer's connect(). */
    bt_status_t (*listen)(int dev, void *handle, void **listen_comm_p);
    /* *send_comm_p = NULL: in progress, call again with the same arguments. */
    bt_status_t (*connect)(int dev, const void *handle, void **send_comm_p);
    /* Give up the connect in progress with these arguments (its sockets close): for a caller
     * that stops calling connect() (deadline, abort, the peer gone). No-op when none. */
    void (*connect_cancel)(int dev, const void *handle);
    /* *recv_comm_p = NULL: no peer yet, call again. */
    bt_status_t (*accept)(void *listen_comm, void **recv_comm_p);
    /* *request_p = NULL: cannot start now, call again. Messages on one comm complete in
     * the order they were posted, and a receive matches the send posted in the same place
     * of the sequence; `size` of a receive is the most it accepts. */
    bt_status_t (*isend)(void *send_comm, const void *data, size_t size, void **request_p);
    bt_status_t (*irecv)(void *recv_comm, void *data, size_t size, void **request_p);
    /* *done_p = 1 when finished (the request is freed then); *size_p = bytes moved. */
    bt_status_t (*test)(void *request, int *done_p, size_t *size_p);
    bt_status_t (*iflush)(void *recv_comm, void *data, size_t size, void **request_p);
    /* The descriptors (and events) whose readiness would move the comm's requests in flight,
     * for a caller that drives I/O itself and wants to block instead of polling test();
     * returns how many it wrote (at most max), 0 when the backend's own threads do the I/O
     * or nothing is in flight. NULL: the backend cannot say. */
    int (*pollfds)(void *comm, struct pollfd *fds, int max);
    void (*close_send)(void *send_comm);
    void (*close_recv)(void *recv_comm);
    void (*close_listen)(void *listen_comm);
};

extern const struct bt_net_ops bt_net_socket;

#endif
