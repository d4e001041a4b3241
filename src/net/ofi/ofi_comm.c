/*
 * libfabric backend, the data path (wire protocol: ofi.h): endpoint sets, memory
 * registration, requests and their completion.
 *
 * A comm has BT_OFI_MAX_REQS request slots. A request is one to 1 + BT_OFI_MAX_EPS
 * operations (the whole message, or a header and pieces); each operation's fi_context2 is
 * what its completion hands back, and the request is complete when none is left in
 * flight. An operation the provider refuses for now (-FI_EAGAIN: its queue is full, or a
 * connection is still being made) stays "to post" and is posted again by the next call
 * that progresses the comm: isend, irecv and test all do, reading the CQ until it is empty,
 * which is also what moves a provider with manual progress (tcp;ofi_rxm).
 *
 * A request that failed is reported by test() and then abandoned: its slot is reused only
 * once its last operation in flight has completed, so the provider never writes into a
 * slot that holds a newer request.
 *
 * Registration keys: without FI_MR_PROV_KEY the provider takes the key it is given, and two
 * registrations of one domain with the same key fail (FI_ENOKEY), so each gets the next
 * value of a process-wide counter.
 */
#ifdef BATON_HAVE_OFI

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "device/device.h"
#include "net/ofi/ofi.h"
#include "util/param.h"
#include "util/time.h"

#define CQ_BATCH 16
#define CLOSE_DRAIN_NS (25ull * 1000000ull) /* see bt_ofi_comm_free */

static atomic_uint_fast64_t g_key = 1; /* next requested MR key */
static atomic_int g_neps_override;     /* tests: endpoints per send comm, 0: the parameter */

int bt_net_ofi_neps(void)
{
    int64_t n = atomic_load_explicit(&g_neps_override, memory_order_relaxed);
    if (n <= 0)
        n = bt_param_ofi_neps();
    return n < 1 ? 1 : n > BT_OFI_MAX_EPS ? BT_OFI_MAX_EPS : (int)n;
}

void bt_net_ofi_neps_set(int neps)
{
    atomic_store_explicit(&g_neps_override, neps, memory_order_relaxed);
}

/* ---- registration ---- */

/* Close what mr holds. Under the lock. */
static void mr_close_locked(struct bt_ofi_mr *mr)
{
    if (mr == NULL)
        return;
    for (int i = 0; i < mr->n; i++) {
        int rc = mr->mr[i] ? fi_close(&mr->mr[i]->fid) : 0;
        if (rc != 0)
            bt_ofi_fail("fi_close(mr)", rc, mr->dev->name);
    }
    free(mr);
}

/* Register [buf, buf + len) for the endpoints of eps. Under the lock. */
static bt_status_t mr_register_locked(struct bt_ofi_eps *eps, void *buf, size_t len, int cuda,
                                      struct bt_ofi_mr **mr_p)
{
    struct bt_ofi_dev *d = eps->dev;
    struct bt_ofi_mr *mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        BT_WARN("NET/OFI: out of memory for a registration");
        return BT_ERR_SYSTEM;
    }
    mr->dev = d;
    int n = len == 0 ? 0 : (d->mr_mode & FI_MR_ENDPOINT) ? eps->n : 1; /* nothing to register */
    for (int i = 0; i < n; i++) {
        struct iovec iov = {.iov_base = buf, .iov_len = len};
        struct fi_mr_attr attr = {
            .mr_iov = &iov,
            .iov_count = 1,
            .access = FI_SEND | FI_RECV,
            .requested_key = (d->mr_mode & FI_MR_PROV_KEY)
                                 ? 0
                                 : atomic_fetch_add_explicit(&g_key, 1, memory_order_relaxed),
            .iface = cuda ? FI_HMEM_CUDA : FI_HMEM_SYSTEM,
        };
        if (cuda) {
            int dev = bt_device_current(); /* the proxy thread runs on the comm's GPU */
            attr.device.cuda = dev < 0 ? 0 : dev;
        }
        char what[96];
        snprintf(what, sizeof(what), "of %zu bytes at %p on %s", len, buf, d->name);
        int rc = fi_mr_regattr(d->domain, &attr, 0, &mr->mr[i]);
        if (rc != 0) {
            mr->mr[i] = NULL;
            bt_ofi_fail("fi_mr_regattr", rc, what);
            goto err;
        }
        mr->n = i + 1;
        if (d->mr_mode & FI_MR_ENDPOINT) {
            rc = fi_mr_bind(mr->mr[i], &eps->ep[i]->fid, 0);
            if (rc != 0) {
                bt_ofi_fail("fi_mr_bind", rc, what);
                goto err;
            }
            rc = fi_mr_enable(mr->mr[i]);
            if (rc != 0) {
                bt_ofi_fail("fi_mr_enable", rc, what);
                goto err;
            }
        }
        mr->desc[i] = fi_mr_desc(mr->mr[i]);
    }
    *mr_p = mr;
    return BT_OK;
