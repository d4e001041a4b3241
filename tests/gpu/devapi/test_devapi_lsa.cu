/*
 * gpu/test_devapi_lsa: windows as NVIDIA's device API reads them. Built against NVIDIA's
 * nccl.h and nccl_device.h (2.28.9) alone and linked to Baton's libnccl.so.2, so the inline
 * code that reads the window handle is NVIDIA's: each rank's kernel reads every LSA peer's
 * window through ncclGetLsaPointer (lsaFlatBase + peer * stride4G * 4 GiB + offset) and
 * ncclGetLocalPointer, and the host checks every element. Two windows: a whole ncclMemAlloc
 * buffer, and a part of one that starts 4 KB in (the same offset on every rank).
 * Then a device communicator (ncclDevCommCreate with an LSA barrier per block: in a group in
 * one process, alone per process) and collectives written against the device API, with
 * NVIDIA's ncclLsaBarrierSession around them: an AllReduce (each rank sums its share of the
 * elements from every rank's send window and writes the sums into every rank's receive
 * window) and an AllGather (each rank writes its send window into every rank's receive
 * window at its place), alternating over DEVAPI_ROUNDS (default 1000) random sizes, every
 * element checked on every rank.
 * N ranks (BATON_TEST_GPUS, default 2) on GPU 0: as ranks of one process (ncclCommInitAll),
 * or as processes under MPS (BATON_TEST_MPS=1).
 * Built against NCCL 2.29+ headers (their requirements initializer; tests/gpu/lab/devapi_v2.sh
 * builds it against 2.30.7's), the device communicator is written in that release's layout and
 * GIN is not asked (Baton serves it to 2.28 programs only): every round is an LSA round, and
 * the ncclDevComm's version header, abort flag and window segments are checked. Either way a
 * kernel finds each window by address through the window table (ncclFindWindow).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

extern "C" {
#include "harness.h"
}

#define CU BT_TEST_CUDA

/* NCCL 2.29+'s headers: versioned structs, no GIN asked (above) */
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
#define DEVAPI_V2 1
#else
#define DEVAPI_V2 0
#endif

static const size_t kCount = 1 << 20; /* ints per rank's buffer */
static const size_t kSkip = 1024;     /* the second window starts this many ints in */

/* out[p * n + i] = LSA rank p's window element i, read through NVIDIA's inline code; local[i]
 * the own window's through ncclGetLocalPointer. */
__global__ void read_lsa(ncclWindow_t win, int lsa_size, size_t n, int *out, int *local)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int p = 0; p < lsa_size; p++)
        for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            out[p * n + i] = *(const int *)ncclGetLsaPointer(win, i * sizeof(int), p);
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        local[i] = *(const int *)ncclGetLocalPointer(win, i * sizeof(int));
}

static int value(int rank, size_t i)
{
    return rank * 100000007 + (int)i;
}

static const int kBlocks = 4;           /* blocks of the collective kernels: a barrier each */
static const size_t kMaxColl = 1 << 16; /* ints of a collective's send window */

/* The device API's collectives over the LSA team (here every rank): the AllReduce reads share
 * `rank` of the elements from every rank and writes the sums to every rank; the AllGather
 * writes this rank's elements into every rank's receive window at its place. */
static __device__ void coll_body(int gather, ncclWindow_t send, ncclWindow_t recv, size_t count,
                                 const struct ncclDevComm &dc)
{
    const int n = dc.lsaSize, me = dc.lsaRank;
    if (gather) {
        const int *mine = (const int *)ncclGetLocalPointer(send, 0);
        for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
             i += (size_t)gridDim.x * blockDim.x)
            for (int p = 0; p < n; p++)
                ((int *)ncclGetLsaPointer(recv, 0, p))[me * count + i] = mine[i];
    } else {
        size_t first = (size_t)blockDim.x * (blockIdx.x + gridDim.x * me) + threadIdx.x;
        for (size_t i = first; i < count; i += (size_t)blockDim.x * gridDim.x * n) {
            int v = 0;
            for (int p = 0; p < n; p++)
                v += ((const int *)ncclGetLsaPointer(send, 0, p))[i];
            for (int p = 0; p < n; p++)
                ((int *)ncclGetLsaPointer(recv, 0, p))[i] = v;
        }
    }
}

