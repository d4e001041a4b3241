/*
 * The proxy's threads: the progress loop over the shared op pool, and the service thread
 * that runs connection-control RPCs. See proxy.h for the loop and proxy_impl.h for the locks.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/proxy_impl.h"
#include "util/param.h"
#include "util/time.h"

/* How long an idle thread sleeps before it looks at abort and dump requests again (a post
 * and a stop wake it at once). Each wake-up costs CPU (~0.1 ms under a hypervisor). */
#define BT_PROXY_IDLE_WAIT_NS 500000000ll

static int proxy_aborted(const struct bt_proxy *p)
{
    return p->abort_flag && __atomic_load_n(p->abort_flag, __ATOMIC_ACQUIRE) != 0;
}

/* Record the first error of the proxy; later ones only log. */
static void proxy_set_error(struct bt_proxy *p, bt_status_t st)
{
    int expected = BT_OK;
    atomic_compare_exchange_strong_explicit(&p->error, &expected, (int)st, memory_order_relaxed,
                                            memory_order_relaxed);
}

/* Give an op back to its poster. The op must already be off every proxy list. */
static void proxy_op_complete(struct bt_proxy_args *op, bt_status_t st)
{
    op->next = NULL;
    op->status = st;
    /* status before complete: the poster reads complete (acquire), then status */
    atomic_store_explicit(&op->complete, 1, memory_order_release);
}

/* Sum of an op's counters, to tell whether a call moved anything. caller: run_lock holder. */
static uint64_t proxy_op_progress_sum(const struct bt_proxy_args *op)
{
    uint64_t s = 0;
    for (int i = 0; i < op->nsubs; i++) {
        const struct bt_proxy_sub *sub = &op->subs[i];
        s += sub->posted + sub->received + sub->flushed + sub->transmitted + sub->done;
    }
    return s;
}

/* Complete a detached list of ops with `st`. */
static void proxy_list_complete(struct bt_proxy_args *list, bt_status_t st)
{
    while (list) {
        struct bt_proxy_args *next = list->next;
        proxy_op_complete(list, list->finished ? list->status : st);
        list = next;
    }
}

/* Append a detached list of posted ops to the active list. caller: run_lock holder, holding
 * active_lock. */
static int proxy_activate(struct bt_proxy *p, struct bt_proxy_args *list,
                          struct bt_proxy_args *tail)
{
    if (!list)
        return 0;
    int n = 0;
    for (struct bt_proxy_args *op = list; op; op = op->next)
        n++;
    if (p->active_tail)
        p->active_tail->next = list;
    else
        p->active = list;
    p->active_tail = tail;
    atomic_fetch_add_explicit(&p->nactive, n, memory_order_relaxed);
    return n;
}

/* Unlink the finished ops from the active list into a detached list. caller: run_lock
 * holder, holding active_lock. */
static struct bt_proxy_args *proxy_remove_finished(struct bt_proxy *p)
{
    struct bt_proxy_args *done = NULL, **done_tail = &done, *prev = NULL;
    int n = 0;
    for (struct bt_proxy_args *op = p->active; op;) {
        struct bt_proxy_args *next = op->next;
        if (op->finished) {
            if (prev)
                prev->next = next;
            else
                p->active = next;
            if (p->active_tail == op)
                p->active_tail = prev;
            op->next = NULL;
            *done_tail = op;
            done_tail = &op->next;
            n++;
        } else {
            prev = op;
        }
        op = next;
    }
    atomic_fetch_sub_explicit(&p->nactive, n, memory_order_relaxed);
    return done;
}

/* One call of every active op's progress function. Returns the number of ops that finished;
 * *moved is set when a counter moved. caller: run_lock holder. */
static int proxy_progress_ops(struct bt_proxy *p, int *moved)
{
    int nfinished = 0;
    /* Walking the list without active_lock is fine: only the run_lock holder changes it. */
    for (struct bt_proxy_args *op = p->active; op; op = op->next) {
        if (op->finished) {
            nfinished++;
            continue;
        }
        if (atomic_load_explicit(&op->cancel, memory_order_relaxed)) {
            op->status = BT_ERR_REMOTE; /* the poster gave up on it: not the proxy's error */
            op->finished = 1;
            nfinished++;
            *moved = 1;
            continue;
        }
        uint64_t before = proxy_op_progress_sum(op);
        int done = 0;
        bt_status_t st = op->progress(op, &done);
        if (proxy_op_progress_sum(op) != before)
            *moved = 1;
        if (st != BT_OK && st != BT_IN_PROGRESS) {
            BT_TRACE(BT_LOG_PROXY, "proxy %s: op %p failed -> %d", p->name, (void *)op, (int)st);
            proxy_set_error(p, st);
            op->status = st;
            op->finished = 1;
        } else if (done) {
            op->status = BT_OK;
            op->finished = 1;
        }
        if (op->finished) {
            nfinished++;
            *moved = 1;
        }
    }
    return nfinished;
}

