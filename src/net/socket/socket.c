/*
 * Socket backend: devices, listen, non-blocking connect and accept, and its NCCL v11 net
 * table (wire format and threading: socket.h and socket_comm.c). The same table is what
 * libnccl-net-baton.so exports (plugins/net-baton).
 *
 * connect() keeps the state of a connection in progress in a process-wide list keyed by
 * the handle's address and bytes ("call again with the same arguments"); accept() keeps
 * accepted sockets whose header has not arrived, and bundles not yet complete, in the
 * listen comm. Both only ever make non-blocking calls.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/socket/socket.h"
#include "util/param.h"
#include "util/random.h"
#include "util/time.h"

#define HDR_BYTES 24
#define ACCEPT_HDR_TIMEOUT_NS (5ull * 1000000000ull) /* a stranger that stalls is dropped */
#define ACCEPT_MAX_PENDING 256

/* What listen() publishes in the 128-byte handle. */
struct sock_handle {
    uint64_t tag;   /* BT_NET_SOCKET_TAG */
    uint64_t magic; /* random per listener; every socket's header repeats it */
    union bt_sockaddr addr;
};
_Static_assert(sizeof(struct sock_handle) <= BT_NET_HANDLE_BYTES, "handle too large");

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_ndev = -1;
static struct bt_socket_iface g_dev[BT_NET_SOCKET_MAX_DEVS]; /* devices: interfaces */
static int g_cfg_override;
static struct bt_net_socket_config g_cfg;

/* ---- configuration ---- */

void bt_net_socket_config_get(struct bt_net_socket_config *cfg_p)
{
    pthread_mutex_lock(&g_mu);
    int over = g_cfg_override;
    struct bt_net_socket_config c = g_cfg;
    pthread_mutex_unlock(&g_mu);
    if (!over) {
        int64_t nt = bt_param_socket_nthreads(), ns = bt_param_nsocks_perthread();
        c.nthreads = nt < 0                           ? 0
                     : nt > BT_NET_SOCKET_MAX_THREADS ? BT_NET_SOCKET_MAX_THREADS
                                                      : (int)nt;
        c.nsocks_per_thread = ns < 1                         ? 1
                              : ns > BT_NET_SOCKET_MAX_SOCKS ? BT_NET_SOCKET_MAX_SOCKS
                                                             : (int)ns;
        c.set_thread_name = bt_param_set_thread_name() != 0;
        c.delay_us = bt_param_socket_delay_us();
        c.delay_min_bytes = bt_param_socket_delay_min_bytes();
        c.fail_after_bytes = bt_param_socket_fail_after_bytes();
    }
    *cfg_p = c;
}

void bt_net_socket_config_set(const struct bt_net_socket_config *cfg)
{
    pthread_mutex_lock(&g_mu);
    g_cfg_override = cfg != NULL;
    if (cfg)
        g_cfg = *cfg;
    pthread_mutex_unlock(&g_mu);
}

int bt_net_socket_config_nsocks(const struct bt_net_socket_config *cfg)
{
    int nt = cfg->nthreads < 1 ? 1 : cfg->nthreads;
    int ns = cfg->nsocks_per_thread < 1 ? 1 : cfg->nsocks_per_thread;
    return nt * ns > BT_NET_SOCKET_MAX_SOCKS ? BT_NET_SOCKET_MAX_SOCKS : nt * ns;
}

/* ---- init, listen ---- */

static bt_status_t sock_init(int *ndev_p)
{
    bt_status_t st = BT_OK;
    pthread_mutex_lock(&g_mu);
    if (g_ndev < 0) {
        /* Every interface SOCKET_IFNAME selects is a device: a connector listens on the one
         * its rank or channel is given (transport/net.c). Without SOCKET_IFNAME only the
         * first: other interfaces may be on networks the peers cannot reach. */
        int max = bt_param_str_socket_ifname() ? BT_NET_SOCKET_MAX_DEVS : 1;
        int n = bt_socket_find_interfaces(g_dev, max);
        if (n <= 0) {
            st = n < 0 ? BT_ERR_SYSTEM : BT_ERR_INVALID_ARG;
        } else {
            g_ndev = n;
            for (int d = 0; d < n; d++) {
                char s[BT_SOCKADDR_STRLEN];
                BT_INFO(BT_LOG_INIT | BT_LOG_NET, "NET/Socket: device %d is %s:%s", d,
                        g_dev[d].name, bt_socket_addr_to_str(&g_dev[d].addr, s, sizeof(s)));
            }
        }
    }
    if (st == BT_OK)
        *ndev_p = g_ndev;
    pthread_mutex_unlock(&g_mu);
    return st;
}