err:
    mr_close_locked(mr);
    return BT_ERR_INTERNAL;
}

bt_status_t bt_ofi_mr_register(struct bt_ofi_eps *eps, void *buf, size_t len, int cuda,
                               struct bt_ofi_mr **mr_p)
{
    bt_ofi_lock();
    bt_status_t st = mr_register_locked(eps, buf, len, cuda, mr_p);
    bt_ofi_unlock();
    return st;
}

void bt_ofi_mr_close(struct bt_ofi_mr *mr)
{
    if (mr == NULL)
        return;
    bt_ofi_lock();
    mr_close_locked(mr);
    bt_ofi_unlock();
}

/* The descriptor of `mr` for endpoint ep (NULL: none needed, or none given). */
static void *mr_desc(const struct bt_ofi_mr *mr, int ep)
{
    if (mr == NULL || mr->n == 0)
        return NULL;
    return mr->desc[mr->n == 1 ? 0 : ep];
}

/* ---- endpoint sets ---- */

/* Close what eps holds. Under the lock. */
static void eps_close_locked(struct bt_ofi_eps *eps)
{
    const char *name = eps->dev->name;
    int rc;
    mr_close_locked(eps->ctl_mr); /* before the endpoints it may be bound to */
    for (int i = 0; i < eps->n; i++)
        if (eps->ep[i] && (rc = fi_close(&eps->ep[i]->fid)) != 0)
            bt_ofi_fail("fi_close(endpoint)", rc, name);
    if (eps->av && (rc = fi_close(&eps->av->fid)) != 0)
        bt_ofi_fail("fi_close(av)", rc, name);
    if (eps->cq && (rc = fi_close(&eps->cq->fid)) != 0)
        bt_ofi_fail("fi_close(cq)", rc, name);
    free(eps->ctl);
    bt_ofi_dev_release(eps->dev);
    free(eps);
}

static bt_status_t eps_open_locked(struct bt_ofi_dev *d, int n, struct bt_ofi_eps *e)
{
    /* Room for every operation of every request of the comm, and the hello. A descriptor
     * to block on where the provider has one (a thread idle on the comm then sleeps in
     * poll() rather than waking to read an empty CQ); else none. Completions cost no more
     * for it: libfabric signals the descriptor only when it is not signalled already. */
    struct fi_cq_attr cq_attr = {.size = (size_t)BT_OFI_MAX_REQS * (2 + n) + 16,
                                 .format = FI_CQ_FORMAT_TAGGED,
                                 .wait_obj = FI_WAIT_FD};
    e->wait_fd = -1;
    int rc = fi_cq_open(d->domain, &cq_attr, &e->cq, NULL);
    if (rc != 0) {
        cq_attr.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(d->domain, &cq_attr, &e->cq, NULL);
    } else if (fi_control(&e->cq->fid, FI_GETWAIT, &e->wait_fd) != 0) {
        e->wait_fd = -1;
    }
    if (rc != 0) {
        e->cq = NULL;
        return bt_ofi_fail("fi_cq_open", rc, d->name);
    }
    struct fi_av_attr av_attr = {.type = d->info->domain_attr->av_type,
                                 .count = 2 * BT_OFI_MAX_EPS};
    rc = fi_av_open(d->domain, &av_attr, &e->av, NULL);
    if (rc != 0) {
        e->av = NULL;
        return bt_ofi_fail("fi_av_open", rc, d->name);
    }
    for (int i = 0; i < n; i++) {
        rc = fi_endpoint(d->domain, d->info, &e->ep[i], NULL);
        if (rc != 0) {
            e->ep[i] = NULL;
            return bt_ofi_fail("fi_endpoint", rc, d->name);
        }
        e->n = i + 1;
        if ((rc = fi_ep_bind(e->ep[i], &e->av->fid, 0)) != 0)
            return bt_ofi_fail("fi_ep_bind(av)", rc, d->name);
        if ((rc = fi_ep_bind(e->ep[i], &e->cq->fid, FI_TRANSMIT | FI_RECV)) != 0)
            return bt_ofi_fail("fi_ep_bind(cq)", rc, d->name);
        if ((rc = fi_enable(e->ep[i])) != 0)
            return bt_ofi_fail("fi_enable", rc, d->name);
        e->namelen[i] = BT_OFI_NAME_MAX;
        rc = fi_getname(&e->ep[i]->fid, e->name[i], &e->namelen[i]);
        if (rc == -FI_ETOOSMALL) {
            BT_WARN("NET/OFI: %s's endpoint name has %zu bytes, more than %d", d->name,
                    e->namelen[i], BT_OFI_NAME_MAX);
            return BT_ERR_INTERNAL;
        }
        if (rc != 0)
            return bt_ofi_fail("fi_getname", rc, d->name);
    }
    if (d->mr_mode & FI_MR_LOCAL)
        BT_CHECK(mr_register_locked(e, e->ctl, sizeof(*e->ctl), 0, &e->ctl_mr));
    return BT_OK;
}

