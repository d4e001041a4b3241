/*
 * The CUDA executor's kernel: one block per lane (a channel, or a point-to-point peer),
 * each running its works' steps in order. A step is the same primitive the host executor
 * runs (coll/work.h), computed by the same schedule functions (coll/algo.h, compiled for
 * the device), over connectors whose FIFOs live in GPU memory (transport/p2p: the
 * receiver's buffer, written by the sender through NVLink or PCIe peer mappings).
 *
 * A step, Simple protocol:
 *   thread 0 waits: each receive connector's tail >= step + 1 (acquire, system scope), each
 *            send connector's head + NSTEPS > step (a free slot in the peer's FIFO)
 *   barrier
 *   all threads: value = fold(acc, recv slots, src * pre) then post; written to the user's
 *            output and to each send slot, 16 bytes per access when every pointer allows
 *   barrier
 *   thread 0: fence.acq_rel.sys, then for each send connector tail = step + 1 (the data
 *            before the flag), for each receive connector head = step + 1 (we are done
 *            reading the slot)
 * Receive slots are read with ld.global.cg (L2, not L1): the same slot comes back every
 * NSTEPS steps with new data written by another GPU, which L1 would not see.
 * Every wait watches the communicator's abort flag (host-mapped) and a deadline
 * (TIMEOUT): a dead peer or ncclCommAbort ends the kernel with an error, never a hang.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "coll/algo.h"
#include "exec/cuda/kargs.h"

/* ---- flags and memory ordering ----------------------------------------------------- */

static __device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ void st_relaxed_sys(uint64_t *p, uint64_t v)
{
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ uint64_t globaltimer_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The collective the block runs now, for reports (thread 0 sets it as each work starts). */
static __shared__ uint64_t cur_seq, cur_count;
static __shared__ int cur_coll;

static __device__ void report_where(volatile struct bt_cuda_where *at, int peer, int widx,
                                    int is_send)
{
    at->seq = cur_seq;
    at->count = cur_count;
    at->coll = cur_coll;
    at->peer = peer;
    at->work = widx;
    at->is_send = is_send;
}

#define STALL_REPORTED (1ull << 63) /* in a wait's start time: its hang was reported */

/* Called every 1024 polls of a wait: the abort flag, the hang report and the deadline
 * (`start` is the first check's time). Returns 0, or an enum bt_cuda_kerr, also recorded in
 * the host-mapped report with where the wait stalled. */
static __device__ __noinline__ int stall_check(const struct bt_cuda_khdr &h, uint64_t *start,
                                               int peer, int widx, int is_send)
{
    int err = BT_CUDA_KERR_NONE;
    if (h.abort_flag && *h.abort_flag)
        err = BT_CUDA_KERR_ABORT;
    uint64_t now = globaltimer_ns();
    volatile struct bt_cuda_report *r = h.report;
    if (*start == 0) {
        *start = now;
    } else {
        uint64_t waited = now - (*start & ~STALL_REPORTED);
        if (h.timeout_ns && waited > h.timeout_ns)
            err = BT_CUDA_KERR_TIMEOUT;
        if (h.hang_ns && waited > h.hang_ns && !(*start & STALL_REPORTED)) {
            *start |= STALL_REPORTED;
            if (!r->stalled) {
                report_where(&r->stall_at, peer, widx, is_send);
                __threadfence_system();
                r->stalled = 1;
            }
        }
    }
    if (err) {
        /* Plain stores: atomics on host memory need PCIe AtomicOps, which not every
         * platform has. Threads failing together may mix their details; the code is what
         * matters and every writer writes a non-zero one. */
        if (r->error == BT_CUDA_KERR_NONE) {
            report_where(&r->error_at, peer, widx, is_send);
            __threadfence_system();
            r->error = err;
        }
    }
    return err;
}

/* Spin until *p >= v; *seen gets the value that satisfied it. Returns 0 or an enum
 * bt_cuda_kerr (abort, timeout). caller: thread 0 of the block. */
static __device__ int wait_ge(const uint64_t *p, uint64_t v, uint64_t *seen,
                              const struct bt_cuda_khdr &h, int peer, int widx, int is_send)
{
    uint64_t start = 0, x;
    for (uint32_t spins = 1; (x = ld_acquire_sys(p)) < v; spins++) {
        if ((spins & 1023) != 0)
            continue;
        int err = stall_check(h, &start, peer, widx, is_send);
        if (err)
            return err;
    }
    *seen = x;
    return 0;
}

/* ---- LL lines -------------------------------------------------------------------------
 * A 16-byte line {data lo, flag, data hi, flag} goes in one 16-byte store, so a reader that
 * sees both flags equal to the step's sees the data with them: no fence, no tail. */

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

/* ---- arithmetic ---------------------------------------------------------------------- */

struct fp8e4m3 {
    uint8_t v;
};
struct fp8e5m2 {
    uint8_t v;
};

/* T: the stored type; C: what it is folded in (coll/redop.h's bt_host_reduce rules). */
template <typename T> struct Num {
    typedef T C;
    static __device__ __forceinline__ C load(T x)
    {
        return x;
    }
    static __device__ __forceinline__ T store(C x)
    {
        return x;
    }
};
template <> struct Num<__half> {
    typedef float C;
    static __device__ __forceinline__ C load(__half x)
    {
        return __half2float(x);
    }
    static __device__ __forceinline__ __half store(C x)
    {
        return __float2half_rn(x);
    }
};
template <> struct Num<__nv_bfloat16> {
    typedef float C;
    static __device__ __forceinline__ C load(__nv_bfloat16 x)
    {
        return __bfloat162float(x);
    }
    static __device__ __forceinline__ __nv_bfloat16 store(C x)
    {
        return __float2bfloat16_rn(x);
    }
};
template <> struct Num<fp8e4m3> {
    typedef float C;
    static __device__ __forceinline__ C load(fp8e4m3 x)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.v, __NV_E4M3)));
    }
    static __device__ __forceinline__ fp8e4m3 store(C x)
    {
        return fp8e4m3{__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)};
    }
};
template <> struct Num<fp8e5m2> {
    typedef float C;
    static __device__ __forceinline__ C load(fp8e5m2 x)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.v, __NV_E5M2)));
    }
    static __device__ __forceinline__ fp8e5m2 store(C x)
    {
        return fp8e5m2{__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)};
    }
};

