/*
 * The device API's host structs as each NCCL release lays them out, and the reading and
 * writing between them and Baton's own (include/nccl_device/layout.h: 2.28.9's).
 *
 * A program built against NCCL's device-API headers hands ncclDevCommCreate requirements in
 * its release's layout and reads the ncclDevComm it gets back (by value, in its kernels) in
 * that layout too. From 2.29 the requirements open with {size, magic, version} (the version
 * is the headers' NCCL_VERSION_CODE); from 2.30 the ncclDevComm does as well. The releases:
 *
 *   2.28.x          nothing versioned: layout.h's structs
 *   2.29.2-2.29.3   requirements versioned; the ncclDevComm is 2.28's (200 bytes)
 *   2.29.5-2.29.7   requirements gain the GIN connection type, exclusive contexts, queue
 *                   depth; the ncclDevComm gains GIN context fields and abortFlag (224)
 *   2.30.x          requirements gain the traffic class, world GIN barriers, strong and VA
 *                   signal flags; the ncclDevComm opens with magic and version, gains hybrid
 *                   barriers (the world barrier session's), world GIN barriers, abortFlag
 *                   (240 bytes); windows gain their GIN segments
 *
 * Field names, types, order and sizes below are those interface facts (offsets are pinned by
 * static assertions in devcomm_abi.c, and unit/test_devapi_layout checks them against NVIDIA's
 * 2.30.7 headers where a lab build points at them). Baton serves GIN to programs built against
 * 2.28's headers, 2.29's (2.29.2-2.29.3's GIN is 2.28's) and 2.30.5-2.30.7's
 * (transport/gin_proxy.h: the descriptors' three formats); 2.30.0-2.30.4 wrote other
 * descriptor versions (their GIN requests are refused by name); their LSA windows, barriers
 * and resource buffers are served.
 */
#ifndef BT_CORE_DEVCOMM_ABI_H
#define BT_CORE_DEVCOMM_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl_device/layout.h"
#include "util/status.h"

/* Which release's layouts a program was built with. */
enum bt_devapi_abi {
    BT_DEVAPI_ABI_2_28,   /* 2.28.x: unversioned */
    BT_DEVAPI_ABI_2_29_2, /* 2.29.2-2.29.3 */
    BT_DEVAPI_ABI_2_29_5, /* 2.29.5-2.29.7 */
    BT_DEVAPI_ABI_2_30,   /* 2.30.x */
};

/* The newest release whose device-API layouts Baton reads and writes. */
#define BT_DEVAPI_NEWEST 23007

/* ---- NCCL 2.29-2.30's layouts (interface facts) -------------------------------------------- */

/* ncclDevCommRequirements as 2.30.7 lays it out; each earlier versioned layout is a prefix of
 * it (the `size` a program passes says how much of it its headers have). */
struct bt_devapi_reqs_v2 {
    size_t size;
    unsigned magic;   /* NCCL_CONFIG_MAGIC (2.29's NCCL_API_MAGIC: the same value) */
    unsigned version; /* the headers' NCCL_VERSION_CODE */
    struct ncclDevResourceRequirements *resourceRequirementsList;
    struct ncclTeamRequirements *teamRequirementsList;
    bool lsaMultimem;
    int barrierCount, lsaBarrierCount, railGinBarrierCount;
    int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
    bool ginForceEnable;
    int ginContextCount, ginSignalCount, ginCounterCount;
    /* 2.29.5 */
    int ginConnectionType; /* ncclGinConnectionType_t: NONE 0, FULL 1, RAIL 2 */
    bool ginExclusiveContexts;
    int ginQueueDepth;
    /* 2.30.3 */
    int ginTrafficClass;
    int worldGinBarrierCount;
    /* 2.30.7 */
    bool ginStrongSignalsRequired, ginVaSignalsRequired;
};

/* 2.29.5-2.29.7's ncclDevComm: 2.28's, then the GIN contexts' count and base, whether GIN is
 * railed, and the abort flag kernels poll while they wait. */
struct bt_devapi_devcomm_v22907 {
    struct ncclDevComm v228; /* its ginContextCount field is 2.29's ginConnectionCount */
    uint32_t ginContextCount;
    uint32_t ginContextBase;
    bool ginIsRailed;
    uint32_t *abortFlag;
};

/* 2.30's inlined resource window: the fields the resource-buffer pointers need, at their
 * offsets in ncclWindow_vidmem (2.30.0-2.30.4 inlined the whole window; the same offsets). */
struct bt_devapi_resource_window_v2 {
    char reserved1[8];
    char *lsaFlatBase;
    char reserved2[8];
    uint32_t stride4G;
    uint32_t mcOffset4K;
    char reserved3[32];
};

