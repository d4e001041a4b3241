/* The one-sided link over the network (rma_net.h). */
#define _GNU_SOURCE /* pipe2, pthread_setname_np */
#include "transport/rma_net.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "device/device.h"
#include "net/net.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define TAG_RMA_HANDLE 0x40000 /* bootstrap tag of the listen handles */
#define MSG_BYTES (sizeof(struct bt_rma_msg) + BT_RMA_NET_CHUNK)
/* Receives kept posted per peer: one, so that none is left posted past a peer's CLOSE (its
 * comm then closes under it, which a backend reports as a failure). */
#define RECVS 1
#define MAX_POLL 256

struct rma_peer {
    void *listen_comm, *send_comm, *recv_comm;
    char *sbuf;         /* the message being sent */
    void *smh;          /* its registration with send_comm */
    char *rbuf[RECVS];  /* where each posted receive lands */
    void *rmh[RECVS];   /* their registrations with recv_comm */
    void *rreq[RECVS];  /* the receives in flight (NULL: not posted) */
    unsigned next;      /* the oldest receive posted: its message comes next (posting order) */
    unsigned nposted;   /* receives posted, from `next` on */
    _Atomic int closed; /* its CLOSE came: its comm is not looked at again */
    unsigned char handle[BT_NET_HANDLE_BYTES];
};

struct bt_rma_net {
    struct bt_transport_ctx *ctx;
    struct bt_net *net;
    const ncclNet_v11_t *t;
    int nranks;
    struct rma_peer *peer; /* [nranks]; linked ones have their comms */
    unsigned char *linked;
    bt_rma_land_fn land;
    void *arg;
    struct bt_rma_net_opts opts;
    pthread_t thread;
    int running;
    pthread_mutex_t drive; /* one thread lands at a time: the link's, or a waiting owner */
    _Atomic int stop;
    int wake[2]; /* a pipe: close wakes the thread from its poll */
};

int bt_rma_net_linked(const struct bt_rma_net *rn, int peer)
{
    return rn && peer >= 0 && peer < rn->nranks && rn->linked[peer];
}

/* A message buffer (MSG_BYTES), pinned where the options ask; NULL when out of memory. */
static char *buf_alloc(const struct bt_rma_net *rn)
{
    if (!rn->opts.pinned)
        return malloc(MSG_BYTES);
    void *h = NULL, *d = NULL;
    return bt_device_host_mapped(&h, &d, MSG_BYTES) == BT_OK ? h : NULL;
}

static void buf_free(const struct bt_rma_net *rn, char *buf)
{
    if (rn->opts.pinned)
        bt_device_host_free(buf);
    else
        free(buf);
}

static bt_status_t reg(struct bt_rma_net *rn, void *comm, void *buf, void **mh)
{
    return bt_net_status(rn->t->regMr(comm, buf, MSG_BYTES, NCCL_PTR_HOST, mh));
}

/* Keep RECVS receives posted, in slot order after the oldest (a backend may take none for
 * now: a NULL request, tried again next time). */
static bt_status_t post_recvs(struct bt_rma_net *rn, struct rma_peer *p)
{
    while (p->nposted < RECVS) {
        unsigned k = (p->next + p->nposted) % RECVS;
        void *data = p->rbuf[k];
        size_t size = MSG_BYTES;
        int tag = 0;
        p->rreq[k] = NULL;
        BT_CHECK(bt_net_status(
            rn->t->irecv(p->recv_comm, 1, &data, &size, &tag, &p->rmh[k], NULL, &p->rreq[k])));
        if (!p->rreq[k])
            break;
        p->nposted++;
    }
    return BT_OK;
}

/* Listen for every linked peer, swap handles, then connect and accept all at once (each
 * try is non-blocking: a peer's accept needs this rank's connect, and the reverse). */