bt_status_t bt_ofi_eps_open(struct bt_ofi_dev *d, int n, struct bt_ofi_eps **eps_p)
{
    *eps_p = NULL;
    struct bt_ofi_eps *e = calloc(1, sizeof(*e));
    struct bt_ofi_ctl *ctl = calloc(1, sizeof(*ctl));
    if (e == NULL || ctl == NULL) {
        BT_WARN("NET/OFI: out of memory for endpoints");
        free(e);
        free(ctl);
        return BT_ERR_SYSTEM;
    }
    e->ctl = ctl;
    e->dev = d;
    bt_ofi_lock();
    bt_status_t st = bt_ofi_dev_acquire(d);
    if (st != BT_OK) {
        bt_ofi_unlock();
        free(ctl);
        free(e);
        return st;
    }
    st = eps_open_locked(d, n, e);
    if (st != BT_OK)
        eps_close_locked(e);
    bt_ofi_unlock();
    if (st == BT_OK)
        *eps_p = e;
    return st;
}

void bt_ofi_eps_close(struct bt_ofi_eps *eps)
{
    if (eps == NULL)
        return;
    bt_ofi_lock();
    eps_close_locked(eps);
    bt_ofi_unlock();
}

/* ---- operations and their completion ---- */

static void req_release(struct bt_ofi_req *req)
{
    bt_ofi_mr_close(req->tmp_mr);
    req->tmp_mr = NULL;
    req->used = 0;
}

static void op_queue(struct bt_ofi_comm *comm, struct bt_ofi_op *op, struct bt_ofi_req *req, int ep,
                     int is_send, void *buf, size_t len, void *desc, uint64_t tag, uint64_t ignore)
{
    memset(op, 0, sizeof(*op));
    op->req = req;
    op->ep = ep;
    op->is_send = is_send;
    op->buf = buf;
    op->len = len;
    op->desc = desc;
    op->tag = tag;
    op->ignore = ignore;
    op->state = BT_OFI_OP_TO_POST;
    comm->eps->ntopost++;
    if (req) {
        req->inflight++;
        req->nops++;
    }
}

/* The listener's hello arrived: check it is the one its handle asked for. The sender's
 * addresses go into the AV (receives take any source, but a provider may want its peers
 * there, and FI_DIRECTED_RECV would). */
