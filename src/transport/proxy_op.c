/*
 * Steps a proxy moves (transport.h): waiting for, reaping and giving up the ops a
 * transport's `post` made. The op's transport frees it (`release`) once the proxy has
 * handed it back.
 */
#include <sched.h>
#include <time.h>

#include "transport/transport.h"
#include "util/param.h"
#include "util/time.h"

static int op_complete(const struct bt_transport_op *op)
{
    return atomic_load_explicit(&op->args.complete, memory_order_acquire);
}

/* An abort makes the proxy complete every op with an error at once, so only the deadline
 * and the peer need watching here. */
bt_status_t bt_transport_op_wait(struct bt_transport_op *op, int (*poll)(void *),
                                 int (*block)(void *), void *arg)
{
    const struct bt_transport_ctx *ctx = op->ctx;
    const int peer = op->peer;
    uint64_t deadline = bt_deadline_from_now(), check = bt_time_ns() + BT_PEER_CHECK_NS;
    const uint64_t yields = (uint64_t)bt_param_yield_count();
    /* the stall peer_lost is told of, counted from the last 50 ms check that saw progress
     * (no clock read per progress) */
    uint64_t idle = 0, stalled_since = check - BT_PEER_CHECK_NS;
    int timed_out = 0, moved = 0;
    while (!op_complete(op)) {
        if (poll && poll(arg)) {
            idle = 0;
            moved = 1;
            if (!timed_out) /* the timeout counts time without progress */
                deadline = bt_deadline_from_now();
            continue;
        }
        if (++idle < yields) {
            sched_yield();
            continue;
        }
        uint64_t now = bt_time_ns();
        /* Every 50 ms, progress elsewhere or not (other ops of the launch may move while
         * this one's peer is down). A peer that failed and stays keeps its sockets open:
         * only the board tells. The op comes back at the proxy's next round; the caller
         * names the peer. */
        if (now >= check && !atomic_load_explicit(&op->args.cancel, memory_order_relaxed)) {
            check = now + BT_PEER_CHECK_NS;
            if (moved)
                stalled_since = now;
            moved = 0;
            if ((ctx->peer_down && ctx->peer_down(ctx->live_arg, peer)) ||
                (ctx->peer_lost && ctx->peer_lost(ctx->live_arg, peer, now - stalled_since)))
                bt_proxy_cancel(&op->args);
        }
        if (now > deadline && !timed_out) {
            BT_WARN("network op with rank %d timed out: stage %s, %llu of %llu steps done", peer,
                    __atomic_load_n(&op->args.subs[0].stage, __ATOMIC_RELAXED),
                    (unsigned long long)__atomic_load_n(&op->args.subs[0].done, __ATOMIC_RELAXED),
                    (unsigned long long)op->args.subs[0].nsteps);
            /* given up: the proxy hands it back at its next round, then it is freed below */
            bt_proxy_cancel(&op->args);
            timed_out = 1;
            deadline = now + 1000000000ull;
        } else if (now > deadline) {
            BT_INFO(BT_LOG_NET,
                    "network op %p with rank %d not handed back 1 s after its "
                    "timeout: left to the proxy",
                    (void *)op, peer);
            return BT_ERR_REMOTE;
        }
        if (block && block(arg))
            continue; /* it waited on the sockets (bounded) */
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    bt_status_t st = timed_out ? BT_ERR_REMOTE : op->args.status;
    op->release(op);
    return st;
}

void bt_transport_op_cancel(struct bt_transport_op *op)
{
    bt_proxy_cancel(&op->args);
}

int bt_transport_op_failed(const struct bt_transport_op *op)
{
    return op_complete(op) && op->args.status != BT_OK;
}

int bt_transport_op_test(struct bt_transport_op *op, bt_status_t *st)
{
    if (!op_complete(op))
        return 0;
    *st = op->args.status;
    op->release(op);
    return 1;
}
