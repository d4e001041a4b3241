/*
 * unit/test_gin_proxy: the GIN proxy (src/transport/gin_proxy.c) on host memory, the test's
 * threads playing the GPU: 3 ranks as threads of one process (host communicators, their
 * network: sockets), each with a GIN proxy whose "device memory" is host memory
 * (unit/host_device.c stands in for the CUDA runtime). Each rank writes descriptors into its
 * queues as NCCL's device code lays them out, waits on the consumer indices, signals and
 * counters as kernels do, and checks every byte:
 *   - 2.30.5+'s format (V2), two contexts in turn: per round to every rank (itself included)
 *     a put of 1 byte..300 KB (several network messages) with a strong signal increment and a
 *     counter, an inline 8-byte value with a signal add of 3, a VA signal adding 5 to a word
 *     of its window, and a get of the next rank's part for it, made visible by a flush; the
 *     signals and counters of each context move only with that context's descriptors;
 *   - 2.29.5's format (V1_WIDE), two contexts: the same but the gets (2.29 has none);
 *   - 2.28's format (V1), one context: the puts, values, signals and counters;
 *   - errors: a put and a get naming no window at the target are WARNed there (its failure
 *     callback), and the asker's queue still moves on (a kernel never waits forever).
 * No GPU, no fork: under ThreadSanitizer too (the proxy's thread, the link's, the landing).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "harness.h"
#include "nccl.h"
#include "transport/gin_proxy.h"
#include "util/time.h"

#define NRANKS 3
#define CTXS 2
#define NSIG 4
#define NCNT 2
#define QS 8              /* descriptors per queue: fewer than a round posts */
#define PART (300u << 10) /* bytes of each rank's part */
#define ROUNDS 24
#define WIN_SEND 1                /* GIN handles: the send window ... */
#define WIN_RECV 2                /* ... and the receive window */
#define VALUES (NRANKS * PART)    /* receive window: the parts, then a value per rank, */
#define GOT (VALUES + NRANKS * 8) /* the part got from the next rank, */
#define VA (GOT + PART)           /* and the VA signal's word */
#define RECV_BYTES (VA + 8)

static ncclComm_t comms[NRANKS];
static pthread_barrier_t barrier;

struct rank {
    int rank;
    int format, nctx;
    struct bt_gin_proxy *gp;
    struct bt_gin_ctx_v2 *v2;   /* the contexts, as the device reads them (V2) */
    ncclGinProxyGpuCtx_t *v1;   /* (V1, V1_WIDE) */
    unsigned char *send, *recv; /* the windows */
    uint32_t pi[CTXS][NRANKS];  /* what the "kernel" has posted to each queue */
    _Atomic int failed;         /* the proxy's failure callback ran */
    int ok;
};

static int window(void *arg, uint64_t handle, char **base, size_t *bytes)
{
    struct rank *r = arg;
    if (handle == WIN_SEND) {
        *base = (char *)r->send;
        *bytes = NRANKS * PART;
        return 1;
    }
    if (handle == WIN_RECV) {
        *base = (char *)r->recv;
        *bytes = RECV_BYTES;
        return 1;
    }
    return 0;
}

static void failed(void *arg, bt_status_t st)
{
    struct rank *r = arg;
    (void)st;
    atomic_store(&r->failed, 1);
}

static unsigned char pattern(int src, int dst, int round, size_t i)
{
    return (unsigned char)(src * 37 + dst * 11 + round * 5 + i * 7 + (i >> 9));
}

static uint64_t tag(int src, int round)
{
    return ((uint64_t)(round + 1) << 32) | (uint64_t)(src * 1000 + 17);
}

/* ---- the "device": descriptors as NCCL's device code writes them ------------------------ */

struct gfd {
    unsigned op;
    uint64_t size, src_off, src_handle, dst_off, dst_handle, inline_val, signal_val;
    uint32_t counter, signal;
    int strong;
};

