/*
 * The proxy core (proxy/proxy.h) with a fake transport whose progress functions move the
 * counters one stage per call, with random "not ready" answers and a bounded in-flight depth:
 *   - many ops posted from several threads complete with every counter at nsteps, and their
 *     progress functions ran on "baton Progress";
 *   - a progress function that fails completes its op with that status; bt_proxy_error keeps
 *     the first one;
 *   - the abort flag completes held and pending ops with BT_ERR_REMOTE promptly, and later
 *     posts fail at once;
 *   - bt_proxy_call runs on "baton Service", one call at a time, returns fn's status, and a
 *     nested call does not deadlock;
 *   - bt_proxy_dump shows a held op's channel, peer, direction, counters and stage;
 *     PROXY_DUMP_SIGNAL=10 and raise(SIGUSR1) print every live proxy's ops on stderr, both
 *     while ops are held and while the proxy is idle;
 *   - an idle proxy's threads use < 10 ms of CPU in 1 s (schedstat), and are named;
 *   - a driver (bt_proxy_drive_*) runs every round of its ops itself, the progress thread
 *     runs none meanwhile, and ops left at drive_end finish on the progress thread.
 * Threads only, no fork: `make tsan` style runs see every access.
 */
#define _GNU_SOURCE /* pthread_getname_np */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "proxy/proxy.h"
#include "proxy/proxy_impl.h" /* the pool locks, for the policy checks */
#include "util/param.h"

#define DEPTH 4 /* the fake transport's in-flight bound: posted <= done + DEPTH */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the fake transport ---- */

struct fake_op {
    struct bt_proxy_args args;
    uint64_t rng;              /* progress thread only */
    int calls;                 /* progress thread only */
    int fail_after;            /* fail on call fail_after+1; -1: never */
    bt_status_t fail_status;   /* what it fails with */
    int hold;                  /* stop at the held counters below until `release` */
    uint64_t hold_counters[5]; /* posted, received, flushed, transmitted, done of every sub */
    const char *hold_stage;
    _Atomic int held, release;
    int name_ok;           /* the progress function ran on "baton Progress" (read after complete) */
    _Atomic int acalls;    /* calls, readable by the test thread */
    struct fake_op *watch; /* at the first call, note watch->acalls in first_seen */
    _Atomic int first_seen;
};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static const char *const send_stages[] = {"producer credit", "network send", "network completion"};
static const char *const recv_stages[] = {"network post", "network completion", "flush",
                                          "consumer tail", "consumer"};

/* The stages of a sub in order: send posted, transmitted, done; recv all five. */
static int sub_counters(struct bt_proxy_args *args, struct bt_proxy_sub *sub, uint64_t **c)
{
    if (args->is_send) {
        c[0] = &sub->posted;
        c[1] = &sub->transmitted;
        c[2] = &sub->done;
        return 3;
    }
    c[0] = &sub->posted;
    c[1] = &sub->received;
    c[2] = &sub->flushed;
    c[3] = &sub->transmitted;
    c[4] = &sub->done;
    return 5;
}

static void check_on_progress_thread(struct fake_op *f)
{
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    f->name_ok = strcmp(name, "baton Progress") == 0;
}

