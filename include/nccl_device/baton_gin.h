/*
 * Baton's device API: GIN, GPU-initiated networking (nccl_device.h). Baton serves GIN in
 * proxy mode only: a put is a 64-byte descriptor the kernel writes into the queue of the
 * target rank (ncclGinProxyGpuCtx_t, nccl_device/layout.h: a slot claimed on the producer
 * index, credit waited for on the consumer index, every qword flagged), which Baton's GIN
 * proxy carries over the network; signals and counters are words the proxy adds to. A
 * signal on a peer is seen after the bytes of the put it ends and of every earlier put of
 * the context to that peer; a counter here counts puts whose source may be reused; flush
 * waits until every put posted so far has left its source.
 * Also the GIN barrier of a team: each member signals every other, then waits until its own
 * signal has come up by the team's size - 1 since the last session.
 */
#ifndef NCCL_DEVICE_BATON_GIN_H_
#define NCCL_DEVICE_BATON_GIN_H_

#include "nccl_device/baton_core.h"

/* What a put does when it completes: on the peer (a signal), here (a counter). */
struct ncclGin_None {
};
struct ncclGin_SignalAdd {
    ncclGinSignal_t signal;
    uint64_t value;
};
/* SignalAdd of 1; between two resets a signal takes increments only, or none. */
struct ncclGin_SignalInc {
    ncclGinSignal_t signal;
};
struct ncclGin_CounterInc {
    ncclGinCounter_t counter;
};

enum class ncclGinFenceLevel { Relaxed };

#if defined(__CUDACC__)
#include <cuda/atomic>

namespace baton_gin
{

NCCL_DEVICE_INLINE uint32_t remote_op(ncclGin_None)
{
    return 0;
}
NCCL_DEVICE_INLINE uint32_t remote_op(ncclGin_SignalInc)
{
    return ncclGinProxyOpWithSignalInc;
}
NCCL_DEVICE_INLINE uint32_t remote_op(ncclGin_SignalAdd)
{
    return ncclGinProxyOpWithSignalAdd;
}
NCCL_DEVICE_INLINE uint32_t remote_signal(ncclGin_None)
{
    return 0;
}
NCCL_DEVICE_INLINE uint32_t remote_signal(ncclGin_SignalInc a)
{
    return a.signal;
}
NCCL_DEVICE_INLINE uint32_t remote_signal(ncclGin_SignalAdd a)
{
    return a.signal;
}
NCCL_DEVICE_INLINE uint64_t remote_value(ncclGin_None)
{
    return 0;
}
NCCL_DEVICE_INLINE uint64_t remote_value(ncclGin_SignalInc)
{
    return 1;
}
NCCL_DEVICE_INLINE uint64_t remote_value(ncclGin_SignalAdd a)
{
    return a.value;
}
NCCL_DEVICE_INLINE uint32_t local_op(ncclGin_None)
{
    return 0;
}
NCCL_DEVICE_INLINE uint32_t local_op(ncclGin_CounterInc)
{
    return ncclGinProxyOpWithCounter;
}
NCCL_DEVICE_INLINE uint32_t local_counter(ncclGin_None)
{
    return 0;
}
NCCL_DEVICE_INLINE uint32_t local_counter(ncclGin_CounterInc a)
{
    return a.counter;
}

/* One descriptor: the eight qwords (bit 0 of each: valid), as NCCL's proxy format lays
 * them out. */
struct Gfd {
    uint64_t q[ncclGinProxyGfdQwords];
};

NCCL_DEVICE_INLINE void build(Gfd &g, uint32_t op, uint64_t bytes, bool isInline,
                              uint64_t inlineVal, uint64_t srcOff, uint64_t srcHandle,
                              uint64_t dstOff, uint64_t dstHandle, uint32_t counter,
                              uint32_t signal, uint64_t signalVal)
{
    g.q[ncclGinProxyGfdHeader] = 1 | (uint64_t)(op & 0x3f) << 1 | bytes << 7;
    if (isInline) {
        g.q[ncclGinProxyGfdInlineLow] =
            1 | (inlineVal & 0xffffffffull) << 8 | ((inlineVal >> 32) & 0xffff) << 40;
        g.q[ncclGinProxyGfdInlineHigh] = 1 | ((inlineVal >> 48) & 0xffff) << 8;
    } else {
        g.q[ncclGinProxyGfdSrcOff] = 1 | srcOff << 1;
        g.q[ncclGinProxyGfdSrcHandle] = 1 | srcHandle << 1;
    }
    g.q[ncclGinProxyGfdDstOff] = 1 | dstOff << 1;
    g.q[ncclGinProxyGfdDstHandle] = 1 | dstHandle << 1;
    g.q[ncclGinProxyGfdCompletion] = 1 | (uint64_t)(counter & 0xffff) << 8 |
                                     (uint64_t)(signal & 0xffff) << 24 | (signalVal & 0xffff) << 40;
    g.q[ncclGinProxyGfdSignalVal] =
        1 | ((signalVal >> 16) & 0xffff) << 8 | ((signalVal >> 32) & 0xffffffffull) << 24;
    g.q[ncclGinProxyGfdReserved] = 1;
}

/* Claim a slot of world rank pe's queue, wait for its credit, write the descriptor
 * (write-through: the proxy reads host memory). */
NCCL_DEVICE_INLINE void post(ncclGinProxyGpuCtx_t *ctx, int pe, Gfd const &g)
{
    uint32_t qs = ctx->queueSize;
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system> pi(ctx->pis[pe]), ci(ctx->cis[pe]);
    uint32_t idx = pi.fetch_add(1, cuda::memory_order_relaxed);
    while (idx - ci.load(cuda::memory_order_relaxed) >= qs)
        ;
    ncclGinProxyGfd_t *slot = &ctx->queues[(size_t)pe * qs + (idx & (qs - 1))];
    for (int k = 0; k < ncclGinProxyGfdQwords; k += 2)
        __stwt((ulonglong2 *)&slot->qword[k], make_ulonglong2(g.q[k], g.q[k + 1]));
}

} // namespace baton_gin

