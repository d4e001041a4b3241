/*
 * ncclPutSignal / ncclSignal / ncclWaitSignal on a GPU communicator, in stream order
 * (core/rma_gpu.h): N ranks (BATON_TEST_GPUS, default 3) on GPU 0, ranks of one process driven
 * by one thread (nothing here blocks the host), or processes under MPS (BATON_TEST_MPS=1);
 * BATON_TEST_HOSTS cuts them into hosts. Each round every rank puts a buffer of a size that
 * crosses the 256 KB chunks into the next rank's window, overwrites its source on the stream
 * at once (the put must have taken the bytes), waits for the previous rank's signal on the
 * stream and copies what landed to the host; an AllReduce on the stream keeps a round's
 * puts after the last round's reads. Then a put to itself, signals alone (three, and one to
 * every rank, waited for in one call), and an abort: a stream held in a wait for a signal that
 * never comes goes on once the communicator is aborted.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

#define MAX_NR 8
#define WIN_INTS (2u << 20)  /* 8 MB windows: rounds alternate between the two halves */
#define MAX_PUT (600u << 10) /* ints: up to 2.4 MB, ten chunks */
_Static_assert(MAX_PUT <= WIN_INTS / 2, "the largest put must fit half a window");

struct rank {
    int rank, n;
    ncclComm_t comm;
    cudaStream_t stream;
    int32_t *win_buf, *src, *scratch, *host;
    ncclWindow_t win;
};

static int rounds(void)
{
    const char *r = getenv("RMA_ROUNDS");
    return r ? atoi(r) : 40;
}

/* A stall prints the main thread's stack and fails (harness: bt_test_watchdog) before the
 * lab's timeout kills the test without a word: RMA_WATCHDOG seconds, default 45. */
static int watchdog_s(void)
{
    const char *w = getenv("RMA_WATCHDOG");
    return w ? atoi(w) : 45;
}

static size_t count_of(int k)
{
    static const size_t sizes[] = {1, 7, 1024, 65536, 65537, 200000, MAX_PUT};
    return sizes[k % 7] - (k % 7 ? (size_t)(k / 7) % 3 : 0); /* 1 stays 1: no put of 0 or -1 */
}

static int32_t value(int rank, int k, size_t i)
{
    return rank * 1000003 + k * 7919 + (int32_t)(i % 100003);
}

static void setup(struct rank *r)
{
    CU(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    BT_TEST_OK(ncclMemAlloc((void **)&r->win_buf, WIN_INTS * sizeof(int32_t)));
    CU(cudaMalloc((void **)&r->src, MAX_PUT * sizeof(int32_t)));
    CU(cudaMalloc((void **)&r->scratch, sizeof(int32_t)));
    /* pinned: a copy from the device into pageable memory returns only once it is done, so
     * the one thread of ranks of one process would wait on rank 0's stream, held by its wait
     * for rank 1's put, which that thread has not issued yet (a deadlock of the test) */
    CU(cudaMallocHost((void **)&r->host, MAX_PUT * sizeof(int32_t)));
}

/* Round k's put, the source overwritten at once, the wait and the copy back (stream order). */
static void issue(struct rank *r, int k)
{
    size_t cnt = count_of(k);
    int next = (r->rank + 1) % r->n, prev = (r->rank + r->n - 1) % r->n;
    for (size_t i = 0; i < cnt; i++)
        r->host[i] = value(r->rank, k, i);
    CU(cudaMemcpyAsync(r->src, r->host, cnt * sizeof(int32_t), cudaMemcpyHostToDevice, r->stream));
    CU(cudaStreamSynchronize(r->stream)); /* host[] is refilled below */
    size_t off = (size_t)(k % 2) * (WIN_INTS / 2) * sizeof(int32_t);
    BT_TEST_OK(
        ncclPutSignal(r->src, cnt, ncclInt32, next, r->win, off, 0, 0, 0, r->comm, r->stream));
    CU(cudaMemsetAsync(r->src, 0x55, cnt * sizeof(int32_t), r->stream));
    ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = prev, .sigIdx = 0, .ctx = 0};
    BT_TEST_OK(ncclWaitSignal(1, &d, r->comm, r->stream));
    CU(cudaMemcpyAsync(r->host, (char *)r->win_buf + off, cnt * sizeof(int32_t),
                       cudaMemcpyDeviceToHost, r->stream));
    /* every rank's reads of this round before any rank's next put */
    BT_TEST_OK(ncclAllReduce(r->scratch, r->scratch, 1, ncclInt32, ncclSum, r->comm, r->stream));
}