/* caller: progress thread. One stage of one counter per sub per call, or "not ready". */
static bt_status_t fake_progress(struct bt_proxy_args *args, int *done_p)
{
    struct fake_op *f = args->user;
    if (f->calls++ == 0) {
        check_on_progress_thread(f);
        if (f->watch)
            atomic_store(&f->first_seen, atomic_load(&f->watch->acalls));
    }
    atomic_fetch_add_explicit(&f->acalls, 1, memory_order_relaxed);
    if (f->fail_after >= 0 && f->calls > f->fail_after)
        return f->fail_status;
    if (f->hold && !atomic_load_explicit(&f->release, memory_order_acquire)) {
        if (!atomic_load_explicit(&f->held, memory_order_relaxed)) {
            for (int i = 0; i < args->nsubs; i++) {
                struct bt_proxy_sub *sub = &args->subs[i];
                bt_proxy_sub_set(&sub->posted, f->hold_counters[0]);
                bt_proxy_sub_set(&sub->received, f->hold_counters[1]);
                bt_proxy_sub_set(&sub->flushed, f->hold_counters[2]);
                bt_proxy_sub_set(&sub->transmitted, f->hold_counters[3]);
                bt_proxy_sub_set(&sub->done, f->hold_counters[4]);
                bt_proxy_sub_stage(sub, f->hold_stage);
            }
            atomic_store_explicit(&f->held, 1, memory_order_release);
        }
        return BT_OK;
    }
    if (f->hold) { /* released: finish at once */
        for (int i = 0; i < args->nsubs; i++) {
            uint64_t *c[5];
            int k = sub_counters(args, &args->subs[i], c);
            for (int j = 0; j < k; j++)
                bt_proxy_sub_set(c[j], args->subs[i].nsteps);
        }
        *done_p = 1;
        return BT_OK;
    }
    int all = 1;
    for (int i = 0; i < args->nsubs; i++) {
        struct bt_proxy_sub *sub = &args->subs[i];
        uint64_t *c[5];
        int k = sub_counters(args, sub, c);
        if (rnd(&f->rng) % 3 != 0) { /* ready: move one counter that may move */
            int start = (int)(rnd(&f->rng) % (uint64_t)k);
            for (int t = 0; t < k; t++) {
                int j = (start + t) % k;
                int can =
                    j == 0 ? *c[0] < sub->nsteps && *c[0] < *c[k - 1] + DEPTH : *c[j] < *c[j - 1];
                if (can) {
                    bt_proxy_sub_set(c[j], *c[j] + 1);
                    bt_proxy_sub_stage(sub, args->is_send ? send_stages[j] : recv_stages[j]);
                    break;
                }
            }
        }
        /* invariants of the stage order and the depth bound */
        for (int j = 1; j < k; j++)
            if (*c[j] > *c[j - 1])
                return BT_ERR_INTERNAL;
        if (*c[0] > sub->nsteps || *c[0] > *c[k - 1] + DEPTH)
            return BT_ERR_INTERNAL;
        all &= *c[k - 1] == sub->nsteps;
    }
    *done_p = all;
    return BT_OK;
}

static void fake_init(struct fake_op *f, int is_send, int nsubs, uint64_t nsteps, uint64_t seed)
{
    memset(f, 0, sizeof(*f));
    f->rng = seed | 1;
    f->fail_after = -1;
    f->args.progress = fake_progress;
    f->args.is_send = is_send;
    f->args.nsubs = nsubs;
    f->args.user = f;
    for (int i = 0; i < nsubs; i++) {
        f->args.subs[i].nsteps = nsteps;
        f->args.subs[i].channel = i;
        f->args.subs[i].peer = 100 + i;
    }
}

static void wait_complete(struct fake_op *f, double timeout_s)
{
    double end = now_s() + timeout_s * bt_test_slow();
    while (!atomic_load_explicit(&f->args.complete, memory_order_acquire)) {
        BT_TEST_CHECK(now_s() < end, "op %p did not complete within %.1f s", (void *)f,
                      timeout_s * bt_test_slow());
        usleep(50);
    }
}

static void wait_held(struct fake_op *f)
{
    double end = now_s() + 5 * bt_test_slow();
    while (!atomic_load_explicit(&f->held, memory_order_acquire)) {
        BT_TEST_CHECK(now_s() < end, "op never reached its held state");
        usleep(100);
    }
}

static void check_done_counters(const struct fake_op *f)
{
    const struct bt_proxy_args *a = &f->args;
    for (int i = 0; i < a->nsubs; i++) {
        const struct bt_proxy_sub *s = &a->subs[i];
        uint64_t n = s->nsteps;
        BT_TEST_CHECK(s->posted == n && s->transmitted == n && s->done == n,
                      "sub %d: posted %llu transmitted %llu done %llu, nsteps %llu", i,
                      (unsigned long long)s->posted, (unsigned long long)s->transmitted,
                      (unsigned long long)s->done, (unsigned long long)n);
        if (a->is_send)
            BT_TEST_CHECK(s->received == 0 && s->flushed == 0, "send sub %d received %llu", i,
                          (unsigned long long)s->received);
        else
            BT_TEST_CHECK(s->received == n && s->flushed == n, "recv sub %d received %llu", i,
                          (unsigned long long)s->received);
    }
}

/* ---- many ops from several threads ---- */

#define POSTERS 4
#define BATCHES 10
#define BATCH 25

struct poster {
    struct bt_proxy *proxy;
    int id;
    struct fake_op ops[BATCH];
};

static void *poster_main(void *arg)
{
    struct poster *ps = arg;
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(ps->id + 1);
    for (int b = 0; b < BATCHES; b++) {
        for (int i = 0; i < BATCH; i++) {
            int nsubs = 1 + (int)(rnd(&rng) % 8);
            if (i == 0)
                nsubs = BT_PROXY_MAX_SUBS;
            fake_init(&ps->ops[i], (int)(rnd(&rng) & 1), nsubs, rnd(&rng) % 41, rnd(&rng));
            BT_TEST_OK(bt_proxy_post(ps->proxy, &ps->ops[i].args));
            if (rnd(&rng) % 4 == 0)
                usleep(50); /* posts that land while ops are active, and while idle */
        }
        for (int i = 0; i < BATCH; i++) {
            wait_complete(&ps->ops[i], 20);
            BT_TEST_CHECK(ps->ops[i].args.status == BT_OK, "op status %d",
                          (int)ps->ops[i].args.status);
            BT_TEST_CHECK(ps->ops[i].name_ok, "progress did not run on 'baton Progress'");
            check_done_counters(&ps->ops[i]);
        }
    }
    return NULL;
}

