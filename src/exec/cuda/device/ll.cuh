/*
 * LL lines: a 16-byte line {data lo, flag, data hi, flag} goes in one 16-byte store, so a
 * reader that sees both flags equal to the step's sees the data with them: no fence, no tail.
 * The line stores and loads, the byte-exact accesses to the user's buffers (used by the
 * one-shot's lines too), and one LL step of a schedule (run_step_ll).
 */
#ifndef BT_EXEC_CUDA_DEVICE_LL_CUH
#define BT_EXEC_CUDA_DEVICE_LL_CUH

#include <stdint.h>

#include "coll/work.h"
#include "exec/cuda/device/arith.cuh"
#include "exec/cuda/device/simple.cuh" /* MAX_SRCS: an LL step has a Simple step's sources */
#include "exec/cuda/device/sync.cuh"
#include "transport/conn.h"

static __device__ __forceinline__ void ll_store(union bt_ll_line *l, uint64_t v, uint32_t flag)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(l), "r"((uint32_t)v),
                 "r"(flag), "r"((uint32_t)(v >> 32)), "r"(flag)
                 : "memory");
}

/* Wait for the line to carry `flag`; its 8 bytes of payload, or an error in *err. */
static __device__ __forceinline__ uint64_t ll_load(const union bt_ll_line *l, uint32_t flag,
                                                   const struct bt_cuda_khdr &h, int peer, int widx,
                                                   int *err)
{
    uint32_t d0, f0, d1, f1;
    uint64_t start = 0;
    for (uint32_t spins = 1;; spins++) {
        asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                     : "l"(l)
                     : "memory");
        if (f0 == flag && f1 == flag)
            break;
        if ((spins & 1023) == 0 && (*err = stall_check(h, &start, peer, widx, 0)) != 0)
            return 0;
    }
    return (uint64_t)d0 | (uint64_t)d1 << 32;
}

/* Up to 8 bytes of a user buffer (any alignment; a short last piece reads only its bytes). */
static __device__ __forceinline__ uint64_t ld_bytes(const char *p, int n)
{
    uint64_t v = 0;
    if (n == 8 && ((uintptr_t)p & 7) == 0)
        return *(const uint64_t *)p;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)(uint8_t)p[i] << (8 * i);
    return v;
}

static __device__ __forceinline__ void st_bytes(char *p, uint64_t v, int n)
{
    if (n == 8 && ((uintptr_t)p & 7) == 0) {
        *(uint64_t *)p = v;
        return;
    }
    for (int i = 0; i < n; i++)
        p[i] = (char)(v >> (8 * i));
}

/* One LL step: each thread takes lines (8 bytes of payload each), waits for each receive
 * line's flag, folds acc, the received values and src * pre in that order (the Simple
 * path's order), and writes the user's output and 16-byte lines to the send slots. A step
 * with no data still moves one line. Returns 0 or an enum bt_exec_err. */
template <typename T>
static __device__ int run_step_ll(const struct bt_prim &p, const struct bt_work *w,
                                  const struct bt_cuda_khdr &h, int widx)
{
    typedef typename Num<T>::C C;
    const int N = BT_LL_PAYLOAD / sizeof(T);
    const size_t nbytes = p.nelem * sizeof(T);
    const size_t nlines = nbytes ? bt_div_up(nbytes, BT_LL_PAYLOAD) : 1;
    const bool pre = p.src && p.pre_src && w->redop.pre_mul;
    const bool post = p.post && w->redop.post_div;
    const union bt_ll_line *rl[BT_PRIM_MAX_PEERS];
    union bt_ll_line *sl[BT_PRIM_MAX_PEERS];
    uint32_t rflag[BT_PRIM_MAX_PEERS], sflag[BT_PRIM_MAX_PEERS];
    for (int i = 0; i < p.nrecv; i++) {
        rl[i] = (const union bt_ll_line *)bt_conn_slot(p.recv[i], BT_PROTO_LL, p.recv[i]->step);
        rflag[i] = (uint32_t)(p.recv[i]->step + 1);
    }
    for (int i = 0; i < p.nsend; i++) {
        sl[i] = (union bt_ll_line *)bt_conn_slot(p.send[i], BT_PROTO_LL, p.send[i]->step);
        sflag[i] = (uint32_t)(p.send[i]->step + 1);
    }
    for (size_t line = threadIdx.x; line < nlines; line += blockDim.x) {
        size_t off = line * BT_LL_PAYLOAD;
        int n = nbytes > off ? (int)bt_min_sz(BT_LL_PAYLOAD, nbytes - off) : 0;
        uint64_t in[MAX_SRCS];
        int nin = 0, err = 0;
        if (p.acc)
            in[nin++] = ld_bytes(p.acc + off, n);
        for (int i = 0; i < p.nrecv; i++) {
            in[nin++] = ll_load(&rl[i][line], rflag[i], h, p.recv[i]->peer, widx, &err);
            if (err)
                return err;
        }
        if (p.src)
            in[nin++] = ld_bytes(p.src + off, n);
        uint64_t out = in[0];
        if (nin > 1 || pre || post) {
            T t[N], x[N];
            memcpy(t, &in[0], sizeof(t));
            for (int e = 0; e < N; e++) {
                C v = Num<T>::load(t[e]);
                if (pre && nin == 1)
                    v = pre_mul<T>(v, w->redop);
                for (int s = 1; s < nin; s++) {
                    memcpy(x, &in[s], sizeof(x));
                    C y = Num<T>::load(x[e]);
                    if (pre && s == nin - 1)
                        y = pre_mul<T>(y, w->redop);
                    v = fold<C>(v, y, w->redop.op);
                }
                if (post)
                    v = Scale<C>::div(v, w->redop);
                t[e] = Num<T>::store(v);
            }
            memcpy(&out, t, sizeof(out));
        }
        if (p.dst)
            st_bytes(p.dst + off, out, n);
        for (int i = 0; i < p.nsend; i++)
            ll_store(&sl[i][line], out, sflag[i]);
    }
    return 0;
}

#endif
