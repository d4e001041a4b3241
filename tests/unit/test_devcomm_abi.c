/*
 * The device API's host structs release by release (core/devcomm_abi.h): requirements of
 * NCCL 2.28, 2.29.2, 2.29.7, 2.30.3 and 2.30.7 headers read with each release's rules (what a
 * world barrier means, what asks for GIN, a hint that is not a request), releases Baton does
 * not read refused, and the ncclDevComm written in each release's layout: its fields where
 * that release's kernels read them, and not one byte past its size. ncclGetVersion reports
 * REPORT_VERSION when it names a release served.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/devcomm_abi.h"
#include "harness.h"
#include "nccl.h"
#include "util/log.h"

/* The size a release's headers give ncclDevCommRequirements (NVIDIA's sizeof). */
static size_t reqs_size(unsigned version)
{
    if (version <= 22903)
        return 72; /* through ginCounterCount */
    if (version <= 22907)
        return 88; /* + connection type, exclusive contexts, queue depth */
    if (version < 23007)
        return 96; /* + traffic class, world GIN barriers */
    return sizeof(struct bt_devapi_reqs_v2);
}

/* Requirements as NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER of `version` makes them, the bytes
 * past that release's size poisoned (its program has nothing there). */
static void init_v2(struct bt_devapi_reqs_v2 *r, unsigned version)
{
    memset(r, 0x5a, sizeof(*r));
    memset(r, 0, reqs_size(version));
    r->size = reqs_size(version);
    r->magic = NCCL_CONFIG_MAGIC;
    r->version = version;
    r->ginContextCount = 4; /* the initializer's hint (2.29.5+) */
    if (version >= 23007)
        r->ginStrongSignalsRequired = r->ginVaSignalsRequired = true;
}

