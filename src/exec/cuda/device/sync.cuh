/*
 * Waiting and reporting: the flag loads and stores with their memory orders, the GPU's clock,
 * the block's "current collective" kept for reports, the stall check every wait runs, and
 * wait_ge, the spin on a connector's counter. Every wait watches the communicator's abort flag
 * (host-mapped) and a deadline (TIMEOUT): a dead peer or ncclCommAbort ends the kernel with an
 * error, never a hang. Included by every kernel unit: everything here has internal linkage
 * (static), so each unit has its own copy and nothing is defined twice at link time.
 */
#ifndef BT_EXEC_CUDA_DEVICE_SYNC_CUH
#define BT_EXEC_CUDA_DEVICE_SYNC_CUH

#include <stdint.h>

#include "exec/cuda/kargs.h"

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

static __device__ void report_where(volatile struct bt_exec_where *at, int peer, int widx,
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

/* A wait timed out: every rank's kernels stop at their next stall check (kargs.h), this
 * rank's other blocks too (a block that was not resident yet would wait TIMEOUT again). */
static __device__ void tell_peers_failed(const struct bt_cuda_khdr &h)
{
    for (int r = 0; h.fail_words && r < h.nranks; r++)
        if (h.fail_words[r])
            *(volatile uint32_t *)h.fail_words[r] = (uint32_t)h.rank + 1;
}

/* Called every 1024 polls of a wait: the abort flag, a peer's failure, the hang report and
 * the deadline (`start` is the first check's time). Returns 0, or an enum bt_exec_err, also
 * recorded in the host-mapped report with where the wait stalled (for a peer's failure: that
 * peer). */
static __device__ __noinline__ int stall_check(const struct bt_cuda_khdr &h, uint64_t *start,
                                               int peer, int widx, int is_send)
{
    int err = BT_EXEC_ERR_NONE;
    if (h.abort_flag && *h.abort_flag)
        err = BT_EXEC_ERR_ABORT;
    uint32_t failed = h.failed ? *h.failed : 0;
    if (failed && !err) {
        err = BT_EXEC_ERR_PEER;
        peer = (int)failed - 1;
    }
    uint64_t now = globaltimer_ns();
    volatile struct bt_exec_report *r = h.report;
    if (*start == 0) {
        *start = now;
    } else {
        uint64_t waited = now - (*start & ~STALL_REPORTED);
        if (h.timeout_ns && waited > h.timeout_ns && !err)
            err = BT_EXEC_ERR_TIMEOUT; /* the peers are told below, after the report */
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
        if (r->error == BT_EXEC_ERR_NONE) {
            report_where(&r->error_at, peer, widx, is_send);
            __threadfence_system();
            r->error = err;
        }
        /* Only now: this rank's own word is among those told, and another block of this
         * kernel that read it before the report said TIMEOUT would record the rank itself
         * as the peer that failed. */
        if (err == BT_EXEC_ERR_TIMEOUT) {
            __threadfence_system();
            tell_peers_failed(h);
        }
    }
    return err;
}

/* Warp-collective, in a warp's wait loop at poll `spins` (the same in every lane): every 1024th
 * poll lane 0 runs the stall check for the warp. Returns 0 or an enum bt_exec_err, the same
 * in every lane. */
static __device__ __forceinline__ int
warp_stall_check(const struct bt_cuda_khdr &h, uint64_t *start, uint32_t spins, int peer, int widx)
{
    if ((spins & 1023) != 0)
        return 0;
    int err = (threadIdx.x & 31) == 0 ? stall_check(h, start, peer, widx, 0) : 0;
    return __shfl_sync(0xffffffffu, err, 0);
}

/* Spin until *p >= v; *seen gets the value that satisfied it. Returns 0 or an enum
 * bt_exec_err (abort, timeout). caller: thread 0 of the block. */
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

#endif
