/*
 * The window AllReduce (kargs.h: struct bt_cuda_wargs): every rank's input and output lie in
 * windows every rank has mapped, so it runs as a two-shot without FIFOs. Rank r owns part r
 * of the elements; block b of rank r
 *   1. tells every peer's block b that it has arrived (its input is ready, its output free),
 *      and waits until every peer's block b has told it the same (entry barrier);
 *   2. reads its share of part r from every rank's input, 8-byte words, folds them in rank
 *      order (each pre-multiplied and rounded to T first) and writes the result into every
 *      rank's output: each word of part r is read and written by this one thread only, so an
 *      in-place AllReduce (input = output) is safe, and every rank gets the same bits;
 *   3. tells every peer it is done, and waits until every peer is (exit barrier): then every
 *      part of this rank's output is written and no peer reads its input any more.
 * Each rank reads about one input's worth and writes one output's worth, (n - 1) / n of it
 * over the links. Barrier values come from a count each rank's block keeps in device memory,
 * so a replayed CUDA graph counts on. Every wait watches the abort flag and TIMEOUT
 * (sync.cuh). One kernel per dtype, all in this unit: they are small.
 */
#include <cuda_fp16.h>
#include <stdint.h>

#include "coll/redop.h"
#include "exec/cuda/device/arith.cuh"
#include "exec/cuda/device/ll.cuh"
#include "exec/cuda/device/sync.cuh"
#include "exec/cuda/kargs.h"

/* Tell every peer's block b that this block reached `v`, then wait until every peer's has. */
static __device__ int win_barrier(const struct bt_cuda_wargs &a, int b, uint64_t v)
{
    int err = 0, r = threadIdx.x;
    if (r < a.nranks && r != a.rank) {
        __threadfence_system(); /* what this block did before is seen before the flag */
        st_relaxed_sys(&a.flags[r]->flag[b][a.rank], v);
        uint64_t seen;
        err = wait_ge(&a.flags[a.rank]->flag[b][r], v, &seen, a.h, r, b, 0);
    }
    return __syncthreads_or(err);
}

template <typename T>
__global__ void __launch_bounds__(BT_CUDA_THREADS, 1)
    bt_cuda_window_kernel(const __grid_constant__ struct bt_cuda_wargs a)
{
    __shared__ uint64_t epoch;
    const int b = blockIdx.x, n = a.nranks;
    if (threadIdx.x == 0) {
        cur_seq = a.seq;
        cur_count = a.count;
        cur_coll = BT_COLL_ALLREDUCE;
        epoch = a.flags[a.rank]->count[b] + 1;
    }
    __syncthreads();
    const uint64_t e = epoch;
    if (win_barrier(a, b, 2 * e - 1))
        return;

    const size_t nbytes = a.count * sizeof(T), nwords = bt_div_up(nbytes, 8);
    const size_t part = bt_div_up(nwords, n), p0 = part * (size_t)a.rank;
    const size_t p1 = p0 + part < nwords ? p0 + part : nwords;
    const size_t per = p1 > p0 ? bt_div_up(p1 - p0, gridDim.x) : 0;
    const size_t w0 = p0 + (size_t)b * per, w1 = w0 + per < p1 ? w0 + per : p1;
    const bool pre = a.redop.pre_mul, post = a.redop.post_div;
    for (size_t wi = w0 + threadIdx.x; wi < w1; wi += blockDim.x) {
        const size_t off = wi * 8;
        const int nb = nbytes - off < 8 ? (int)(nbytes - off) : 8;
        uint64_t acc = ld_bytes(a.src[0] + off, nb);
        if (pre)
            acc = word_scale<T, false>(acc, a.redop);
        for (int r = 1; r < n; r++) {
            uint64_t x = ld_bytes(a.src[r] + off, nb);
            if (pre)
                x = word_scale<T, false>(x, a.redop);
            acc = word_fold<T>(acc, x, a.redop.op);
        }
        if (post)
            acc = word_scale<T, true>(acc, a.redop);
        for (int r = 0; r < n; r++)
            st_bytes(a.dst[r] + off, acc, nb);
    }
    __syncthreads(); /* every read and write of this block is done */
    if (win_barrier(a, b, 2 * e))
        return;
    if (threadIdx.x == 0)
        a.flags[a.rank]->count[b] = e;
}

template <typename T> static int launch(const struct bt_cuda_wargs *a, int nblocks, void *stream)
{
    bt_cuda_window_kernel<T><<<nblocks, BT_CUDA_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int bt_cuda_window_kernel_launch(const struct bt_cuda_wargs *a, int nblocks,
                                            void *stream)
{
    switch (a->redop.dtype) {
    case BT_INT8:
        return launch<int8_t>(a, nblocks, stream);
    case BT_UINT8:
        return launch<uint8_t>(a, nblocks, stream);
    case BT_INT32:
        return launch<int32_t>(a, nblocks, stream);
    case BT_UINT32:
        return launch<uint32_t>(a, nblocks, stream);
    case BT_INT64:
        return launch<int64_t>(a, nblocks, stream);
    case BT_UINT64:
        return launch<uint64_t>(a, nblocks, stream);
    case BT_FLOAT16:
        return launch<__half>(a, nblocks, stream);
    case BT_FLOAT32:
        return launch<float>(a, nblocks, stream);
    case BT_FLOAT64:
        return launch<double>(a, nblocks, stream);
    case BT_BFLOAT16:
        return launch<__nv_bfloat16>(a, nblocks, stream);
    case BT_FP8E4M3:
        return launch<fp8e4m3>(a, nblocks, stream);
    default:
        return launch<fp8e5m2>(a, nblocks, stream);
    }
}