static void reading(void)
{
    struct bt_devcomm_reqs out;
    struct ncclDevResourceRequirements res;
    memset(&res, 0, sizeof(res));
    res.bufferSize = 4096;

    /* 2.28: read as layout.h lays it out, GIN and all */
    struct ncclDevCommRequirements q28;
    memset(&q28, 0, sizeof(q28));
    q28.resourceRequirementsList = &res;
    q28.barrierCount = 3;
    q28.ginSignalCount = 2;
    BT_TEST_OK(bt_devcomm_reqs_read(&q28, &out, "test"));
    BT_TEST_CHECK(out.abi == BT_DEVAPI_ABI_2_28 && out.version == 22800, "2.28: abi %d", out.abi);
    BT_TEST_CHECK(memcmp(&out.q, &q28, sizeof(q28)) == 0, "2.28's requirements not kept");

    /* 2.29.2: a world barrier is an LSA barrier; GIN is 2.28's, read by 2.28's rules */
    struct bt_devapi_reqs_v2 r;
    init_v2(&r, 22902);
    r.resourceRequirementsList = &res;
    r.barrierCount = 5;
    r.lsaBarrierCount = 2;
    r.railGinBarrierCount = 7;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    BT_TEST_CHECK(out.abi == BT_DEVAPI_ABI_2_29_2 && out.version == 22902, "2.29.2: abi %d",
                  out.abi);
    BT_TEST_CHECK(out.q.lsaBarrierCount == 5 && out.q.barrierCount == 0 &&
                      out.q.railGinBarrierCount == 0 && out.q.ginContextCount == 0 &&
                      out.q.resourceRequirementsList == &res,
                  "2.29.2: lsa %d, world %d, rail %d, contexts %d", out.q.lsaBarrierCount,
                  out.q.barrierCount, out.q.railGinBarrierCount, out.q.ginContextCount);
    init_v2(&r, 22903);
    r.ginCounterCount = 1;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    BT_TEST_CHECK(out.q.ginCounterCount == 1 && out.gin_connection == 0,
                  "2.29.3 GIN counters: %d, connection %d", out.q.ginCounterCount,
                  out.gin_connection);
    init_v2(&r, 22902);
    r.ginForceEnable = true;
    r.barrierCount = 3;
    r.railGinBarrierCount = 7;
    r.ginSignalCount = 2;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    BT_TEST_CHECK(
        out.q.ginForceEnable && out.q.railGinBarrierCount == 7 && out.q.ginSignalCount == 2 &&
            out.q.barrierCount == 3 && out.q.lsaBarrierCount == 3 && out.gin_connection == 0,
        "2.29.2 GIN: force %d, rail %d, signals %d, world %d, lsa %d", out.q.ginForceEnable,
        out.q.railGinBarrierCount, out.q.ginSignalCount, out.q.barrierCount, out.q.lsaBarrierCount);
    init_v2(&r, 22902);
    res.ginSignalCount = 1;
    r.resourceRequirementsList = &res;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    res.ginSignalCount = 0;

    /* 2.29.7, 2.30.3, 2.30.7: LSA served; the context hint is not GIN; a world barrier (GIN
     * there) without GIN is the caller's error; GIN asked is refused by name */
    const unsigned lsa_ok[] = {22905, 22907, 23000, 23003, 23004, 23005, 23007};
    for (size_t i = 0; i < sizeof(lsa_ok) / sizeof(lsa_ok[0]); i++) {
        unsigned v = lsa_ok[i];
        init_v2(&r, v);
        r.resourceRequirementsList = &res;
        r.lsaBarrierCount = 8;
        r.lsaLLA2ABlockCount = 2;
        r.lsaLLA2ASlotCount = 16;
        BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
        enum bt_devapi_abi want = v < 23000 ? BT_DEVAPI_ABI_2_29_5 : BT_DEVAPI_ABI_2_30;
        BT_TEST_CHECK(out.abi == want && out.version == v, "%u: abi %d", v, out.abi);
        BT_TEST_CHECK(out.q.lsaBarrierCount == 8 && out.q.ginContextCount == 0 &&
                          out.q.lsaLLA2ABlockCount == 2 && out.q.lsaLLA2ASlotCount == 16 &&
                          out.q.resourceRequirementsList == &res,
                      "%u: lsa %d, contexts %d", v, out.q.lsaBarrierCount, out.q.ginContextCount);
        init_v2(&r, v);
        r.barrierCount = 1;
        BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == BT_ERR_INVALID_ARG,
                      "%u: barrierCount without GIN not refused", v);
        if (v >= 23003) {
            init_v2(&r, v);
            r.worldGinBarrierCount = 1;
            BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == BT_ERR_INVALID_ARG,
                          "%u: worldGinBarrierCount without GIN not refused", v);
        }
        /* a connection (or ginForceEnable) alone asks for GIN, resources or not: served for
         * 2.29.5-7 and 2.30.5+ (read below), refused for 2.30.0-2.30.4 (other descriptor
         * versions) */
        int gin_v2 = v >= BT_DEVAPI_GIN_V2_FIRST;
        int gin_ok = v < 23000 || gin_v2;
        bt_status_t want_conn = gin_ok ? BT_OK : BT_ERR_INVALID_USAGE;
        init_v2(&r, v);
        r.ginConnectionType = 1; /* NCCL_GIN_CONNECTION_FULL */
        BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == want_conn,
                      "%u: a GIN connection alone", v);
        BT_TEST_CHECK(want_conn != BT_OK || out.gin_connection == gin_ok,
                      "%u: connection read as %d", v, out.gin_connection);
        init_v2(&r, v);
        r.ginForceEnable = true;
        BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == want_conn,
                      "%u: ginForceEnable alone", v);
        BT_TEST_CHECK(want_conn != BT_OK || out.gin_connection == gin_ok,
                      "%u: ginForceEnable read as connection %d", v, out.gin_connection);
        init_v2(&r, v);
        r.ginConnectionType = 1;
        r.ginSignalCount = 2;
        bt_status_t want_gin = v < 23000 || gin_v2 ? BT_OK : BT_ERR_INVALID_USAGE;
        BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == want_gin,
                      "%u: GIN signals with a connection", v);
        BT_TEST_CHECK(want_gin != BT_OK || (out.gin_connection == 1 && out.q.ginSignalCount == 2),
                      "%u: GIN signals read as connection %d, %d signals", v, out.gin_connection,
                      out.q.ginSignalCount);
    }

    /* 2.29.7's GIN: contexts; barrierCount a world barrier (LSA and rail GIN) */
    init_v2(&r, 22907);
    r.ginConnectionType = 1;
    r.ginContextCount = 3;
    r.ginSignalCount = 5;
    r.barrierCount = 2;
    r.lsaBarrierCount = 1;
    r.railGinBarrierCount = 4;
    r.ginQueueDepth = 32;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    BT_TEST_CHECK(out.abi == BT_DEVAPI_ABI_2_29_5 && out.gin_connection == 1 &&
                      out.q.ginContextCount == 3 && out.q.ginSignalCount == 5 &&
                      out.q.barrierCount == 2 && out.q.lsaBarrierCount == 1 &&
                      out.q.railGinBarrierCount == 4 && out.gin_queue_depth == 32,
                  "2.29.7 GIN: connection %d, contexts %d, signals %d, barriers %d/%d/%d",
                  out.gin_connection, out.q.ginContextCount, out.q.ginSignalCount,
                  out.q.barrierCount, out.q.lsaBarrierCount, out.q.railGinBarrierCount);

    /* 2.30.7's GIN, read: every count the device communicator's layout needs */
    init_v2(&r, 23007);
    r.ginConnectionType = 2; /* RAIL */
    r.ginContextCount = 3;
    r.ginSignalCount = 5;
    r.ginCounterCount = 6;
    r.barrierCount = 2;
    r.railGinBarrierCount = 7;
    r.ginQueueDepth = 100;
    r.ginStrongSignalsRequired = false;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    BT_TEST_CHECK(
        out.gin_connection == 2 && out.q.ginContextCount == 3 && out.q.ginSignalCount == 5 &&
            out.q.ginCounterCount == 6 && out.q.barrierCount == 2 &&
            out.q.railGinBarrierCount == 7 && out.gin_queue_depth == 100 && !out.gin_strong,
        "2.30.7 GIN: connection %d, contexts %d, signals %d, counters %d, barriers %d, "
        "rail %d, depth %d, strong %d",
        out.gin_connection, out.q.ginContextCount, out.q.ginSignalCount, out.q.ginCounterCount,
        out.q.barrierCount, out.q.railGinBarrierCount, out.gin_queue_depth, out.gin_strong);
    /* world GIN barriers need every rank connected (NCCL's rule); no fourth connection type */
    r.worldGinBarrierCount = 1;
    BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == BT_ERR_INVALID_ARG,
                  "2.30.7: world GIN barriers on RAIL not refused");
    r.ginConnectionType = 1;
    BT_TEST_OK(bt_devcomm_reqs_read(&r, &out, "test"));
    BT_TEST_CHECK(out.world_gin_barriers == 1, "2.30.7: world GIN barriers %d",
                  out.world_gin_barriers);
    r.ginConnectionType = 3;
    BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == BT_ERR_INVALID_ARG,
                  "2.30.7: connection type 3 not refused");

    /* releases not read: before 2.29.2, 2.29.4 (NCCL serves neither), newer than 2.30.7; a
     * size too small for any versioned layout */
    const unsigned refused[] = {22900, 22904, 22908, 23008, 23100, 23200};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        init_v2(&r, refused[i]);
        BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == BT_ERR_INVALID_USAGE,
                      "version %u not refused", refused[i]);
    }
    init_v2(&r, 23007);
    r.size = 16;
    BT_TEST_CHECK(bt_devcomm_reqs_read(&r, &out, "test") == BT_ERR_INVALID_ARG,
                  "a 16-byte 2.30.7 struct not refused");
    printf("requirements: 2.28, 2.29.2-3, 2.29.5-7, 2.30.0-7 read; GIN of 2.29.x and 2.30.5-7 "
           "read, of 2.30.0-4 refused; 6 releases refused\n");
}

