#define _GNU_SOURCE /* accept4 */
/*
 * Bootstrap, rank side: unique ids, init (register with the root, get the address table,
 * connect the ring), ring allgather/barrier, and point-to-point messages. The root thread
 * is in root.c; the wire formats are in wire.h.
 */
#include "bootstrap/bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "util/hash.h"
#include "util/param.h"
#include "util/random.h"
#include "util/time.h"

/* A message that arrived before the recv that wants it. FIFO per (peer, tag). */
struct bt_bs_msg {
    struct bt_bs_msg *next;
    int peer;
    int tag;
    size_t size;
    void *data;
};

/* An accepted connection whose header has not all arrived: strangers that stall stay here
 * (until BT_BS_HELLO_TIMEOUT_S) without holding up the connections behind them. */
#define BS_MAX_PENDING 16
struct bs_pending {
    int fd;
    uint64_t drop_at;
    union bt_sockaddr from;
    size_t got;
    unsigned char hdr[sizeof(struct bt_bs_peer_hdr)];
};

struct bt_bootstrap {
    uint64_t magic;
    int rank;
    int nranks;
    volatile int *abort_flag; /* the caller's (may be NULL) */
    volatile int aborted;     /* bt_bootstrap_abort */
    /* bt_bootstrap_set_peer_check's: asked while a send or recv waits on one rank */
    int (*peer_down)(void *arg, int peer);
    void *peer_arg;
    int listen_fd;
    int ring_send_fd;         /* to rank+1 */
    int ring_recv_fd;         /* from rank-1 */
    union bt_sockaddr *peers; /* listen address of every rank */
    /* `lock` guards what follows: the queue, the pending set and accepting on listen_fd, which
     * a second thread may move along too (the GPU watcher answering other ranks' questions,
     * core/arrival.c). Held for one slice of a wait at most (BS_SLICE_NS), never across a
     * whole blocking call; the ring links and sends need none (one thread uses the ring, a
     * send opens its own connection). */
    pthread_mutex_t lock;
    struct bt_bs_msg *unexp_head, *unexp_tail;
    struct bs_pending pending[BS_MAX_PENDING];
    int npending;
};

#define BS_SLICE_NS 10000000ull /* 10 ms */

static struct bt_socket_wait bs_wait(struct bt_bootstrap *bs, uint64_t deadline)
{
    struct bt_socket_wait w = {.deadline = deadline, .abort_flags = {bs->abort_flag, &bs->aborted}};
    return w;
}

/* A wait on rank `peer` alone: it also ends when that rank is down. */
static struct bt_socket_wait bs_wait_peer(struct bt_bootstrap *bs, uint64_t deadline, int peer)
{
    struct bt_socket_wait w = bs_wait(bs, deadline);
    w.peer_down = bs->peer_down;
    w.peer_arg = bs->peer_arg;
    w.peer = peer;
    return w;
}

static int bs_peer_down(struct bt_bootstrap *bs, int peer)
{
    return bs->peer_down && bs->peer_down(bs->peer_arg, peer);
}

static int bs_aborted(struct bt_bootstrap *bs)
{
    struct bt_socket_wait w = bs_wait(bs, UINT64_MAX);
    return bt_socket_wait_aborted(&w);
}

bt_status_t bt_bootstrap_unique_id(void *id_p)
{
    /* As NCCL: with COMM_ID the id only names that address; rank 0's init starts the root. */
    if (bt_param_str_comm_id())
        return bt_bootstrap_unique_id_from_env(-1, id_p);
    return bt_bootstrap_unique_id_new(id_p);
}

bt_status_t bt_bootstrap_unique_id_new(void *id_p)
{
    union bt_sockaddr addr;
    char ifname[64];
    uint64_t magic;
    int fd = -1;
    bt_status_t st;

    BT_CHECK(bt_socket_find_interface(&addr, ifname, sizeof(ifname)));
    magic = bt_random_u64();
    BT_CHECK(bt_socket_listen(&addr, &fd, &addr));
    st = bt_bootstrap_id_pack(magic, &addr, id_p);
    if (st != BT_OK)
        goto err_close;
    st = bt_bootstrap_root_start(magic, fd); /* the root owns fd, even on failure */
    if (st != BT_OK)
        return st;
    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap root listening on %s (%s) magic 0x%llx",
            bt_socket_addr_to_str(&addr, s, sizeof(s)), ifname, (unsigned long long)magic);
    return BT_OK;