template <typename C> static __device__ __forceinline__ bool is_nan(C x)
{
    return x != x; /* false for integers */
}

template <typename C> static __device__ __forceinline__ C fold(C a, C b, int op)
{
    switch (op) {
    case BT_OP_SUM:
        return a + b;
    case BT_OP_PROD:
        return a * b;
    case BT_OP_MAX: /* NaN wins; between equal values the later source's is kept */
        return is_nan(a) ? a : (a > b ? a : b);
    default:
        return is_nan(a) ? a : (a < b ? a : b);
    }
}

/* Integers multiply and wrap (in unsigned arithmetic: no overflow UB); floats multiply by
 * the scalar in their fold type. */
template <typename C> struct Scale {
    static __device__ __forceinline__ C mul(C x, const struct bt_redop &r)
    {
        return (C)((uint64_t)x * (uint64_t)r.scalar_i);
    }
    static __device__ __forceinline__ C div(C x, const struct bt_redop &r)
    {
        return (C)((int64_t)x / (int64_t)r.divisor);
    }
};
template <> struct Scale<float> {
    static __device__ __forceinline__ float mul(float x, const struct bt_redop &r)
    {
        return x * (float)r.scalar_f;
    }
    static __device__ __forceinline__ float div(float x, const struct bt_redop &)
    {
        return x;
    }
};
template <> struct Scale<double> {
    static __device__ __forceinline__ double mul(double x, const struct bt_redop &r)
    {
        return x * r.scalar_f;
    }
    static __device__ __forceinline__ double div(double x, const struct bt_redop &)
    {
        return x;
    }
};
template <> struct Scale<uint8_t> {
    static __device__ __forceinline__ uint8_t mul(uint8_t x, const struct bt_redop &r)
    {
        return (uint8_t)((uint64_t)x * (uint64_t)r.scalar_i);
    }
    static __device__ __forceinline__ uint8_t div(uint8_t x, const struct bt_redop &r)
    {
        return (uint8_t)(x / r.divisor);
    }
};
template <> struct Scale<uint32_t> {
    static __device__ __forceinline__ uint32_t mul(uint32_t x, const struct bt_redop &r)
    {
        return (uint32_t)((uint64_t)x * (uint64_t)r.scalar_i);
    }
    static __device__ __forceinline__ uint32_t div(uint32_t x, const struct bt_redop &r)
    {
        return (uint32_t)(x / r.divisor);
    }
};
template <> struct Scale<uint64_t> {
    static __device__ __forceinline__ uint64_t mul(uint64_t x, const struct bt_redop &r)
    {
        return x * (uint64_t)r.scalar_i;
    }
    static __device__ __forceinline__ uint64_t div(uint64_t x, const struct bt_redop &r)
    {
        return x / r.divisor;
    }
};

/* A pre-multiplied source, rounded to T before it is folded (a no-op where T is its own
 * fold type): the copy a peer receives is rounded, and a one-shot AllReduce folds its own
 * input on its own rank, so every rank must use the rounded value to get the same bits. */
template <typename T>
static __device__ __forceinline__ typename Num<T>::C pre_mul(typename Num<T>::C x,
                                                             const struct bt_redop &r)
{
    return Num<T>::load(Num<T>::store(Scale<typename Num<T>::C>::mul(x, r)));
}

/* The sources and destinations of one step, as the block sees them. */
#define MAX_SRCS (BT_PRIM_MAX_PEERS + 2)
#define MAX_DSTS (BT_PRIM_MAX_PEERS + 1)
struct StepIO {
    const char *src[MAX_SRCS];
    char *dst[MAX_DSTS];
    int nsrc, ndst;
    int pre;     /* index of the source to pre-multiply, or -1 */
    int post;    /* apply the final division */
    int cg_mask; /* sources that are receive slots: read through L2 only */
    size_t nelem;
};

template <typename T> static __device__ __forceinline__ T ld_elem(const char *p, bool cg)
{
    T v;
    if (cg && sizeof(T) == 8) {
        unsigned long long x = __ldcg((const unsigned long long *)p);
        memcpy(&v, &x, 8);
    } else if (cg && sizeof(T) == 4) {
        unsigned int x = __ldcg((const unsigned int *)p);
        memcpy(&v, &x, 4);
    } else if (cg && sizeof(T) == 2) {
        unsigned short x = __ldcg((const unsigned short *)p);
        memcpy(&v, &x, 2);
    } else if (cg) {
        unsigned char x = (unsigned char)__ldcg((const char *)p);
        memcpy(&v, &x, 1);
    } else {
        memcpy(&v, p, sizeof(T));
    }
    return v;
}

/* One element i of the step: fold the sources, write every destination. */
template <typename T>
static __device__ __forceinline__ typename Num<T>::C elem_value(const StepIO &io, size_t off,
                                                                const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    C acc = Num<T>::load(ld_elem<T>(io.src[0] + off, io.cg_mask & 1));
    if (io.pre == 0)
        acc = pre_mul<T>(acc, r);
    for (int s = 1; s < io.nsrc; s++) {
        C x = Num<T>::load(ld_elem<T>(io.src[s] + off, (io.cg_mask >> s) & 1));
        if (io.pre == s)
            x = pre_mul<T>(x, r);
        acc = fold<C>(acc, x, r.op);
    }
    if (io.post)
        acc = Scale<C>::div(acc, r);
    return acc;
}

#define VEC 16 /* bytes per access */
#define UNROLL 4

union Pack {
    uint4 u;
    char b[VEC];
};

/* Source s's packs: UNROLL of them from `base` on (a thread's share of a round). */
static __device__ __forceinline__ void pack_load(uint4 (&v)[UNROLL], const StepIO &io, int s,
                                                 size_t base, size_t npacks)
{
    const bool cg = (io.cg_mask >> s) & 1;
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        size_t pk = base + (size_t)u * blockDim.x;
        if (pk < npacks) {
            const uint4 *p = (const uint4 *)(io.src[s] + pk * VEC);
            v[u] = cg ? __ldcg(p) : *p;
        }
    }
}

static __device__ __forceinline__ void copy_store(const uint4 (&v)[UNROLL], const StepIO &io,
                                                  size_t base, size_t npacks)
{
#pragma unroll
    for (int d = 0; d < MAX_DSTS; d++) {
        if (d >= io.ndst)
            break;
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            size_t pk = base + (size_t)u * blockDim.x;
            if (pk < npacks)
                *(uint4 *)(io.dst[d] + pk * VEC) = v[u];
        }
    }
}