static _Atomic int dumper_stop;

/* Dumps the proxy over and over while the ops run: dumps must not disturb them. */
static void *dumper_main(void *arg)
{
    FILE *f = fopen("/dev/null", "w");
    BT_TEST_CHECK(f != NULL, "fopen /dev/null");
    int n = 0;
    while (!atomic_load(&dumper_stop)) {
        bt_proxy_dump(arg, f);
        bt_proxy_dump_all(f);
        n++;
        usleep(100);
    }
    fclose(f);
    return (void *)(intptr_t)n;
}

static void test_many_ops(void)
{
    double t0 = now_s();
    struct bt_proxy *proxy = NULL;
    BT_TEST_OK(bt_proxy_create("many", NULL, NULL, &proxy));
    static struct poster ps[POSTERS];
    pthread_t th[POSTERS];
    pthread_t dumper;
    atomic_store(&dumper_stop, 0);
    BT_TEST_OK(pthread_create(&dumper, NULL, dumper_main, proxy));
    for (int i = 0; i < POSTERS; i++) {
        ps[i].proxy = proxy;
        ps[i].id = i;
        BT_TEST_OK(pthread_create(&th[i], NULL, poster_main, &ps[i]));
    }
    for (int i = 0; i < POSTERS; i++)
        BT_TEST_OK(pthread_join(th[i], NULL));
    atomic_store(&dumper_stop, 1);
    void *ndumps = NULL;
    BT_TEST_OK(pthread_join(dumper, &ndumps));
    BT_TEST_CHECK(bt_proxy_error(proxy) == BT_OK, "error %d", (int)bt_proxy_error(proxy));
    bt_proxy_destroy(proxy);
    printf("many ops: %d ops from %d threads in %.2f s, %d concurrent dumps\n",
           POSTERS * BATCHES * BATCH, POSTERS, now_s() - t0, (int)(intptr_t)ndumps);
}

/* ---- a failing progress function ---- */

static void test_fail(void)
{
    struct bt_proxy *proxy = NULL;
    BT_TEST_OK(bt_proxy_create("fail", NULL, NULL, &proxy));
    static struct fake_op ok1, bad, ok2, bad2;
    fake_init(&ok1, 1, 3, 20, 1);
    fake_init(&bad, 0, 2, 1000, 2);
    bad.fail_after = 5;
    bad.fail_status = BT_ERR_SYSTEM;
    fake_init(&ok2, 0, 3, 20, 3);
    BT_TEST_OK(bt_proxy_post(proxy, &ok1.args));
    BT_TEST_OK(bt_proxy_post(proxy, &bad.args));
    BT_TEST_OK(bt_proxy_post(proxy, &ok2.args));
    wait_complete(&bad, 5);
    BT_TEST_CHECK(bad.args.status == BT_ERR_SYSTEM, "failed op: status %d", (int)bad.args.status);
    BT_TEST_CHECK(bad.calls == 6, "failed op was called %d times after failing", bad.calls - 6);
    wait_complete(&ok1, 5);
    wait_complete(&ok2, 5);
    BT_TEST_CHECK(ok1.args.status == BT_OK && ok2.args.status == BT_OK, "ok ops: %d %d",
                  (int)ok1.args.status, (int)ok2.args.status);
    check_done_counters(&ok1);
    check_done_counters(&ok2);
    BT_TEST_CHECK(bt_proxy_error(proxy) == BT_ERR_SYSTEM, "bt_proxy_error %d",
                  (int)bt_proxy_error(proxy));
    /* a second failure does not replace the first error */
    fake_init(&bad2, 1, 1, 10, 4);
    bad2.fail_after = 0;
    bad2.fail_status = BT_ERR_INTERNAL;
    BT_TEST_OK(bt_proxy_post(proxy, &bad2.args));
    wait_complete(&bad2, 5);
    BT_TEST_CHECK(bad2.args.status == BT_ERR_INTERNAL, "status %d", (int)bad2.args.status);
    BT_TEST_CHECK(bt_proxy_error(proxy) == BT_ERR_SYSTEM, "first error replaced by %d",
                  (int)bt_proxy_error(proxy));
    /* a malformed op is refused and left alone */
    struct bt_proxy_args junk = {.progress = NULL, .nsubs = 1};
    BT_TEST_CHECK(bt_proxy_post(proxy, &junk) == BT_ERR_INVALID_ARG, "NULL progress accepted");
    junk.progress = fake_progress;
    junk.nsubs = BT_PROXY_MAX_SUBS + 1;
    BT_TEST_CHECK(bt_proxy_post(proxy, &junk) == BT_ERR_INVALID_ARG, "nsubs 33 accepted");
    bt_proxy_destroy(proxy);
    bt_proxy_destroy(NULL);
}