err_close:
    close(fd);
    return st;
}

/*
 * With COMM_ID no id travels between ranks, so every rank derives the same magic from the
 * string itself (FNV-1a 64). Two jobs that use the same COMM_ID at once are not told apart.
 */
static uint64_t comm_id_magic(const char *s)
{
    return bt_fnv1a_str(BT_FNV1A_INIT, s);
}

bt_status_t bt_bootstrap_unique_id_from_env(int rank, void *id_p)
{
    union bt_sockaddr addr;
    const char *env = bt_param_str_comm_id();
    if (env == NULL)
        return BT_ERR_INVALID_USAGE;
    BT_CHECK(bt_socket_addr_parse(env, &addr));
    uint64_t magic = comm_id_magic(env);
    BT_CHECK(bt_bootstrap_id_pack(magic, &addr, id_p));
    if (rank == 0) {
        int fd = -1;
        BT_CHECK(bt_socket_listen(&addr, &fd, NULL));
        BT_CHECK(bt_bootstrap_root_start(magic, fd)); /* the root owns fd */
        BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap root listening on COMM_ID %s", env);
    }
    return BT_OK;
}

void bt_bootstrap_root_wait(const void *id)
{
    uint64_t magic;
    union bt_sockaddr addr;
    if (bt_bootstrap_id_unpack(id, &magic, &addr) == BT_OK)
        bt_bootstrap_root_join(magic);
}

void bt_bootstrap_root_cancel(const void *id)
{
    uint64_t magic;
    union bt_sockaddr addr;
    if (bt_bootstrap_id_unpack(id, &magic, &addr) == BT_OK)
        bt_bootstrap_root_cancel_magic(magic);
}

static void bs_queue_push(struct bt_bootstrap *bs, struct bt_bs_msg *m)
{
    m->next = NULL;
    if (bs->unexp_tail)
        bs->unexp_tail->next = m;
    else
        bs->unexp_head = m;
    bs->unexp_tail = m;
}

/* Remove and return the oldest queued message of (peer, tag) (peer -1: any), or NULL. */
static struct bt_bs_msg *bs_queue_take(struct bt_bootstrap *bs, int peer, int tag)
{
    struct bt_bs_msg *prev = NULL;
    for (struct bt_bs_msg *m = bs->unexp_head; m; prev = m, m = m->next) {
        if ((peer >= 0 && m->peer != peer) || m->tag != tag)
            continue;
        if (prev)
            prev->next = m->next;
        else
            bs->unexp_head = m->next;
        if (bs->unexp_tail == m)
            bs->unexp_tail = prev;
        return m;
    }
    return NULL;
}

/*
 * A connection's whole header has arrived: a P2P message is read (a real rank sends its
 * payload right behind the header) and queued; the RING link from rank-1 goes to
 * bs->ring_recv_fd (when want_ring); anything else is dropped. Only an abort or a broken
 * P2P payload from a valid sender is an error. Takes `fd`.
 */
