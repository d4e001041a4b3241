/*
 * The watcher: the host side of a GPU communicator's reports. Its kernels wait in device
 * code, where nothing can print, and the launching thread has long returned; so one thread
 * per process, running while GPU communicators exist, looks at each one's host-mapped report
 * (the CUDA executor's, exec/report.h) every WATCH_MS and prints:
 *   - a wait past HANG_REPORT seconds: the collective (number, type, count), the peer and
 *     direction, and the ranks that have not called that collective yet (the arrival board,
 *     ranks on one host; else the other ranks' answers to a question in bootstrap messages,
 *     which the watchers of those ranks answer: core/arrival.h);
 *   - the error that ended a kernel (TIMEOUT, with the same details; an abort at INFO: the
 *     user asked for it);
 *   - a communicator's GPU setup (collective: every rank joins it at its first GPU operation)
 *     waiting past HANG_REPORT, with the ranks that have not called that first collective.
 * It costs a wake-up per WATCH_MS and a few loads (without a board also a look at the
 * bootstrap's listening socket); nothing on the launch path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/watch.h"

#include "core/arrival.h"
#include "core/comm.h"
#include "exec/exec.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define WATCH_MS 100

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int running;
    unsigned gen;        /* a thread runs while this is the number it was started with */
    pthread_cond_t idle; /* a communicator's bootstrap work is done (busy went to 0) */
    struct watched {
        struct bt_comm *comm;
        int setting_up, setup_told; /* the GPU setup runs; its hang was reported */
        uint64_t setup_seq;         /* the collective that set up (0: a send/recv) */
        uint64_t setup_since;       /* bt_time_ns */
        uint64_t ask_seq;           /* no board: ask the other ranks about this collective */
        int busy;                   /* the thread uses the comm's bootstrap outside w.lock */
        int error_told;             /* the kernels' report's error was printed */
    } * comms;
    int n, cap;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A program may exit with communicators alive (torch often does): stop the thread before
 * the CUDA runtime's own exit handler (registered earlier, so run later) frees the reports. */
static void stop_at_exit(void)
{
    pthread_t join;
    pthread_mutex_lock(&w.lock);
    int running = w.running;
    join = w.thread;
    w.gen++;
    w.running = 0;
    w.n = 0;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.lock);
    if (running)
        pthread_join(join, NULL);
}

/* The wake-up's clock is CLOCK_MONOTONIC: a wall-clock step must not silence the watcher. */
static void init_once(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w.wake, &a);
    pthread_condattr_destroy(&a);
    atexit(stop_at_exit);
}

static void describe(char *buf, size_t len, const volatile struct bt_exec_where *at)
{
    if (at->seq == 0) /* send/recv: no common numbering */
        snprintf(buf, len, "%s of %llu bytes (work %d)", bt_coll_name(at->coll),
                 (unsigned long long)at->count, at->work);
    else
        snprintf(buf, len, "collective #%llu (%s, %llu elements; work %d)",
                 (unsigned long long)at->seq, bt_coll_name(at->coll), (unsigned long long)at->count,
                 at->work);
}

static const char *direction(int is_send)
{
    return is_send ? "for room to send to it" : "for data from it";
}

/* The ranks that have not called collective `seq`: from the board at once, or else a
 * question to the other ranks that the thread sends after it lets go of w.lock (bootstrap
 * messages to every rank: too slow to hold up the other communicators' reports). */
static void arrival_hang(struct watched *e, uint64_t seq)
{
    if (e->comm->arrival)
        bt_arrival_report(e->comm, seq);
    else
        e->ask_seq = seq;
}

static void look_setup(struct watched *e)
{
    uint64_t hang_ns = (uint64_t)bt_param_hang_report() * 1000000000ull;
    if (e->setup_told || !hang_ns || bt_time_ns() - e->setup_since < hang_ns)
        return;
    e->setup_told = 1;
    bt_log_set_comm(e->comm->rank, e->comm->config.name);
    char first[48] = "a send/recv";
    if (e->setup_seq)
        snprintf(first, sizeof(first), "collective #%llu", (unsigned long long)e->setup_seq);
    BT_REPORT("hang report: the communicator's GPU setup, which every rank joins at its first GPU "
              "operation (here %s), has waited %d s",
              first, (int)bt_param_hang_report());
    if (e->setup_seq)
        arrival_hang(e, e->setup_seq);
}

static void look(struct watched *e)
{
    struct bt_comm *comm = e->comm;
    volatile struct bt_exec_report *r = bt_exec_cuda.report(comm->exec[BT_EXEC_CUDA]);
    char what[160];
    if (__atomic_load_n(&r->stalled, __ATOMIC_ACQUIRE)) {
        bt_log_set_comm(comm->rank, comm->config.name);
        describe(what, sizeof(what), &r->stall_at);
        BT_REPORT("hang report: GPU %s has waited %d s for rank %d %s", what,
                  (int)bt_param_hang_report(), r->stall_at.peer, direction(r->stall_at.is_send));
        if (r->stall_at.seq)
            arrival_hang(e, r->stall_at.seq);
        r->stalled = 0;
    }
    int err = __atomic_load_n(&r->error, __ATOMIC_ACQUIRE);
    if (err != BT_EXEC_ERR_NONE && !e->error_told) {
        e->error_told = 1;
        bt_log_set_comm(comm->rank, comm->config.name);
        describe(what, sizeof(what), &r->error_at);
        if (err == BT_EXEC_ERR_ABORT) {
            BT_INFO(BT_LOG_COLL, "GPU %s stopped by ncclCommAbort while waiting for rank %d", what,
                    r->error_at.peer);
        } else if (err == BT_EXEC_ERR_PEER) {
            BT_WARN("GPU %s: stopped because rank %d's kernel saw no progress for TIMEOUT=%d s; "
                    "the communicator has failed (ncclRemoteError)",
                    what, r->error_at.peer, (int)bt_param_timeout());
        } else {
            BT_WARN("GPU %s: no progress for TIMEOUT=%d s while waiting for rank %d %s; the "
                    "communicator has failed (ncclRemoteError)",
                    what, (int)bt_param_timeout(), r->error_at.peer,
                    direction(r->error_at.is_send));
            if (r->error_at.seq)
                bt_arrival_report(comm, r->error_at.seq);
        }
    }
}