/* ---- abort ---- */

static void test_abort(void)
{
    volatile int abort_flag = 0;
    struct bt_proxy *proxy = NULL;
    BT_TEST_OK(bt_proxy_create("abort", &abort_flag, NULL, &proxy));
    enum { NHELD = 4, NMORE = 8 };
    static struct fake_op held[NHELD], more[NMORE], late;
    for (int i = 0; i < NHELD; i++) {
        fake_init(&held[i], i & 1, 2, 100, 10 + i);
        held[i].hold = 1;
        held[i].hold_counters[0] = 2;
        held[i].hold_stage = "network completion";
        BT_TEST_OK(bt_proxy_post(proxy, &held[i].args));
    }
    for (int i = 0; i < NHELD; i++)
        wait_held(&held[i]);
    for (int i = 0; i < NMORE; i++) { /* never finish: 10^9 steps */
        fake_init(&more[i], 1, 1, 1000000000ull, 20 + i);
        BT_TEST_OK(bt_proxy_post(proxy, &more[i].args));
    }
    double t0 = now_s();
    __atomic_store_n(&abort_flag, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < NHELD; i++)
        wait_complete(&held[i], 2);
    for (int i = 0; i < NMORE; i++)
        wait_complete(&more[i], 2);
    double dt = now_s() - t0;
    for (int i = 0; i < NHELD; i++)
        BT_TEST_CHECK(held[i].args.status == BT_ERR_REMOTE, "held op %d: status %d", i,
                      (int)held[i].args.status);
    for (int i = 0; i < NMORE; i++)
        BT_TEST_CHECK(more[i].args.status == BT_ERR_REMOTE, "op %d: status %d", i,
                      (int)more[i].args.status);
    BT_TEST_CHECK(dt < 0.5 * bt_test_slow(), "abort took %.3f s", dt);
    /* after the abort, a post fails at once and the op is back, complete */
    fake_init(&late, 1, 1, 1, 99);
    BT_TEST_CHECK(bt_proxy_post(proxy, &late.args) == BT_ERR_REMOTE, "post after abort accepted");
    BT_TEST_CHECK(atomic_load(&late.args.complete) && late.args.status == BT_ERR_REMOTE,
                  "late op: complete %d status %d", atomic_load(&late.args.complete),
                  (int)late.args.status);
    bt_proxy_destroy(proxy);

    /* An idle proxy refuses a post after an abort, though its thread sleeps (up to 500 ms
     * between looks at the flag). */
    volatile int abort2 = 0;
    BT_TEST_OK(bt_proxy_create("abort-idle", &abort2, NULL, &proxy));
    usleep(20000);
    __atomic_store_n(&abort2, 1, __ATOMIC_RELEASE);
    usleep(250000);
    static struct fake_op probe;
    fake_init(&probe, 0, 1, 1000000000ull, 77);
    BT_TEST_CHECK(bt_proxy_post(proxy, &probe.args) == BT_ERR_REMOTE,
                  "idle proxy still accepts ops 250 ms after abort");
    BT_TEST_CHECK(atomic_load(&probe.args.complete) && probe.args.status == BT_ERR_REMOTE,
                  "refused op: complete %d status %d", atomic_load(&probe.args.complete),
                  (int)probe.args.status);
    bt_proxy_destroy(proxy);
    printf("abort: %d ops completed with BT_ERR_REMOTE in %.1f ms\n", NHELD + NMORE, dt * 1e3);
}

/* ---- bt_proxy_call ---- */

struct call_ctx {
    struct bt_proxy *proxy;
    _Atomic int running, max_running, calls, bad_name;
};

static bt_status_t call_fn(void *arg)
{
    struct call_ctx *c = arg;
    int r = atomic_fetch_add(&c->running, 1) + 1;
    int m = atomic_load(&c->max_running);
    while (r > m && !atomic_compare_exchange_weak(&c->max_running, &m, r))
        ;
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    if (strcmp(name, "baton Service") != 0)
        atomic_store(&c->bad_name, 1);
    usleep(200);
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_sub(&c->running, 1);
    return BT_ERR_INVALID_USAGE; /* a status only this function returns */
}

