/*
 * The calls NCCL 2.29 and 2.30 added, on host memory, 3 rank processes:
 *   - ncclParam*: bind by NCCL_ or BATON_ key, typed reads with range checks, strings, raw
 *     bytes, the key table, an unknown key;
 *   - ncclConfig_t of 2.30 (96 bytes): its fields checked; a 2.28 client's 80-byte struct
 *     with garbage past its size accepted;
 *   - ncclWinGetUserPtr on a registered window, and refused for another comm's;
 *   - ncclGroupSimulateEnd: a positive time, larger for a larger collective, a group's time
 *     the sum of its operations', nothing run (outputs untouched), the next group runs;
 *   - ncclCommSuspend / ncclCommResume / ncclCommMemStats: the buffers held before, none while
 *     suspended (operations refused), the same again after resuming, collectives exact;
 *   - ncclPutSignal / ncclSignal / ncclWaitSignal between processes through mapped windows:
 *     100 puts round a ring, each checked at its target after its signal; signals counted
 *     across calls and descriptors; bounds, arguments, groups and unmapped windows refused;
 *     the same across hosts (4 processes, 2 per NCCL_HOSTID) through the network link, with
 *     a 1 MB put between the hosts;
 *   - ncclCommGetUniqueId + ncclCommGrow: 3 ranks grow to 5 (two new processes join with the
 *     id rank 0 made), ranks kept and assigned, 1,000 verified collectives on the grown
 *     communicator, the old one still working, misuse refused.
 * Each process ends with the leak check.
 */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "baton.h"
#include "nccl.h"

static void check_params(void)
{
    ncclParamHandle_t h = NULL;
    int64_t i64 = 0;
    int8_t i8 = 0;
    int16_t i16 = 0;
    uint16_t u16 = 0;
    /* HANG_REPORT=300 in the environment (main), an integer parameter: 300 fits 16 bits, not
     * 8 */
    BT_TEST_OK(ncclParamBind(&h, "NCCL_HANG_REPORT"));
    BT_TEST_OK(ncclParamGetI64(h, &i64));
    BT_TEST_CHECK(i64 == 300, "NCCL_HANG_REPORT reads %lld, want 300", (long long)i64);
    BT_TEST_OK(ncclParamGetI16(h, &i16));
    BT_TEST_OK(ncclParamGetU16(h, &u16));
    BT_TEST_CHECK(i16 == 300 && u16 == 300, "narrow reads %d %u", i16, u16);
    BT_TEST_CHECK(ncclParamGetI8(h, &i8) == ncclInvalidArgument, "300 fit in int8");
    const char *s = NULL;
    BT_TEST_OK(ncclParamGetStr(h, &s));
    BT_TEST_CHECK(s && strcmp(s, "300") == 0, "as a string: %s", s ? s : "(null)");
    int64_t raw = 0;
    int len = 0;
    BT_TEST_OK(ncclParamGet(h, &raw, sizeof(raw), &len));
    BT_TEST_CHECK(len == 8 && raw == 300, "raw: %d bytes, %lld", len, (long long)raw);
    BT_TEST_CHECK(ncclParamGet(h, &raw, 4, &len) == ncclInvalidArgument, "raw into 4 bytes");
    /* the BATON_ spelling binds the same row */
    ncclParamHandle_t t = NULL, t2 = NULL;
    BT_TEST_OK(ncclParamBind(&t, "BATON_TIMEOUT"));
    BT_TEST_OK(ncclParamBind(&t2, "NCCL_TIMEOUT"));
    BT_TEST_CHECK(t == t2, "BATON_TIMEOUT and NCCL_TIMEOUT bind apart");
    BT_TEST_OK(ncclParamGetI64(t, &i64));
    /* a string parameter */
    ncclParamHandle_t d = NULL;
    BT_TEST_OK(ncclParamBind(&d, "NCCL_DEBUG_SUBSYS"));
    int32_t i32 = 0;
    BT_TEST_CHECK(ncclParamGetI32(d, &i32) == ncclInvalidArgument, "a string read as int32");
    BT_TEST_OK(ncclParamGetStr(d, &s));
    char buf[256];
    BT_TEST_OK(ncclParamGet(d, buf, sizeof(buf), &len));
    BT_TEST_CHECK(len == (int)strlen(s) + 1 && strcmp(buf, s) == 0, "raw string '%s' vs '%s'", buf,
                  s);
    int vlen = 0;
    BT_TEST_OK(ncclParamGetParameter("NCCL_TIMEOUT", &s, &vlen));
    char want[32];
    snprintf(want, sizeof(want), "%lld", (long long)i64);
    BT_TEST_CHECK(strcmp(s, want) == 0 && vlen == (int)strlen(want), "NCCL_TIMEOUT is '%s'", s);
    BT_TEST_CHECK(ncclParamBind(&h, "NCCL_NO_SUCH_THING") == ncclInvalidArgument, "unknown key");
    BT_TEST_CHECK(ncclParamGetParameter("NO_SUCH", &s, &vlen) == ncclInvalidArgument && !s,
                  "unknown key by name");
    const char **keys = NULL;
    int nkeys = 0, found = 0;
    BT_TEST_OK(ncclParamGetAllParameterKeys(&keys, &nkeys));
    for (int k = 0; k < nkeys; k++) {
        ncclParamHandle_t each;
        BT_TEST_CHECK(ncclParamBind(&each, keys[k]) == ncclSuccess, "key %s does not bind",
                      keys[k]);
        found += strcmp(keys[k], "NCCL_HANG_REPORT") == 0;
    }
    BT_TEST_CHECK(nkeys > 20 && found == 1, "%d keys, NCCL_HANG_REPORT %d times", nkeys, found);
}

