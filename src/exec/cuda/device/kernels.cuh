/*
 * The kernels and their launch, as templates over the element type: KArgs<W> (what a launch
 * carries), block_work (which works this block runs), bt_cuda_kernel (the schedules' steps)
 * and bt_cuda_direct_kernel (the one-pass one-shot AllReduce), one of each per dtype and
 * launch size class, and launch_typed (the size class for a launch). A kernel unit
 * (kernel_*.cu) includes this header and instantiates its dtypes with BT_CUDA_KERNEL_DTYPE;
 * kernel.cu's bt_cuda_kernel_launch calls the launcher of the works' dtype (kernel.h).
 * Several units, so that the build compiles dtypes in parallel: a 1-byte type's kernels cost
 * as much to compile as four or six of the wider types' (their packs hold 16 elements).
 * Compiled as relocatable device code (BT_CUDA_RDC: src/CMakeLists.txt), the general
 * kernel's entries (one per size class) call one noinline body per dtype, kernel_body, which
 * ptxas then builds once instead of once per entry, the build's largest saving; whole-program,
 * each entry inlines it, reading its own parameters, as before. The one-pass one-shot's
 * entries keep their body inline either way: it is the small-message path, and small.
 */
#ifndef BT_EXEC_CUDA_DEVICE_KERNELS_CUH
#define BT_EXEC_CUDA_DEVICE_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "coll/algo.h"
#include "exec/cuda/device/arith.cuh"
#include "exec/cuda/device/direct.cuh"
#include "exec/cuda/device/ll.cuh"
#include "exec/cuda/device/launch.cuh"
#include "exec/cuda/device/ll128.cuh"
#include "exec/cuda/device/simple.cuh"
#include "exec/cuda/device/sync.cuh"
#include "exec/cuda/kargs.h"
#include "exec/cuda/kernel.h"

/* What one launch carries: the header, then which block runs each work, then the works. W
 * is the capacity: small launches pass a small struct (parameters are copied per launch). */
template <int W> struct KArgs {
    struct bt_cuda_khdr h;
    uint16_t block[W];
    struct bt_work works[W];
};

/* A launch's parameters whatever its size class: where the header, block map and works lie
 * in the entry's parameters (generic addresses of a __grid_constant__ struct). */
struct KView {
    const struct bt_cuda_khdr &h;
    const uint16_t *block;
    const struct bt_work *works;
};

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
template <typename A>
static __device__ bool block_work(const A &args, int wi, struct bt_work *ws, int *idx)
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

/* The body of one kernel per dtype: each gets the registers its own arithmetic needs (the
 * 16-element packs of 1-byte types need many more than float's 4). Every work of a launch
 * has T's dtype; send/recv works are byte copies (uint8). Works step through their schedules
 * (coll/algo.h); the one-pass one-shot AllReduce has its own kernel. A: KView (relocatable:
 * one body for every size class, called once per launch) or the entry's own KArgs<W>.
 * ONLY: the protocol of every work (KERNEL_ANY: any mix), so that the kernel holds that
 * protocol's step alone and its registers serve it alone:
 * - BT_PROTO_SIMPLE (a collective's large sizes): no LL or LL128 code. With LL128's step in the
 *   same kernel (a noinline call), ptxas spilled more in the whole kernel (float, W=4: 628
 *   bytes of spill loads against 388 before 31d9d7f) and the Simple ring ran 5-8% slower at
 *   4-64 MB (bench/results/gpu-1xh100-sweep32-bisect-2026-12-05.md).
 * - BT_PROTO_LL128: its step inline. As the general kernel's noinline call the call's
 *   convention costs it registers (ptxas, float: 900 bytes of spill stores in run_step_ll128,
 *   44 in this entry), and the LL128 ring ran 1.10-1.30x slower at 16-64 MB on one H100
 *   (bench/results/ll128-entry-1xh100-2026-12-06.md).
 * - BT_PROTO_LL (a collective's small sizes on rings and trees): the LL step alone. In the
 *   general kernel, beside the inline Simple step and the LL128 call, ptxas gave the float
 *   kernel 706 bytes of spill stores and 1348 of loads, and the LL ring AllGather ran 3-5%
 *   slower than at 3452d54 (566 / 852) on one H100.
 * - KERNEL_ANY (uint8's launches: send/recv groups mix protocols): LL and LL128 steps as
 *   noinline calls, the Simple step inline. */
