/*
 * TCP sockets for the bootstrap (and later the socket network backend): addresses, the
 * choice of interface, and blocking-style calls that honour a deadline and abort flags.
 *
 * Every fd made here is SOCK_CLOEXEC and non-blocking; the calls below wait with poll() in
 * slices of at most BT_SOCKET_POLL_SLICE_MS so that an abort flag raised by another thread
 * is seen within that time. Every failure is logged (WARN) where it is first seen, naming
 * the address and the errno text; callers add which rank or peer they waited for.
 */
#ifndef BT_UTIL_SOCKET_H
#define BT_UTIL_SOCKET_H

#include <net/if.h> /* IF_NAMESIZE */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/log.h"
#include "util/status.h"

#define BT_SOCKET_POLL_SLICE_MS 100

/* "[ffff:...:ffff%ifname]:65535" fits. */
#define BT_SOCKADDR_STRLEN 80

/* An IPv4 or IPv6 address; sa.sa_family tells which. Sent as-is over the bootstrap. */
union bt_sockaddr {
    struct sockaddr sa;
    struct sockaddr_in sin;
    struct sockaddr_in6 sin6;
};

/* What a blocking call waits for: a deadline, up to two abort flags (NULL: none) and, for a
 * wait on one rank, whether that rank is down (its process gone, or failed for good), which
 * ends the wait as an abort does (peer_down NULL: never asked; it is asked once a slice, so
 * it must be cheap). */
struct bt_socket_wait {
    uint64_t deadline; /* bt_time_ns() units; UINT64_MAX waits forever */
    const volatile int *abort_flags[2];
    int (*peer_down)(void *arg, int peer);
    void *peer_arg;
    int peer;
    int quiet; /* a failure path's wait: what fails is logged as INFO, the caller reports */
    /* the address is known to have listened (a rank's bootstrap listener, from the
     * rendezvous): a refused connect then means that nothing listens there any more, final
     * at once, rather than not yet, retried until the deadline */
    int listened;
};

/* WARN, or INFO (subsystem `sys`) when the wait is quiet. */
#define BT_WAIT_LOG(w, sys, ...)                                                                   \
    do {                                                                                           \
        if ((w)->quiet)                                                                            \
            BT_INFO(sys, __VA_ARGS__);                                                             \
        else                                                                                       \
            BT_WARN(__VA_ARGS__);                                                                  \
    } while (0)

/* Length to pass to bind/connect; 0 for an unknown family. */
socklen_t bt_socket_addr_len(const union bt_sockaddr *addr);

/* 1 when `addr` is AF_INET or AF_INET6 (the only families we use or accept). */
int bt_socket_addr_valid(const union bt_sockaddr *addr);

/* Port in host order (0 for an unknown family). */
uint16_t bt_socket_addr_port(const union bt_sockaddr *addr);

/* "10.0.0.2:40123", "[fe80::1%eth0]:40123". Always NUL-terminates; returns buf. */
const char *bt_socket_addr_to_str(const union bt_sockaddr *addr, char *buf, size_t len);

/* Parse "host:port", "[v6]:port" or "[fe80::1%eth0]:port" (host may be a name). */
bt_status_t bt_socket_addr_parse(const char *str, union bt_sockaddr *addr_p);

/*
 * Choose the local interface and address to listen on. SOCKET_IFNAME selects (comma list
 * of prefixes; leading '^' excludes them; leading '=' matches names exactly) and
 * SOCKET_FAMILY restricts to AF_INET or AF_INET6. Without SOCKET_IFNAME: the first UP
 * non-loopback interface that is not docker*, virbr* or veth* (IPv4 first, then global
 * IPv6, then link-local IPv6), else loopback. The port of *addr_p is 0.
 */
bt_status_t bt_socket_find_interface(union bt_sockaddr *addr_p, char *ifname_p, size_t ifname_len);

/* Every usable interface, in the same order of preference (the first is what
 * bt_socket_find_interface picks): one address each, at most `max`. Returns how many (0:
 * none, logged), or -1 on a system error. */
struct bt_socket_iface {
    char name[IF_NAMESIZE + 1];
    union bt_sockaddr addr;
};
int bt_socket_find_interfaces(struct bt_socket_iface *out, int max);

/*
 * Listen on `addr` (port 0: any free port) with SO_REUSEADDR. *bound_p (may be NULL)
 * receives the address actually bound, port included.
 */
bt_status_t bt_socket_listen(const union bt_sockaddr *addr, int *fd_p, union bt_sockaddr *bound_p);

/*
 * Connect to `addr`, retrying on ECONNREFUSED / ETIMEDOUT (the listener may not be up yet)
 * until the deadline. Sets TCP_NODELAY. Timeout or abort: BT_ERR_REMOTE.
 */
bt_status_t bt_socket_connect(const union bt_sockaddr *addr, const struct bt_socket_wait *w,
                              int *fd_p);

/*
 * Whether nothing listens at `addr`: one connect attempt, waited on for at most timeout_ms;
 * 1 when it is refused (the host answers, the port is closed: the process that listened is
 * gone), 0 when it connects (closed at once) or the answer is anything else or late.
 */
int bt_socket_refused(const union bt_sockaddr *addr, int timeout_ms);

/* Send / receive exactly `len` bytes. Peer closed, timeout or abort: BT_ERR_REMOTE. */
bt_status_t bt_socket_send_all(int fd, const void *buf, size_t len, const struct bt_socket_wait *w);
bt_status_t bt_socket_recv_all(int fd, void *buf, size_t len, const struct bt_socket_wait *w);

/*
 * Send `slen` bytes on `send_fd` while receiving `rlen` bytes on `recv_fd`, both at once,
 * so that a ring of ranks that all send before they receive cannot deadlock on full socket
 * buffers. The two fds may be the same.
 */
bt_status_t bt_socket_exchange(int send_fd, const void *sbuf, size_t slen, int recv_fd, void *rbuf,
                               size_t rlen, const struct bt_socket_wait *w);

/*
 * Non-blocking receive of at most `len` bytes: *got_p = bytes read (0: nothing yet).
 * Peer closed before `len`: BT_ERR_REMOTE (logged at INFO, callers decide). For poll loops.
 */
bt_status_t bt_socket_recv_some(int fd, void *buf, size_t len, size_t *got_p);

/* 1 when a flag of `w` is raised or its peer is down. */
int bt_socket_wait_aborted(const struct bt_socket_wait *w);

/* Close *fd_p if open and set it to -1. */
void bt_socket_close(int *fd_p);

#endif