template <typename Coop> struct ncclGinBarrierSession;

/* A GIN context of a device communicator (contextIndex modulo the contexts it has). */
struct ncclGin {
    ncclDevComm const &comm;
    uint32_t contextId;

    NCCL_DEVICE_INLINE ncclGin(ncclDevComm const &comm, int contextIndex)
        : comm(comm),
          contextId(comm.ginContextCount ? (uint32_t)contextIndex % comm.ginContextCount : 0)
    {
    }

    /* Put `bytes` at srcOffset of this rank's srcWnd into member `peer` of `team`'s dstWnd at
     * dstOffset; then the remote action on the peer, the local one here. */
    template <typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
              typename Coop = ncclCoopThread>
    NCCL_DEVICE_INLINE void put(ncclTeam team, int peer, ncclWindow_t dstWnd, size_t dstOffset,
                                ncclWindow_t srcWnd, size_t srcOffset, size_t bytes,
                                RemoteAction remote = ncclGin_None{},
                                LocalAction local = ncclGin_None{}, Coop coop = Coop{}) const
    {
        coop.sync();
        if (coop.thread_rank() == 0) {
            baton_gin::Gfd g;
            baton_gin::build(
                g, ncclGinProxyOpPut | baton_gin::remote_op(remote) | baton_gin::local_op(local),
                bytes, false, 0, win_offset(srcWnd, srcOffset), win_handle(srcWnd),
                win_offset(dstWnd, dstOffset), win_handle(dstWnd),
                comm.ginCounterBase + baton_gin::local_counter(local),
                comm.ginSignalBase + baton_gin::remote_signal(remote),
                baton_gin::remote_value(remote));
            send(ncclTeamRankToWorld(comm, team, peer), g);
        }
        coop.sync();
    }

