/*
 * Socket backend, the data path of one connected comm (wire format: socket.h).
 *
 * Requests live in BT_NET_SOCKET_MAX_REQS slots, used in sequence order. A request is cut
 * into per-socket tasks {lo, hi}; each socket has a FIFO of tasks (single producer, single
 * consumer) and works on its head task only, so every socket carries its pieces in message
 * order. Producers: for a send, the poster (isend) pushes every non-empty piece; for a
 * receive, the poster pushes socket 0's task, and socket 0's worker pushes the other
 * pieces once it has read the size header. A request finishes when its `pieces_left`
 * reaches 0 and every older request has finished too; test() then frees its slot. A task's
 * worker decrements `pieces_left` after its last access to the request, so a finished
 * request's slot is never touched by a worker again.
 *
 * Workers: with nthreads = 0 the caller of test() advances every socket (non-blocking I/O);
 * otherwise helper i owns the sockets s with s % nthreads == i. A helper with no task waits
 * on its condition variable; with tasks blocked on I/O it polls its sockets and an eventfd
 * that posters write to (only while it polls), so idle helpers never spin. Once the comm
 * failed, test() and post() return the error only after every helper has parked for good:
 * the caller may then free the buffers of the requests still in flight.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "net/socket/socket.h"
#include "util/time.h"

struct sock_req {
    struct bt_net_socket_comm *comm;
    char *data;
    size_t cap;   /* posted size: what a receive accepts */
    size_t size;  /* bytes of the message (receive: set by socket 0's worker) */
    uint64_t seq; /* place in the comm's sequence */
    atomic_int pieces_left;
    unsigned char hdr[8]; /* size header, big-endian */
    uint64_t done_ns;     /* delay injection: when the data was all moved */
    int in_use;           /* caller's thread only */
};

struct sock_task {
    struct sock_req *req;
    size_t lo, hi; /* bytes of req->data this socket moves */
};

struct sock {
    int fd;
    struct sock_task tasks[BT_NET_SOCKET_MAX_REQS];
    atomic_uint head; /* pushed (producer) */
    atomic_uint tail; /* finished (consumer) */
    size_t hdr_off;   /* socket 0: bytes of the size header moved for the head task */
    size_t off;       /* bytes of the head task moved */
};

struct sock_helper {
    struct bt_net_socket_comm *comm;
    int index;
    pthread_t thread;
    atomic_int tid;
    int efd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int kicked, waiting, polling, stop; /* under mu */
    int started;
    atomic_int parked; /* saw the comm's failure: touches no request again */
};

struct bt_net_socket_comm {
    int is_send;
    int nsocks;
    int nhelpers;
    struct bt_net_socket_config cfg;
    char peer[BT_SOCKADDR_STRLEN];
    atomic_int error; /* first failure (bt_status_t), sticky */
    int quiet;        /* caller's thread: every helper parked after the failure */
    atomic_ullong bytes_sent;
    uint64_t nposted; /* caller's thread only */
    struct sock_req reqs[BT_NET_SOCKET_MAX_REQS];
    struct sock socks[BT_NET_SOCKET_MAX_SOCKS];
    struct sock_helper helpers[BT_NET_SOCKET_MAX_THREADS];
};

/* Record the comm's first failure (the caller has logged why). */
static void comm_fail(struct bt_net_socket_comm *c, bt_status_t st)
{
    int expected = BT_OK;
    atomic_compare_exchange_strong(&c->error, &expected, (int)st);
}

static void helper_kick(struct sock_helper *h)
{
    pthread_mutex_lock(&h->mu);
    h->kicked = 1;
    if (h->waiting)
        pthread_cond_signal(&h->cv);
    else if (h->polling) {
        uint64_t one = 1;
        if (write(h->efd, &one, sizeof(one)) < 0) { /* counter full: already readable */
        }
    }
    pthread_mutex_unlock(&h->mu);
}

/* Append a task to socket s; there is always room (one task per request per socket). */
static void sock_push(struct bt_net_socket_comm *c, int s, struct sock_req *r, size_t lo, size_t hi)
{
    struct sock *sk = &c->socks[s];
    unsigned head = atomic_load_explicit(&sk->head, memory_order_relaxed);
    sk->tasks[head % BT_NET_SOCKET_MAX_REQS] = (struct sock_task){.req = r, .lo = lo, .hi = hi};
    /* task (and the request it points to) before head: the worker reads head then task */
    atomic_store_explicit(&sk->head, head + 1, memory_order_release);
    if (c->nhelpers > 0)
        helper_kick(&c->helpers[s % c->nhelpers]);
}

