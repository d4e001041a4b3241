/*
 * gpu/test_devapi_gin: GIN (GPU-initiated networking) in proxy mode, as kernels written against
 * NVIDIA's nccl_device.h (2.28.9) use it, linked to Baton's libnccl.so.2: the descriptors
 * they write are carried by Baton's GIN proxy over the communicator's network.
 *
 * An all-to-all of DEVAPI_ROUNDS (default 1000) random sizes, 1 byte to 1.5 MB (puts of more
 * than one network message among them), on N ranks (BATON_TEST_GPUS, default 4) on GPU 0:
 * each round a world GIN barrier, then from every rank to every rank (itself included) a put
 * of its part with a signal increment and a counter increment, and a 64-bit value put inline
 * with a signal add of 3; the kernel waits for both signals and the counter, then flushes;
 * the host checks every byte and every value. Hosts on one machine come from
 * BATON_TEST_HOSTS (or NCCL_HOSTID per process): with one rank per host every put crosses
 * the network; with several, the LSA team's windows are mapped too (the test checks the
 * device communicator's LSA size is what the hosts make it, and reads a team peer's window
 * through ncclGetLsaPointer).
 * Ranks of one process (ncclCommInitAll), or processes under MPS (BATON_TEST_MPS=1).
 *
 * Built against NCCL 2.29.3's headers (gpu_test_devapi_gin_v229: versioned requirements,
 * 2.28's GIN) it runs as with 2.28's; against 2.29.5-2.29.7's each round also runs on one of
 * two contexts in turn, behind 2.29's world barrier (LSA, then GIN across the rail), with
 * the VA signal below.
 * Built against NCCL 2.30.5+'s headers (gpu_test_devapi_gin_v2: the descriptors and
 * contexts of those releases) each round also runs on one of two GIN contexts in turn, with a
 * world GIN barrier (2.30's) in place of the rail one, and every rank adds 5 to a VA signal
 * (a word of each peer's receive window) and gets the next rank's part for it out of that
 * rank's send window; the host checks those bytes and values too.
 *
 * DEVAPI_GIN_LAT=1 (processes, 2 or more ranks): ranks 0 and 1 measure GIN's latency
 * instead: a kernel ping-pongs a put + signal of 8 B .. 64 KB between them (half the round
 * trip), beside ncclSend/ncclRecv ping-pong of the same sizes over the same communicator.
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
#define NC(call) BT_TEST_CHECK((call) == ncclSuccess, "%s failed", #call)

#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER /* 2.29+'s headers: versioned requirements */
#define DEVAPI_VERSIONED 1
#else
#define DEVAPI_VERSIONED 0
#endif
/* 2.29.5+'s GIN: contexts, VA signals, a world barrier from barrierCount (2.29) or
 * worldGinBarrierCount (2.30); 2.30.5+'s: gets too. Before: 2.28's GIN (2.29.2-3's is the
 * same). */
#if DEVAPI_VERSIONED && NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 5)
#define DEVAPI_CTXS 1
#define NCTX 2 /* GIN contexts the rounds take in turn */
#else
#define DEVAPI_CTXS 0
#define NCTX 1
#endif
#if DEVAPI_VERSIONED && NCCL_VERSION_CODE >= NCCL_VERSION(2, 30, 5)
#define DEVAPI_V2 1
#else
#define DEVAPI_V2 0
#endif

static const size_t kSlot = 3u << 19; /* bytes of each peer's part: 1.5 MB */

/* The receive window: each rank's part, each rank's value, then (2.30) the part got from the
 * next rank and the VA signal's word. Everything before the word is cleared each round. */
static __host__ __device__ size_t get_at(int n)
{
    return n * kSlot + n * sizeof(uint64_t);
}
static __host__ __device__ size_t va_at(int n)
{
    return get_at(n) + kSlot;
}

static __host__ __device__ unsigned char pattern(int src, int dst, int round, size_t i)
{
    return (unsigned char)(src * 37 + dst * 11 + round * 5 + i * 7 + (i >> 9));
}

static __host__ __device__ uint64_t tag(int src, int round)
{
    return ((uint64_t)(round + 1) << 32) | (uint64_t)(src * 1000 + 17);
}

__global__ void fill_send(unsigned char *send, int me, int n, int round, size_t bytes)
{
    for (int dst = 0; dst < n; dst++)
        for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes;
             i += (size_t)gridDim.x * blockDim.x)
            send[dst * kSlot + i] = pattern(me, dst, round, i);
}

