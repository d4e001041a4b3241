/*
 * The device API's host side that needs no device communicator, on host memory, ranks as
 * processes:
 *   - teams: 6 ranks as 3 hosts of 2 (NCCL_HOSTID per rank / 2): the world {6, rank, 1}, the
 *     LSA team {2, rank % 2, 1}, the rail {3, rank / 2, 2}; ncclTeamRankToWorld and
 *     ncclTeamRankToLsa over every member of each (NCCL's formulas: a rail member is outside
 *     the LSA team); ncclGetLsaDevicePointer's LSA ranks are the same team (4 ranks on one
 *     host: every member's window read through it); the window's handle is NCCL's
 *     ncclWindow_vidmem (this rank, its own part); a handle that is no window refused;
 *   - a layout the device API cannot number (hosts of 3 and 1 ranks, and a host whose ranks
 *     are not consecutive): every rank its own LSA team, the rail the world;
 *   - ncclDevCommCreate on a host communicator refused (it needs GPU memory), bad arguments;
 *   - the requirement builders: the buffer each asks for (sizes the device code addresses),
 *     its out-handles wired to the handle, ncclLLA2ACalcSlots; NULL handles, NULL
 *     requirements and negative counts refused with ncclInvalidArgument; a dead comm's teams
 *     empty.
 * Each process ends with the leak check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"
#include "nccl_device/layout.h"

struct layout {
    ncclUniqueId id;
    int host[8]; /* rank -> host number */
    int lsa[8];  /* rank -> the LSA team's size expected */
};

static void check_team(ncclTeam_t t, int n, int r, int s, const char *what)
{
    BT_TEST_CHECK(t.nRanks == n && t.rank == r && t.stride == s,
                  "%s is {%d, %d, %d}, not {%d, %d, %d}", what, t.nRanks, t.rank, t.stride, n, r,
                  s);
}

static int teams_main(int rank, int n, void *argp)
{
    const struct layout *l = argp;
    struct bt_test_leaks leaks;
    char host[16];
    snprintf(host, sizeof(host), "host%d", l->host[rank]);
    setenv("NCCL_HOSTID", host, 1);
    bt_test_leaks_begin(&leaks);
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, n, l->id, rank));
    int lsa = l->lsa[rank];
    ncclTeam_t world = ncclTeamWorld(comm), team = ncclTeamLsa(comm), rail = ncclTeamRail(comm);
    check_team(world, n, rank, 1, "ncclTeamWorld");
    check_team(team, lsa, rank % lsa, 1, "ncclTeamLsa");
    check_team(rail, n / lsa, rank / lsa, lsa, "ncclTeamRail");
    for (int i = 0; i < world.nRanks; i++) {
        BT_TEST_CHECK(ncclTeamRankToWorld(comm, world, i) == i, "world member %d", i);
        int want = i / lsa == rank / lsa ? i % lsa : rank % lsa + i - rank;
        BT_TEST_CHECK(ncclTeamRankToLsa(comm, world, i) == want,
                      "world member %d as LSA rank: %d, not %d", i,
                      ncclTeamRankToLsa(comm, world, i), want);
    }
    for (int i = 0; i < team.nRanks; i++) {
        BT_TEST_CHECK(ncclTeamRankToWorld(comm, team, i) == rank - rank % lsa + i,
                      "LSA member %d as a world rank: %d", i, ncclTeamRankToWorld(comm, team, i));
        BT_TEST_CHECK(ncclTeamRankToLsa(comm, team, i) == i, "LSA member %d", i);
    }
    for (int i = 0; i < rail.nRanks; i++)
        BT_TEST_CHECK(ncclTeamRankToWorld(comm, rail, i) == rank % lsa + i * lsa,
                      "rail member %d as a world rank: %d", i, ncclTeamRankToWorld(comm, rail, i));

    /* ncclGetLsaDevicePointer numbers the same team (a symmetric window maps within it) */
    size_t bytes = 4096;
    char *buf = NULL;
    ncclWindow_t win = NULL;
    BT_TEST_OK(ncclMemAlloc((void **)&buf, bytes));
    BT_TEST_OK(ncclCommWindowRegister(comm, buf, bytes, &win, NCCL_WIN_COLL_SYMMETRIC));
    memset(buf, rank + 1, bytes);
    BT_TEST_OK(ncclAllReduce(buf, buf, 1, ncclInt8, ncclMax, comm, NULL)); /* all written */
    /* (windows map only where every rank is on one host, so far: elsewhere only this rank's
     * own part has an address here) */
    int one_host = lsa == n;
    for (int i = 0; i < lsa; i++) {
        char *p = NULL;
        ncclResult_t r = ncclGetLsaDevicePointer(win, 64, i, (void **)&p);
        if (!one_host && i != rank % lsa) {
            BT_TEST_CHECK(r == ncclInvalidArgument, "LSA rank %d of another process: %d", i,
                          (int)r);
            continue;
        }
        BT_TEST_CHECK(r == ncclSuccess, "ncclGetLsaDevicePointer(LSA rank %d): %d", i, (int)r);
        BT_TEST_CHECK(p[0] == (char)(rank - rank % lsa + i + 1),
                      "LSA rank %d's window holds %d, not world rank %d's", i, p[0],
                      rank - rank % lsa + i);
    }
    void *p = NULL;
    BT_TEST_CHECK(ncclGetLsaDevicePointer(win, 0, lsa, &p) == ncclInvalidArgument,
                  "LSA rank %d (past the team) was not refused", lsa);
    /* the handle is the window as the device API reads it (host memory: host-readable) */
    const struct ncclWindow_vidmem *v = (const struct ncclWindow_vidmem *)win;
    BT_TEST_CHECK(v->worldRank == rank && v->winHost != NULL && v->mcOffset4K == 0,
                  "the window handle says world rank %d", v->worldRank);
    BT_TEST_CHECK(v->lsaFlatBase + ((uint64_t)v->lsaRank * v->stride4G << 32) == buf,
                  "the handle's own part is at %p, not %p",
                  (void *)(v->lsaFlatBase + ((uint64_t)v->lsaRank * v->stride4G << 32)),
                  (void *)buf);
    int bogus = 0;
    BT_TEST_CHECK(ncclCommWindowDeregister(comm, (ncclWindow_t)&bogus) == ncclInvalidArgument,
                  "a handle that is no window was deregistered");
    BT_TEST_OK(ncclCommWindowDeregister(comm, win));
    BT_TEST_OK(ncclMemFree(buf));
    BT_TEST_OK(ncclCommDestroy(comm));
    check_team(ncclTeamWorld(comm), 0, 0, 0, "a destroyed comm's world");
    BT_TEST_CHECK(ncclTeamRankToWorld(comm, world, 0) == -1, "a destroyed comm's rank");
    bt_test_leaks_end(&leaks);
    return 0;
}

