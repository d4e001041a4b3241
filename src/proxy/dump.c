/*
 * Proxy dumps: the registry of live proxies, the PROXY_DUMP_SIGNAL handler, and the text of
 * a dump. The handler only sets a flag (a lock-free atomic, async-signal-safe); the first
 * progress thread to start a round after it clears the flag and prints every live proxy to
 * stderr. Idle progress threads wake every 100 ms, so a dump comes within about that long.
 *
 * A dump reads the counters while the progress thread writes them: both sides use relaxed
 * atomics (proxy.h), so a dump may show a counter one step old, never a torn value. The
 * active list itself is walked under active_lock, which the progress thread only ever
 * trylocks, so a dump delays a removal or an append by a round at most and stalls no op.
 */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "proxy/proxy_impl.h"
#include "util/param.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bt_proxy *registry;        /* registry_lock */
static int signal_installed;             /* registry_lock */
static _Atomic int dump_requested;       /* set by the signal handler */
static _Atomic unsigned dump_generation; /* signals so far: launches waiting report too */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the dump flag must be lock-free to be signal-safe");

void bt_proxy_registry_add(struct bt_proxy *proxy)
{
    pthread_mutex_lock(&registry_lock);
    proxy->reg_next = registry;
    registry = proxy;
    pthread_mutex_unlock(&registry_lock);
}

void bt_proxy_registry_remove(struct bt_proxy *proxy)
{
    pthread_mutex_lock(&registry_lock);
    for (struct bt_proxy **pp = &registry; *pp; pp = &(*pp)->reg_next)
        if (*pp == proxy) {
            *pp = proxy->reg_next;
            break;
        }
    proxy->reg_next = NULL;
    pthread_mutex_unlock(&registry_lock);
}

static void proxy_dump_handler(int sig)
{
    (void)sig;
    atomic_store_explicit(&dump_requested, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dump_generation, 1, memory_order_relaxed);
}

unsigned bt_proxy_dump_generation(void)
{
    return atomic_load_explicit(&dump_generation, memory_order_relaxed);
}

void bt_proxy_dump_signal_init(void)
{
    int64_t sig = bt_param_proxy_dump_signal();
    if (sig <= 0)
        return;
    pthread_mutex_lock(&registry_lock);
    if (!signal_installed) {
        signal_installed = 1;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = proxy_dump_handler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sig >= NSIG || sigaction((int)sig, &sa, NULL) != 0)
            BT_WARN("PROXY_DUMP_SIGNAL=%lld: cannot install a handler for that signal",
                    (long long)sig);
        else
            BT_INFO(BT_LOG_PROXY | BT_LOG_INIT, "proxy: signal %lld prints every active op",
                    (long long)sig);
    }
    pthread_mutex_unlock(&registry_lock);
}

void bt_proxy_dump_poll(void)
{
    if (!atomic_load_explicit(&dump_requested, memory_order_relaxed))
        return;
    /* One thread prints; the others see the flag cleared. */
    if (!atomic_exchange_explicit(&dump_requested, 0, memory_order_relaxed))
        return;
    bt_proxy_dump_all(stderr);
}

void bt_proxy_dump_all(FILE *out)
{
    pthread_mutex_lock(&registry_lock);
    for (struct bt_proxy *p = registry; p; p = p->reg_next)
        bt_proxy_dump(p, out);
    pthread_mutex_unlock(&registry_lock);
}

static unsigned long long ld(const uint64_t *counter)
{
    return (unsigned long long)__atomic_load_n(counter, __ATOMIC_RELAXED);
}

void bt_proxy_dump(struct bt_proxy *p, FILE *out)
{
    if (!p || !out)
        return;
    pthread_mutex_lock(&p->active_lock);
    int npending = 0;
    pthread_mutex_lock(&p->pool_lock);
    for (struct bt_proxy_args *op = p->pending; op; op = op->next)
        npending++;
    pthread_mutex_unlock(&p->pool_lock);
    int nactive = atomic_load_explicit(&p->nactive, memory_order_relaxed);
    fprintf(out, "BATON proxy %s: %d active ops, %d pending, first error %d\n", p->name, nactive,
            npending, (int)bt_proxy_error(p));
    /* The op fields other than counters and stage were written before the op was linked in
     * under active_lock, which this thread holds now: plain reads are ordered. */
    for (struct bt_proxy_args *op = p->active; op; op = op->next) {
        fprintf(out, "BATON proxy %s: op %p %s, %d subs\n", p->name, (void *)op,
                op->is_send ? "send" : "recv", op->nsubs);
        for (int i = 0; i < op->nsubs; i++) {
            struct bt_proxy_sub *sub = &op->subs[i];
            const char *stage = __atomic_load_n(&sub->stage, __ATOMIC_RELAXED);
            fprintf(out,
                    "BATON proxy %s:   channel %d peer %d %s nsteps %llu posted %llu received "
                    "%llu flushed %llu transmitted %llu done %llu stage \"%s\"\n",
                    p->name, sub->channel, sub->peer, op->is_send ? "send" : "recv",
                    (unsigned long long)sub->nsteps, ld(&sub->posted), ld(&sub->received),
                    ld(&sub->flushed), ld(&sub->transmitted), ld(&sub->done), stage ? stage : "?");
        }
    }
    pthread_mutex_unlock(&p->active_lock);
    fflush(out);
}
