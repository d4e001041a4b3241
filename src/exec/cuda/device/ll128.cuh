/*
 * LL128 lines: the warp-wide line stores and loads; one LL128 step of a schedule (rings,
 * two-shot and one-shot beyond the one-pass kernel's ranks: ll128_step, inline in the
 * LL128-only kernel entry, run_step_ll128 as the general kernel's noinline call);
 * and for the one-pass one-shot AllReduce (direct.cuh runs it) a chunk's lines in batches of
 * rounds, sent to every peer and received and folded in rank order.
 */
#ifndef BT_EXEC_CUDA_DEVICE_LL128_CUH
#define BT_EXEC_CUDA_DEVICE_LL128_CUH

#include <stdint.h>

#include "coll/work.h"
#include "exec/cuda/device/arith.cuh"
#include "exec/cuda/device/direct_conn.cuh"
#include "exec/cuda/device/ll.cuh"
#include "exec/cuda/device/sync.cuh"
#include "transport/conn.h"

/* LL128: line rounds a warp loads before it stores or checks the first (2 and 8 measured a
 * third slower on one H200, bench/results/gpu-1xh200-ll128-2026-12-01.md) */
#define DIRECT_LL128_BATCH 4

/* LL128_FIFO_SCOPE_GPU (a lab build's -D): FIFO lines stored and peeked at GPU scope
 * (relaxed) instead of volatile (system scope), which holds only while every rank of the
 * ring shares one GPU: what the scope costs there (docs/TUNING.md, LL128 rings) */
#ifdef LL128_FIFO_SCOPE_GPU
#define LL128_FIFO_ST "st.relaxed.gpu"
#define LL128_FIFO_LD "ld.relaxed.gpu"
#else
#define LL128_FIFO_ST "st.volatile"
#define LL128_FIFO_LD "ld.volatile"
#endif

/* LL128 lines (transport/conn.h): lane j = 0..7 of each 8-lane group of a warp holds bytes
 * [16 j, 16 j + 16) of one line, one lane's second word being the flag (lane 7's in the
 * one-shot; in a step's lines lane 7's or lane 0's: ll128_step_off); a warp moves 4 lines per
 * instruction, and its lanes stay converged (the line loops are warp-uniform). */
static __device__ __forceinline__ void ll128_store(char *line, int j, uint64_t v0, uint64_t v1)
{
    asm volatile(LL128_FIFO_ST ".global.v2.u64 [%0], {%1, %2};" ::"l"(line + 16 * j), "l"(v0),
                 "l"(v1)
                 : "memory");
}

/* This lane's 16 bytes of a line as they are now (the caller checks the flag). */
static __device__ __forceinline__ void ll128_peek(const char *p, uint64_t *a, uint64_t *b)
{
    asm volatile(LL128_FIFO_LD ".global.v2.u64 {%0, %1}, [%2];"
                 : "=l"(*a), "=l"(*b)
                 : "l"(p)
                 : "memory");
}

/* Warp-collective: read this lane's 16 bytes of `line` (when `valid`) until the flag lane of
 * every group of the warp (`fl`: this lane is its group's) sees `flag`: then the whole line it
 * read with it is the sender's. Returns 0 or an enum bt_exec_err, the same in every lane. */
static __device__ __forceinline__ int ll128_load(const char *line, int j, bool fl, bool valid,
                                                 uint64_t flag, uint64_t *v0, uint64_t *v1,
                                                 const struct bt_cuda_khdr &h, int peer, int widx)
{
    uint64_t start = 0, a = 0, b = 0;
    for (uint32_t spins = 1;; spins++) {
        if (valid)
            ll128_peek(line + 16 * j, &a, &b);
        if (!__any_sync(0xffffffffu, valid && fl && b != flag)) {
            *v0 = a;
            *v1 = b;
            return 0;
        }
        if (int err = warp_stall_check(h, &start, spins, peer, widx))
            return err;
    }
}

/* One chunk of an LL128 one-shot as this block sees it. Lines are taken in rounds of 4 per
 * warp (one per 8-lane group); a batch is DIRECT_LL128_BATCH rounds. `nwhole` lines carry a
 * full payload; with `aligned` (the user's buffers 8-byte aligned) a batch of whole lines
 * takes ll128_user_load's plain path. */
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