/* One round: a world GIN barrier, then a put + value to every rank (2.30: a VA signal to
 * every rank and a get from the next), waits, flush (2.30: then the barrier again, so that
 * no rank's send window changes before every get of it is done). got[0..3]: the signals',
 * the counter's and (2.30) the VA signal's advance this round (the host checks them). */
__global__ void alltoall(ncclWindow_t send, ncclWindow_t recv, size_t bytes, int round, int ctx,
                         struct ncclDevComm dc, unsigned long long *got, int *lsa_peer_byte)
{
    ncclGin gin{dc, ctx};
    const int n = dc.nRanks, me = dc.rank;
    uint64_t s0 = gin.readSignal(0), s1 = gin.readSignal(1), c0 = gin.readCounter(0);
#if DEVAPI_CTXS
    uint64_t v0 = gin.readSignal(recv, va_at(n));
#endif
#if DEVAPI_V2
    ncclGinBarrierSession<ncclCoopCta> bar{ncclCoopCta(), gin, ncclTeamWorld(dc),
                                           dc.worldGinBarrier, 0};
#elif DEVAPI_CTXS /* 2.29.5-2.29.7: the world barrier (LSA, then GIN across the rail) */
    ncclBarrierSession<ncclCoopCta> bar{ncclCoopCta(), ncclTeamTagWorld(), gin, 0};
#else
    ncclGinBarrierSession<ncclCoopCta> bar{ncclCoopCta(), gin, ncclTeamWorld(dc), dc.railGinBarrier,
                                           0};
#endif
    bar.sync(ncclCoopCta(), cuda::memory_order_relaxed, ncclGinFenceLevel::Relaxed);
    if (threadIdx.x == 0) {
        /* the next LSA peer's send window, read through the flat mapping (its own when the
         * team is one rank): written before the peer arrived, and kept until the peer has
         * this rank's puts, which come after this read */
        int p = (dc.lsaRank + 1) % dc.lsaSize;
        *lsa_peer_byte = *(const volatile unsigned char *)ncclGetLsaPointer(send, 0, p);
#if DEVAPI_V2
        int from = (me + 1) % n;
        gin.get(ncclTeamWorld(dc), from, send, me * kSlot, recv, get_at(n), bytes);
#endif
    }
    for (int r = threadIdx.x; r < n; r += blockDim.x) {
        gin.put(ncclTeamWorld(dc), r, recv, me * kSlot, send, r * kSlot, bytes,
                ncclGin_SignalInc{0}, ncclGin_CounterInc{0});
        gin.putValue(ncclTeamWorld(dc), r, recv, n * kSlot + me * sizeof(uint64_t),
                     (uint64_t)tag(me, round), ncclGin_SignalAdd{1, 3});
#if DEVAPI_CTXS
        gin.signal(ncclTeamWorld(dc), r, ncclGin_VASignalAdd{recv, va_at(n), 5});
#endif
    }
    gin.waitSignal(ncclCoopCta(), 0, s0 + n);
    gin.waitSignal(ncclCoopCta(), 1, s1 + 3 * n);
    gin.waitCounter(ncclCoopCta(), 0, c0 + n);
#if DEVAPI_CTXS
    gin.waitSignal(ncclCoopCta(), recv, va_at(n), v0 + 5 * n);
#endif
    gin.flush(ncclCoopCta());
#if DEVAPI_V2
    bar.sync(ncclCoopCta(), cuda::memory_order_relaxed, ncclGinFenceLevel::Relaxed);
#endif
    if (threadIdx.x == 0) {
        got[0] = gin.readSignal(0) - s0;
        got[1] = gin.readSignal(1) - s1;
        got[2] = gin.readCounter(0) - c0;
#if DEVAPI_CTXS
        got[3] = gin.readSignal(recv, va_at(n)) - v0;
#else
        got[3] = 0;
#endif
    }
}

/* Round k's bytes per peer: log-uniform from 1 byte to kSlot. */
static size_t round_bytes(int round)
{
    unsigned x = (unsigned)round * 2654435761u + 977u;
    x ^= x >> 13;
    x *= 2246822519u;
    x ^= x >> 16;
    unsigned bits = x % 22; /* up to 2^21 > kSlot */
    size_t b = 1 + (size_t)(x >> 8) % ((size_t)1 << bits);
    return b < kSlot ? b : kSlot;
}