/* 2.30.5+'s descriptor: 16 flagged qwords (transport/gin_proxy.h's field positions) */
static void encode_v2(const struct gfd *g, uint64_t q[BT_GIN_V2_QWORDS])
{
    for (int k = 0; k < BT_GIN_V2_QWORDS; k++)
        q[k] = 1;
    q[BT_GIN_V2_HEADER] |= (uint64_t)BT_GIN_V2_GFD_VERSION << 1 | g->size << 7;
    if (g->op & ncclGinProxyOpWithInline) {
        q[BT_GIN_V2_INLINE_LOW] |=
            (g->inline_val & 0xffffffffull) << 8 | ((g->inline_val >> 32) & 0xffff) << 40;
        q[BT_GIN_V2_INLINE_HIGH] |= (g->inline_val >> 48) << 8;
    } else {
        q[BT_GIN_V2_SRC_OFF] |= g->src_off << 1;
        q[BT_GIN_V2_SRC_HANDLE] |= g->src_handle << 1;
    }
    q[BT_GIN_V2_DST_OFF] |= g->dst_off << 1;
    q[BT_GIN_V2_DST_HANDLE] |= g->dst_handle << 1;
    q[BT_GIN_V2_COMPLETION] |=
        (uint64_t)g->counter << 1 | (uint64_t)g->signal << 24 | (g->signal_val & 0xffff) << 48;
    q[BT_GIN_V2_SIGNAL_VAL] |= (uint64_t)(g->strong != 0) << 1 |
                               ((g->signal_val >> 16) & 0xffff) << 8 | (g->signal_val >> 32) << 24;
    q[BT_GIN_V2_HEADER_EXT] |= (uint64_t)g->op << 8;
}

/* 2.28's: 8 flagged qwords, the op in the header (include/nccl_device/layout.h); `wide`:
 * 2.29.5's, whose completion word is 2.30.5's (23-bit counter, 24-bit signal ids) */
static void encode_v1(const struct gfd *g, int wide, uint64_t q[ncclGinProxyGfdQwords])
{
    for (int k = 0; k < ncclGinProxyGfdQwords; k++)
        q[k] = 1;
    q[ncclGinProxyGfdHeader] |= (uint64_t)g->op << 1 | g->size << 7;
    if (g->op & ncclGinProxyOpWithInline) {
        q[ncclGinProxyGfdInlineLow] |=
            (g->inline_val & 0xffffffffull) << 8 | ((g->inline_val >> 32) & 0xffff) << 40;
        q[ncclGinProxyGfdInlineHigh] |= (g->inline_val >> 48) << 8;
    } else {
        q[ncclGinProxyGfdSrcOff] |= g->src_off << 1;
        q[ncclGinProxyGfdSrcHandle] |= g->src_handle << 1;
    }
    q[ncclGinProxyGfdDstOff] |= g->dst_off << 1;
    q[ncclGinProxyGfdDstHandle] |= g->dst_handle << 1;
    if (wide)
        q[ncclGinProxyGfdCompletion] |=
            (uint64_t)g->counter << 1 | (uint64_t)g->signal << 24 | (g->signal_val & 0xffff) << 48;
    else
        q[ncclGinProxyGfdCompletion] |=
            (uint64_t)g->counter << 8 | (uint64_t)g->signal << 24 | (g->signal_val & 0xffff) << 40;
    q[ncclGinProxyGfdSignalVal] |= ((g->signal_val >> 16) & 0xffff) << 8 | (g->signal_val >> 32)
                                                                               << 24;
}

static ncclGinProxyGpuCtx_t *ctx_of(struct rank *r, int c)
{
    return r->format == BT_GIN_V2 ? &r->v2[c].v1 : &r->v1[c];
}

/* Wait (as a kernel spins) until *p reaches `want` (cyclic), or give up after TIMEOUT. */
static int wait_u32(const uint32_t *p, uint32_t want, const char *what, int rank)
{
    uint64_t deadline = bt_time_ns() + 60ull * 1000000000ull * (uint64_t)bt_test_slow();
    while ((int32_t)(__atomic_load_n(p, __ATOMIC_ACQUIRE) - want) < 0) {
        if (bt_time_ns() > deadline) {
            fprintf(stderr, "rank %d: %s stayed at %u, want %u\n", rank, what,
                    __atomic_load_n(p, __ATOMIC_ACQUIRE), want);
            return 0;
        }
        sched_yield();
    }
    return 1;
}