static bt_status_t bs_handle(struct bt_bootstrap *bs, int fd, const struct bt_bs_peer_hdr *hp,
                             const union bt_sockaddr *from, uint64_t deadline, int want_ring)
{
    struct bt_socket_wait w = bs_wait(bs, deadline);
    char s[BT_SOCKADDR_STRLEN];
    struct bt_bs_peer_hdr h = *hp;
    struct bt_bs_msg *m = NULL;
    bt_status_t st;

    bt_socket_addr_to_str(from, s, sizeof(s));
    if (h.magic != bs->magic || h.rank < 0 || h.rank >= bs->nranks) {
        BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP,
                "Bootstrap: dropping connection from %s: magic 0x%llx rank %d", s,
                (unsigned long long)h.magic, (int)h.rank);
        goto drop;
    }
    if (h.kind == BT_BS_KIND_RING) {
        int prev = (bs->rank - 1 + bs->nranks) % bs->nranks;
        if (!want_ring || h.rank != prev || bs->ring_recv_fd >= 0) {
            BT_WARN("Bootstrap: rank %d dropping an unexpected ring link from rank %d (%s)",
                    bs->rank, (int)h.rank, s);
            goto drop;
        }
        bs->ring_recv_fd = fd;
        return BT_OK;
    }
    if (h.kind != BT_BS_KIND_P2P || h.size > BT_BS_MAX_MSG_BYTES) {
        BT_WARN("Bootstrap: rank %d dropping a message from rank %d (%s): kind 0x%x size %llu",
                bs->rank, (int)h.rank, s, (unsigned)h.kind, (unsigned long long)h.size);
        goto drop;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL || (h.size > 0 && (m->data = malloc(h.size)) == NULL)) {
        BT_WARN("Bootstrap: rank %d out of memory for a %llu-byte message from rank %d", bs->rank,
                (unsigned long long)h.size, (int)h.rank);
        st = BT_ERR_SYSTEM;
        goto err_free;
    }
    m->peer = h.rank;
    m->tag = h.tag;
    m->size = h.size;
    st = bt_socket_recv_all(fd, m->data, m->size, &w);
    if (st != BT_OK) {
        BT_WARN("Bootstrap: rank %d lost a %zu-byte message (tag %d) from rank %d (%s)", bs->rank,
                m->size, m->tag, m->peer, s);
        goto err_free;
    }
    bt_socket_close(&fd);
    bs_queue_push(bs, m);
    return BT_OK;

drop:
    bt_socket_close(&fd);
    return BT_OK;
err_free:
    if (m)
        free(m->data);
    free(m);
    bt_socket_close(&fd);
    return st;
}

static void bs_pending_drop(struct bt_bootstrap *bs, int i, const char *why)
{
    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap: dropping connection from %s: %s",
            bt_socket_addr_to_str(&bs->pending[i].from, s, sizeof(s)), why);
    bt_socket_close(&bs->pending[i].fd);
    bs->pending[i] = bs->pending[--bs->npending];
}

/*
 * Move the listen socket along until one connection has been dealt with (bs_handle): new
 * connections are accepted into the pending set, whose headers are read as their bytes
 * come, so a stranger that connects and stalls (or sends half a header) costs the real
 * ranks nothing; it is dropped after BT_BS_HELLO_TIMEOUT_S. `deadline` bounds the wait for a
 * connection (0: only what is ready, without waiting); a message whose header has come gets
 * until `body_by` for the rest. Returns BT_OK when one was dealt with; BT_ERR_REMOTE with
 * *expired = 1 when the deadline passed with none; otherwise (*expired = 0) an abort
 * (BT_ERR_REMOTE), a failing listen socket, or bs_handle's error.
 */
