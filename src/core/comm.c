/*
 * The communicator object: the registry of live ones (entry points check handles against
 * it), its allocation and its end (free, abort, revoke), and its errors seen in the
 * background. Its init is core/init.c; split and shrink make new ones in core/split.c.
 */
#include "core/comm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arrival.h"
#include "core/devcomm.h"
#include "core/rma.h"
#include "core/watch.h"
#include "core/window.h"
#include "transport/transport.h"
#include "util/array.h"

/* ---- registry of live communicators ------------------------------------------------ */

/* Entry points check a handle against this set before touching it, so a call on a
 * destroyed communicator gets an error instead of reading freed memory. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bt_ptrs registry;            /* every live communicator */
static _Atomic unsigned registry_removals; /* changed under the lock by every removal */

/* What this thread found in the registry since its last removal: a collective checks its
 * handle two or three times (the entry point, the group's end), so a thread driving eight
 * ranks made six trips through the lock per call of each rank. A communicator found live
 * stays so until something is removed; a thread that sees the count of removals unchanged
 * needs no lock for the ones it remembers. (Taking a launch's hold, bt_comm_acquire, keeps
 * the lock: an abort on another thread waits for the holds it can see, then frees.) */
#define SEEN_MAX 16
static __thread struct {
    unsigned removals;
    int n, next;
    const struct bt_comm *c[SEEN_MAX];
} seen;

/* Forgets what this thread saw if anything was removed since. */
static void seen_update(void)
{
    unsigned r = atomic_load_explicit(&registry_removals, memory_order_acquire);
    if (seen.removals != r) {
        seen.removals = r;
        seen.n = 0;
    }
}

static int seen_live(const struct bt_comm *c)
{
    seen_update();
    for (int i = 0; i < seen.n; i++)
        if (seen.c[i] == c)
            return 1;
    return 0;
}

/* Under registry_lock: c was found live. */
static void seen_add(const struct bt_comm *c)
{
    seen_update();
    if (seen.n < SEEN_MAX) {
        seen.c[seen.n++] = c;
    } else {
        seen.c[seen.next] = c;
        seen.next = (seen.next + 1) % SEEN_MAX;
    }
}