/* The 2.30 config fields, and a 2.28 client's shorter struct. */
static void check_config(ncclComm_t comm, int rank)
{
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    c.numRmaCtx = -1;
    ncclComm_t bad = NULL;
    BT_TEST_CHECK(ncclCommSplit(comm, 0, rank, &bad, &c) == ncclInvalidArgument && !bad,
                  "numRmaCtx -1 accepted");
    c.numRmaCtx = NCCL_CONFIG_UNDEF_INT;
    c.graphUsageMode = 3;
    BT_TEST_CHECK(ncclCommSplit(comm, 0, rank, &bad, &c) == ncclInvalidArgument && !bad,
                  "graphUsageMode 3 accepted");
    /* a client built against 2.28.9's header: 80 bytes, what lies beyond is not its */
    ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
    old.size = 80;
    old.version = 22809;
    old.graphUsageMode = 99;
    old.numRmaCtx = -7;
    ncclComm_t child = NULL;
    BT_TEST_OK(ncclCommSplit(comm, 0, rank, &child, &old));
    BT_TEST_CHECK(child != NULL, "the split with an old config gave no comm");
    int32_t one = 1, sum = 0;
    BT_TEST_OK(ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, child, NULL));
    int n = 0;
    BT_TEST_OK(ncclCommCount(comm, &n));
    BT_TEST_CHECK(sum == n, "AllReduce on the child: %d, want %d", sum, n);

    /* windows: the user's pointer back; another comm's window refused */
    void *buf = NULL, *back = NULL;
    ncclWindow_t win = NULL;
    BT_TEST_OK(ncclMemAlloc(&buf, 1 << 16));
    BT_TEST_OK(ncclCommWindowRegister(comm, buf, 1 << 16, &win, NCCL_WIN_COLL_SYMMETRIC));
    BT_TEST_OK(ncclWinGetUserPtr(comm, win, &back));
    BT_TEST_CHECK(back == buf, "ncclWinGetUserPtr gave %p, registered %p", back, buf);
    BT_TEST_CHECK(ncclWinGetUserPtr(child, win, &back) == ncclInvalidArgument,
                  "another comm's window accepted");
    BT_TEST_OK(ncclCommWindowDeregister(comm, win));
    BT_TEST_OK(ncclMemFree(buf));
    BT_TEST_OK(ncclCommDestroy(child));
}