#define KERNEL_ANY (-1)
#ifdef BT_CUDA_RDC
#define BT_KERNEL_BODY __noinline__
#else
#define BT_KERNEL_BODY __forceinline__
#endif
template <typename T, typename A, int ONLY>
static __device__ BT_KERNEL_BODY void kernel_body(A args)
{
    __shared__ struct bt_work ws;
#ifdef BATON_LL128_PROFILE
    long long t_wait = 0, t_run = 0, t_sync = 0, t_all = clock64(), t0 = 0;
    if (threadIdx.x == 0)
        prof_spin = prof_batches = prof_waits = 0;
    bool prof = false;
    uint64_t nst = 0;
#endif
    for (int wj = 0; wj < args.h.nworks; wj++) {
        int wi;
        if (!block_work(args, wj, &ws, &wi))
            continue;
        const struct bt_work *w = &ws;
        if (w->algo == BT_ALGO_TREE_DOWN && w->chan->tree.up < 0)
            continue; /* this rank is the channel's root: its steps are all empty */
        /* LL and LL128 lines carry their own flags: credit and head only */
        const bool lines = ONLY != BT_PROTO_SIMPLE && w->proto != BT_PROTO_SIMPLE;
        set_current(w);
#ifdef BATON_LL128_PROFILE
        prof = prof || (blockIdx.x == 0 && w->count * w->esize >= (16u << 20));
        nst += w->nsteps;
#endif
        for (uint64_t k = 0; k < w->nsteps; k++) {
            struct bt_prim p;
            bt_algo_prim(w, k, &p);
#ifdef BATON_LL128_PROFILE
            t0 = clock64();
#endif
            int err = threadIdx.x == 0 ? step_wait(p, lines, args.h, wi) : 0;
            if (__syncthreads_or(err))
                return;
#ifdef BATON_LL128_PROFILE
            t_wait += clock64() - t0;
            t0 = clock64();
#endif
            if (ONLY == BT_PROTO_LL128) {
                err = ll128_step<T>(p, w, args.h, wi);
            } else if (ONLY == BT_PROTO_LL || (ONLY == KERNEL_ANY && w->proto == BT_PROTO_LL)) {
                err = run_step_ll<T>(p, w, args.h, wi);
            } else if (ONLY == KERNEL_ANY && w->proto == BT_PROTO_LL128) {
                err = run_step_ll128<T>(p, w, args.h, wi);
            } else {
                StepIO io;
                simple_io(p, w, &io);
                if (io.nsrc > 0 && io.ndst > 0 && io.nelem > 0)
                    run_step_typed<T>(io, w->redop);
            }
#ifdef BATON_LL128_PROFILE
            t_run += clock64() - t0;
            t0 = clock64();
#endif
            if (__syncthreads_or(err))
                return;
            if (threadIdx.x == 0)
                step_post(p, lines, p.nelem * sizeof(T));
#ifdef BATON_LL128_PROFILE
            t_sync += clock64() - t0;
#endif
            /* the next step's barrier orders thread 0's step updates before the reads */
        }
    }
#ifdef BATON_LL128_PROFILE
    if (prof && threadIdx.x == 0)
        printf("prof rank %d: kcycles all %lld, steps %llu: wait %lld run %lld sync %lld; "
               "batches %llu, waits %llu, spin %llu\n",
               args.h.rank, (clock64() - t_all) / 1000, (unsigned long long)nst, t_wait / 1000,
               t_run / 1000, t_sync / 1000, prof_batches, prof_waits, prof_spin / 1000);
#endif
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
    order_wait();
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

/* dtype T's general kernel for launches of up to W works; ONLY (kernel_body): the protocol
 * of every work, BT_PROTO_SIMPLE (a collective's large sizes) or BT_PROTO_LL128, each
 * instantiated at the smallest size class only (launch_typed): one more entry per dtype each,
 * and a smaller one */
template <typename T, int W, int ONLY = KERNEL_ANY>
__global__ void __launch_bounds__(BT_CUDA_THREADS, 1)
    bt_cuda_kernel(const __grid_constant__ KArgs<W> args)
{
    order_wait();
#ifdef BT_CUDA_RDC
    kernel_body<T, KView, ONLY>(KView{args.h, args.block, args.works});
#else
    kernel_body<T, const KArgs<W> &, ONLY>(args);
#endif
}

/* The full-size launch passes the host's struct as it is (same layout); a small one
 * copies its few works into a small struct. */
static_assert(sizeof(KArgs<BT_CUDA_MAX_WORKS>) == sizeof(struct bt_cuda_kargs),
              "KArgs<BT_CUDA_MAX_WORKS> must match struct bt_cuda_kargs");

/* A launch of n works passes them in the smallest size class that holds them: parameters
 * are copied at every launch (measured on H200: a launch carrying 128 works' 29 KB took
 * about 5 us longer than one carrying 4; below 8 KB, on one H100, inside a launch's spread). A
 * collective is one work whatever its channel count (bt_work_channel), two for a tree; send/recv
 * groups have a work per peer and part. */
template <int W> static KArgs<W> kargs_sized(const struct bt_cuda_kargs *a)
{
    KArgs<W> k;
    int n = a->h.nworks;
    k.h = a->h;
    memcpy(k.block, a->block, sizeof(k.block[0]) * (size_t)n);
    memcpy(k.works, a->works, sizeof(k.works[0]) * (size_t)n);
    return k;
}

/* uint8 is the send/recv works' type (byte copies, cuda_exec.c), the one whose launches carry
 * many works (a work per peer and part) and mix protocols; only it has the larger size
 * classes, 4, 32 and 128 works, and the general entry (KERNEL_ANY). A collective's launch is
 * one work (two for a tree, of one protocol): every other dtype has the 2-work class alone
 * (552 bytes of parameters against 4 works' 1032), which halves what their units cost to
 * build (each class is an entry whole-program ptxas compiles the body into again), in one
 * entry per protocol. The one-pass one-shot AllReduce is one work: its kernel has the 1-work
 * class alone (312 bytes). */
template <typename T>
static int launch_typed(const struct bt_cuda_kargs *a, int nblocks, void *stream_v,
                        void *done_event)
{
    constexpr bool p2p = std::is_same<T, uint8_t>::value;
    constexpr int CW = p2p ? 4 : 2; /* the smallest class: a collective's launch */
    cudaStream_t stream = (cudaStream_t)stream_v;
    int n = a->h.nworks;
    if (n == 1 && bt_cuda_onepass(&a->works[0])) {
        bt_launch(bt_cuda_direct_kernel<T, 1>, nblocks, stream, done_event, kargs_sized<1>(a));
        return (int)cudaGetLastError();
    }
    int only = a->works[0].proto; /* the works' one protocol, else KERNEL_ANY */
    for (int i = 1; i < n && only != KERNEL_ANY; i++)
        if (a->works[i].proto != only)
            only = KERNEL_ANY;
    if (n <= CW) {
        if (only == BT_PROTO_SIMPLE)
            bt_launch(bt_cuda_kernel<T, CW, BT_PROTO_SIMPLE>, nblocks, stream, done_event,
                      kargs_sized<CW>(a));
        else if (only == BT_PROTO_LL128)
            bt_launch(bt_cuda_kernel<T, CW, BT_PROTO_LL128>, nblocks, stream, done_event,
                      kargs_sized<CW>(a));
        else if constexpr (p2p) /* LL, or protocols mixed (send/recv groups) */
            bt_launch(bt_cuda_kernel<T, CW>, nblocks, stream, done_event, kargs_sized<CW>(a));
        else if (only == BT_PROTO_LL)
            bt_launch(bt_cuda_kernel<T, CW, BT_PROTO_LL>, nblocks, stream, done_event,
                      kargs_sized<CW>(a));
        else
            return (int)cudaErrorInvalidValue; /* only send/recv launches (uint8) mix them */
    } else if constexpr (p2p) {
        /* two more size classes: 5 classes cost a clean build 2 minutes more; one with 5-32
         * works passes ~7 KB */
        if (n <= 32)
            bt_launch(bt_cuda_kernel<T, 32>, nblocks, stream, done_event, kargs_sized<32>(a));
        else /* the host's struct as it is (same layout) */
            bt_launch(bt_cuda_kernel<T, BT_CUDA_MAX_WORKS>, nblocks, stream, done_event,
                      *(const KArgs<BT_CUDA_MAX_WORKS> *)a);
    } else {
        return (int)cudaErrorInvalidValue; /* not a launch this dtype's works make */
    }
    return (int)cudaGetLastError();
}

/* Defines bt_cuda_kernel_launch_NAME (kernel.h), the launcher of dtype T's kernels: the one
 * instantiation of T's kernels, in the unit that expands it. */
#define BT_CUDA_KERNEL_DTYPE(NAME, T)                                                              \
    int bt_cuda_kernel_launch_##NAME(const struct bt_cuda_kargs *args, int nblocks, void *stream,  \
                                     void *done_event)                                             \
    {                                                                                              \
        return launch_typed<T>(args, nblocks, stream, done_event);                                 \
    }

#endif