static void hello_arrived(struct bt_ofi_eps *e, size_t got)
{
    const struct bt_ofi_hello *h = &e->ctl->hello;
    const char *why = NULL;
    if (got != sizeof(*h) || h->tag != BT_OFI_TAG)
        why = "not a Baton hello";
    else if (h->id != e->id)
        why = "meant for another listener";
    else if (h->neps < 1 || h->neps > BT_OFI_MAX_EPS)
        why = "bad endpoint count";
    for (uint32_t i = 0; why == NULL && i < h->neps; i++)
        if (h->namelen[i] == 0 || h->namelen[i] > BT_OFI_NAME_MAX)
            why = "bad endpoint name";
    if (why) {
        BT_WARN("NET/OFI: listener %016llx on %s got a hello of %zu bytes that is %s",
                (unsigned long long)e->id, e->dev->name, got, why);
        e->err = BT_ERR_REMOTE;
        return;
    }
    bt_ofi_lock();
    for (uint32_t i = 0; i < h->neps; i++) {
        fi_addr_t a;
        int rc = fi_av_insert(e->av, h->names[i], 1, &a, 0, NULL);
        if (rc != 1)
            BT_INFO(BT_LOG_NET, "NET/OFI: fi_av_insert of the sender's endpoint %u: %s", i,
                    bt_ofi.strerror(rc < 0 ? -rc : FI_EINVAL));
    }
    bt_ofi_unlock();
    BT_INFO(BT_LOG_NET, "NET/OFI: listener %016llx on %s: hello from a sender of %u endpoint%s",
            (unsigned long long)e->id, e->dev->name, h->neps, h->neps > 1 ? "s" : "");
}

/* An operation is over (posting failed, or its completion came). */
static void op_finish(struct bt_ofi_comm *comm, struct bt_ofi_op *op, int err)
{
    op->state = BT_OFI_OP_DONE;
    op->err = err;
    struct bt_ofi_req *req = op->req;
    if (req == NULL) { /* the hello */
        if (err && comm->eps->err == BT_OK)
            comm->eps->err = BT_ERR_REMOTE;
        else if (!err && !op->is_send)
            hello_arrived(comm->eps, op->got);
        return;
    }
    req->inflight--;
    if (err && req->err == BT_OK)
        req->err = err == FI_ETRUNC ? BT_ERR_INTERNAL : BT_ERR_REMOTE;
    if (req->abandoned && req->inflight == 0)
        req_release(req);
}

/* Post `op` if the provider takes it now (-FI_EAGAIN: it stays to post). */
static bt_status_t op_post(struct bt_ofi_comm *comm, struct bt_ofi_op *op)
{
    struct bt_ofi_eps *e = comm->eps;
    struct fid_ep *ep = e->ep[op->ep];
    ssize_t rc;
    if (op->is_send)
        rc = fi_tsend(ep, op->buf, op->len, op->desc, comm->peer, op->tag, &op->ctx);
    else
        rc =
            fi_trecv(ep, op->buf, op->len, op->desc, FI_ADDR_UNSPEC, op->tag, op->ignore, &op->ctx);
    if (rc == -FI_EAGAIN)
        return BT_OK;
    e->ntopost--;
    if (rc == 0) {
        op->state = BT_OFI_OP_POSTED;
        return BT_OK;
    }
    char what[96];
    snprintf(what, sizeof(what), "of %zu bytes (tag 0x%llx) on %s", op->len,
             (unsigned long long)op->tag, e->dev->name);
    bt_ofi_fail(op->is_send ? "fi_tsend" : "fi_trecv", (int)rc, what);
    op_finish(comm, op, (int)-rc);
    return BT_ERR_INTERNAL;
}

/* Post every operation that waits, the hello first, until the provider refuses one. */
static bt_status_t post_waiting(struct bt_ofi_comm *comm)
{
    struct bt_ofi_eps *e = comm->eps;
    bt_status_t st = BT_OK;
    if (e->ntopost > 0 && e->hello.state == BT_OFI_OP_TO_POST) {
        st = op_post(comm, &e->hello);
        if (e->hello.state == BT_OFI_OP_TO_POST)
            return st;
    }
    for (int s = 0; s < BT_OFI_MAX_REQS && e->ntopost > 0; s++) {
        struct bt_ofi_req *req = &comm->reqs[s];
        if (!req->used)
            continue;
        for (int i = 0; i < req->nops && e->ntopost > 0; i++) {
            struct bt_ofi_op *op = &req->op[i];
            if (op->state != BT_OFI_OP_TO_POST)
                continue;
            bt_status_t r = op_post(comm, op);
            if (r != BT_OK && st == BT_OK)
                st = r;
            if (op->state == BT_OFI_OP_TO_POST)
                return st; /* the provider is full: later */
        }
    }
    return st;
}

bt_status_t bt_ofi_hello_post(struct bt_ofi_comm *comm)
{
    struct bt_ofi_eps *e = comm->eps;
    int is_send = comm->kind == BT_OFI_SEND;
    op_queue(comm, &e->hello, NULL, 0, is_send, &e->ctl->hello, sizeof(e->ctl->hello),
             mr_desc(e->ctl_mr, 0), BT_OFI_TAG_HELLO, 0);
    return op_post(comm, &e->hello);
}