/* A pure copy (one source, no arithmetic), double-buffered: a thread loads its next round
 * into the other set of registers before it stores the current one, so the next loads never
 * wait for this round's stores to read their registers. With one set (the loop below), the
 * scheduling ptxas chose made each round's loads wait for the previous round's stores in
 * some builds and not in others: a block copied 19.5 GB/s instead of 28 with the same
 * instructions (bench/results/gpu-1xh200-bisect-2026-12-01.md). */
static __device__ __forceinline__ void copy_packs(const StepIO &io, size_t npacks)
{
    const size_t stride = (size_t)blockDim.x * UNROLL;
    uint4 a[UNROLL], b[UNROLL];
    size_t base = (size_t)threadIdx.x;
    if (base < npacks)
        pack_load(a, io, 0, base, npacks);
    while (base < npacks) {
        if (base + stride < npacks)
            pack_load(b, io, 0, base + stride, npacks);
        copy_store(a, io, base, npacks);
        base += stride;
        if (base >= npacks)
            break;
        if (base + stride < npacks)
            pack_load(a, io, 0, base + stride, npacks);
        copy_store(b, io, base, npacks);
        base += stride;
    }
}

/* Two sources' packs folded (pre-multiplied where io.pre says, divided when io.post) and
 * stored to every destination. */
template <typename T>
static __device__ __forceinline__ void
fold2_store(const uint4 (&x)[UNROLL], const uint4 (&y)[UNROLL], const StepIO &io, size_t base,
            size_t npacks, const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    const int N = VEC / sizeof(T);
    uint4 o[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        Pack a, b, c;
        a.u = x[u];
        b.u = y[u];
#pragma unroll
        for (int e = 0; e < N; e++) {
            T t;
            memcpy(&t, a.b + e * sizeof(T), sizeof(T));
            C v = Num<T>::load(t);
            if (io.pre == 0)
                v = pre_mul<T>(v, r);
            memcpy(&t, b.b + e * sizeof(T), sizeof(T));
            C w = Num<T>::load(t);
            if (io.pre == 1)
                w = pre_mul<T>(w, r);
            v = fold<C>(v, w, r.op);
            if (io.post)
                v = Scale<C>::div(v, r);
            t = Num<T>::store(v);
            memcpy(c.b + e * sizeof(T), &t, sizeof(T));
        }
        o[u] = c.u;
    }
    copy_store(o, io, base, npacks);
}

/* The fold of two sources (a ring's reduce steps), double-buffered as copy_packs: the next
 * round's loads go out before this round's arithmetic and stores. */
template <typename T>
static __device__ __forceinline__ void fold2_packs(const StepIO &io, size_t npacks,
                                                   const struct bt_redop &r)
{
    const size_t stride = (size_t)blockDim.x * UNROLL;
    uint4 a0[UNROLL], a1[UNROLL], b0[UNROLL], b1[UNROLL];
    size_t base = (size_t)threadIdx.x;
    if (base < npacks) {
        pack_load(a0, io, 0, base, npacks);
        pack_load(a1, io, 1, base, npacks);
    }
    while (base < npacks) {
        if (base + stride < npacks) {
            pack_load(b0, io, 0, base + stride, npacks);
            pack_load(b1, io, 1, base + stride, npacks);
        }
        fold2_store<T>(a0, a1, io, base, npacks, r);
        base += stride;
        if (base >= npacks)
            break;
        if (base + stride < npacks) {
            pack_load(a0, io, 0, base + stride, npacks);
            pack_load(a1, io, 1, base + stride, npacks);
        }
        fold2_store<T>(b0, b1, io, base, npacks, r);
        base += stride;
    }
}

/* 16-byte packs [0, npacks) with a fold (pure copies: copy_packs): each thread takes UNROLL
 * packs at a time and issues every load of every source before the first use (loops over
 * sources and destinations run to their compile-time maximum with a guard, so the packs and
 * pointers stay in registers). */
template <typename T>
static __device__ void run_packs(const StepIO &io, size_t npacks, const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    const int N = VEC / sizeof(T);
    const size_t stride = (size_t)blockDim.x * UNROLL;
    if (io.nsrc == 1 && io.pre < 0 && !io.post) {
        copy_packs(io, npacks);
        return;
    }
    if (io.nsrc == 2) {
        fold2_packs<T>(io, npacks, r);
        return;
    }
    for (size_t base = (size_t)threadIdx.x; base < npacks; base += stride) {
        uint4 in[MAX_SRCS][UNROLL];
#pragma unroll
        for (int s = 0; s < MAX_SRCS; s++) {
            if (s >= io.nsrc)
                break;
            pack_load(in[s], io, s, base, npacks);
        }
        /* the results in registers of their own: the next round's loads into in[] then never
         * wait for this round's stores to read theirs (see copy_packs) */
        uint4 out[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
#pragma unroll
            for (int e = 0; e < N; e++) {
                T t;
                memcpy(&t, (const char *)&in[0][u] + e * sizeof(T), sizeof(T));
                C v = Num<T>::load(t);
                if (io.pre == 0)
                    v = pre_mul<T>(v, r);
#pragma unroll
                for (int s = 1; s < MAX_SRCS; s++) {
                    if (s >= io.nsrc)
                        break;
                    memcpy(&t, (const char *)&in[s][u] + e * sizeof(T), sizeof(T));
                    C x = Num<T>::load(t);
                    if (io.pre == s)
                        x = pre_mul<T>(x, r);
                    v = fold<C>(v, x, r.op);
                }
                if (io.post)
                    v = Scale<C>::div(v, r);
                t = Num<T>::store(v);
                memcpy((char *)&out[u] + e * sizeof(T), &t, sizeof(T));
            }
        }
        copy_store(out, io, base, npacks);
    }
}

template <typename T>
static __device__ void run_step_typed(const StepIO &io, const struct bt_redop &r)
{
    size_t es = sizeof(T);
    bool aligned = true;
    for (int s = 0; s < io.nsrc; s++)
        aligned &= ((uintptr_t)io.src[s] % VEC) == 0;
    for (int d = 0; d < io.ndst; d++)
        aligned &= ((uintptr_t)io.dst[d] % VEC) == 0;
    size_t done = 0;
    if (aligned) {
        size_t npacks = io.nelem * es / VEC;
        run_packs<T>(io, npacks, r);
        done = npacks * VEC / es;
    }
    for (size_t i = done + threadIdx.x; i < io.nelem; i += blockDim.x) {
        T t = Num<T>::store(elem_value<T>(io, i * es, r));
        for (int d = 0; d < io.ndst; d++)
            memcpy(io.dst[d] + i * es, &t, sizeof(T));
    }
}

