#include "exec/host/helpers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "exec/host/lanes.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* A helper's state: made FREE; TAKEN by a launch's reserve; GO when its share is set; DONE
 * when it stopped; FREE again at the join. Only the helper moves GO to DONE. EXIT: its
 * thread ends (the last host communicator is gone). */
enum { H_FREE, H_TAKEN, H_GO, H_DONE, H_EXIT };

struct helper {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic int state;
    int sleeping; /* under mu: waits on cv */
    int started;  /* its thread exists (read and written by the launch that holds it) */
    pthread_t thread;
    struct bt_host_job job;
    uint64_t spin, yields;
};

static struct helper helpers[BT_HOST_MAX_HELPERS];
static pthread_once_t helpers_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;
static int users; /* host communicators alive: the helpers end with the last */

static void helpers_reset(void)
{
    for (int i = 0; i < BT_HOST_MAX_HELPERS; i++) {
        struct helper *h = &helpers[i];
        pthread_mutex_init(&h->mu, NULL);
        pthread_cond_init(&h->cv, NULL);
        atomic_store(&h->state, H_FREE);
        h->sleeping = 0;
        h->started = 0;
    }
}

/* The child of a fork has only the thread that forked: no helpers. */
static void helpers_init(void)
{
    helpers_reset();
    pthread_atfork(NULL, NULL, helpers_reset);
}

/* Wait for the helper's next share (polling for the spin window, then asleep): its state
 * then, GO or EXIT. */
static int helper_wait(struct helper *h, uint64_t poll)
{
    int st = H_FREE;
    for (uint64_t i = 0; i < poll; i++) {
        st = atomic_load_explicit(&h->state, memory_order_acquire);
        if (st == H_GO || st == H_EXIT)
            return st;
        bt_cpu_relax();
    }
    pthread_mutex_lock(&h->mu);
    while ((st = atomic_load_explicit(&h->state, memory_order_acquire)) != H_GO && st != H_EXIT) {
        h->sleeping = 1;
        pthread_cond_wait(&h->cv, &h->mu);
    }
    h->sleeping = 0;
    pthread_mutex_unlock(&h->mu);
    return st;
}

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    uint64_t poll = (uint64_t)bt_param_spin_count();
    while (helper_wait(h, poll) == H_GO) {
        bt_host_exec_while_moving(h->job.lanes, h->job.nlanes, h->spin, h->yields);
        atomic_store_explicit(&h->state, H_DONE, memory_order_release);
    }
    return NULL;
}

/* Its thread, with every signal blocked: the application's handlers run on its own threads,
 * not on ours. */
static int helper_create(struct helper *h)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&h->thread, NULL, helper_main, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        BT_INFO(BT_LOG_INIT, "host executor: no helper thread (%s); lanes in the launching thread",
                strerror(rc));
        return -1;
    }
    h->started = 1;
    BT_INFO(BT_LOG_INIT, "host executor: helper thread %d started", (int)(h - helpers));
    return 0;
}

int bt_host_helpers_reserve(int n, struct bt_host_job *jobs)
{
    if (n <= 0)
        return 0;
    pthread_once(&helpers_once, helpers_init);
    int got = 0;
    for (int i = 0; i < BT_HOST_MAX_HELPERS && got < n; i++) {
        struct helper *h = &helpers[i];
        int expect = H_FREE;
        if (!atomic_compare_exchange_strong(&h->state, &expect, H_TAKEN))
            continue; /* another launch's */
        if (!h->started && helper_create(h) != 0) {
            atomic_store_explicit(&h->state, H_FREE, memory_order_release);
            break;
        }
        jobs[got++].helper = i;
    }
    return got;
}

void bt_host_helpers_start(const struct bt_host_job *jobs, int n, uint64_t spin, uint64_t yields)
{
    for (int k = 0; k < n; k++) {
        struct helper *h = &helpers[jobs[k].helper];
        h->job = jobs[k];
        h->spin = spin;
        h->yields = yields;
        pthread_mutex_lock(&h->mu);
        atomic_store_explicit(&h->state, H_GO, memory_order_release);
        if (h->sleeping)
            pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
}

void bt_host_helpers_join(const struct bt_host_job *jobs, int n)
{
    for (int k = 0; k < n; k++) {
        struct helper *h = &helpers[jobs[k].helper];
        /* it stops within its spin and yield window once its lanes stall */
        for (unsigned i = 0; atomic_load_explicit(&h->state, memory_order_acquire) != H_DONE; i++) {
            if (i < 4096)
                bt_cpu_relax();
            else
                sched_yield();
        }
        atomic_store_explicit(&h->state, H_FREE, memory_order_release);
    }
}

void bt_host_helpers_retain(void)
{
    pthread_once(&helpers_once, helpers_init);
    pthread_mutex_lock(&users_mu);
    users++;
    pthread_mutex_unlock(&users_mu);
}

void bt_host_helpers_release(void)
{
    pthread_mutex_lock(&users_mu);
    if (--users == 0) { /* no launch can hold a helper now: none has a communicator to run */
        for (int i = 0; i < BT_HOST_MAX_HELPERS; i++) {
            struct helper *h = &helpers[i];
            if (!h->started)
                continue;
            pthread_mutex_lock(&h->mu);
            atomic_store_explicit(&h->state, H_EXIT, memory_order_release);
            pthread_cond_signal(&h->cv);
            pthread_mutex_unlock(&h->mu);
            pthread_join(h->thread, NULL);
            h->started = 0;
            atomic_store_explicit(&h->state, H_FREE, memory_order_release);
        }
    }
    pthread_mutex_unlock(&users_mu);
}
