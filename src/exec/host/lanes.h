/*
 * The host executor: runs the works queued on a set of lanes (of one or several
 * communicators) to completion in the calling thread. Each pass tries the next step of
 * every lane's head work; a step runs only when all its connectors are ready, so a lane
 * waiting on a peer never stops the others (one thread can drive all ranks of a group).
 * When a pass makes no progress the thread spins, then yields, then sleeps briefly, so
 * many ranks on few cores still progress. Where CPUs are to spare, helper threads take
 * shares of the lanes while they move (bt_wait_policy.threads).
 */
#ifndef BT_EXEC_HOST_LANES_H
#define BT_EXEC_HOST_LANES_H

#include "coll/work.h"
#include "util/status.h"

/* How a thread waits when no lane can progress: `spin` polls, then `yields` sched_yield
 * calls, then short sleeps. With more ranks than cores, spinning only delays the rank
 * we wait for, so the caller passes spin = 0 then. */
struct bt_wait_policy {
    uint64_t spin;
    uint64_t yields;
    /* Called when a pass over the lanes moved nothing (NULL: none): runs other work the
     * lanes wait on, such as the proxies' network progress (exec/host/proxied.h); returns
     * whether it moved anything. */
    int (*poll)(void *arg);
    /* Called instead of sleeping, once the yields are spent (NULL: none): blocks until the
     * network can move, bounded so abort and deadline checks still run; returns 0 if it
     * could not block, and the usual sleep follows. Blocking only after the yields: waking
     * a blocked thread costs tens of microseconds on virtual machines. */
    int (*block)(void *arg);
    void *arg; /* poll's and block's */
    /* After this long without progress (0: never), print once which work waits on what,
     * then call hang(w) for each stuck work (NULL: none) to add what the caller knows. */
    uint64_t hang_ns;
    void (*hang)(const struct bt_work *w);
    /* Checked with the abort flags: nonzero asks for the same report now (the dump signal,
     * PROXY_DUMP_SIGNAL). NULL: never. */
    int (*report_now)(void);
    /* Asked every ~50 ms of a stall for each peer a stuck work waits on (stalled_ns: how long
     * the launch has made no progress): nonzero when that peer's process is gone (it has
     * logged why); the launch then fails at once with BT_ERR_REMOTE instead of waiting out
     * the timeout. NULL: never. */
    int (*peer_gone)(const struct bt_work *w, int peer, uint64_t stalled_ns);
    /* Called every ~50 ms of a stall for each stuck work (NULL: never), before peer_gone:
     * what the caller does meanwhile (answering other ranks' questions, core/arrival.h). */
    void (*stalled)(const struct bt_work *w);
    /* Threads that drive the lanes (the caller and threads - 1 helpers, helpers.h) while they
     * progress; <= 1: the caller alone. Only for lanes that share nothing but fences: no
     * poll (the proxy's steps), no link caps. */
    int threads;
};

/* Append w to lane ln (works of a lane run in order). */
static inline void bt_lane_push(struct bt_lane *ln, struct bt_work *w)
{
    w->next = NULL;
    if (ln->tail)
        ln->tail->next = w;
    else
        ln->head = w;
    ln->tail = w;
}

/* Run until every lane is empty. On failure (timeout, abort) the lanes keep the works
 * that did not finish; the caller discards them. The failing work is stored in *failed_p
 * (may be NULL). With wait->threads > 1 the order of lanes[] may change. */
bt_status_t bt_host_exec(struct bt_lane **lanes, int nlanes, const struct bt_wait_policy *wait,
                         struct bt_work **failed_p);

/* Run the lanes while they move: until every lane is empty, or no step has run for `spin`
 * polls and `yields` sched_yield calls, or a blocked work's communicator is aborted. No
 * reports, no deadline: the fast path a helper thread runs (helpers.h). */
void bt_host_exec_while_moving(struct bt_lane *const *lanes, int nlanes, uint64_t spin,
                               uint64_t yields);

/* Run one primitive now, if all its connectors are ready; returns 1 if it ran. Exposed for
 * unit tests of the FIFO logic. */
int bt_host_prim_try(const struct bt_work *w, const struct bt_prim *p);

#endif