static void check_builders(void)
{
    ncclTeam_t t = {4, 1, 1};
    ncclLsaBarrierHandle_t lb;
    ncclGinBarrierHandle_t gb;
    ncclLLA2AHandle_t ah;
    ncclDevResourceRequirements_t q;

    memset(&q, 0x5a, sizeof(q));
    BT_TEST_OK(ncclLsaBarrierCreateRequirement(t, 5, &lb, &q));
    /* per barrier: epochs, multicast inbox and one inbox word per team rank (uint32) */
    BT_TEST_CHECK(q.bufferSize == 4 * 5 * (3 + 4), "LSA barrier buffer of %zu bytes", q.bufferSize);
    BT_TEST_CHECK(lb.nBarriers == 5 && q.outBufferHandle == &lb.bufHandle && q.next == NULL &&
                      q.ginSignalCount == 0 && q.ginCounterCount == 0 &&
                      q.outGinSignalStart == NULL && q.outGinCounterStart == NULL,
                  "LSA barrier requirement not wired to its handle");

    memset(&q, 0x5a, sizeof(q));
    BT_TEST_CHECK(ncclGinBarrierCreateRequirement(NULL, t, 3, &gb, &q) == ncclInvalidArgument,
                  "a GIN barrier for a NULL comm was not refused");

    BT_TEST_CHECK(ncclLLA2ACalcSlots(10, 8) == 10 && ncclLLA2ACalcSlots(10, 9) == 20 &&
                      ncclLLA2ACalcSlots(3, 16) == 6 && ncclLLA2ACalcSlots(0, 8) == 0,
                  "ncclLLA2ACalcSlots: %d %d %d", ncclLLA2ACalcSlots(10, 8),
                  ncclLLA2ACalcSlots(10, 9), ncclLLA2ACalcSlots(3, 16));
    memset(&q, 0x5a, sizeof(q));
    BT_TEST_OK(ncclLLA2ACreateRequirement(6, 20, &ah, &q));
    /* per block: a 16-byte header line and two sets of slots */
    BT_TEST_CHECK(q.bufferSize == 16 * 6 * (1 + 2 * 20), "LL all-to-all buffer of %zu bytes",
                  q.bufferSize);
    BT_TEST_CHECK(ah.nSlots == 20 && q.outBufferHandle == &ah.bufHandle && q.bufferAlign >= 16,
                  "LL all-to-all requirement not wired to its handle");

    /* misuse */
    BT_TEST_CHECK(ncclLsaBarrierCreateRequirement(t, -1, &lb, &q) == ncclInvalidArgument,
                  "nBarriers -1 accepted");
    BT_TEST_CHECK(ncclLsaBarrierCreateRequirement(t, 1, NULL, &q) == ncclInvalidArgument,
                  "a NULL outHandle accepted");
    BT_TEST_CHECK(ncclLsaBarrierCreateRequirement(t, 1, &lb, NULL) == ncclInvalidArgument,
                  "a NULL outReq accepted");
    ncclTeam_t empty = {0, 0, 0};
    BT_TEST_CHECK(ncclLsaBarrierCreateRequirement(empty, 1, &lb, &q) == ncclInvalidArgument,
                  "an empty team accepted");
    BT_TEST_CHECK(ncclLLA2ACreateRequirement(-2, 4, &ah, &q) == ncclInvalidArgument,
                  "nBlocks -2 accepted");
    BT_TEST_CHECK(ncclLLA2ACreateRequirement(2, -4, &ah, &q) == ncclInvalidArgument,
                  "nSlots -4 accepted");
}