static bt_status_t call_nested_fn(void *arg)
{
    struct call_ctx *c = arg;
    bt_status_t st = bt_proxy_call(c->proxy, call_fn, c);
    return st == BT_ERR_INVALID_USAGE ? BT_ERR_REMOTE : BT_ERR_INTERNAL;
}

static void *caller_main(void *arg)
{
    struct call_ctx *c = arg;
    for (int i = 0; i < 20; i++)
        BT_TEST_CHECK(bt_proxy_call(c->proxy, call_fn, c) == BT_ERR_INVALID_USAGE,
                      "call did not return fn's status");
    return NULL;
}

static void test_call(void)
{
    static struct call_ctx c;
    BT_TEST_OK(bt_proxy_create("call", NULL, NULL, &c.proxy));
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        BT_TEST_OK(pthread_create(&th[i], NULL, caller_main, &c));
    for (int i = 0; i < 4; i++)
        BT_TEST_OK(pthread_join(th[i], NULL));
    BT_TEST_CHECK(atomic_load(&c.calls) == 80, "%d calls ran", atomic_load(&c.calls));
    BT_TEST_CHECK(atomic_load(&c.max_running) == 1, "%d calls ran at once",
                  atomic_load(&c.max_running));
    BT_TEST_CHECK(!atomic_load(&c.bad_name), "a call ran on a thread not named 'baton Service'");
    BT_TEST_CHECK(bt_proxy_call(c.proxy, call_nested_fn, &c) == BT_ERR_REMOTE,
                  "nested call failed");
    BT_TEST_CHECK(bt_proxy_call(c.proxy, NULL, NULL) == BT_ERR_INVALID_ARG, "NULL fn accepted");
    bt_proxy_destroy(c.proxy);
}

/* ---- the pool policy: no blocking lock while ops are active; append every N rounds ---- */

static void test_policy(void)
{
    struct bt_proxy *proxy = NULL;
    BT_TEST_OK(bt_proxy_create("policy", NULL, NULL, &proxy));
    static struct fake_op h, q, n;
    fake_init(&h, 1, 1, 10, 7);
    h.hold = 1;
    h.hold_stage = "producer credit";
    BT_TEST_OK(bt_proxy_post(proxy, &h.args));
    wait_held(&h);

    /* A poster stuck holding the pool lock does not stall active progress. */
    pthread_mutex_lock(&proxy->pool_lock);
    int c0 = atomic_load(&h.acalls);
    usleep(50000);
    int c1 = atomic_load(&h.acalls);
    pthread_mutex_unlock(&proxy->pool_lock);
    BT_TEST_CHECK(c1 - c0 > 10, "%d rounds in 50 ms with the pool lock held", c1 - c0);

    /* Nor does a dump holding the active list; an op finishing meanwhile completes after. */
    fake_init(&q, 0, 1, 10, 8);
    q.hold = 1;
    q.hold_stage = "consumer";
    BT_TEST_OK(bt_proxy_post(proxy, &q.args));
    wait_held(&q);
    pthread_mutex_lock(&proxy->active_lock);
    c0 = atomic_load(&h.acalls);
    atomic_store_explicit(&q.release, 1, memory_order_release);
    usleep(50000);
    c1 = atomic_load(&h.acalls);
    int early = atomic_load_explicit(&q.args.complete, memory_order_acquire);
    pthread_mutex_unlock(&proxy->active_lock);
    BT_TEST_CHECK(c1 - c0 > 10, "%d rounds in 50 ms with the active list locked", c1 - c0);
    BT_TEST_CHECK(!early, "op completed while still on the active list");
    wait_complete(&q, 5);
    BT_TEST_CHECK(q.args.status == BT_OK, "status %d", (int)q.args.status);

    /* With ops active, a new op is taken within PROGRESS_APPENDOP_FREQ rounds. */
    int64_t freq = bt_param_progress_appendop_freq();
    fake_init(&n, 1, 1, 3, 9);
    n.watch = &h;
    BT_TEST_OK(bt_proxy_post(proxy, &n.args));
    int at_post = atomic_load(&h.acalls);
    wait_complete(&n, 5);
    int waited = atomic_load(&n.first_seen) - at_post;
    BT_TEST_CHECK(waited <= freq + 2,
                  "new op first progressed %d rounds after its post (freq %lld)", waited,
                  (long long)freq);

    /* Destroy with an op still active: it completes, with BT_ERR_INVALID_USAGE. */
    bt_proxy_destroy(proxy);
    BT_TEST_CHECK(atomic_load_explicit(&h.args.complete, memory_order_acquire) &&
                      h.args.status == BT_ERR_INVALID_USAGE,
                  "op active at destroy: complete %d status %d", atomic_load(&h.args.complete),
                  (int)h.args.status);
    printf("policy: new op taken %d rounds after its post (freq %lld)\n", waited, (long long)freq);
}

