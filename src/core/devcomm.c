/* Device communicators (devcomm.h). */
#include "core/devcomm.h"

#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/win_table.h"
#include "core/window.h"
#include "device/device.h"
#include "exec/exec.h"
#include "transport/gin_proxy.h"
#include "util/log.h"

#define UNIT 128 /* a resource handle counts 128-byte units of the resource window */

#define GIN_QUEUE 64        /* descriptors per peer queue of a GIN proxy context (a power of two) */
#define GIN_QUEUE_MAX 4096  /* ... at most, whatever ginQueueDepth asks */
#define GIN_CONTEXTS_MAX 64 /* 2.30: GIN contexts a device communicator gets at most */

struct bt_devcomm {
    struct bt_devcomm *next;
    void *buf;             /* the resource window's memory (ncclMemAlloc's) */
    struct bt_window *win; /* ... registered */
    /* its GIN context (proxy type), when asked: served by a thread of its own
     * (transport/gin_proxy.h); the signal shadows are the device's alone */
    struct bt_gin_proxy *gin;
    void *shadows;
};

/* The ids the communicator hands out: signals or counters, the user's first. Counted past
 * 32 bits, so that a request too large for the descriptors is refused, not wrapped. */
struct ids {
    uint64_t next;
};

static uint32_t take(struct ids *a, long long n)
{
    uint64_t first = a->next;
    a->next += n > 0 ? (uint64_t)n : 0;
    return (uint32_t)first;
}

/* 2^32 / x as NCCL's device code divides with it (a power of two's rounds up to 2^32 / x). */
static uint32_t rcp32(uint32_t x)
{
    return UINT32_MAX / x + ((x & (x - 1)) == 0);
}

static size_t round_up(size_t x, size_t unit)
{
    return (x + unit - 1) / unit * unit;
}

/* What this implementation cannot give yet, WARNed naming it; BT_OK if nothing. */
static bt_status_t refuse_unsupported(const struct bt_comm *comm,
                                      const struct ncclDevCommRequirements *q)
{
    const char *what = NULL;
    int gin_res = 0;
    for (const struct ncclDevResourceRequirements *r = q->resourceRequirementsList; r; r = r->next)
        gin_res |= r->ginSignalCount > 0 || r->ginCounterCount > 0;
    int mm = q->lsaMultimem;
    for (const struct ncclTeamRequirements *t = q->teamRequirementsList; t; t = t->next)
        mm |= t->multimem;
    if (comm->cuda_dev < 0)
        what = "a device communicator of a host-memory communicator (it needs GPU memory)";
    else if (atomic_load_explicit(&comm->revoked, memory_order_acquire))
        what = "a device communicator of a revoked communicator (its kernels' abort flag stays "
               "raised; shrink it and use the new one)";
    else if (mm)
        what = "multimem (NVLink multicast is never offered)";
    if (!what)
        return BT_OK;
    BT_WARN("ncclDevCommCreate: rank %d: %s", comm->rank, what);
    return BT_ERR_INVALID_USAGE;
}

/* Whether the requirements ask for GIN (a context, signals, counters, GIN barriers). */
static int wants_gin(const struct ncclDevCommRequirements *q)
{
    int gin = q->ginForceEnable || q->ginContextCount > 0 || q->ginSignalCount > 0 ||
              q->ginCounterCount > 0 || q->barrierCount > 0 || q->railGinBarrierCount > 0;
    for (const struct ncclDevResourceRequirements *r = q->resourceRequirementsList; r && !gin;
         r = r->next)
        gin = r->ginSignalCount > 0 || r->ginCounterCount > 0;
    return gin;
}

/* How the GIN proxy finds this rank's window of a GIN handle. */
static int gin_window(void *arg, uint64_t handle, char **base, size_t *bytes)
{
    return bt_window_gin_find(arg, handle, base, bytes);
}

/* A put the GIN proxy could not carry: the communicator's asynchronous error (the kernel
 * waiting for its signal would wait forever). */
static void gin_failed(void *arg, bt_status_t st)
{
    bt_comm_set_async_error(arg, st);
}

/*
 * The GIN contexts (proxy type: NCCL's ncclGinProxyGpuCtx_t, 2.28's or 2.30.5's), served by
 * the GIN proxy (transport/gin_proxy.h): puts, gets, signals and counters to every rank, this
 * one included, over the communicator's network. One connection; `ncontexts` contexts of
 * `nsignals` signals and `ncounters` counters each, and a signal shadow per context and
 * signal (the device's alone). Collective (the proxy links every pair of ranks).
 */
