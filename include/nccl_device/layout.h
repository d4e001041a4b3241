/*
 * The memory NCCL's device API reads, in the layout of NCCL 2.28.9's headers.
 *
 * The device API (nccl_device.h) is inline code compiled into the user's kernels: it reads a
 * window's ncclWindow_vidmem, the ncclDevComm a kernel is passed by value, the handles
 * ncclDevCommCreate returns, and (GIN in proxy mode) writes descriptors into queues a CPU
 * proxy drains. A library that stands in for NCCL must hand that code memory laid out as
 * NVIDIA's headers define it: the field names, types, order and sizes below are those
 * interface facts (tests/unit/test_devapi_layout.c checks every offset and size against
 * NVIDIA's headers where they are installed). What fills and serves them is Baton's.
 *
 * C and C++; 64-bit pointers. Included by Baton's code and by its nccl_device.h.
 */
#ifndef NCCL_DEVICE_LAYOUT_H_
#define NCCL_DEVICE_LAYOUT_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- identifiers -------------------------------------------------------------------------- */

/* A buffer in the device communicator's resource window: its offset there in 128-byte
 * units (ncclGetResourceBufferOffset: handle * 128). */
typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;  /* a signal's id: 64-bit words peers add to */
typedef uint32_t ncclGinCounter_t; /* a counter's id: 64-bit words the local side counts in */

#define NCCL_GIN_MAX_CONTEXTS 4
typedef void *ncclGinWindow_t; /* a window as one GIN context names it (opaque) */

typedef enum ncclGinSignalOp_t {
    ncclGinSignalInc = 0, /* the signal goes up by one */
    ncclGinSignalAdd = 1  /* the signal goes up by the value given */
} ncclGinSignalOp_t;

/* ---- windows -------------------------------------------------------------------------------- */

/*
 * What ncclWindow_t points to, readable by kernels. The ranks of this rank's LSA team (load
 * and store access: one host's GPUs) have their parts of the window mapped one after another
 * in one virtual range: rank i's byte `off` is at lsaFlatBase + i * stride4G * 4 GiB + off.
 */
struct ncclWindow_vidmem {
    void *winHost;        /* the library's own record of the window (host memory) */
    char *lsaFlatBase;    /* LSA rank 0's first byte */
    int lsaRank;          /* this rank in the LSA team */
    int worldRank;        /* ... and in the communicator */
    uint32_t stride4G;    /* distance between two LSA ranks' parts, in 4 GiB units */
    uint32_t mcOffset4K;  /* the multicast mapping's offset, 4 KB units (unused: no multicast) */
    uint32_t ginOffset4K; /* the window's offset in the GIN contexts' registration, 4 KB units */
    ncclGinWindow_t ginWins[NCCL_GIN_MAX_CONTEXTS]; /* the window in each GIN context */
};

/* Windows a device communicator knows by address (ncclFindWindow on the device): 32 per
 * table, tables chained. */
struct ncclDevCommWindowTable {
    struct ncclDevCommWindowEntry {
        uintptr_t base, size;
        struct ncclWindow_vidmem *window;
    } entries[32];
    struct ncclDevCommWindowTable *next;
};

/* ---- handles of the resources ncclDevCommCreate lays out ------------------------------------ */

/* nBarriers LSA barriers in the buffer bufHandle of the resource window. */
struct ncclLsaBarrierHandle {
    ncclDevResourceHandle_t bufHandle;
    int nBarriers;
};

/* A GIN barrier: its signals start at signal0; its buffer bufHandle. */
struct ncclGinBarrierHandle {
    ncclGinSignal_t signal0;
    ncclDevResourceHandle_t bufHandle;
};

/* The LSA low-latency all-to-all's buffer and its slots per block. */
struct ncclLLA2AHandle {
    ncclDevResourceHandle_t bufHandle;
    uint32_t nSlots;
};

/* ---- the device communicator ------------------------------------------------------------------
 */

/* What kernels get by value (ncclDevComm_t): the world and LSA shapes, the resource window
 * (also inlined, so kernels read it without a pointer chase), the barriers, the GIN
 * contexts and the ranges of signal and counter ids that are the user's. */
struct ncclDevComm {
    int rank, nRanks;
    uint32_t nRanks_rcp32; /* 2^32 / nRanks rounded up: division by multiplication */
    int lsaRank, lsaSize;
    uint32_t lsaSize_rcp32;
    struct ncclDevCommWindowTable *windowTable;
    struct ncclWindow_vidmem *resourceWindow;
    struct ncclWindow_vidmem resourceWindow_inlined;
    ncclMultimemHandle_t lsaMultimem;
    struct ncclLsaBarrierHandle lsaBarrier;
    struct ncclGinBarrierHandle railGinBarrier;
    uint8_t ginContextCount;
    uint8_t ginTypes[NCCL_GIN_MAX_CONTEXTS];
    void *ginHandles[NCCL_GIN_MAX_CONTEXTS];
    uint32_t ginSignalBase;
    int ginSignalCount;
    uint32_t ginCounterBase;
    int ginCounterCount;
    uint64_t *ginSignalShadows;
};