__global__ void lsa_coll(int gather, ncclWindow_t send, ncclWindow_t recv, size_t count,
                         struct ncclDevComm dc, unsigned long long *signal0)
{
    (void)signal0;
    ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier,
                                           blockIdx.x};
    bar.sync(ncclCoopCta(), cuda::memory_order_acquire); /* every rank's send is written */
    coll_body(gather, send, recv, count, dc);
    bar.sync(ncclCoopCta(), cuda::memory_order_release); /* every write is done */
}

#if !DEVAPI_V2
/* The same between world barriers: an LSA barrier, then a GIN barrier across the rail (one
 * rank here: it reads its own signal through the GIN context); the user's signal 0 read
 * through the context too (nothing signals it: 0). */
__global__ void world_coll(int gather, ncclWindow_t send, ncclWindow_t recv, size_t count,
                           struct ncclDevComm dc, unsigned long long *signal0)
{
    ncclGin gin{dc, 0};
    ncclBarrierSession<ncclCoopCta> bar{ncclCoopCta(), ncclTeamTagWorld(), gin, blockIdx.x};
    bar.sync(ncclCoopCta(), cuda::memory_order_acquire, ncclGinFenceLevel::Relaxed);
    coll_body(gather, send, recv, count, dc);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *signal0 = gin.readSignal(0);
    bar.sync(ncclCoopCta(), cuda::memory_order_release, ncclGinFenceLevel::Relaxed);
}
#endif

static int coll_value(int rank, int round, size_t i)
{
    return (rank + 1) * 7919 + round * 31 + (int)i;
}

/* The collectives' state of one rank: send/recv windows and the device communicator. */
struct coll_state {
    int *send, *recv;
    ncclWindow_t sw, rw;
    struct ncclDevComm dc, gdc;  /* LSA barriers only; world barriers with a GIN context */
    unsigned long long *signal0; /* what world_coll read of signal 0 */
    int *extra;                  /* a window registered after the device communicators */
    ncclWindow_t ew;
};

/* On the rank's stream, before its kernel: a cudaMemcpy from pageable memory may return
 * before its copy lands, and the kernel runs on another stream. */
static void coll_fill(int rank, int round, size_t count, struct coll_state *c, cudaStream_t stream)
{
    std::vector<int> h(count);
    for (size_t i = 0; i < count; i++)
        h[i] = coll_value(rank, round, i);
    CU(cudaMemcpyAsync(c->send, h.data(), count * sizeof(int), cudaMemcpyHostToDevice, stream));
    CU(cudaStreamSynchronize(stream)); /* h is freed on return */
}