static bt_status_t gin_context(struct bt_comm *comm, struct bt_devcomm *d, int format,
                               uint32_t ncontexts, uint32_t nsignals, uint32_t ncounters,
                               uint32_t queue, struct ncclDevComm *out)
{
    BT_CHECK(bt_device_alloc_zeroed(&d->shadows,
                                    sizeof(uint64_t) * ncontexts * (nsignals ? nsignals : 1)));
    struct bt_gin_proxy_cfg cfg = {.dev = comm->cuda_dev,
                                   .format = format,
                                   .ncontexts = ncontexts,
                                   .nsignals = nsignals,
                                   .ncounters = ncounters,
                                   .queue_size = queue,
                                   .window = gin_window,
                                   .failed = gin_failed,
                                   .arg = comm};
    void *ctx = NULL;
    BT_CHECK(bt_gin_proxy_open(&comm->tctx, &cfg, &d->gin, &ctx));
    out->ginContextCount = 1; /* 2.30's terms: one connection */
    out->ginTypes[0] = 2;     /* NCCL_NET_DEVICE_GIN_PROXY */
    out->ginHandles[0] = ctx;
    out->ginSignalShadows = d->shadows;
    return BT_OK;
}

/* The proxy's queue depth for a 2.30 ginQueueDepth (<= 0: the default): a power of two. */
static uint32_t queue_depth(int asked)
{
    uint32_t q = GIN_QUEUE;
    if (asked > 0) {
        q = 16;
        while (q < (uint32_t)asked && q < GIN_QUEUE_MAX)
            q <<= 1;
    }
    return q;
}

static void gin_free(struct bt_devcomm *d)
{
    bt_gin_proxy_close(d->gin);
    d->gin = NULL;
    bt_device_free(d->shadows);
    d->shadows = NULL;
}

static void free_one(struct bt_comm *comm, struct bt_devcomm *d);

/* The comm's device-API abort flag (comm.h), made at its first device communicator. */
static bt_status_t abort_flag(struct bt_comm *comm, uint32_t **dev)
{
    if (!atomic_load_explicit(&comm->devapi_abort_h, memory_order_acquire)) {
        void *h, *d;
        BT_CHECK(bt_device_host_mapped(&h, &d, sizeof(uint32_t)));
        /* an abort that came before: kernels launched from now on see it too */
        *(volatile uint32_t *)h = __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) != 0;
        comm->devapi_abort_d = d;
        atomic_store_explicit(&comm->devapi_abort_h, h, memory_order_release);
        /* an abort meanwhile: either it sees the flag published (bt_devcomm_abort's fence
         * pairs with this one) or this sees its abort_flag */
        atomic_thread_fence(memory_order_seq_cst);
        if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE))
            bt_devcomm_abort(comm);
    }
    *dev = comm->devapi_abort_d;
    return BT_OK;
}

void bt_devcomm_abort(struct bt_comm *comm)
{
    atomic_thread_fence(memory_order_seq_cst); /* after the caller's abort_flag (abort_flag()) */
    uint32_t *h = atomic_load_explicit(&comm->devapi_abort_h, memory_order_acquire);
    if (h)
        __atomic_store_n(h, 1, __ATOMIC_RELEASE);
}

/* A device communicator's plan (plan_layout): whose rules lay its GIN out, where its
 * barriers and the requirements' buffers lie in the resource window, the GIN ids they take. */
struct layout {
    int v2, v229, wide, gin; /* the rules (plan_layout says whose) and whether GIN is asked */
    int lsa_base, lsa_size;
    size_t nb_lsa, nb_rail, total;
    ncclDevResourceHandle_t lsa_handle, rail_handle;
    uint32_t rail_signal0, nctx;
    struct ids sig, cnt;
};

static bt_status_t check_counts(const struct bt_devcomm_reqs *reqs)
{
    const struct ncclDevCommRequirements *q = &reqs->q;
    if (q->lsaBarrierCount < 0 || q->barrierCount < 0 || q->railGinBarrierCount < 0 ||
        reqs->world_gin_barriers < 0 || q->ginSignalCount < 0 || q->ginCounterCount < 0 ||
        q->lsaLLA2ABlockCount < 0 || q->lsaLLA2ASlotCount < 0) {
        BT_WARN("ncclDevCommCreate: a negative count (lsaBarrierCount %d, barrierCount %d, "
                "railGinBarrierCount %d, ginSignalCount %d, ginCounterCount %d)",
                q->lsaBarrierCount, q->barrierCount, q->railGinBarrierCount, q->ginSignalCount,
                q->ginCounterCount);
        return BT_ERR_INVALID_ARG;
    }
    return BT_OK;
}