static struct watched *find(struct bt_comm *comm);

/* Communicators without a board: send the questions the looks decided on, answer the other
 * ranks' and take in the answers (core/arrival.h), outside w.lock; a communicator being
 * removed meanwhile waits for it (busy). Called and returns with w.lock held. */
static void bootstrap_work(void)
{
    int n = 0;
    struct job {
        struct bt_comm *comm;
        uint64_t ask;
    } *jobs = malloc(sizeof(*jobs) * (size_t)(w.n > 0 ? w.n : 1));
    for (int i = 0; i < w.n && jobs; i++) {
        struct watched *e = &w.comms[i];
        if (e->comm->arrival || !e->comm->bs)
            continue;
        jobs[n++] = (struct job){e->comm, e->ask_seq};
        e->ask_seq = 0;
        e->busy = 1;
    }
    if (n == 0) {
        free(jobs);
        return;
    }
    pthread_mutex_unlock(&w.lock);
    for (int i = 0; i < n; i++) {
        if (jobs[i].ask)
            (void)bt_arrival_ask(jobs[i].comm, jobs[i].ask);
        bt_arrival_serve(jobs[i].comm);
    }
    pthread_mutex_lock(&w.lock);
    for (int i = 0; i < n; i++) {
        struct watched *e = find(jobs[i].comm);
        if (e)
            e->busy = 0;
    }
    pthread_cond_broadcast(&w.idle);
    free(jobs);
}

static void *watch_main(void *arg)
{
    unsigned gen = (unsigned)(uintptr_t)arg;
    pthread_mutex_lock(&w.lock);
    while (w.gen == gen) {
        for (int i = 0; i < w.n; i++) {
            if (w.comms[i].setting_up)
                look_setup(&w.comms[i]);
            else
                look(&w.comms[i]);
        }
        bootstrap_work();
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += WATCH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int rc = 0;
        while (w.gen == gen && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w.wake, &w.lock, &ts);
    }
    pthread_mutex_unlock(&w.lock);
    return NULL;
}

static struct watched *find(struct bt_comm *comm)
{
    for (int i = 0; i < w.n; i++)
        if (w.comms[i].comm == comm)
            return &w.comms[i];
    return NULL;
}

void bt_watch_setup(struct bt_comm *comm, uint64_t seq)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&w.lock);
    if (find(comm)) {
        pthread_mutex_unlock(&w.lock);
        return;
    }
    if (w.n == w.cap) {
        int cap = w.cap ? 2 * w.cap : 8;
        struct watched *c = realloc(w.comms, sizeof(*c) * (size_t)cap);
        if (!c) {
            pthread_mutex_unlock(&w.lock);
            BT_WARN("rank %d: out of memory: this communicator's kernel reports go unwatched",
                    comm->rank);
            return;
        }
        w.comms = c;
        w.cap = cap;
    }
    w.comms[w.n++] = (struct watched){
        .comm = comm, .setting_up = 1, .setup_seq = seq, .setup_since = bt_time_ns()};
    if (!w.running) {
        if (pthread_create(&w.thread, NULL, watch_main, (void *)(uintptr_t)w.gen) == 0)
            w.running = 1;
        else
            BT_WARN("rank %d: cannot start the GPU watcher thread: hang reports and kernel "
                    "errors of GPU communicators will not be printed",
                    comm->rank);
    }
    pthread_mutex_unlock(&w.lock);
}

void bt_watch_setup_done(struct bt_comm *comm)
{
    if (!comm->exec[BT_EXEC_CUDA]) { /* it failed: nothing to watch */
        bt_watch_remove(comm);
        return;
    }
    pthread_mutex_lock(&w.lock);
    struct watched *e = find(comm);
    if (e)
        e->setting_up = 0;
    pthread_mutex_unlock(&w.lock);
}

void bt_watch_remove(struct bt_comm *comm)
{
    pthread_t join;
    int stopping = 0;
    pthread_mutex_lock(&w.lock);
    struct watched *e = find(comm);
    while (e && e->busy) { /* the thread is using its bootstrap */
        pthread_cond_wait(&w.idle, &w.lock);
        e = find(comm);
    }
    if (e) {
        if (!e->setting_up)
            look(e); /* a last look: what the kernels left unsaid */
        *e = w.comms[--w.n];
    }
    if (w.n == 0 && w.running) { /* no GPU communicator left: no thread either */
        w.gen++;
        w.running = 0;
        join = w.thread;
        stopping = 1;
        pthread_cond_signal(&w.wake);
    }
    pthread_mutex_unlock(&w.lock);
    if (stopping)
        pthread_join(join, NULL);
}