/* This lane's two words of a line's payload in the user's memory, base + o (o: the lane's
 * offset in an n-byte region): bytes past n read as 0; the flag's lane (fl) carries one word,
 * its second is the flag's place (0, never read). MODE 0: byte-exact (ld_bytes, st_bytes,
 * which branch around each access: a batch on it waits for its loads one by one, a third
 * slower in the one-shot on H200); 8: every byte there and base + o 8-byte aligned, two plain
 * 8-byte accesses. (A step's whole lines move 16-byte units: ll128_unit_load.) */
template <int MODE>
static __device__ __forceinline__ void ll128_user_load(const char *base, size_t o, size_t n,
                                                       bool fl, uint64_t *a, uint64_t *b)
{
    if (MODE != 0) {
        *a = *(const uint64_t *)(base + o);
        *b = fl ? 0 : *(const uint64_t *)(base + o + 8);
    } else {
        *a = ld_bytes(base + o, word_bytes(n, o));
        *b = fl ? 0 : ld_bytes(base + o + 8, word_bytes(n, o + 8));
    }
}

template <int MODE>
static __device__ __forceinline__ void ll128_user_store(char *base, size_t o, size_t n, bool fl,
                                                        uint64_t a, uint64_t b)
{
    if (MODE != 0) {
        *(uint64_t *)(base + o) = a;
        if (!fl)
            *(uint64_t *)(base + o + 8) = b;
    } else {
        st_bytes(base + o, a, word_bytes(n, o));
        if (!fl)
            st_bytes(base + o + 8, b, word_bytes(n, o + 8));
    }
}

/*
 * A step's lines (run_step_ll128 writes them and reads them; the one-pass one-shot keeps lane
 * 7 as every line's flag lane). A line carries 120 bytes of the user's buffer from 120 x line:
 * for an even line that offset is a multiple of 16, and lane j carries bytes 16 j .. 16 j + 15
 * of the payload, lane 7 the last 8 and the flag; for an odd line it is 8 past one, so lane 0
 * carries the first 8 bytes and the flag and lane j >= 1 bytes 16 j - 8 .. 16 j + 7. Either
 * way every lane but the flag's moves one aligned 16-byte unit of the user's buffer.
 */
static __device__ __forceinline__ bool ll128_step_flag_lane(size_t line, int j)
{
    return j == ((line & 1) ? 0 : 7);
}

static __device__ __forceinline__ size_t ll128_step_off(size_t line, int j)
{
    return line * BT_LL128_PAYLOAD + ((line & 1) ? (j ? 16 * j - 8 : 0) : 16 * j);
}

/* A whole line's payload in the user's buffer, as a step's lane moves it: every lane loads
 * the aligned 16-byte unit that holds its bytes, the flag's lane too (the same instruction in
 * all 8 lanes, no divergent 8-byte access): on an even line it keeps the unit's low word (the
 * high one is the next line's first 8 bytes), on an odd line the high word (the low one is the
 * line before's last 8). Both neighbours are lines of the same round (an even line is a
 * round's first or third), so the unit lies within whole lines. `ua`: the lane's offset
 * rounded down to 16; `hi`: it keeps the high word (the flag's lane of an odd line). */
static __device__ __forceinline__ void ll128_unit_load(const char *base, size_t ua, bool hi,
                                                       bool fl, uint64_t *a, uint64_t *b)
{
    const ulonglong2 v = *(const ulonglong2 *)(base + ua);
    *a = hi ? v.y : v.x;
    *b = fl ? 0 : v.y;
}

/* The store of a whole line's lane: 16 bytes, or the flag's lane's 8, as one predicated
 * instruction each (no branch around them: the 8 lanes of a line stay one path). */
static __device__ __forceinline__ void ll128_unit_store(char *p, bool fl, uint64_t a, uint64_t b)
{
    asm volatile("{\n\t.reg .pred f;\n\tsetp.ne.u32 f, %3, 0;\n\t"
                 "@f st.u64 [%0], %1;\n\t@!f st.v2.u64 [%0], {%1, %2};\n\t}" ::"l"(p),
                 "l"(a), "l"(b), "r"((unsigned)fl)
                 : "memory");
}

/* LL128 steps: line rounds a warp loads before it checks the first flag (a wait per batch,
 * not per round); a build may set it (-DSTEP_LL128_BATCH=8: the lab's measurements) */
#ifndef STEP_LL128_BATCH
#define STEP_LL128_BATCH 4
#endif
/* ... for a step that only forwards lines (one receive or none, nothing folded: AllGather's,
 * Broadcast's, AllReduce's gather half) */