/* Whether a launching thread drives the proxy now (bt_proxy_drive_begin). */
static int proxy_driven(struct bt_proxy *p)
{
    return atomic_load_explicit(&p->drivers, memory_order_acquire) > 0;
}

/* Nothing active, or a launching thread runs the rounds: sleep until an op is posted or the
 * driver leaves (timed, so stop, abort and dumps are seen). `linger`: the thread worked since
 * its last sleep. caller: progress, without run_lock. */
static void proxy_wait_for_ops(struct bt_proxy *p, int linger)
{
    /* Collectives often come back to back: after work, look for the next op a little while
     * (yielding the core) before sleeping, so it does not pay a condition-variable wake-up.
     * Not after a timed wake that found nothing: an idle communicator would spin a linger
     * every BT_PROXY_IDLE_WAIT_NS. */
    uint64_t linger_ns = linger ? (uint64_t)bt_param_proxy_linger_us() * 1000u : 0;
    if (linger_ns && !proxy_driven(p)) {
        uint64_t end = bt_time_ns() + linger_ns;
        for (;;) {
            pthread_mutex_lock(&p->pool_lock);
            int ready = p->pending != NULL || atomic_load_explicit(&p->stop, memory_order_acquire);
            pthread_mutex_unlock(&p->pool_lock);
            if (ready || proxy_driven(p) || bt_time_ns() > end || proxy_aborted(p))
                break;
            sched_yield();
        }
    }
    pthread_mutex_lock(&p->pool_lock);
    if ((!p->pending || proxy_driven(p)) && !atomic_load_explicit(&p->stop, memory_order_acquire)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long ns = ts.tv_nsec + BT_PROXY_IDLE_WAIT_NS;
        ts.tv_sec += ns / 1000000000ll;
        ts.tv_nsec = ns % 1000000000ll;
        pthread_cond_timedwait(&p->pool_cond, &p->pool_lock, &ts);
    }
    pthread_mutex_unlock(&p->pool_lock);
}

/* Stop or abort: complete every op, refuse later posts, and end the loop. caller: progress,
 * holding run_lock. */
static void proxy_stop_ops(struct bt_proxy *p, bt_status_t st)
{
    pthread_mutex_lock(&p->active_lock);
    struct bt_proxy_args *active = p->active;
    p->active = p->active_tail = NULL;
    atomic_store_explicit(&p->nactive, 0, memory_order_relaxed);
    pthread_mutex_lock(&p->pool_lock);
    struct bt_proxy_args *pending = p->pending;
    p->pending = p->pending_tail = NULL;
    p->stopped = 1;
    p->stop_status = st;
    pthread_mutex_unlock(&p->pool_lock);
    pthread_mutex_unlock(&p->active_lock);
    int n = 0;
    for (struct bt_proxy_args *op = active; op; op = op->next)
        n += !op->finished;
    for (struct bt_proxy_args *op = pending; op; op = op->next)
        n++;
    if (n)
        BT_INFO(BT_LOG_PROXY, "proxy %s: %s, completing %d ops with status %d", p->name,
                st == BT_ERR_REMOTE ? "abort" : "stop", n, (int)st);
    proxy_list_complete(active, st);
    proxy_list_complete(pending, st);
}

/*
 * One progress round: every active op's progress function once; finished ops go back to
 * their posters; every PROGRESS_APPENDOP_FREQ rounds (or when nothing is active) the posted
 * ops join the active list. Locks are tried, never waited for: a busy lock defers its part
 * to a later round. Returns whether anything moved. caller: holder of run_lock.
 */
static int proxy_round(struct bt_proxy *p)
{
    int64_t freq = bt_param_progress_appendop_freq();
    int moved = 0, added = 0;
    int nfinished = p->active ? proxy_progress_ops(p, &moved) : 0;
    int append = ++p->rounds >= freq || !p->active;
    if ((nfinished || append) && pthread_mutex_trylock(&p->active_lock) == 0) {
        struct bt_proxy_args *done = nfinished ? proxy_remove_finished(p) : NULL;
        /* A poster holding pool_lock makes us retry next round, not wait. */
        if (append && pthread_mutex_trylock(&p->pool_lock) == 0) {
            added = proxy_activate(p, p->pending, p->pending_tail);
            p->pending = p->pending_tail = NULL;
            pthread_mutex_unlock(&p->pool_lock);
            p->rounds = 0;
        }
        pthread_mutex_unlock(&p->active_lock);
        proxy_list_complete(done, BT_OK);
    }
    return moved || added;
}

