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

/* Spin until *p >= v. Returns 0, or an enum bt_cuda_kerr after abort or timeout (also
 * recorded in the host-mapped error word). caller: thread 0 of the block. */
static __device__ int wait_ge(const uint64_t *p, uint64_t v, const struct bt_cuda_kargs &a,
                              int peer, int widx, int is_send)
{
    uint64_t start = 0;
    for (uint32_t spins = 1; ld_acquire_sys(p) < v; spins++) {
        if ((spins & 1023) != 0)
            continue;
        int err = BT_CUDA_KERR_NONE;
        if (a.abort_flag && *a.abort_flag)
            err = BT_CUDA_KERR_ABORT;
        uint64_t now = globaltimer_ns();
        if (start == 0)
            start = now;
        else if (a.timeout_ns && now - start > a.timeout_ns)
            err = BT_CUDA_KERR_TIMEOUT;
        if (err) {
            /* Plain stores: atomics on host memory need PCIe AtomicOps, which not every
             * platform has. Blocks failing together may mix their details; the code is
             * what matters and every writer writes a non-zero one. */
            volatile int *e = a.error, *info = a.error_info;
            if (*e == BT_CUDA_KERR_NONE) {
                info[0] = peer;
                info[1] = widx;
                info[2] = is_send;
                __threadfence_system();
                *e = err;
            }
            return err;
        }
    }
    return 0;
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
        acc = Scale<C>::mul(acc, r);
    for (int s = 1; s < io.nsrc; s++) {
        C x = Num<T>::load(ld_elem<T>(io.src[s] + off, (io.cg_mask >> s) & 1));
        if (io.pre == s)
            x = Scale<C>::mul(x, r);
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

/* 16-byte packs [0, npacks): each thread takes UNROLL packs at a time and issues every
 * load of every source before the first use (loops over sources and destinations run to
 * their compile-time maximum with a guard, so the packs and pointers stay in registers). */
template <typename T>
static __device__ void run_packs(const StepIO &io, size_t npacks, const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    const int N = VEC / sizeof(T);
    const size_t stride = (size_t)blockDim.x * UNROLL;
    const bool copy = io.nsrc == 1 && io.pre < 0 && !io.post;
    for (size_t base = (size_t)threadIdx.x; base < npacks; base += stride) {
        Pack in[MAX_SRCS][UNROLL];
#pragma unroll
        for (int s = 0; s < MAX_SRCS; s++) {
            if (s >= io.nsrc)
                break;
            const bool cg = (io.cg_mask >> s) & 1;
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                size_t pk = base + (size_t)u * blockDim.x;
                if (pk < npacks) {
                    const uint4 *p = (const uint4 *)(io.src[s] + pk * VEC);
                    in[s][u].u = cg ? __ldcg(p) : *p;
                }
            }
        }
        if (!copy) {
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
#pragma unroll
                for (int e = 0; e < N; e++) {
                    T t;
                    memcpy(&t, in[0][u].b + e * sizeof(T), sizeof(T));
                    C v = Num<T>::load(t);
                    if (io.pre == 0)
                        v = Scale<C>::mul(v, r);
#pragma unroll
                    for (int s = 1; s < MAX_SRCS; s++) {
                        if (s >= io.nsrc)
                            break;
                        memcpy(&t, in[s][u].b + e * sizeof(T), sizeof(T));
                        C x = Num<T>::load(t);
                        if (io.pre == s)
                            x = Scale<C>::mul(x, r);
                        v = fold<C>(v, x, r.op);
                    }
                    if (io.post)
                        v = Scale<C>::div(v, r);
                    t = Num<T>::store(v);
                    memcpy(in[0][u].b + e * sizeof(T), &t, sizeof(T));
                }
            }
        }
#pragma unroll
        for (int d = 0; d < MAX_DSTS; d++) {
            if (d >= io.ndst)
                break;
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                size_t pk = base + (size_t)u * blockDim.x;
                if (pk < npacks)
                    *(uint4 *)(io.dst[d] + pk * VEC) = in[0][u].u;
            }
        }
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

/* ---- the kernel ---------------------------------------------------------------------- */

static __device__ __forceinline__ uint64_t *tail_of(struct bt_conn *c)
{
    return (uint64_t *)&c->ctrl->tail;
}
static __device__ __forceinline__ uint64_t *head_of(struct bt_conn *c)
{
    return (uint64_t *)&c->ctrl->head;
}

/* One kernel per dtype: each gets the registers its own arithmetic needs (the 16-element
 * packs of 1-byte types need many more than float's 4). Every work of a launch has T's
 * dtype; send/recv works are byte copies (uint8). */
template <typename T>
__global__ void __launch_bounds__(BT_CUDA_THREADS, 1)
    bt_cuda_kernel(const __grid_constant__ struct bt_cuda_kargs args)
{
    __shared__ int s_err;
    if (threadIdx.x == 0)
        s_err = 0;
    for (int wi = 0; wi < args.nworks; wi++) {
        if (args.block[wi] != blockIdx.x)
            continue;
        const struct bt_work *w = &args.works[wi];
        for (uint64_t k = 0; k < w->nsteps; k++) {
            struct bt_prim p;
            bt_algo_prim(w, k, &p);
            if (threadIdx.x == 0) {
                int err = 0;
                for (int i = 0; i < p.nrecv && !err; i++)
                    err = wait_ge(tail_of(p.recv[i]), p.recv[i]->step + 1, args, p.recv[i]->peer,
                                  wi, 0);
                for (int i = 0; i < p.nsend && !err; i++) {
                    uint64_t s = p.send[i]->step;
                    if (s >= BT_NSTEPS)
                        err = wait_ge(head_of(p.send[i]), s + 1 - BT_NSTEPS, args, p.send[i]->peer,
                                      wi, 1);
                }
                s_err = err;
            }
            __syncthreads();
            if (s_err)
                return;

            StepIO io;
            io.nsrc = io.ndst = 0;
            io.pre = -1;
            io.cg_mask = 0;
            io.nelem = p.nelem;
            if (p.acc)
                io.src[io.nsrc++] = p.acc;
            for (int i = 0; i < p.nrecv; i++) {
                io.cg_mask |= 1 << io.nsrc;
                io.src[io.nsrc++] = bt_conn_slot(p.recv[i], BT_PROTO_SIMPLE, p.recv[i]->step);
            }
            if (p.src) {
                if (p.pre_src && w->redop.pre_mul)
                    io.pre = io.nsrc;
                io.src[io.nsrc++] = p.src;
            }
            io.post = p.post && w->redop.post_div;
            if (p.dst)
                io.dst[io.ndst++] = p.dst;
            for (int i = 0; i < p.nsend; i++)
                io.dst[io.ndst++] = bt_conn_slot(p.send[i], BT_PROTO_SIMPLE, p.send[i]->step);
            if (io.nsrc > 0 && io.ndst > 0 && io.nelem > 0)
                run_step_typed<T>(io, w->redop);
            __syncthreads();

            if (threadIdx.x == 0) {
                /* every thread's data (seen through the barrier) before any flag */
                asm volatile("fence.acq_rel.sys;" ::: "memory");
                for (int i = 0; i < p.nsend; i++) {
                    struct bt_conn *c = p.send[i];
                    st_relaxed_sys(tail_of(c), c->step + 1);
                    c->step++;
                }
                for (int i = 0; i < p.nrecv; i++) {
                    struct bt_conn *c = p.recv[i];
                    st_relaxed_sys(head_of(c), c->step + 1);
                    c->step++;
                }
            }
            /* the next step's barrier orders thread 0's step updates before the reads */
        }
    }
}

template <typename T>
static int launch_typed(const struct bt_cuda_kargs *args, int nblocks, void *stream)
{
    bt_cuda_kernel<T><<<nblocks, BT_CUDA_THREADS, 0, (cudaStream_t)stream>>>(*args);
    return (int)cudaGetLastError();
}

extern "C" int bt_cuda_kernel_launch(const struct bt_cuda_kargs *args, int nblocks, void *stream)
{
    switch (args->nworks > 0 ? args->works[0].redop.dtype : BT_UINT8) {
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
