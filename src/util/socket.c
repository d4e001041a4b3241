#define _GNU_SOURCE /* accept4, pthread_setname_np */
#include "util/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/param.h"
#include "util/time.h"

socklen_t bt_socket_addr_len(const union bt_sockaddr *addr)
{
    if (addr->sa.sa_family == AF_INET)
        return sizeof(struct sockaddr_in);
    if (addr->sa.sa_family == AF_INET6)
        return sizeof(struct sockaddr_in6);
    return 0;
}

int bt_socket_addr_valid(const union bt_sockaddr *addr)
{
    return addr->sa.sa_family == AF_INET || addr->sa.sa_family == AF_INET6;
}

uint16_t bt_socket_addr_port(const union bt_sockaddr *addr)
{
    if (addr->sa.sa_family == AF_INET)
        return ntohs(addr->sin.sin_port);
    if (addr->sa.sa_family == AF_INET6)
        return ntohs(addr->sin6.sin6_port);
    return 0;
}

const char *bt_socket_addr_to_str(const union bt_sockaddr *addr, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "";
    if (len == 0)
        return buf;
    if (addr->sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &addr->sin.sin_addr, host, sizeof(host));
        snprintf(buf, len, "%s:%u", host, ntohs(addr->sin.sin_port));
    } else if (addr->sa.sa_family == AF_INET6) {
        char scope[IF_NAMESIZE + 2] = "";
        inet_ntop(AF_INET6, &addr->sin6.sin6_addr, host, sizeof(host));
        if (addr->sin6.sin6_scope_id != 0) {
            char ifn[IF_NAMESIZE];
            if (if_indextoname(addr->sin6.sin6_scope_id, ifn))
                snprintf(scope, sizeof(scope), "%%%s", ifn);
            else
                snprintf(scope, sizeof(scope), "%%%u", (unsigned)addr->sin6.sin6_scope_id);
        }
        snprintf(buf, len, "[%s%s]:%u", host, scope, ntohs(addr->sin6.sin6_port));
    } else {
        snprintf(buf, len, "<family %d>", (int)addr->sa.sa_family);
    }
    return buf;
}

bt_status_t bt_socket_addr_parse(const char *str, union bt_sockaddr *addr_p)
{
    char host[256];
    const char *port;
    if (str == NULL || *str == '\0') {
        BT_WARN("cannot parse an empty socket address");
        return BT_ERR_INVALID_ARG;
    }
    if (str[0] == '[') {
        const char *close = strchr(str, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - str - 1) >= sizeof(host)) {
            BT_WARN("cannot parse socket address '%s': expected [v6addr]:port", str);
            return BT_ERR_INVALID_ARG;
        }
        memcpy(host, str + 1, (size_t)(close - str - 1));
        host[close - str - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(str, ':');
        if (colon == NULL || (size_t)(colon - str) >= sizeof(host) || strchr(str, ':') != colon) {
            BT_WARN("cannot parse socket address '%s': expected host:port or [v6addr]:port", str);
            return BT_ERR_INVALID_ARG;
        }
        memcpy(host, str, (size_t)(colon - str));
        host[colon - str] = '\0';
        port = colon + 1;
    }
    char *end = NULL;
    long p = strtol(port, &end, 10);
    if (*port == '\0' || *end != '\0' || p < 0 || p > 65535) {
        BT_WARN("cannot parse socket address '%s': invalid port '%s'", str, port);
        return BT_ERR_INVALID_ARG;
    }

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        BT_WARN("cannot resolve '%s' (from '%s'): %s", host, str,
                rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return BT_ERR_INVALID_ARG;
    }
    bt_status_t st = BT_ERR_INVALID_ARG;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
            ai->ai_addrlen <= sizeof(*addr_p)) {
            memset(addr_p, 0, sizeof(*addr_p));
            memcpy(addr_p, ai->ai_addr, ai->ai_addrlen);
            if (ai->ai_family == AF_INET)
                addr_p->sin.sin_port = htons((uint16_t)p);
            else
                addr_p->sin6.sin6_port = htons((uint16_t)p);
            st = BT_OK;
            break;
        }
    }
    freeaddrinfo(res);
    if (st != BT_OK)
        BT_WARN("'%s' (from '%s') resolves to no IPv4 or IPv6 address", host, str);
    return st;
}

/*
 * SOCKET_IFNAME matching, as NCCL does: "eth,ib" matches names starting with eth or ib;
 * "^docker" excludes those prefixes; "=eth0" (or "^=eth0") matches whole names. An
 * optional ":port" suffix on an entry is ignored.
 */