struct pending_sock {
    int fd;
    unsigned char hdr[HDR_BYTES];
    size_t got;
    uint64_t deadline;
    union bt_sockaddr peer;
};

struct bundle {
    uint64_t id;
    int nsocks, count;
    int fds[BT_NET_SOCKET_MAX_SOCKS];
    struct bundle *next;
};

struct sock_listen {
    int fd;
    uint64_t magic;
    union bt_sockaddr addr;
    int npending;
    struct pending_sock pending[ACCEPT_MAX_PENDING];
    struct bundle *bundles;
};

static bt_status_t sock_listen(int dev, void *handle, void **listen_comm_p)
{
    int ndev;
    BT_CHECK(sock_init(&ndev));
    if (dev < 0 || dev >= ndev) {
        BT_WARN("NET/Socket: listen on device %d, but there are %d", dev, ndev);
        return BT_ERR_INVALID_ARG;
    }
    struct sock_listen *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        BT_WARN("NET/Socket: out of memory for a listen comm");
        return BT_ERR_SYSTEM;
    }
    bt_status_t st = bt_socket_listen(&g_dev[dev].addr, &l->fd, &l->addr);
    if (st != BT_OK) {
        free(l);
        return st;
    }
    l->magic = bt_random_u64();
    struct sock_handle h = {.tag = BT_NET_SOCKET_TAG, .magic = l->magic, .addr = l->addr};
    memset(handle, 0, BT_NET_HANDLE_BYTES);
    memcpy(handle, &h, sizeof(h));
    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_NET, "NET/Socket: listening on %s",
            bt_socket_addr_to_str(&l->addr, s, sizeof(s)));
    *listen_comm_p = l;
    return BT_OK;
}

static void sock_close_listen(void *listen_comm)
{
    struct sock_listen *l = listen_comm;
    if (l == NULL)
        return;
    for (int i = 0; i < l->npending; i++)
        close(l->pending[i].fd);
    while (l->bundles) {
        struct bundle *b = l->bundles;
        l->bundles = b->next;
        for (int i = 0; i < b->nsocks; i++)
            if (b->fds[i] >= 0)
                close(b->fds[i]);
        free(b);
    }
    bt_socket_close(&l->fd);
    free(l);
}

/* ---- connect ---- */

struct pending_connect {
    const void *key;
    unsigned char handle[BT_NET_HANDLE_BYTES];
    int dev;
    union bt_sockaddr addr;
    struct bt_net_socket_config cfg;
    uint64_t id, magic, deadline;
    int nsocks;
    int fds[BT_NET_SOCKET_MAX_SOCKS];
    int connected[BT_NET_SOCKET_MAX_SOCKS];
    size_t sent[BT_NET_SOCKET_MAX_SOCKS];
    struct pending_connect *next;
};

static struct pending_connect *g_connects; /* under g_mu */

static void set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        BT_INFO(BT_LOG_NET, "NET/Socket: setsockopt(TCP_NODELAY) failed: %s", strerror(errno));
    int bytes = (int)bt_param_socket_buffsize();
    if (bytes > 0) {
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) != 0)
            BT_INFO(BT_LOG_NET, "NET/Socket: setsockopt(SO_SNDBUF/SO_RCVBUF %d) failed: %s", bytes,
                    strerror(errno));
    }
}