static int rounds(void)
{
    const char *r = getenv("DEVAPI_ROUNDS");
    return r ? atoi(r) : 1000;
}

struct rank_state {
    ncclComm_t comm;
    int rank, n;
    unsigned char *send, *recv;
    ncclWindow_t sw, rw;
    struct ncclDevComm dc;
    unsigned long long *got;
    int *peer_byte;
    cudaStream_t stream;
    size_t bad;
};

static size_t recv_bytes(int n)
{
    return DEVAPI_CTXS ? va_at(n) + sizeof(uint64_t) : get_at(n);
}

/* What each round clears (all but the VA signal's word). */
static size_t cleared_bytes(int n)
{
    return DEVAPI_CTXS ? va_at(n) : get_at(n);
}

static void alloc(struct rank_state *s)
{
    CU(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    NC(ncclMemAlloc((void **)&s->send, s->n * kSlot));
    NC(ncclMemAlloc((void **)&s->recv, recv_bytes(s->n)));
    CU(cudaMalloc((void **)&s->got, 4 * sizeof(unsigned long long)));
    CU(cudaMalloc((void **)&s->peer_byte, sizeof(int)));
}

static void register_windows(struct rank_state *s)
{
    NC(ncclCommWindowRegister(s->comm, s->send, s->n * kSlot, &s->sw, NCCL_WIN_COLL_SYMMETRIC));
    NC(ncclCommWindowRegister(s->comm, s->recv, recv_bytes(s->n), &s->rw, NCCL_WIN_COLL_SYMMETRIC));
}

static ncclDevCommRequirements gin_reqs(void)
{
#if DEVAPI_V2
    ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.ginConnectionType = NCCL_GIN_CONNECTION_FULL;
    reqs.worldGinBarrierCount = 1;
    reqs.ginContextCount = NCTX;
#elif DEVAPI_CTXS      /* 2.29.5-2.29.7 */
    ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.ginConnectionType = NCCL_GIN_CONNECTION_FULL;
    reqs.barrierCount = 1;
    reqs.ginContextCount = NCTX;
#elif DEVAPI_VERSIONED /* 2.29.2-2.29.3 */
    ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.ginForceEnable = true;
    reqs.railGinBarrierCount = 1;
    reqs.ginContextCount = 1;
#else
    ncclDevCommRequirements reqs;
    memset(&reqs, 0, sizeof(reqs));
    reqs.railGinBarrierCount = 1;
    reqs.ginContextCount = 1;
#endif
    reqs.ginSignalCount = 3; /* 0: puts, 1: values, 2: the latency ping-pong */
    reqs.ginCounterCount = 1;
    return reqs;
}

static void round_launch(struct rank_state *s, int round)
{
    size_t bytes = round_bytes(round);
    fill_send<<<32, 256, 0, s->stream>>>(s->send, s->rank, s->n, round, bytes);
    CU(cudaMemsetAsync(s->recv, 0xee, cleared_bytes(s->n), s->stream));
    alltoall<<<1, 128, 0, s->stream>>>(s->sw, s->rw, bytes, round, round % NCTX, s->dc, s->got,
                                       s->peer_byte);
    CU(cudaGetLastError());
}

static void round_verify(struct rank_state *s, int round)
{
    size_t bytes = round_bytes(round);
    std::vector<unsigned char> h(recv_bytes(s->n));
    unsigned long long got[4];
    int peer_byte = -1;
    CU(cudaStreamSynchronize(s->stream));
    CU(cudaMemcpy(h.data(), s->recv, h.size(), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(got, s->got, sizeof(got), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&peer_byte, s->peer_byte, sizeof(int), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int src = 0; src < s->n; src++) {
        for (size_t i = 0; i < bytes; i++)
            bad += h[src * kSlot + i] != pattern(src, s->rank, round, i);
        for (size_t i = bytes; i < kSlot && i < bytes + 64; i++) /* nothing past the put */
            bad += h[src * kSlot + i] != 0xee;
        uint64_t v;
        memcpy(&v, &h[s->n * kSlot + src * sizeof(uint64_t)], sizeof(v));
        bad += v != tag(src, round);
    }
    int p = s->dc.lsaRank + 1 == s->dc.lsaSize ? s->rank + 1 - s->dc.lsaSize : s->rank + 1;
    bad += peer_byte != pattern(p, 0, round, 0);
#if DEVAPI_V2
    int from = (s->rank + 1) % s->n; /* what the get brought: the next rank's part for this one */
    for (size_t i = 0; i < bytes; i++)
        bad += h[get_at(s->n) + i] != pattern(from, s->rank, round, i);
    for (size_t i = bytes; i < kSlot && i < bytes + 64; i++)
        bad += h[get_at(s->n) + i] != 0xee;
#endif
    unsigned long long want_va = DEVAPI_CTXS ? 5ull * s->n : 0;
    if (got[0] != (unsigned)s->n || got[1] != 3ull * s->n || got[2] != (unsigned)s->n ||
        got[3] != want_va) {
        fprintf(stderr,
                "rank %d round %d: signals advanced %llu and %llu, the counter %llu, the VA "
                "signal %llu\n",
                s->rank, round, got[0], got[1], got[2], got[3]);
        bad++;
    }
    if (bad && !s->bad)
        fprintf(stderr, "rank %d round %d (%zu bytes per peer): %zu bytes wrong\n", s->rank, round,
                bytes, bad);
    s->bad += bad;
}

static void release(struct rank_state *s)
{
    NC(ncclDevCommDestroy(s->comm, &s->dc));
    NC(ncclCommWindowDeregister(s->comm, s->sw));
    NC(ncclCommWindowDeregister(s->comm, s->rw));
    NC(ncclMemFree(s->send));
    NC(ncclMemFree(s->recv));
    CU(cudaFree(s->got));
    CU(cudaFree(s->peer_byte));
    CU(cudaStreamDestroy(s->stream));
}

static int hosts(void)
{
    const char *h = getenv("BATON_TEST_HOSTS");
    return h && atoi(h) > 1 ? atoi(h) : 1;
}

static void check_lsa(const struct rank_state *s)
{
    int want = hosts() > 1 && s->n % hosts() == 0 ? s->n / hosts() : s->dc.lsaSize;
    BT_TEST_CHECK(s->dc.lsaSize == want && s->dc.ginContextCount == NCTX,
                  "rank %d: LSA size %d (want %d for %d hosts), %d GIN contexts", s->rank,
                  s->dc.lsaSize, want, hosts(), (int)s->dc.ginContextCount);
}

/* ---- latency: put + signal ping-pong, beside send/recv ------------------------------------ */

__global__ void pingpong(ncclWindow_t win, size_t bytes, int iters, int first,
                         struct ncclDevComm dc)
{
    ncclGin gin{dc, 0};
    int peer = dc.rank == 0 ? 1 : 0;
    uint64_t s = gin.readSignal(2);
    for (int i = 0; i < iters; i++) {
        if (first) {
            gin.put(ncclTeamWorld(dc), peer, win, 0, win, kSlot, bytes, ncclGin_SignalInc{2});
            gin.waitSignal(ncclCoopThread(), 2, s + i + 1);
        } else {
            gin.waitSignal(ncclCoopThread(), 2, s + i + 1);
            gin.put(ncclTeamWorld(dc), peer, win, 0, win, kSlot, bytes, ncclGin_SignalInc{2});
        }
    }
    gin.flush(ncclCoopThread());
}

static void host_barrier(struct rank_state *s)
{
    NC(ncclAllReduce(s->got, s->got, 1, ncclInt32, ncclSum, s->comm, s->stream));
    CU(cudaStreamSynchronize(s->stream));
}

static void latency(struct rank_state *s)
{
    const size_t sizes[] = {8, 64, 512, 4096, 16384, 65536};
    const int iters = 200;
    if (s->rank == 0)
        printf("#  GIN put+signal vs send/recv, ranks 0 and 1 on different hosts, half round "
               "trip (us)\n#  %10s %12s %12s\n",
               "bytes", "gin_us", "sendrecv_us");
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t b = sizes[k];
        double gin_us = 0, sr_us = 0;
        for (int pass = 0; pass < 2; pass++) { /* the first warms up */
            host_barrier(s);
            double t0 = bt_test_now_s();
            if (s->rank < 2)
                pingpong<<<1, 1, 0, s->stream>>>(s->rw, b, iters, s->rank == 0, s->dc);
            CU(cudaStreamSynchronize(s->stream));
            gin_us = (bt_test_now_s() - t0) * 1e6 / iters / 2;
            host_barrier(s);
            t0 = bt_test_now_s();
            for (int i = 0; s->rank < 2 && i < iters; i++) {
                int peer = 1 - s->rank;
                if (s->rank == 0) {
                    NC(ncclSend(s->send, b, ncclInt8, peer, s->comm, s->stream));
                    NC(ncclRecv(s->recv, b, ncclInt8, peer, s->comm, s->stream));
                } else {
                    NC(ncclRecv(s->recv, b, ncclInt8, peer, s->comm, s->stream));
                    NC(ncclSend(s->send, b, ncclInt8, peer, s->comm, s->stream));
                }
            }
            CU(cudaStreamSynchronize(s->stream));
            sr_us = (bt_test_now_s() - t0) * 1e6 / iters / 2;
        }
        if (s->rank == 0)
            printf("   %10zu %12.2f %12.2f\n", b, gin_us, sr_us);
    }
    fflush(stdout);
}

/* ---- drivers ------------------------------------------------------------------------------ */

static int rank_main(int rank, int n, void *arg)
{
    const ncclUniqueId *id = (const ncclUniqueId *)arg;
    CU(cudaSetDevice(0));
    struct rank_state s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    s.n = n;
    NC(ncclCommInitRank(&s.comm, n, *id, rank));
    alloc(&s);
    register_windows(&s);
    ncclDevCommRequirements reqs = gin_reqs();
    NC(ncclDevCommCreate(s.comm, &reqs, &s.dc));
    check_lsa(&s);
    const char *lat = getenv("DEVAPI_GIN_LAT");
    if (lat && atoi(lat) && n >= 2) {
        latency(&s);
    } else {
        for (int k = 0; k < rounds(); k++) {
            round_launch(&s, k);
            round_verify(&s, k);
        }
        BT_TEST_CHECK(s.bad == 0, "rank %d: %zu bytes wrong", rank, s.bad);
        printf("rank %d (LSA team of %d): %d GIN all-to-all rounds exact\n", rank, s.dc.lsaSize,
               rounds());
    }
    host_barrier(&s); /* every rank done with the windows */
    release(&s);
    NC(ncclCommDestroy(s.comm));
    return 0;
}

static void one_process(int n)
{
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devs(n, 0);
    NC(ncclCommInitAll(comms.data(), n, devs.data()));
    std::vector<struct rank_state> s(n);
    for (int r = 0; r < n; r++) {
        memset(&s[r], 0, sizeof(s[r]));
        s[r].comm = comms[r];
        s[r].rank = r;
        s[r].n = n;
        alloc(&s[r]);
    }
    NC(ncclGroupStart());
    for (int r = 0; r < n; r++)
        register_windows(&s[r]);
    NC(ncclGroupEnd());
    ncclDevCommRequirements reqs = gin_reqs();
    NC(ncclGroupStart());
    for (int r = 0; r < n; r++)
        NC(ncclDevCommCreate(comms[r], &reqs, &s[r].dc));
    NC(ncclGroupEnd());
    for (int r = 0; r < n; r++)
        check_lsa(&s[r]);
    size_t bad = 0;
    for (int k = 0; k < rounds(); k++) {
        for (int r = 0; r < n; r++)
            round_launch(&s[r], k);
        for (int r = 0; r < n; r++)
            round_verify(&s[r], k);
    }
    for (int r = 0; r < n; r++)
        bad += s[r].bad;
    BT_TEST_CHECK(bad == 0, "%zu bytes wrong", bad);
    printf("one process, %d ranks (LSA teams of %d): %d GIN all-to-all rounds exact\n", n,
           s[0].dc.lsaSize, rounds());
    for (int r = 0; r < n; r++) {
        release(&s[r]);
        NC(ncclCommDestroy(comms[r]));
    }
}

int main(void)
{
    const char *g = getenv("BATON_TEST_GPUS");
    int n = g ? atoi(g) : 4;
    BT_TEST_CHECK(n >= 1 && n <= 8, "BATON_TEST_GPUS=%d: 1 to 8", n);
    if (bt_test_mps()) {
        ncclUniqueId id;
        NC(ncclGetUniqueId(&id));
        BT_TEST_CHECK(bt_test_run_ranks(n, rank_main, &id, 600) == 0, "the ranks failed");
    } else {
        one_process(n);
    }
    printf("test_devapi_gin: ok\n");
    return 0;
}