/* ---- dumps ---- */

static char *read_all(FILE *f)
{
    fflush(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    BT_TEST_CHECK(s != NULL, "calloc");
    BT_TEST_CHECK(fread(s, 1, (size_t)n, f) == (size_t)n, "fread");
    return s;
}

static char *read_path(const char *path)
{
    FILE *f = fopen(path, "r");
    BT_TEST_CHECK(f != NULL, "fopen %s", path);
    char *s = read_all(f);
    fclose(f);
    return s;
}

/* Redirect stderr to a file, raise the dump signal, and wait until every `want` string shows
 * up. Returns the seconds it took. */
static double dump_by_signal(const char *const *want, int nwant)
{
    char path[] = "/tmp/baton-test-proxy-XXXXXX";
    int fd = mkstemp(path);
    BT_TEST_CHECK(fd >= 0, "mkstemp");
    fflush(stderr);
    int saved = dup(2);
    BT_TEST_CHECK(saved >= 0 && dup2(fd, 2) == 2, "dup2");
    double t0 = now_s(), end = t0 + 3 * bt_test_slow(), dt = -1;
    raise(SIGUSR1);
    char *text = NULL;
    while (now_s() < end) {
        free(text);
        text = read_path(path);
        int found = 0;
        for (int i = 0; i < nwant; i++)
            found += strstr(text, want[i]) != NULL;
        if (found == nwant) {
            dt = now_s() - t0;
            break;
        }
        usleep(2000);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    unlink(path);
    for (int i = 0; i < nwant; i++)
        BT_TEST_CHECK(strstr(text, want[i]) != NULL, "signal dump lacks '%s'; it was:\n%s", want[i],
                      text);
    free(text);
    return dt;
}

static void test_dump(void)
{
    struct bt_proxy *a = NULL, *b = NULL;
    BT_TEST_OK(bt_proxy_create("dumpA", NULL, NULL, &a));
    BT_TEST_OK(bt_proxy_create("dumpB", NULL, NULL, &b));
    static struct fake_op sa, rb;
    fake_init(&sa, 1, 2, 10, 5);
    sa.hold = 1;
    uint64_t hs[5] = {7, 0, 0, 5, 3};
    memcpy(sa.hold_counters, hs, sizeof(hs));
    sa.hold_stage = "network completion";
    sa.args.subs[1].channel = 1;
    sa.args.subs[1].peer = 3;
    fake_init(&rb, 0, 1, 12, 6);
    rb.hold = 1;
    uint64_t hr[5] = {9, 8, 6, 5, 4};
    memcpy(rb.hold_counters, hr, sizeof(hr));
    rb.hold_stage = "consumer";
    rb.args.subs[0].channel = 0;
    rb.args.subs[0].peer = 2;
    BT_TEST_OK(bt_proxy_post(a, &sa.args));
    BT_TEST_OK(bt_proxy_post(b, &rb.args));
    wait_held(&sa);
    wait_held(&rb);

    const char *want_a = "channel 1 peer 3 send nsteps 10 posted 7 received 0 flushed 0 "
                         "transmitted 5 done 3 stage \"network completion\"";
    const char *want_b = "channel 0 peer 2 recv nsteps 12 posted 9 received 8 flushed 6 "
                         "transmitted 5 done 4 stage \"consumer\"";
    FILE *f = tmpfile();
    BT_TEST_CHECK(f != NULL, "tmpfile");
    bt_proxy_dump(a, f);
    char *text = read_all(f);
    fclose(f);
    BT_TEST_CHECK(strstr(text, want_a) != NULL, "dump lacks '%s'; it was:\n%s", want_a, text);
    BT_TEST_CHECK(strstr(text, "dumpA: 1 active ops") != NULL, "dump header wrong:\n%s", text);
    BT_TEST_CHECK(strstr(text, want_b) == NULL, "dump of A shows B's op:\n%s", text);
    free(text);

    /* the signal: every live proxy, while the ops are held in progress */
    const char *want_sig[] = {want_a, want_b};
    double dt_busy = dump_by_signal(want_sig, 2);
    /* the op did not notice: it is still held, and finishes when released */
    BT_TEST_CHECK(!atomic_load_explicit(&sa.args.complete, memory_order_acquire),
                  "dump completed the op");
    atomic_store_explicit(&sa.release, 1, memory_order_release);
    atomic_store_explicit(&rb.release, 1, memory_order_release);
    wait_complete(&sa, 5);
    wait_complete(&rb, 5);
    BT_TEST_CHECK(sa.args.status == BT_OK && rb.args.status == BT_OK, "status %d %d",
                  (int)sa.args.status, (int)rb.args.status);
    check_done_counters(&sa);
    check_done_counters(&rb);

    /* idle proxies wake for the dump within their 100 ms wait */
    usleep(150000);
    const char *want_idle[] = {"proxy dumpA: 0 active ops", "proxy dumpB: 0 active ops"};
    double dt_idle = dump_by_signal(want_idle, 2);
    BT_TEST_CHECK(dt_idle < 0.5 * bt_test_slow(), "idle dump took %.3f s", dt_idle);
    bt_proxy_destroy(b);
    bt_proxy_destroy(a);
    printf("dump: signal dump with ops held after %.1f ms, idle after %.1f ms\n", dt_busy * 1e3,
           dt_idle * 1e3);
}

/* ---- idle is quiet; threads are named ---- */

/* CPU nanoseconds of this process's threads named `comm` (schedstat, else stat ticks). */
static long long thread_cpu_ns(const char *comm, int *nthreads_p)
{
    DIR *d = opendir("/proc/self/task");
    BT_TEST_CHECK(d != NULL, "opendir /proc/self/task");
    long long total = 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[320], name[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(name, sizeof(name), f))
            name[0] = 0;
        fclose(f);
        name[strcspn(name, "\n")] = 0;
        if (strcmp(name, comm) != 0)
            continue;
        n++;
        long long ns = -1;
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%lld", &ns) != 1)
                ns = -1;
            fclose(f);
        }
        if (ns < 0) { /* no schedstat: utime + stime in clock ticks */
            snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
            f = fopen(path, "r");
            BT_TEST_CHECK(f != NULL, "fopen %s", path);
            char buf[1024] = "";
            BT_TEST_CHECK(fgets(buf, sizeof(buf), f) != NULL, "read %s", path);
            fclose(f);
            unsigned long long ut = 0, st = 0;
            char *p = strrchr(buf, ')');
            BT_TEST_CHECK(p &&
                              sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                                     &ut, &st) == 2,
                          "parse %s", path);
            ns =
                (long long)((ut + st) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK)));
        }
        total += ns;
    }
    closedir(d);
    *nthreads_p = n;
    return total;
}