/* 2.30's ncclDevComm (2.30.7's names; 2.30.0-2.30.4 agree on every field Baton writes). */
struct bt_devapi_devcomm_v23000 {
    unsigned magic, version;
    int rank, nRanks;
    uint32_t nRanks_rcp32;
    int lsaRank, lsaSize;
    uint32_t lsaSize_rcp32;
    struct ncclDevCommWindowTable *windowTable;
    struct ncclWindow_vidmem *resourceWindow;
    struct bt_devapi_resource_window_v2 resourceWindow_inlined;
    struct ncclGinBarrierHandle hybridWorldGinBarrier;
    ncclMultimemHandle_t lsaMultimem;
    struct ncclLsaBarrierHandle lsaBarrier;
    struct ncclGinBarrierHandle railGinBarrier;
    uint8_t ginConnectionCount;
    uint8_t ginNetDeviceTypes[NCCL_GIN_MAX_CONTEXTS];
    void *ginHandles[NCCL_GIN_MAX_CONTEXTS];
    int ginSignalCount;
    int ginCounterCount;
    uint64_t *ginSignalShadows;
    uint32_t ginContextCount;
    bool ginConnectionsRailed, ginStrongLegacySignals, ginContextsRailed;
    uint32_t *abortFlag;
    struct ncclLsaBarrierHandle hybridLsaBarrier;
    struct ncclGinBarrierHandle hybridRailGinBarrier;
    struct ncclGinBarrierHandle worldGinBarrier;
};

/* A window's GIN registration per segment (2.30.7's ncclSegmentWindow). */
struct bt_devapi_segment_window {
    ncclGinWindow_t ginWins[NCCL_GIN_MAX_CONTEXTS];
    size_t segmentSize;
    int memType; /* CUmemLocationType: CU_MEM_LOCATION_TYPE_DEVICE 1 */
};

/* What a window handle points to, for every release: 2.28's ncclWindow_vidmem, then the
 * fields 2.30.7 appended (older readers stop at the first), and the one segment Baton's
 * windows have, which ginMultiSegmentWins points at. */
struct bt_devapi_window {
    struct ncclWindow_vidmem v228;
    struct bt_devapi_segment_window *ginMultiSegmentWins;
    int numSegments;
    struct bt_devapi_segment_window segment;
};

/* ---- reading and writing ------------------------------------------------------------------- */

/* Whether Baton reads and writes the device-API layouts of NCCL release `version` (an
 * NCCL_VERSION_CODE): 2.28.x, or one of the versioned releases above. */
int bt_devapi_version_served(unsigned version);

/* A program's requirements, read: its release, and what it asked in Baton's terms. */
struct bt_devcomm_reqs {
    enum bt_devapi_abi abi;
    unsigned version;                 /* the headers' NCCL_VERSION_CODE; 2.28: 22800 */
    struct ncclDevCommRequirements q; /* the fields 2.28 has */
    int gin_connection;               /* 2.29.5+ GIN: ginConnectionType (FULL 1, RAIL 2); 0
                                       * otherwise (2.28's rules: GIN when q asks for it) */
    int world_gin_barriers;           /* 2.30.5+ GIN: worldGinBarrierCount */
    int gin_queue_depth;              /* 2.29.5+ GIN: ginQueueDepth (<= 0: the default) */
    int gin_strong;                   /* 2.30.5+ GIN: ginStrongSignalsRequired */
};

/* The first 2.30 release whose GIN Baton serves: 2.30.5 (its proxy descriptors, version 2;
 * 2.30.0-2.30.4 wrote earlier ones). */
#define BT_DEVAPI_GIN_V2_FIRST 23005

/* Read the requirements at `reqs` (any release's layout) into *out; fn names the call in
 * what is WARNed. BT_ERR_INVALID_USAGE: a release Baton does not read (newer than
 * BT_DEVAPI_NEWEST, or 2.29.0-2.29.1 / 2.29.4, which NCCL does not serve either), or a GIN
 * request of 2.30.0-2.30.4; BT_ERR_INVALID_ARG: GIN resources asked without GIN
 * (2.29.5+), world GIN barriers on railed GIN (as NCCL). */
bt_status_t bt_devcomm_reqs_read(const void *reqs, struct bt_devcomm_reqs *out, const char *fn);

/* What bt_devcomm_create fills: 2.28's ncclDevComm and what later releases add. In 2.30's
 * terms v228.ginContextCount is the GIN connections, v228.ginSignalCount every signal of a
 * context (the shadows' stride), barriers' included. */
struct bt_devcomm_fill {
    struct ncclDevComm v228;
    uint32_t *abort_flag;  /* device-readable, nonzero once the communicator is aborted */
    uint32_t gin_contexts; /* 2.30: GIN contexts */
    bool gin_strong, gin_contexts_railed;
    struct ncclLsaBarrierHandle hybrid_lsa; /* 2.30: the world barrier session's parts */
    struct ncclGinBarrierHandle hybrid_rail, hybrid_world, world_gin;
};

/* Write *f to `out` in the layout of release `abi` (`version`: the program's, written into a
 * 2.30 ncclDevComm as NCCL does). */
void bt_devcomm_write(enum bt_devapi_abi abi, unsigned version, const struct bt_devcomm_fill *f,
                      void *out);

/* The resource window of a device communicator in any release's layout (found by its
 * resource window: a 2.30 one opens with the magic, which no rank number equals). */
const void *bt_devcomm_resource_window(const void *dc);

#endif