/* The GIN barrier's builder with a live comm (one rank). */
static int gin_main(int rank, int n, void *argp)
{
    const ncclUniqueId *id = argp;
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, n, *id, rank));
    ncclGinBarrierHandle_t gb;
    ncclDevResourceRequirements_t q;
    memset(&q, 0x5a, sizeof(q));
    BT_TEST_OK(ncclGinBarrierCreateRequirement(comm, ncclTeamRail(comm), 3, &gb, &q));
    /* per barrier: an epoch word per GIN context, and a signal per barrier and team rank (one
     * rank here) */
    BT_TEST_CHECK(q.bufferSize == 4 * 3 * 4 && q.ginSignalCount == 3 &&
                      q.outGinSignalStart == &gb.signal0 && q.outBufferHandle == &gb.bufHandle &&
                      q.ginCounterCount == 0 && q.next == NULL,
                  "GIN barrier requirement: %zu bytes, %d signals", q.bufferSize, q.ginSignalCount);
    /* device communicators need GPU memory: a host comm's is refused, and so are bad calls */
    ncclDevCommRequirements_t reqs;
    memset(&reqs, 0, sizeof(reqs));
    reqs.lsaBarrierCount = 1;
    ncclDevComm_t dc;
    BT_TEST_CHECK(ncclDevCommCreate(comm, &reqs, &dc) == ncclInvalidUsage,
                  "a host communicator's device communicator was not refused");
    BT_TEST_CHECK(ncclDevCommCreate(comm, NULL, &dc) == ncclInvalidArgument, "NULL reqs accepted");
    BT_TEST_CHECK(ncclDevCommCreate(comm, &reqs, NULL) == ncclInvalidArgument,
                  "NULL outDevComm accepted");
    /* requirements as NCCL 2.30's headers lay them out ({size, magic, version} first) are
     * read as 2.30's (core/devcomm_abi.h; unit/test_devcomm_abi has the rules): an LSA-only
     * one reaches the host-memory refusal, a world barrier without GIN is 2.30's caller
     * error, a newer release is refused by name */
    struct {
        size_t size;
        unsigned magic, version;
        char rest[256];
    } newer;
    memset(&newer, 0, sizeof(newer));
    newer.size = 96; /* 2.30.7's sizeof */
    newer.magic = 0xcafebeefu;
    newer.version = 23007;
    BT_TEST_CHECK(ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)(void *)&newer, &dc) ==
                      ncclInvalidUsage,
                  "2.30's requirements on a host communicator not refused");
    int barrier_count = 1; /* its barrierCount: byte 36 (header, two lists, a bool) */
    memcpy(newer.rest + 20, &barrier_count, sizeof(barrier_count));
    BT_TEST_CHECK(ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)(void *)&newer, &dc) ==
                      ncclInvalidArgument,
                  "2.30's barrierCount without GIN not refused as the caller's error");
    newer.version = 23200;
    BT_TEST_CHECK(ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)(void *)&newer, &dc) ==
                      ncclInvalidUsage,
                  "2.32's requirements not refused");
    memset(&dc, 0, sizeof(dc));
    BT_TEST_CHECK(ncclDevCommDestroy(comm, &dc) == ncclInvalidArgument,
                  "a device communicator that was never made was destroyed");
    BT_TEST_OK(ncclCommDestroy(comm));
    bt_test_leaks_end(&leaks);
    return 0;
}

int main(void)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    check_builders();
    int rc = 0;
    /* 3 hosts of 2 */
    struct layout a = {.host = {0, 0, 1, 1, 2, 2}, .lsa = {2, 2, 2, 2, 2, 2}};
    BT_TEST_OK(ncclGetUniqueId(&a.id));
    rc |= bt_test_run_ranks(6, teams_main, &a, 60);
    /* one host */
    struct layout o = {.host = {0, 0, 0, 0}, .lsa = {4, 4, 4, 4}};
    BT_TEST_OK(ncclGetUniqueId(&o.id));
    rc |= bt_test_run_ranks(4, teams_main, &o, 60);
    /* hosts of 3 and 1: no common LSA size */
    struct layout b = {.host = {0, 0, 0, 1}, .lsa = {1, 1, 1, 1}};
    BT_TEST_OK(ncclGetUniqueId(&b.id));
    rc |= bt_test_run_ranks(4, teams_main, &b, 60);
    /* a host whose ranks are not consecutive */
    struct layout c = {.host = {0, 1, 0, 1}, .lsa = {1, 1, 1, 1}};
    BT_TEST_OK(ncclGetUniqueId(&c.id));
    rc |= bt_test_run_ranks(4, teams_main, &c, 60);
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    rc |= bt_test_run_ranks(1, gin_main, &id, 60);
    BT_TEST_CHECK(!rc, "the ranks failed (see above)");
    printf("test_devapi_host: ok\n");
    return 0;
}
