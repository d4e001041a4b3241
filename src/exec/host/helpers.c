#define _GNU_SOURCE /* pthread_{get,set}affinity_np, pthread_setname_np, CPU_* */
#include "exec/host/helpers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "exec/host/lanes.h"
#include "util/log.h"
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
    /* the share, set before GO: */
    struct bt_host_job job;
    uint64_t spin, yields;
    cpu_set_t cpus;         /* the launching thread's CPUs, which the helper takes on */
    cpu_set_t cpus_applied; /* the helper's own: what it last took on */
};

static struct helper helpers[BT_HOST_MAX_HELPERS];
static pthread_once_t helpers_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;
static int users; /* host communicators alive: the helpers end with the last */

/* The calling thread's CPUs, as bt_host_helpers_cpus last read them (start hands them on). */
static __thread cpu_set_t launcher_cpus;
static __thread int launcher_known;

static void helpers_reset(void)
{
    pthread_mutex_init(&users_mu, NULL);
    users = 0;
    for (int i = 0; i < BT_HOST_MAX_HELPERS; i++) {
        struct helper *h = &helpers[i];
        pthread_mutex_init(&h->mu, NULL);
        pthread_cond_init(&h->cv, NULL);
        atomic_store(&h->state, H_FREE);
        h->sleeping = 0;
        h->started = 0;
    }
}

/* The child of a fork has only the thread that forked: no helpers, and none of the parent's
 * communicators count (the child's own retain and release them). */
static void helpers_init(void)
{
    helpers_reset();
    pthread_atfork(NULL, NULL, helpers_reset);
}

/* Wait for the helper's next share (polling for the last launch's spin window, then asleep):
 * its state then, GO or EXIT. */
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
    char name[16];
    snprintf(name, sizeof(name), "baton Helper %d", (int)(h - helpers));
    pthread_setname_np(pthread_self(), name);
    pthread_getaffinity_np(pthread_self(), sizeof(h->cpus_applied), &h->cpus_applied);
    uint64_t poll = 0; /* the first share: asleep until it comes */
    while (helper_wait(h, poll) == H_GO) {
        /* on the launching thread's CPUs: a launcher pinned to some CPUs keeps its helpers
         * there, whichever thread made them */
        if (!CPU_EQUAL(&h->cpus, &h->cpus_applied) &&
            pthread_setaffinity_np(pthread_self(), sizeof(h->cpus), &h->cpus) == 0)
            h->cpus_applied = h->cpus;
        bt_host_exec_while_moving(h->job.lanes, h->job.nlanes, h->spin, h->yields);
        poll = h->spin;
        int go = H_GO; /* release may have asked it to end meanwhile: EXIT stays */
        atomic_compare_exchange_strong_explicit(&h->state, &go, H_DONE, memory_order_release,
                                                memory_order_relaxed);
    }
    return NULL;
}

/* Its thread: with the default scheduling (not the creating thread's policy) and every
 * asynchronous signal blocked (the application's handlers run on its own threads; a fault
 * here still reaches them). */
static int helper_create(struct helper *h)
{
    sigset_t block, old;
    sigfillset(&block);
    const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
        sigdelset(&block, faults[i]);
    pthread_attr_t attr;
    struct sched_param sp = {.sched_priority = 0};
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        pthread_attr_setschedparam(&attr, &sp);
        pthread_sigmask(SIG_SETMASK, &block, &old);
        rc = pthread_create(&h->thread, &attr, helper_main, h);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        BT_INFO(BT_LOG_INIT, "host executor: no helper thread (%s); lanes in the launching thread",
                strerror(rc));
        return -1;
    }
    h->started = 1;
    BT_INFO(BT_LOG_INIT, "host executor: helper thread %d started", (int)(h - helpers));
    return 0;
}

int bt_host_helpers_cpus(void)
{
    launcher_known =
        pthread_getaffinity_np(pthread_self(), sizeof(launcher_cpus), &launcher_cpus) == 0;
    return launcher_known ? CPU_COUNT(&launcher_cpus) : 1;
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
    if (n > 0 && !launcher_known)
        bt_host_helpers_cpus();
    for (int k = 0; k < n; k++) {
        struct helper *h = &helpers[jobs[k].helper];
        h->job = jobs[k];
        h->spin = spin;
        h->yields = yields;
        if (launcher_known)
            h->cpus = launcher_cpus;
        else
            h->cpus = h->cpus_applied;
        pthread_mutex_lock(&h->mu);
        atomic_store_explicit(&h->state, H_GO, memory_order_release);
        if (h->sleeping)
            pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
}

int bt_host_helpers_stopped(const struct bt_host_job *jobs, int n)
{
    for (int k = 0; k < n; k++)
        if (atomic_load_explicit(&helpers[jobs[k].helper].state, memory_order_acquire) != H_DONE)
            return 0;
    return 1;
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
    /* 0 already: a communicator a forked child inherited (the child's count starts at 0) */
    if (users > 0 && --users == 0) {
        /* no launch holds a helper now: none has a communicator to run on */
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
