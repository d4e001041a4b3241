/*
 * Baton's device API, the core (nccl_device.h): cooperative groups, teams, rolling
 * comparisons, and pointers into windows and the device communicator's resource buffers.
 * NCCL's names and semantics; Baton's code. CUDA C++ only.
 */
#ifndef NCCL_DEVICE_BATON_CORE_H_
#define NCCL_DEVICE_BATON_CORE_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl_device/layout.h"

#ifndef NCCL_DEVICE_INLINE
#define NCCL_DEVICE_INLINE __device__ __forceinline__
#endif
#ifndef NCCL_HOST_DEVICE_INLINE
#define NCCL_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#endif

/* ---- teams --------------------------------------------------------------------------------- */

/* Tags that name a team of a device communicator without building it. */
struct ncclTeamTagWorld {
};
struct ncclTeamTagLsa {
};
struct ncclTeamTagRail {
};

/* Every rank; the ranks of this host (LSA: load/store access); the ranks at this rank's place
 * in every host's LSA team (one per host, lsaSize apart). */
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamWorld(ncclDevComm const &c)
{
    return ncclTeam{c.nRanks, c.rank, 1};
}
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamLsa(ncclDevComm const &c)
{
    return ncclTeam{c.lsaSize, c.lsaRank, 1};
}
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamRail(ncclDevComm const &c)
{
    return ncclTeam{c.nRanks / c.lsaSize, c.rank / c.lsaSize, c.lsaSize};
}
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamOf(ncclDevComm const &c, ncclTeamTagWorld)
{
    return ncclTeamWorld(c);
}
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamOf(ncclDevComm const &c, ncclTeamTagLsa)
{
    return ncclTeamLsa(c);
}
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamOf(ncclDevComm const &c, ncclTeamTagRail)
{
    return ncclTeamRail(c);
}

/* Member `rank` of team `tm` (a team this rank is in) as a world rank, and as an index in this
 * rank's LSA team. */
NCCL_HOST_DEVICE_INLINE int ncclTeamRankToWorld(ncclDevComm const &c, ncclTeam tm, int rank)
{
    return c.rank + (rank - tm.rank) * tm.stride;
}
NCCL_HOST_DEVICE_INLINE int ncclTeamRankToLsa(ncclDevComm const &c, ncclTeam tm, int rank)
{
    return c.lsaRank + (rank - tm.rank) * tm.stride;
}

#if defined(__CUDACC__)

/* ---- cooperative groups: the threads that take part in a call ------------------------------ */

/* One thread. */
struct ncclCoopThread {
    NCCL_DEVICE_INLINE int thread_rank() const
    {
        return 0;
    }
    NCCL_DEVICE_INLINE int size() const
    {
        return 1;
    }
    NCCL_DEVICE_INLINE int num_threads() const
    {
        return 1;
    }
    NCCL_DEVICE_INLINE void sync() const
    {
    }
};

/* An aligned power-of-two set of lanes of a warp (ncclCoopTile<32>: the warp). */
template <int N> struct ncclCoopTile {
    static_assert(N > 0 && N <= 32 && (N & (N - 1)) == 0, "a tile is a power of two <= 32");
    NCCL_DEVICE_INLINE int thread_rank() const
    {
        return (int)(threadIdx.x % N);
    }
    NCCL_DEVICE_INLINE constexpr int size() const
    {
        return N;
    }
    NCCL_DEVICE_INLINE constexpr int num_threads() const
    {
        return N;
    }
    NCCL_DEVICE_INLINE uint32_t laneMask() const
    {
        return N == 32 ? ~0u : ((1u << N) - 1) << (threadIdx.x % 32 / N * N);
    }
    NCCL_DEVICE_INLINE void sync() const
    {
        __syncwarp(laneMask());
    }
};
typedef ncclCoopTile<32> ncclCoopWarp;