/* The header of a split message arrived in op[0] of a receive: post its pieces. */
static void recv_split(struct bt_ofi_comm *comm, struct bt_ofi_req *req, size_t got)
{
    uint64_t hdr[2] = {0, 0};
    if (got == sizeof(hdr))
        memcpy(hdr, req->buf, sizeof(hdr));
    uint64_t size = hdr[0], parts = hdr[1];
    if (got != sizeof(hdr) || parts < 1 || parts > BT_OFI_MAX_EPS) {
        BT_WARN("NET/OFI: message %llu on %s: bad split header (%zu bytes, %llu parts)",
                (unsigned long long)req->seq, comm->eps->dev->name, got, (unsigned long long)parts);
        req->err = BT_ERR_INTERNAL;
        return;
    }
    if (size > req->cap) {
        BT_WARN("NET/OFI: message %llu on %s has %llu bytes, more than the %zu of its receive",
                (unsigned long long)req->seq, comm->eps->dev->name, (unsigned long long)size,
                req->cap);
        req->err = BT_ERR_INTERNAL;
        return;
    }
    size_t piece = (size_t)((size + parts - 1) / parts);
    for (uint64_t j = 0; j < parts; j++) {
        size_t lo = (size_t)j * piece;
        if (lo >= size)
            break;
        size_t len = size - lo < piece ? size - lo : piece;
        uint64_t tag = BT_OFI_TAG_DATA | BT_OFI_TAG_PIECE | (j << BT_OFI_PIECE_SHIFT) |
                       (req->seq & BT_OFI_SEQ_MASK);
        op_queue(comm, &req->op[1 + j], req, 0, 0, req->buf + lo, len, mr_desc(req->mr, 0), tag, 0);
    }
}

static void op_complete(struct bt_ofi_comm *comm, struct bt_ofi_op *op, size_t len, uint64_t tag)
{
    struct bt_ofi_req *req = op->req;
    op->got = len;
    op->rtag = tag;
    if (req && !req->is_send) {
        if (op == &req->op[0] && (tag & BT_OFI_TAG_SPLIT))
            recv_split(comm, req, len);
        else
            req->bytes += len;
    }
    op_finish(comm, op, 0);
}

/* A failed operation: its error, in the provider's words. */
static void op_failed(struct bt_ofi_comm *comm, const struct fi_cq_err_entry *e)
{
    struct bt_ofi_op *op = e->op_context;
    if (op == NULL) {
        BT_WARN("NET/OFI: an error completion without a context on %s: %s", comm->eps->dev->name,
                bt_ofi.strerror(e->err));
        if (comm->eps->err == BT_OK)
            comm->eps->err = BT_ERR_INTERNAL;
        return;
    }
    char buf[256] = "";
    const char *prov = "none";
    if (e->prov_errno != 0) /* the text may be returned rather than written into buf */
        prov = fi_cq_strerror(comm->eps->cq, e->prov_errno, e->err_data, buf, sizeof(buf));
    const char *what = op->req == NULL                       ? "hello"
                       : !op->is_send && e->err == FI_ETRUNC ? "receive (message too long)"
                       : op->is_send                         ? "send"
                                                             : "receive";
    BT_WARN("NET/OFI: %s of %zu bytes (message %llu, tag 0x%llx) on %s failed: %s (provider "
            "error %d: %s)",
            what, op->len, (unsigned long long)(op->tag & BT_OFI_SEQ_MASK),
            (unsigned long long)op->tag, comm->eps->dev->name, bt_ofi.strerror(e->err),
            e->prov_errno, prov ? prov : "?");
    op_finish(comm, op, e->err ? e->err : FI_EIO);
}