static size_t verify(struct rank *r, int k)
{
    size_t cnt = count_of(k), bad = 0;
    int prev = (r->rank + r->n - 1) % r->n;
    CU(cudaStreamSynchronize(r->stream));
    for (size_t i = 0; i < cnt; i++)
        bad += r->host[i] != value(prev, k, i);
    if (bad)
        fprintf(stderr, "rank %d round %d: %zu of %zu ints from rank %d wrong\n", r->rank, k, bad,
                cnt, prev);
    return bad;
}

/* A put to itself, and signals alone: queued, then checked once the stream is done. */
static void signals(struct rank *r)
{
    int next = (r->rank + 1) % r->n, prev = (r->rank + r->n - 1) % r->n;
    CU(cudaMemsetAsync(r->src, 0x11, 4096, r->stream));
    BT_TEST_OK(
        ncclPutSignal(r->src, 1024, ncclInt32, r->rank, r->win, 0, 0, 0, 0, r->comm, r->stream));
    ncclWaitSignalDesc_t self = {.opCnt = 1, .peer = r->rank};
    BT_TEST_OK(ncclWaitSignal(1, &self, r->comm, r->stream));
    for (int s = 0; s < 3; s++)
        BT_TEST_OK(ncclSignal(next, 0, 0, 0, r->comm, r->stream));
    ncclWaitSignalDesc_t three = {.opCnt = 3, .peer = prev};
    BT_TEST_OK(ncclWaitSignal(1, &three, r->comm, r->stream));
    ncclWaitSignalDesc_t all[MAX_NR];
    for (int p = 0; p < r->n; p++) {
        BT_TEST_OK(ncclSignal(p, 0, 0, 0, r->comm, r->stream));
        all[p] = (ncclWaitSignalDesc_t){.opCnt = 1, .peer = p};
    }
    BT_TEST_OK(ncclWaitSignal(r->n, all, r->comm, r->stream));
    CU(cudaMemcpyAsync(r->host, r->win_buf, 1024 * sizeof(int32_t), cudaMemcpyDeviceToHost,
                       r->stream));
}

static void signals_check(struct rank *r)
{
    CU(cudaStreamSynchronize(r->stream));
    for (int i = 0; i < 1024; i++)
        BT_TEST_CHECK(r->host[i] == 0x11111111, "rank %d: its put to itself: [%d] = %#x", r->rank,
                      i, (unsigned)r->host[i]);
}

/* A wait for a signal nobody sends, then the abort: the stream goes on. */
static void abort_releases(struct rank *r)
{
    ncclWaitSignalDesc_t never = {.opCnt = 1000, .peer = (r->rank + 1) % r->n};
    BT_TEST_OK(ncclWaitSignal(1, &never, r->comm, r->stream));
    CU(cudaMemsetAsync(r->scratch, 0, sizeof(int32_t), r->stream));
    BT_TEST_CHECK(cudaStreamQuery(r->stream) == cudaErrorNotReady, "rank %d: the wait did not hold",
                  r->rank);
    double t0 = bt_test_now_s();
    BT_TEST_OK(ncclCommAbort(r->comm));
    CU(cudaStreamSynchronize(r->stream));
    double s = bt_test_now_s() - t0;
    BT_TEST_CHECK(s < 30, "rank %d: the stream went on %.1f s after the abort", r->rank, s);
}

static void teardown(struct rank *r)
{
    BT_TEST_OK(ncclMemFree(r->win_buf));
    CU(cudaFree(r->src));
    CU(cudaFree(r->scratch));
    CU(cudaStreamDestroy(r->stream));
    CU(cudaFreeHost(r->host));
}

/* One rank as a process (MPS). */
static int rank_main(int rank, int n, void *arg)
{
    CU(cudaSetDevice(0));
    bt_test_watchdog(watchdog_s());
    struct rank r = {.rank = rank, .n = n};
    BT_TEST_OK(ncclCommInitRank(&r.comm, n, *(ncclUniqueId *)arg, rank));
    setup(&r);
    BT_TEST_OK(ncclCommWindowRegister(r.comm, r.win_buf, WIN_INTS * sizeof(int32_t), &r.win,
                                      NCCL_WIN_COLL_SYMMETRIC));
    size_t bad = 0;
    for (int k = 0; k < rounds(); k++) {
        issue(&r, k);
        bad += verify(&r, k);
    }
    signals(&r);
    signals_check(&r);
    BT_TEST_CHECK(bad == 0, "rank %d: %zu ints wrong", rank, bad);
    BT_TEST_OK(ncclCommWindowDeregister(r.comm, r.win));
    abort_releases(&r);
    teardown(&r);
    printf("rank %d: %d puts, signals, an abort's release: ok\n", rank, rounds());
    return 0;
}