struct ifname_spec {
    int exclude;
    int exact;
    int n;
    char names[16][IF_NAMESIZE + 8];
};

static void ifname_spec_parse(const char *s, struct ifname_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    if (*s == '^') {
        spec->exclude = 1;
        s++;
    }
    if (*s == '=') {
        spec->exact = 1;
        s++;
    }
    while (*s && spec->n < 16) {
        size_t len = strcspn(s, ",");
        size_t keep = len < sizeof(spec->names[0]) - 1 ? len : sizeof(spec->names[0]) - 1;
        memcpy(spec->names[spec->n], s, keep);
        spec->names[spec->n][keep] = '\0';
        char *colon = strchr(spec->names[spec->n], ':');
        if (colon)
            *colon = '\0';
        if (spec->names[spec->n][0] != '\0')
            spec->n++;
        s += len;
        if (*s == ',')
            s++;
    }
}

static int ifname_spec_match(const struct ifname_spec *spec, const char *name)
{
    int hit = 0;
    for (int i = 0; i < spec->n && !hit; i++) {
        if (spec->exact)
            hit = strcmp(name, spec->names[i]) == 0;
        else
            hit = strncmp(name, spec->names[i], strlen(spec->names[i])) == 0;
    }
    return spec->exclude ? !hit : hit;
}

/* Search passes, in order of preference, when the family is not forced. */
enum if_class { IF_V4, IF_V6_GLOBAL, IF_V6_LINKLOCAL, IF_NCLASSES };

static int if_class_of(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return IF_V4;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
        return IF_V6_LINKLOCAL;
    return IF_V6_GLOBAL;
}

/* Append to out[] the interfaces of `ifs` that pass the filters, one address each (the
 * most preferred class first), skipping names already there. */
static void collect_pass(struct ifaddrs *ifs, int family, const struct ifname_spec *spec,
                         int want_loopback, struct bt_socket_iface *out, int max, int *n)
{
    static const char *const skip_default[] = {"docker", "virbr", "veth"};
    for (int cls = 0; cls < IF_NCLASSES; cls++) {
        for (struct ifaddrs *ifa = ifs; ifa && *n < max; ifa = ifa->ifa_next) {
            if (ifa->ifa_addr == NULL)
                continue;
            int fam = ifa->ifa_addr->sa_family;
            if (fam != AF_INET && fam != AF_INET6)
                continue;
            if (family != AF_UNSPEC && fam != family)
                continue;
            if (!(ifa->ifa_flags & IFF_UP))
                continue;
            if (if_class_of(ifa->ifa_addr) != cls)
                continue;
            int loop = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
            if (spec) {
                if (!ifname_spec_match(spec, ifa->ifa_name))
                    continue;
            } else {
                if (loop != want_loopback)
                    continue;
                int skip = 0;
                for (size_t i = 0; i < sizeof(skip_default) / sizeof(skip_default[0]); i++)
                    if (strncmp(ifa->ifa_name, skip_default[i], strlen(skip_default[i])) == 0)
                        skip = 1;
                if (skip)
                    continue;
            }
            int dup = 0;
            for (int i = 0; i < *n; i++)
                dup |= strcmp(out[i].name, ifa->ifa_name) == 0;
            if (dup)
                continue;
            struct bt_socket_iface *x = &out[(*n)++];
            memset(x, 0, sizeof(*x));
            snprintf(x->name, sizeof(x->name), "%s", ifa->ifa_name);
            if (fam == AF_INET) {
                memcpy(&x->addr.sin, ifa->ifa_addr, sizeof(struct sockaddr_in));
                x->addr.sin.sin_port = 0;
            } else {
                memcpy(&x->addr.sin6, ifa->ifa_addr, sizeof(struct sockaddr_in6));
                x->addr.sin6.sin6_port = 0;
                /* A link-local address means nothing without the interface it is on. */
                if (cls == IF_V6_LINKLOCAL && x->addr.sin6.sin6_scope_id == 0)
                    x->addr.sin6.sin6_scope_id = if_nametoindex(ifa->ifa_name);
                if (cls != IF_V6_LINKLOCAL)
                    x->addr.sin6.sin6_scope_id = 0;
            }
        }
    }
}