static int wait_u64(const uint64_t *p, uint64_t want, const char *what, int rank)
{
    uint64_t deadline = bt_time_ns() + 60ull * 1000000000ull * (uint64_t)bt_test_slow();
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < want) {
        if (bt_time_ns() > deadline) {
            fprintf(stderr, "rank %d: %s stayed at %llu, want %llu\n", rank, what,
                    (unsigned long long)__atomic_load_n(p, __ATOMIC_ACQUIRE),
                    (unsigned long long)want);
            return 0;
        }
        sched_yield();
    }
    return 1;
}

/* Post descriptor g to context c's queue to rank pe, waiting for credit first, as NCCL's
 * postGfd does; returns the consumer index that says it is served. */
static uint32_t post(struct rank *r, int c, int pe, const struct gfd *g)
{
    ncclGinProxyGpuCtx_t *x = ctx_of(r, c);
    int nq = r->format == BT_GIN_V2 ? BT_GIN_V2_QWORDS : ncclGinProxyGfdQwords;
    uint64_t q[BT_GIN_V2_QWORDS];
    if (r->format == BT_GIN_V2)
        encode_v2(g, q);
    else
        encode_v1(g, r->format == BT_GIN_V1_WIDE, q);
    uint32_t idx = r->pi[c][pe]++;
    if (!wait_u32(&x->cis[pe], idx - QS + 1, "credit", r->rank))
        r->ok = 0;
    uint64_t *slot = (uint64_t *)x->queues + ((size_t)pe * QS + (idx & (QS - 1))) * (size_t)nq;
    for (int k = 1; k < nq; k++)
        __atomic_store_n(&slot[k], q[k], __ATOMIC_RELAXED);
    __atomic_store_n(&slot[0], q[0], __ATOMIC_RELEASE); /* the proxy looks at this one first */
    return idx + 1;
}

/* ---- one rank ------------------------------------------------------------------------- */

static size_t round_bytes(int k)
{
    static const size_t sizes[] = {1, 8, 1000, 65536, 262144, 262145, PART};
    return sizes[k % (int)(sizeof(sizes) / sizeof(sizes[0]))];
}

