/*
 * The GPU half of issue 22's lifecycle tests, two ranks of one process (on one GPU with
 * BATON_TEST_SAME_GPU=1, else GPUs 0 and 1):
 *   - non-blocking init of both ranks from one thread (config.blocking = 0): ncclInProgress,
 *     then ncclSuccess from ncclCommGetAsyncError;
 *   - non-blocking AllReduce on device buffers from one thread, one rank after the other (no
 *     group): each returns ncclInProgress, its kernel is queued once the comm reports
 *     ncclSuccess; the results are exact;
 *   - windows registered non-blocking in a group, an AllReduce of 1 MB through them;
 *   - revoke while rank 0's kernel waits for rank 1, which never launches: the kernel ends
 *     (the stream synchronizes within 2 s), then a NCCL_SHRINK_ABORT shrink of rank 0 alone
 *     runs a one-rank AllReduce; the old comms are aborted;
 *   - windows in CUDA graphs (blocking comms): captured window AllReduces replayed.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "nonblocking.h"
#include "nccl.h"

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

static int dev_of(int r)
{
    const char *s = getenv("BATON_TEST_SAME_GPU");
    return s && atoi(s) ? 0 : r;
}

/* AllReduce of count int32 on each rank's buffer, issued without a group, checked. */
static void allreduce_nb(ncclComm_t *c, int32_t **buf, cudaStream_t *st, size_t count,
                         const char *what)
{
    int32_t *h = malloc(count * sizeof(int32_t));
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < count; i++)
            h[i] = (int32_t)(i % 1013) + 1000 * r;
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaMemcpy(buf[r], h, count * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    CU(cudaDeviceSynchronize());
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        ncclResult_t res = ncclAllReduce(buf[r], buf[r], count, ncclInt32, ncclSum, c[r], st[r]);
        BT_TEST_CHECK(res == ncclInProgress, "%s: rank %d returned %d", what, r, (int)res);
    }
    for (int r = 0; r < 2; r++)
        BT_TEST_CHECK(bt_test_wait_done(c[r]) == ncclSuccess, "%s: rank %d failed", what, r);
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaStreamSynchronize(st[r]));
        CU(cudaMemcpy(h, buf[r], count * sizeof(int32_t), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++)
            if (h[i] != 2 * (int32_t)(i % 1013) + 1000)
                BT_TEST_CHECK(0, "%s: rank %d [%zu] = %d", what, r, i, h[i]);
    }
    free(h);
}

/* Windows in CUDA graphs: a blocking pair of ranks, 256 KB in windows (the window kernel's
 * range), each rank's AllReduce captured on its own stream inside one group, the two graphs
 * replayed together three times, then an AllReduce outside the graphs: the barrier counts
 * live in device memory, so replays and the eager call after them agree. */
static void graph_windows(void)
{
    const size_t count = 65536;
    ncclComm_t g[2];
    int devs[2] = {dev_of(0), dev_of(1)};
    BT_TEST_OK(ncclCommInitAll(g, 2, devs));
    int32_t *buf[2];
    cudaStream_t st[2];
    ncclWindow_t w[2];
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaMalloc((void **)&buf[r], count * sizeof(int32_t)));
        CU(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    }
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommWindowRegister(g[r], buf[r], count * sizeof(int32_t), &w[r],
                                          NCCL_WIN_COLL_SYMMETRIC));
    BT_TEST_OK(ncclGroupEnd());
    /* the comms' GPU setup (allocations) happens at their first operation: not in a capture */
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        BT_TEST_OK(ncclAllReduce(buf[r], buf[r], 7, ncclInt32, ncclSum, g[r], st[r]));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int r = 0; r < 2; r++)
        CU(cudaStreamSynchronize(st[r]));
    cudaGraph_t graph[2];
    cudaGraphExec_t exec[2];
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeThreadLocal));
    }
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        BT_TEST_OK(ncclAllReduce(buf[r], buf[r], count, ncclInt32, ncclSum, g[r], st[r]));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaStreamEndCapture(st[r], &graph[r]));
    }
    for (int r = 0; r < 2; r++) /* not while this thread still captures the other stream */
        CU(cudaGraphInstantiate(&exec[r], graph[r], 0));
    int32_t *h = malloc(count * sizeof(int32_t));
    for (int rep = 0; rep < 4; rep++) {
        for (int r = 0; r < 2; r++) {
            for (size_t i = 0; i < count; i++)
                h[i] = (int32_t)(i % 101) * (rep + 1) + r;
            CU(cudaSetDevice(dev_of(r)));
            CU(cudaMemcpy(buf[r], h, count * sizeof(int32_t), cudaMemcpyHostToDevice));
        }
        CU(cudaDeviceSynchronize());
        if (rep < 3) {
            for (int r = 0; r < 2; r++) {
                CU(cudaSetDevice(dev_of(r)));
                CU(cudaGraphLaunch(exec[r], st[r]));
            }
        } else { /* eager, after the replays */
            BT_TEST_OK(ncclGroupStart());
            for (int r = 0; r < 2; r++) {
                CU(cudaSetDevice(dev_of(r)));
                BT_TEST_OK(ncclAllReduce(buf[r], buf[r], count, ncclInt32, ncclSum, g[r], st[r]));
            }
            BT_TEST_OK(ncclGroupEnd());
        }
        for (int r = 0; r < 2; r++) {
            CU(cudaSetDevice(dev_of(r)));
            CU(cudaStreamSynchronize(st[r]));
            CU(cudaMemcpy(h, buf[r], count * sizeof(int32_t), cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < count; i++)
                if (h[i] != 2 * (int32_t)(i % 101) * (rep + 1) + 1)
                    BT_TEST_CHECK(0, "graph rep %d: rank %d [%zu] = %d", rep, r, i, h[i]);
        }
    }
    /* the output outside any window: the FIFO path, the same result */
    int32_t *out[2];
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaMalloc((void **)&out[r], count * sizeof(int32_t)));
        BT_TEST_OK(ncclAllReduce(buf[r], out[r], count, ncclInt32, ncclSum, g[r], st[r]));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaStreamSynchronize(st[r]));
        CU(cudaMemcpy(h, out[r], count * sizeof(int32_t), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++)
            if (h[i] != 2 * (2 * (int32_t)(i % 101) * 4 + 1))
                BT_TEST_CHECK(0, "out of window: rank %d [%zu] = %d", r, i, h[i]);
        CU(cudaFree(out[r]));
    }
    free(h);
    for (int r = 0; r < 2; r++) {
        CU(cudaGraphExecDestroy(exec[r]));
        CU(cudaGraphDestroy(graph[r]));
        BT_TEST_OK(ncclCommWindowDeregister(g[r], w[r]));
        BT_TEST_OK(ncclCommDestroy(g[r]));
        CU(cudaFree(buf[r]));
        CU(cudaStreamDestroy(st[r]));
    }
    printf("windows in CUDA graphs: 3 replays and an eager AllReduce exact\n");
}

