/*
 * The CPU proxy core (docs/ARCHITECTURE.md, "The NET transport"): the generic machinery a transport
 * plugs its progress functions into. Two threads per proxy, never mixed:
 *
 *   "baton Service"  runs connection-control RPCs (bt_proxy_call) one at a time, in order;
 *                    blocks on a condition variable when it has nothing to do.
 *   "baton Progress" takes posted ops (struct bt_proxy_args) from a shared pool and calls
 *                    each one's progress function once per round until it reports done.
 *
 * The progress loop (one round):
 *   1. stop / abort?  -> complete every op (abort: BT_ERR_REMOTE) and exit.
 *   2. dump signal?   -> print every live proxy's ops to stderr (PROXY_DUMP_SIGNAL).
 *   3. call progress() of every active op once; an op that reports done or fails leaves the
 *      active list and then gets `complete` (release).
 *   4. with ops active, fetch newly posted ops only every PROGRESS_APPENDOP_FREQ rounds and
 *      only with pthread_mutex_trylock: a busy poster never stalls active progress.
 *      With nothing active, wait on the pool's condition variable (100 ms timed wait, so
 *      stop, abort and dump requests are seen): an idle proxy uses no CPU.
 *   5. a round that moved no counter and added no op ends with sched_yield().
 * A launching thread may run the rounds itself while it waits (bt_proxy_drive_*); the
 * progress thread then sleeps. run_lock makes sure one round runs at a time.
 *
 * Writing a progress function (the transport's side):
 *   - caller: the thread running the round (progress thread or a driver); it must not block (no
 * blocking locks, no waits, no bt_proxy_call). Do at most a few state transitions per sub and
 * return; "not ready" is simply returning with *done_p = 0. Set *done_p = 1 when every sub is
 * finished.
 *   - the counters of struct bt_proxy_sub and `stage` are written only by the progress
 *     function, and ALWAYS through bt_proxy_sub_set() / bt_proxy_sub_stage() (relaxed atomic
 *     stores): bt_proxy_dump reads them from another thread while the op runs, with relaxed
 *     atomic loads. They are diagnostics and progress detection, not synchronization: any
 *     ordering with a peer (clear the slot's size, fence, then return the credit) is the
 *     transport's own business and uses its own release/acquire operations.
 *   - the proxy decides whether a round "did something" (for the yield) from the sum of
 *     the counters; a progress function that advances state without moving a counter should
 *     still move one when it makes real progress.
 *   - `stage` points to a string with static storage ("producer credit", "network
 *     completion", "consumer", ...): it is read by dumps at any time.
 *   - returning a status other than BT_OK / BT_IN_PROGRESS completes the op with that status
 *     and records it as the proxy's first error (bt_proxy_error) if it is the first one.
 */
#ifndef BT_PROXY_PROXY_H
#define BT_PROXY_PROXY_H

#include <stdatomic.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>

#include "util/status.h"

#define BT_PROXY_MAX_SUBS 32

struct bt_proxy;

/* One connector's share of an op. */
struct bt_proxy_sub {
    uint64_t nsteps; /* set by the poster */
    void *conn;      /* the transport's per-connector proxy state */
    int peer, channel;
    /*
     * Advanced only by the progress function, on the progress thread, with bt_proxy_sub_set
     * (relaxed atomic stores); bt_proxy_post zeroes them. The happens-before each one means:
     *   send: posted (credit given to the producer) -> transmitted (isend posted)
     *         -> done (test ok)
     *   recv: posted (irecv posted) -> received (test ok) -> flushed (visible to the consumer)
     *         -> transmitted (tail given to the consumer) -> done (consumer freed the slot)
     * A transport that has no separate flush leaves `flushed` equal to `received`.
     */
    uint64_t posted, received, flushed, transmitted, done;
    const char *stage; /* what it waits on now, for dumps; static storage */
};

struct bt_proxy_args;
/* caller: progress thread. *done_p = 1 when every sub is finished. */
typedef bt_status_t (*bt_proxy_progress_fn)(struct bt_proxy_args *args, int *done_p);

/* The descriptors whose readiness would move the op now (see net.h's pollfds); 0: none,
 * -1: the op can move now. */
typedef int (*bt_proxy_pollfds_fn)(struct bt_proxy_args *args, struct pollfd *fds, int max);

struct bt_proxy_args {
    bt_proxy_progress_fn progress;
    bt_proxy_pollfds_fn pollfds; /* may be NULL */
    int is_send;
    int nsubs;
    struct bt_proxy_sub subs[BT_PROXY_MAX_SUBS];
    void *user;           /* the poster's context */
    _Atomic int complete; /* set (release) by the proxy when progress reports done or fails */
    bt_status_t status;   /* valid once complete (acquire) */
    _Atomic int cancel;   /* bt_proxy_cancel */
    /* proxy-internal */
    struct bt_proxy_args *next;
    int finished; /* progress thread only */
};

/* A counter store the dump may read concurrently. caller: progress thread. */
static inline void bt_proxy_sub_set(uint64_t *counter, uint64_t value)
{
    __atomic_store_n(counter, value, __ATOMIC_RELAXED);
}