/* The layout of the requirements (the requirements' out-handles and id starts written
 * here), and the GIN fields of `fill` that follow from it; refused, WARNed, where an id or a
 * context count would not fit what the release's descriptors name. */
static bt_status_t plan_layout(struct bt_comm *comm, const struct bt_devcomm_reqs *reqs,
                               struct layout *l, struct bt_devcomm_fill *fill)
{
    const struct ncclDevCommRequirements *q = &reqs->q;
    memset(l, 0, sizeof(*l));
    bt_comm_lsa(comm, &l->lsa_base, &l->lsa_size);
    /* Whose rules lay the GIN out. 2.28's (and 2.29.2-3's): a world barrier is an LSA
     * barrier, then a GIN barrier across the rail (a signal and an epoch word per context
     * each), of one index; one context. 2.29.5's and 2.30.5's: a GIN barrier of a team is a
     * signal per barrier and team rank, no buffer, and contexts come in an array. 2.29.5's
     * world barrier is still an LSA and a rail GIN barrier of one index; 2.30.5's has an LSA
     * barrier of its own beside a rail and a world GIN barrier. */
    l->v2 = reqs->abi == BT_DEVAPI_ABI_2_30 && reqs->gin_connection != 0;
    l->v229 = reqs->abi == BT_DEVAPI_ABI_2_29_5 && reqs->gin_connection != 0;
    l->wide = l->v2 || l->v229; /* 2.29.5+'s GIN: contexts, ids of 24 and 23 bits */
    l->gin = l->wide || wants_gin(q);
    size_t nb_hybrid_lsa = 0;
    if (l->v2) {
        l->nb_lsa = (size_t)q->lsaBarrierCount;
        nb_hybrid_lsa = (size_t)q->barrierCount;
    } else {
        l->nb_lsa =
            (size_t)(q->lsaBarrierCount > q->barrierCount ? q->lsaBarrierCount : q->barrierCount);
        l->nb_rail = (size_t)(q->railGinBarrierCount > q->barrierCount ? q->railGinBarrierCount
                                                                       : q->barrierCount);
    }
    take(&l->sig, q->ginSignalCount); /* the user's: ids 0 .. ginSignalCount - 1 */
    take(&l->cnt, q->ginCounterCount);

