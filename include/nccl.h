/*
 * Baton public API: the NCCL 2.30.7 interface.
 *
 * This is Baton's own header, written from the interface facts of NCCL 2.28.9 and of what 2.29
 * and 2.30 added up to 2.30.7 (values, layouts and signatures; tests/unit/test_abi.c pins
 * them). It keeps 2.28.9's NCCL_VERSION_CODE, initializers and device-API layouts, so that a
 * program built against it runs on NVIDIA's 2.28.9 library too; the library reports 2.30.7
 * (ncclGetVersion), so that programs built against NVIDIA's
 * header run on Baton's libnccl.so.2 unchanged and programs built against this header run on either
 * library.
 *
 * It compiles as C11 and as C++ without the CUDA toolkit: cudaStream_t is declared here as
 * the same opaque pointer type CUDA uses (struct CUstream_st *) when the CUDA runtime headers
 * have not been included, so the calling convention and mangling-free C symbols are identical.
 *
 * Baton extensions (host-memory communicators, version string) live in baton.h.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h> /* bool, for the fields NCCL declares bool (one byte in C and C++) */
#endif

/*
 * cudaStream_t. When the CUDA runtime headers are in (nvcc includes them implicitly, and
 * driver_types.h is where cudaStream_t lives), use theirs. Otherwise declare the identical
 * typedef; if the CUDA headers are included later, C11 and C++ accept the repeated typedef
 * because it names the same type.
 */
#if !defined(__DRIVER_TYPES_H__) && !defined(__CUDA_RUNTIME_H__) && !defined(__CUDACC__)
typedef struct CUstream_st *cudaStream_t;
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

/* Versions up to 2.8 used X*1000 + Y*100 + Z; from 2.9 on, X*10000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z)                                                                      \
    (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE 22809

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handles and identifiers -------------------------------------------------------- */

/* Opaque communicator handle: one rank of a group. */
typedef struct ncclComm *ncclComm_t;
#define NCCL_COMM_NULL NULL

/* Opaque handle of a registered memory window (ncclCommWindowRegister). */
typedef struct ncclWindow_vidmem *ncclWindow_t;

/*
 * The rendezvous token: produced by ncclGetUniqueId on one rank, carried to all the others
 * by the application, and passed to the init calls. Opaque bytes.
 */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---- result codes --------------------------------------------------------------------- */

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclTimeout = 8, /* NCCL 2.29+ */
    ncclNumResults = 9
} ncclResult_t;

/* ---- constants ------------------------------------------------------------------------ */

/* "Not set by the user" markers for ncclConfig_t fields and simulation results. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclCommSplit color of a rank that takes part in the split but joins no new comm. */
#define NCCL_SPLIT_NOCOLOR -1

/* ncclCommWindowRegister flags and the alignment a window buffer must have. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02 /* NCCL 2.29+ */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags: shrink as is, or abort the parent's pending work first. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags (only the default exists; other values are reserved). */
#define NCCL_REVOKE_DEFAULT 0x00

/* ---- communicator configuration --------------------------------------------------------- */

/*
 * Communicator configuration. Always start from NCCL_CONFIG_INITIALIZER and set only the
 * fields you need: the library reads `size` and `version` to know which fields the caller's
 * struct has, and rejects a struct whose `magic` is wrong. Field order and offsets are ABI
 * (96 bytes on LP64: 80 up to NCCL 2.28, the last four fields since 2.30); new fields are only
 * ever appended, so a program built against an older header passes a smaller struct.
 */
typedef struct ncclConfig_v23000 {
    /* Filled by the initializer; not for users to change. */
    size_t size;
    unsigned int magic;
    unsigned int version;
    /* User settings; NCCL_CONFIG_UNDEF_INT / NCCL_CONFIG_UNDEF_PTR means "default". */
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
    /* NCCL 2.30 */
    int graphUsageMode;      /* 0, 1 or 2 (default: mixing graphs and eager launches) */
    int numRmaCtx;           /* >= 0 one-sided contexts (default 1; 0: one-sided calls off) */
    int maxP2pPeers;         /* > 0: peers a rank sends to or receives from at most */
    int graphStreamOrdering; /* 0 or 1 (default) */
} ncclConfig_t;

#define NCCL_CONFIG_MAGIC 0xcafebeef