/* One LL step: each thread takes lines (8 bytes of payload each), waits for each receive
 * line's flag, folds acc, the received values and src * pre in that order (the Simple
 * path's order), and writes the user's output and 16-byte lines to the send slots. A step
 * with no data still moves one line. Returns 0 or an enum bt_cuda_kerr. */
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

/* ---- the kernel ---------------------------------------------------------------------- */

static __device__ __forceinline__ uint64_t *tail_of(struct bt_conn *c)
{
    return (uint64_t *)&c->ctrl->tail;
}
static __device__ __forceinline__ uint64_t *head_of(struct bt_conn *c)
{
    return (uint64_t *)&c->ctrl->head;
}

/* What one launch carries: the header, then which block runs each work, then the works. W
 * is the capacity: small launches pass a small struct (parameters are copied per launch). */
template <int W> struct KArgs {
    struct bt_cuda_khdr h;
    uint16_t block[W];
    struct bt_work works[W];
};

/* Thread 0, before a step: the receive connectors' data (Simple: tail; LL lines carry their
 * own flags) and the send connectors' credit. Credit is cached in the device connector so
 * the peer's head, read across NVLink, is read only when the window looks full. */
static __device__ int step_wait(const struct bt_prim &p, bool ll, const struct bt_cuda_khdr &h,
                                int widx)
{
    uint64_t seen;
    int err = 0;
    for (int i = 0; i < p.nrecv && !ll && !err; i++)
        err = wait_ge(tail_of(p.recv[i]), p.recv[i]->step + 1, &seen, h, p.recv[i]->peer, widx, 0);
    for (int i = 0; i < p.nsend && !err; i++) {
        struct bt_conn *c = p.send[i];
        if (c->step < c->cached + BT_NSTEPS)
            continue;
        err = wait_ge(head_of(c), c->step + 1 - BT_NSTEPS, &seen, h, c->peer, widx, 1);
        if (!err) /* after an abort or a timeout `seen` is not a head */
            c->cached = seen;
    }
    return err;
}

/* Thread 0, after a step (behind a barrier, so every thread's data is written and every
 * read is done): publish Simple data with its size (the proxy sends that many bytes when
 * the FIFO is a network connector's) and tail, return the receive slots with head. */
static __device__ void step_post(const struct bt_prim &p, bool ll, size_t bytes)
{
    for (int i = 0; i < p.nsend && !ll; i++)
        ((volatile int32_t *)p.send[i]->ctrl->sizes)[p.send[i]->step % BT_NSTEPS] = (int32_t)bytes;
    if (!ll && p.nsend > 0) /* every thread's data (seen through the barrier) before tail */
        asm volatile("fence.acq_rel.sys;" ::: "memory");
    for (int i = 0; i < p.nsend; i++) {
        struct bt_conn *c = p.send[i];
        if (!ll)
            st_relaxed_sys(tail_of(c), c->step + 1);
        c->step++;
    }
    for (int i = 0; i < p.nrecv; i++) {
        struct bt_conn *c = p.recv[i];
        st_relaxed_sys(head_of(c), c->step + 1);
        c->step++;
    }
}

/* The Simple step's sources and destinations: acc, receive slots, src * pre -> dst and the
 * send slots. */
static __device__ void simple_io(const struct bt_prim &p, const struct bt_work *w, StepIO *io)
{
    io->nsrc = io->ndst = 0;
    io->pre = -1;
    io->cg_mask = 0;
    io->nelem = p.nelem;
    if (p.acc)
        io->src[io->nsrc++] = p.acc;
    for (int i = 0; i < p.nrecv; i++) {
        io->cg_mask |= 1 << io->nsrc;
        io->src[io->nsrc++] = bt_conn_slot(p.recv[i], BT_PROTO_SIMPLE, p.recv[i]->step);
    }
    if (p.src) {
        if (p.pre_src && w->redop.pre_mul)
            io->pre = io->nsrc;
        io->src[io->nsrc++] = p.src;
    }
    io->post = p.post && w->redop.post_div;
    if (p.dst)
        io->dst[io->ndst++] = p.dst;
    for (int i = 0; i < p.nsend; i++)
        io->dst[io->ndst++] = bt_conn_slot(p.send[i], BT_PROTO_SIMPLE, p.send[i]->step);
}

/* ---- one-shot AllReduce in one pass per chunk ------------------------------------------
 * Instead of the schedule's 2n - 1 steps (coll/direct.h): every thread takes lines, sends its
 * own (pre-multiplied) payload to every peer, then folds the n contributions in rank order
 * (its own at its rank), rounding to T after each fold as the step-by-step schedule does, so
 * the results are the same bits. Connector state is read once per work into shared memory.
 * Two line formats: LL (8 bytes of payload per 16-byte line) and LL128 (120 per 128). It runs
 * in a kernel of its own (bt_cuda_direct_kernel). */
#define DIRECT_LL_BATCH 8 /* lines a thread sends before it waits for the first */
/* LL128: line rounds a warp loads before it stores or checks the first (2 and 8 measured a
 * third slower on one H200, bench/results/gpu-1xh200-ll128-2026-12-01.md) */
#define DIRECT_LL128_BATCH 4
/* LL128: chunks a block sends ahead of the one it folds (up to BT_NSTEPS - 1). 0: each chunk
 * is sent, then received. On one H200 every chunk ahead cost 2.5-3 us at 256 KB a block (0:
 * 44 us, 1: 47, 2: 50); not yet measured over NVLink, where a chunk ahead could hide the
 * crossing. */
#define DIRECT_LL128_AHEAD 0