int bt_socket_find_interfaces(struct bt_socket_iface *out, int max)
{
    int family = AF_UNSPEC;
    const char *fam = bt_param_str_socket_family();
    if (fam) {
        if (strcmp(fam, "AF_INET") == 0 || strcmp(fam, "4") == 0)
            family = AF_INET;
        else if (strcmp(fam, "AF_INET6") == 0 || strcmp(fam, "6") == 0)
            family = AF_INET6;
        else
            BT_WARN("SOCKET_FAMILY=%s is neither AF_INET nor AF_INET6; ignoring it", fam);
    }

    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) {
        BT_WARN("getifaddrs failed: %s", strerror(errno));
        return -1;
    }
    int n = 0;
    const char *want = bt_param_str_socket_ifname();
    if (want) {
        struct ifname_spec spec;
        ifname_spec_parse(want, &spec);
        collect_pass(ifs, family, &spec, 0, out, max, &n);
        if (n == 0)
            BT_WARN("no UP interface matches SOCKET_IFNAME=%s%s%s", want,
                    family != AF_UNSPEC ? " with SOCKET_FAMILY=" : "",
                    family != AF_UNSPEC ? fam : "");
    } else {
        collect_pass(ifs, family, NULL, 0, out, max, &n);
        if (n == 0) /* only loopback: one host */
            collect_pass(ifs, family, NULL, 1, out, max, &n);
        if (n == 0)
            BT_WARN("no UP network interface found%s%s", family != AF_UNSPEC ? " for " : "",
                    family != AF_UNSPEC ? fam : "");
    }
    freeifaddrs(ifs);
    return n;
}

bt_status_t bt_socket_find_interface(union bt_sockaddr *addr_p, char *ifname_p, size_t ifname_len)
{
    struct bt_socket_iface first;
    int n = bt_socket_find_interfaces(&first, 1);
    if (n < 0)
        return BT_ERR_SYSTEM;
    if (n == 0)
        return bt_param_str_socket_ifname() ? BT_ERR_INVALID_ARG : BT_ERR_SYSTEM;
    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_INIT | BT_LOG_NET, "Bootstrap: using %s:%s", first.name,
            bt_socket_addr_to_str(&first.addr, s, sizeof(s)));
    *addr_p = first.addr;
    if (ifname_p && ifname_len > 0)
        snprintf(ifname_p, ifname_len, "%s", first.name);
    return BT_OK;
}

int bt_socket_wait_aborted(const struct bt_socket_wait *w)
{
    for (int i = 0; i < 2; i++)
        if (w->abort_flags[i] && __atomic_load_n(w->abort_flags[i], __ATOMIC_ACQUIRE))
            return 1;
    return w->peer_down && w->peer_down(w->peer_arg, w->peer);
}

/* Milliseconds to poll now: a slice, or less if the deadline is nearer. -1: deadline passed. */
static int wait_slice_ms(const struct bt_socket_wait *w)
{
    if (w->deadline == UINT64_MAX)
        return BT_SOCKET_POLL_SLICE_MS;
    uint64_t now = bt_time_ns();
    if (now >= w->deadline)
        return -1;
    uint64_t left_ms = (w->deadline - now + 999999) / 1000000;
    return left_ms < BT_SOCKET_POLL_SLICE_MS ? (int)left_ms : BT_SOCKET_POLL_SLICE_MS;
}

/* The peer's address as text, for messages about a connected fd. */
static const char *fd_peer_str(int fd, char *buf, size_t len)
{
    union bt_sockaddr a;
    socklen_t alen = sizeof(a);
    memset(&a, 0, sizeof(a));
    if (getpeername(fd, &a.sa, &alen) != 0)
        snprintf(buf, len, "fd %d (peer unknown: %s)", fd, strerror(errno));
    else
        bt_socket_addr_to_str(&a, buf, len);
    return buf;
}

static void set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        BT_INFO(BT_LOG_NET, "setsockopt(TCP_NODELAY) on fd %d failed: %s", fd, strerror(errno));
}

bt_status_t bt_socket_listen(const union bt_sockaddr *addr, int *fd_p, union bt_sockaddr *bound_p)
{
    char s[BT_SOCKADDR_STRLEN];
    socklen_t alen = bt_socket_addr_len(addr);
    if (alen == 0) {
        BT_WARN("listen: unsupported address family %d", (int)addr->sa.sa_family);
        return BT_ERR_INVALID_ARG;
    }
    int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        BT_WARN("socket() for listening on %s failed: %s",
                bt_socket_addr_to_str(addr, s, sizeof(s)), strerror(errno));
        return BT_ERR_SYSTEM;
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
        BT_WARN("setsockopt(SO_REUSEADDR) for %s failed: %s",
                bt_socket_addr_to_str(addr, s, sizeof(s)), strerror(errno));
        goto err_close;
    }
    if (bind(fd, &addr->sa, alen) != 0) {
        int err = errno;
        BT_WARN("bind to %s failed: %s%s", bt_socket_addr_to_str(addr, s, sizeof(s)), strerror(err),
                err == EADDRINUSE ? " (another socket holds that port: pick a port outside "
                                    "/proc/sys/net/ipv4/ip_local_port_range, or another one)"
                                  : "");
        goto err_close;
    }
    if (listen(fd, SOMAXCONN) != 0) {
        BT_WARN("listen on %s failed: %s", bt_socket_addr_to_str(addr, s, sizeof(s)),
                strerror(errno));
        goto err_close;
    }
    if (bound_p) {
        union bt_sockaddr b;
        socklen_t blen = sizeof(b);
        memset(&b, 0, sizeof(b));
        if (getsockname(fd, &b.sa, &blen) != 0) {
            BT_WARN("getsockname on the socket listening on %s failed: %s",
                    bt_socket_addr_to_str(addr, s, sizeof(s)), strerror(errno));
            goto err_close;
        }
        *bound_p = b;
    }
    *fd_p = fd;
    return BT_OK;