static bt_status_t bs_accept_one(struct bt_bootstrap *bs, uint64_t deadline, uint64_t body_by,
                                 int want_ring, int *expired)
{
    *expired = 0;
    for (int look = 1;;) {
        if (bs_aborted(bs))
            return BT_ERR_REMOTE;
        uint64_t now = bt_time_ns();
        if (deadline == 0 ? !look : now >= deadline) {
            *expired = 1;
            return BT_ERR_REMOTE;
        }
        look = 0; /* deadline 0: another look only after taking a connection in */
        uint64_t wake = deadline;
        for (int i = 0; i < bs->npending; i++)
            if (bs->pending[i].drop_at < wake)
                wake = bs->pending[i].drop_at;
        struct pollfd pf[1 + BS_MAX_PENDING];
        pf[0] = (struct pollfd){.fd = bs->listen_fd, .events = POLLIN};
        for (int i = 0; i < bs->npending; i++)
            pf[1 + i] = (struct pollfd){.fd = bs->pending[i].fd, .events = POLLIN};
        uint64_t ms = wake > now ? (wake - now + 999999) / 1000000 : 0;
        int rc = poll(pf, (nfds_t)(1 + bs->npending), deadline == 0 ? 0 : ms > 100 ? 100 : (int)ms);
        if (rc < 0 && errno != EINTR) {
            BT_WARN("Bootstrap: rank %d: poll failed: %s", bs->rank, strerror(errno));
            return BT_ERR_SYSTEM;
        }
        now = bt_time_ns();
        /* the pending first: they came earlier. Only a connection with nothing to read
         * expires: one whose bytes wait (a real rank's, left from an earlier call that
         * returned with another) is read however late we come back to it. */
        for (int i = bs->npending - 1; i >= 0; i--) {
            if (rc <= 0 || !pf[1 + i].revents) {
                if (now >= bs->pending[i].drop_at)
                    bs_pending_drop(bs, i, "no header in time");
                continue;
            }
            struct bs_pending *p = &bs->pending[i];
            ssize_t n = recv(p->fd, p->hdr + p->got, sizeof(p->hdr) - p->got, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                bs_pending_drop(bs, i, n == 0 ? "closed before its header" : strerror(errno));
                continue;
            }
            if (n > 0)
                p->got += (size_t)n;
            if (p->got < sizeof(p->hdr))
                continue;
            struct bt_bs_peer_hdr h;
            memcpy(&h, p->hdr, sizeof(h));
            int fd = p->fd;
            union bt_sockaddr from = p->from;
            bs->pending[i] = bs->pending[--bs->npending];
            return bs_handle(bs, fd, &h, &from, body_by, want_ring);
        }
        if (rc <= 0 || !(pf[0].revents & POLLIN))
            continue;
        union bt_sockaddr from;
        socklen_t flen = sizeof(from);
        memset(&from, 0, sizeof(from));
        int fd = accept4(bs->listen_fd, &from.sa, &flen, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
                continue; /* gone (reset) before we took it */
            BT_WARN("Bootstrap: rank %d: accept failed: %s", bs->rank, strerror(errno));
            return BT_ERR_SYSTEM; /* EMFILE and the like: a retry would spin */
        }
        if (bs->npending == BS_MAX_PENDING) { /* full of stalled strangers: the oldest goes */
            int old = 0;
            for (int i = 1; i < bs->npending; i++)
                if (bs->pending[i].drop_at < bs->pending[old].drop_at)
                    old = i;
            bs_pending_drop(bs, old, "too many connections without a header");
        }
        bs->pending[bs->npending++] = (struct bs_pending){
            .fd = fd, .drop_at = now + BT_BS_HELLO_TIMEOUT_S * 1000000000ull, .from = from};
        look = 1;
    }
}

/* Register with the root and receive the address table into bs->peers. */
static bt_status_t bs_rendezvous(struct bt_bootstrap *bs, const union bt_sockaddr *root,
                                 const union bt_sockaddr *me)
{
    struct bt_socket_wait w = bs_wait(bs, bt_deadline_from_now());
    struct bt_bs_root_hello h;
    char s[BT_SOCKADDR_STRLEN];
    uint64_t magic = 0;
    int fd = -1;
    bt_status_t st;

    bt_socket_addr_to_str(root, s, sizeof(s));
    memset(&h, 0, sizeof(h));
    h.magic = bs->magic;
    h.kind = BT_BS_KIND_ROOT;
    h.rank = bs->rank;
    h.nranks = bs->nranks;
    h.addr = *me;
    st = bt_socket_connect(root, &w, &fd);
    if (st != BT_OK) {
        BT_WARN("Bootstrap: rank %d could not reach the root at %s", bs->rank, s);
        return st;
    }
    BT_CHECK_GOTO(bt_socket_send_all(fd, &h, sizeof(h), &w), st, err_close);
    st = bt_socket_recv_all(fd, &magic, sizeof(magic), &w);
    if (st == BT_OK)
        st = bt_socket_recv_all(fd, bs->peers, sizeof(union bt_sockaddr) * (size_t)bs->nranks, &w);
    if (st != BT_OK) {
        BT_WARN("Bootstrap: rank %d got no address table from the root at %s (waiting for all "
                "%d ranks to arrive)",
                bs->rank, s, bs->nranks);
        goto err_close;
    }
    if (magic != bs->magic) {
        BT_WARN("Bootstrap: rank %d: the root at %s answered with magic 0x%llx, not 0x%llx",
                bs->rank, s, (unsigned long long)magic, (unsigned long long)bs->magic);
        st = BT_ERR_REMOTE;
        goto err_close;
    }
    for (int r = 0; r < bs->nranks; r++) {
        if (!bt_socket_addr_valid(&bs->peers[r])) {
            BT_WARN("Bootstrap: rank %d: the root sent an invalid address for rank %d", bs->rank,
                    r);
            st = BT_ERR_REMOTE;
            goto err_close;
        }
    }
    bt_socket_close(&fd);
    return BT_OK;

err_close:
    bt_socket_close(&fd);
    return st;
}