/* Start a non-blocking connect of socket i; an error is an errno. */
static int connect_start(struct pending_connect *pc, int i)
{
    int fd = socket(pc->addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return errno;
    pc->fds[i] = fd;
    pc->connected[i] = 0;
    if (connect(fd, &pc->addr.sa, bt_socket_addr_len(&pc->addr)) == 0) {
        pc->connected[i] = 1;
        set_nodelay(fd);
        return 0;
    }
    return errno == EINPROGRESS ? 0 : errno;
}

static void pending_connect_free(struct pending_connect *pc)
{
    for (int i = 0; i < pc->nsocks; i++)
        if (pc->fds[i] >= 0)
            close(pc->fds[i]);
    free(pc);
}

/* The link pointing at the connect in progress with these arguments (at NULL: none).
 * Under g_mu. */
static struct pending_connect **pending_find(int dev, const void *handle)
{
    struct pending_connect **pp = &g_connects;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->key == handle && (*pp)->dev == dev &&
            memcmp((*pp)->handle, handle, BT_NET_HANDLE_BYTES) == 0)
            break;
    return pp;
}

/* One non-blocking round on every socket: 1 = all connected and headers sent, 0 = not yet,
 * or a failure (logged). */
static bt_status_t connect_progress(struct pending_connect *pc, int *done_p)
{
    char s[BT_SOCKADDR_STRLEN];
    int done = 1;
    for (int i = 0; i < pc->nsocks; i++) {
        int err = 0;
        if (!pc->connected[i]) {
            struct pollfd pfd = {.fd = pc->fds[i], .events = POLLOUT};
            if (poll(&pfd, 1, 0) <= 0) {
                done = 0;
                continue;
            }
            socklen_t elen = sizeof(err);
            if (getsockopt(pc->fds[i], SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
                err = errno;
            if (err == ECONNREFUSED || err == ETIMEDOUT || err == EAGAIN) {
                /* the listener's backlog may be full: try again until the deadline */
                close(pc->fds[i]);
                pc->fds[i] = -1;
                if (bt_time_ns() > pc->deadline) {
                    BT_WARN("NET/Socket: connect to %s timed out: %s",
                            bt_socket_addr_to_str(&pc->addr, s, sizeof(s)), strerror(err));
                    return BT_ERR_REMOTE;
                }
                err = connect_start(pc, i);
                if (err == 0) {
                    done = 0;
                    continue;
                }
            }
            if (err != 0) {
                BT_WARN("NET/Socket: connect to %s (socket %d of %d) failed: %s",
                        bt_socket_addr_to_str(&pc->addr, s, sizeof(s)), i, pc->nsocks,
                        strerror(err));
                return BT_ERR_REMOTE;
            }
            pc->connected[i] = 1;
            set_nodelay(pc->fds[i]);
        }
        if (pc->sent[i] < HDR_BYTES) {
            uint64_t hdr[3] = {htobe64(pc->magic), htobe64(pc->id),
                               htobe64(((uint64_t)pc->nsocks << 32) | (uint32_t)i)};
            ssize_t n = send(pc->fds[i], (const char *)hdr + pc->sent[i], HDR_BYTES - pc->sent[i],
                             MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
                pc->sent[i] += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                BT_WARN("NET/Socket: sending the header to %s failed: %s",
                        bt_socket_addr_to_str(&pc->addr, s, sizeof(s)), strerror(errno));
                return BT_ERR_REMOTE;
            }
            if (pc->sent[i] < HDR_BYTES)
                done = 0;
        }
    }
    if (done == 0 && bt_time_ns() > pc->deadline) {
        BT_WARN("NET/Socket: connect to %s timed out",
                bt_socket_addr_to_str(&pc->addr, s, sizeof(s)));
        return BT_ERR_REMOTE;
    }
    *done_p = done;
    return BT_OK;
}

/* caller: any thread; several may connect at once (the pending list is locked). */
static bt_status_t sock_connect(int dev, const void *handle, void **send_comm_p)
{
    *send_comm_p = NULL;
    struct sock_handle h;
    memcpy(&h, handle, sizeof(h));
    if (h.tag != BT_NET_SOCKET_TAG || !bt_socket_addr_valid(&h.addr)) {
        BT_WARN("NET/Socket: connect with a handle that listen() did not make (tag 0x%llx)",
                (unsigned long long)h.tag);
        return BT_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&g_mu);
    struct pending_connect **pp, *pc = *pending_find(dev, handle);
    pthread_mutex_unlock(&g_mu);
    bt_status_t st = BT_OK;
    if (pc == NULL) {
        pc = calloc(1, sizeof(*pc));
        if (pc == NULL) {
            BT_WARN("NET/Socket: out of memory for a connect");
            return BT_ERR_SYSTEM;
        }
        pc->key = handle;
        memcpy(pc->handle, handle, BT_NET_HANDLE_BYTES);
        pc->dev = dev;
        pc->addr = h.addr;
        pc->magic = h.magic;
        pc->id = bt_random_u64();
        pc->deadline = bt_deadline_from_now();
        bt_net_socket_config_get(&pc->cfg);
        pc->nsocks = bt_net_socket_config_nsocks(&pc->cfg);
        for (int i = 0; i < pc->nsocks; i++)
            pc->fds[i] = -1;
        for (int i = 0; i < pc->nsocks; i++) {
            int err = connect_start(pc, i);
            if (err != 0) {
                char s[BT_SOCKADDR_STRLEN];
                BT_WARN("NET/Socket: connect to %s failed: %s",
                        bt_socket_addr_to_str(&pc->addr, s, sizeof(s)), strerror(err));
                pending_connect_free(pc);
                return BT_ERR_REMOTE;
            }
        }
        pthread_mutex_lock(&g_mu);
        pc->next = g_connects;
        g_connects = pc;
        pthread_mutex_unlock(&g_mu);
    }
    int done = 0;
    st = connect_progress(pc, &done);
    if (st != BT_OK || done) {
        pthread_mutex_lock(&g_mu);
        for (pp = &g_connects; *pp != pc; pp = &(*pp)->next)
            ;
        *pp = pc->next;
        pthread_mutex_unlock(&g_mu);
    }
    if (st != BT_OK) {
        pending_connect_free(pc);
        return st;
    }
    if (!done)
        return BT_OK;
    struct bt_net_socket_comm *c = NULL;
    st = bt_net_socket_comm_create(1, pc->fds, pc->nsocks, &pc->cfg, &c);
    for (int i = 0; i < pc->nsocks; i++)
        pc->fds[i] = -1; /* the comm owns them now */
    free(pc);
    if (st != BT_OK)
        return st;
    *send_comm_p = c;
    return BT_OK;
}

/* caller: any thread */
static void sock_connect_cancel(int dev, const void *handle)
{
    pthread_mutex_lock(&g_mu);
    struct pending_connect **pp = pending_find(dev, handle), *pc = *pp;
    if (pc)
        *pp = pc->next;
    pthread_mutex_unlock(&g_mu);
    if (pc)
        pending_connect_free(pc);
}

/* ---- accept ---- */

static void pending_drop(struct sock_listen *l, int i, const char *why)
{
    char s[BT_SOCKADDR_STRLEN];
    if (why)
        BT_INFO(BT_LOG_NET, "NET/Socket: dropping connection from %s: %s",
                bt_socket_addr_to_str(&l->pending[i].peer, s, sizeof(s)), why);
    close(l->pending[i].fd);
    l->pending[i] = l->pending[--l->npending];
}

/* File a socket whose header is complete and valid; may complete a bundle (*done_p). */
static const char *bundle_add(struct sock_listen *l, uint64_t id, int nsocks, int index, int fd,
                              struct bundle **done_p)
{
    struct bundle *b = l->bundles;
    while (b && b->id != id)
        b = b->next;
    if (b == NULL) {
        b = calloc(1, sizeof(*b));
        if (b == NULL)
            return "out of memory";
        b->id = id;
        b->nsocks = nsocks;
        for (int i = 0; i < BT_NET_SOCKET_MAX_SOCKS; i++)
            b->fds[i] = -1;
        b->next = l->bundles;
        l->bundles = b;
    }
    if (b->nsocks != nsocks)
        return "socket count differs from the other sockets of its bundle";
    if (b->fds[index] >= 0)
        return "duplicate socket index";
    b->fds[index] = fd;
    if (++b->count == b->nsocks) {
        struct bundle **pp = &l->bundles;
        while (*pp != b)
            pp = &(*pp)->next;
        *pp = b->next;
        *done_p = b;
    }
    return NULL;
}

/* caller: the thread that owns the listen comm. */
static bt_status_t sock_accept(void *listen_comm, void **recv_comm_p)
{
    struct sock_listen *l = listen_comm;
    *recv_comm_p = NULL;
    struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
    while (poll(&pfd, 1, 0) > 0) {
        union bt_sockaddr peer;
        socklen_t plen = sizeof(peer);
        memset(&peer, 0, sizeof(peer));
        int fd = accept4(l->fd, &peer.sa, &plen, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
                break;
            char s[BT_SOCKADDR_STRLEN];
            BT_WARN("NET/Socket: accept on %s failed: %s",
                    bt_socket_addr_to_str(&l->addr, s, sizeof(s)), strerror(errno));
            return BT_ERR_SYSTEM;
        }
        if (l->npending == ACCEPT_MAX_PENDING) {
            BT_INFO(BT_LOG_NET, "NET/Socket: %d connections without a header; dropping one more",
                    ACCEPT_MAX_PENDING);
            close(fd);
            continue;
        }
        set_nodelay(fd);
        l->pending[l->npending++] = (struct pending_sock){
            .fd = fd, .got = 0, .deadline = bt_time_ns() + ACCEPT_HDR_TIMEOUT_NS, .peer = peer};
    }

    uint64_t now = bt_time_ns();
    struct bundle *done = NULL;
    for (int i = l->npending - 1; i >= 0 && done == NULL; i--) {
        struct pending_sock *p = &l->pending[i];
        ssize_t n = recv(p->fd, p->hdr + p->got, HDR_BYTES - p->got, MSG_DONTWAIT);
        if (n > 0)
            p->got += (size_t)n;
        else if (n == 0) {
            pending_drop(l, i, "closed before its header");
            continue;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            pending_drop(l, i, strerror(errno));
            continue;
        }
        if (p->got < HDR_BYTES) {
            if (now > p->deadline)
                pending_drop(l, i, "no header in time");
            continue;
        }
        uint64_t w[3];
        memcpy(w, p->hdr, sizeof(w));
        uint64_t magic = be64toh(w[0]), id = be64toh(w[1]), ni = be64toh(w[2]);
        int nsocks = (int)(ni >> 32), index = (int)(uint32_t)ni;
        if (magic != l->magic) {
            pending_drop(l, i, "wrong magic");
            continue;
        }
        if ((ni >> 32) < 1 || (ni >> 32) > BT_NET_SOCKET_MAX_SOCKS || (uint32_t)ni >= (ni >> 32)) {
            pending_drop(l, i, "bad socket count or index");
            continue;
        }
        const char *why = bundle_add(l, id, nsocks, index, p->fd, &done);
        if (why) {
            pending_drop(l, i, why);
            continue;
        }
        l->pending[i] = l->pending[--l->npending]; /* the bundle owns the fd now */
    }
    if (done == NULL)
        return BT_OK;
    struct bt_net_socket_config cfg;
    bt_net_socket_config_get(&cfg);
    struct bt_net_socket_comm *c = NULL;
    bt_status_t st = bt_net_socket_comm_create(0, done->fds, done->nsocks, &cfg, &c);
    free(done);
    if (st != BT_OK)
        return st;
    *recv_comm_p = c;
    return BT_OK;
}

/* ---- the v11 table ---- */

/* Status values equal ncclResult_t's (util/status.h). */
static ncclResult_t res(bt_status_t st)
{
    return (ncclResult_t)st;
}

static int g_ctx; /* init()'s context: the backend keeps no per-communicator state */

static ncclResult_t sock_v11_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *config,
                                  ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    (void)comm_id, (void)config, (void)log, (void)prof;
    *ctx = &g_ctx;
    return ncclSuccess;
}

/* No interface is "0 devices", not an error: the next backend may have one. */
static ncclResult_t sock_v11_devices(int *ndev)
{
    *ndev = 0;
    int n = 0;
    if (sock_init(&n) == BT_OK)
        *ndev = n;
    return ncclSuccess;
}

/* An interface's link speed in Mbps from sysfs (virtual ones have none: 10 Gbps). */
static int iface_speed(const char *ifname)
{
    char path[128];
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
    FILE *f = fopen(path, "r");
    int mbps = 0;
    if (f) {
        if (fscanf(f, "%d", &mbps) != 1)
            mbps = 0;
        fclose(f);
    }
    return mbps > 0 ? mbps : 10000;
}

static ncclResult_t sock_v11_props(int dev, ncclNetProperties_v11_t *props)
{
    int ndev = 0;
    if (sock_init(&ndev) != BT_OK || dev < 0 || dev >= ndev) {
        BT_WARN("NET/Socket: properties of device %d, but there are %d", dev, ndev);
        return ncclInvalidArgument;
    }
    memset(props, 0, sizeof(*props));
    props->name = g_dev[dev].name;
    /* the PCI device behind the interface, for the NIC choice; virtual ones have none */
    static char pci[BT_NET_SOCKET_MAX_DEVS][PATH_MAX];
    char path[128];
    snprintf(path, sizeof(path), "/sys/class/net/%s/device", g_dev[dev].name);
    pthread_mutex_lock(&g_mu);
    props->pciPath = realpath(path, pci[dev]) ? pci[dev] : NULL;
    pthread_mutex_unlock(&g_mu);
    props->guid = (uint64_t)dev;
    props->ptrSupport = NCCL_PTR_HOST;
    props->speed = iface_speed(g_dev[dev].name);
    props->latency = 0;
    props->maxComms = 65536;
    props->maxRecvs = 1;
    props->netDeviceType = NCCL_NET_DEVICE_HOST;
    props->vProps.ndevs = 1;
    props->vProps.devs[0] = dev;
    props->maxP2pBytes = (size_t)1 << 31;
    props->maxCollBytes = (size_t)1 << 31;
    props->maxMultiRequestSize = 1;
    return ncclSuccess;
}

static ncclResult_t sock_v11_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
    (void)ctx;
    return res(sock_listen(dev, handle, listen_comm));
}