static void round_run(struct rank *r, int k)
{
    int me = r->rank, n = NRANKS, c = k % r->nctx, v2 = r->format == BT_GIN_V2;
    int va = r->format != BT_GIN_V1; /* VA signals: 2.29.5 on; gets: 2.30.5 on (v2) */
    size_t bytes = round_bytes(k);
    ncclGinProxyGpuCtx_t *x = ctx_of(r, c);
    for (int p = 0; p < n; p++)
        for (size_t i = 0; i < bytes; i++)
            r->send[p * PART + i] = pattern(me, p, k, i);
    memset(r->recv, 0xee, VA); /* all but the VA word */
    uint64_t s0 = __atomic_load_n(&x->signals[0], __ATOMIC_ACQUIRE);
    uint64_t s1 = __atomic_load_n(&x->signals[1], __ATOMIC_ACQUIRE);
    uint64_t c0 = __atomic_load_n(&x->counters[0], __ATOMIC_ACQUIRE);
    uint64_t v0 = __atomic_load_n((uint64_t *)(r->recv + VA), __ATOMIC_ACQUIRE);
    uint64_t other =
        r->nctx > 1 ? __atomic_load_n(&ctx_of(r, 1 - c)->signals[0], __ATOMIC_ACQUIRE) : 0;
    pthread_barrier_wait(&barrier); /* every rank's windows ready */
    int from = (me + 1) % n;
    uint32_t got_ci = 0;
    for (int p = 0; p < n; p++) {
        struct gfd put = {.op = ncclGinProxyOpPut | ncclGinProxyOpWithSignalInc |
                                ncclGinProxyOpWithCounter,
                          .size = bytes,
                          .src_off = (uint64_t)p * PART,
                          .src_handle = WIN_SEND,
                          .dst_off = (uint64_t)me * PART,
                          .dst_handle = WIN_RECV,
                          .counter = 0,
                          .signal = 0,
                          .strong = 1};
        post(r, c, p, &put);
        struct gfd val = {.op = ncclGinProxyOpPut | ncclGinProxyOpWithInline |
                                ncclGinProxyOpWithSignalAdd,
                          .size = 8,
                          .inline_val = tag(me, k),
                          .dst_off = VALUES + (uint64_t)me * 8,
                          .dst_handle = WIN_RECV,
                          .signal = 1,
                          .signal_val = 3};
        post(r, c, p, &val);
        if (va) {
            struct gfd sig = {.op = BT_GIN_OP_VA_SIGNAL | ncclGinProxyOpWithSignalAdd,
                              .src_off = VA,
                              .src_handle = WIN_RECV,
                              .signal_val = 5,
                              .strong = 1};
            post(r, c, p, &sig);
        }
    }
    if (v2) { /* the next rank's part for this one, out of its send window */
        struct gfd get = {.op = BT_GIN_OP_GET,
                          .size = bytes,
                          .src_off = (uint64_t)me * PART,
                          .src_handle = WIN_SEND,
                          .dst_off = GOT,
                          .dst_handle = WIN_RECV};
        got_ci = post(r, c, from, &get);
    }
    int ok = wait_u64(&x->signals[0], s0 + n, "signal 0", me) &&
             wait_u64(&x->signals[1], s1 + 3ull * n, "signal 1", me) &&
             wait_u64(&x->counters[0], c0 + n, "counter 0", me);
    if (ok && va)
        ok = wait_u64((uint64_t *)(r->recv + VA), v0 + 5ull * n, "the VA signal", me);
    if (ok && v2) {
        ok = wait_u32(&x->cis[from], got_ci, "the get's queue", me);
        struct gfd flush = {.op = BT_GIN_OP_FLUSH}; /* as ncclGin's wait posts it: to itself */
        uint32_t f = post(r, c, me, &flush);
        ok = ok && wait_u32(&x->cis[me], f, "the flush", me);
    }
    /* every byte, value and count */
    size_t bad = 0;
    for (int src = 0; ok && src < n; src++) {
        for (size_t i = 0; i < bytes; i++)
            bad += r->recv[src * PART + i] != pattern(src, me, k, i);
        if (bytes < PART)
            bad += r->recv[src * PART + bytes] != 0xee;
        uint64_t v;
        memcpy(&v, r->recv + VALUES + src * 8, 8);
        bad += v != tag(src, k);
    }
    for (size_t i = 0; ok && v2 && i < bytes; i++)
        bad += r->recv[GOT + i] != pattern(from, me, k, i);
    pthread_barrier_wait(&barrier); /* every get of this round's send windows is done */
    if (ok && (__atomic_load_n(&x->signals[0], __ATOMIC_ACQUIRE) != s0 + n ||
               __atomic_load_n(&x->signals[1], __ATOMIC_ACQUIRE) != s1 + 3ull * n ||
               __atomic_load_n(&x->counters[0], __ATOMIC_ACQUIRE) != c0 + n ||
               (r->nctx > 1 &&
                __atomic_load_n(&ctx_of(r, 1 - c)->signals[0], __ATOMIC_ACQUIRE) != other))) {
        fprintf(stderr, "rank %d round %d: a signal or counter moved by other than n\n", me, k);
        bad++;
    }
    if (!ok || bad) {
        fprintf(stderr, "rank %d round %d (%s, context %d, %zu bytes): %zu wrong%s\n", me, k,
                v2   ? "V2"
                : va ? "V1_WIDE"
                     : "V1",
                c, bytes, bad, ok ? "" : ", a wait gave up");
        r->ok = 0;
    }
}

/* The errors: a put and a get naming a window rank 1 does not have. Rank 1's proxy says so
 * (its failure callback); rank 0's queue moves on. */
static void errors(struct rank *r)
{
    if (r->rank == 0) {
        struct gfd put = {
            .op = ncclGinProxyOpPut, .size = 64, .src_handle = WIN_SEND, .dst_handle = 9};
        struct gfd get = {.op = BT_GIN_OP_GET,
                          .size = 64,
                          .src_handle = 9,
                          .dst_handle = WIN_RECV,
                          .dst_off = GOT};
        uint32_t a = post(r, 0, 1, &put), b = post(r, 0, 1, &get);
        if (!wait_u32(&ctx_of(r, 0)->cis[1], a, "after a bad put", 0) ||
            !wait_u32(&ctx_of(r, 0)->cis[1], b, "after a bad get", 0))
            r->ok = 0;
    }
    pthread_barrier_wait(&barrier);
}