/* Connect to rank+1 and accept from rank-1 (queueing any early P2P messages). */
static bt_status_t bs_ring_connect(struct bt_bootstrap *bs)
{
    uint64_t deadline = bt_deadline_from_now();
    struct bt_socket_wait w = bs_wait(bs, deadline);
    int next = (bs->rank + 1) % bs->nranks, prev = (bs->rank - 1 + bs->nranks) % bs->nranks;
    struct bt_bs_peer_hdr h;
    char s[BT_SOCKADDR_STRLEN];

    bt_socket_addr_to_str(&bs->peers[next], s, sizeof(s));
    if (bt_socket_connect(&bs->peers[next], &w, &bs->ring_send_fd) != BT_OK) {
        BT_WARN("Bootstrap: rank %d could not connect the ring to rank %d at %s", bs->rank, next,
                s);
        return BT_ERR_REMOTE;
    }
    memset(&h, 0, sizeof(h));
    h.magic = bs->magic;
    h.kind = BT_BS_KIND_RING;
    h.rank = bs->rank;
    if (bt_socket_send_all(bs->ring_send_fd, &h, sizeof(h), &w) != BT_OK) {
        BT_WARN("Bootstrap: rank %d could not send the ring header to rank %d at %s", bs->rank,
                next, s);
        return BT_ERR_REMOTE;
    }
    while (bs->ring_recv_fd < 0) {
        int expired;
        if (bs_accept_one(bs, deadline, deadline, 1, &expired) != BT_OK) {
            BT_WARN("Bootstrap: rank %d: no ring link from rank %d at %s", bs->rank, prev,
                    bt_socket_addr_to_str(&bs->peers[prev], s, sizeof(s)));
            return BT_ERR_REMOTE;
        }
    }
    return BT_OK;
}

bt_status_t bt_bootstrap_init(const void *id, int rank, int nranks, volatile int *abort_flag,
                              struct bt_bootstrap **bs_p)
{
    struct bt_bootstrap *bs = NULL;
    union bt_sockaddr root, me;
    char ifname[64];
    uint64_t magic;
    bt_status_t st;

    if (nranks <= 0 || nranks > BT_BS_MAX_NRANKS || rank < 0 || rank >= nranks) {
        BT_WARN("Bootstrap: invalid rank %d / nranks %d", rank, nranks);
        return BT_ERR_INVALID_ARG;
    }
    BT_CHECK(bt_bootstrap_id_unpack(id, &magic, &root));
    bs = calloc(1, sizeof(*bs));
    if (bs == NULL) {
        BT_WARN("Bootstrap: out of memory");
        return BT_ERR_SYSTEM;
    }
    pthread_mutex_init(&bs->lock, NULL);
    bs->magic = magic;
    bs->rank = rank;
    bs->nranks = nranks;
    bs->abort_flag = abort_flag;
    bs->listen_fd = bs->ring_send_fd = bs->ring_recv_fd = -1;
    bs->peers = calloc((size_t)nranks, sizeof(union bt_sockaddr));
    if (bs->peers == NULL) {
        BT_WARN("Bootstrap: out of memory for %d addresses", nranks);
        st = BT_ERR_SYSTEM;
        goto err_destroy;
    }
    BT_CHECK_GOTO(bt_socket_find_interface(&me, ifname, sizeof(ifname)), st, err_destroy);
    BT_CHECK_GOTO(bt_socket_listen(&me, &bs->listen_fd, &me), st, err_destroy);
    BT_CHECK_GOTO(bs_rendezvous(bs, &root, &me), st, err_destroy);
    /* The root (if it is ours) is done once every rank has its table: reap its thread. */
    bt_bootstrap_root_join(magic);
    if (nranks > 1)
        BT_CHECK_GOTO(bs_ring_connect(bs), st, err_destroy);

    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap: rank %d/%d listening on %s (%s)", rank,
            nranks, bt_socket_addr_to_str(&me, s, sizeof(s)), ifname);
    *bs_p = bs;
    return BT_OK;

