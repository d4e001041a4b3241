/*
 * Baton's device API: the world barrier (nccl_device.h). Barrier `index` of the LSA barriers
 * (this host's ranks have arrived), then of the rail's GIN barriers (a rank of every other
 * host has passed its own host's LSA barrier: every rank has arrived); ncclDevCommCreate
 * gives barrierCount of both. With one host the rail has one rank and is skipped.
 */
#ifndef NCCL_DEVICE_BATON_BARRIER_H_
#define NCCL_DEVICE_BATON_BARRIER_H_

#include "nccl_device/baton_gin.h"
#include "nccl_device/baton_lsa_barrier.h"

#if defined(__CUDACC__)

template <typename Coop> struct ncclBarrierSession {
    NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagWorld, ncclGin net, uint32_t index,
                                          bool multimem = false)
        : lsa(coop, net.comm, ncclTeamLsa(net.comm), net.comm.lsaBarrier, index, multimem),
          gin(coop, net, ncclTeamRail(net.comm), net.comm.railGinBarrier, index),
          hosts(ncclTeamRail(net.comm).nRanks)
    {
    }
    ncclBarrierSession(ncclBarrierSession const &) = delete;

    NCCL_DEVICE_INLINE ncclLsaBarrierSession<Coop> &lsaBarrier()
    {
        return lsa;
    }
    NCCL_DEVICE_INLINE ncclGinBarrierSession<Coop> &ginBarrier()
    {
        return gin;
    }

    NCCL_DEVICE_INLINE void sync(Coop coop, cuda::memory_order ord = cuda::memory_order_acq_rel,
                                 ncclGinFenceLevel fence = ncclGinFenceLevel::Relaxed)
    {
        lsa.sync(coop, ord);
        if (hosts > 1)
            gin.sync(coop, ord, fence);
    }

  private:
    ncclLsaBarrierSession<Coop> lsa;
    ncclGinBarrierSession<Coop> gin;
    int hosts;
};

#endif /* __CUDACC__ */
#endif