/* The piece of a `size`-byte message that socket s carries. */
static void piece_of(size_t size, int nsocks, int s, size_t *lo_p, size_t *hi_p)
{
    if (size < BT_NET_SOCKET_MIN_SPLIT || nsocks == 1) {
        *lo_p = 0;
        *hi_p = s == 0 ? size : 0;
        return;
    }
    size_t chunk = (size + (size_t)nsocks - 1) / (size_t)nsocks;
    size_t lo = chunk * (size_t)s;
    if (lo > size)
        lo = size;
    *lo_p = lo;
    *hi_p = size - lo < chunk ? size : lo + chunk;
}

/* How many of sockets 1..n-1 have a non-empty piece of a `size`-byte message. */
static int count_other_pieces(const struct bt_net_socket_comm *c, size_t size)
{
    int n = 0;
    for (int s = 1; s < c->nsocks; s++) {
        size_t lo, hi;
        piece_of(size, c->nsocks, s, &lo, &hi);
        n += hi > lo;
    }
    return n;
}

/* Push the non-empty pieces of sockets 1..n-1 of request r. */
static void push_other_pieces(struct bt_net_socket_comm *c, struct sock_req *r)
{
    for (int s = 1; s < c->nsocks; s++) {
        size_t lo, hi;
        piece_of(r->size, c->nsocks, s, &lo, &hi);
        if (hi > lo)
            sock_push(c, s, r, lo, hi);
    }
}

static void fault_inject_close(struct bt_net_socket_comm *c, unsigned long long sent)
{
    BT_WARN("NET/Socket: fault injection (SOCKET_FAIL_AFTER_BYTES=%lld): shutting down the "
            "connection to %s after %llu bytes",
            (long long)c->cfg.fail_after_bytes, c->peer, sent);
    for (int s = 0; s < c->nsocks; s++)
        shutdown(c->socks[s].fd, SHUT_RDWR);
    comm_fail(c, BT_ERR_REMOTE);
}

/* Move bytes on one socket without blocking: 1 = all of [*off, len) moved, 0 = would
 * block, -1 = failed (logged, comm failed). */
static int sock_io(struct bt_net_socket_comm *c, int s, char *buf, size_t len, size_t *off)
{
    int fd = c->socks[s].fd;
    while (*off < len) {
        ssize_t n;
        if (c->is_send)
            n = send(fd, buf + *off, len - *off, MSG_DONTWAIT | MSG_NOSIGNAL);
        else
            n = recv(fd, buf + *off, len - *off, MSG_DONTWAIT);
        if (n > 0) {
            *off += (size_t)n;
            if (c->is_send && c->cfg.fail_after_bytes > 0) {
                unsigned long long sent =
                    atomic_fetch_add(&c->bytes_sent, (unsigned long long)n) + (unsigned long long)n;
                if (sent >= (unsigned long long)c->cfg.fail_after_bytes) {
                    fault_inject_close(c, sent);
                    return -1;
                }
            }
            continue;
        }
        if (n == 0) {
            BT_WARN("NET/Socket: connection with %s (socket %d of %d) closed by the peer while "
                    "%zu more bytes were expected",
                    c->peer, s, c->nsocks, len - *off);
            comm_fail(c, BT_ERR_REMOTE);
            return -1;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == EINTR)
            continue;
        if (atomic_load(&c->error) == BT_OK) {
            BT_WARN("NET/Socket: %s %s (socket %d of %d) failed: %s",
                    c->is_send ? "send to" : "recv from", c->peer, s, c->nsocks, strerror(errno));
            comm_fail(c, BT_ERR_REMOTE);
        }
        return -1;
    }
    return 1;
}

/*
 * Advance socket s as far as it goes without blocking. *events_p: what to poll for (0:
 * no task). Returns 1 if a task finished, 0 if not, -1 on failure.
 * caller: the socket's worker (its helper, or the thread calling test()).
 */