/* What the communicator offers the device API; an older (smaller) struct gets only its part. */
static void check_properties(ncclComm_t comm, int rank, int n)
{
    ncclCommProperties_t p = NCCL_COMM_PROPERTIES_INITIALIZER;
    BT_TEST_OK(ncclCommQueryProperties(comm, &p));
    BT_TEST_CHECK(p.rank == rank && p.nRanks == n && p.cudaDev == -1 && p.nvmlDev == -1,
                  "rank %d of %d, cudaDev %d, nvmlDev %d", p.rank, p.nRanks, p.cudaDev, p.nvmlDev);
    BT_TEST_CHECK(!p.deviceApiSupport && !p.multimemSupport && p.ginType == NCCL_GIN_TYPE_NONE &&
                      p.hostRmaSupport && p.nLsaTeams == 1,
                  "device API %d, multimem %d, GIN %d, host RMA %d, LSA teams %d",
                  p.deviceApiSupport, p.multimemSupport, (int)p.ginType, p.hostRmaSupport,
                  p.nLsaTeams);
    ncclCommProperties_t old = NCCL_COMM_PROPERTIES_INITIALIZER;
    old.size = offsetof(ncclCommProperties_t, hostRmaSupport);
    old.nLsaTeams = -5;
    old.hostRmaSupport = 0;
    old.railedGinType = (ncclGinType_t)77;
    BT_TEST_OK(ncclCommQueryProperties(comm, &old));
    BT_TEST_CHECK(old.nLsaTeams == 1 && !old.hostRmaSupport && (int)old.railedGinType == 77,
                  "a smaller struct was written past its size");
    ncclCommProperties_t bad = NCCL_COMM_PROPERTIES_INITIALIZER;
    bad.magic = 1;
    BT_TEST_CHECK(ncclCommQueryProperties(comm, &bad) == ncclInvalidArgument, "bad magic");
    ncclCommProperties_t newer = NCCL_COMM_PROPERTIES_INITIALIZER;
    newer.version = 23100; /* headers whose device API Baton does not serve: refused */
    BT_TEST_CHECK(ncclCommQueryProperties(comm, &newer) == ncclInvalidUsage, "2.31's props");
    newer.version = 23007;
    BT_TEST_OK(ncclCommQueryProperties(comm, &newer));
}

/* One AllReduce of `count` floats in a simulated group: its time. */
static float simulate(ncclComm_t comm, float *in, float *out, size_t count, int twice)
{
    ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER;
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, NULL));
    if (twice)
        BT_TEST_OK(ncclAllReduce(in, out, 1024, ncclFloat, ncclSum, comm, NULL));
    BT_TEST_OK(ncclGroupSimulateEnd(&si));
    return si.estimatedTime;
}

static void check_simulate(ncclComm_t comm)
{
    size_t big = 16u << 20;
    float *in = malloc(big * sizeof(float)), *out = malloc(big * sizeof(float));
    for (size_t i = 0; i < big; i++) {
        in[i] = 1.0f;
        out[i] = -3.0f;
    }
    float small_us = simulate(comm, in, out, 1024, 0);
    float big_us = simulate(comm, in, out, big, 0);
    float both_us = simulate(comm, in, out, big, 1);
    BT_TEST_CHECK(small_us > 0 && big_us > small_us, "4 KB: %.2f us, 64 MB: %.2f us", small_us,
                  big_us);
    BT_TEST_CHECK(fabsf(both_us - (big_us + small_us)) <= 1e-3f * both_us,
                  "a group of both: %.2f us, the sum %.2f", both_us, big_us + small_us);
    for (size_t i = 0; i < big; i += 4097)
        if (out[i] != -3.0f) {
            BT_TEST_CHECK(0, "a simulated group wrote its output: out[%zu] = %f", i, out[i]);
            break;
        }
    ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
    bad.magic = 0;
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_CHECK(ncclGroupSimulateEnd(&bad) == ncclInvalidArgument, "bad magic accepted");
    BT_TEST_OK(ncclGroupEnd());
    /* the group machinery is clean: a real collective runs */
    int n = 0;
    BT_TEST_OK(ncclCommCount(comm, &n));
    BT_TEST_OK(ncclAllReduce(in, out, 1024, ncclFloat, ncclSum, comm, NULL));
    BT_TEST_CHECK(out[1023] == (float)n, "AllReduce after simulations: %f", out[1023]);
    free(in);
    free(out);
}

/* across: the ranks are on several hosts (NCCL_HOSTID), so puts travel the network link and
 * any host window is served; else one host, mapped windows only. */