/* One 8-byte word of payload, element by element: fold, pre-multiply, final division. */
template <typename T>
static __device__ __forceinline__ uint64_t word_fold(uint64_t a, uint64_t b, int op)
{
    typedef typename Num<T>::C C;
    const int N = 8 / sizeof(T);
    T t[N], x[N];
    memcpy(t, &a, sizeof(t));
    memcpy(x, &b, sizeof(x));
    for (int e = 0; e < N; e++)
        t[e] = Num<T>::store(fold<C>(Num<T>::load(t[e]), Num<T>::load(x[e]), op));
    memcpy(&a, t, sizeof(t));
    return a;
}
/* The pre-multiplication (POST false) or the final division (POST true) of a word. */
template <typename T, bool POST>
static __device__ __forceinline__ uint64_t word_scale(uint64_t a, const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    const int N = 8 / sizeof(T);
    T t[N];
    memcpy(t, &a, sizeof(t));
    for (int e = 0; e < N; e++) {
        C x = Num<T>::load(t[e]);
        t[e] = Num<T>::store(POST ? Scale<C>::div(x, r) : Scale<C>::mul(x, r));
    }
    memcpy(&a, t, sizeof(t));
    return a;
}

/* Bytes of payload at offset o of an n-byte chunk, up to 8. */
static __device__ __forceinline__ int word_bytes(size_t n, size_t o)
{
    return n > o ? (int)bt_min_sz(8, n - o) : 0;
}

/* Thread r's connectors to and from peer r for one work of a one-shot block, read from
 * device memory once at the work's start and written back at its end: read at every chunk,
 * they were a chain of dependent loads (the connector's address, then its step, then the slot
 * geometry) ahead of each chunk. Only thread r touches entry r. */
struct DirectPeer {
    struct bt_conn *sc, *rc;
    char *sbuf, *rbuf;     /* the protocol's first slot, each way */
    size_t sslot, rslot;   /* bytes per slot */
    uint64_t sstep, rstep; /* next step to send, to receive */
    uint64_t cached;       /* the peer's head as last read (credit) */
};

/* Shared by the line formats: the connector state and the chunk's view in shared memory. */
struct DirectChunk {
    char *send[BT_CUDA_ONEPASS_MAX_RANKS], *recv[BT_CUDA_ONEPASS_MAX_RANKS];
    uint64_t sflag[BT_CUDA_ONEPASS_MAX_RANKS], rflag[BT_CUDA_ONEPASS_MAX_RANKS];
    DirectPeer peer[BT_CUDA_ONEPASS_MAX_RANKS];
};

static __device__ __forceinline__ bool direct_peer_thread(const struct bt_work *w)
{
    return (int)threadIdx.x < w->nranks && (int)threadIdx.x != w->rank;
}

/* At a work's start, thread r < n (r != me): its connectors' state for `proto`. */
static __device__ void direct_open(const struct bt_work *w, int proto, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    DirectPeer *p = &d->peer[threadIdx.x];
    p->sc = w->peer_send[threadIdx.x];
    p->rc = w->peer_recv[threadIdx.x];
    p->sbuf = p->sc->buf[proto];
    p->sslot = p->sc->sizes.slot_bytes[proto];
    p->sstep = p->sc->step;
    p->cached = p->sc->cached;
    p->rbuf = p->rc->buf[proto];
    p->rslot = p->rc->sizes.slot_bytes[proto];
    p->rstep = p->rc->step;
}

/* At a work's end, also an early one (an error): the steps back to the connectors. */
static __device__ void direct_close(const struct bt_work *w, const DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    const DirectPeer *p = &d->peer[threadIdx.x];
    p->sc->step = p->sstep;
    p->sc->cached = p->cached;
    p->rc->step = p->rstep;
}

/* Before sending a chunk, thread r < n (r != me): peer r's send slot and flag (step + 1),
 * after credit (the peer read step - NSTEPS). Returns 0 or an enum bt_cuda_kerr; the caller
 * barriers. */
static __device__ int direct_send_begin(const struct bt_work *w, const struct bt_cuda_khdr &h,
                                        int widx, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return 0;
    int r = threadIdx.x;
    DirectPeer *p = &d->peer[r];
    d->send[r] = p->sbuf + (size_t)(p->sstep % BT_NSTEPS) * p->sslot;
    d->sflag[r] = p->sstep + 1;
    if (p->sstep < p->cached + BT_NSTEPS)
        return 0;
    uint64_t seen;
    int err = wait_ge((const uint64_t *)&p->sc->ctrl->head, p->sstep + 1 - BT_NSTEPS, &seen, h, r,
                      widx, 1);
    if (!err) /* after an abort or a timeout `seen` is not a head: keep no credit from it */
        p->cached = seen;
    return err;
}

/* Before receiving a chunk, thread r < n (r != me): peer r's receive slot and flag. */
static __device__ void direct_recv_begin(const struct bt_work *w, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    int r = threadIdx.x;
    const DirectPeer *p = &d->peer[r];
    d->recv[r] = p->rbuf + (size_t)(p->rstep % BT_NSTEPS) * p->rslot;
    d->rflag[r] = p->rstep + 1;
}

/* After a chunk is sent (every thread's stores issued, behind a barrier): the next step. */
static __device__ void direct_send_end(const struct bt_work *w, DirectChunk *d)
{
    if (direct_peer_thread(w))
        d->peer[threadIdx.x].sstep++;
}

/* After a chunk is received (every thread is done reading its lines, behind a barrier):
 * return the slot, move the step. */
static __device__ void direct_recv_end(const struct bt_work *w, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    DirectPeer *p = &d->peer[threadIdx.x];
    st_relaxed_sys((uint64_t *)&p->rc->ctrl->head, p->rstep + 1);
    p->rstep++;
}

/* The chunk l of a work: where it starts (elements into the work's buffers) and its bytes. */
template <typename T>
static __device__ __forceinline__ void direct_chunk(const struct bt_work *w, uint64_t l,
                                                    size_t *off, size_t *nbytes)
{
    *off = w->chan_off + (size_t)l * w->chunk;
    *nbytes = bt_min_sz(w->chunk, w->chan_off + w->chan_count - *off) * sizeof(T);
}

template <typename T>
static __device__ __forceinline__ int
run_direct_ll(const struct bt_work *w, const struct bt_cuda_khdr &h, int widx, DirectChunk &d)
{
    const int n = w->nranks, me = w->rank;
    const uint64_t nloops = bt_ring_nloops(w);
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

/* LL128 lines (transport/conn.h): lane j = 0..7 of each 8-lane group of a warp holds bytes
 * [16 j, 16 j + 16) of one line, lane 7's second word being the flag; a warp moves 4 lines
 * per instruction, and its lanes stay converged (the line loops are warp-uniform). */
static __device__ __forceinline__ void ll128_store(char *line, int j, uint64_t v0, uint64_t v1)
{
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(line + 16 * j), "l"(v0), "l"(v1)
                 : "memory");
}