#define NCCL_CONFIG_INITIALIZER                                                                    \
    {                                                                                              \
        sizeof(ncclConfig_t),                                 /* size */                           \
            NCCL_CONFIG_MAGIC,                                /* magic */                          \
            NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */                        \
            NCCL_CONFIG_UNDEF_INT,                            /* blocking */                       \
            NCCL_CONFIG_UNDEF_INT,                            /* cgaClusterSize */                 \
            NCCL_CONFIG_UNDEF_INT,                            /* minCTAs */                        \
            NCCL_CONFIG_UNDEF_INT,                            /* maxCTAs */                        \
            NCCL_CONFIG_UNDEF_PTR,                            /* netName */                        \
            NCCL_CONFIG_UNDEF_INT,                            /* splitShare */                     \
            NCCL_CONFIG_UNDEF_INT,                            /* trafficClass */                   \
            NCCL_CONFIG_UNDEF_PTR,                            /* commName */                       \
            NCCL_CONFIG_UNDEF_INT,                            /* collnetEnable */                  \
            NCCL_CONFIG_UNDEF_INT,                            /* CTAPolicy */                      \
            NCCL_CONFIG_UNDEF_INT,                            /* shrinkShare */                    \
            NCCL_CONFIG_UNDEF_INT,                            /* nvlsCTAs */                       \
            NCCL_CONFIG_UNDEF_INT,                            /* nChannelsPerNetPeer */            \
            NCCL_CONFIG_UNDEF_INT,                            /* nvlinkCentricSched */             \
            NCCL_CONFIG_UNDEF_INT,                            /* graphUsageMode */                 \
            NCCL_CONFIG_UNDEF_INT,                            /* numRmaCtx */                      \
            NCCL_CONFIG_UNDEF_INT,                            /* maxP2pPeers */                    \
            NCCL_CONFIG_UNDEF_INT,                            /* graphStreamOrdering */            \
    }

/* ---- group simulation ------------------------------------------------------------------ */

/* Filled by ncclGroupSimulateEnd. Start from NCCL_SIM_INFO_INITIALIZER. 24 bytes on LP64. */
typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_MAGIC 0x74685283

#define NCCL_SIM_INFO_INITIALIZER                                                                  \
    {                                                                                              \
        sizeof(ncclSimInfo_t),                                /* size */                           \
            NCCL_SIM_INFO_MAGIC,                              /* magic */                          \
            NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */                        \
            NCCL_UNDEF_FLOAT                                  /* estimatedTime */                  \
    }

/* ---- reduction operators and data types ------------------------------------------------ */

/*
 * Built-in reductions are 0..4. ncclRedOpCreatePreMulSum hands out values from ncclNumOps
 * up to ncclMaxRedOp, which is the largest value that keeps the enum 4 bytes wide.
 */
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives and when it is read. */
typedef enum {
    /* Device-visible memory, read when the collective runs. */
    ncclScalarDevice = 0,
    /* Host memory, copied before ncclRedOpCreatePreMulSum returns. */
    ncclScalarHostImmediate = 1
} ncclScalarResidence_t;

/* ---- memory ------------------------------------------------------------------------------ */

/* Allocate / free memory suited to every NCCL optimisation (registration, windows). */
ncclResult_t ncclMemAlloc(void **ptr, size_t size);
ncclResult_t ncclMemFree(void *ptr);

/* ---- version, ids, errors ---------------------------------------------------------------- */

/* Stores the running library's version: Baton's is 23007 (2.30.7, the newest interface it
 * implements whole; REPORT_VERSION may say another), whatever NCCL_VERSION_CODE above says. */
ncclResult_t ncclGetVersion(int *version);

/* Creates the rendezvous token; call on one rank and give the bytes to every rank. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);

/* Text of a result code ("unknown result code" for values outside the enum). */
const char *ncclGetErrorString(ncclResult_t result);

/* Human-readable text of the last error (comm may be NULL). */
const char *ncclGetLastError(ncclComm_t comm);

/* Re-read the logging environment variables. Deprecated in NCCL; kept for the ABI. */
void ncclResetDebugInit(void);

/* ---- communicator lifecycle ------------------------------------------------------------ */

/* Create one rank of an nranks communicator; collective over all ranks holding commId. */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);