static int sock_advance(struct bt_net_socket_comm *c, int s, short *events_p)
{
    struct sock *sk = &c->socks[s];
    int progressed = 0;
    *events_p = 0;
    for (;;) {
        if (atomic_load_explicit(&c->error, memory_order_relaxed) != BT_OK)
            return -1;
        unsigned tail = atomic_load_explicit(&sk->tail, memory_order_relaxed);
        if (tail == atomic_load_explicit(&sk->head, memory_order_acquire))
            return progressed;
        struct sock_task *t = &sk->tasks[tail % BT_NET_SOCKET_MAX_REQS];
        struct sock_req *r = t->req;
        if (s == 0 && sk->hdr_off < sizeof(r->hdr)) {
            int rc = sock_io(c, s, (char *)r->hdr, sizeof(r->hdr), &sk->hdr_off);
            if (rc <= 0) {
                *events_p = c->is_send ? POLLOUT : POLLIN;
                return rc < 0 ? -1 : progressed;
            }
            if (!c->is_send) {
                uint64_t be;
                memcpy(&be, r->hdr, sizeof(be));
                uint64_t size = be64toh(be);
                if (size > r->cap) {
                    BT_WARN("NET/Socket: a message of %llu bytes from %s is larger than the "
                            "receive buffer of %zu bytes",
                            (unsigned long long)size, c->peer, r->cap);
                    comm_fail(c, BT_ERR_INVALID_USAGE);
                    return -1;
                }
                r->size = (size_t)size;
                piece_of(r->size, c->nsocks, 0, &t->lo, &t->hi);
                /* count the other pieces before any of them can finish */
                atomic_fetch_add(&r->pieces_left, count_other_pieces(c, r->size));
                push_other_pieces(c, r);
            }
        }
        int rc = sock_io(c, s, r->data + t->lo, t->hi - t->lo, &sk->off);
        if (rc <= 0) {
            *events_p = c->is_send ? POLLOUT : POLLIN;
            return rc < 0 ? -1 : progressed;
        }
        sk->off = 0;
        sk->hdr_off = 0;
        atomic_store_explicit(&sk->tail, tail + 1, memory_order_relaxed);
        /* the data (and r->size) before the count: test() reads the count, then them */
        atomic_fetch_sub_explicit(&r->pieces_left, 1, memory_order_release);
        progressed = 1;
    }
}

static void helper_set_name(struct sock_helper *h)
{
    if (!h->comm->cfg.set_thread_name)
        return;
    char name[16];
    snprintf(name, sizeof(name), "baton Sock%c %d", h->comm->is_send ? 'S' : 'R', h->index);
    pthread_setname_np(pthread_self(), name);
}

/* caller: the helper thread itself. */
static void *helper_main(void *arg)
{
    struct sock_helper *h = arg;
    struct bt_net_socket_comm *c = h->comm;
    atomic_store(&h->tid, (int)syscall(SYS_gettid));
    helper_set_name(h);
    struct pollfd pfd[BT_NET_SOCKET_MAX_SOCKS + 1];
    for (;;) {
        pthread_mutex_lock(&h->mu);
        if (h->stop) {
            pthread_mutex_unlock(&h->mu);
            break;
        }
        h->kicked = 0;
        if (atomic_load(&c->error) != BT_OK) {
            /* failed: no request is touched again (the caller may free their buffers once
             * test() said so, comm_quiesce); sleep until destroyed */
            atomic_store_explicit(&h->parked, 1, memory_order_release);
            while (!h->stop) {
                h->waiting = 1;
                pthread_cond_wait(&h->cv, &h->mu);
                h->waiting = 0;
            }
            pthread_mutex_unlock(&h->mu);
            break;
        }
        pthread_mutex_unlock(&h->mu);

        int progressed = 0, npfd = 0;
        for (int s = h->index; s < c->nsocks; s += c->nhelpers) {
            short ev = 0;
            int rc = sock_advance(c, s, &ev);
            if (rc > 0)
                progressed = 1;
            if (rc >= 0 && ev)
                pfd[npfd++] = (struct pollfd){.fd = c->socks[s].fd, .events = ev};
        }
        if (progressed)
            continue;
        pthread_mutex_lock(&h->mu);
        if (npfd == 0) { /* nothing to do (or the comm failed): sleep until kicked */
            while (!h->kicked && !h->stop) {
                h->waiting = 1;
                pthread_cond_wait(&h->cv, &h->mu);
                h->waiting = 0;
            }
            pthread_mutex_unlock(&h->mu);
            continue;
        }
        if (h->kicked) {
            pthread_mutex_unlock(&h->mu);
            continue;
        }
        h->polling = 1;
        pthread_mutex_unlock(&h->mu);
        pfd[npfd++] = (struct pollfd){.fd = h->efd, .events = POLLIN};
        poll(pfd, (nfds_t)npfd, BT_SOCKET_POLL_SLICE_MS);
        pthread_mutex_lock(&h->mu);
        h->polling = 0;
        pthread_mutex_unlock(&h->mu);
        uint64_t v;
        if (read(h->efd, &v, sizeof(v)) < 0) { /* EAGAIN: nobody wrote */
        }
    }
    return NULL;
}