static size_t coll_verify(int n, int round, int gather, size_t count, struct coll_state *c)
{
    size_t len = gather ? n * count : count, bad = 0;
    std::vector<int> h(len);
    CU(cudaMemcpy(h.data(), c->recv, len * sizeof(int), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < len; i++) {
        int want = 0;
        if (gather)
            want = coll_value((int)(i / count), round, i % count);
        else
            for (int p = 0; p < n; p++)
                want += coll_value(p, round, i);
        bad += h[i] != want;
    }
    return bad;
}

/* Round k's element count: a quarter of the rounds up to kMaxColl, the rest up to 1024. */
static size_t coll_count(int round)
{
    unsigned x = (unsigned)round * 2654435761u + 12345u;
    x ^= x >> 13;
    x *= 2246822519u;
    x ^= x >> 16;
    return 1 + x % (round % 4 == 0 ? kMaxColl : 1024);
}

static int rounds(void)
{
    const char *r = getenv("DEVAPI_ROUNDS");
    return r ? atoi(r) : 1000;
}

/* Rounds from kGinRound on use the world barriers of the GIN device communicator (none for
 * 2.29+ headers). */
static const int kGinRound = DEVAPI_V2 ? 1 << 30 : 600;

struct rank_state {
    ncclComm_t comm;
    int *buf, *out, *local;
    ncclWindow_t win[2];
    cudaStream_t stream;
};

/* Every rank's buffer filled (and every rank done with it: the caller orders that). */
static void fill(int rank, struct rank_state *s)
{
    std::vector<int> h(kCount);
    for (size_t i = 0; i < kCount; i++)
        h[i] = value(rank, i);
    CU(cudaMemcpyAsync(s->buf, h.data(), kCount * sizeof(int), cudaMemcpyHostToDevice, s->stream));
    CU(cudaStreamSynchronize(s->stream));
}

static void launch(int n, struct rank_state *s, int w)
{
    size_t len = w == 0 ? kCount : kCount - kSkip;
    read_lsa<<<64, 256, 0, s->stream>>>(s->win[w], n, len, s->out, s->local);
    CU(cudaGetLastError());
}

/* What rank `rank` read through window w: every LSA rank's part, and its own. */
static size_t verify(int rank, int n, struct rank_state *s, int w)
{
    size_t len = w == 0 ? kCount : kCount - kSkip, first = w == 0 ? 0 : kSkip, bad = 0;
    std::vector<int> h(n * len), l(len);
    CU(cudaMemcpy(h.data(), s->out, n * len * sizeof(int), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(l.data(), s->local, len * sizeof(int), cudaMemcpyDeviceToHost));
    for (int p = 0; p < n; p++)
        for (size_t i = 0; i < len; i++)
            bad += h[p * len + i] != value(p, first + i);
    for (size_t i = 0; i < len; i++)
        bad += l[i] != value(rank, first + i);
    /* the handle itself: NCCL's ncclWindow_vidmem, in device memory */
    struct ncclWindow_vidmem v;
    CU(cudaMemcpy(&v, s->win[w], sizeof(v), cudaMemcpyDeviceToHost));
    BT_TEST_CHECK(v.lsaRank == (n > 1 ? rank : 0) && v.worldRank == rank &&
                      (n == 1 || v.stride4G >= 1) && v.winHost,
                  "window %d's handle: LSA rank %d, world rank %d, stride %u x 4 GiB", w, v.lsaRank,
                  v.worldRank, v.stride4G);
    if (bad)
        fprintf(stderr, "rank %d, window %d: %zu of %zu elements wrong\n", rank, w, bad,
                (n + 1) * len);
    return bad;
}

static void setup(int rank, struct rank_state *s)
{
    (void)rank;
    CU(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    BT_TEST_CHECK(ncclMemAlloc((void **)&s->buf, kCount * sizeof(int)) == ncclSuccess,
                  "ncclMemAlloc");
    CU(cudaMalloc((void **)&s->out, 8 * kCount * sizeof(int)));
    CU(cudaMalloc((void **)&s->local, kCount * sizeof(int)));
}

static void teardown(struct rank_state *s)
{
    BT_TEST_CHECK(ncclMemFree(s->buf) == ncclSuccess, "ncclMemFree");
    CU(cudaFree(s->out));
    CU(cudaFree(s->local));
    CU(cudaStreamDestroy(s->stream));
}

static void coll_setup(ncclComm_t comm, int n, struct coll_state *c)
{
    CU(cudaMalloc((void **)&c->signal0, sizeof(*c->signal0)));
    CU(cudaMemset(c->signal0, 0xff, sizeof(*c->signal0)));
    BT_TEST_CHECK(ncclMemAlloc((void **)&c->send, kMaxColl * sizeof(int)) == ncclSuccess &&
                      ncclMemAlloc((void **)&c->recv, n * kMaxColl * sizeof(int)) == ncclSuccess,
                  "ncclMemAlloc (collectives)");
    BT_TEST_CHECK(ncclCommWindowRegister(comm, c->send, kMaxColl * sizeof(int), &c->sw,
                                         NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess &&
                      ncclCommWindowRegister(comm, c->recv, n * kMaxColl * sizeof(int), &c->rw,
                                             NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess,
                  "ncclCommWindowRegister (collectives)");
}

static void coll_teardown(ncclComm_t comm, struct coll_state *c)
{
    BT_TEST_CHECK(ncclDevCommDestroy(comm, &c->dc) == ncclSuccess &&
                      (DEVAPI_V2 || ncclDevCommDestroy(comm, &c->gdc) == ncclSuccess),
                  "ncclDevCommDestroy");
    unsigned long long sig = 1;
    CU(cudaMemcpy(&sig, c->signal0, sizeof(sig), cudaMemcpyDeviceToHost));
    BT_TEST_CHECK(sig == 0 || rounds() <= kGinRound, /* (no GIN round: not read) */
                  "GIN signal 0 read %llu through the context, not 0", sig);
    CU(cudaFree(c->signal0));
    BT_TEST_CHECK(ncclCommWindowDeregister(comm, c->sw) == ncclSuccess &&
                      ncclCommWindowDeregister(comm, c->rw) == ncclSuccess,
                  "deregister (collectives)");
    BT_TEST_CHECK(ncclMemFree(c->send) == ncclSuccess && ncclMemFree(c->recv) == ncclSuccess,
                  "ncclMemFree (collectives)");
}

/* gin: world barriers, a GIN context with two signals and a counter (torch's symmetric
 * memory asks for rail GIN barriers too) */
static ncclDevCommRequirements coll_reqs(int gin)
{
#if DEVAPI_V2
    ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    gin = 0;
#else
    ncclDevCommRequirements reqs;
    memset(&reqs, 0, sizeof(reqs));
#endif
    reqs.lsaBarrierCount = kBlocks;
    if (gin) {
        reqs.barrierCount = kBlocks;
        reqs.railGinBarrierCount = kBlocks;
        reqs.ginContextCount = 1;
        reqs.ginSignalCount = 2;
        reqs.ginCounterCount = 1;
    }
    return reqs;
}

static void coll_launch(int round, size_t count, struct coll_state *c, cudaStream_t stream)
{
    if (round < kGinRound)
        lsa_coll<<<kBlocks, 256, 0, stream>>>(round % 2, c->sw, c->rw, count, c->dc, c->signal0);
#if !DEVAPI_V2
    else
        world_coll<<<kBlocks, 256, 0, stream>>>(round % 2, c->sw, c->rw, count, c->gdc, c->signal0);
#endif
    CU(cudaGetLastError());
}

/* The windows holding p[0..n) (NULL where none), as the device communicator's window table
 * tells the device API's ncclFindWindow (a warp looks). */
__global__ void find_windows(struct ncclDevComm dc, const void *const *p, int n, ncclWindow_t *out)
{
    for (int i = 0; i < n; i++) {
        ncclWindow_t w = ncclFindWindow(ncclCoopWarp(), dc, p[i]);
        if (threadIdx.x == 0)
            out[i] = w;
    }
}

static void barrier(ncclComm_t comm, cudaStream_t stream, int *scratch)
{
    BT_TEST_CHECK(ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, comm, stream) ==
                      ncclSuccess,
                  "ncclAllReduce (barrier)");
    CU(cudaStreamSynchronize(stream));
}

/* A window registered after the device communicator was made (the window table takes it). */
static void extra_register(ncclComm_t comm, struct coll_state *c)
{
    BT_TEST_CHECK(ncclMemAlloc((void **)&c->extra, 4096) == ncclSuccess, "ncclMemAlloc (extra)");
    BT_TEST_CHECK(ncclCommWindowRegister(comm, c->extra, 4096, &c->ew, NCCL_WIN_COLL_SYMMETRIC) ==
                      ncclSuccess,
                  "ncclCommWindowRegister (extra)");
}

static void extra_free(ncclComm_t comm, struct coll_state *c)
{
    BT_TEST_CHECK(ncclCommWindowDeregister(comm, c->ew) == ncclSuccess &&
                      ncclMemFree(c->extra) == ncclSuccess,
                  "deregister (extra)");
}

/* The device communicator as the program's headers lay it out, and its window table: a
 * kernel finds the send, receive and extra windows by addresses inside them. */
static void devcomm_check(int n, struct coll_state *c, cudaStream_t stream)
{
#if DEVAPI_V2
    BT_TEST_CHECK(c->dc.magic == 0xcafebeefu && c->dc.version == NCCL_VERSION_CODE &&
                      c->dc.abortFlag != NULL && c->dc.windowTable != NULL,
                  "the 2.29+ ncclDevComm: magic %#x, version %u, abortFlag %p, windowTable %p",
                  c->dc.magic, c->dc.version, (void *)c->dc.abortFlag, (void *)c->dc.windowTable);
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 30, 7)
    struct ncclWindow_vidmem v;
    CU(cudaMemcpy(&v, c->sw, sizeof(v), cudaMemcpyDeviceToHost));
    BT_TEST_CHECK(v.numSegments == 1 && v.ginMultiSegmentWins != NULL,
                  "2.30.7's window: %d segments at %p", v.numSegments,
                  (void *)v.ginMultiSegmentWins);
#endif
    const void *ptrs[4] = {c->send, c->send + 100, c->recv + (size_t)n * kMaxColl - 1,
                           c->extra + 10};
    ncclWindow_t want[4] = {c->sw, c->sw, c->rw, c->ew}, got[4];
    const void **dptrs;
    ncclWindow_t *dgot;
    CU(cudaMalloc((void **)&dptrs, sizeof(ptrs)));
    CU(cudaMalloc((void **)&dgot, sizeof(got)));
    CU(cudaMemcpy(dptrs, ptrs, sizeof(ptrs), cudaMemcpyHostToDevice));
    find_windows<<<1, 32, 0, stream>>>(c->dc, dptrs, 4, dgot);
    CU(cudaGetLastError());
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(got, dgot, sizeof(got), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++)
        BT_TEST_CHECK(got[i] == want[i], "ncclFindWindow(%p): %p, not %p", ptrs[i], (void *)got[i],
                      (void *)want[i]);
    CU(cudaFree(dptrs));
    CU(cudaFree(dgot));
}

/* One rank as a process (MPS). */
static int rank_main(int rank, int n, void *arg)
{
    const ncclUniqueId *id = (const ncclUniqueId *)arg;
    CU(cudaSetDevice(0));
    struct rank_state s;
    memset(&s, 0, sizeof(s));
    BT_TEST_CHECK(ncclCommInitRank(&s.comm, n, *id, rank) == ncclSuccess, "ncclCommInitRank");
    setup(rank, &s);
    BT_TEST_CHECK(ncclCommWindowRegister(s.comm, s.buf, kCount * sizeof(int), &s.win[0],
                                         NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess,
                  "ncclCommWindowRegister");
    BT_TEST_CHECK(ncclCommWindowRegister(s.comm, s.buf + kSkip, (kCount - kSkip) * sizeof(int),
                                         &s.win[1], NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess,
                  "ncclCommWindowRegister (part)");
    fill(rank, &s);
    barrier(s.comm, s.stream, s.out);
    size_t bad = 0;
    for (int w = 0; w < 2; w++) {
        launch(n, &s, w);
        CU(cudaStreamSynchronize(s.stream));
        bad += verify(rank, n, &s, w);
    }
    barrier(s.comm, s.stream, s.out); /* every rank done reading before any deregisters */
    for (int w = 0; w < 2; w++)
        BT_TEST_CHECK(ncclCommWindowDeregister(s.comm, s.win[w]) == ncclSuccess, "deregister");
    struct coll_state c;
    memset(&c, 0, sizeof(c));
    coll_setup(s.comm, n, &c);
    ncclDevCommRequirements reqs = coll_reqs(0), greqs = coll_reqs(1);
    BT_TEST_CHECK(ncclDevCommCreate(s.comm, &reqs, &c.dc) == ncclSuccess, "ncclDevCommCreate");
#if !DEVAPI_V2
    BT_TEST_CHECK(ncclDevCommCreate(s.comm, &greqs, &c.gdc) == ncclSuccess,
                  "ncclDevCommCreate (GIN)");
    BT_TEST_CHECK(c.gdc.ginContextCount == 1 && c.gdc.ginSignalCount == 2,
                  "the GIN device communicator has %d contexts, %d signals",
                  (int)c.gdc.ginContextCount, c.gdc.ginSignalCount);
#endif
    (void)greqs;
    extra_register(s.comm, &c);
    devcomm_check(n, &c, s.stream);
    size_t cbad = 0;
    for (int k = 0; k < rounds(); k++) {
        size_t count = coll_count(k);
        coll_fill(rank, k, count, &c, s.stream);
        coll_launch(k, count, &c, s.stream);
        CU(cudaStreamSynchronize(s.stream));
        cbad += coll_verify(n, k, k % 2, count, &c);
    }
    extra_free(s.comm, &c);
    coll_teardown(s.comm, &c);
    BT_TEST_CHECK(cbad == 0, "rank %d: %zu elements of the device API's collectives wrong", rank,
                  cbad);
    printf("rank %d: windows found through the window table; %d device-API AllReduces and "
           "AllGathers (LSA barriers%s): exact\n",
           rank, rounds(), DEVAPI_V2 ? "" : ", then world barriers with a GIN context");
    teardown(&s);
    BT_TEST_CHECK(ncclCommDestroy(s.comm) == ncclSuccess, "ncclCommDestroy");
    BT_TEST_CHECK(bad == 0, "rank %d: %zu elements wrong", rank, bad);
    printf("rank %d: %d ranks' windows read through ncclGetLsaPointer: ok\n", rank, n);
    return 0;
}

/* Every rank in this process (ranks of one process on GPU 0). */
static void one_process(int n)
{
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devs(n, 0);
    BT_TEST_CHECK(ncclCommInitAll(comms.data(), n, devs.data()) == ncclSuccess, "ncclCommInitAll");
    std::vector<struct rank_state> s(n);
    for (int r = 0; r < n; r++) {
        memset(&s[r], 0, sizeof(s[r]));
        s[r].comm = comms[r];
        setup(r, &s[r]);
    }
    for (int part = 0; part < 2; part++) {
        BT_TEST_CHECK(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
        for (int r = 0; r < n; r++) {
            int *p = part ? s[r].buf + kSkip : s[r].buf;
            size_t len = (part ? kCount - kSkip : kCount) * sizeof(int);
            BT_TEST_CHECK(ncclCommWindowRegister(comms[r], p, len, &s[r].win[part],
                                                 NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess,
                          "ncclCommWindowRegister");
        }
        BT_TEST_CHECK(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd (registration)");
    }
    for (int r = 0; r < n; r++)
        fill(r, &s[r]);
    CU(cudaDeviceSynchronize());
    size_t bad = 0;
    for (int w = 0; w < 2; w++) {
        for (int r = 0; r < n; r++)
            launch(n, &s[r], w);
        CU(cudaDeviceSynchronize());
        for (int r = 0; r < n; r++)
            bad += verify(r, n, &s[r], w);
    }
    for (int r = 0; r < n; r++)
        for (int w = 0; w < 2; w++)
            BT_TEST_CHECK(ncclCommWindowDeregister(comms[r], s[r].win[w]) == ncclSuccess,
                          "deregister");
    std::vector<struct coll_state> c(n);
    BT_TEST_CHECK(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
    for (int r = 0; r < n; r++) { /* registrations: collective, so in a group */
        memset(&c[r], 0, sizeof(c[r]));
        coll_setup(comms[r], n, &c[r]);
    }
    BT_TEST_CHECK(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd (collective windows)");
    ncclDevCommRequirements reqs = coll_reqs(0), greqs = coll_reqs(1);
    BT_TEST_CHECK(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
    for (int r = 0; r < n; r++) {
        BT_TEST_CHECK(ncclDevCommCreate(comms[r], &reqs, &c[r].dc) == ncclSuccess,
                      "ncclDevCommCreate");
        BT_TEST_CHECK(DEVAPI_V2 || ncclDevCommCreate(comms[r], &greqs, &c[r].gdc) == ncclSuccess,
                      "ncclDevCommCreate (GIN)");
    }
    BT_TEST_CHECK(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd (device communicators)");
    BT_TEST_CHECK(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
    for (int r = 0; r < n; r++)
        extra_register(comms[r], &c[r]);
    BT_TEST_CHECK(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd (extra windows)");
    for (int r = 0; r < n; r++)
        devcomm_check(n, &c[r], s[r].stream);
    size_t cbad = 0;
    for (int k = 0; k < rounds(); k++) {
        size_t count = coll_count(k);
        for (int r = 0; r < n; r++)
            coll_fill(r, k, count, &c[r], s[r].stream);
        for (int r = 0; r < n; r++)
            coll_launch(k, count, &c[r], s[r].stream);
        CU(cudaDeviceSynchronize());
        for (int r = 0; r < n; r++)
            cbad += coll_verify(n, k, k % 2, count, &c[r]);
    }
    for (int r = 0; r < n; r++) {
        extra_free(comms[r], &c[r]);
        coll_teardown(comms[r], &c[r]);
    }
    BT_TEST_CHECK(cbad == 0, "%zu elements of the device API's collectives wrong", cbad);
    printf("one process, %d ranks: windows found through the window table; %d device-API "
           "AllReduces and AllGathers (LSA barriers%s): exact\n",
           n, rounds(), DEVAPI_V2 ? "" : ", then world barriers with a GIN context");
    for (int r = 0; r < n; r++) {
        teardown(&s[r]);
        BT_TEST_CHECK(ncclCommDestroy(comms[r]) == ncclSuccess, "ncclCommDestroy");
    }
    BT_TEST_CHECK(bad == 0, "%zu elements wrong", bad);
    printf("one process, %d ranks on GPU 0: windows read through ncclGetLsaPointer: ok\n", n);
}

int main(void)
{
    const char *g = getenv("BATON_TEST_GPUS");
    int n = g ? atoi(g) : 2;
    BT_TEST_CHECK(n >= 1 && n <= 8, "BATON_TEST_GPUS=%d: 1 to 8", n);
    if (bt_test_mps()) {
        ncclUniqueId id;
        BT_TEST_CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
        BT_TEST_CHECK(bt_test_run_ranks(n, rank_main, &id, 300) == 0, "the ranks failed");
    } else {
        one_process(n);
    }
    printf("test_devapi_lsa: ok\n");
    return 0;
}