static ncclResult_t sock_v11_connect(void *ctx, int dev, void *handle, void **send_comm,
                                     ncclNetDeviceHandle_v11_t **dev_comm)
{
    (void)ctx, (void)dev_comm;
    return res(sock_connect(dev, handle, send_comm));
}

static ncclResult_t sock_v11_accept(void *listen_comm, void **recv_comm,
                                    ncclNetDeviceHandle_v11_t **dev_comm)
{
    (void)dev_comm;
    return res(sock_accept(listen_comm, recv_comm));
}

/* Sockets read and write any host memory: a registration is a token. */
static int g_mr;

static ncclResult_t sock_v11_reg(void *comm, void *data, size_t size, int type, void **mhandle)
{
    (void)comm, (void)data, (void)size;
    if (type != NCCL_PTR_HOST) {
        BT_WARN("NET/Socket: cannot register memory of type %d (host memory only)", type);
        return ncclInternalError;
    }
    *mhandle = &g_mr;
    return ncclSuccess;
}

static ncclResult_t sock_v11_reg_dmabuf(void *comm, void *data, size_t size, int type,
                                        uint64_t offset, int fd, void **mhandle)
{
    (void)offset, (void)fd;
    return sock_v11_reg(comm, data, size, type, mhandle);
}

static ncclResult_t sock_v11_dereg(void *comm, void *mhandle)
{
    (void)comm, (void)mhandle;
    return ncclSuccess;
}

