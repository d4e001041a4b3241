/* A build without CUDA: baton-perf measures host memory only. */
#include "perf.h"

const struct perf_mem_ops perf_mem_cuda = {.name = "none"};

int perf_cuda_setup(int rank, int *dev_p, void **stream_p)
{
    (void)rank;
    (void)dev_p;
    (void)stream_p;
    return 1;
}

void perf_cuda_teardown(void)
{
}