static void *proxy_progress_main(void *arg)
{
    struct bt_proxy *p = arg;
    int worked = 1;
    for (;;) {
        pthread_mutex_lock(&p->run_lock);
        if (proxy_aborted(p)) {
            proxy_stop_ops(p, BT_ERR_REMOTE);
            pthread_mutex_unlock(&p->run_lock);
            break;
        }
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) {
            proxy_stop_ops(p, BT_ERR_INVALID_USAGE);
            pthread_mutex_unlock(&p->run_lock);
            break;
        }
        bt_proxy_dump_poll();
        int moved = 0;
        int idle = proxy_driven(p);
        if (!idle && !p->active) {
            pthread_mutex_lock(&p->pool_lock);
            idle = !p->pending;
            pthread_mutex_unlock(&p->pool_lock);
        }
        if (!idle)
            moved = proxy_round(p);
        pthread_mutex_unlock(&p->run_lock);
        if (idle) {
            proxy_wait_for_ops(p, worked);
            worked = 0;
            continue;
        }
        worked = 1;
        if (!moved)
            sched_yield();
    }
    return NULL;
}

void bt_proxy_drive_begin(struct bt_proxy *p)
{
    atomic_fetch_add_explicit(&p->drivers, 1, memory_order_acq_rel);
}

int bt_proxy_drive(struct bt_proxy *p)
{
    if (pthread_mutex_trylock(&p->run_lock) != 0)
        return 0;
    int moved = 0;
    if (!atomic_load_explicit(&p->stop, memory_order_acquire) && !proxy_aborted(p)) {
        moved = proxy_round(p);
        pthread_mutex_unlock(&p->run_lock);
        return moved;
    }
    pthread_mutex_unlock(&p->run_lock);
    /* Stop and abort complete the ops on the progress thread: wake it now rather than at
     * the end of its idle wait. */
    pthread_mutex_lock(&p->pool_lock);
    pthread_cond_signal(&p->pool_cond);
    pthread_mutex_unlock(&p->pool_lock);
    return 0;
}

int bt_proxy_drive_pollfds(struct bt_proxy *p, struct pollfd *fds, int max)
{
    if (pthread_mutex_trylock(&p->run_lock) != 0)
        return -1;
    int n = 0;
    pthread_mutex_lock(&p->pool_lock);
    int pending = p->pending != NULL;
    pthread_mutex_unlock(&p->pool_lock);
    if (pending)
        n = -1;
    for (struct bt_proxy_args *op = p->active; op && n >= 0; op = op->next) {
        if (op->finished)
            continue;
        if (!op->pollfds) {
            n = -1;
            break;
        }
        int k = op->pollfds(op, fds + n, max - n);
        if (k < 0) { /* work now */
            n = -1;
            break;
        }
        n += k;
        if (n >= max)
            n = -1; /* some may not fit */
    }
    pthread_mutex_unlock(&p->run_lock);
    return n;
}

void bt_proxy_drive_end(struct bt_proxy *p)
{
    if (atomic_fetch_sub_explicit(&p->drivers, 1, memory_order_acq_rel) != 1)
        return;
    /* Ops the driver did not finish (an error path) go back to the progress thread. */
    pthread_mutex_lock(&p->pool_lock);
    if (p->pending || atomic_load_explicit(&p->nactive, memory_order_relaxed) > 0)
        pthread_cond_signal(&p->pool_cond);
    pthread_mutex_unlock(&p->pool_lock);
}

static void *proxy_service_main(void *arg)
{
    struct bt_proxy *p = arg;
    pthread_mutex_lock(&p->svc_lock);
    for (;;) {
        while (!p->calls && !p->svc_stop)
            pthread_cond_wait(&p->svc_cond, &p->svc_lock);
        struct bt_proxy_call_req *req = p->calls;
        if (!req)
            break; /* stop, and every queued call has run */
        p->calls = req->next;
        if (!p->calls)
            p->calls_tail = NULL;
        pthread_mutex_unlock(&p->svc_lock);
        bt_status_t st = req->fn(req->arg);
        pthread_mutex_lock(&p->svc_lock);
        req->status = st;
        req->done = 1;
        pthread_cond_broadcast(&p->done_cond);
    }
    pthread_mutex_unlock(&p->svc_lock);
    return NULL;
}

