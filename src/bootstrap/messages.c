/*
 * Bootstrap messages, rank side: the rank's listener, the queue of unexpected messages and
 * the point-to-point calls. A connection accepted on the listener waits in a pending set
 * until its whole header has come (read as the bytes come, so a stranger that stalls holds
 * up nobody); a P2P message is then queued, matched later by (peer, tag). Sends, recvs and
 * bt_bootstrap_poll (a second thread's look) share the queue under bs->lock, taken one
 * slice at a time. The rendezvous that fills the address table is in rendezvous.c.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap_impl.h"
#include "util/time.h"

/* A wait on rank `peer` alone: it also ends when that rank is down, or refuses (every rank
 * listened before the rendezvous gave out its address, and listens until it is destroyed). */
static struct bt_socket_wait bs_wait_peer(struct bt_bootstrap *bs, uint64_t deadline, int peer)
{
    struct bt_socket_wait w = bt_bootstrap_wait(bs, deadline);
    w.peer_down = bs->peer_down;
    w.peer_arg = bs->peer_arg;
    w.peer = peer;
    w.listened = 1;
    return w;
}

static int bs_peer_down(struct bt_bootstrap *bs, int peer)
{
    return bs->peer_down && bs->peer_down(bs->peer_arg, peer);
}

static int bs_peer_lost(struct bt_bootstrap *bs, int peer, uint64_t waited_ns)
{
    return bs->peer_lost && bs->peer_lost(bs->peer_arg, peer, waited_ns);
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
    struct bt_socket_wait w = bt_bootstrap_wait(bs, deadline);
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

/* What it does, and who calls it: bootstrap_impl.h. */
bt_status_t bt_bootstrap_accept_one(struct bt_bootstrap *bs, uint64_t deadline, uint64_t body_by,
                                    int want_ring, int *expired)
{
    *expired = 0;
    for (int look = 1;;) {
        if (bt_bootstrap_aborted(bs))
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

int bt_bootstrap_queue_clear(struct bt_bootstrap *bs)
{
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
    return left;
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
        if (bt_bootstrap_aborted(bs))
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
           bt_bootstrap_accept_one(bs, 0, body_by, 0, &expired) == BT_OK)
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
    const uint64_t started = bt_time_ns();
    uint64_t check_at = started + BS_SLICE_NS; /* the peer check's next look */
    for (;;) {
        /* in slices, so that another thread's look (bt_bootstrap_poll) waits one at most */
        int expired = 0;
        pthread_mutex_lock(&bs->lock);
        m = bs_queue_take(bs, peer, tag);
        uint64_t slice = bt_time_ns() + BS_SLICE_NS;
        bt_status_t st = m ? BT_OK
                           : bt_bootstrap_accept_one(bs, slice < deadline ? slice : deadline,
                                                     deadline, 0, &expired);
        pthread_mutex_unlock(&bs->lock);
        if (m)
            break;
        if (!quiet && bt_time_ns() >= check_at) {
            uint64_t now = bt_time_ns();
            check_at = now + BS_SLICE_NS;
            if (bs_peer_down(bs, peer) || bs_peer_lost(bs, peer, now - started)) {
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
            if (bt_bootstrap_aborted(bs))
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
        if (bt_bootstrap_accept_one(bs, 0, body_by, 0, &expired) != BT_OK)
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
                                 int (*lost)(void *arg, int peer, uint64_t waited_ns), void *arg)
{
    bs->peer_down = down;
    bs->peer_lost = lost;
    bs->peer_arg = arg;
}

int bt_bootstrap_queued(struct bt_bootstrap *bs, int peer, int tag)
{
    int found = 0;
    pthread_mutex_lock(&bs->lock);
    for (struct bt_bs_msg *m = bs->unexp_head; m && !found; m = m->next)
        found = m->peer == peer && m->tag == tag;
    pthread_mutex_unlock(&bs->lock);
    return found;
}