static void helpers_stop(struct bt_net_socket_comm *c)
{
    for (int i = 0; i < c->nhelpers; i++) {
        struct sock_helper *h = &c->helpers[i];
        if (!h->started)
            continue;
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_mutex_unlock(&h->mu);
        helper_kick(h);
        pthread_join(h->thread, NULL);
        h->started = 0;
    }
}

void bt_net_socket_comm_destroy(struct bt_net_socket_comm *c)
{
    if (c == NULL)
        return;
    helpers_stop(c);
    for (int i = 0; i < c->nhelpers; i++) {
        bt_socket_close(&c->helpers[i].efd);
        pthread_mutex_destroy(&c->helpers[i].mu);
        pthread_cond_destroy(&c->helpers[i].cv);
    }
    for (int s = 0; s < c->nsocks; s++)
        bt_socket_close(&c->socks[s].fd);
    free(c);
}

bt_status_t bt_net_socket_comm_create(int is_send, const int *fds, int nsocks,
                                      const struct bt_net_socket_config *cfg,
                                      struct bt_net_socket_comm **comm_p)
{
    struct bt_net_socket_comm *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        BT_WARN("NET/Socket: out of memory for a comm of %d sockets", nsocks);
        for (int s = 0; s < nsocks; s++)
            close(fds[s]);
        return BT_ERR_SYSTEM;
    }
    c->is_send = is_send;
    c->nsocks = nsocks;
    c->cfg = *cfg;
    for (int s = 0; s < nsocks; s++)
        c->socks[s].fd = fds[s];
    c->nhelpers = cfg->nthreads < nsocks ? cfg->nthreads : nsocks;
    union bt_sockaddr peer;
    socklen_t plen = sizeof(peer);
    memset(&peer, 0, sizeof(peer));
    if (getpeername(fds[0], &peer.sa, &plen) == 0)
        bt_socket_addr_to_str(&peer, c->peer, sizeof(c->peer));
    else
        snprintf(c->peer, sizeof(c->peer), "<unknown peer: %s>", strerror(errno));

    for (int i = 0; i < c->nhelpers; i++) {
        struct sock_helper *h = &c->helpers[i];
        h->comm = c;
        h->index = i;
        h->efd = -1;
        pthread_mutex_init(&h->mu, NULL);
        pthread_cond_init(&h->cv, NULL);
    }
    bt_status_t st = BT_OK;
    for (int i = 0; i < c->nhelpers; i++) {
        struct sock_helper *h = &c->helpers[i];
        h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (h->efd < 0) {
            BT_WARN("NET/Socket: eventfd for helper %d of the comm with %s failed: %s", i, c->peer,
                    strerror(errno));
            st = BT_ERR_SYSTEM;
            break;
        }
        int err = pthread_create(&h->thread, NULL, helper_main, h);
        if (err != 0) {
            BT_WARN("NET/Socket: starting helper %d of the comm with %s failed: %s", i, c->peer,
                    strerror(err));
            st = BT_ERR_SYSTEM;
            break;
        }
        h->started = 1;
    }
    if (st != BT_OK) {
        bt_net_socket_comm_destroy(c);
        return st;
    }
    BT_INFO(BT_LOG_NET, "NET/Socket: %s comm with %s: %d sockets, %d helper threads",
            is_send ? "send" : "recv", c->peer, nsocks, c->nhelpers);
    *comm_p = c;
    return BT_OK;
}

/*
 * The comm failed: return its error once no helper can touch a request any more, so that the
 * caller, told of the failure, may free the buffers of every request in flight. A helper
 * parks at the top of its loop (its I/O never blocks: within a poll slice). caller: the
 * comm's user thread.
 */