    /* the layout: the LSA barriers (2.30: the world barriers' own next), the rail GIN
     * barriers (2.28), then each requirement's buffer at its alignment */
    size_t off = 0;
    if (l->nb_lsa > 0) {
        l->lsa_handle = (ncclDevResourceHandle_t)(off / UNIT);
        off += round_up(sizeof(uint32_t) * l->nb_lsa * (3 + (size_t)l->lsa_size), UNIT);
    }
    if (nb_hybrid_lsa > 0) {
        fill->hybrid_lsa.bufHandle = (ncclDevResourceHandle_t)(off / UNIT);
        fill->hybrid_lsa.nBarriers = (int)nb_hybrid_lsa;
        off += round_up(sizeof(uint32_t) * nb_hybrid_lsa * (3 + (size_t)l->lsa_size), UNIT);
    }
    int rail = comm->nranks / l->lsa_size; /* a rail: one rank per host */
    if (l->v229) {                         /* its rail GIN barriers are signals alone */
        l->rail_signal0 = take(&l->sig, (long long)l->nb_rail * rail);
    } else if (l->nb_rail > 0) {
        l->rail_handle = (ncclDevResourceHandle_t)(off / UNIT);
        off += round_up(sizeof(uint32_t) * l->nb_rail * NCCL_GIN_MAX_CONTEXTS, UNIT);
        l->rail_signal0 = take(&l->sig, (int)l->nb_rail);
    }
    if (l->v2) {
        int n = comm->nranks, railed = reqs->gin_connection == 2;
        fill->world_gin.signal0 = take(&l->sig, (long long)reqs->world_gin_barriers * n);
        l->rail_signal0 = take(&l->sig, (long long)q->railGinBarrierCount * rail);
        fill->hybrid_world.signal0 = take(&l->sig, railed ? 0 : (long long)q->barrierCount * n);
        fill->hybrid_rail.signal0 = take(&l->sig, (long long)q->barrierCount * rail);
        fill->gin_contexts_railed = railed;
        fill->gin_strong = reqs->gin_strong != 0;
    }
    for (const struct ncclDevResourceRequirements *r = q->resourceRequirementsList; r;
         r = r->next) {
        size_t align = r->bufferAlign > UNIT ? r->bufferAlign : UNIT;
        if (align & (align - 1)) {
            BT_WARN("ncclDevCommCreate: a resource requirement's bufferAlign %zu is not a power "
                    "of two",
                    r->bufferAlign);
            return BT_ERR_INVALID_ARG;
        }
        off = round_up(off, align);
        if (r->outBufferHandle)
            *r->outBufferHandle = (ncclDevResourceHandle_t)(off / UNIT);
        off += round_up(r->bufferSize, UNIT);
        uint32_t s0 = take(&l->sig, r->ginSignalCount), c0 = take(&l->cnt, r->ginCounterCount);
        if (r->outGinSignalStart)
            *r->outGinSignalStart = s0;
        if (r->outGinCounterStart)
            *r->outGinCounterStart = c0;
    }
    l->total = off > UNIT ? off : UNIT;
    /* every id must fit its descriptor field: 16 bits each in 2.28's, 24 (signals) and 23
     * (counters) in 2.30's */
    uint32_t max_sig = l->wide ? 1u << 24 : 1u << 16, max_cnt = l->wide ? 1u << 23 : 1u << 16;
    if (l->gin && (l->sig.next > max_sig || l->cnt.next > max_cnt)) {
        BT_WARN(
            "ncclDevCommCreate: rank %d: %llu GIN signals and %llu counters (the user's, the GIN "
            "barriers' and the resource requirements'): NCCL %u.%u's GIN descriptors name at "
            "most %u and %u",
            comm->rank, (unsigned long long)l->sig.next, (unsigned long long)l->cnt.next,
            reqs->version / 10000, reqs->version / 100 % 100, max_sig, max_cnt);
        return BT_ERR_INVALID_ARG;
    }
    l->nctx = 1;
    if (l->wide) { /* ginContextCount: contexts the kernels index (2.30's initializer asks 4) */
        l->nctx = q->ginContextCount > 0 ? (uint32_t)q->ginContextCount : 1;
        if (l->nctx > GIN_CONTEXTS_MAX) {
            BT_WARN("ncclDevCommCreate: ginContextCount %d: Baton's GIN proxy gives at most %d "
                    "contexts to a device communicator",
                    q->ginContextCount, GIN_CONTEXTS_MAX);
            return BT_ERR_INVALID_ARG;
        }
    }
    fill->gin_contexts = l->gin ? l->nctx : 0;
    return BT_OK;
}

/* The device communicator's memory and threads as laid out: the resource window (zeroed,
 * registered symmetric, mapped flat on the LSA team), the abort flag, the window table and
 * the GIN context; *dp on success, nothing left behind on failure. */
static bt_status_t make_resources(struct bt_comm *comm, const struct bt_devcomm_reqs *reqs,
                                  const struct layout *l, struct bt_devcomm_fill *fill,
                                  struct bt_devcomm **dp)
{
    struct bt_devcomm *d = calloc(1, sizeof(*d));
    if (!d)
        return BT_ERR_SYSTEM;
    struct ncclDevComm *o = &fill->v228;
    int prev = bt_device_get();
    bt_status_t st = bt_device_set(comm->cuda_dev);
    if (st == BT_OK)
        st = abort_flag(comm, &fill->abort_flag);
    if (st == BT_OK)
        st = bt_win_table_get(comm, bt_exec_of(BT_EXEC_CUDA), (void **)&o->windowTable);
    if (st == BT_OK)
        st = bt_device_mem_alloc(&d->buf, l->total);
    if (st == BT_OK)
        st = bt_device_zero(d->buf, l->total); /* barrier epochs and inboxes start at 0 */
    if (st == BT_OK && l->gin)
        st = gin_context(comm, d,
                         l->v2     ? BT_GIN_V2
                         : l->v229 ? BT_GIN_V1_WIDE
                                   : BT_GIN_V1,
                         l->nctx, l->sig.next, l->cnt.next,
                         l->wide ? queue_depth(reqs->gin_queue_depth) : GIN_QUEUE, o);
    if (prev >= 0)
        (void)bt_device_set(prev);
    if (st != BT_OK) { /* (the other ranks wait in the registration until TIMEOUT) */
        gin_free(d);
        if (d->buf)
            bt_device_mem_free(d->buf);
        free(d);
        return st;
    }
    st = bt_window_register(comm, d->buf, l->total, BT_WIN_SYMMETRIC, &d->win);
    if (st == BT_OK && l->lsa_size > 1 && !(d->win->lsa_mapped && d->win->mine.flat)) {
        BT_WARN("ncclDevCommCreate: rank %d: the resource window could not be mapped flat on "
                "every rank of its LSA team (ncclMemAlloc's memory is not VMM here? "
                "CUMEM_ENABLE=0?)",
                comm->rank);
        st = BT_ERR_INVALID_USAGE;
    }
    if (st != BT_OK) {
        if (d->win) {
            free_one(comm, d);
        } else {
            gin_free(d);
            bt_device_mem_free(d->buf);
            free(d);
        }
        return st;
    }
    *dp = d;
    return BT_OK;
}