static void check_one_sided(ncclComm_t comm, int rank, int n, int across)
{
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    size_t bytes = 1 << 16;
    int32_t *win_buf = NULL;
    ncclWindow_t win = NULL;
    BT_TEST_OK(ncclMemAlloc((void **)&win_buf, bytes));
    memset(win_buf, 0xff, bytes);
    BT_TEST_OK(ncclCommWindowRegister(comm, win_buf, bytes, &win, NCCL_WIN_COLL_SYMMETRIC));

    /* round k: 1..128 ints at int offset 128 k to the next rank, checked by it */
    int32_t src[128];
    for (int k = 0; k < 100; k++) {
        int cnt = 1 + (k * 37) % 128;
        for (int i = 0; i < cnt; i++)
            src[i] = rank * 100000 + k * 1000 + i;
        BT_TEST_OK(ncclPutSignal(src, (size_t)cnt, ncclInt32, next, win,
                                 (size_t)k * 128 * sizeof(int32_t), 0, 0, 0, comm, NULL));
        ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = prev, .sigIdx = 0, .ctx = 0};
        BT_TEST_OK(ncclWaitSignal(1, &d, comm, NULL));
        int pcnt = cnt;
        for (int i = 0; i < pcnt; i++)
            if (win_buf[k * 128 + i] != prev * 100000 + k * 1000 + i) {
                BT_TEST_CHECK(0, "put %d from rank %d: [%d] = %d", k, prev, i,
                              win_buf[k * 128 + i]);
                break;
            }
        if (win_buf[k * 128 + pcnt] != -1 && pcnt < 128)
            BT_TEST_CHECK(0, "put %d wrote past its %d elements", k, pcnt);
    }
    /* the peer's memory by pointer (ncclGetPeerDevicePointer): mapped on one host only */
    void *mine = NULL, *theirs = NULL;
    /* this rank's index among its host's ranks: across hosts two per host */
    BT_TEST_OK(ncclGetLsaDevicePointer(win, 64, across ? rank % 2 : rank, &mine));
    BT_TEST_CHECK(mine == (char *)win_buf + 64, "own LSA pointer %p, buffer %p", mine,
                  (void *)win_buf);
    BT_TEST_OK(ncclGetPeerDevicePointer(win, 0, rank, &mine));
    BT_TEST_CHECK(mine == win_buf, "own pointer %p, buffer %p", mine, (void *)win_buf);
    BT_TEST_CHECK(ncclGetPeerDevicePointer(win, 0, n, &theirs) == ncclInvalidArgument,
                  "peer out of range");
    BT_TEST_CHECK(ncclGetPeerDevicePointer(win, bytes, next, &theirs) == ncclInvalidArgument,
                  "offset past the window");
    if (across) {
        BT_TEST_CHECK(ncclGetPeerDevicePointer(win, 0, next, &theirs) == ncclInvalidArgument,
                      "a pointer into another host's window");
    } else {
        /* a store through the pointer, then a signal: the peer sees it */
        BT_TEST_OK(ncclGetPeerDevicePointer(win, 100 * 128 * sizeof(int32_t), next, &theirs));
        *(int32_t *)theirs = 9000 + rank;
        BT_TEST_OK(ncclSignal(next, 0, 0, 0, comm, NULL));
        ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = prev};
        BT_TEST_OK(ncclWaitSignal(1, &d, comm, NULL));
        BT_TEST_CHECK(win_buf[100 * 128] == 9000 + prev, "a store through the peer pointer: %d",
                      win_buf[100 * 128]);
    }
    /* signals alone: three to the next, one to every rank; waited for in one call each */
    for (int s = 0; s < 3; s++)
        BT_TEST_OK(ncclSignal(next, 0, 0, 0, comm, NULL));
    ncclWaitSignalDesc_t three = {.opCnt = 3, .peer = prev};
    BT_TEST_OK(ncclWaitSignal(1, &three, comm, NULL));
    ncclWaitSignalDesc_t all[64];
    for (int r = 0; r < n; r++) {
        BT_TEST_OK(ncclSignal(r, 0, 0, 0, comm, NULL));
        all[r] = (ncclWaitSignalDesc_t){.opCnt = 1, .peer = r};
    }
    BT_TEST_OK(ncclWaitSignal(n, all, comm, NULL));

    /* what is refused, and why */
    BT_TEST_CHECK(ncclPutSignal(src, 8, ncclInt32, next, win, bytes - 16, 0, 0, 0, comm, NULL) ==
                      ncclInvalidArgument,
                  "a put past the window's end");
    BT_TEST_CHECK(ncclPutSignal(src, 1, ncclInt32, next, win, 0, 1, 0, 0, comm, NULL) ==
                      ncclInvalidArgument,
                  "sigIdx 1");
    BT_TEST_CHECK(ncclSignal(n, 0, 0, 0, comm, NULL) == ncclInvalidArgument, "peer out of range");
    ncclWaitSignalDesc_t zero = {.opCnt = 0, .peer = prev};
    BT_TEST_CHECK(ncclWaitSignal(1, &zero, comm, NULL) == ncclInvalidArgument, "opCnt 0");
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_CHECK(ncclSignal(next, 0, 0, 0, comm, NULL) == ncclInvalidUsage, "inside a group");
    ncclGroupEnd();
    /* a window of memory other processes cannot map (malloc): not served on one host; across
     * hosts the network lands it like any */
    int32_t *priv = malloc(4096);
    priv[0] = -1;
    ncclWindow_t pw = NULL;
    BT_TEST_OK(ncclCommWindowRegister(comm, priv, 4096, &pw, NCCL_WIN_COLL_SYMMETRIC));
    src[0] = 7000 + rank;
    if (across) {
        BT_TEST_OK(ncclPutSignal(src, 1, ncclInt32, next, pw, 0, 0, 0, 0, comm, NULL));
        ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = prev};
        BT_TEST_OK(ncclWaitSignal(1, &d, comm, NULL));
        BT_TEST_CHECK(priv[0] == 7000 + prev, "a put into a malloc window: %d", priv[0]);
    } else {
        BT_TEST_CHECK(ncclPutSignal(src, 1, ncclInt32, next, pw, 0, 0, 0, 0, comm, NULL) ==
                          ncclInvalidUsage,
                      "a put into an unmapped window");
    }
    BT_TEST_OK(ncclCommWindowDeregister(comm, pw));
    free(priv);
    /* nobody deregisters while a peer may still put */
    int32_t z = 0, zs = 0;
    BT_TEST_OK(ncclAllReduce(&z, &zs, 1, ncclInt32, ncclSum, comm, NULL));
    BT_TEST_OK(ncclCommWindowDeregister(comm, win));
    BT_TEST_OK(ncclMemFree(win_buf));
    if (rank == 0)
        fprintf(stderr, "one-sided%s: 100 puts and 3 + %d signals per rank, exact\n",
                across ? " across hosts" : "", n);
}