#ifndef STEP_LL128_COPY_BATCH
#define STEP_LL128_COPY_BATCH STEP_LL128_BATCH
#endif

/* Lab builds that leave a stage of the LL128 step out, to time what it costs (the results are
 * wrong; tests/gpu/lab/ll128_stages.sh): LL128_LAB_NOWAIT takes the lines as first peeked
 * (no flag checks, no waiting), LL128_LAB_NOPEEK (with NOWAIT) does not read them at all,
 * LL128_LAB_NOSEND (with NOWAIT: a receiver would wait forever) stores no send lines. */
#if (defined(LL128_LAB_NOPEEK) || defined(LL128_LAB_NOSEND)) && !defined(LL128_LAB_NOWAIT)
#error "LL128_LAB_NOPEEK and LL128_LAB_NOSEND need LL128_LAB_NOWAIT"
#endif

#ifdef BATON_LL128_PROFILE
/* A measuring build's counters (thread 0 of each block): cycles its warp waited for lines
 * that were not there at the first look, and the batches it ran (kernels.cuh prints them). */
static __shared__ unsigned long long prof_spin, prof_batches, prof_waits;
#endif

/* This lane's place in a step's lines, fixed for the step: a round adds nwarps x 4 lines, an
 * even number, so the lane's line keeps its parity and its flag role, and its offsets in the
 * user's buffers and in a slot grow by the same amounts every round (no per-line index
 * arithmetic in the batches). 32-bit: a step's lines are one slot's (4 MB at most), and
 * registers are what the step runs short of (ptxas). */
struct LL128Lane {
    uint32_t line0; /* the lane's line in round 0 */
    uint32_t nl;    /* lines a round: nwarps x 4 */
    uint32_t ua0;   /* its 16-byte unit's offset in the user's buffers in round 0 */
    uint32_t sub;   /* its bytes' offset in that unit (ll128_step_off - ua0: 0, or 8) */
    uint32_t loff0; /* its line's offset in a slot in round 0 */
    bool fl;        /* the lane carries its line's flag */
    bool hi;        /* ... of an odd line: its word is its 16-byte unit's high one */
};

static __device__ __forceinline__ LL128Lane ll128_lane()
{
    const int j = threadIdx.x & 7;
    LL128Lane ln;
    ln.line0 = (uint32_t)ll128_line(0, (threadIdx.x & 31) >> 3);
    ln.nl = (blockDim.x >> 5) * 4;
    const uint32_t uo = (uint32_t)ll128_step_off(ln.line0, j);
    ln.ua0 = uo & ~15u;
    ln.sub = uo - ln.ua0;
    ln.loff0 = ln.line0 * BT_LL128_LINE;
    ln.fl = ll128_step_flag_lane(ln.line0, j);
    ln.hi = ln.fl && (ln.line0 & 1);
    return ln;
}

/* This lane's words of a batch's round in the user's buffer `base` (ua: its unit's offset):
 * whole lines as 16-byte units, others byte-exact. */
template <bool WHOLE>
static __device__ __forceinline__ void ll128_lane_load(const char *base, const LL128Lane &ln,
                                                       uint32_t ua, size_t nbytes, uint64_t *a,
                                                       uint64_t *b)
{
    if (WHOLE)
        ll128_unit_load(base, ua, ln.hi, ln.fl, a, b);
    else
        ll128_user_load<0>(base, ua + ln.sub, nbytes, ln.fl, a, b);
}

template <bool WHOLE>
static __device__ __forceinline__ void ll128_lane_store(char *base, const LL128Lane &ln,
                                                        uint32_t ua, size_t nbytes, uint64_t a,
                                                        uint64_t b)
{
    if (WHOLE)
        ll128_unit_store(base + ua + ln.sub, ln.fl, a, b);
    else
        ll128_user_store<0>(base, ua + ln.sub, nbytes, ln.fl, a, b);
}

/* Warp-collective, a batch's slow path: some flag lane saw a line of the batch (lines at
 * `slot` + k x lstep, valid ones) not yet there; peek every line that is not, again, until a
 * pass finds them all (each line re-read by all its lanes at once: the flag seen with the
 * line's words). One loop for the batch, not one a line: the fast path's code stays small.
 * Returns 0 or an enum bt_exec_err (warp-uniform). */
