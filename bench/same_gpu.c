/*
 * Two ranks of one process on one GPU (Baton with TEST_SAME_GPU=1): a collective's time when
 * both ranks' kernels share the GPU. Not a link measurement: the bytes never leave the GPU's
 * memory, so what it shows is the kernels' own efficiency (instructions, registers, spills),
 * which NVLink hides partly. Used to compare two builds of the kernels on a one-GPU machine:
 *   BATON_TEST_SAME_GPU=1 LD_LIBRARY_PATH=<lib> baton-same-gpu allreduce|allgather BYTES ITERS
 * SAME_GPU_PAD_MB=N first takes N MB of GPU memory (where later allocations land).
 * Prints the mean time per collective (both ranks' kernels together) and bytes / time.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "baton-same-gpu: %s failed (line %d)\n", #x, __LINE__);                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: baton-same-gpu allreduce|allgather BYTES ITERS\n");
        return 2;
    }
    int ag = strcmp(argv[1], "allgather") == 0;
    size_t bytes = strtoull(argv[2], NULL, 0), count = bytes / sizeof(float);
    int iters = atoi(argv[3]);
    if (iters < 1 || bytes < 2 * sizeof(float)) {
        fprintf(stderr, "baton-same-gpu: ITERS >= 1 and BYTES >= 8, please\n");
        return 2;
    }
    /* SAME_GPU_PAD_MB: GPU memory taken before anything else, to move where the library's
     * and the buffers' allocations land (placement effects against code effects) */
    const char *pad = getenv("SAME_GPU_PAD_MB");
    void *padding = NULL;
    if (pad && atoi(pad) > 0)
        CHECK(cudaMalloc(&padding, (size_t)atoi(pad) << 20) == cudaSuccess);
    ncclComm_t comms[2];
    int devs[2] = {0, 0};
    CHECK(ncclCommInitAll(comms, 2, devs) == ncclSuccess);
    float *send[2], *recv[2];
    cudaStream_t st[2];
    size_t in = ag ? bytes / 2 : bytes; /* AllGather: each rank's half */
    for (int r = 0; r < 2; r++) {
        CHECK(cudaMalloc((void **)&send[r], in) == cudaSuccess);
        CHECK(cudaMalloc((void **)&recv[r], bytes) == cudaSuccess);
        CHECK(cudaMemset(send[r], 0, in) == cudaSuccess);
        CHECK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking) == cudaSuccess);
    }
    double t0 = 0;
    for (int i = -5; i < iters; i++) {
        if (i == 0) {
            CHECK(cudaDeviceSynchronize() == cudaSuccess);
            t0 = now_s();
        }
        CHECK(ncclGroupStart() == ncclSuccess);
        for (int r = 0; r < 2; r++) {
            if (ag)
                CHECK(ncclAllGather(send[r], recv[r], count / 2, ncclFloat32, comms[r], st[r]) ==
                      ncclSuccess);
            else
                CHECK(ncclAllReduce(send[r], recv[r], count, ncclFloat32, ncclSum, comms[r],
                                    st[r]) == ncclSuccess);
        }
        CHECK(ncclGroupEnd() == ncclSuccess);
    }
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    double us = (now_s() - t0) / iters * 1e6;
    printf("%s %zu bytes: %.1f us, %.1f GB/s (bytes / time)\n", argv[1], bytes, us,
           bytes / us / 1e3);
    for (int r = 0; r < 2; r++)
        ncclCommDestroy(comms[r]);
    cudaFree(padding);
    return 0;
}