static uint64_t stat_of(ncclComm_t comm, ncclCommMemStat_t s)
{
    uint64_t v = ~0ull;
    BT_TEST_OK(ncclCommMemStats(comm, s, &v));
    return v;
}

/* Collectives of several sizes and kinds, exact; `round` varies the values. */
static void run_colls(ncclComm_t comm, int rank, int n, int round)
{
    static const size_t counts[] = {7, 1024, 300000, 1u << 20};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t c = counts[k];
        int32_t *in = malloc(c * sizeof(int32_t) * (size_t)n),
                *out = malloc(c * sizeof(int32_t) * (size_t)n);
        for (size_t i = 0; i < c; i++)
            in[i] = (int32_t)(rank + round + (int)(i % 97));
        BT_TEST_OK(ncclAllReduce(in, out, c, ncclInt32, ncclSum, comm, NULL));
        for (size_t i = 0; i < c; i++) {
            int32_t want = n * (round + (int32_t)(i % 97)) + n * (n - 1) / 2;
            if (out[i] != want) {
                BT_TEST_CHECK(0, "round %d AllReduce of %zu: [%zu] = %d, want %d", round, c, i,
                              out[i], want);
                break;
            }
        }
        BT_TEST_OK(ncclAllGather(in, out, c, ncclInt32, comm, NULL));
        for (int r = 0; r < n; r++)
            if (out[(size_t)r * c] != r + round) {
                BT_TEST_CHECK(0, "round %d AllGather of %zu: block %d starts %d", round, c, r,
                              out[(size_t)r * c]);
                break;
            }
        free(in);
        free(out);
    }
}