template <int B, bool WHOLE>
static __device__ __forceinline__ int
ll128_wait_batch(const char *slot, uint32_t lstep, const LL128Lane &ln, uint32_t line,
                 uint32_t nlines, uint64_t flag, uint64_t (&v0)[B], uint64_t (&v1)[B],
                 const struct bt_cuda_khdr &h, int peer, int widx)
{
    const int j = threadIdx.x & 7;
    uint64_t start = 0;
    for (uint32_t spins = 1;; spins++) {
        bool again = false;
#pragma unroll
        for (int k = 0; k < B; k++) {
            const bool valid = WHOLE || line + k * ln.nl < nlines;
            if (__any_sync(0xffffffffu, valid && ln.fl && v1[k] != flag)) {
                again = true;
                if (valid)
                    ll128_peek(slot + k * lstep + 16 * j, &v0[k], &v1[k]);
            }
        }
        if (!again)
            return 0;
        if (int err = warp_stall_check(h, &start, spins, peer, widx))
            return err;
    }
}

/* A batch's lines from receive connector c (its rounds at slot offset lo, line `line` on),
 * folded into x0/x1 (taken as they are when !have): every line peeked before the first flag
 * check, one vote for the batch (ll128_wait_batch when a line is not there yet). Returns 0
 * or an enum bt_exec_err (warp-uniform). */
template <typename T, int OP, bool WHOLE, int B>
static __device__ __forceinline__ int
ll128_step_recv(const struct bt_conn *c, const LL128Lane &ln, uint32_t lo, uint32_t line,
                uint32_t nlines, int op, bool have, uint64_t (&x0)[B], uint64_t (&x1)[B],
                const struct bt_cuda_khdr &h, int widx)
{
    const int j = threadIdx.x & 7;
    const uint32_t lstep = ln.nl * BT_LL128_LINE;
    const char *slot = bt_conn_slot(c, BT_PROTO_LL128, c->step) + lo;
    const uint64_t flag = c->step + 1;
    uint64_t v0[B], v1[B];
#pragma unroll
    for (int k = 0; k < B; k++) {
        v0[k] = v1[k] = flag;
#ifndef LL128_LAB_NOPEEK
        if (WHOLE || line + k * ln.nl < nlines)
            ll128_peek(slot + k * lstep + 16 * j, &v0[k], &v1[k]);
#endif
    }
    bool late = false;
#pragma unroll
    for (int k = 0; k < B; k++)
        late |= (WHOLE || line + k * ln.nl < nlines) && ln.fl && v1[k] != flag;
#ifdef LL128_LAB_NOWAIT
    late = false;
#endif
    if (__any_sync(0xffffffffu, late)) {
#ifdef BATON_LL128_PROFILE
        long long t0 = clock64();
#endif
        int err = ll128_wait_batch<B, WHOLE>(slot, lstep, ln, line, nlines, flag, v0, v1, h,
                                             c->peer, widx);
#ifdef BATON_LL128_PROFILE
        if (threadIdx.x == 0) {
            prof_spin += (unsigned long long)(clock64() - t0);
            prof_waits++;
        }
#endif
        if (err)
            return err;
    }
#pragma unroll
    for (int k = 0; k < B; k++) {
        if (ln.fl)
            v1[k] = 0; /* the flag, not payload */
        x0[k] = have ? word_fold<T>(x0[k], v0[k], op) : v0[k];
        x1[k] = have ? word_fold<T>(x1[k], v1[k], op) : v1[k];
    }
    return 0;
}

/* A batch of an LL128 step (rounds q0 .. q0 + B - 1 of this warp): acc and
 * src * pre are loaded first, so that they are on their way while the receive lines are
 * waited for; every receive line of the batch is peeked before the first flag check, and one
 * vote says whether they are all there (else ll128_wait_batch). Folds acc, the received lines
 * and src in that order (the Simple and LL steps' order), writes the user's output and the
 * send lines. OP: the op when the caller knows it (its fold compiled in), else -1. WHOLE:
 * the batch's lines are all whole, of 16-byte aligned buffers. Returns 0 or an enum
 * bt_exec_err (warp-uniform). */
