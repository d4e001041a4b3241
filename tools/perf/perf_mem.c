/*
 * Memory behind the benchmark's buffers. Host memory: page-aligned malloc, and collectives
 * that complete when the call returns, so sync has nothing to wait for. A CUDA table
 * (cudaMalloc, cudaMemcpy, cudaMemset, cudaStreamSynchronize) fills the same entries when
 * baton-perf learns device memory.
 */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define PERF_HOST_ALIGN 4096

static int perf_host_alloc(void **ptr_p, size_t bytes)
{
    void *p = NULL;
    /* posix_memalign(0) may return NULL; keep a valid pointer for 0-byte buffers. */
    if (posix_memalign(&p, PERF_HOST_ALIGN, bytes > 0 ? bytes : PERF_HOST_ALIGN) != 0) {
        return -1;
    }
    *ptr_p = p;
    return 0;
}

static void perf_host_free(void *ptr)
{
    free(ptr);
}

static int perf_host_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes > 0 && dst != src) {
        memmove(dst, src, bytes);
    }
    return 0;
}

static int perf_host_memset(void *ptr, int v, size_t bytes)
{
    memset(ptr, v, bytes);
    return 0;
}

static int perf_host_sync(void *stream)
{
    (void)stream;
    return 0;
}

const struct perf_mem_ops perf_mem_host = {
    .name = "host",
    .alloc = perf_host_alloc,
    .free = perf_host_free,
    .to_host = perf_host_copy,
    .from_host = perf_host_copy,
    .memset = perf_host_memset,
    .sync = perf_host_sync,
    .host_accessible = 1,
};
