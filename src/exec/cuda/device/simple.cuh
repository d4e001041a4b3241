/*
 * The Simple protocol's step: thread 0 waits for the receive connectors' tail and the send
 * connectors' credit (step_wait), the block folds its sources into its destinations 16 bytes
 * per access (StepIO, the packs, run_step_typed), and thread 0 publishes the sizes and tail
 * and returns the read slots (step_post). step_wait and step_post serve LL steps too (credit
 * and head only: LL lines carry their own flags).
 *
 * Receive slots are read with ld.global.cg (L2, not L1): the same slot comes back every
 * NSTEPS steps with new data written by another GPU, which L1 would not see.
 */
#ifndef BT_EXEC_CUDA_DEVICE_SIMPLE_CUH
#define BT_EXEC_CUDA_DEVICE_SIMPLE_CUH

#include <stdint.h>

#include "coll/work.h"
#include "exec/cuda/device/arith.cuh"
#include "exec/cuda/device/sync.cuh"
#include "transport/conn.h"

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

/* The fold of three or more sources (a tree's steps: its children's slots, the rank's own
 * data, the accumulator), or of one with arithmetic (pre-multiply, division), 16-byte packs: each
 * thread takes UNROLL packs at a time and issues every load of every source before the first use
 * (loops over sources and destinations run to their compile-time maximum with a guard, so the packs
 * and pointers stay in registers). A call, not inline: its MAX_SRCS x UNROLL packs (64 registers
 * for the loads alone) inside the kernel made ptxas spill across the whole Simple entry, the rings'
 * copy and two-source loops included (bytes of spill stores / loads, sm_90: float 528 / 632, half
 * 916 / 1440, uint8 500 / 1396); as a call those entries spill 16 / 20, 196 / 248 and 56 / 76, and
 * this function 264-400 / 272-1216, paid by steps of three or more sources alone. On one H100 the
 * Simple rings then ran 1.04-1.10x faster at 8-64 MB (the 2-rank AllGather at 8-16 MB from
 * 0.95-0.97 of 3452d54 to 1.02-1.03). Inline with one pack a source instead, the Simple entry
 * kept 204 / 264 and its rings only half the gain: the 2-rank AllGather stayed at 0.95
 * (bench/results/simple-spills-1xh100-2026-12-06.md). The call also changed how NVVM compiled
 * the unit's LL128 and one-shot entries, which never run this (the LL128 ring 4-9% slower at 8
 * ranks); ll128.cuh now keeps their code from depending on the rest of the unit (the general
 * LL128 step's op, the one-shot's loop over peers: ll128-opaque-op-1xh100-2026-12-06.md). */
template <typename T>
static __device__ __noinline__ void fold_many_packs(const StepIO &io, size_t npacks,
                                                    const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    const int N = VEC / sizeof(T);
    const size_t stride = (size_t)blockDim.x * UNROLL;
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

/* 16-byte packs [0, npacks): a pure copy (one source, no arithmetic), the fold of two
 * sources (a ring's reduce steps), or the rest (fold_many_packs: a tree's steps, a lone
 * source with arithmetic). */
template <typename T>
static __device__ void run_packs(const StepIO &io, size_t npacks, const struct bt_redop &r)
{
    if (io.nsrc == 1 && io.pre < 0 && !io.post)
        copy_packs(io, npacks);
    else if (io.nsrc == 2)
        fold2_packs<T>(io, npacks, r);
    else
        fold_many_packs<T>(io, npacks, r);
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

static __device__ __forceinline__ uint64_t *tail_of(struct bt_conn *c)
{
    return (uint64_t *)&c->ctrl->tail;
}
static __device__ __forceinline__ uint64_t *head_of(struct bt_conn *c)
{
    return (uint64_t *)&c->ctrl->head;
}

/* Thread 0, before a step: the receive connectors' data (Simple: tail; LL and LL128 lines
 * carry their own flags) and the send connectors' credit. Credit is cached in the device connector
 * so the peer's head, read across NVLink, is read only when the window looks full. */
static __device__ int step_wait(const struct bt_prim &p, bool lines, const struct bt_cuda_khdr &h,
                                int widx)
{
    uint64_t seen;
    int err = 0;
    for (int i = 0; i < p.nrecv && !lines && !err; i++)
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
static __device__ void step_post(const struct bt_prim &p, bool lines, size_t bytes)
{
    for (int i = 0; i < p.nsend && !lines; i++)
        ((volatile int32_t *)p.send[i]->ctrl->sizes)[p.send[i]->step % BT_NSTEPS] = (int32_t)bytes;
    if (!lines && p.nsend > 0) /* every thread's data (seen through the barrier) before tail */
        asm volatile("fence.acq_rel.sys;" ::: "memory");
    for (int i = 0; i < p.nsend; i++) {
        struct bt_conn *c = p.send[i];
        if (!lines)
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

#endif
