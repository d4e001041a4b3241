/* ---- one-shot AllReduce in one pass per chunk ------------------------------------------
 * Instead of the schedule's 2n - 1 steps (coll/direct.h): every thread takes lines, sends its
 * own (pre-multiplied) payload to every peer, then folds the n contributions in rank order
 * (its own at its rank), rounding to T after each fold as the step-by-step schedule does, so
 * the results are the same bits. Connector state is read once per work into shared memory.
 * Two line formats: LL (8 bytes of payload per 16-byte line) and LL128 (120 per 128). It runs
 * in a kernel of its own (bt_cuda_direct_kernel). */
#define DIRECT_LL_BATCH 8 /* lines a thread sends before it waits for the first */
/* LL128: chunks a block sends ahead of the one it folds (up to BT_NSTEPS - 1). 0: each chunk
 * is sent, then received. On one H200 every chunk ahead cost 2.5-3 us at 256 KB a block (0:
 * 44 us, 1: 47, 2: 50); not yet measured over NVLink, where a chunk ahead could hide the
 * crossing. */
#define DIRECT_LL128_AHEAD 0
#ifndef BT_EXEC_CUDA_DEVICE_DIRECT_CUH
#define BT_EXEC_CUDA_DEVICE_DIRECT_CUH

#include <stdint.h>

#include "coll/algo.h"
#include "exec/cuda/device/arith.cuh"
#include "exec/cuda/device/direct_conn.cuh"
#include "exec/cuda/device/ll.cuh"
#include "exec/cuda/device/ll128.cuh"
#include "exec/cuda/kargs.h"

template <typename T>
static __device__ __forceinline__ int
run_direct_ll(const struct bt_work *w, const struct bt_cuda_khdr &h, int widx, DirectChunk &d)
{
    const int n = w->nranks, me = w->rank;
    const uint64_t nloops = bt_work_nloops(w);
    for (uint64_t l = 0; l < nloops; l++) {
        int err = direct_send_begin(w, h, widx, &d);
        direct_recv_begin(w, &d);
        if (__syncthreads_or(err))
            return err;
        size_t off, nbytes;
        direct_chunk<T>(w, l, &off, &nbytes);
        size_t nlines = nbytes ? bt_div_up(nbytes, BT_LL_PAYLOAD) : 1;
        const char *src = w->sendbuf + off * sizeof(T);
        char *dst = w->recvbuf + off * sizeof(T);
        /* A thread sends a batch of its lines before it waits for any: waiting for line k
         * right after sending it would cost each of a thread's lines a crossing of the
         * link, since the peer's thread works in the same lock step. */
        for (size_t base = threadIdx.x; base < nlines && !err;
             base += (size_t)blockDim.x * DIRECT_LL_BATCH) {
            uint64_t own[DIRECT_LL_BATCH];
#pragma unroll
            for (int k = 0; k < DIRECT_LL_BATCH; k++) {
                size_t line = base + (size_t)k * blockDim.x, o = line * BT_LL_PAYLOAD;
                if (line >= nlines)
                    break;
                own[k] = ld_bytes(src + o, word_bytes(nbytes, o));
                if (w->redop.pre_mul)
                    own[k] = word_scale<T, false>(own[k], w->redop);
                for (int r = 0; r < n; r++)
                    if (r != me)
                        ll_store((union bt_ll_line *)d.send[r] + line, own[k],
                                 (uint32_t)d.sflag[r]);
            }
#pragma unroll
            for (int k = 0; k < DIRECT_LL_BATCH; k++) {
                size_t line = base + (size_t)k * blockDim.x, o = line * BT_LL_PAYLOAD;
                if (line >= nlines || err)
                    break;
                uint64_t acc = 0;
                for (int r = 0; r < n && !err; r++) {
                    uint64_t v = r == me ? own[k]
                                         : ll_load((const union bt_ll_line *)d.recv[r] + line,
                                                   (uint32_t)d.rflag[r], h, r, widx, &err);
                    acc = r == 0 ? v : word_fold<T>(acc, v, w->redop.op);
                }
                if (w->redop.post_div)
                    acc = word_scale<T, true>(acc, w->redop);
                if (!err)
                    st_bytes(dst + o, acc, word_bytes(nbytes, o));
            }
        }
        if (__syncthreads_or(err))
            return err;
        direct_send_end(w, &d);
        direct_recv_end(w, &d); /* the next chunk's begin runs in the same thread; its barrier */
    }                           /* comes before anyone reads what it writes */
    return 0;
}

/* The LL128 one-shot: a block sends a whole chunk (every line to every peer, no waits but
 * credit), then receives it, so the peer's lines have been on their way for a chunk's sending
 * before the first is checked; with DIRECT_LL128_AHEAD = a, it sends chunk i and then
 * receives chunk i - a. Its own input is read again where it folds, not kept in registers
 * from the send. Sending and receiving alternately per batch (before 2026-12-01) exposed a
 * crossing per batch: 4-5 GB/s a block, against 6-7 now on one H200 (the pattern alone, in
 * bench/ll128_patterns.cu: 6.7 against 9.0). */
template <typename T>
static __device__ __forceinline__ int
run_direct_ll128(const struct bt_work *w, const struct bt_cuda_khdr &h, int widx, DirectChunk &d)
{
    const uint64_t nloops = bt_work_nloops(w);
    const uint64_t lag =
        nloops < DIRECT_LL128_AHEAD + 1 ? (nloops ? nloops - 1 : 0) : DIRECT_LL128_AHEAD;
    for (uint64_t i = 0; i < nloops + lag; i++) {
        const bool send = i < nloops, recv = i >= lag;
        int err = send ? direct_send_begin(w, h, widx, &d) : 0;
        if (recv)
            direct_recv_begin(w, &d);
        if (__syncthreads_or(err))
            return err;
        if (send)
            ll128_send_chunk<T>(w, d, i);
        if (recv)
            err = ll128_recv_chunk<T>(w, d, i - lag, h, widx);
        if (__syncthreads_or(err))
            return err;
        if (send)
            direct_send_end(w, &d);
        if (recv)
            direct_recv_end(w, &d);
    }
    return 0;
}

#endif