bt_status_t bt_ofi_comm_progress(struct bt_ofi_comm *comm)
{
    bt_status_t st = post_waiting(comm);
    struct fi_cq_tagged_entry ent[CQ_BATCH];
    for (;;) {
        ssize_t n = fi_cq_read(comm->eps->cq, ent, CQ_BATCH);
        if (n == -FI_EAGAIN)
            break;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            memset(&e, 0, sizeof(e));
            ssize_t r = fi_cq_readerr(comm->eps->cq, &e, 0);
            if (r == -FI_EAGAIN)
                continue;
            if (r < 0) {
                bt_ofi_fail("fi_cq_readerr", (int)r, comm->eps->dev->name);
                return BT_ERR_INTERNAL;
            }
            op_failed(comm, &e);
            continue;
        }
        if (n < 0) {
            bt_ofi_fail("fi_cq_read", (int)n, comm->eps->dev->name);
            return BT_ERR_INTERNAL;
        }
        for (ssize_t i = 0; i < n; i++)
            op_complete(comm, ent[i].op_context, ent[i].len, ent[i].tag);
        comm->eps->busy_ns = bt_time_ns();
        if (n < CQ_BATCH)
            break;
    }
    if (comm->eps->ntopost > 0) {
        bt_status_t r = post_waiting(comm);
        if (st == BT_OK)
            st = r;
    }
    return st;
}

#define BUSY_NS 1000000ull /* 1 ms */

int bt_ofi_comm_pollfds(struct bt_ofi_comm *comm, struct pollfd *fds, int max)
{
    struct bt_ofi_eps *e = comm->eps;
    if (e == NULL || e->wait_fd < 0 || max < 1)
        return 0;
    /* Busy within the last BUSY_NS: the next completion is likely near, and a wake-up from
     * poll() (after fi_trywait's own system calls) costs a small message more than the
     * caller's short naps do (2 ranks, 8 B AllReduce over tcp;ofi_rxm: ~37 us against ~30). */
    if (e->ntopost > 0 || bt_time_ns() - e->busy_ns < BUSY_NS)
        return -1;
    struct fid *cq = &e->cq->fid;
    if (fi_trywait(e->dev->fabric, &cq, 1) != FI_SUCCESS)
        return -1;
    fds[0] = (struct pollfd){.fd = e->wait_fd, .events = POLLIN};
    return 1;
}

/* ---- requests ---- */

static struct bt_ofi_req *req_alloc(struct bt_ofi_comm *comm, int is_send, void *data, size_t size,
                                    struct bt_ofi_mr *mr)
{
    for (int s = 0; s < BT_OFI_MAX_REQS; s++) {
        struct bt_ofi_req *req = &comm->reqs[s];
        if (req->used)
            continue;
        memset(req, 0, sizeof(*req));
        req->comm = comm;
        req->used = 1;
        req->slot = s;
        req->is_send = is_send;
        req->seq = comm->seq;
        req->buf = data;
        req->cap = size;
        req->mr = mr;
        return req;
    }
    return NULL;
}

/* Start: register on the fly where the provider needs a descriptor and the caller gave
 * none, and count the message. NULL when the comm has no free slot. */
static bt_status_t req_start(struct bt_ofi_comm *comm, int is_send, void *data, size_t size,
                             struct bt_ofi_mr *mr, struct bt_ofi_req **req_p)
{
    *req_p = NULL;
    if (comm->eps->err != BT_OK)
        return comm->eps->err;
    BT_CHECK(bt_ofi_comm_progress(comm));
    struct bt_ofi_req *req = req_alloc(comm, is_send, data, size, mr);
    if (req == NULL)
        return BT_OK;
    if (mr == NULL && (comm->eps->dev->mr_mode & FI_MR_LOCAL) && size > 0) {
        bt_status_t st = bt_ofi_mr_register(comm->eps, data, size, 0, &req->tmp_mr);
        if (st != BT_OK) {
            req->used = 0;
            return st;
        }
        req->mr = req->tmp_mr;
    }
    comm->seq++;
    *req_p = req;
    return BT_OK;
}

/* After the operations are queued: post what the provider takes now. */
static bt_status_t req_post(struct bt_ofi_comm *comm, struct bt_ofi_req *req, void **request_p)
{
    bt_status_t st = post_waiting(comm);
    if (st != BT_OK || req->err != BT_OK) {
        req->abandoned = 1;
        if (req->inflight == 0)
            req_release(req);
        return st != BT_OK ? st : req->err;
    }
    *request_p = req;
    return BT_OK;
}

