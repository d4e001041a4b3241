/*
 * The window AllReduce (kargs.h: struct bt_cuda_wargs): every rank's input and output lie in
 * windows every rank has mapped, so it runs as a two-shot without FIFOs. Rank r owns part r
 * of the elements; block b of rank r
 *   1. tells every peer's block b that it has arrived (its input is ready, its output free),
 *      and waits until every peer's block b has told it the same (entry barrier);
 *   2. reads its share of part r from every rank's input, 16-byte units, folds them in rank
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
#include "exec/cuda/device/launch.cuh"
#include "exec/cuda/device/ll.cuh"
#include "exec/cuda/device/sync.cuh"
#include "exec/cuda/kargs.h"

#define WIN_UNROLL 4 /* 16-byte units a thread loads before it folds */

/* One 16-byte unit at p, of which `left` bytes are the collective's (the last may be short):
 * a vector access where every pointer is 16-byte aligned and the unit whole, else words. */
static __device__ __forceinline__ void load_unit(const char *p, size_t left, bool vec, uint64_t *x)
{
    if (vec && left >= 16) {
        const ulonglong2 v = *(const ulonglong2 *)p;
        x[0] = v.x;
        x[1] = v.y;
        return;
    }
    x[0] = ld_bytes(p, left < 8 ? (int)left : 8);
    x[1] = left > 8 ? ld_bytes(p + 8, left < 16 ? (int)(left - 8) : 8) : 0;
}

static __device__ __forceinline__ void store_unit(char *p, size_t left, bool vec, const uint64_t *x)
{
    if (vec && left >= 16) {
        *(ulonglong2 *)p = make_ulonglong2(x[0], x[1]);
        return;
    }
    st_bytes(p, x[0], left < 8 ? (int)left : 8);
    if (left > 8)
        st_bytes(p + 8, x[1], left < 16 ? (int)(left - 8) : 8);
}

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
    order_wait();
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

    /* 16-byte units: part r of them is rank r's, a share of it this block's; each thread
     * takes WIN_UNROLL units at a time and loads them from every rank before it folds, so
     * that many loads are in flight (one unit at a time was latency-bound: ~0.3 us per unit
     * and thread on one H200). */
    const size_t nbytes = a.count * sizeof(T), nunits = bt_div_up(nbytes, 16);
    const size_t part = bt_div_up(nunits, n), p0 = part * (size_t)a.rank;
    const size_t p1 = p0 + part < nunits ? p0 + part : nunits;
    const size_t per = p1 > p0 ? bt_div_up(p1 - p0, gridDim.x) : 0;
    const size_t u0 = p0 + (size_t)b * per, u1 = u0 + per < p1 ? u0 + per : p1;
    uintptr_t bits = 0;
    for (int r = 0; r < n; r++)
        bits |= (uintptr_t)a.src[r] | (uintptr_t)a.dst[r];
    const bool vec = (bits & 15) == 0;
    const bool pre = a.redop.pre_mul, post = a.redop.post_div;
    for (size_t base = u0 + threadIdx.x; base < u1; base += (size_t)blockDim.x * WIN_UNROLL) {
        uint64_t acc[WIN_UNROLL][2];
        for (int r = 0; r < n; r++) {
#pragma unroll
            for (int k = 0; k < WIN_UNROLL; k++) {
                const size_t u = base + (size_t)k * blockDim.x, off = u * 16;
                if (u >= u1)
                    break;
                uint64_t x[2];
                load_unit(a.src[r] + off, nbytes - off, vec, x);
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    if (pre)
                        x[h] = word_scale<T, false>(x[h], a.redop);
                    acc[k][h] = r == 0 ? x[h] : word_fold<T>(acc[k][h], x[h], a.redop.op);
                }
            }
        }
#pragma unroll
        for (int k = 0; k < WIN_UNROLL; k++) {
            const size_t u = base + (size_t)k * blockDim.x, off = u * 16;
            if (u >= u1)
                break;
            if (post) {
                acc[k][0] = word_scale<T, true>(acc[k][0], a.redop);
                acc[k][1] = word_scale<T, true>(acc[k][1], a.redop);
            }
            for (int r = 0; r < n; r++)
                store_unit(a.dst[r] + off, nbytes - off, vec, acc[k]);
        }
    }
    __syncthreads(); /* every read and write of this block is done */
    if (win_barrier(a, b, 2 * e))
        return;
    if (threadIdx.x == 0)
        a.flags[a.rank]->count[b] = e;
}

template <typename T>
static int launch(const struct bt_cuda_wargs *a, int nblocks, void *stream, void *done_event)
{
    bt_launch(bt_cuda_window_kernel<T>, nblocks, (cudaStream_t)stream, done_event, *a);
    return (int)cudaGetLastError();
}

extern "C" int bt_cuda_window_kernel_launch(const struct bt_cuda_wargs *a, int nblocks,
                                            void *stream, void *done_event)
{
    switch (a->redop.dtype) {
    case BT_INT8:
        return launch<int8_t>(a, nblocks, stream, done_event);
    case BT_UINT8:
        return launch<uint8_t>(a, nblocks, stream, done_event);
    case BT_INT32:
        return launch<int32_t>(a, nblocks, stream, done_event);
    case BT_UINT32:
        return launch<uint32_t>(a, nblocks, stream, done_event);
    case BT_INT64:
        return launch<int64_t>(a, nblocks, stream, done_event);
    case BT_UINT64:
        return launch<uint64_t>(a, nblocks, stream, done_event);
    case BT_FLOAT16:
        return launch<__half>(a, nblocks, stream, done_event);
    case BT_FLOAT32:
        return launch<float>(a, nblocks, stream, done_event);
    case BT_FLOAT64:
        return launch<double>(a, nblocks, stream, done_event);
    case BT_BFLOAT16:
        return launch<__nv_bfloat16>(a, nblocks, stream, done_event);
    case BT_FP8E4M3:
        return launch<fp8e4m3>(a, nblocks, stream, done_event);
    default:
        return launch<fp8e5m2>(a, nblocks, stream, done_event);
    }
}