static bt_status_t comm_quiesce(struct bt_net_socket_comm *c, int err)
{
    if (c->quiet)
        return (bt_status_t)err;
    for (int i = 0; i < c->nhelpers; i++) {
        struct sock_helper *h = &c->helpers[i];
        if (!h->started)
            continue;
        helper_kick(h);
        while (!atomic_load_explicit(&h->parked, memory_order_acquire))
            usleep(100);
    }
    c->quiet = 1;
    return (bt_status_t)err;
}

/* caller: the comm's user thread (one at a time). */
bt_status_t bt_net_socket_comm_post(struct bt_net_socket_comm *c, void *data, size_t size,
                                    void **request_p)
{
    *request_p = NULL;
    int err = atomic_load(&c->error);
    if (err != BT_OK)
        return comm_quiesce(c, err);
    struct sock_req *r = &c->reqs[c->nposted % BT_NET_SOCKET_MAX_REQS];
    if (r->in_use)
        return BT_OK; /* too many in flight: try again */
    r->comm = c;
    r->data = data;
    r->cap = size;
    r->size = c->is_send ? size : 0;
    r->seq = c->nposted++;
    r->done_ns = 0;
    r->in_use = 1;
    uint64_t be = htobe64((uint64_t)size);
    memcpy(r->hdr, &be, sizeof(be));
    if (c->is_send) {
        int others = count_other_pieces(c, size);
        atomic_store_explicit(&r->pieces_left, 1 + others, memory_order_relaxed);
        size_t lo, hi;
        piece_of(size, c->nsocks, 0, &lo, &hi);
        sock_push(c, 0, r, lo, hi);
        push_other_pieces(c, r);
    } else {
        atomic_store_explicit(&r->pieces_left, 1, memory_order_relaxed);
        sock_push(c, 0, r, 0, 0); /* socket 0 sets its piece once it read the size */
    }
    *request_p = r;
    return BT_OK;
}

static int req_moved(const struct sock_req *r)
{
    return atomic_load_explicit(&r->pieces_left, memory_order_acquire) == 0;
}

/* caller: the comm's user thread (one at a time). */
bt_status_t bt_net_socket_req_test(void *request, int *done_p, size_t *size_p)
{
    struct sock_req *r = request;
    struct bt_net_socket_comm *c = r->comm;
    *done_p = 0;
    if (c->nhelpers == 0 && !req_moved(r)) {
        for (int s = 0; s < c->nsocks; s++) {
            short ev;
            sock_advance(c, s, &ev);
        }
    }
    int err = atomic_load(&c->error);
    if (err != BT_OK)
        return comm_quiesce(c, err);
    if (!req_moved(r))
        return BT_OK;
    /* messages complete in order: every older request in flight must be moved too */
    for (int i = 0; i < BT_NET_SOCKET_MAX_REQS; i++) {
        const struct sock_req *o = &c->reqs[i];
        if (o->in_use && o->seq < r->seq && !req_moved(o))
            return BT_OK;
    }
    if (c->cfg.delay_us > 0 && r->size >= (size_t)c->cfg.delay_min_bytes) {
        uint64_t now = bt_time_ns();
        if (r->done_ns == 0)
            r->done_ns = now;
        if (now - r->done_ns < (uint64_t)c->cfg.delay_us * 1000)
            return BT_OK;
    }
    if (size_p)
        *size_p = r->size;
    r->in_use = 0;
    *done_p = 1;
    return BT_OK;
}

/* caller: the comm's user thread (one at a time); only then are the tasks its own. */
int bt_net_socket_comm_pollfds(void *comm, struct pollfd *fds, int max)
{
    struct bt_net_socket_comm *c = comm;
    if (c->nhelpers > 0 || atomic_load(&c->error) != BT_OK)
        return 0;
    int n = 0;
    for (int s = 0; s < c->nsocks && n < max; s++) {
        struct sock *sk = &c->socks[s];
        if (atomic_load_explicit(&sk->tail, memory_order_relaxed) ==
            atomic_load_explicit(&sk->head, memory_order_acquire))
            continue;
        fds[n++] = (struct pollfd){.fd = sk->fd, .events = c->is_send ? POLLOUT : POLLIN};
    }
    return n;
}

int bt_net_socket_comm_helper_tids(struct bt_net_socket_comm *c, int *tids, int max)
{
    int n = 0;
    for (int i = 0; i < c->nhelpers && n < max; i++) {
        int tid = 0;
        for (int k = 0; k < 1000 && (tid = atomic_load(&c->helpers[i].tid)) == 0; k++)
            usleep(1000);
        tids[n++] = tid;
    }
    return n;
}