/* This lane's 16 bytes of a line as they are now (the caller checks the flag). */
static __device__ __forceinline__ void ll128_peek(const char *p, uint64_t *a, uint64_t *b)
{
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                 : "=l"(*a), "=l"(*b)
                 : "l"(p)
                 : "memory");
}

/* Warp-collective: read this lane's 16 bytes of `line` (when `valid`) until the flag lane of
 * every group of the warp sees `flag`: then the whole line it read with it is the sender's.
 * Returns 0 or an enum bt_cuda_kerr, the same in every lane. */
static __device__ __forceinline__ int ll128_load(const char *line, int j, bool valid, uint64_t flag,
                                                 uint64_t *v0, uint64_t *v1,
                                                 const struct bt_cuda_khdr &h, int peer, int widx)
{
    uint64_t start = 0, a = 0, b = 0;
    for (uint32_t spins = 1;; spins++) {
        if (valid)
            ll128_peek(line + 16 * j, &a, &b);
        if (!__any_sync(0xffffffffu, valid && j == 7 && b != flag)) {
            *v0 = a;
            *v1 = b;
            return 0;
        }
        if ((spins & 1023) == 0) {
            int err = (threadIdx.x & 31) == 0 ? stall_check(h, &start, peer, widx, 0) : 0;
            err = __shfl_sync(0xffffffffu, err, 0);
            if (err)
                return err;
        }
    }
}

/* One chunk of an LL128 one-shot as this block sees it. Lines are taken in rounds of 4 per
 * warp (one per 8-lane group); a batch is DIRECT_LL128_BATCH rounds. `nwhole` lines carry a
 * full payload; with `aligned` (the user's buffers 8-byte aligned) a batch of whole lines
 * moves words with plain 8-byte accesses, which the compiler issues back to back: the
 * byte-exact path (ld_bytes, st_bytes) branches around each access, and a batch on it waits
 * for its loads one by one (a third slower on H200). */
struct LL128Chunk {
    const char *src;
    char *dst;
    size_t nbytes, nlines, nrounds, nwhole;
    bool aligned;
};

template <typename T>
static __device__ __forceinline__ LL128Chunk ll128_chunk(const struct bt_work *w, uint64_t l)
{
    LL128Chunk c;
    size_t off;
    direct_chunk<T>(w, l, &off, &c.nbytes);
    c.nlines = c.nbytes ? bt_div_up(c.nbytes, BT_LL128_PAYLOAD) : 1;
    c.nrounds = bt_div_up(c.nlines, (size_t)(blockDim.x >> 5) * 4);
    c.nwhole = c.nbytes / BT_LL128_PAYLOAD;
    c.src = w->sendbuf + off * sizeof(T);
    c.dst = w->recvbuf + off * sizeof(T);
    c.aligned = (((uintptr_t)c.src | (uintptr_t)c.dst) & 7) == 0;
    return c;
}

/* Round q's line for this lane's group. */
static __device__ __forceinline__ size_t ll128_line(size_t q, int g)
{
    return (q * (size_t)(blockDim.x >> 5) + (size_t)(threadIdx.x >> 5)) * 4 + (size_t)g;
}

/* Whether the batch from round q0 on is whole lines of aligned buffers (block-uniform). */
static __device__ __forceinline__ bool ll128_batch_whole(const LL128Chunk &c, size_t q0)
{
    return c.aligned && (q0 + DIRECT_LL128_BATCH) * (size_t)(blockDim.x >> 5) * 4 <= c.nwhole;
}

/* This lane's 16 bytes of `line` of the user's input (8 in lane 7, the flag's lane),
 * pre-multiplied; WHOLE: a whole line of aligned buffers. */
template <typename T, bool WHOLE>
static __device__ __forceinline__ void ll128_own(const struct bt_work *w, const LL128Chunk &c,
                                                 size_t line, int j, uint64_t *a, uint64_t *b)
{
    size_t o = line * BT_LL128_PAYLOAD + 16 * j;
    if (WHOLE) {
        *a = *(const uint64_t *)(c.src + o);
        *b = j < 7 ? *(const uint64_t *)(c.src + o + 8) : 0;
    } else {
        *a = ld_bytes(c.src + o, word_bytes(c.nbytes, o));
        *b = j < 7 ? ld_bytes(c.src + o + 8, word_bytes(c.nbytes, o + 8)) : 0;
    }
    if (w->redop.pre_mul) {
        *a = word_scale<T, false>(*a, w->redop);
        *b = word_scale<T, false>(*b, w->redop);
    }
}

template <bool WHOLE>
static __device__ __forceinline__ void ll128_out(const LL128Chunk &c, size_t line, int j,
                                                 uint64_t a, uint64_t b)
{
    size_t o = line * BT_LL128_PAYLOAD + 16 * j;
    if (WHOLE) {
        *(uint64_t *)(c.dst + o) = a;
        if (j < 7)
            *(uint64_t *)(c.dst + o + 8) = b;
    } else {
        st_bytes(c.dst + o, a, word_bytes(c.nbytes, o));
        if (j < 7)
            st_bytes(c.dst + o + 8, b, word_bytes(c.nbytes, o + 8));
    }
}

/* A batch of a chunk's lines to every peer: all its loads, then its stores (which wait for
 * nothing). */
template <typename T, bool WHOLE>
static __device__ __forceinline__ void
ll128_send_batch(const struct bt_work *w, const DirectChunk &d, const LL128Chunk &c, size_t q0)
{
    const int n = w->nranks, me = w->rank, j = threadIdx.x & 7, g = (threadIdx.x & 31) >> 3;
    uint64_t a[DIRECT_LL128_BATCH], b[DIRECT_LL128_BATCH];
#pragma unroll
    for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
        size_t line = ll128_line(q0 + k, g);
        if (WHOLE || (q0 + k < c.nrounds && line < c.nlines))
            ll128_own<T, WHOLE>(w, c, line, j, &a[k], &b[k]);
    }
    for (int r = 0; r < n; r++) {
        if (r == me)
            continue;
#pragma unroll
        for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
            size_t line = ll128_line(q0 + k, g);
            if (WHOLE || (q0 + k < c.nrounds && line < c.nlines))
                ll128_store(d.send[r] + line * BT_LL128_LINE, j, a[k], j == 7 ? d.sflag[r] : b[k]);
        }
    }
}