template <typename T, int OP, bool WHOLE, int B>
static __device__ __forceinline__ int
ll128_step_batch(const struct bt_prim &p, const struct bt_work *w, const struct bt_cuda_khdr &h,
                 int widx, const LL128Lane &ln, uint32_t q0, uint32_t nbytes, uint32_t nlines)
{
    const int j = threadIdx.x & 7;
    int op = OP >= 0 ? OP : w->redop.op; /* a constant: the fold's switch folds away */
    /* Else the op is hidden from the optimizer, batch by batch, so that it cannot unswitch
     * the step's loop on it. Whether NVVM did depended on the rest of the unit: with the
     * Simple step's many-source fold a call (0f8dd32), it made copies of the loop per op,
     * and ptxas spilled more in the whole LL128 entry (float: 44 / 112 bytes of spill stores
     * / loads, against 20 / 80), the LL128 ring 4-9% slower at 8 ranks, 1-8 MB, on one H100
     * (bench/results/simple-spills-1xh100-2026-12-06.md). Hidden, the float, double and
     * 64-bit integer LL128 entries compile to 5b873ae's code in any unit, float's alone too. */
    if (OP < 0)
        asm volatile("" : "+r"(op));
    const bool pre = p.src && p.pre_src && w->redop.pre_mul;
    const bool post = p.post && w->redop.post_div;
    const bool fl = ln.fl;
    /* round q0's line, user unit offset and slot offset; each round adds nl lines */
    const uint32_t ustep = ln.nl * BT_LL128_PAYLOAD, lstep = ln.nl * BT_LL128_LINE;
    const uint32_t line = ln.line0 + q0 * ln.nl, ua = ln.ua0 + q0 * ustep;
    const uint32_t lo = ln.loff0 + q0 * lstep;
    uint64_t x0[B], x1[B], s0[B], s1[B];
#pragma unroll
    for (int k = 0; k < B; k++) {
        x0[k] = x1[k] = s0[k] = s1[k] = 0;
        if (p.acc)
            ll128_lane_load<WHOLE>(p.acc, ln, ua + k * ustep, nbytes, &x0[k], &x1[k]);
        if (p.src)
            ll128_lane_load<WHOLE>(p.src, ln, ua + k * ustep, nbytes, &s0[k], &s1[k]);
    }
    /* the first receive apart from the others (a ring step has one): no copies of the
     * batch's words carried around a loop; `have` folds to a constant in each */
    bool have = p.acc != NULL;
    if (p.nrecv > 0) {
        int err = ll128_step_recv<T, OP, WHOLE, B>(p.recv[0], ln, lo, line, nlines, op, have, x0,
                                                   x1, h, widx);
        if (err)
            return err;
        have = true;
        for (int i = 1; i < p.nrecv; i++) {
            err = ll128_step_recv<T, OP, WHOLE, B>(p.recv[i], ln, lo, line, nlines, op, true, x0,
                                                   x1, h, widx);
            if (err)
                return err;
        }
    }
#pragma unroll
    for (int k = 0; k < B; k++) {
        if (p.src) {
            if (pre) {
                s0[k] = word_scale<T, false>(s0[k], w->redop);
                s1[k] = word_scale<T, false>(s1[k], w->redop);
            }
            x0[k] = have ? word_fold<T>(x0[k], s0[k], op) : s0[k];
            x1[k] = have ? word_fold<T>(x1[k], s1[k], op) : s1[k];
        }
        if (post) {
            x0[k] = word_scale<T, true>(x0[k], w->redop);
            x1[k] = word_scale<T, true>(x1[k], w->redop);
        }
        if (p.dst && (WHOLE || line + k * ln.nl < nlines))
            ll128_lane_store<WHOLE>(p.dst, ln, ua + k * ustep, nbytes, x0[k], x1[k]);
    }
#ifndef LL128_LAB_NOSEND
    /* a send slot and flag read once a batch: each line store's asm clobbers memory, so
     * reading them per line loads the prim's and the connector's fields again every time */
    for (int i = 0; i < p.nsend; i++) {
        struct bt_conn *c = p.send[i];
        char *slot = bt_conn_slot(c, BT_PROTO_LL128, c->step) + lo;
        const uint64_t flag = c->step + 1;
#pragma unroll
        for (int k = 0; k < B; k++)
            if (WHOLE || line + k * ln.nl < nlines)
                ll128_store(slot + k * lstep, j, x0[k], fl ? flag : x1[k]);
    }
#endif
    return 0;
}

/* One LL128 step of a schedule, run_step_ll's with 128-byte lines: each 8-lane group of a warp
 * takes a line (120 bytes of payload) a round, in batches (ll128_step_batch); a batch whose
 * lines are all whole, of 16-byte aligned buffers, moves one 16-byte access a lane. A step with no
 * data still moves one line. Returns 0 or an enum bt_exec_err (warp-uniform). */