bt_status_t bt_proxy_post(struct bt_proxy *p, struct bt_proxy_args *args)
{
    if (!p || !args || !args->progress || args->nsubs < 0 || args->nsubs > BT_PROXY_MAX_SUBS) {
        BT_WARN("bt_proxy_post: invalid op (proxy %p, args %p, nsubs %d)", (void *)p, (void *)args,
                args ? args->nsubs : -1);
        return BT_ERR_INVALID_ARG;
    }
    for (int i = 0; i < args->nsubs; i++) {
        struct bt_proxy_sub *sub = &args->subs[i];
        sub->posted = sub->received = sub->flushed = sub->transmitted = sub->done = 0;
        sub->stage = "queued";
    }
    args->next = NULL;
    args->finished = 0;
    args->status = BT_OK;
    atomic_store_explicit(&args->complete, 0, memory_order_relaxed);
    atomic_store_explicit(&args->cancel, 0, memory_order_relaxed);

    pthread_mutex_lock(&p->pool_lock);
    /* aborted: refused at once, even before the idle progress thread wakes to see it */
    if (p->stopped || proxy_aborted(p)) {
        bt_status_t st = p->stopped ? p->stop_status : BT_ERR_REMOTE;
        pthread_mutex_unlock(&p->pool_lock);
        proxy_op_complete(args, st);
        return BT_ERR_REMOTE;
    }
    /* the op's fields before the link: the progress thread takes it under pool_lock */
    if (p->pending_tail)
        p->pending_tail->next = args;
    else
        p->pending = args;
    p->pending_tail = args;
    if (!proxy_driven(p)) /* a driver takes it itself: no wake-up */
        pthread_cond_signal(&p->pool_cond);
    pthread_mutex_unlock(&p->pool_lock);
    BT_TRACE(BT_LOG_PROXY, "proxy %s: op %p posted, %s, %d subs", p->name, (void *)args,
             args->is_send ? "send" : "recv", args->nsubs);
    return BT_OK;
}

void bt_proxy_cancel(struct bt_proxy_args *args)
{
    atomic_store_explicit(&args->cancel, 1, memory_order_relaxed);
}

bt_status_t bt_proxy_call(struct bt_proxy *p, bt_status_t (*fn)(void *), void *arg)
{
    if (!p || !fn)
        return BT_ERR_INVALID_ARG;
    if (pthread_equal(pthread_self(), p->service_thread))
        return fn(arg); /* nested RPC: queueing it would wait on ourselves */
    struct bt_proxy_call_req req = {.fn = fn, .arg = arg, .status = BT_OK};
    pthread_mutex_lock(&p->svc_lock);
    if (p->svc_stop) {
        pthread_mutex_unlock(&p->svc_lock);
        BT_WARN("proxy %s: call after the service thread stopped", p->name);
        return BT_ERR_INVALID_USAGE;
    }
    if (p->calls_tail)
        p->calls_tail->next = &req;
    else
        p->calls = &req;
    p->calls_tail = &req;
    pthread_cond_signal(&p->svc_cond);
    while (!req.done)
        pthread_cond_wait(&p->done_cond, &p->svc_lock);
    pthread_mutex_unlock(&p->svc_lock);
    return req.status;
}

bt_status_t bt_proxy_error(struct bt_proxy *p)
{
    return p ? (bt_status_t)atomic_load_explicit(&p->error, memory_order_relaxed) : BT_OK;
}

static int proxy_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc == 0)
        rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

/* Stop the service thread once its queued calls have run, and join it. */
static void proxy_stop_service(struct bt_proxy *p)
{
    pthread_mutex_lock(&p->svc_lock);
    p->svc_stop = 1;
    pthread_cond_signal(&p->svc_cond);
    pthread_mutex_unlock(&p->svc_lock);
    pthread_join(p->service_thread, NULL);
}

/* Free the proxy and every lock and condition but pool_cond (whose init can fail). */
static void proxy_free(struct bt_proxy *p)
{
    pthread_cond_destroy(&p->done_cond);
    pthread_cond_destroy(&p->svc_cond);
    pthread_mutex_destroy(&p->svc_lock);
    pthread_mutex_destroy(&p->pool_lock);
    pthread_mutex_destroy(&p->active_lock);
    pthread_mutex_destroy(&p->run_lock);
    free(p);
}