static void check_suspend(ncclComm_t comm, int rank, int n)
{
    run_colls(comm, rank, n, 0);
    uint64_t held = stat_of(comm, ncclStatGpuMemSuspend);
    BT_TEST_CHECK(held > 0, "no buffers held after collectives");
    BT_TEST_CHECK(stat_of(comm, ncclStatGpuMemTotal) == held, "total != suspendable");
    BT_TEST_CHECK(stat_of(comm, ncclStatGpuMemPersist) == 0, "persistent memory");
    BT_TEST_CHECK(stat_of(comm, ncclStatGpuMemSuspended) == 0, "suspended before the suspend");
    BT_TEST_CHECK(ncclCommResume(comm) == ncclInvalidUsage, "resumed a comm not suspended");
    BT_TEST_CHECK(ncclCommSuspend(comm, 0x10) == ncclInvalidArgument, "unknown flags accepted");

    BT_TEST_OK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    BT_TEST_CHECK(stat_of(comm, ncclStatGpuMemSuspended) == 1, "not suspended");
    BT_TEST_CHECK(stat_of(comm, ncclStatGpuMemTotal) == 0, "%llu bytes held while suspended",
                  (unsigned long long)stat_of(comm, ncclStatGpuMemTotal));
    int32_t x = 1, y = 0;
    BT_TEST_CHECK(ncclAllReduce(&x, &y, 1, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage,
                  "an AllReduce ran on a suspended comm");
    BT_TEST_CHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclInvalidUsage, "suspended twice");
    BT_TEST_OK(ncclCommResume(comm));
    BT_TEST_CHECK(stat_of(comm, ncclStatGpuMemSuspended) == 0, "still suspended");
    for (int round = 1; round <= 5; round++)
        run_colls(comm, rank, n, round);
    uint64_t again = stat_of(comm, ncclStatGpuMemTotal);
    BT_TEST_CHECK(again == held, "after resuming %llu bytes held, %llu before",
                  (unsigned long long)again, (unsigned long long)held);
    if (rank == 0)
        fprintf(stderr, "suspend: %llu bytes held, 0 suspended, %llu after resume\n",
                (unsigned long long)held, (unsigned long long)again);
}

static int rank_main(int rank, int n, void *argp)
{
    const ncclUniqueId *id = argp;
    struct bt_test_leaks leaks;
    ncclComm_t comm;
    bt_test_leaks_begin(&leaks);
    check_params();
    BT_TEST_OK(ncclCommInitRank(&comm, n, *id, rank));
    BT_TEST_CHECK(ncclSignal((rank + 1) % n, 0, 0, 0, comm, NULL) == ncclInvalidUsage,
                  "a signal before any window mapped");
    check_config(comm, rank);
    check_properties(comm, rank, n);
    check_simulate(comm);
    check_one_sided(comm, rank, n, 0);
    check_suspend(comm, rank, n);
    BT_TEST_OK(ncclCommDestroy(comm));
    bt_test_leaks_end(&leaks);
    return 0;
}

/* One-sided calls across hosts: 4 processes, 2 per NCCL_HOSTID, every put over the network
 * link (the same checks as on one host, a malloc window served too), and a large put (1 MB,
 * four of the link's messages). */
static int across_main(int rank, int n, void *argp)
{
    const ncclUniqueId *id = argp;
    struct bt_test_leaks leaks;
    ncclComm_t comm;
    char host[16];
    snprintf(host, sizeof(host), "host%d", rank / 2);
    setenv("NCCL_HOSTID", host, 1);
    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitRank(&comm, n, *id, rank));
    check_one_sided(comm, rank, n, 1);
    size_t count = 1u << 18; /* ints: 1 MB */
    int32_t *win_buf = NULL, *src = malloc(count * sizeof(int32_t));
    ncclWindow_t win = NULL;
    BT_TEST_OK(ncclMemAlloc((void **)&win_buf, count * sizeof(int32_t)));
    BT_TEST_OK(ncclCommWindowRegister(comm, win_buf, count * sizeof(int32_t), &win,
                                      NCCL_WIN_COLL_SYMMETRIC));
    for (size_t i = 0; i < count; i++)
        src[i] = rank * 1000003 + (int32_t)i;
    int to = (rank + 2) % n, from = (rank + n - 2) % n; /* the other host */
    BT_TEST_OK(ncclPutSignal(src, count, ncclInt32, to, win, 0, 0, 0, 0, comm, NULL));
    ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = from};
    BT_TEST_OK(ncclWaitSignal(1, &d, comm, NULL));
    for (size_t i = 0; i < count; i++)
        if (win_buf[i] != from * 1000003 + (int32_t)i) {
            BT_TEST_CHECK(0, "1 MB put from rank %d: [%zu] = %d", from, i, win_buf[i]);
            break;
        }
    int32_t z = 0, zs = 0;
    BT_TEST_OK(ncclAllReduce(&z, &zs, 1, ncclInt32, ncclSum, comm, NULL));
    BT_TEST_OK(ncclCommWindowDeregister(comm, win));
    BT_TEST_OK(ncclMemFree(win_buf));
    free(src);
    BT_TEST_OK(ncclCommDestroy(comm));
    bt_test_leaks_end(&leaks);
    return 0;
}