err_destroy:
    bt_bootstrap_destroy(bs); /* accepts a half-built bootstrap */
    return st;
}

/*
 * Ring AllGather, n ranks, slot k = rank k's contribution.
 *   step s (0..n-2): send slot (rank-s) to rank+1 while receiving slot (rank-s-1) from rank-1
 * Both directions progress together, so full socket buffers cannot deadlock the ring.
 */
bt_status_t bt_bootstrap_allgather(struct bt_bootstrap *bs, void *buf, size_t bytes)
{
    int n = bs->nranks;
    struct bt_socket_wait w = bs_wait(bs, bt_deadline_from_now());
    char *b = buf;
    for (int step = 0; step < n - 1; step++) {
        int sslot = (bs->rank - step + n) % n;
        int rslot = (bs->rank - step - 1 + n) % n;
        bt_status_t st = bt_socket_exchange(bs->ring_send_fd, b + (size_t)sslot * bytes, bytes,
                                            bs->ring_recv_fd, b + (size_t)rslot * bytes, bytes, &w);
        if (st != BT_OK) {
            if (bs_aborted(bs))
                BT_INFO(BT_LOG_BOOTSTRAP, "Bootstrap: rank %d allgather aborted", bs->rank);
            else
                BT_WARN("Bootstrap: rank %d allgather step %d/%d failed (send to rank %d, "
                        "receive from rank %d)",
                        bs->rank, step, n - 1, (bs->rank + 1) % n, (bs->rank - 1 + n) % n);
            return BT_ERR_REMOTE;
        }
    }
    return BT_OK;
}

bt_status_t bt_bootstrap_barrier(struct bt_bootstrap *bs)
{
    char *tmp = calloc((size_t)bs->nranks, 1);
    if (tmp == NULL) {
        BT_WARN("Bootstrap: out of memory for a %d-rank barrier", bs->nranks);
        return BT_ERR_SYSTEM;
    }
    bt_status_t st = bt_bootstrap_allgather(bs, tmp, 1);
    free(tmp);
    return st;
}

static bt_status_t bs_send(struct bt_bootstrap *bs, int peer, int tag, const void *data,
                           size_t size, uint64_t deadline, int quiet);

bt_status_t bt_bootstrap_send(struct bt_bootstrap *bs, int peer, int tag, const void *data,
                              size_t size)
{
    return bs_send(bs, peer, tag, data, size, bt_deadline_from_now(), 0);
}

bt_status_t bt_bootstrap_send_until(struct bt_bootstrap *bs, int peer, int tag, const void *data,
                                    size_t size, uint64_t deadline)
{
    return bs_send(bs, peer, tag, data, size, deadline, 1);
}

/* quiet: a failure is the caller's to report (INFO here), for the failure paths' messages to
 * ranks that may be gone */