int main(void)
{
    ncclUniqueId id;
    ncclComm_t c[2];
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    BT_TEST_OK(ncclGetUniqueId(&id));
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        ncclResult_t res = ncclCommInitRankConfig(&c[r], 2, id, r, &cfg);
        BT_TEST_CHECK(res == ncclInProgress, "init of rank %d returned %d", r, (int)res);
    }
    for (int r = 0; r < 2; r++)
        BT_TEST_CHECK(bt_test_wait_done(c[r]) == ncclSuccess, "init of rank %d failed", r);

    const size_t count = 1 << 20;
    int32_t *buf[2];
    cudaStream_t st[2];
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaMalloc((void **)&buf[r], count * sizeof(int32_t)));
        CU(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    }
    allreduce_nb(c, buf, st, 1000, "AllReduce 4 KB");
    allreduce_nb(c, buf, st, count, "AllReduce 4 MB");

    ncclWindow_t w[2];
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommWindowRegister(c[r], buf[r], count * sizeof(int32_t), &w[r],
                                          NCCL_WIN_COLL_SYMMETRIC));
    ncclResult_t res = ncclGroupEnd();
    BT_TEST_CHECK(res == ncclInProgress, "window group returned %d", (int)res);
    for (int r = 0; r < 2; r++)
        BT_TEST_CHECK(bt_test_wait_done(c[r]) == ncclSuccess && w[r], "window of rank %d", r);
    allreduce_nb(c, buf, st, count / 4, "AllReduce 1 MB through windows");
    allreduce_nb(c, buf, st, 7, "AllReduce 28 B through windows");
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommWindowDeregister(c[r], w[r]));

    /* Rank 0's kernel waits for rank 1, which never launches; revoke ends it. */
    CU(cudaSetDevice(dev_of(0)));
    BT_TEST_CHECK(ncclAllReduce(buf[0], buf[0], 4096, ncclInt32, ncclSum, c[0], st[0]) ==
                      ncclInProgress,
                  "lone AllReduce");
    BT_TEST_CHECK(bt_test_wait_done(c[0]) == ncclSuccess, "the lone AllReduce was not queued");
    usleep(200000);
    BT_TEST_CHECK(cudaStreamQuery(st[0]) == cudaErrorNotReady, "the lone kernel did not wait");
    double t0 = bt_test_now_s();
    BT_TEST_OK(ncclCommRevoke(c[0], NCCL_REVOKE_DEFAULT));
    CU(cudaStreamSynchronize(st[0]));
    double took = bt_test_now_s() - t0;
    BT_TEST_CHECK(took < 2, "the revoked kernel ended after %.2f s", took);
    printf("revoke: the waiting kernel ended %.3f s after ncclCommRevoke\n", took);
    int excl = 1;
    ncclComm_t k = NULL;
    res = ncclCommShrink(c[0], &excl, 1, &k, NULL, NCCL_SHRINK_ABORT);
    BT_TEST_CHECK(res == ncclInProgress, "shrink returned %d", (int)res);
    BT_TEST_CHECK(bt_test_wait_done(c[0]) == ncclSuccess && k, "shrink failed");
    int32_t one[4] = {5, 6, 7, 8}, got[4];
    CU(cudaMemcpy(buf[0], one, sizeof(one), cudaMemcpyHostToDevice));
    BT_TEST_CHECK(ncclAllReduce(buf[0], buf[0], 4, ncclInt32, ncclSum, k, st[0]) == ncclInProgress,
                  "AllReduce on the shrunk comm");
    BT_TEST_CHECK(bt_test_wait_done(k) == ncclSuccess, "AllReduce on the shrunk comm failed");
    CU(cudaStreamSynchronize(st[0]));
    CU(cudaMemcpy(got, buf[0], sizeof(got), cudaMemcpyDeviceToHost));
    BT_TEST_CHECK(memcmp(one, got, sizeof(one)) == 0, "one-rank AllReduce changed the data");
    BT_TEST_OK(ncclCommDestroy(k));
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommAbort(c[r]));
    for (int r = 0; r < 2; r++) {
        CU(cudaSetDevice(dev_of(r)));
        CU(cudaFree(buf[r]));
        CU(cudaStreamDestroy(st[r]));
    }
    graph_windows();
    printf("test_gpu_nonblocking: ok\n");
    return 0;
}