/* The ncclDevComm bt_devcomm_write makes for `abi`, in a buffer poisoned past `size`. */
static void written(enum bt_devapi_abi abi, unsigned version, size_t size,
                    const struct bt_devcomm_fill *f, unsigned char *buf, size_t cap)
{
    memset(buf, 0xa5, cap);
    bt_devcomm_write(abi, version, f, buf);
    for (size_t i = size; i < cap; i++)
        BT_TEST_CHECK(buf[i] == 0xa5, "abi %d: byte %zu past the %zu-byte struct written", abi, i,
                      size);
}

#define AT(buf, off, T) (*(const T *)(const void *)((buf) + (off)))

static void writing(void)
{
    static char window[1], table[1], flat[1];
    static uint32_t abort_word;
    struct bt_devcomm_fill f;
    memset(&f, 0, sizeof(f));
    f.v228.rank = 5;
    f.v228.nRanks = 8;
    f.v228.nRanks_rcp32 = 0x20000000u;
    f.v228.lsaRank = 1;
    f.v228.lsaSize = 4;
    f.v228.lsaSize_rcp32 = 0x40000000u;
    f.v228.windowTable = (struct ncclDevCommWindowTable *)(void *)table;
    f.v228.resourceWindow = (struct ncclWindow_vidmem *)(void *)window;
    f.v228.resourceWindow_inlined.lsaFlatBase = flat;
    f.v228.resourceWindow_inlined.stride4G = 3;
    f.v228.resourceWindow_inlined.mcOffset4K = 9;
    f.v228.resourceWindow_inlined.lsaRank = 1;
    f.v228.lsaBarrier.bufHandle = 7;
    f.v228.lsaBarrier.nBarriers = 32;
    f.abort_flag = &abort_word;
    unsigned char buf[512];

    /* 2.28 and 2.29.2: 2.28's 200 bytes */
    written(BT_DEVAPI_ABI_2_28, 22800, 200, &f, buf, sizeof(buf));
    BT_TEST_CHECK(memcmp(buf, &f.v228, 200) == 0, "2.28: not 2.28's struct");
    written(BT_DEVAPI_ABI_2_29_2, 22902, 200, &f, buf, sizeof(buf));
    BT_TEST_CHECK(memcmp(buf, &f.v228, 200) == 0, "2.29.2: not 2.28's struct");
    BT_TEST_CHECK(bt_devcomm_resource_window(buf) == window, "2.29.2: resource window");

    /* 2.29.7: 224 bytes, the abort flag at 216 */
    written(BT_DEVAPI_ABI_2_29_5, 22907, 224, &f, buf, sizeof(buf));
    BT_TEST_CHECK(memcmp(buf, &f.v228, 200) == 0, "2.29.7: the first 200 bytes");
    BT_TEST_CHECK(AT(buf, 216, uint32_t *) == &abort_word, "2.29.7: abortFlag");
    for (int off = 200; off < 216; off++) /* GIN contexts: none */
        BT_TEST_CHECK(buf[off] == 0, "2.29.7: byte %d", off);
    BT_TEST_CHECK(bt_devcomm_resource_window(buf) == window, "2.29.7: resource window");

    /* 2.30: 240 bytes, magic and version first, everything 8 bytes on */
    written(BT_DEVAPI_ABI_2_30, 23007, 240, &f, buf, sizeof(buf));
    BT_TEST_CHECK(AT(buf, 0, unsigned) == NCCL_CONFIG_MAGIC && AT(buf, 4, unsigned) == 23007,
                  "2.30: magic %#x, version %u", AT(buf, 0, unsigned), AT(buf, 4, unsigned));
    BT_TEST_CHECK(AT(buf, 8, int) == 5 && AT(buf, 12, int) == 8 && AT(buf, 20, int) == 1 &&
                      AT(buf, 24, int) == 4 && AT(buf, 28, uint32_t) == 0x40000000u,
                  "2.30: ranks");
    BT_TEST_CHECK(AT(buf, 32, char *) == table && AT(buf, 40, char *) == window,
                  "2.30: window table, resource window");
    BT_TEST_CHECK(AT(buf, 56, char *) == flat && AT(buf, 72, uint32_t) == 3 &&
                      AT(buf, 76, uint32_t) == 9,
                  "2.30: the inlined resource window");
    BT_TEST_CHECK(AT(buf, 128, uint32_t) == 7 && AT(buf, 132, int) == 32, "2.30: lsaBarrier");
    BT_TEST_CHECK(AT(buf, 208, uint32_t *) == &abort_word, "2.30: abortFlag");
    for (int off = 112; off < 120; off++) /* hybridWorldGinBarrier: none */
        BT_TEST_CHECK(buf[off] == 0, "2.30: byte %d", off);
    for (int off = 136; off < 208; off++) /* no GIN */
        BT_TEST_CHECK(buf[off] == 0, "2.30: byte %d", off);
    for (int off = 216; off < 240; off++) /* hybrid and world barriers: none */
        BT_TEST_CHECK(buf[off] == 0, "2.30: byte %d", off);
    BT_TEST_CHECK(bt_devcomm_resource_window(buf) == window, "2.30: resource window");

    /* 2.30 with GIN: one connection of the proxy type, its contexts, signals, barriers */
    static char gin_ctx[1];
    static uint64_t shadows[1];
    f.v228.ginContextCount = 1;
    f.v228.ginTypes[0] = 2;
    f.v228.ginHandles[0] = gin_ctx;
    f.v228.ginSignalCount = 11;
    f.v228.ginCounterCount = 12;
    f.v228.ginSignalShadows = shadows;
    f.v228.railGinBarrier.signal0 = 13;
    f.gin_contexts = 4;
    f.gin_strong = true;
    f.gin_contexts_railed = true;
    f.hybrid_lsa.bufHandle = 14;
    f.hybrid_lsa.nBarriers = 15;
    f.hybrid_rail.signal0 = 16;
    f.hybrid_world.signal0 = 17;
    f.world_gin.signal0 = 18;
    written(BT_DEVAPI_ABI_2_30, 23007, 240, &f, buf, sizeof(buf));
    BT_TEST_CHECK(AT(buf, 112, uint32_t) == 17 && AT(buf, 136, uint32_t) == 13,
                  "2.30 GIN: hybridWorldGinBarrier %u, railGinBarrier %u", AT(buf, 112, uint32_t),
                  AT(buf, 136, uint32_t));
    BT_TEST_CHECK(buf[144] == 1 && buf[145] == 2 && AT(buf, 152, char *) == gin_ctx,
                  "2.30 GIN: connections %d, type %d", buf[144], buf[145]);
    BT_TEST_CHECK(AT(buf, 184, int) == 11 && AT(buf, 188, int) == 12 &&
                      AT(buf, 192, uint64_t *) == shadows && AT(buf, 200, uint32_t) == 4,
                  "2.30 GIN: signals %d, counters %d, contexts %u", AT(buf, 184, int),
                  AT(buf, 188, int), AT(buf, 200, uint32_t));
    BT_TEST_CHECK(buf[204] == 0 && buf[205] == 1 && buf[206] == 1,
                  "2.30 GIN: connections railed %d, strong %d, contexts railed %d", buf[204],
                  buf[205], buf[206]);
    BT_TEST_CHECK(AT(buf, 216, uint32_t) == 14 && AT(buf, 220, int) == 15 &&
                      AT(buf, 224, uint32_t) == 16 && AT(buf, 232, uint32_t) == 18,
                  "2.30 GIN: hybrid LSA, hybrid rail, world GIN barriers");
    /* 2.29.7 with GIN: 2.28's fields (one connection), then the contexts, base 0, not railed */
    written(BT_DEVAPI_ABI_2_29_5, 22907, 224, &f, buf, sizeof(buf));
    BT_TEST_CHECK(buf[136] == 1 && AT(buf, 144, char *) == gin_ctx && AT(buf, 200, uint32_t) == 4 &&
                      AT(buf, 204, uint32_t) == 0 && buf[208] == 0 &&
                      AT(buf, 216, uint32_t *) == &abort_word,
                  "2.29.7 GIN: connections %d, contexts %u, base %u, railed %d", buf[136],
                  AT(buf, 200, uint32_t), AT(buf, 204, uint32_t), buf[208]);
    printf("ncclDevComm written as 2.28 / 2.29.2 (200 bytes), 2.29.7 (224), 2.30 (240); 2.29.7 "
           "and 2.30 without and with GIN\n");
}

