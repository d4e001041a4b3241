#define _GNU_SOURCE /* ppoll */
#include "exec/host/proxied.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "coll/steps.h"
#include "util/array.h"

void bt_host_proxied_begin(struct bt_host_proxied *s)
{
    s->nops = 0;
    s->all_proxied = 1;
}

/* The launching thread runs its communicators' proxy rounds itself while it waits: the
 * executor and the sockets then share one thread, with no hand-off per step. */
static bt_status_t drive(struct bt_host_proxied *s, struct bt_proxy *p)
{
    for (int i = 0; i < s->ndrive; i++)
        if (s->drive[i] == p)
            return BT_OK;
    if (bt_array_grow((void **)&s->drive, &s->drive_cap, s->ndrive + 1, sizeof(*s->drive)) != 0)
        return BT_ERR_SYSTEM;
    bt_proxy_drive_begin(p);
    s->drive[s->ndrive++] = p;
    return BT_OK;
}

bt_status_t bt_host_proxied_post(struct bt_host_proxied *s, const struct bt_work *w,
                                 struct bt_transport_ctx *ctx, int drive_it)
{
    if (w->nsteps == 0)
        return BT_OK;
    if (!ctx) {
        s->all_proxied = 0;
        return BT_OK;
    }
    struct bt_conn_steps t[BT_WORK_MAX_CONNS];
    int nt = 0, other = 0, posted = 0;
    bt_status_t st = bt_work_conn_steps(w, bt_conn_proxied, 1, t, BT_WORK_MAX_CONNS, &nt, &other);
    if (other)
        s->all_proxied = 0;
    if (st == BT_OK && nt > 0 && drive_it)
        st = drive(s, ctx->proxy);
    for (; st == BT_OK && posted < nt; posted++) {
        if (bt_array_grow((void **)&s->ops, &s->ops_cap, s->nops + 1, sizeof(*s->ops)) != 0) {
            st = BT_ERR_SYSTEM;
            break;
        }
        struct bt_proxied_op *po = &s->ops[s->nops];
        st = bt_transport_post(ctx, t[posted].conn, t[posted].nsteps, t[posted].zc, &po->op);
        if (st != BT_OK) {
            posted++; /* its zc belongs to the op now */
            break;
        }
        po->peer = t[posted].conn->peer;
        po->owner = w->owner;
        s->nops++;
    }
    for (int f = posted; f < nt; f++)
        free(t[f].zc);
    return st;
}

int bt_host_proxied_poll(void *arg)
{
    struct bt_host_proxied *s = arg;
    int moved = 0;
    for (int i = 0; i < s->ndrive; i++)
        moved |= bt_proxy_drive(s->drive[i]);
    return moved;
}

/* Nothing moved: when only the network can move the launch, wait in poll() for its sockets
 * instead of asking each one with a failing recv()/send() (each a system call that also
 * contends with the peer for the socket). Bounded, so abort and deadlines are still seen. */
#define DRIVE_BLOCK_NS 200000
int bt_host_proxied_block(void *arg)
{
    struct bt_host_proxied *s = arg;
    struct pollfd fds[64];
    int n = 0;
    if (!s->all_proxied)
        return 0;
    for (int i = 0; i < s->ndrive; i++) {
        int k =
            bt_proxy_drive_pollfds(s->drive[i], fds + n, (int)(sizeof(fds) / sizeof(fds[0])) - n);
        if (k < 0)
            return 0;
        n += k;
    }
    if (n == 0)
        return 0;
    struct timespec ts = {0, DRIVE_BLOCK_NS};
    ppoll(fds, (nfds_t)n, &ts, NULL);
    return 1;
}

const struct bt_proxied_op *bt_host_proxied_failed(const struct bt_host_proxied *s,
                                                   const void *owner)
{
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].owner == owner && bt_transport_op_failed(s->ops[i].op))
            return &s->ops[i];
    return NULL;
}

bt_status_t bt_host_proxied_finish(struct bt_host_proxied *s, bt_status_t st,
                                   void (*report)(const struct bt_proxied_op *op))
{
    for (int i = 0; i < s->nops && st != BT_OK; i++)
        bt_transport_op_cancel(s->ops[i].op);
    for (int i = 0; i < s->nops; i++) {
        const struct bt_proxied_op *po = &s->ops[i];
        bt_status_t r =
            bt_transport_op_wait(po->op, bt_host_proxied_poll, bt_host_proxied_block, s);
        if (r != BT_OK && st == BT_OK) {
            if (report)
                report(po);
            st = r;
            for (int j = i + 1; j < s->nops; j++)
                bt_transport_op_cancel(s->ops[j].op);
        }
    }
    s->nops = 0;
    for (int i = 0; i < s->ndrive; i++)
        bt_proxy_drive_end(s->drive[i]);
    s->ndrive = 0;
    return st;
}

void bt_host_proxied_free(struct bt_host_proxied *s)
{
    free(s->ops);
    free(s->drive);
    memset(s, 0, sizeof(*s));
}