static bt_status_t bs_send(struct bt_bootstrap *bs, int peer, int tag, const void *data,
                           size_t size, uint64_t deadline, int quiet)
{
    if (peer < 0 || peer >= bs->nranks) {
        BT_WARN("Bootstrap: send to invalid peer %d (nranks %d)", peer, bs->nranks);
        return BT_ERR_INVALID_ARG;
    }
    if (peer == bs->rank) {
        /* To ourselves: straight into the queue, as if it had come over a socket. */
        struct bt_bs_msg *m = calloc(1, sizeof(*m));
        if (m == NULL || (size > 0 && (m->data = malloc(size)) == NULL)) {
            BT_WARN("Bootstrap: rank %d out of memory for a %zu-byte message to itself", bs->rank,
                    size);
            free(m);
            return BT_ERR_SYSTEM;
        }
        m->peer = peer;
        m->tag = tag;
        m->size = size;
        if (size > 0)
            memcpy(m->data, data, size);
        pthread_mutex_lock(&bs->lock);
        bs_queue_push(bs, m);
        pthread_mutex_unlock(&bs->lock);
        return BT_OK;
    }

    struct bt_socket_wait w = bs_wait_peer(bs, deadline, peer);
    w.quiet = quiet;
    struct bt_bs_peer_hdr h;
    char s[BT_SOCKADDR_STRLEN];
    int fd = -1;
    bt_status_t st;

    bt_socket_addr_to_str(&bs->peers[peer], s, sizeof(s));
    memset(&h, 0, sizeof(h));
    h.magic = bs->magic;
    h.kind = BT_BS_KIND_P2P;
    h.rank = bs->rank;
    h.tag = tag;
    h.size = size;
    st = bt_socket_connect(&bs->peers[peer], &w, &fd);
    if (st == BT_OK) {
        st = bt_socket_send_all(fd, &h, sizeof(h), &w);
        if (st == BT_OK)
            st = bt_socket_send_all(fd, data, size, &w);
        bt_socket_close(&fd);
    }
    if (st != BT_OK) {
        if (bs_aborted(bs))
            return BT_ERR_REMOTE;
        BT_WAIT_LOG(&w, BT_LOG_BOOTSTRAP,
                    "Bootstrap: rank %d could not send %zu bytes (tag %d) to rank %d at %s%s",
                    bs->rank, size, tag, peer, s,
                    bs_peer_down(bs, peer) ? ": the rank is gone or failed" : "");
        return st == BT_ERR_SYSTEM ? st : BT_ERR_REMOTE;
    }
    return BT_OK;
}

/* The peer is down: take in every connection that is ready (what it sent before is all
 * there), then its message of `tag`, or NULL. */
static struct bt_bs_msg *bs_take_last(struct bt_bootstrap *bs, int peer, int tag)
{
    struct bt_bs_msg *m;
    int expired;
    pthread_mutex_lock(&bs->lock);
    uint64_t body_by = bt_time_ns() + BS_SLICE_NS;
    while ((m = bs_queue_take(bs, peer, tag)) == NULL &&
           bs_accept_one(bs, 0, body_by, 0, &expired) == BT_OK)
        ;
    pthread_mutex_unlock(&bs->lock);
    return m;
}

static bt_status_t bs_recv(struct bt_bootstrap *bs, int peer, int tag, void *data, size_t size,
                           uint64_t deadline, int quiet)
{
    if (peer < 0 || peer >= bs->nranks) {
        BT_WARN("Bootstrap: recv from invalid peer %d (nranks %d)", peer, bs->nranks);
        return BT_ERR_INVALID_ARG;
    }
    struct bt_bs_msg *m;
    uint64_t check_at = bt_time_ns() + BS_SLICE_NS; /* the peer check's next look */
    for (;;) {
        /* in slices, so that another thread's look (bt_bootstrap_poll) waits one at most */
        int expired = 0;
        pthread_mutex_lock(&bs->lock);
        m = bs_queue_take(bs, peer, tag);
        uint64_t slice = bt_time_ns() + BS_SLICE_NS;
        bt_status_t st =
            m ? BT_OK
              : bs_accept_one(bs, slice < deadline ? slice : deadline, deadline, 0, &expired);
        pthread_mutex_unlock(&bs->lock);
        if (m)
            break;
        if (!quiet && bt_time_ns() >= check_at) {
            check_at = bt_time_ns() + BS_SLICE_NS;
            if (bs_peer_down(bs, peer)) {
                m = bs_take_last(bs, peer, tag);
                if (m)
                    break;
                BT_WARN("Bootstrap: rank %d stopped waiting for a message (tag %d) from rank %d: "
                        "the rank is gone or failed",
                        bs->rank, tag, peer);
                return BT_ERR_REMOTE;
            }
        }
        if (expired && bt_time_ns() < deadline) {
            sched_yield(); /* a waiting poller gets the lock (mutexes are not fair) */
            continue;
        }
        if (st != BT_OK) {
            if (quiet && st == BT_ERR_REMOTE)
                return st;
            if (bs_aborted(bs))
                BT_INFO(BT_LOG_BOOTSTRAP, "Bootstrap: rank %d recv from rank %d aborted", bs->rank,
                        peer);
            else
                BT_WARN("Bootstrap: rank %d gave up waiting for a message (tag %d) from rank "
                        "%d",
                        bs->rank, tag, peer);
            return st == BT_ERR_SYSTEM ? st : BT_ERR_REMOTE;
        }
    }
    bt_status_t st = BT_OK;
    if (m->size != size) {
        BT_WARN("Bootstrap: rank %d expected %zu bytes from rank %d (tag %d) and got %zu", bs->rank,
                size, peer, tag, m->size);
        st = BT_ERR_INTERNAL;
    } else if (size > 0) {
        memcpy(data, m->data, size);
    }
    free(m->data);
    free(m);
    return st;
}