static int registry_add(struct bt_comm *c)
{
    pthread_mutex_lock(&registry_lock);
    int rc = bt_ptrs_add(&registry, c);
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

static void registry_remove(struct bt_comm *c)
{
    pthread_mutex_lock(&registry_lock);
    bt_ptrs_remove(&registry, c);
    atomic_fetch_add_explicit(&registry_removals, 1, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
}

/* Under registry_lock: c is in the registry and usable. */
static int registry_has(const struct bt_comm *c)
{
    int found = 0;
    for (int i = 0; i < registry.n && !found; i++)
        found = registry.p[i] == c;
    return found && c->magic == BT_COMM_MAGIC;
}

int bt_comm_is_live(const struct bt_comm *c)
{
    if (seen_live(c))
        return 1;
    pthread_mutex_lock(&registry_lock);
    int found = registry_has(c);
    if (found)
        seen_add(c);
    pthread_mutex_unlock(&registry_lock);
    return found;
}

void bt_comm_lsa(const struct bt_comm *c, int *base, int *size)
{
    /* the runs of consecutive ranks on one host: each host one run, every run as long */
    int run = 0, uniform = 1;
    for (int r = 0, start = 0; r < c->nranks && uniform; r++) {
        int end = r + 1 == c->nranks || c->peers[r + 1].host_hash != c->peers[r].host_hash;
        if (!end)
            continue;
        int len = r + 1 - start;
        if (run == 0)
            run = len;
        uniform = len == run;
        for (int q = r + 1; q < c->nranks && uniform; q++) /* the host comes back later */
            uniform = c->peers[q].host_hash != c->peers[r].host_hash;
        start = r + 1;
    }
    if (!uniform || run < 1)
        run = 1;
    *base = c->rank - c->rank % run;
    *size = run;
}

int bt_comm_nonblocking(const struct bt_comm *c)
{
    return bt_comm_is_live(c) ? !c->config.blocking : -1;
}

int bt_comm_acquire(struct bt_comm *c)
{
    pthread_mutex_lock(&registry_lock);
    int ok = registry_has(c) && !c->abort_flag;
    if (ok)
        atomic_fetch_add_explicit(&c->active_launches, 1, memory_order_acq_rel);
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

void bt_comm_release(struct bt_comm *c)
{
    atomic_fetch_sub_explicit(&c->active_launches, 1, memory_order_acq_rel);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

bt_status_t bt_comm_alloc(int nranks, int rank, struct bt_comm **comm_p)
{
    struct bt_comm *c = calloc(1, sizeof(*c));
    if (!c) {
        BT_WARN("out of memory allocating a communicator");
        return BT_ERR_SYSTEM;
    }
    c->magic = BT_COMM_MAGIC;
    c->rank = rank;
    c->nranks = nranks;
    c->cuda_dev = -1;
    c->config.blocking = 1;
    pthread_mutex_init(&c->ops_lock, NULL);
    pthread_mutex_init(&c->win_lock, NULL);
    if (registry_add(c) != 0) {
        free(c);
        return BT_ERR_SYSTEM;
    }
    *comm_p = c;
    return BT_OK;
}

/* Until no launch uses the comm (each sees the abort flag within a few ms). */
static void wait_no_launch(struct bt_comm *comm)
{
    while (atomic_load_explicit(&comm->active_launches, memory_order_acquire) > 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Comm's state on executor `kind`, or NULL: any thread (published whole at its creation). */
static void *exec_state(const struct bt_comm *comm, int kind)
{
    return __atomic_load_n(&comm->exec[kind], __ATOMIC_ACQUIRE);
}

bt_status_t bt_comm_async_error(struct bt_comm *comm)
{
    bt_status_t st = (bt_status_t)atomic_load_explicit(&comm->async_error, memory_order_acquire);
    /* a revoked comm's work was aborted on purpose: not an error to report */
    for (int k = 0; k < BT_EXEC_KINDS && st == BT_OK; k++) {
        void *state = exec_state(comm, k);
        if (!state || !bt_exec_of(k)->error ||
            atomic_load_explicit(&comm->revoked, memory_order_acquire))
            continue;
        st = bt_exec_of(k)->error(state); /* a kernel that met an abort or timeout */
        if (st != BT_OK)
            bt_comm_set_async_error(comm, st);
    }
    return st;
}

/* Work of the executors in flight that waits on peers ends with an error. Any thread. */
static void abort_execs(struct bt_comm *comm)
{
    bt_devcomm_abort(comm); /* device-API kernels that poll the flag stop waiting */
    bt_rma_abort(comm);     /* streams waiting on one-sided signals go on */
    for (int k = 0; k < BT_EXEC_KINDS; k++) {
        void *state = exec_state(comm, k);
        if (state && bt_exec_of(k)->abort)
            bt_exec_of(k)->abort(state);
    }
}

void bt_comm_abort_signal(struct bt_comm *comm)
{
    /* Under the registry lock, so no launch acquires the comm after this point. */
    pthread_mutex_lock(&registry_lock);
    __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&registry_lock);
    abort_execs(comm); /* kernels waiting on peers end with an error */
    /* A non-blocking init writes comm->bs in its own thread; its waits see the flag. */
    if (atomic_load_explicit(&comm->busy, memory_order_acquire) != BT_BUSY_INIT && comm->bs)
        bt_bootstrap_abort(comm->bs);
    /* A collective stuck in another thread sees the flag within a few ms and returns;
     * only then may the caller free what it uses. */
    wait_no_launch(comm);
    bt_comm_wait_idle(comm);
    /* An init that never completed: a root this process runs for it would wait for ranks
     * until BOOTSTRAP_TIMEOUT. */
    if (!comm->init_done)
        bt_bootstrap_root_cancel(comm->unique_id);
}

void bt_comm_wait_idle(struct bt_comm *comm)
{
    while (bt_comm_busy(comm)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void bt_comm_revoke(struct bt_comm *comm)
{
    pthread_mutex_lock(&registry_lock);
    int was = atomic_exchange(&comm->revoked, 1); /* launches from here on fail their gate */
    if (!was)
        __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&registry_lock);
    if (was)
        return;
    BT_INFO(BT_LOG_INIT, "comm %p rank %d: revoked - its operations stop", (void *)comm,
            comm->rank);
    /* Its kernels end with an error (the CUDA state stays aborted; bt_comm_free waits for
     * them); no device-wide sync here, which would wait on other comms' kernels too. */
    abort_execs(comm);
    wait_no_launch(comm);
    /* The proxy completes the stopped launches' ops and takes no more; it and the
     * connectors stay until free. */
    bt_transport_ctx_stop(&comm->tctx);
    /* Only now, with nothing running, may waits on this comm succeed again: the bootstrap
     * carries the shrink that follows, whose result ncclCommGetAsyncError then reports (the
     * failure that led here is handled). */
    atomic_store_explicit(&comm->async_error, 0, memory_order_release);
    __atomic_store_n(&comm->abort_flag, 0, __ATOMIC_RELEASE);
}

void bt_comm_set_async_error(struct bt_comm *comm, bt_status_t st)
{
    int expected = 0;
    atomic_compare_exchange_strong(&comm->async_error, &expected, (int)st);
}

/* Each executor's state: its work finished (the GPU watcher's last look after the kernels),
 * what the proxy moves for it handed back, then, once the proxy has ended (its threads use the
 * connectors), freed. */
static void execs_sync(struct bt_comm *comm)
{
    for (int k = 0; k < BT_EXEC_KINDS; k++)
        if (comm->exec[k] && bt_exec_of(k)->sync)
            bt_exec_of(k)->sync(comm->exec[k]);
    if (comm->exec[BT_EXEC_CUDA])
        bt_watch_remove(comm); /* after the kernels: its last look sees what they reported */
    for (int k = 0; k < BT_EXEC_KINDS; k++)
        if (comm->exec[k] && bt_exec_of(k)->drain)
            bt_exec_of(k)->drain(comm->exec[k]);
}

static void execs_destroy(struct bt_comm *comm)
{
    for (int k = 0; k < BT_EXEC_KINDS; k++) {
        if (comm->exec[k])
            bt_exec_of(k)->destroy(comm->exec[k]);
        __atomic_store_n(&comm->exec[k], NULL, __ATOMIC_RELEASE);
    }
}

bt_status_t bt_comm_suspend(struct bt_comm *comm)
{
    if (atomic_load_explicit(&comm->suspended, memory_order_acquire)) {
        BT_WARN("ncclCommSuspend: rank %d: communicator %p is suspended already", comm->rank,
                (void *)comm);
        return BT_ERR_INVALID_USAGE;
    }
    execs_sync(comm);
    bt_status_t st = bt_bootstrap_barrier(comm->bs);
    if (st != BT_OK) {
        BT_WARN("ncclCommSuspend: rank %d: the ranks did not all reach the suspend (error %d); "
                "nothing was released",
                comm->rank, (int)st);
        return st;
    }
    /* The proxy first: its threads use the connectors the executors free (it starts again
     * with the first network connector after the resume). */
    bt_transport_ctx_join(&comm->tctx);
    execs_destroy(comm);
    atomic_store_explicit(&comm->suspended, 1, memory_order_release);
    BT_INFO(BT_LOG_INIT, "rank %d: communicator %p suspended: its buffers are released", comm->rank,
            (void *)comm);
    return BT_OK;
}

bt_status_t bt_comm_resume(struct bt_comm *comm)
{
    if (!atomic_load_explicit(&comm->suspended, memory_order_acquire)) {
        BT_WARN("ncclCommResume: rank %d: communicator %p is not suspended", comm->rank,
                (void *)comm);
        return BT_ERR_INVALID_USAGE;
    }
    /* Nothing to make now: the next operation makes the executors' states, as the first did
     * (the GPU's collectively, every rank at the same operation). */
    atomic_store_explicit(&comm->suspended, 0, memory_order_release);
    return BT_OK;
}

uint64_t bt_comm_held(struct bt_comm *comm)
{
    int k = comm->cuda_dev >= 0 ? BT_EXEC_CUDA : BT_EXEC_HOST;
    void *state = __atomic_load_n(&comm->exec[k], __ATOMIC_ACQUIRE);
    return state && bt_exec_of(k)->held ? bt_exec_of(k)->held(state) : 0;
}

void bt_comm_free(struct bt_comm *comm)
{
    if (!comm)
        return;
    registry_remove(comm);
    execs_sync(comm);
    bt_devcomm_free_all(comm); /* their resource windows among the windows */
    bt_window_free_all(comm);
    bt_arrival_free(comm);
    /* The proxy first: its threads use the connectors the executors free. */
    bt_transport_ctx_join(&comm->tctx);
    execs_destroy(comm);
    bt_graph_channels_free(comm->channels, comm->nchannels);
    bt_transport_ctx_fini(&comm->tctx); /* after every connector: closes the network */
    free(comm->link_caps);
    bt_bootstrap_destroy(comm->bs);
    free(comm->peers);
    free(comm->probed_ns);
    free(comm->host);
    free(comm->custom_ops);
    pthread_mutex_destroy(&comm->ops_lock);
    pthread_mutex_destroy(&comm->win_lock);
    comm->magic = BT_COMM_DEAD;
    free(comm);
}
