/*
 * Send/recv FIFOs come per peer at first use (exec/cuda/fifos.c): four ranks of one process
 * (every rank on GPU 0 with BATON_TEST_SAME_GPU=1, else GPU r % the GPU count), one thread,
 * ncclCommMemStats read after each step:
 *   1. a 64 MB AllReduce (a ring: no send/recv FIFOs): every rank holds the same, h0 > 0;
 *   2. a send/recv exchange between ranks 0 and 1: they hold one peer's FIFOs more (p, the
 *      same on both, > 0), ranks 2 and 3 nothing more; data exact;
 *   3. the same exchange again: nothing more;
 *   4. an AllToAll: every rank holds h0 + 3 p (every peer); data exact;
 *   5. new communicators with ALGO=Direct, a small AllReduce first: the one-shot connects
 *      every peer at once (h0' + 3 p); result exact.
 * Prints the figures (h0, p) for bench/results.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "nccl.h"

#define N 4
#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

static ncclComm_t comms[N];
static int devs[N];
static int32_t *buf[N], *out[N];
static cudaStream_t st[N];
static const size_t max_count = 16u << 20; /* 64 MB of int32 */

static uint64_t held(int r)
{
    uint64_t v = 0;
    BT_TEST_OK(ncclCommMemStats(comms[r], ncclStatGpuMemTotal, &v));
    return v;
}

static void sync_all(void)
{
    for (int r = 0; r < N; r++) {
        CU(cudaSetDevice(devs[r]));
        CU(cudaStreamSynchronize(st[r]));
    }
}

/* buf[r][i] = 1000 r + i % 997 */
static int32_t val(int r, size_t i)
{
    return 1000 * r + (int32_t)(i % 997);
}

/* out[r]'s first `count` elements against want(r, i) */
static void check_out(const char *what, int r, size_t count, int32_t (*want)(int, size_t))
{
    int32_t *h = malloc(count * sizeof(*h));
    CU(cudaSetDevice(devs[r]));
    CU(cudaMemcpy(h, out[r], count * sizeof(*h), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; i++)
        if (h[i] != want(r, i)) {
            BT_TEST_CHECK(0, "%s, rank %d: [%zu] = %d, want %d", what, r, i, h[i], want(r, i));
            break;
        }
    free(h);
}

static int32_t allreduce_want(int r, size_t i)
{
    (void)r;
    int32_t s = 0;
    for (int q = 0; q < N; q++)
        s += val(q, i);
    return s;
}

static int32_t swap_want(int r, size_t i)
{
    return val(r ^ 1, i); /* ranks 0 and 1 exchange */
}

static const size_t a2a_count = 1024; /* per peer */
static int32_t alltoall_want(int r, size_t i)
{
    size_t from = i / a2a_count;
    return val((int)from, r * a2a_count + i % a2a_count);
}

static void allreduce(size_t count)
{
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < N; r++)
        BT_TEST_OK(ncclAllReduce(buf[r], out[r], count, ncclInt32, ncclSum, comms[r], st[r]));
    BT_TEST_OK(ncclGroupEnd());
    sync_all();
    for (int r = 0; r < N; r++)
        check_out("AllReduce", r, count, allreduce_want);
}

static void exchange01(void)
{
    size_t count = 1u << 18; /* 1 MB */
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++) {
        BT_TEST_OK(ncclSend(buf[r], count, ncclInt32, r ^ 1, comms[r], st[r]));
        BT_TEST_OK(ncclRecv(out[r], count, ncclInt32, r ^ 1, comms[r], st[r]));
    }
    BT_TEST_OK(ncclGroupEnd());
    sync_all();
    for (int r = 0; r < 2; r++)
        check_out("send/recv 0 <-> 1", r, count, swap_want);
}

static void alltoall(void)
{
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < N; r++)
        for (int q = 0; q < N; q++) {
            BT_TEST_OK(ncclSend(buf[r] + q * a2a_count, a2a_count, ncclInt32, q, comms[r], st[r]));
            BT_TEST_OK(ncclRecv(out[r] + q * a2a_count, a2a_count, ncclInt32, q, comms[r], st[r]));
        }
    BT_TEST_OK(ncclGroupEnd());
    sync_all();
    for (int r = 0; r < N; r++)
        check_out("AllToAll", r, N * a2a_count, alltoall_want);
}