/* A batch received: this rank's own words and a peer's lines loaded for the whole batch
 * before the first flag check (a line not there yet is waited for), the n contributions
 * folded in rank order. Returns 0 or an enum bt_cuda_kerr (the same in every lane). */
template <typename T, bool WHOLE>
static __device__ __forceinline__ int
ll128_recv_batch(const struct bt_work *w, const DirectChunk &d, const LL128Chunk &c, size_t q0,
                 const struct bt_cuda_khdr &h, int widx)
{
    const int n = w->nranks, me = w->rank, j = threadIdx.x & 7, g = (threadIdx.x & 31) >> 3;
    uint64_t own0[DIRECT_LL128_BATCH], own1[DIRECT_LL128_BATCH];
    uint64_t acc0[DIRECT_LL128_BATCH], acc1[DIRECT_LL128_BATCH];
    int err = 0;
#pragma unroll
    for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
        size_t line = ll128_line(q0 + k, g);
        own0[k] = own1[k] = 0;
        if (WHOLE || (q0 + k < c.nrounds && line < c.nlines))
            ll128_own<T, WHOLE>(w, c, line, j, &own0[k], &own1[k]);
    }
    for (int r = 0; r < n && !err; r++) {
        if (r == me) {
#pragma unroll
            for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
                acc0[k] = r == 0 ? own0[k] : word_fold<T>(acc0[k], own0[k], w->redop.op);
                acc1[k] = r == 0 ? own1[k] : word_fold<T>(acc1[k], own1[k], w->redop.op);
            }
            continue;
        }
        uint64_t v0[DIRECT_LL128_BATCH], v1[DIRECT_LL128_BATCH];
#pragma unroll
        for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
            size_t line = ll128_line(q0 + k, g);
            v0[k] = v1[k] = 0;
            if (WHOLE || (q0 + k < c.nrounds && line < c.nlines))
                ll128_peek(d.recv[r] + line * BT_LL128_LINE + 16 * j, &v0[k], &v1[k]);
        }
#pragma unroll
        for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
            if (err || (!WHOLE && q0 + k >= c.nrounds)) /* warp-uniform */
                break;
            size_t line = ll128_line(q0 + k, g);
            bool valid = WHOLE || line < c.nlines;
            if (__any_sync(0xffffffffu, valid && j == 7 && v1[k] != d.rflag[r]))
                err = ll128_load(d.recv[r] + line * BT_LL128_LINE, j, valid, d.rflag[r], &v0[k],
                                 &v1[k], h, r, widx);
            acc0[k] = r == 0 ? v0[k] : word_fold<T>(acc0[k], v0[k], w->redop.op);
            acc1[k] = r == 0 ? v1[k] : word_fold<T>(acc1[k], v1[k], w->redop.op);
        }
    }
    if (err)
        return err;
#pragma unroll
    for (int k = 0; k < DIRECT_LL128_BATCH; k++) {
        size_t line = ll128_line(q0 + k, g);
        if (!WHOLE && (q0 + k >= c.nrounds || line >= c.nlines))
            continue;
        if (w->redop.post_div) {
            acc0[k] = word_scale<T, true>(acc0[k], w->redop);
            acc1[k] = word_scale<T, true>(acc1[k], w->redop);
        }
        ll128_out<WHOLE>(c, line, j, acc0[k], acc1[k]);
    }
    return 0;
}

template <typename T>
static __device__ __forceinline__ void ll128_send_chunk(const struct bt_work *w,
                                                        const DirectChunk &d, uint64_t l)
{
    const LL128Chunk c = ll128_chunk<T>(w, l);
    for (size_t q0 = 0; q0 < c.nrounds; q0 += DIRECT_LL128_BATCH) {
        if (ll128_batch_whole(c, q0))
            ll128_send_batch<T, true>(w, d, c, q0);
        else
            ll128_send_batch<T, false>(w, d, c, q0);
    }
}

