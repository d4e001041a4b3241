/*
 * Proxy internals shared by proxy.c (threads, op pool, RPC) and dump.c (registry of live
 * proxies, dump signal, dumps).
 *
 * Locks, in the only order they are ever nested:
 *   run_lock  ->  registry lock (dump.c)  ->  proxy->active_lock  ->  proxy->pool_lock
 *   proxy->svc_lock stands alone.
 * run_lock is held by whoever runs a progress round: the progress thread, or a launching
 * thread that drives the proxy while it waits (bt_proxy_drive, taken with trylock). Only
 * its holder calls progress functions and writes the active list. active_lock guards the
 * active list's links and membership against dumps: the round's runner takes it with
 * trylock while ops are active (a failed trylock defers the append or removal to a later
 * round); dumps take it to walk the list. pool_lock guards the pending list and `stopped`;
 * posters hold it for a few instructions.
 */
#ifndef BT_PROXY_PROXY_IMPL_H
#define BT_PROXY_PROXY_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "proxy/proxy.h"

struct bt_proxy_call_req {
    bt_status_t (*fn)(void *);
    void *arg;
    bt_status_t status;
    int done; /* under svc_lock */
    struct bt_proxy_call_req *next;
};

struct bt_proxy {
    char name[112];
    volatile int *abort_flag;
    _Atomic int stop;  /* destroy asks both threads to stop */
    _Atomic int error; /* first error of a progress function (bt_status_t) */

    /* progress thread and op pool */
    pthread_t progress_thread;
    int progress_joined;      /* bt_proxy_stop ended it already (owner's thread only) */
    pthread_mutex_t run_lock; /* held for a progress round (see above) */
    _Atomic int drivers;      /* threads between bt_proxy_drive_begin and _end */
    int64_t rounds;           /* run_lock: rounds since the pending list was last taken */
    pthread_mutex_t active_lock;
    struct bt_proxy_args *active, *active_tail; /* active_lock; written under run_lock */
    _Atomic int nactive;                        /* for dumps and tests */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_cond;
    struct bt_proxy_args *pending, *pending_tail; /* pool_lock */
    int stopped;                                  /* pool_lock: posts fail from now on */
    bt_status_t stop_status;                      /* pool_lock: what late posts get */

    /* service thread */
    pthread_t service_thread;
    pthread_mutex_t svc_lock;
    pthread_cond_t svc_cond;  /* a call was queued, or stop */
    pthread_cond_t done_cond; /* a call finished */
    struct bt_proxy_call_req *calls, *calls_tail;
    int svc_stop; /* svc_lock */

    struct bt_proxy *reg_next; /* registry (dump.c) */
};

/* dump.c */
void bt_proxy_registry_add(struct bt_proxy *proxy);
void bt_proxy_registry_remove(struct bt_proxy *proxy);
/* At the start of a round: print every live proxy if the signal came. caller: progress. */
void bt_proxy_dump_poll(void);

#endif