struct run_arg {
    struct rank *r;
    int format;
};

static void *rank_thread(void *p)
{
    struct run_arg *a = p;
    struct rank *r = a->r;
    struct bt_comm *comm = (struct bt_comm *)comms[r->rank];
    r->format = a->format;
    r->nctx = a->format == BT_GIN_V1 ? 1 : CTXS;
    memset(r->pi, 0, sizeof(r->pi));
    atomic_store(&r->failed, 0);
    struct bt_gin_proxy_cfg cfg = {.dev = -1,
                                   .format = a->format,
                                   .ncontexts = (uint32_t)r->nctx,
                                   .nsignals = NSIG,
                                   .ncounters = NCNT,
                                   .queue_size = QS,
                                   .window = window,
                                   .failed = failed,
                                   .arg = r};
    void *dev_ctx = NULL;
    if (bt_gin_proxy_open(&comm->tctx, &cfg, &r->gp, &dev_ctx) != BT_OK) {
        r->ok = 0;
        return NULL;
    }
    r->v2 = dev_ctx;
    r->v1 = dev_ctx;
    for (int k = 0; k < ROUNDS && r->ok; k++)
        round_run(r, k);
    if (a->format == BT_GIN_V2 && r->ok) {
        errors(r);
        int want = r->rank == 1;
        if (atomic_load(&r->failed) != want) {
            fprintf(stderr, "rank %d: failure callback %s\n", r->rank,
                    want ? "not called for a missing window" : "called");
            r->ok = 0;
        }
    }
    pthread_barrier_wait(&barrier); /* nobody's proxy closes while another's still sends */
    bt_gin_proxy_close(r->gp);
    return NULL;
}

static void run(struct rank *ranks, int format)
{
    pthread_t t[NRANKS];
    struct run_arg args[NRANKS];
    for (int i = 0; i < NRANKS; i++) {
        args[i] = (struct run_arg){.r = &ranks[i], .format = format};
        BT_TEST_CHECK(pthread_create(&t[i], NULL, rank_thread, &args[i]) == 0, "thread");
    }
    for (int i = 0; i < NRANKS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NRANKS; i++)
        BT_TEST_CHECK(ranks[i].ok, "rank %d failed (%s format)", i,
                      format == BT_GIN_V2        ? "2.30.5's"
                      : format == BT_GIN_V1_WIDE ? "2.29.5's"
                                                 : "2.28's");
}

int main(void)
{
    setenv("BATON_DEVICE", "cpu", 1);
    setenv("BATON_TEST_HOSTS", "3", 1); /* a host per rank: the network between them */
    BT_TEST_OK(ncclCommInitAll(comms, NRANKS, NULL));
    BT_TEST_CHECK(pthread_barrier_init(&barrier, NULL, NRANKS) == 0, "barrier");
    struct rank ranks[NRANKS];
    for (int i = 0; i < NRANKS; i++) {
        memset(&ranks[i], 0, sizeof(ranks[i]));
        ranks[i].rank = i;
        ranks[i].ok = 1;
        ranks[i].send = malloc(NRANKS * PART);
        ranks[i].recv = calloc(1, RECV_BYTES);
        BT_TEST_CHECK(ranks[i].send && ranks[i].recv, "out of memory");
    }
    run(ranks, BT_GIN_V2);
    printf("2.30.5's descriptors, %d contexts: %d rounds of puts, values, VA signals and gets "
           "between %d ranks exact; a bad put and get WARNed at the target, the queue went on\n",
           CTXS, ROUNDS, NRANKS);
    run(ranks, BT_GIN_V1_WIDE);
    printf("2.29.5's descriptors, %d contexts: %d rounds of puts, values and VA signals exact\n",
           CTXS, ROUNDS);
    run(ranks, BT_GIN_V1);
    printf("2.28's descriptors: %d rounds of puts and values exact\n", ROUNDS);
    for (int i = 0; i < NRANKS; i++) {
        free(ranks[i].send);
        free(ranks[i].recv);
        BT_TEST_OK(ncclCommDestroy(comms[i]));
    }
    pthread_barrier_destroy(&barrier);
    printf("test_gin_proxy: ok\n");
    return 0;
}