template <typename T>
static __device__ __forceinline__ int ll128_recv_chunk(const struct bt_work *w,
                                                       const DirectChunk &d, uint64_t l,
                                                       const struct bt_cuda_khdr &h, int widx)
{
    const LL128Chunk c = ll128_chunk<T>(w, l);
    int err = 0;
    for (size_t q0 = 0; q0 < c.nrounds && !err; q0 += DIRECT_LL128_BATCH)
        err = ll128_batch_whole(c, q0) ? ll128_recv_batch<T, true>(w, d, c, q0, h, widx)
                                       : ll128_recv_batch<T, false>(w, d, c, q0, h, widx);
    return err;
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
    const uint64_t nloops = bt_ring_nloops(w);
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

/* Sets the block's collective for reports; the work's barriers order it before they read. */
static __device__ __forceinline__ void set_current(const struct bt_work *w)
{
    if (threadIdx.x == 0) {
        cur_seq = w->seq;
        cur_count = w->count;
        cur_coll = w->coll;
    }
}

/* Whether this block runs work wi, and if so its own work in shared memory *ws: a copy,
 * made channel i's when the work stands for several (bt_work_channel; the block is then the
 * work's block + i). *idx: the work's number in reports (the channel's, as if each had its
 * own work). Every thread of the block takes the same branch. */
template <int W>
static __device__ bool block_work(const KArgs<W> &args, int wi, struct bt_work *ws, int *idx)
{
    uint32_t nchans = args.works[wi].nchans > 1 ? args.works[wi].nchans : 1;
    uint32_t i = blockIdx.x - args.block[wi];
    if (blockIdx.x < args.block[wi] || i >= nchans)
        return false;
    __syncthreads(); /* the block's previous work is done with *ws */
    const uint32_t *src = (const uint32_t *)&args.works[wi];
    for (int k = threadIdx.x; k < (int)(sizeof(*ws) / sizeof(uint32_t)); k += blockDim.x)
        ((uint32_t *)ws)[k] = src[k];
    __syncthreads();
    if (nchans > 1) {
        if (threadIdx.x == 0)
            bt_work_channel(ws, i);
        __syncthreads();
    }
    *idx = wi + (int)i;
    return true;
}

/* One kernel per dtype (and launch size): each gets the registers its own arithmetic
 * needs (the 16-element packs of 1-byte types need many more than float's 4). Every work
 * of a launch has T's dtype; send/recv works are byte copies (uint8). Works step through
 * their schedules (coll/algo.h); the one-pass one-shot AllReduce has its own kernel. */
template <typename T, int W>
__global__ void __launch_bounds__(BT_CUDA_THREADS, 1)
    bt_cuda_kernel(const __grid_constant__ KArgs<W> args)
{
    __shared__ struct bt_work ws;
    for (int wj = 0; wj < args.h.nworks; wj++) {
        int wi;
        if (!block_work(args, wj, &ws, &wi))
            continue;
        const struct bt_work *w = &ws;
        const bool ll = w->proto == BT_PROTO_LL;
        set_current(w);
        for (uint64_t k = 0; k < w->nsteps; k++) {
            struct bt_prim p;
            bt_algo_prim(w, k, &p);
            int err = threadIdx.x == 0 ? step_wait(p, ll, args.h, wi) : 0;
            if (__syncthreads_or(err))
                return;
            if (ll) {
                err = run_step_ll<T>(p, w, args.h, wi);
            } else {
                StepIO io;
                simple_io(p, w, &io);
                if (io.nsrc > 0 && io.ndst > 0 && io.nelem > 0)
                    run_step_typed<T>(io, w->redop);
            }
            if (__syncthreads_or(err))
                return;
            if (threadIdx.x == 0)
                step_post(p, ll, p.nelem * sizeof(T));
            /* the next step's barrier orders thread 0's step updates before the reads */
        }
    }
}

/* The one-pass one-shot AllReduce (LL and LL128 lines; launches whose works are all
 * bt_cuda_onepass). A kernel of its own: inside the general one, its batches raised the
 * whole kernel's register spills, the Simple ring's loops included, from 24/60 bytes to
 * 176/176 (ptxas, float), also as noinline calls. */
template <typename T, int W>
__global__ void __launch_bounds__(BT_CUDA_THREADS, 1)
    bt_cuda_direct_kernel(const __grid_constant__ KArgs<W> args)
{
    __shared__ DirectChunk d;
    __shared__ struct bt_work ws;
    for (int wj = 0; wj < args.h.nworks; wj++) {
        int wi;
        if (!block_work(args, wj, &ws, &wi))
            continue;
        const struct bt_work *w = &ws;
        set_current(w);
        direct_open(w, w->proto, &d);
        /* set_current before the credit waits' stall checks (threads r < n, r != rank) */
        __syncthreads();
        int err = w->proto == BT_PROTO_LL ? run_direct_ll<T>(w, args.h, wi, d)
                                          : run_direct_ll128<T>(w, args.h, wi, d);
        direct_close(w, &d);
        if (err)
            return;
    }
}

/* The full-size launch passes the host's struct as it is (same layout); a small one
 * copies its few works into a small struct. */
static_assert(sizeof(KArgs<BT_CUDA_MAX_WORKS>) == sizeof(struct bt_cuda_kargs),
              "KArgs<BT_CUDA_MAX_WORKS> must match struct bt_cuda_kargs");

/* A launch of n works passes them in the smallest size class that holds them: parameters
 * are copied at every launch (measured on H200: a launch carrying 128 works' 29 KB took
 * about 5 us longer than one carrying 4). A collective is one work whatever its channel
 * count (bt_work_channel); send/recv groups have a work per peer and part. */
template <typename T, int W>
static void launch_sized(const struct bt_cuda_kargs *a, int nblocks, cudaStream_t stream,
                         bool onepass)
{
    KArgs<W> k;
    int n = a->h.nworks;
    k.h = a->h;
    memcpy(k.block, a->block, sizeof(k.block[0]) * (size_t)n);
    memcpy(k.works, a->works, sizeof(k.works[0]) * (size_t)n);
    if constexpr (W <= BT_CUDA_ONEPASS_MAX_WORKS) {
        if (onepass) {
            bt_cuda_direct_kernel<T, W><<<nblocks, BT_CUDA_THREADS, 0, stream>>>(k);
            return;
        }
    }
    bt_cuda_kernel<T, W><<<nblocks, BT_CUDA_THREADS, 0, stream>>>(k);
}

template <typename T>
static int launch_typed(const struct bt_cuda_kargs *a, int nblocks, void *stream_v)
{
    cudaStream_t stream = (cudaStream_t)stream_v;
    int n = a->h.nworks;
    bool onepass = n > 0 && n <= BT_CUDA_ONEPASS_MAX_WORKS;
    for (int i = 0; i < n && onepass; i++)
        onepass = bt_cuda_onepass(&a->works[i]);
    if (n <= 4)
        launch_sized<T, 4>(a, nblocks, stream, onepass);
    else if (n <= 16)
        launch_sized<T, 16>(a, nblocks, stream, onepass);
    else if (n <= 32)
        launch_sized<T, 32>(a, nblocks, stream, onepass);
    else if (n <= 64)
        launch_sized<T, 64>(a, nblocks, stream, onepass);
    else /* the host's struct as it is (same layout) */
        bt_cuda_kernel<T, BT_CUDA_MAX_WORKS>
            <<<nblocks, BT_CUDA_THREADS, 0, stream>>>(*(const KArgs<BT_CUDA_MAX_WORKS> *)a);
    return (int)cudaGetLastError();
}

extern "C" int bt_cuda_kernel_launch(const struct bt_cuda_kargs *args, int nblocks, void *stream)
{
    switch (args->h.nworks > 0 ? args->works[0].redop.dtype : BT_UINT8) {
    case BT_INT8:
        return launch_typed<int8_t>(args, nblocks, stream);
    case BT_UINT8:
        return launch_typed<uint8_t>(args, nblocks, stream);
    case BT_INT32:
        return launch_typed<int32_t>(args, nblocks, stream);
    case BT_UINT32:
        return launch_typed<uint32_t>(args, nblocks, stream);
    case BT_INT64:
        return launch_typed<int64_t>(args, nblocks, stream);
    case BT_UINT64:
        return launch_typed<uint64_t>(args, nblocks, stream);
    case BT_FLOAT16:
        return launch_typed<__half>(args, nblocks, stream);
    case BT_FLOAT32:
        return launch_typed<float>(args, nblocks, stream);
    case BT_FLOAT64:
        return launch_typed<double>(args, nblocks, stream);
    case BT_BFLOAT16:
        return launch_typed<__nv_bfloat16>(args, nblocks, stream);
    case BT_FP8E4M3:
        return launch_typed<fp8e4m3>(args, nblocks, stream);
    default:
        return launch_typed<fp8e5m2>(args, nblocks, stream);
    }
}