/* ---- what a program asks ncclDevCommCreate for -------------------------------------------------
 */

/* A buffer (and signals, counters) in the resource window; a linked list. Out-handles that
 * are not NULL are filled by ncclDevCommCreate. */
struct ncclDevResourceRequirements {
    struct ncclDevResourceRequirements *next;
    size_t bufferSize, bufferAlign;
    ncclDevResourceHandle_t *outBufferHandle;
    int ginSignalCount;
    int ginCounterCount;
    ncclGinSignal_t *outGinSignalStart;
    ncclGinCounter_t *outGinCounterStart;
};

/* A team the kernels will use (a multicast mapping of it if multimem); a linked list. */
struct ncclTeamRequirements {
    struct ncclTeamRequirements *next;
    ncclTeam_t team;
    bool multimem;
    ncclMultimemHandle_t *outMultimemHandle;
};

struct ncclDevCommRequirements {
    struct ncclDevResourceRequirements *resourceRequirementsList;
    struct ncclTeamRequirements *teamRequirementsList;
    bool lsaMultimem;
    int barrierCount;        /* world barriers (an LSA barrier, then GIN across the rail) */
    int lsaBarrierCount;     /* barriers of the LSA team */
    int railGinBarrierCount; /* GIN barriers of the rail team */
    int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
    bool ginForceEnable;
    int ginContextCount; /* a hint: the communicator may get another count */
    int ginSignalCount;  /* the user's signals: ids 0 .. ginSignalCount - 1 */
    int ginCounterCount; /* the user's counters: ids 0 .. ginCounterCount - 1 */
};

/* ---- GIN in proxy mode: what the GPU writes for the CPU proxy ----------------------------------
 */

#define NCCL_GIN_PROXY_VERSION 100

/* A descriptor's operation: a put, and what comes with it (bits of the header's op field). */
typedef enum {
    ncclGinProxyOpPut = 1 << 0,
    ncclGinProxyOpBaseMask = 1 << 0,
    ncclGinProxyOpWithInline = 1 << 1,    /* the data (up to 8 bytes) is in the descriptor */
    ncclGinProxyOpWithCounter = 1 << 2,   /* count the local completion in a counter */
    ncclGinProxyOpWithSignalInc = 1 << 3, /* then raise the peer's signal by one */
    ncclGinProxyOpWithSignalAdd = 1 << 4, /* ... or by the descriptor's value */
    ncclGinProxyOpComplMask = ~ncclGinProxyOpPut
} ncclGinProxyOp_t;

/*
 * A descriptor (GFD): 64 bytes, eight little-endian 64-bit words. Bit 0 of every word is its
 * valid flag: the GPU writes the words, the proxy takes the descriptor once all eight flags
 * are set and clears them. The other bits, by word:
 *   0 header      op (ncclGinProxyOp_t) in bits 1-6, the size in bytes in bits 7-63
 *   1 srcOff      the source offset in bits 1-63   | inline: bytes 1-4 and 5-6 hold the value's
 *   2 srcHandle   the source window in bits 1-63   |   low 48 bits, bytes 1-2 of word 2 its
 *                                                  |   high 16 bits
 *   3 dstOff      the destination offset in bits 1-63
 *   4 dstHandle   the destination window in bits 1-63
 *   5 completion  counter id in bytes 1-2, signal id in bytes 3-4, the signal value's low 16
 *                 bits in bytes 5-6
 *   6 signalVal   the signal value's next 16 bits in bytes 1-2, its high 32 in bytes 3-6
 *   7 reserved
 */
typedef enum {
    ncclGinProxyGfdHeader = 0,
    ncclGinProxyGfdInlineLow = 1,
    ncclGinProxyGfdInlineHigh = 2,
    ncclGinProxyGfdSrcOff = 1,
    ncclGinProxyGfdSrcHandle = 2,
    ncclGinProxyGfdDstOff = 3,
    ncclGinProxyGfdDstHandle = 4,
    ncclGinProxyGfdCompletion = 5,
    ncclGinProxyGfdSignalVal = 6,
    ncclGinProxyGfdReserved = 7,
    ncclGinProxyGfdQwords = 8
} ncclGinProxyGfdQwordIdx_t;

typedef struct ncclGinProxyGfd {
    uint64_t qword[ncclGinProxyGfdQwords];
} ncclGinProxyGfd_t;

/* A proxy context as the GPU sees it: per peer a queue of queueSize descriptors with its
 * producer (pis, the GPU's) and consumer (cis, the proxy's) indices; the counters and
 * signals the descriptors name. */
typedef struct {
    int nranks;
    uint32_t queueSize;
    ncclGinProxyGfd_t *queues;
    uint32_t *pis;
    uint32_t *cis;
    uint64_t *counters;
    uint64_t *signals;
} ncclGinProxyGpuCtx_t;

#ifdef __cplusplus
}
#endif

#endif /* NCCL_DEVICE_LAYOUT_H_ */