/* Every rank in this process, one thread: nothing the calls queue blocks the host. */
static void one_process(int n)
{
    struct rank r[MAX_NR];
    ncclComm_t comms[MAX_NR];
    int devs[MAX_NR] = {0};
    BT_TEST_OK(ncclCommInitAll(comms, n, devs));
    bt_test_watchdog(watchdog_s());
    BT_TEST_OK(ncclGroupStart());
    for (int i = 0; i < n; i++) {
        r[i] = (struct rank){.rank = i, .n = n, .comm = comms[i]};
        setup(&r[i]);
        BT_TEST_OK(ncclCommWindowRegister(comms[i], r[i].win_buf, WIN_INTS * sizeof(int32_t),
                                          &r[i].win, NCCL_WIN_COLL_SYMMETRIC));
    }
    BT_TEST_OK(ncclGroupEnd());
    size_t bad = 0;
    for (int k = 0; k < rounds(); k++) {
        for (int i = 0; i < n; i++) {
            size_t cnt = count_of(k);
            for (size_t e = 0; e < cnt; e++)
                r[i].host[e] = value(i, k, e);
            CU(cudaMemcpy(r[i].src, r[i].host, cnt * sizeof(int32_t), cudaMemcpyHostToDevice));
        }
        /* the puts, overwrites, waits and reads of every rank, then the AllReduces in one
         * group (ranks of one thread) */
        for (int i = 0; i < n; i++) {
            size_t cnt = count_of(k), off = (size_t)(k % 2) * (WIN_INTS / 2) * sizeof(int32_t);
            int next = (i + 1) % n, prev = (i + n - 1) % n;
            BT_TEST_OK(ncclPutSignal(r[i].src, cnt, ncclInt32, next, r[i].win, off, 0, 0, 0,
                                     comms[i], r[i].stream));
            CU(cudaMemsetAsync(r[i].src, 0x55, cnt * sizeof(int32_t), r[i].stream));
            ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = prev};
            BT_TEST_OK(ncclWaitSignal(1, &d, comms[i], r[i].stream));
            CU(cudaMemcpyAsync(r[i].host, (char *)r[i].win_buf + off, cnt * sizeof(int32_t),
                               cudaMemcpyDeviceToHost, r[i].stream));
        }
        BT_TEST_OK(ncclGroupStart());
        for (int i = 0; i < n; i++)
            BT_TEST_OK(ncclAllReduce(r[i].scratch, r[i].scratch, 1, ncclInt32, ncclSum, comms[i],
                                     r[i].stream));
        BT_TEST_OK(ncclGroupEnd());
        for (int i = 0; i < n; i++)
            bad += verify(&r[i], k);
    }
    for (int i = 0; i < n; i++)
        signals(&r[i]);
    for (int i = 0; i < n; i++)
        signals_check(&r[i]);
    BT_TEST_CHECK(bad == 0, "%zu ints wrong", bad);
    for (int i = 0; i < n; i++)
        BT_TEST_OK(ncclCommWindowDeregister(comms[i], r[i].win));
    for (int i = 0; i < n; i++) {
        abort_releases(&r[i]);
        teardown(&r[i]);
    }
    printf("one process, %d ranks on GPU 0: %d puts each, signals, an abort's release: ok\n", n,
           rounds());
}

int main(void)
{
    /* Each wait holds its stream's hardware queue (cuStreamWaitValue32): with the ranks of one
     * process on one GPU, CUDA's default 8 queues are shared between streams whose waits need
     * each other's puts (and the landing copies), a deadlock; one process per GPU has a stream
     * or two (docs/DEVICE_API.md). Before CUDA starts; not under MPS, whose clients then fail
     * to make their contexts (out of memory). */
    if (!bt_test_mps())
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    const char *g = getenv("BATON_TEST_GPUS");
    int n = g ? atoi(g) : 3;
    BT_TEST_CHECK(n >= 2 && n <= MAX_NR, "BATON_TEST_GPUS=%d: 2..%d", n, MAX_NR);
    if (bt_test_mps()) {
        ncclUniqueId id;
        BT_TEST_OK(ncclGetUniqueId(&id));
        BT_TEST_OK(bt_test_run_ranks(n, rank_main, &id, 300));
    } else {
        one_process(n);
    }
    printf("test_gpu_rma: ok\n");
    return 0;
}