bt_status_t bt_devcomm_create(struct bt_comm *comm, const struct bt_devcomm_reqs *reqs, void *out)
{
    const struct ncclDevCommRequirements *q = &reqs->q;
    BT_CHECK(refuse_unsupported(comm, q));
    BT_CHECK(check_counts(reqs));
    struct layout l;
    struct bt_devcomm_fill fill;
    memset(&fill, 0, sizeof(fill));
    BT_CHECK(plan_layout(comm, reqs, &l, &fill));
    struct bt_devcomm *d = NULL;
    BT_CHECK(make_resources(comm, reqs, &l, &fill, &d));

    struct ncclDevComm *o = &fill.v228;
    o->rank = comm->rank;
    o->nRanks = comm->nranks;
    o->nRanks_rcp32 = rcp32((uint32_t)comm->nranks);
    o->lsaRank = comm->rank - l.lsa_base;
    o->lsaSize = l.lsa_size;
    o->lsaSize_rcp32 = rcp32((uint32_t)l.lsa_size);
    o->resourceWindow = d->win->handle;
    o->resourceWindow_inlined = d->win->vid;
    o->lsaBarrier.bufHandle = l.lsa_handle;
    o->lsaBarrier.nBarriers = (int)l.nb_lsa;
    o->railGinBarrier.bufHandle = l.rail_handle;
    o->railGinBarrier.signal0 = l.rail_signal0;
    o->ginSignalBase = 0;
    o->ginCounterBase = 0;
    /* 2.28: the user's (one context: the rest follow them); 2.29.5+: every signal and
     * counter of a context (the shadows' stride per context) */
    o->ginSignalCount = l.wide ? (int)l.sig.next : q->ginSignalCount;
    o->ginCounterCount = l.wide ? (int)l.cnt.next : q->ginCounterCount;
    bt_devcomm_write(reqs->abi, reqs->version, &fill, out);
    d->next = comm->devcomms;
    comm->devcomms = d;
    BT_INFO(BT_LOG_INIT,
            "rank %d: device communicator: %zu bytes of resources, %zu LSA, %zu world and %zu "
            "rail GIN barriers, %u GIN context(s) of %u signals and %u counters (proxy type, "
            "served by the GIN proxy); NCCL %u.%u.%u's layout",
            comm->rank, l.total, l.nb_lsa, (size_t)q->barrierCount,
            l.v2 ? (size_t)q->railGinBarrierCount : l.nb_rail, fill.gin_contexts,
            (unsigned)l.sig.next, (unsigned)l.cnt.next, reqs->version / 10000,
            reqs->version / 100 % 100, reqs->version % 100);
    return BT_OK;
}

static void free_one(struct bt_comm *comm, struct bt_devcomm *d)
{
    bt_window_deregister(comm, d->win);
    bt_device_mem_free(d->buf);
    gin_free(d);
    free(d);
}

bt_status_t bt_devcomm_destroy(struct bt_comm *comm, const void *dc)
{
    const void *rw = bt_devcomm_resource_window(dc);
    struct bt_devcomm **pp = &comm->devcomms;
    while (*pp && (*pp)->win->handle != rw)
        pp = &(*pp)->next;
    if (!*pp) {
        BT_WARN("ncclDevCommDestroy: rank %d: %p is not a device communicator of comm %p "
                "(destroyed already?)",
                comm->rank, (const void *)dc, (void *)comm);
        return BT_ERR_INVALID_ARG;
    }
    struct bt_devcomm *d = *pp;
    *pp = d->next;
    free_one(comm, d);
    return BT_OK;
}

void bt_devcomm_free_all(struct bt_comm *comm)
{
    while (comm->devcomms) {
        struct bt_devcomm *d = comm->devcomms;
        comm->devcomms = d->next;
        free_one(comm, d);
    }
    uint32_t *h = atomic_load_explicit(&comm->devapi_abort_h, memory_order_acquire);
    if (h) {
        atomic_store_explicit(&comm->devapi_abort_h, NULL, memory_order_release);
        bt_device_host_free(h);
        comm->devapi_abort_d = NULL;
    }
}