static void init_comms(void)
{
    BT_TEST_OK(ncclCommInitAll(comms, N, devs));
    for (int r = 0; r < N; r++)
        BT_TEST_CHECK(held(r) == 0, "rank %d holds %llu bytes before its first operation", r,
                      (unsigned long long)held(r));
}

int main(void)
{
    const char *s = getenv("BATON_TEST_SAME_GPU");
    int same = s && atoi(s), ngpu = 0;
    CU(cudaGetDeviceCount(&ngpu));
    int32_t *h = malloc(max_count * sizeof(*h));
    for (int r = 0; r < N; r++) {
        devs[r] = same ? 0 : r % ngpu;
        CU(cudaSetDevice(devs[r]));
        CU(cudaMalloc((void **)&buf[r], max_count * sizeof(int32_t)));
        CU(cudaMalloc((void **)&out[r], max_count * sizeof(int32_t)));
        CU(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
        for (size_t i = 0; i < max_count; i++)
            h[i] = val(r, i);
        CU(cudaMemcpy(buf[r], h, max_count * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    free(h);

    init_comms();
    allreduce(max_count);
    uint64_t h0 = held(0);
    for (int r = 1; r < N; r++)
        BT_TEST_CHECK(held(r) == h0, "after a ring AllReduce rank %d holds %llu, rank 0 %llu", r,
                      (unsigned long long)held(r), (unsigned long long)h0);
    BT_TEST_CHECK(h0 > 0, "nothing held after a 64 MB AllReduce");
    exchange01();
    uint64_t p = held(0) - h0;
    BT_TEST_CHECK(p > 0, "rank 0 holds nothing more after its first send/recv with rank 1");
    BT_TEST_CHECK(held(1) - h0 == p, "ranks 0 and 1 grew by %llu and %llu", (unsigned long long)p,
                  (unsigned long long)(held(1) - h0));
    for (int r = 2; r < N; r++)
        BT_TEST_CHECK(held(r) == h0, "rank %d grew by %llu without a send/recv", r,
                      (unsigned long long)(held(r) - h0));
    exchange01();
    for (int r = 0; r < N; r++)
        BT_TEST_CHECK(held(r) == h0 + (r < 2 ? p : 0), "rank %d grew on a second exchange", r);
    alltoall();
    for (int r = 0; r < N; r++)
        BT_TEST_CHECK(held(r) == h0 + (N - 1) * p,
                      "after an AllToAll rank %d holds %llu, want %llu", r,
                      (unsigned long long)held(r), (unsigned long long)(h0 + (N - 1) * p));
    allreduce(1024);
    printf("lazy: a ring AllReduce holds %llu bytes a rank; one peer's send/recv FIFOs %llu "
           "more; every peer's after an AllToAll: %llu\n",
           (unsigned long long)h0, (unsigned long long)p, (unsigned long long)held(0));
    for (int r = 0; r < N; r++)
        BT_TEST_OK(ncclCommDestroy(comms[r]));

    /* the one-shot with every peer, as the first operation */
    setenv("BATON_ALGO", "Direct", 1);
    init_comms();
    allreduce(1024);
    uint64_t d0 = held(0);
    for (int r = 0; r < N; r++)
        BT_TEST_CHECK(held(r) == d0, "after a one-shot rank %d holds %llu, rank 0 %llu", r,
                      (unsigned long long)held(r), (unsigned long long)d0);
    BT_TEST_CHECK(d0 >= (N - 1) * p, "after a one-shot rank 0 holds %llu, less than %d peers' %llu",
                  (unsigned long long)d0, N - 1, (unsigned long long)((N - 1) * p));
    allreduce(1u << 20);
    printf("lazy: a one-shot first holds %llu bytes a rank (every peer's FIFOs)\n",
           (unsigned long long)d0);
    for (int r = 0; r < N; r++) {
        BT_TEST_OK(ncclCommDestroy(comms[r]));
        CU(cudaSetDevice(devs[r]));
        CU(cudaFree(buf[r]));
        CU(cudaFree(out[r]));
        CU(cudaStreamDestroy(st[r]));
    }
    printf("gpu lazy: ok\n");
    return 0;
}