/* As ncclCommInitRank, with a configuration (NULL = defaults). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config);

/*
 * As ncclCommInitRankConfig, with nId (1..nranks) unique ids to spread the rendezvous; every
 * rank passes the same list in the same order. Note: rank comes before the ids.
 */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId *commIds, ncclConfig_t *config);

/* Single-process clique of ndev communicators; devlist NULL = devices 0..ndev-1. */
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);

/* Flush outstanding work and release shared resources; then ncclCommDestroy frees. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);

/* Free the local resources of a communicator. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);

/*
 * Growing a communicator (NCCL 2.29+). One existing rank (the grow's root) makes an id for
 * the grow; the new ranks get it out of band. Then every rank calls ncclCommGrow with the
 * new size: existing ranks with comm (the root with &id, the others with NULL) and rank -1,
 * they keep their ranks; new ranks with comm NULL, &id and their rank, from the old size up.
 * One id serves one grow, and a comm has one unconsumed id at a time.
 */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                          ncclComm_t *newcomm, ncclConfig_t *config);

/* ncclCommSuspend flags: release the buffers a communicator can make again (NCCL 2.29+). */
#define NCCL_SUSPEND_MEM 0x01

/* Release a communicator's buffers (NCCL_SUSPEND_MEM); it takes no operation until resumed. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
/* Make a suspended communicator usable again. */
ncclResult_t ncclCommResume(ncclComm_t comm);

/* What ncclCommMemStats reports, in bytes (Suspended: 0 or 1). */
typedef enum {
    ncclStatGpuMemSuspend = 0,   /* GPU memory a suspend would release */
    ncclStatGpuMemSuspended = 1, /* 1 while suspended */
    ncclStatGpuMemPersist = 2,   /* GPU memory a suspend keeps */
    ncclStatGpuMemTotal = 3      /* every byte of GPU memory the communicator holds */
} ncclCommMemStat_t;

ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);

/* Stop all outstanding work of a communicator and free it; usable from another thread. */
ncclResult_t ncclCommAbort(ncclComm_t comm);

/*
 * Stop in-flight work without freeing the communicator; afterwards it can only be split,
 * shrunk or destroyed. revokeFlags must be NCCL_REVOKE_DEFAULT.
 */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);

/*
 * Split by color; key orders ranks in each new comm. NCCL_SPLIT_NOCOLOR: take part, get
 * *newcomm = NULL. config NULL = inherit the parent's.
 */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config);

/* New communicator without the excluded ranks (NCCL_SHRINK_* flags). */
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                            ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags);

/* The asynchronous state of a communicator (ncclInProgress while nonblocking work runs). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);

/* ---- buffer registration and windows ----------------------------------------------------- */

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle);

/* Collective: every rank registers its buffer (NCCL_WIN_* flags). */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                    int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* The buffer a window was registered with (NCCL 2.29+). */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr);

/* ---- custom reduction operators ----------------------------------------------------------- */

/* A Sum that first multiplies each input by *scalar; valid only on comm and datatype. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- collectives ------------------------------------------------------------------------ */
/*
 * Each call enqueues its operation on `stream` and returns. Counts are in elements.
 * In-place variants are named on each call.
 */

/* Result on root only; in place when sendbuff == recvbuff. */
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

/* In-place broadcast from root (older form of ncclBroadcast). */
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);

/* In place when recvbuff == sendbuff + rank * recvcount. */
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);

/* In place when sendbuff == recvbuff + rank * sendcount. */
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Block j of sendbuff goes to rank j; block i of recvbuff comes from rank i. */
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Rank i's count elements land at recvbuff + i*count on root. */
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream);

/* Root's sendbuff + i*count goes to rank i. */
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Point to point; the peer posts the matching call with the same count and type. */
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);

/* ---- one-sided (NCCL 2.29+) ------------------------------------------------------------ */
/*
 * Put count elements of localbuff into peer's part of window peerWin at byte peerWinOffset,
 * then raise peer's signal sigIdx from this rank by one. Signal raises it without data. A
 * signal is seen only after the data of every earlier put to the same peer and context.
 * sigIdx, ctx and flags must be 0.
 */
ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream);

/* Wait for opCnt more signals from peer (on sigIdx, in ctx). */
typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;

ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                            cudaStream_t stream);

/* ---- groups ----------------------------------------------------------------------------- */