static bt_status_t link_all(struct bt_rma_net *rn)
{
    struct bt_transport_ctx *ctx = rn->ctx;
    int me = ctx->rank;
    for (int r = 0; r < rn->nranks; r++)
        if (rn->linked[r]) {
            unsigned char h[BT_NET_HANDLE_BYTES];
            BT_CHECK(bt_net_status(rn->t->listen(rn->net->ctx, 0, h, &rn->peer[r].listen_comm)));
            BT_CHECK(bt_bootstrap_send(ctx->bs, r, TAG_RMA_HANDLE, h, sizeof(h)));
        }
    for (int r = 0; r < rn->nranks; r++)
        if (rn->linked[r])
            BT_CHECK(bt_bootstrap_recv(ctx->bs, r, TAG_RMA_HANDLE, rn->peer[r].handle,
                                       BT_NET_HANDLE_BYTES));
    uint64_t deadline = bt_deadline_from_now();
    for (int left = 1; left;) {
        left = 0;
        for (int r = 0; r < rn->nranks; r++) {
            struct rma_peer *p = &rn->peer[r];
            if (!rn->linked[r])
                continue;
            if (!p->send_comm)
                BT_CHECK(
                    bt_net_status(rn->t->connect(rn->net->ctx, 0, p->handle, &p->send_comm, NULL)));
            if (!p->recv_comm)
                BT_CHECK(bt_net_status(rn->t->accept(p->listen_comm, &p->recv_comm, NULL)));
            left += !p->send_comm || !p->recv_comm;
        }
        if (!left)
            break;
        if (*ctx->abort_flag || bt_time_ns() > deadline) {
            BT_WARN("rank %d: the one-sided links did not connect (%s)", me,
                    *ctx->abort_flag ? "aborted" : "TIMEOUT");
            return BT_ERR_REMOTE;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    for (int r = 0; r < rn->nranks; r++) {
        struct rma_peer *p = &rn->peer[r];
        if (!rn->linked[r])
            continue;
        rn->t->closeListen(p->listen_comm);
        p->listen_comm = NULL;
        p->sbuf = buf_alloc(rn);
        if (!p->sbuf)
            return BT_ERR_SYSTEM;
        BT_CHECK(reg(rn, p->send_comm, p->sbuf, &p->smh));
        for (unsigned k = 0; k < RECVS; k++) {
            p->rbuf[k] = buf_alloc(rn);
            if (!p->rbuf[k])
                return BT_ERR_SYSTEM;
            BT_CHECK(reg(rn, p->recv_comm, p->rbuf[k], &p->rmh[k]));
        }
        BT_CHECK(post_recvs(rn, p));
    }
    return BT_OK;
}

/* Land whatever has arrived; returns how many messages. A link whose comm fails is WARNed
 * (naming the peer) and looked at no more: the others keep landing. */
static int land_arrived(struct bt_rma_net *rn)
{
    int n = 0;
    for (int r = 0; r < rn->nranks; r++) {
        struct rma_peer *p = &rn->peer[r];
        if (!rn->linked[r] || atomic_load_explicit(&p->closed, memory_order_relaxed))
            continue;
        for (;;) {
            unsigned k = p->next;
            int done = 0, size = 0;
            if (post_recvs(rn, p) != BT_OK)
                goto broken;
            if (!p->nposted)
                break;
            if (rn->t->test(p->rreq[k], &done, &size) != ncclSuccess)
                goto broken;
            if (!done)
                break;
            p->rreq[k] = NULL;
            p->nposted--;
            p->next = (k + 1) % RECVS;
            const struct bt_rma_msg *m = (const void *)p->rbuf[k];
            if ((size_t)size >= sizeof(*m) && (m->flags & BT_RMA_MSG_CLOSE)) {
                /* nothing more comes: no receive is posted again */
                atomic_store_explicit(&p->closed, 1, memory_order_release);
                n++;
                break;
            }
            if ((size_t)size < sizeof(*m) || (size_t)size - sizeof(*m) < m->bytes)
                BT_WARN("one-sided link from rank %d: a message of %d bytes is short: dropped", r,
                        size);
            else
                rn->land(rn->arg, r, m, m + 1);
            n++;
        }
        continue;
    broken:
        BT_WARN("rank %d: the one-sided link from rank %d failed (it closed, or the network "
                "broke): its puts no longer land",
                rn->ctx->rank, r);
        atomic_store_explicit(&p->closed, 1, memory_order_release);
    }
    return n;
}

/* Nothing arrived: block on the comms' descriptors (and the wake pipe) where the backend
 * names them; else sleep, longer the longer the link idles (1 ms after 5 ms idle, 20 ms after
 * 200 ms, 100 ms after 2 s: every wake-up of an idle thread costs its process CPU, ~0.1 ms
 * under a hypervisor). An owner waiting for a signal lands for itself (bt_rma_net_drive, as
 * the GIN proxy's thread does each round), so only a put nobody waits for yet lands late. */
static void idle_wait(struct bt_rma_net *rn, unsigned idle_rounds, uint64_t idle_since)
{
    uint64_t idle_ns = bt_time_ns() - idle_since;
    if (idle_rounds < 64 || idle_ns < rn->opts.spin_ns) {
        sched_yield();
        return;
    }
    struct pollfd fds[MAX_POLL];
    /* The comms are the driver's while it lands (pollfds reads their state): asked only when
     * nobody drives; a driver at work means a nap. */
    int n = 0, can = rn->net->be->ext.pollfds != NULL && pthread_mutex_trylock(&rn->drive) == 0;
    int locked = can;
    fds[n++] = (struct pollfd){.fd = rn->wake[0], .events = POLLIN};
    for (int r = 0; r < rn->nranks && can; r++) {
        if (!rn->linked[r] || atomic_load_explicit(&rn->peer[r].closed, memory_order_relaxed))
            continue;
        int k = rn->net->be->ext.pollfds(rn->peer[r].recv_comm, fds + n, MAX_POLL - n);
        if (k <= 0) /* the backend's threads do the I/O, it has no descriptor, or: poll me */
            can = 0;
        n += k;
    }
    if (locked)
        pthread_mutex_unlock(&rn->drive);
    if (can) {
        poll(fds, (nfds_t)n, 500); /* timed: a guard, stop writes the wake pipe */
        return;
    }
    long nap_ns = idle_ns < 5000000ull      ? 50000
                  : idle_ns < 200000000ull  ? 1000000
                  : idle_ns < 2000000000ull ? 20000000
                                            : 100000000;
    nanosleep(&(struct timespec){0, nap_ns}, NULL);
}

static void *rma_main(void *arg)
{
    struct bt_rma_net *rn = arg;
    unsigned idle = 0;
    uint64_t idle_since = bt_time_ns();
    while (!atomic_load_explicit(&rn->stop, memory_order_acquire)) {
        pthread_mutex_lock(&rn->drive);
        int n = land_arrived(rn);
        pthread_mutex_unlock(&rn->drive);
        if (n) {
            idle = 0;
            idle_since = bt_time_ns();
        } else {
            idle_wait(rn, ++idle, idle_since);
        }
    }
    return NULL;
}

int bt_rma_net_drive(struct bt_rma_net *rn)
{
    if (pthread_mutex_trylock(&rn->drive) != 0)
        return 0;
    int n = land_arrived(rn);
    pthread_mutex_unlock(&rn->drive);
    return n;
}

bt_status_t bt_rma_net_open(struct bt_transport_ctx *ctx, const struct bt_rma_net_opts *opts,
                            bt_rma_land_fn land, void *arg, struct bt_rma_net **rn_p)
{
    *rn_p = NULL;
    struct bt_rma_net *rn = calloc(1, sizeof(*rn));
    if (!rn)
        return BT_ERR_SYSTEM;
    rn->ctx = ctx;
    rn->nranks = ctx->nranks;
    rn->land = land;
    rn->arg = arg;
    rn->opts = *opts;
    rn->wake[0] = rn->wake[1] = -1;
    pthread_mutex_init(&rn->drive, NULL);
    rn->peer = calloc((size_t)ctx->nranks, sizeof(*rn->peer));
    rn->linked = calloc((size_t)ctx->nranks, 1);
    bt_status_t st = rn->peer && rn->linked ? BT_OK : BT_ERR_SYSTEM;
    if (st == BT_OK) {
        for (int r = 0; r < ctx->nranks; r++)
            rn->linked[r] = r != ctx->rank;
        st = bt_transport_network(ctx, &rn->net);
    }
    if (st == BT_OK && pipe2(rn->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        st = BT_ERR_SYSTEM;
    if (st == BT_OK) {
        rn->t = rn->net->v11;
        st = link_all(rn);
    }
    if (st == BT_OK) {
        if (pthread_create(&rn->thread, NULL, rma_main, rn) == 0) {
            rn->running = 1;
            if (bt_param_set_thread_name())
                pthread_setname_np(rn->thread, "baton RMA");
        } else {
            st = BT_ERR_SYSTEM;
        }
    }
    if (st != BT_OK) {
        BT_WARN("rank %d: the one-sided links over %s could not be made (error %d)", ctx->rank,
                rn->t ? rn->t->name : "the network", (int)st);
        bt_rma_net_close(rn);
        return st;
    }
    *rn_p = rn;
    return BT_OK;
}

/* Send the message in p->sbuf (header and payload) and wait for its local completion, until
 * `deadline`; quiet: no WARN when it fails. */
static bt_status_t send_msg(struct bt_rma_net *rn, int peer, uint64_t deadline, int quiet)
{
    struct rma_peer *p = &rn->peer[peer];
    const struct bt_rma_msg *h = (const void *)p->sbuf;
    void *req = NULL;
    const char *failed = NULL;
    while (!req && !failed) { /* NULL: the receiver has no receive posted yet */
        BT_CHECK(bt_net_status(
            rn->t->isend(p->send_comm, p->sbuf, sizeof(*h) + h->bytes, 0, p->smh, NULL, &req)));
        if (!req && (bt_time_ns() > deadline || *rn->ctx->abort_flag))
            failed = "its link takes nothing";
    }
    for (int done = 0; !done && !failed;) {
        int size = 0;
        BT_CHECK(bt_net_status(rn->t->test(req, &done, &size)));
        if (!done && (bt_time_ns() > deadline || *rn->ctx->abort_flag))
            failed = "it did not complete";
    }
    if (!failed)
        return BT_OK;
    if (!quiet)
        BT_WARN("one-sided put to rank %d: %s (%s)", peer, failed,
                *rn->ctx->abort_flag ? "aborted" : "TIMEOUT");
    return BT_ERR_REMOTE;
}

bt_status_t bt_rma_net_put(struct bt_rma_net *rn, int peer, const struct bt_rma_msg *m,
                           const void *src)
{
    struct rma_peer *p = &rn->peer[peer];
    uint64_t left = m->bytes, off = 0;
    do {
        struct bt_rma_msg *h = (void *)p->sbuf;
        *h = *m;
        h->bytes = left < BT_RMA_NET_CHUNK ? left : BT_RMA_NET_CHUNK;
        h->offset = m->offset + off;
        h->flags = m->flags & ~(uint32_t)BT_RMA_MSG_SIGNAL;
        if (left == h->bytes)
            h->flags |= m->flags & BT_RMA_MSG_SIGNAL; /* the last one raises the signal */
        if (h->bytes)
            memcpy(h + 1, (const char *)src + off, h->bytes);
        BT_CHECK(send_msg(rn, peer, bt_deadline_from_now(), 0));
        off += h->bytes;
        left -= h->bytes;
    } while (left > 0);
    return BT_OK;
}

void bt_rma_net_close(struct bt_rma_net *rn)
{
    if (!rn)
        return;
    /* Tell each peer nothing more comes, then wait until each has said the same, so that no
     * comm closes while its other end still looks at it (which would take the close for a
     * failure). Every rank closing does both, so this ends as soon as all are closing; a
     * peer that never closes, or died, holds it up a second at most. */
    for (int r = 0; rn->running && r < rn->nranks; r++) {
        if (!rn->linked[r])
            continue;
        struct bt_rma_msg *h = (void *)rn->peer[r].sbuf;
        *h = (struct bt_rma_msg){.flags = BT_RMA_MSG_CLOSE};
        if (send_msg(rn, r, bt_time_ns() + 200000000ull, 1) != BT_OK)
            BT_INFO(BT_LOG_NET, "one-sided link to rank %d: its close was not taken", r);
    }
    uint64_t deadline = bt_time_ns() + 1000000000ull;
    for (int r = 0; rn->running && r < rn->nranks; r++) {
        while (rn->linked[r] && !atomic_load_explicit(&rn->peer[r].closed, memory_order_acquire) &&
               bt_time_ns() < deadline && !*rn->ctx->abort_flag) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    if (rn->running) {
        atomic_store_explicit(&rn->stop, 1, memory_order_release);
        ssize_t w = write(rn->wake[1], "x", 1);
        (void)w;
        pthread_join(rn->thread, NULL);
    }
    for (int r = 0; rn->peer && r < rn->nranks; r++) {
        struct rma_peer *p = &rn->peer[r];
        if (p->smh)
            rn->t->deregMr(p->send_comm, p->smh);
        for (unsigned k = 0; k < RECVS; k++) {
            if (p->rmh[k])
                rn->t->deregMr(p->recv_comm, p->rmh[k]);
            buf_free(rn, p->rbuf[k]);
        }
        buf_free(rn, p->sbuf);
        if (p->send_comm)
            rn->t->closeSend(p->send_comm);
        if (p->recv_comm)
            rn->t->closeRecv(p->recv_comm);
        if (p->listen_comm)
            rn->t->closeListen(p->listen_comm);
    }
    if (rn->wake[0] >= 0) {
        close(rn->wake[0]);
        close(rn->wake[1]);
    }
    free(rn->peer);
    free(rn->linked);
    pthread_mutex_destroy(&rn->drive);
    free(rn);
}