/* What the grow's processes share (MAP_SHARED, made before they fork). */
struct grow_board {
    ncclUniqueId first, grow;
    int ready; /* rank 0 wrote `grow` */
};

/* Collective number k of the grown comm: the kind and size follow from k alone, the values from
 * k and the ranks; checked exactly. */
static void grown_coll(ncclComm_t c, int rank, int n, int k, int32_t *in, int32_t *out)
{
    size_t count = 1 + (size_t)((k * 2654435761u) % 40000u);
    for (size_t i = 0; i < count; i++)
        in[i] = rank * 1000 + k + (int32_t)(i % 13);
    switch (k % 4) {
    case 0:
        BT_TEST_OK(ncclAllReduce(in, out, count, ncclInt32, ncclSum, c, NULL));
        for (size_t i = 0; i < count; i++)
            if (out[i] != 1000 * n * (n - 1) / 2 + n * (k + (int32_t)(i % 13))) {
                BT_TEST_CHECK(0, "grown AllReduce %d of %zu: [%zu] = %d", k, count, i, out[i]);
                return;
            }
        break;
    case 1:
        BT_TEST_OK(ncclAllGather(in, out, count, ncclInt32, c, NULL));
        for (int r = 0; r < n; r++)
            if (out[(size_t)r * count + count - 1] != r * 1000 + k + (int32_t)((count - 1) % 13)) {
                BT_TEST_CHECK(0, "grown AllGather %d of %zu: block %d wrong", k, count, r);
                return;
            }
        break;
    case 2: {
        int root = k % n;
        BT_TEST_OK(ncclBroadcast(in, out, count, ncclInt32, root, c, NULL));
        if (out[count - 1] != root * 1000 + k + (int32_t)((count - 1) % 13))
            BT_TEST_CHECK(0, "grown Broadcast %d from %d: %d", k, root, out[count - 1]);
        break;
    }
    default: {
        /* ReduceScatter: every rank gives n blocks of `count` */
        for (size_t i = 0; i < count * (size_t)n; i++)
            in[i] = rank + (int32_t)(i % 7);
        BT_TEST_OK(ncclReduceScatter(in, out, count, ncclInt32, ncclSum, c, NULL));
        for (size_t i = 0; i < count; i++) {
            size_t g = (size_t)rank * count + i;
            if (out[i] != n * (n - 1) / 2 + n * (int32_t)(g % 7)) {
                BT_TEST_CHECK(0, "grown ReduceScatter %d of %zu: [%zu] = %d", k, count, i, out[i]);
                return;
            }
        }
    }
    }
}

