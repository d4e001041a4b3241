/*
 * ncclCommSuspend / ncclCommResume / ncclCommMemStats on GPU communicators: two ranks of one
 * process (on one GPU with BATON_TEST_SAME_GPU=1, else GPUs 0 and 1), AllReduce and AllGather
 * of several sizes (every algorithm the tuner picks makes its buffers), then:
 *   - ncclCommMemStats reports the device memory the comms hold (> 0, all suspendable);
 *   - suspend (both ranks, one thread each: it is collective) frees at least 90% of the
 *     device memory the comms held, as cudaMemGetInfo sees it, and the stats read 0;
 *   - operations are refused while suspended;
 *   - resume, then the same collectives exact, and the memory back.
 * Every round runs on new streams and destroys them after: a communicator's next kernel must
 * not touch the stream of its last one (CUDA crashes on a destroyed stream's handle).
 * Prints the figures (bytes before, freed, after resume) for bench/results.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "nccl.h"

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

static ncclComm_t comms[2];
static int devs[2];

static size_t free_bytes(int dev)
{
    size_t f = 0, t = 0;
    CU(cudaSetDevice(dev));
    CU(cudaDeviceSynchronize());
    CU(cudaMemGetInfo(&f, &t));
    return f;
}

/* AllReduce and AllGather of 1 K .. 64 M ints on both ranks, checked. */
static void run_colls(int round)
{
    size_t max = 1u << 24;
    int32_t *buf[2], *out[2], *h = malloc(max * 2 * sizeof(int32_t));
    cudaStream_t st[2];
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(devs[r]));
        CU(cudaMalloc((void **)&buf[r], max * sizeof(int32_t)));
        CU(cudaMalloc((void **)&out[r], 2 * max * sizeof(int32_t)));
        CU(cudaStreamCreate(&st[r]));
        for (size_t i = 0; i < max; i++)
            h[i] = (int32_t)(i % 1013) + 1000 * r + round;
        CU(cudaMemcpy(buf[r], h, max * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    for (size_t count = 1024; count <= max; count *= 16) {
        BT_TEST_OK(ncclGroupStart());
        for (int r = 0; r < 2; r++) {
            CU(cudaSetDevice(devs[r]));
            BT_TEST_OK(ncclAllReduce(buf[r], out[r], count, ncclInt32, ncclSum, comms[r], st[r]));
        }
        BT_TEST_OK(ncclGroupEnd());
        for (int r = 0; r < 2; r++) {
            CU(cudaSetDevice(devs[r]));
            CU(cudaStreamSynchronize(st[r]));
            CU(cudaMemcpy(h, out[r], count * sizeof(int32_t), cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < count; i++)
                if (h[i] != 2 * ((int32_t)(i % 1013) + round) + 1000) {
                    BT_TEST_CHECK(0, "round %d AllReduce %zu rank %d: [%zu] = %d", round, count, r,
                                  i, h[i]);
                    break;
                }
        }
        BT_TEST_OK(ncclGroupStart());
        for (int r = 0; r < 2; r++) {
            CU(cudaSetDevice(devs[r]));
            BT_TEST_OK(ncclAllGather(buf[r], out[r], count, ncclInt32, comms[r], st[r]));
        }
        BT_TEST_OK(ncclGroupEnd());
        for (int r = 0; r < 2; r++) {
            CU(cudaSetDevice(devs[r]));
            CU(cudaStreamSynchronize(st[r]));
            CU(cudaMemcpy(h, out[r], 2 * count * sizeof(int32_t), cudaMemcpyDeviceToHost));
            if (h[count] != 1000 + round || h[0] != round)
                BT_TEST_CHECK(0, "round %d AllGather %zu rank %d: %d %d", round, count, r, h[0],
                              h[count]);
        }
    }
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(devs[r]));
        CU(cudaFree(buf[r]));
        CU(cudaFree(out[r]));
        CU(cudaStreamDestroy(st[r]));
    }
    free(h);
}

static void *suspend_one(void *p)
{
    int r = (int)(intptr_t)p;
    CU(cudaSetDevice(devs[r]));
    BT_TEST_OK(ncclCommSuspend(comms[r], NCCL_SUSPEND_MEM));
    return NULL;
}

static uint64_t held(void)
{
    uint64_t sum = 0;
    for (int r = 0; r < 2; r++) {
        uint64_t v = 0;
        BT_TEST_OK(ncclCommMemStats(comms[r], ncclStatGpuMemTotal, &v));
        sum += v;
    }
    return sum;
}

int main(void)
{
    const char *s = getenv("BATON_TEST_SAME_GPU");
    int same = s && atoi(s);
    devs[0] = 0;
    devs[1] = same ? 0 : 1;
    BT_TEST_OK(ncclCommInitAll(comms, 2, devs));
    run_colls(0);
    uint64_t stats = held();
    size_t f0 = free_bytes(0) + (same ? 0 : free_bytes(1));
    BT_TEST_CHECK(stats > 0, "ncclCommMemStats: no device memory held after collectives");
    pthread_t t[2];
    for (int r = 0; r < 2; r++)
        pthread_create(&t[r], NULL, suspend_one, (void *)(intptr_t)r);
    for (int r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
    size_t f1 = free_bytes(0) + (same ? 0 : free_bytes(1));
    double freed = (double)(f1 - f0);
    printf("suspend: the comms held %llu bytes (ncclCommMemStats); cudaMemGetInfo: %.0f bytes "
           "freed (%.1f%%)\n",
           (unsigned long long)stats, freed, 100.0 * freed / (double)stats);
    BT_TEST_CHECK(held() == 0, "stats while suspended: %llu", (unsigned long long)held());
    BT_TEST_CHECK(freed >= 0.9 * (double)stats, "suspend freed %.0f of %llu bytes", freed,
                  (unsigned long long)stats);
    int32_t *d = NULL;
    CU(cudaSetDevice(devs[0]));
    CU(cudaMalloc((void **)&d, 64));
    BT_TEST_CHECK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, comms[0], NULL) == ncclInvalidUsage,
                  "an AllReduce ran while suspended");
    CU(cudaFree(d));
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommResume(comms[r]));
    for (int round = 1; round <= 3; round++)
        run_colls(round);
    printf("resume: %llu bytes held again, collectives exact\n", (unsigned long long)held());
    BT_TEST_CHECK(held() == stats, "after resume %llu bytes, before %llu",
                  (unsigned long long)held(), (unsigned long long)stats);
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommDestroy(comms[r]));
    printf("gpu suspend: ok\n");
    return 0;
}