/* Calls between GroupStart and GroupEnd are collected and issued together; groups nest. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

/* Like ncclGroupEnd, but only estimates the group's time into simInfo. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo);

/* ---- parameters (NCCL 2.30+) ------------------------------------------------------------ */
/*
 * Baton's tunables (`baton-perf --params` lists them) by key: "NCCL_<NAME>" or
 * "BATON_<NAME>". Integer parameters read as I64 (and as any narrower type their value
 * fits), string parameters as strings. Returned strings and tables stay valid until the same
 * thread's next call of the same function.
 */
typedef struct ncclParamHandle *ncclParamHandle_t;

ncclResult_t ncclParamBind(ncclParamHandle_t *out, const char *key);
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t *out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t *out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t *out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t *out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t *out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t *out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t *out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t *out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char **out);
/* The value's bytes (an integer: its 8 bytes; a string: with its NUL; unset: none). */
ncclResult_t ncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len);
ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen);
ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen);
/* Print every parameter, its value and default to stdout. */
void ncclParamDumpAll(void);

/* ---- device API (host side) ------------------------------------------------------------- */
/*
 * NCCL 2.28's device API: device communicators, teams, and requirement builders for barriers
 * and low-latency all-to-all buffers. The structures the device code reads are defined, in
 * NCCL's layout, in nccl_device/layout.h; here they are opaque, except ncclTeam and
 * ncclMultimemHandle, which are passed by value. Kernels include nccl_device.h (NVIDIA's, or
 * Baton's own) for the device side.
 */
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclTeamRequirements ncclTeamRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
typedef struct ncclMultimemHandle {
    void *mcBasePtr;
} ncclMultimemHandle_t;

/* A set of ranks of a communicator: nRanks members, this rank's index, stride in world. */
struct ncclTeam {
    int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;

/* What a communicator offers the device API (NCCL 2.29+): ncclCommQueryProperties fills the
 * fields the caller's `size` covers. Start from NCCL_COMM_PROPERTIES_INITIALIZER. */
typedef enum {
    NCCL_GIN_TYPE_NONE = 0,
    NCCL_GIN_TYPE_PROXY = 2,
    NCCL_GIN_TYPE_GDAKI = 3,
    NCCL_GIN_TYPE_GPI = 4
} ncclGinType_t;

typedef struct ncclCommProperties {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int rank;
    int nRanks;
    int cudaDev; /* -1: a host-memory communicator */
    int nvmlDev; /* the GPU's index as NVML counts (PCI bus order); -1: none */
    bool deviceApiSupport;
    bool multimemSupport;
    ncclGinType_t ginType;
    int nLsaTeams;
    bool hostRmaSupport; /* ncclPutSignal and friends are served */
    ncclGinType_t railedGinType;
} ncclCommProperties_t;

#define NCCL_COMM_PROPERTIES_INITIALIZER                                                           \
    {                                                                                              \
        sizeof(ncclCommProperties_t),                         /* size */                           \
            NCCL_CONFIG_MAGIC,                                /* magic */                          \
            NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */                        \
            0, 0, -1, -1, /* rank, nRanks, cudaDev, nvmlDev: filled by the call */                 \
            0, 0, NCCL_GIN_TYPE_NONE, 0, 0, NCCL_GIN_TYPE_NONE                                     \
    }

ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t *props);

/* Where a window's part of rank `peer` (world rank), or of the `lsaRank`-th rank of this
 * host, is at `offset`, as this rank addresses it (NCCL 2.29+): the window must map here
 * (a symmetric window of ranks on one host), else ncclInvalidArgument. */
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void **outPtr);

/* NVLink multicast and GIN sessions (NCCL 2.29-2.30): not implemented (multicast is never
 * used by Baton); they fail with ncclInvalidUsage. */
typedef struct ncclGinOutboxHandle ncclGinOutboxHandle;
typedef struct ncclGinInboxA2AHandle ncclGinInboxA2AHandle;
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void **outPtr);
ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                            ncclGinOutboxHandle *outHandle,
                                            ncclDevResourceRequirements_t *outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                              ncclGinInboxA2AHandle *outHandle,
                                              ncclDevResourceRequirements_t *outReq);

ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const *reqs,
                               ncclDevComm_t *outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const *devComm);

ncclTeam_t ncclTeamWorld(ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);

ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t *outHandle,
                                             ncclDevResourceRequirements_t *outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t *outHandle,
                                             ncclDevResourceRequirements_t *outReq);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                        ncclDevResourceRequirements_t *outReq);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