/* The stage text the dump shows for this sub. caller: progress thread. */
static inline void bt_proxy_sub_stage(struct bt_proxy_sub *sub, const char *stage)
{
    __atomic_store_n(&sub->stage, stage, __ATOMIC_RELAXED);
}

/*
 * Start a proxy's progress and service threads. `name` shows in logs and dumps (copied).
 * `abort_flag` (may be NULL) is read with acquire loads; once it is non-zero the progress
 * thread completes every op with BT_ERR_REMOTE (within ~100 ms even when idle) and stops;
 * later posts fail with BT_ERR_REMOTE. The service thread keeps running until destroy, so
 * teardown RPCs (close) still work after an abort. `cpus` (may be NULL): a cpulist the
 * threads are kept on, within the process's CPUs (a GPU's NUMA node); else they run where
 * the caller may (threads inherit it; helper threads the proxy starts inherit theirs).
 * caller: any thread.
 */
bt_status_t bt_proxy_create(const char *name, volatile int *abort_flag, const char *cpus,
                            struct bt_proxy **proxy_p);

/*
 * Hand an op to the progress thread. The caller fills progress, is_send, nsubs, subs[i]
 * (nsteps, conn, peer, channel) and user; post zeroes the counters, `complete` and `cancel`.
 * The proxy owns args until args->complete reads 1 with an acquire load (the caller may only
 * read the fields it filled, which the proxy never writes, and bt_proxy_cancel it); then
 * args->status is the op's result. Returns BT_ERR_INVALID_ARG for a malformed op (args
 * untouched) and BT_ERR_REMOTE when the proxy has stopped (aborted); in that case args is
 * already complete with that status and back with the caller.
 * caller: any thread but the proxy's progress thread.
 */
bt_status_t bt_proxy_post(struct bt_proxy *proxy, struct bt_proxy_args *args);

/*
 * Ask the proxy to give a posted op back without finishing it: it completes with
 * BT_ERR_REMOTE at its next progress round (or finishes first). For a poster that will not
 * wait for the rest (its peer is down, or its launch failed); it still waits for complete
 * before it frees args. caller: the poster.
 */
void bt_proxy_cancel(struct bt_proxy_args *args);

/*
 * Run fn(arg) on the service thread and wait for its result (connection control RPC). Calls
 * run one at a time in the order they arrive. Called from the service thread itself (a
 * nested RPC), fn runs at once. caller: any thread; not from a progress function.
 */
bt_status_t bt_proxy_call(struct bt_proxy *proxy, bt_status_t (*fn)(void *), void *arg);

/*
 * Let the calling thread run the proxy's progress rounds while it waits for its own ops, so
 * the bytes of a collective need no hand-off between threads (on a busy host the progress
 * thread would have to be scheduled for every step). Between begin and end the progress
 * thread sleeps and posts do not wake it; bt_proxy_drive runs one round if no one else is
 * running one (trylock) and returns whether anything moved. At end, ops still active go back
 * to the progress thread. Several threads may drive one proxy. Abort and stop are still
 * handled by the progress thread (within its idle wait, ~100 ms).
 * caller: any thread but the proxy's own; begin/end paired.
 */
void bt_proxy_drive_begin(struct bt_proxy *proxy);
int bt_proxy_drive(struct bt_proxy *proxy);
void bt_proxy_drive_end(struct bt_proxy *proxy);
/*
 * For a driver that found nothing to do: the descriptors its active ops wait on (at most
 * max). Returns -1 when blocking on them could miss work (ops posted but not yet active,
 * an active op that cannot say, or another thread running a round), else the count.
 */
int bt_proxy_drive_pollfds(struct bt_proxy *proxy, struct pollfd *fds, int max);

/* The first error a progress function returned (BT_OK if none). caller: any thread. */
bt_status_t bt_proxy_error(struct bt_proxy *proxy);

/*
 * Print every active op of the proxy: channel, peer, direction, the five counters, stage.
 * Safe while the ops run (it does not disturb them). caller: any thread.
 */
void bt_proxy_dump(struct bt_proxy *proxy, FILE *out);

/* Install the PROXY_DUMP_SIGNAL handler once per process (no-op when the param is 0).
 * caller: any thread (proxy creation, communicator init). */
void bt_proxy_dump_signal_init(void);

/* How many PROXY_DUMP_SIGNAL signals arrived so far: a waiting launch that sees it change
 * prints its own hang report (exec/host). caller: any thread. */
unsigned bt_proxy_dump_generation(void);

/* bt_proxy_dump of every live proxy of the process. caller: any thread. */
void bt_proxy_dump_all(FILE *out);

/*
 * Stop and join the threads; NULL ok. Ops still posted are completed with
 * BT_ERR_INVALID_USAGE (the owner should wait for its ops first); queued calls still run.
 * caller: any thread but the proxy's own.
 */
void bt_proxy_destroy(struct bt_proxy *proxy);

/* Only the first half of destroy: every op completes (BT_ERR_INVALID_USAGE), later posts
 * fail and the progress thread ends; the ops stay readable and the proxy allocated until
 * bt_proxy_destroy (ncclCommRevoke). NULL ok. caller: the owner, as destroy. */
void bt_proxy_stop(struct bt_proxy *proxy);

#endif