template <typename T, int OP, int B>
static __device__ __forceinline__ int ll128_step_lines(const struct bt_prim &p,
                                                       const struct bt_work *w,
                                                       const struct bt_cuda_khdr &h, int widx)
{
    const LL128Lane ln = ll128_lane();
    const uint32_t nbytes = (uint32_t)(p.nelem * sizeof(T)); /* a slot's: under 4 MB */
    const uint32_t nlines = nbytes ? bt_div_up(nbytes, BT_LL128_PAYLOAD) : 1;
    const uint32_t nwarps = blockDim.x >> 5, warp = threadIdx.x >> 5;
    const uint32_t nwhole = nbytes / BT_LL128_PAYLOAD;
    const bool aligned = (((uintptr_t)p.acc | (uintptr_t)p.src | (uintptr_t)p.dst) & 15) == 0;
    for (uint32_t q0 = 0; q0 * nwarps * 4 < nlines; q0 += B) { /* warp-uniform */
        /* this warp's last line of the batch: ((q0 + B - 1) * nwarps + warp) * 4 + 3 */
        const bool whole = aligned && ((q0 + B - 1) * nwarps + warp) * 4 + 4 <= nwhole;
        int err = whole ? ll128_step_batch<T, OP, true, B>(p, w, h, widx, ln, q0, nbytes, nlines)
                        : ll128_step_batch<T, OP, false, B>(p, w, h, widx, ln, q0, nbytes, nlines);
#ifdef BATON_LL128_PROFILE
        if (threadIdx.x == 0)
            prof_batches++;
#endif
        if (err)
            return err;
    }
    return 0;
}

/* Sum, nearly every reduction, with its fold compiled in (one FADD a word's element where the
 * general step loads the op and branches on it for each); the other ops and the copies
 * (whose steps fold nothing) share the general step. Inline in the LL128-only kernel
 * (kernels.cuh), a noinline call (run_step_ll128) in the kernel of any protocol. */
template <typename T>
static __device__ __forceinline__ int ll128_step(const struct bt_prim &p, const struct bt_work *w,
                                                 const struct bt_cuda_khdr &h, int widx)
{
#if STEP_LL128_COPY_BATCH != STEP_LL128_BATCH
    if (p.nrecv <= 1 && !p.acc && !p.src) /* a forward: no fold, registers for more lines */
        return ll128_step_lines<T, BT_OP_SUM, STEP_LL128_COPY_BATCH>(p, w, h, widx);
#endif
    return w->redop.op == BT_OP_SUM
               ? ll128_step_lines<T, BT_OP_SUM, STEP_LL128_BATCH>(p, w, h, widx)
               : ll128_step_lines<T, -1, STEP_LL128_BATCH>(p, w, h, widx);
}

template <typename T>
static __device__ __noinline__ int run_step_ll128(const struct bt_prim &p, const struct bt_work *w,
                                                  const struct bt_cuda_khdr &h, int widx)
{
    return ll128_step<T>(p, w, h, widx);
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
    ll128_user_load<WHOLE ? 8 : 0>(c.src, line * BT_LL128_PAYLOAD + 16 * j, c.nbytes, j == 7, a, b);
    if (w->redop.pre_mul) {
        *a = word_scale<T, false>(*a, w->redop);
        *b = word_scale<T, false>(*b, w->redop);
    }
}

template <bool WHOLE>
static __device__ __forceinline__ void ll128_out(const LL128Chunk &c, size_t line, int j,
                                                 uint64_t a, uint64_t b)
{
    ll128_user_store<WHOLE ? 8 : 0>(c.dst, line * BT_LL128_PAYLOAD + 16 * j, c.nbytes, j == 7, a,
                                    b);
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
 * folded in rank order. Returns 0 or an enum bt_exec_err (the same in every lane). */
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
    /* one peer an iteration (not unrolled): unrolled, ptxas spilled more in the one-shot's
     * entry, by how NVVM unrolled it in each unit (float 140 / 448 bytes of spill stores /
     * loads, against 100 / 260, half's and bfloat16's already) */
#pragma unroll 1
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
                err = ll128_load(d.recv[r] + line * BT_LL128_LINE, j, j == 7, valid, d.rflag[r],
                                 &v0[k], &v1[k], h, r, widx);
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

#endif
