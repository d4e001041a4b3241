/*
 * Baton's device API: barriers of an LSA team (nccl_device.h). Barrier `index` of a device
 * communicator's LSA barriers owns (3 + LSA size) 32-bit words of the resource buffer
 * lsaBarrier.bufHandle (what ncclDevCommCreate lays out): word 0 this rank's epoch between
 * sessions, words 3 + i the inbox where team member i writes the epoch it has reached. A
 * sync raises the epoch, writes it into every member's inbox for this rank (release, system
 * scope: the members may be other processes and GPUs), then waits until every member's inbox
 * here holds it (acquire).
 */
#ifndef NCCL_DEVICE_BATON_LSA_BARRIER_H_
#define NCCL_DEVICE_BATON_LSA_BARRIER_H_

#include "nccl_device/baton_core.h"

#if defined(__CUDACC__)
#include <cuda/atomic>

template <typename Coop> struct ncclLsaBarrierSession {
    NCCL_DEVICE_INLINE ncclLsaBarrierSession(Coop coop, ncclDevComm const &comm, ncclTeam team,
                                             ncclLsaBarrierHandle handle, uint32_t index,
                                             bool multimem = false,
                                             ncclMultimemHandle mmHandle = {})
        : coop(coop), comm(comm), team(team), handle(handle), index(index)
    {
        (void)multimem; /* never offered: NVLink multicast is off */
        (void)mmHandle;
        epoch = *words(comm.lsaRank);
    }
    NCCL_DEVICE_INLINE ncclLsaBarrierSession(Coop coop, ncclDevComm const &comm, ncclTeamTagLsa,
                                             uint32_t index, bool multimem = false)
        : ncclLsaBarrierSession(coop, comm, ncclTeamLsa(comm), comm.lsaBarrier, index, multimem)
    {
    }
    ncclLsaBarrierSession(ncclLsaBarrierSession const &) = delete;

    NCCL_DEVICE_INLINE ~ncclLsaBarrierSession()
    {
        coop.sync();
        if (coop.thread_rank() == 0)
            *words(comm.lsaRank) = epoch; /* the next session starts from here */
        coop.sync();
    }

    /* This rank has arrived: every member is told. */
    NCCL_DEVICE_INLINE void arrive(Coop, cuda::memory_order ord = cuda::memory_order_release)
    {
        (void)ord; /* always released: the members' waits may read what came before */
        coop.sync();
        uint32_t e = epoch + 1;
        cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
        for (int i = coop.thread_rank(); i < team.nRanks; i += coop.size()) {
            if (i == team.rank)
                continue;
            uint32_t *inbox = words(ncclTeamRankToLsa(comm, team, i)) + 3 + team.rank;
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*inbox).store(
                e, cuda::memory_order_release);
        }
    }

    /* Every member has arrived. */
    NCCL_DEVICE_INLINE void wait(Coop, cuda::memory_order ord = cuda::memory_order_acquire)
    {
        (void)ord;
        uint32_t e = epoch + 1;
        uint32_t *mine = words(comm.lsaRank) + 3;
        for (int i = coop.thread_rank(); i < team.nRanks; i += coop.size()) {
            if (i == team.rank)
                continue;
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system> in(mine[i]);
            while (!ncclRollingLessEq(e, in.load(cuda::memory_order_acquire), 32))
                ;
        }
        epoch = e;
        coop.sync();
    }

    NCCL_DEVICE_INLINE void sync(Coop c, cuda::memory_order ord = cuda::memory_order_acq_rel)
    {
        arrive(c, ord);
        wait(c, ord);
    }

  private:
    /* Barrier `index`'s words in LSA rank lsaPeer's resource buffer. */
    NCCL_DEVICE_INLINE uint32_t *words(int lsaPeer) const
    {
        return (uint32_t *)ncclGetResourceBufferLsaPointer(comm, handle.bufHandle, lsaPeer) +
               (size_t)index * (3 + comm.lsaSize);
    }

    Coop coop;
    ncclDevComm const &comm;
    ncclTeam team;
    ncclLsaBarrierHandle handle;
    uint32_t index;
    uint32_t epoch;
};

#endif /* __CUDACC__ */
#endif