static int grow_main(int rank, int n, void *argp)
{
    struct grow_board *b = argp;
    struct bt_test_leaks leaks;
    ncclComm_t old = NULL, grown = NULL;
    int first = 3;
    bt_test_leaks_begin(&leaks);
    if (rank < first) {
        BT_TEST_OK(ncclCommInitRank(&old, first, b->first, rank));
        int32_t one = 1, sum = 0;
        BT_TEST_OK(ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, old, NULL));
        ncclComm_t none = NULL;
        BT_TEST_CHECK(ncclCommGrow(old, n, NULL, rank, &none, NULL) == ncclInvalidArgument,
                      "an existing rank passed its rank");
        BT_TEST_CHECK(ncclCommGrow(old, first, NULL, -1, &none, NULL) == ncclInvalidArgument,
                      "a grow to the same size");
        if (rank == 0) {
            ncclUniqueId again;
            BT_TEST_OK(ncclCommGetUniqueId(old, &b->grow));
            BT_TEST_CHECK(ncclCommGetUniqueId(old, &again) == ncclInvalidUsage,
                          "a second id before the grow");
            __atomic_store_n(&b->ready, 1, __ATOMIC_RELEASE);
        }
        BT_TEST_OK(ncclCommGrow(old, n, rank == 0 ? &b->grow : NULL, -1, &grown, NULL));
        if (rank == 0)
            BT_TEST_CHECK(ncclCommGrow(old, n, &b->grow, -1, &none, NULL) == ncclInvalidArgument,
                          "the id used twice");
    } else {
        double t0 = bt_test_now_s();
        while (!__atomic_load_n(&b->ready, __ATOMIC_ACQUIRE) && bt_test_now_s() - t0 < 30)
            usleep(1000);
        BT_TEST_OK(ncclCommGrow(NULL, n, &b->grow, rank, &grown, NULL));
    }
    int cnt = 0, me = -1;
    BT_TEST_OK(ncclCommCount(grown, &cnt));
    BT_TEST_OK(ncclCommUserRank(grown, &me));
    BT_TEST_CHECK(cnt == n && me == rank, "grown: rank %d of %d, want %d of %d", me, cnt, rank, n);
    size_t max = 40000u * (size_t)n;
    int32_t *in = malloc(max * sizeof(int32_t)), *out = malloc(max * sizeof(int32_t));
    for (int k = 0; k < 1000; k++)
        grown_coll(grown, rank, n, k, in, out);
    if (old) { /* the parent still works */
        int32_t v = rank, s = 0;
        BT_TEST_OK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, old, NULL));
        BT_TEST_CHECK(s == 3, "the old comm after the grow: %d", s);
        BT_TEST_OK(ncclCommDestroy(old));
    }
    if (rank == 0)
        fprintf(stderr, "grow: 3 -> %d ranks, 1000 collectives exact\n", n);
    free(in);
    free(out);
    BT_TEST_OK(ncclCommDestroy(grown));
    bt_test_leaks_end(&leaks);
    return 0;
}

/* `test_nccl230 ofi`: the same over the libfabric backend (tcp;ofi_rxm): the one-sided link
 * across hosts runs on it, with no descriptor to sleep on. */
/* The library says the interface it implements whole: 2.30.7 (not its header's 2.28.9). */
static void check_version(void)
{
    int v = 0;
    BT_TEST_OK(ncclGetVersion(&v));
    BT_TEST_CHECK(v == 23007 && v > NCCL_VERSION_CODE, "ncclGetVersion: %d", v);
    const char *s = batonVersionString();
    BT_TEST_CHECK(strstr(s, "NCCL 2.30.7 interface") != NULL, "batonVersionString: %s", s);
}

int main(int argc, char **argv)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    check_version();
    if (argc > 1 && strcmp(argv[1], "ofi") == 0) {
        setenv("BATON_NET", "OFI", 1);
        setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    }
    setenv("NCCL_HANG_REPORT", "300", 1);
    int shm0 = bt_test_shm_count();
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    int rc = bt_test_run_ranks(3, rank_main, &id, 60);
    ncclUniqueId id2;
    BT_TEST_OK(ncclGetUniqueId(&id2));
    rc |= bt_test_run_ranks(4, across_main, &id2, 60);
    struct grow_board *b =
        mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BT_TEST_CHECK(b != MAP_FAILED, "mmap of the grow board");
    memset(b, 0, sizeof(*b));
    BT_TEST_OK(ncclGetUniqueId(&b->first));
    int grc = bt_test_run_ranks(5, grow_main, b, 90);
    munmap(b, sizeof(*b));
    int shm = bt_test_shm_count();
    BT_TEST_CHECK(shm <= shm0, "%d /dev/shm/baton* entries left behind", shm - shm0);
    BT_TEST_CHECK(!rc, "the ranks failed (see above)");
    BT_TEST_CHECK(!grc, "the grow's ranks failed (see above)");
    return 0;
}