/* ncclGetVersion under REPORT_VERSION (read once per process: set before the first call);
 * which releases it may name. */
static void reported(void)
{
    BT_TEST_CHECK(setenv("BATON_REPORT_VERSION", "2.29.7", 1) == 0, "setenv");
    int v = 0;
    BT_TEST_OK(ncclGetVersion(&v));
    BT_TEST_CHECK(v == 22907, "ncclGetVersion with REPORT_VERSION=2.29.7: %d", v);
    const unsigned served[] = {22800, 22809, 22902, 22903, 22905, 22907, 23000, 23007};
    const unsigned not_served[] = {22799, 22900, 22904, 22908, 23008, 23100};
    for (size_t i = 0; i < sizeof(served) / sizeof(served[0]); i++)
        BT_TEST_CHECK(bt_devapi_version_served(served[i]), "%u not served", served[i]);
    for (size_t i = 0; i < sizeof(not_served) / sizeof(not_served[0]); i++)
        BT_TEST_CHECK(!bt_devapi_version_served(not_served[i]), "%u served", not_served[i]);
    printf("ncclGetVersion reports REPORT_VERSION 2.29.7; served releases checked\n");
}

int main(void)
{
    bt_log_init();
    reading();
    writing();
    reported();
    printf("test_devcomm_abi: ok\n");
    return 0;
}