    /* Put a value of up to 8 bytes (carried in the descriptor). */
    template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread>
    NCCL_DEVICE_INLINE void putValue(ncclTeam team, int peer, ncclWindow_t dstWnd, size_t dstOffset,
                                     T value, RemoteAction remote = ncclGin_None{},
                                     Coop coop = Coop{}) const
    {
        static_assert(sizeof(T) <= 8, "putValue carries at most 8 bytes");
        coop.sync();
        if (coop.thread_rank() == 0) {
            uint64_t v = 0;
            memcpy(&v, &value, sizeof(T));
            baton_gin::Gfd g;
            baton_gin::build(
                g, ncclGinProxyOpPut | ncclGinProxyOpWithInline | baton_gin::remote_op(remote),
                sizeof(T), true, v, 0, 0, win_offset(dstWnd, dstOffset), win_handle(dstWnd), 0,
                comm.ginSignalBase + baton_gin::remote_signal(remote),
                baton_gin::remote_value(remote));
            send(ncclTeamRankToWorld(comm, team, peer), g);
        }
        coop.sync();
    }

    /* The remote action alone. */
    template <typename RemoteAction, typename Coop = ncclCoopThread>
    NCCL_DEVICE_INLINE void signal(ncclTeam team, int peer, RemoteAction remote,
                                   Coop coop = Coop{}) const
    {
        coop.sync();
        if (coop.thread_rank() == 0) {
            baton_gin::Gfd g;
            baton_gin::build(g, ncclGinProxyOpPut | baton_gin::remote_op(remote), 0, false, 0, 0, 0,
                             0, 0, 0, comm.ginSignalBase + baton_gin::remote_signal(remote),
                             baton_gin::remote_value(remote));
            send(ncclTeamRankToWorld(comm, team, peer), g);
        }
        coop.sync();
    }

    /* Every put posted so far (by any thread of coop) has left its source. */
    template <typename Coop>
    NCCL_DEVICE_INLINE void flush(Coop coop,
                                  cuda::memory_order ord = cuda::memory_order_acquire) const
    {
        coop.sync();
        ncclGinProxyGpuCtx_t *c = ctx();
        for (int pe = coop.thread_rank(); pe < comm.nRanks; pe += coop.size()) {
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system> pi(c->pis[pe]), ci(c->cis[pe]);
            uint32_t p = pi.load(cuda::memory_order_relaxed);
            while (!ncclRollingLessEq(p, ci.load(ord), 32))
                ;
        }
        coop.sync();
    }

    NCCL_DEVICE_INLINE uint64_t
    readSignal(ncclGinSignal_t signal, int bits = 64,
               cuda::memory_order ord = cuda::memory_order_acquire) const
    {
        return read(signalPtr(signal), bits, ord);
    }
    template <typename Coop>
    NCCL_DEVICE_INLINE void waitSignal(Coop coop, ncclGinSignal_t signal, uint64_t least,
                                       int bits = 64,
                                       cuda::memory_order ord = cuda::memory_order_acquire) const
    {
        wait(coop, signalPtr(signal), least, bits, ord);
    }
    NCCL_DEVICE_INLINE void resetSignal(ncclGinSignal_t signal) const
    {
        reset(signalPtr(signal));
    }
    /* Counters keep 56 bits. */
    NCCL_DEVICE_INLINE uint64_t
    readCounter(ncclGinCounter_t counter, int bits = 56,
                cuda::memory_order ord = cuda::memory_order_acquire) const
    {
        return read(counterPtr(counter), bits, ord);
    }
    template <typename Coop>
    NCCL_DEVICE_INLINE void waitCounter(Coop coop, ncclGinCounter_t counter, uint64_t least,
                                        int bits = 56,
                                        cuda::memory_order ord = cuda::memory_order_acquire) const
    {
        wait(coop, counterPtr(counter), least, bits, ord);
    }
    NCCL_DEVICE_INLINE void resetCounter(ncclGinCounter_t counter) const
    {
        reset(counterPtr(counter));
    }