/* Thread attributes that keep a thread on `cpus` (a /sys cpulist, "0-31,64-95") within the
 * CPUs this process may run on. 0 when there is nothing to set (no list, a list that does
 * not parse, or no CPU in common): the thread then runs where its creator may. */
static int attr_on_cpus(pthread_attr_t *attr, const char *cpus)
{
    cpu_set_t want, allowed;
    if (!cpus || !*cpus || sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return 0;
    CPU_ZERO(&want);
    for (const char *s = cpus; *s && *s != '\n';) {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s)
            return 0;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        for (long c = lo < 0 ? 0 : lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &want);
        if (*end && *end != ',' && *end != '\n')
            return 0;
        s = *end == ',' ? end + 1 : end;
    }
    CPU_AND(&want, &want, &allowed);
    if (CPU_COUNT(&want) == 0 || pthread_attr_init(attr) != 0)
        return 0;
    if (pthread_attr_setaffinity_np(attr, sizeof(want), &want) != 0) {
        pthread_attr_destroy(attr);
        return 0;
    }
    return 1;
}

bt_status_t bt_proxy_create(const char *name, volatile int *abort_flag, const char *cpus,
                            struct bt_proxy **proxy_p)
{
    if (!proxy_p)
        return BT_ERR_INVALID_ARG;
    struct bt_proxy *p = calloc(1, sizeof(*p));
    if (!p) {
        BT_WARN("proxy %s: out of memory", name ? name : "");
        return BT_ERR_SYSTEM;
    }
    snprintf(p->name, sizeof(p->name), "%s", name ? name : "proxy");
    p->abort_flag = abort_flag;
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->active_lock, NULL);
    pthread_mutex_init(&p->pool_lock, NULL);
    pthread_mutex_init(&p->svc_lock, NULL);
    pthread_cond_init(&p->svc_cond, NULL);
    pthread_cond_init(&p->done_cond, NULL);
    int rc = proxy_cond_init_monotonic(&p->pool_cond);
    if (rc != 0) {
        BT_WARN("proxy %s: pthread_cond_init failed: %s", p->name, strerror(rc));
        goto err_free;
    }
    bt_proxy_dump_signal_init();

    pthread_attr_t attr;
    int pinned = attr_on_cpus(&attr, cpus);
    rc = pthread_create(&p->service_thread, pinned ? &attr : NULL, proxy_service_main, p);
    if (rc != 0) {
        BT_WARN("proxy %s: pthread_create (service) failed: %s", p->name, strerror(rc));
        if (pinned)
            pthread_attr_destroy(&attr);
        goto err_cond;
    }
    rc = pthread_create(&p->progress_thread, pinned ? &attr : NULL, proxy_progress_main, p);
    if (pinned) {
        pthread_attr_destroy(&attr);
        BT_INFO(BT_LOG_PROXY | BT_LOG_INIT, "proxy %s: threads on CPUs %s", p->name, cpus);
    }
    if (rc != 0) {
        BT_WARN("proxy %s: pthread_create (progress) failed: %s", p->name, strerror(rc));
        goto err_join_service;
    }
    if (bt_param_set_thread_name()) {
        pthread_setname_np(p->progress_thread, "baton Progress");
        pthread_setname_np(p->service_thread, "baton Service");
    }
    bt_proxy_registry_add(p);
    BT_INFO(BT_LOG_PROXY | BT_LOG_INIT, "proxy %s: started (append every %lld rounds)", p->name,
            (long long)bt_param_progress_appendop_freq());
    *proxy_p = p;
    return BT_OK;

err_join_service:
    proxy_stop_service(p);
err_cond:
    pthread_cond_destroy(&p->pool_cond);
err_free:
    proxy_free(p);
    return BT_ERR_SYSTEM;
}

void bt_proxy_stop(struct bt_proxy *p)
{
    if (!p || p->progress_joined)
        return;
    pthread_mutex_lock(&p->pool_lock);
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    pthread_cond_signal(&p->pool_cond);
    pthread_mutex_unlock(&p->pool_lock);
    pthread_join(p->progress_thread, NULL);
    p->progress_joined = 1;
}

void bt_proxy_destroy(struct bt_proxy *p)
{
    if (!p)
        return;
    /* Off the registry first, so no dump walks it while it goes away. */
    bt_proxy_registry_remove(p);
    bt_proxy_stop(p);

    proxy_stop_service(p);
    pthread_cond_destroy(&p->pool_cond);
    proxy_free(p);
}