/* The whole block (one-dimensional blocks). */
struct ncclCoopCta {
    NCCL_DEVICE_INLINE int thread_rank() const
    {
        return (int)threadIdx.x;
    }
    NCCL_DEVICE_INLINE int size() const
    {
        return (int)blockDim.x;
    }
    NCCL_DEVICE_INLINE int num_threads() const
    {
        return (int)blockDim.x;
    }
    NCCL_DEVICE_INLINE void sync() const
    {
        __syncthreads();
    }
};

/* ---- rolling comparisons: counters that wrap, compared on their low `bits` bits ------------- */

/* Whether a comes at or before b, both taken modulo 2^bits (they are less than 2^(bits-1)
 * apart). */
NCCL_DEVICE_INLINE bool ncclRollingLessEq(uint64_t a, uint64_t b, int bits)
{
    return (int64_t)((b - a) << (64 - bits)) >= 0;
}

/* ---- pointers ------------------------------------------------------------------------------ */

/* Byte `offset` of LSA rank `lsaPeer`'s part of a window, as this rank addresses it (every
 * LSA peer's part is mapped in one flat range, stride4G x 4 GiB apart). */
NCCL_DEVICE_INLINE void *ncclGetLsaPointer(ncclWindow_t w, size_t offset, int lsaPeer)
{
    return w->lsaFlatBase + (size_t)lsaPeer * ((size_t)w->stride4G << 32) + offset;
}
/* ... of this rank's own part. */
NCCL_DEVICE_INLINE void *ncclGetLocalPointer(ncclWindow_t w, size_t offset)
{
    return ncclGetLsaPointer(w, offset, w->lsaRank);
}
/* ... of world rank `peer`'s part (a member of this rank's LSA team). */
NCCL_DEVICE_INLINE void *ncclGetPeerPointer(ncclWindow_t w, size_t offset, int peer)
{
    return ncclGetLsaPointer(w, offset, peer - (w->worldRank - w->lsaRank));
}
/* ... of member `rank` of team `tm`. */
NCCL_DEVICE_INLINE void *ncclGetPeerPointer(ncclWindow_t w, size_t offset, ncclTeam tm, int rank)
{
    return ncclGetLsaPointer(w, offset, w->lsaRank + (rank - tm.rank) * tm.stride);
}

/* A buffer of the resource window (ncclDevCommCreate's handles count 128-byte units): this
 * rank's, and LSA peer lsaPeer's. */
NCCL_DEVICE_INLINE size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h)
{
    return (size_t)h * 128;
}
NCCL_DEVICE_INLINE void *ncclGetResourceBufferLsaPointer(ncclDevComm const &c,
                                                         ncclDevResourceHandle_t h, int lsaPeer)
{
    ncclWindow_vidmem const &w = c.resourceWindow_inlined;
    return w.lsaFlatBase + (size_t)lsaPeer * ((size_t)w.stride4G << 32) +
           ncclGetResourceBufferOffset(h);
}
NCCL_DEVICE_INLINE void *ncclGetResourceBufferLocalPointer(ncclDevComm const &c,
                                                           ncclDevResourceHandle_t h)
{
    return ncclGetResourceBufferLsaPointer(c, h, c.lsaRank);
}

/* The window of comm's holding ptr (the communicator's window table: every window
 * registered on it that kernels can reach), or NULL when none holds it. Every thread of the
 * coop looks through the whole table (32 entries a table) and gets the same answer. */
template <typename Coop>
NCCL_DEVICE_INLINE ncclWindow_t ncclFindWindow(Coop, ncclDevComm const &comm, void const *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    for (const ncclDevCommWindowTable *t = comm.windowTable; t; t = t->next)
        for (int i = 0; i < 32; i++) {
            const ncclDevCommWindowTable::ncclDevCommWindowEntry &e = t->entries[i];
            if (e.window && p - e.base < e.size)
                return e.window;
        }
    return nullptr;
}

#endif /* __CUDACC__ */
#endif