bt_status_t bt_bootstrap_recv(struct bt_bootstrap *bs, int peer, int tag, void *data, size_t size)
{
    return bs_recv(bs, peer, tag, data, size, bt_deadline_from_now(), 0);
}

bt_status_t bt_bootstrap_recv_until(struct bt_bootstrap *bs, int peer, int tag, void *data,
                                    size_t size, uint64_t deadline)
{
    return bs_recv(bs, peer, tag, data, size, deadline, 1);
}

int bt_bootstrap_poll(struct bt_bootstrap *bs, int tag, void *data, size_t size)
{
    struct bt_bs_msg *m;
    pthread_mutex_lock(&bs->lock);
    /* a bounded number of looks: a flood of connections must not keep the caller here */
    /* a message whose header is here gets a moment for the rest: a real rank sends it right
     * behind the header */
    uint64_t body_by = bt_time_ns() + 100000000ull;
    int expired;
    for (int i = 0; (m = bs_queue_take(bs, -1, tag)) == NULL && i < BS_MAX_PENDING; i++)
        if (bs_accept_one(bs, 0, body_by, 0, &expired) != BT_OK)
            break;
    pthread_mutex_unlock(&bs->lock);
    if (!m)
        return -1;
    int peer = m->peer;
    if (m->size != size) {
        BT_INFO(BT_LOG_BOOTSTRAP,
                "Bootstrap: rank %d dropping a %zu-byte message (tag %d) from rank "
                "%d: %zu bytes expected",
                bs->rank, m->size, tag, peer, size);
        peer = -1;
    } else if (size > 0) {
        memcpy(data, m->data, size);
    }
    free(m->data);
    free(m);
    return peer;
}

void bt_bootstrap_set_peer_check(struct bt_bootstrap *bs, int (*down)(void *arg, int peer),
                                 void *arg)
{
    bs->peer_down = down;
    bs->peer_arg = arg;
}

void bt_bootstrap_abort(struct bt_bootstrap *bs)
{
    if (bs)
        __atomic_store_n(&bs->aborted, 1, __ATOMIC_RELEASE);
}

int bt_bootstrap_peer_refuses(const struct bt_bootstrap *bs, int peer, int timeout_ms)
{
    return peer >= 0 && peer < bs->nranks && peer != bs->rank &&
           bt_socket_refused(&bs->peers[peer], timeout_ms);
}

const union bt_sockaddr *bt_bootstrap_peer_addr(const struct bt_bootstrap *bs, int rank)
{
    return rank >= 0 && rank < bs->nranks ? &bs->peers[rank] : NULL;
}

void bt_bootstrap_destroy(struct bt_bootstrap *bs)
{
    if (bs == NULL)
        return;
    bt_socket_close(&bs->ring_send_fd);
    bt_socket_close(&bs->ring_recv_fd);
    bt_socket_close(&bs->listen_fd);
    while (bs->npending > 0)
        bt_socket_close(&bs->pending[--bs->npending].fd);
    int left = 0;
    while (bs->unexp_head) {
        struct bt_bs_msg *m = bs->unexp_head;
        bs->unexp_head = m->next;
        left++;
        free(m->data);
        free(m);
    }
    if (left)
        BT_INFO(BT_LOG_BOOTSTRAP, "Bootstrap: rank %d destroyed with %d unreceived messages",
                bs->rank, left);
    free(bs->peers);
    pthread_mutex_destroy(&bs->lock);
    free(bs);
}