static void test_idle_quiet(void)
{
    struct bt_proxy *proxy = NULL;
    BT_TEST_OK(bt_proxy_create("idle", NULL, NULL, &proxy));
    static struct fake_op ops[50];
    for (int i = 0; i < 50; i++) {
        fake_init(&ops[i], i & 1, 4, 30, 1000 + i);
        BT_TEST_OK(bt_proxy_post(proxy, &ops[i].args));
    }
    for (int i = 0; i < 50; i++)
        wait_complete(&ops[i], 10);
    usleep(200000);
    int np = 0, ns = 0;
    long long p0 = thread_cpu_ns("baton Progress", &np);
    long long s0 = thread_cpu_ns("baton Service", &ns);
    BT_TEST_CHECK(np == 1 && ns == 1, "threads named 'baton Progress': %d, 'baton Service': %d", np,
                  ns);
    sleep(1);
    long long p1 = thread_cpu_ns("baton Progress", &np);
    long long s1 = thread_cpu_ns("baton Service", &ns);
    long long used = (p1 - p0) + (s1 - s0);
    BT_TEST_CHECK(used < 10000000ll, "idle proxy threads used %.3f ms of CPU in 1 s", used / 1e6);
    bt_proxy_destroy(proxy);
    printf("idle: proxy threads used %.3f ms of CPU in 1 s (progress %.3f, service %.3f)\n",
           used / 1e6, (p1 - p0) / 1e6, (s1 - s0) / 1e6);
}

/* The launching thread drives: its ops progress on it alone; what it leaves behind at
 * drive_end the progress thread finishes. */