  private:
    NCCL_DEVICE_INLINE ncclGinProxyGpuCtx_t *ctx() const
    {
        return (ncclGinProxyGpuCtx_t *)comm.ginHandles[contextId];
    }
    NCCL_DEVICE_INLINE uint64_t win_handle(ncclWindow_t w) const
    {
        return (uint64_t)(uintptr_t)w->ginWins[contextId];
    }
    NCCL_DEVICE_INLINE uint64_t win_offset(ncclWindow_t w, size_t off) const
    {
        return 4096 * (uint64_t)w->ginOffset4K + off;
    }
    NCCL_DEVICE_INLINE uint64_t *signalPtr(ncclGinSignal_t s) const
    {
        return ctx()->signals + comm.ginSignalBase + s;
    }
    NCCL_DEVICE_INLINE uint64_t *counterPtr(ncclGinCounter_t c) const
    {
        return ctx()->counters + comm.ginCounterBase + c;
    }
    /* What this thread wrote before is visible to the proxy's copy, then the descriptor. */
    NCCL_DEVICE_INLINE void send(int pe, baton_gin::Gfd const &g) const
    {
        cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
        baton_gin::post(ctx(), pe, g);
    }
    NCCL_DEVICE_INLINE static void reset(uint64_t *p)
    {
        cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*p).store(0,
                                                                        cuda::memory_order_relaxed);
    }
    NCCL_DEVICE_INLINE static uint64_t read(uint64_t *p, int bits, cuda::memory_order ord)
    {
        uint64_t v = cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*p).load(ord);
        return bits >= 64 ? v : v & ((1ull << bits) - 1);
    }
    template <typename Coop>
    NCCL_DEVICE_INLINE static void wait(Coop coop, uint64_t *p, uint64_t least, int bits,
                                        cuda::memory_order ord)
    {
        coop.sync();
        if (coop.thread_rank() == 0)
            while (!ncclRollingLessEq(least, read(p, bits, ord), bits))
                ;
        coop.sync();
    }
};

/* A barrier of a team over GIN: barrier `index` of a GIN barrier handle (its signal
 * signal0 + index; its epochs, one per context, in the resource buffer bufHandle). */
template <typename Coop> struct ncclGinBarrierSession {
    NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin net, ncclTeam team,
                                             ncclGinBarrierHandle handle, uint32_t index)
        : coop(coop), net(net), team(team), handle(handle), index(index)
    {
        epoch = *epochPtr();
        signal = handle.signal0 + index;
    }
    NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin net, ncclTeamTagRail,
                                             uint32_t index)
        : ncclGinBarrierSession(coop, net, ncclTeamRail(net.comm), net.comm.railGinBarrier, index)
    {
    }
    ncclGinBarrierSession(ncclGinBarrierSession const &) = delete;

    NCCL_DEVICE_INLINE ~ncclGinBarrierSession()
    {
        coop.sync();
        if (coop.thread_rank() == 0)
            *epochPtr() = epoch;
        coop.sync();
    }

    NCCL_DEVICE_INLINE void sync(Coop, cuda::memory_order ord = cuda::memory_order_acq_rel,
                                 ncclGinFenceLevel = ncclGinFenceLevel::Relaxed)
    {
        coop.sync();
        for (int i = coop.thread_rank(); i < team.nRanks - 1; i += coop.size()) {
            int peer = team.rank + 1 + i;
            if (peer >= team.nRanks)
                peer -= team.nRanks;
            net.signal(team, peer, ncclGin_SignalInc{signal}, ncclCoopThread{});
        }
        epoch += team.nRanks - 1;
        net.waitSignal(coop, signal, epoch, 32,
                       ord == cuda::memory_order_relaxed ? cuda::memory_order_relaxed
                                                         : cuda::memory_order_acquire);
    }

  private:
    NCCL_DEVICE_INLINE uint32_t *epochPtr() const
    {
        return (uint32_t *)ncclGetResourceBufferLocalPointer(net.comm, handle.bufHandle) +
               (size_t)index * NCCL_GIN_MAX_CONTEXTS + net.contextId;
    }

    Coop coop;
    ncclGin net;
    ncclTeam team;
    ncclGinBarrierHandle handle;
    uint32_t index;
    uint32_t epoch;
    ncclGinSignal_t signal;
};

#endif /* __CUDACC__ */
#endif