err_close:
    close(fd);
    return BT_ERR_SYSTEM;
}

/* One non-blocking connect attempt, waited on until the deadline. Returns 0 or an errno. */
static int connect_once(const union bt_sockaddr *addr, const struct bt_socket_wait *w, int *fd_p)
{
    int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return errno ? errno : EIO;
    /* Linux lets a SO_REUSEADDR bind take a port held by a TIME_WAIT socket only when that
     * socket had SO_REUSEADDR too. Our outgoing connections get ephemeral ports; marking them
     * keeps their TIME_WAIT remains from blocking a later root listener on a fixed port. */
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int err = 0;
    if (connect(fd, &addr->sa, bt_socket_addr_len(addr)) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
            err = ETIMEDOUT;
            for (;;) {
                if (bt_socket_wait_aborted(w)) {
                    err = ECANCELED;
                    break;
                }
                int ms = wait_slice_ms(w);
                if (ms < 0)
                    break;
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                int rc = poll(&pfd, 1, ms);
                if (rc < 0 && errno != EINTR) {
                    err = errno;
                    break;
                }
                if (rc > 0) {
                    socklen_t elen = sizeof(err);
                    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
                        err = errno;
                    break;
                }
            }
        }
    }
    if (err != 0) {
        close(fd);
        return err;
    }
    set_nodelay(fd);
    *fd_p = fd;
    return 0;
}

int bt_socket_refused(const union bt_sockaddr *addr, int timeout_ms)
{
    if (bt_socket_addr_len(addr) == 0)
        return 0;
    struct bt_socket_wait w = {.deadline = bt_time_ns() + (uint64_t)timeout_ms * 1000000ull};
    int fd = -1;
    int err = connect_once(addr, &w, &fd);
    if (err == 0)
        close(fd);
    return err == ECONNREFUSED;
}

bt_status_t bt_socket_connect(const union bt_sockaddr *addr, const struct bt_socket_wait *w,
                              int *fd_p)
{
    char s[BT_SOCKADDR_STRLEN];
    if (bt_socket_addr_len(addr) == 0) {
        BT_WARN("connect: unsupported address family %d", (int)addr->sa.sa_family);
        return BT_ERR_INVALID_ARG;
    }
    int tries = 0;
    unsigned backoff_ms = 1;
    for (;;) {
        int fd = -1;
        int err = connect_once(addr, w, &fd);
        tries++;
        if (err == 0) {
            *fd_p = fd;
            return BT_OK;
        }
        if (err == ECANCELED || bt_socket_wait_aborted(w)) {
            BT_INFO(BT_LOG_INIT | BT_LOG_NET, "connect to %s aborted",
                    bt_socket_addr_to_str(addr, s, sizeof(s)));
            return BT_ERR_REMOTE;
        }
        if (err == ECONNREFUSED && w->listened) {
            BT_WAIT_LOG(w, BT_LOG_NET, "connect to %s refused: nothing listens there any more",
                        bt_socket_addr_to_str(addr, s, sizeof(s)));
            return BT_ERR_REMOTE;
        }
        if (err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN) {
            BT_WAIT_LOG(w, BT_LOG_NET, "connect to %s failed: %s",
                        bt_socket_addr_to_str(addr, s, sizeof(s)), strerror(err));
            return BT_ERR_SYSTEM;
        }
        if (wait_slice_ms(w) < 0) {
            BT_WAIT_LOG(w, BT_LOG_NET, "connect to %s timed out after %d attempts: %s",
                        bt_socket_addr_to_str(addr, s, sizeof(s)), tries, strerror(err));
            return BT_ERR_REMOTE;
        }
        /* The listener may not be up yet: back off, but stay within an abort slice. */
        int ms = wait_slice_ms(w);
        if (ms > 0)
            usleep((useconds_t)((unsigned)ms < backoff_ms ? (unsigned)ms : backoff_ms) * 1000);
        if (backoff_ms < BT_SOCKET_POLL_SLICE_MS)
            backoff_ms *= 2;
    }
}