static void test_drive(void)
{
    struct bt_proxy *p;
    BT_TEST_CHECK(bt_proxy_create("drive", NULL, NULL, &p) == BT_OK, "create");
    enum { NOPS = 16 };
    struct fake_op *ops = calloc(NOPS, sizeof(*ops));
    bt_proxy_drive_begin(p);
    for (int i = 0; i < NOPS; i++) {
        fake_init(&ops[i], i & 1, 1 + i % 3, 20, 1000 + (uint64_t)i);
        BT_TEST_CHECK(bt_proxy_post(p, &ops[i].args) == BT_OK, "post %d", i);
    }
    double end = now_s() + 10 * bt_test_slow();
    for (int i = 0; i < NOPS; i++) {
        while (!atomic_load_explicit(&ops[i].args.complete, memory_order_acquire)) {
            BT_TEST_CHECK(now_s() < end, "driven op %d did not complete", i);
            if (!bt_proxy_drive(p))
                sched_yield();
        }
        BT_TEST_CHECK(ops[i].args.status == BT_OK, "driven op %d status %d", i,
                      (int)ops[i].args.status);
        BT_TEST_CHECK(!ops[i].name_ok, "driven op %d ran on the progress thread", i);
    }
    /* An op the driver leaves: the progress thread takes it over after drive_end. */
    struct fake_op *left = &ops[0];
    fake_init(left, 1, 2, 50, 7);
    BT_TEST_CHECK(bt_proxy_post(p, &left->args) == BT_OK, "post left");
    bt_proxy_drive(p);
    bt_proxy_drive_end(p);
    wait_complete(left, 5);
    BT_TEST_CHECK(left->args.status == BT_OK, "left op status %d", (int)left->args.status);
    BT_TEST_CHECK(atomic_load(&left->acalls) > 1, "left op was not progressed");
    bt_proxy_destroy(p);
    free(ops);
}

/* Cpus_allowed_list of each of this process's threads named `name`: how many there are,
 * and whether all of them read `want`. */
static int threads_on(const char *name, const char *want, int *all_match)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    *all_match = 1;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[288], buf[256] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int named = fgets(buf, sizeof(buf), f) && strncmp(buf, name, strlen(name)) == 0;
        fclose(f);
        if (!named)
            continue;
        n++;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        int ok = 0;
        while (f && fgets(buf, sizeof(buf), f))
            if (strncmp(buf, "Cpus_allowed_list:", 18) == 0) {
                char *v = buf + 18;
                while (*v == ' ' || *v == '\t')
                    v++;
                v[strcspn(v, "\n")] = 0;
                ok = strcmp(v, want) == 0;
            }
        if (f)
            fclose(f);
        *all_match &= ok;
    }
    if (d)
        closedir(d);
    return n;
}

/* A proxy given a cpulist keeps both its threads on it (within the process's CPUs). */
static void test_affinity(void)
{
    cpu_set_t allowed;
    BT_TEST_CHECK(sched_getaffinity(0, sizeof(allowed), &allowed) == 0, "sched_getaffinity");
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed))
        cpu++;
    char list[16];
    snprintf(list, sizeof(list), "%d", cpu);
    struct bt_proxy *p;
    BT_TEST_OK(bt_proxy_create("pinned", NULL, list, &p));
    int match = 0;
    BT_TEST_CHECK(threads_on("baton Progress", list, &match) == 1 && match,
                  "progress thread not on CPU %s", list);
    BT_TEST_CHECK(threads_on("baton Service", list, &match) == 1 && match,
                  "service thread not on CPU %s", list);
    bt_proxy_destroy(p);
    /* a list with no CPU this process may use: the threads run where the caller may */
    BT_TEST_OK(bt_proxy_create("unpinned", NULL, "100000", &p));
    BT_TEST_CHECK(threads_on("baton Progress", list, &match) == 1 &&
                      (!match || CPU_COUNT(&allowed) == 1),
                  "progress thread pinned to CPU %s without being asked", list);
    bt_proxy_destroy(p);
    printf("affinity: ok (CPU %s)\n", list);
}

int main(void)
{
    /* Before the first read of any parameter: the getters cache. */
    setenv("BATON_PROXY_DUMP_SIGNAL", "10", 1);
    unsetenv("NCCL_PROXY_DUMP_SIGNAL");
    unsetenv("BATON_SET_THREAD_NAME");
    unsetenv("NCCL_SET_THREAD_NAME");
    unsetenv("BATON_PROGRESS_APPENDOP_FREQ");
    unsetenv("NCCL_PROGRESS_APPENDOP_FREQ");

    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    double t0 = now_s();
    BT_TEST_CHECK(bt_param_proxy_dump_signal() == 10, "PROXY_DUMP_SIGNAL not read");
    BT_TEST_CHECK(bt_param_progress_appendop_freq() == 8, "PROGRESS_APPENDOP_FREQ default");
    test_call();
    test_fail();
    test_abort();
    test_policy();
    test_dump();
    test_many_ops();
    test_drive();
    test_idle_quiet();
    test_affinity();
    bt_test_leaks_end(&leaks);
    printf("test_proxy: ok in %.2f s\n", now_s() - t0);
    return 0;
}