bt_status_t bt_ofi_isend(struct bt_ofi_comm *comm, void *data, size_t size, struct bt_ofi_mr *mr,
                         void **request_p)
{
    struct bt_ofi_req *req;
    *request_p = NULL;
    BT_CHECK(req_start(comm, 1, data, size, mr, &req));
    if (req == NULL)
        return BT_OK;
    uint64_t seq = req->seq & BT_OFI_SEQ_MASK;
    int parts = comm->parts;
    if (size < BT_OFI_MIN_SPLIT || parts == 1) {
        op_queue(comm, &req->op[0], req, 0, 1, data, size, mr_desc(req->mr, 0),
                 BT_OFI_TAG_DATA | seq, 0);
    } else {
        struct bt_ofi_eps *e = comm->eps;
        uint64_t *hdr = e->ctl->hdr[req->slot];
        hdr[0] = size;
        hdr[1] = (uint64_t)parts;
        op_queue(comm, &req->op[0], req, 0, 1, hdr, 2 * sizeof(uint64_t), mr_desc(e->ctl_mr, 0),
                 BT_OFI_TAG_DATA | BT_OFI_TAG_SPLIT | seq, 0);
        size_t piece = (size + (size_t)parts - 1) / (size_t)parts;
        for (int j = 0; j < parts; j++) {
            size_t lo = (size_t)j * piece;
            if (lo >= size)
                break;
            size_t len = size - lo < piece ? size - lo : piece;
            uint64_t tag =
                BT_OFI_TAG_DATA | BT_OFI_TAG_PIECE | ((uint64_t)j << BT_OFI_PIECE_SHIFT) | seq;
            op_queue(comm, &req->op[1 + j], req, j, 1, (char *)data + lo, len, mr_desc(req->mr, j),
                     tag, 0);
        }
    }
    return req_post(comm, req, request_p);
}

bt_status_t bt_ofi_irecv(struct bt_ofi_comm *comm, void *data, size_t size, struct bt_ofi_mr *mr,
                         void **request_p)
{
    struct bt_ofi_req *req;
    *request_p = NULL;
    BT_CHECK(req_start(comm, 0, data, size, mr, &req));
    if (req == NULL)
        return BT_OK;
    /* The whole message, or the header of a split one (TAG_SPLIT ignored). */
    op_queue(comm, &req->op[0], req, 0, 0, data, size, mr_desc(req->mr, 0),
             BT_OFI_TAG_DATA | (req->seq & BT_OFI_SEQ_MASK), BT_OFI_TAG_SPLIT);
    return req_post(comm, req, request_p);
}

/* caller: the thread that owns the request's comm. */
bt_status_t bt_ofi_test(void *request, int *done_p, size_t *size_p)
{
    struct bt_ofi_req *req = request;
    struct bt_ofi_comm *comm = req->comm;
    *done_p = 0;
    bt_status_t st = bt_ofi_comm_progress(comm);
    if (st == BT_OK)
        st = req->err != BT_OK ? req->err : comm->eps->err;
    if (st != BT_OK) {
        req->abandoned = 1;
        if (req->inflight == 0)
            req_release(req);
        return st;
    }
    if (req->inflight > 0)
        return BT_OK;
    *done_p = 1;
    *size_p = req->is_send ? req->cap : req->bytes;
    req_release(req);
    return BT_OK;
}

void bt_ofi_comm_free(struct bt_ofi_comm *comm)
{
    if (comm == NULL)
        return;
    /* Registrations of requests still in flight go first: an endpoint a registration is
     * bound to (FI_MR_ENDPOINT) does not close before it. */
    for (int s = 0; s < BT_OFI_MAX_REQS; s++)
        if (comm->reqs[s].used)
            req_release(&comm->reqs[s]);
    if (comm->eps && comm->kind != BT_OFI_SEND && comm->eps->hello.state != BT_OFI_OP_DONE) {
        /* No hello yet: a sender may have started its connection, which ofi_rxm takes up
         * only in its connection progress (every FI_OFI_RXM_CM_PROGRESS_INTERVAL, 10 ms by
         * default); closed before that, libfabric 1.17 leaves the accepted socket open for
         * good. Progress long enough for it to be taken up and torn down. */
        uint64_t end = bt_time_ns() + CLOSE_DRAIN_NS;
        while (bt_time_ns() < end && comm->eps->hello.state != BT_OFI_OP_DONE)
            if (bt_ofi_comm_progress(comm) != BT_OK)
                break;
    }
    bt_ofi_eps_close(comm->eps);
    free(comm);
}

#endif /* BATON_HAVE_OFI */
