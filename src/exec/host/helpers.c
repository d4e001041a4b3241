#define _GNU_SOURCE /* pthread_{get,set}affinity_np, pthread_setname_np, CPU_* */
#include "exec/host/helpers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    int policy;             /* ... and its scheduling (policy, priority), likewise */
    struct sched_param param;
    int policy_applied;
    struct sched_param param_applied;
};

static struct helper helpers[BT_HOST_MAX_HELPERS];
static pthread_once_t helpers_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;
static int users;         /* host communicators alive: the helpers end with the last */
static unsigned fork_gen; /* bumped in a forked child: its parent's communicators count no more */
static _Atomic int create_failed; /* a helper could not be made: no more tries in this process */

/* The calling thread's CPUs and scheduling, as bt_host_helpers_cpus last read them (start
 * hands them on). */
static __thread cpu_set_t launcher_cpus;
static __thread int launcher_known;
static __thread int launcher_policy;
static __thread struct sched_param launcher_param;

static void helpers_reset(void)
{
    pthread_mutex_init(&users_mu, NULL);
    users = 0;
    fork_gen++;
    atomic_store(&create_failed, 0);
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
 * communicators count (their retains belong to the parent's generation). */
static void helpers_init(void)
{
    helpers_reset();
    pthread_atfork(NULL, NULL, helpers_reset);
}

/* Take on the launcher's CPUs and scheduling where they differ from the helper's. A launcher
 * pinned to some CPUs keeps its helpers there, whichever thread made them; a real-time
 * launcher that spins waiting for them does not starve them. A refusal (a cgroup, no right to
 * the policy) leaves the helper as it is, said once, and is not asked again for that setting. */
static void helper_follow(struct helper *h)
{
    static _Atomic int said;
    int failed = 0;
    if (!CPU_EQUAL(&h->cpus, &h->cpus_applied)) {
        failed |= pthread_setaffinity_np(pthread_self(), sizeof(h->cpus), &h->cpus) != 0;
        h->cpus_applied = h->cpus;
    }
    if (h->policy != h->policy_applied ||
        h->param.sched_priority != h->param_applied.sched_priority) {
        failed |= pthread_setschedparam(pthread_self(), h->policy, &h->param) != 0;
        h->policy_applied = h->policy;
        h->param_applied = h->param;
    }
    if (failed && !atomic_exchange(&said, 1))
        BT_INFO(BT_LOG_INIT, "host executor: a helper thread could not take on its launcher's "
                             "CPUs or scheduling; it runs where it is");
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
    uint64_t poll = 0; /* the first share: asleep until it comes */
    while (helper_wait(h, poll) == H_GO) {
        helper_follow(h);
        bt_host_exec_while_moving(h->job.lanes, h->job.nlanes, h->spin, h->yields);
        poll = h->spin;
        int go = H_GO; /* release may have asked it to end meanwhile: EXIT stays */
        atomic_compare_exchange_strong_explicit(&h->state, &go, H_DONE, memory_order_release,
                                                memory_order_relaxed);
    }
    return NULL;
}

/* Its thread, as the creating thread's (CPUs and scheduling: each share then brings its
 * launcher's), with the asynchronous signals blocked: the application's handlers run on its
 * own threads; a fault here (SIGSEGV, SIGBUS, SIGFPE, SIGILL) still reaches them. */
static int helper_create(struct helper *h)
{
    sigset_t block, old;
    sigfillset(&block);
    const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
        sigdelset(&block, faults[i]);
    pthread_getaffinity_np(pthread_self(), sizeof(h->cpus_applied), &h->cpus_applied);
    pthread_getschedparam(pthread_self(), &h->policy_applied, &h->param_applied);
    pthread_sigmask(SIG_SETMASK, &block, &old);
    int rc = pthread_create(&h->thread, NULL, helper_main, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        atomic_store(&create_failed, 1);
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
        if (!h->started && (atomic_load(&create_failed) || helper_create(h) != 0)) {
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
        if (launcher_known) {
            h->cpus = launcher_cpus;
            h->policy = launcher_policy;
            h->param = launcher_param;
        } else { /* as it is */
            h->cpus = h->cpus_applied;
            h->policy = h->policy_applied;
            h->param = h->param_applied;
        }
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

void bt_host_helpers_join(const struct bt_host_job *jobs, int n, uint64_t spin)
{
    for (int k = 0; k < n; k++) {
        struct helper *h = &helpers[jobs[k].helper];
        /* it stops within its spin and yield window once its lanes stall */
        for (uint64_t i = 0; atomic_load_explicit(&h->state, memory_order_acquire) != H_DONE; i++) {
            if (i < spin)
                bt_cpu_relax();
            else
                sched_yield();
        }
        atomic_store_explicit(&h->state, H_FREE, memory_order_release);
    }
}

unsigned bt_host_helpers_retain(void)
{
    pthread_once(&helpers_once, helpers_init);
    pthread_mutex_lock(&users_mu);
    users++;
    unsigned token = fork_gen;
    pthread_mutex_unlock(&users_mu);
    return token;
}

void bt_host_helpers_release(unsigned token)
{
    pthread_mutex_lock(&users_mu);
    /* another generation's: a communicator a forked child inherited from its parent */
    if (token == fork_gen && --users == 0) {
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