bt_status_t bt_socket_recv_some(int fd, void *buf, size_t len, size_t *got_p)
{
    char s[BT_SOCKADDR_STRLEN];
    *got_p = 0;
    if (len == 0)
        return BT_OK;
    ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
    if (n > 0) {
        *got_p = (size_t)n;
        return BT_OK;
    }
    if (n == 0) {
        BT_INFO(BT_LOG_INIT | BT_LOG_NET, "connection from %s closed with %zu bytes missing",
                fd_peer_str(fd, s, sizeof(s)), len);
        return BT_ERR_REMOTE;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return BT_OK;
    BT_INFO(BT_LOG_INIT | BT_LOG_NET, "recv from %s failed: %s", fd_peer_str(fd, s, sizeof(s)),
            strerror(errno));
    return BT_ERR_REMOTE;
}

bt_status_t bt_socket_exchange(int send_fd, const void *sbuf, size_t slen, int recv_fd, void *rbuf,
                               size_t rlen, const struct bt_socket_wait *w)
{
    char s[BT_SOCKADDR_STRLEN];
    size_t sent = 0, got = 0;
    while (sent < slen || got < rlen) {
        /* Try both directions first: most calls complete without ever polling. */
        if (sent < slen) {
            ssize_t n =
                send(send_fd, (const char *)sbuf + sent, slen - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                sent += (size_t)n;
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                BT_WAIT_LOG(w, BT_LOG_NET, "send of %zu bytes to %s failed after %zu: %s", slen,
                            fd_peer_str(send_fd, s, sizeof(s)), sent, strerror(errno));
                return BT_ERR_REMOTE;
            }
        }
        if (got < rlen) {
            ssize_t n = recv(recv_fd, (char *)rbuf + got, rlen - got, MSG_DONTWAIT);
            if (n > 0) {
                got += (size_t)n;
            } else if (n == 0) {
                BT_WAIT_LOG(w, BT_LOG_NET, "connection from %s closed after %zu of %zu bytes",
                            fd_peer_str(recv_fd, s, sizeof(s)), got, rlen);
                return BT_ERR_REMOTE;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                BT_WAIT_LOG(w, BT_LOG_NET, "recv of %zu bytes from %s failed after %zu: %s", rlen,
                            fd_peer_str(recv_fd, s, sizeof(s)), got, strerror(errno));
                return BT_ERR_REMOTE;
            }
        }
        if (sent == slen && got == rlen)
            break;
        if (bt_socket_wait_aborted(w)) {
            BT_INFO(BT_LOG_INIT | BT_LOG_NET,
                    "socket wait aborted (sent %zu/%zu, received %zu/%zu)", sent, slen, got, rlen);
            return BT_ERR_REMOTE;
        }
        int ms = wait_slice_ms(w);
        if (ms < 0) {
            if (got < rlen)
                BT_WAIT_LOG(w, BT_LOG_NET, "recv from %s timed out after %zu of %zu bytes: %s",
                            fd_peer_str(recv_fd, s, sizeof(s)), got, rlen, strerror(ETIMEDOUT));
            else
                BT_WAIT_LOG(w, BT_LOG_NET, "send to %s timed out after %zu of %zu bytes: %s",
                            fd_peer_str(send_fd, s, sizeof(s)), sent, slen, strerror(ETIMEDOUT));
            return BT_ERR_REMOTE;
        }
        struct pollfd pfd[2];
        int np = 0;
        if (sent < slen)
            pfd[np++] = (struct pollfd){.fd = send_fd, .events = POLLOUT};
        if (got < rlen)
            pfd[np++] = (struct pollfd){.fd = recv_fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)np, ms) < 0 && errno != EINTR) {
            BT_WARN("poll on fds %d/%d failed: %s", send_fd, recv_fd, strerror(errno));
            return BT_ERR_SYSTEM;
        }
    }
    return BT_OK;
}

bt_status_t bt_socket_send_all(int fd, const void *buf, size_t len, const struct bt_socket_wait *w)
{
    return bt_socket_exchange(fd, buf, len, fd, NULL, 0, w);
}

bt_status_t bt_socket_recv_all(int fd, void *buf, size_t len, const struct bt_socket_wait *w)
{
    return bt_socket_exchange(fd, NULL, 0, fd, buf, len, w);
}

void bt_socket_close(int *fd_p)
{
    if (*fd_p >= 0) {
        close(*fd_p);
        *fd_p = -1;
    }
}