static ncclResult_t sock_v11_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                                   void *phandle, void **request)
{
    (void)tag, (void)mhandle, (void)phandle;
    return res(bt_net_socket_comm_post(send_comm, data, size, request));
}

static ncclResult_t sock_v11_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                                   void **mhandles, void **phandles, void **request)
{
    (void)tags, (void)mhandles, (void)phandles;
    if (n != 1) {
        BT_WARN("NET/Socket: irecv of %d buffers (maxRecvs is 1)", n);
        return ncclInternalError;
    }
    return res(bt_net_socket_comm_post(recv_comm, data[0], sizes[0], request));
}

/* Host memory only: nothing to flush. */
static ncclResult_t sock_v11_iflush(void *recv_comm, int n, void **data, int *sizes,
                                    void **mhandles, void **request)
{
    (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
    *request = NULL;
    return ncclSuccess;
}

static ncclResult_t sock_v11_test(void *request, int *done, int *sizes)
{
    size_t size = 0;
    bt_status_t st = bt_net_socket_req_test(request, done, &size);
    if (st == BT_OK && *done && sizes)
        sizes[0] = size > INT32_MAX ? INT32_MAX : (int)size;
    return res(st);
}

static ncclResult_t sock_v11_close_comm(void *comm)
{
    bt_net_socket_comm_destroy(comm);
    return ncclSuccess;
}

static ncclResult_t sock_v11_close_listen(void *listen_comm)
{
    sock_close_listen(listen_comm);
    return ncclSuccess;
}

static ncclResult_t sock_v11_device_mr(void *comm, void *mhandle, void **dptr_mhandle)
{
    (void)comm, (void)mhandle, (void)dptr_mhandle;
    BT_WARN("NET/Socket: no device offload (getDeviceMr)");
    return ncclInternalError;
}

static ncclResult_t sock_v11_consumed(void *recv_comm, int n, void *request)
{
    (void)recv_comm, (void)n, (void)request;
    return ncclSuccess;
}

/* A virtual device of one physical device is that device; fusing several is not offered. */
static ncclResult_t sock_v11_make_vdev(int *d, ncclNetVDeviceProps_v11_t *props)
{
    int ndev = 0;
    (void)sock_init(&ndev);
    if (props->ndevs != 1 || props->devs[0] < 0 || props->devs[0] >= ndev) {
        BT_WARN("NET/Socket: cannot make a virtual device of %d devices", props->ndevs);
        return ncclInvalidUsage;
    }
    *d = props->devs[0];
    return ncclSuccess;
}

static ncclResult_t sock_v11_finalize(void *ctx)
{
    (void)ctx;
    return ncclSuccess;
}

static ncclResult_t sock_v11_set_attr(void *ctx, ncclNetAttr_v11_t *attr)
{
    (void)ctx, (void)attr;
    return ncclSuccess;
}

static void sock_v11_connect_cancel(void *ctx, int dev, void *handle)
{
    (void)ctx;
    sock_connect_cancel(dev, handle);
}

static const ncclNet_v11_t sock_v11 = {
    .name = "Socket",
    .init = sock_v11_init,
    .devices = sock_v11_devices,
    .getProperties = sock_v11_props,
    .listen = sock_v11_listen,
    .connect = sock_v11_connect,
    .accept = sock_v11_accept,
    .regMr = sock_v11_reg,
    .regMrDmaBuf = sock_v11_reg_dmabuf,
    .deregMr = sock_v11_dereg,
    .isend = sock_v11_isend,
    .irecv = sock_v11_irecv,
    .iflush = sock_v11_iflush,
    .test = sock_v11_test,
    .closeSend = sock_v11_close_comm,
    .closeRecv = sock_v11_close_comm,
    .closeListen = sock_v11_close_listen,
    .getDeviceMr = sock_v11_device_mr,
    .irecvConsumed = sock_v11_consumed,
    .makeVDevice = sock_v11_make_vdev,
    .finalize = sock_v11_finalize,
    .setNetAttr = sock_v11_set_attr,
};

/* Sockets register nothing (regMr hands back a token and pins no page), so a user buffer is
 * as good as a FIFO slot: no registration can go stale when the user frees and reuses the
 * memory. */
static int sock_zero_copy_safe(int dev)
{
    (void)dev;
    return 1;
}

const struct bt_net_backend bt_net_socket = {
    .v11 = &sock_v11,
    .ext =
        {
            .pollfds = bt_net_socket_comm_pollfds,
            .connect_cancel = sock_v11_connect_cancel,
            .zero_copy_safe = sock_zero_copy_safe,
        },
};
