/*
 * ncclCommSplit over rank processes (6 and 3 ranks):
 *   - even/odd colors with key = -rank: sub-communicator sizes, ranks in key order (reversed),
 *     checked through CommCount/UserRank and an AllGather of the parent ranks;
 *   - NCCL_SPLIT_NOCOLOR on some ranks (they get NULL), equal keys (parent order breaks ties),
 *     every rank NOCOLOR, large color values, an explicit config;
 *   - collectives on the sub-communicators (small and 4 MB, both halves at the same time) and
 *     on the parent after the split;
 *   - a split of a split; children that outlive their destroyed parent.
 * All values are exact integers; each process ends with the leak check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

/* AllReduce and AllGather on `c` whose members are the parent ranks `members` (in comm
 * rank order), n of them; this process is parent rank `prank`. */
static void check_comm(ncclComm_t c, const int *members, int n, int prank, const char *what)
{
    int cnt = -1, me = -1;
    BT_TEST_OK(ncclCommCount(c, &cnt));
    BT_TEST_OK(ncclCommUserRank(c, &me));
    BT_TEST_CHECK(cnt == n, "%s: count %d, want %d", what, cnt, n);
    BT_TEST_CHECK(me >= 0 && me < n && members[me] == prank,
                  "%s: parent rank %d got rank %d (member there: %d)", what, prank, me,
                  me >= 0 && me < n ? members[me] : -1);

    int32_t *all = malloc(sizeof(int32_t) * (size_t)n), mine = prank;
    BT_TEST_OK(ncclAllGather(&mine, all, 1, ncclInt32, c, NULL));
    for (int k = 0; k < n; k++)
        BT_TEST_CHECK(all[k] == members[k], "%s: AllGather[%d] = %d, want parent rank %d", what, k,
                      all[k], members[k]);
    free(all);

    size_t big = 1u << 20;
    int32_t *v = malloc(big * 4), *w = malloc(big * 4);
    for (size_t i = 0; i < big; i++)
        v[i] = prank * 7 + (int32_t)(i & 0xffff);
    BT_TEST_OK(ncclAllReduce(v, w, big, ncclInt32, ncclSum, c, NULL));
    int32_t psum = 0;
    for (int k = 0; k < n; k++)
        psum += members[k] * 7;
    for (size_t i = 0; i < big; i++)
        if (w[i] != psum + n * (int32_t)(i & 0xffff))
            BT_TEST_CHECK(0, "%s: AllReduce[%zu] = %d, want %d", what, i, w[i],
                          psum + n * (int32_t)(i & 0xffff));
    /* Broadcast from the last rank, small. */
    int32_t b[5] = {me, me, me, me, me};
    BT_TEST_OK(ncclBcast(b, 5, ncclInt32, n - 1, c, NULL));
    for (int k = 0; k < 5; k++)
        BT_TEST_CHECK(b[k] == n - 1, "%s: Bcast = %d", what, b[k]);
    free(v);
    free(w);
}

static int rank_main(int rank, int n, void *argp)
{
    const ncclUniqueId *id = argp;
    struct bt_test_leaks leaks;
    ncclComm_t parent, eo = NULL, mid = NULL, same = NULL, none = (ncclComm_t)0x1;
    ncclComm_t nested = NULL, cfgc = NULL;
    int members[64], m;

    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitRank(&parent, n, *id, rank));
    for (int k = 0; k < n; k++)
        members[k] = k;
    check_comm(parent, members, n, rank, "parent");

    /* Even/odd, key = -rank: the largest parent rank of each color becomes rank 0. */
    BT_TEST_OK(ncclCommSplit(parent, rank % 2, -rank, &eo, NULL));
    BT_TEST_CHECK(eo != NULL, "even/odd split gave NULL");
    m = 0;
    for (int k = n - 1; k >= 0; k--)
        if (k % 2 == rank % 2)
            members[m++] = k;
    check_comm(eo, members, m, rank, "even/odd split");

    /* The parent after the split. */
    for (int k = 0; k < n; k++)
        members[k] = k;
    check_comm(parent, members, n, rank, "parent after split");

    /* One color, an explicit config. */
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 1;
    cfg.minCTAs = 1;
    cfg.maxCTAs = 2;
    cfg.commName = "split-with-config";
    BT_TEST_OK(ncclCommSplit(parent, 0, n - rank, &cfgc, &cfg));
    m = 0;
    for (int k = n - 1; k >= 0; k--)
        members[m++] = k;
    check_comm(cfgc, members, m, rank, "config split");

    /* Same color, same key everywhere: the parent order. */
    BT_TEST_OK(ncclCommSplit(parent, 3, 5, &same, NULL));
    for (int k = 0; k < n; k++)
        members[k] = k;
    check_comm(same, members, n, rank, "same-key split");

    /* A split of the even/odd split: by its rank's parity, key = parent rank. */
    int eo_rank = -1, eo_n = -1;
    BT_TEST_OK(ncclCommUserRank(eo, &eo_rank));
    BT_TEST_OK(ncclCommCount(eo, &eo_n));
    BT_TEST_OK(ncclCommSplit(eo, eo_rank % 2, rank, &nested, NULL));
    {
        int eo_members[64], em = 0;
        for (int k = n - 1; k >= 0; k--)
            if (k % 2 == rank % 2)
                eo_members[em++] = k;
        m = 0;
        for (int k = 0; k < em; k++)
            if (k % 2 == eo_rank % 2)
                members[m++] = eo_members[k];
        /* key = parent rank: ascending parent ranks */
        for (int a = 0; a < m; a++)
            for (int b = a + 1; b < m; b++)
                if (members[b] < members[a]) {
                    int t = members[a];
                    members[a] = members[b];
                    members[b] = t;
                }
        check_comm(nested, members, m, rank, "nested split");
    }

    /* NOCOLOR on the first and last rank; the others share a large color and key 0, so the
     * parent order decides. */
    int nocolor = rank == 0 || rank == n - 1;
    BT_TEST_OK(ncclCommSplit(parent, nocolor ? NCCL_SPLIT_NOCOLOR : 1000000, 0, &mid, NULL));
    if (nocolor) {
        BT_TEST_CHECK(mid == NULL, "NOCOLOR rank %d got a communicator", rank);
    } else {
        BT_TEST_CHECK(mid != NULL, "rank %d got no communicator", rank);
        m = 0;
        for (int k = 1; k < n - 1; k++)
            members[m++] = k;
        check_comm(mid, members, m, rank, "NOCOLOR split");
    }

    /* Every rank NOCOLOR: every rank gets NULL. */
    BT_TEST_OK(ncclCommSplit(parent, NCCL_SPLIT_NOCOLOR, rank, &none, NULL));
    BT_TEST_CHECK(none == NULL, "all-NOCOLOR split gave %p", (void *)none);

    /* A split after the NOCOLOR splits above: every rank must still agree on the parent's
     * split state (a NOCOLOR rank took part in those splits too). */
    ncclComm_t after = NULL;
    BT_TEST_OK(ncclCommSplit(parent, 0, 0, &after, NULL));
    for (int k = 0; k < n; k++)
        members[k] = k;
    check_comm(after, members, n, rank, "split after a NOCOLOR split");
    BT_TEST_OK(ncclCommDestroy(after));

    /* Children outlive the parent. */
    BT_TEST_OK(ncclCommDestroy(parent));
    m = 0;
    for (int k = n - 1; k >= 0; k--)
        if (k % 2 == rank % 2)
            members[m++] = k;
    check_comm(eo, members, m, rank, "even/odd split after the parent was destroyed");

    BT_TEST_OK(ncclCommDestroy(nested));
    BT_TEST_OK(ncclCommDestroy(same));
    BT_TEST_OK(ncclCommDestroy(cfgc));
    if (mid)
        BT_TEST_OK(ncclCommDestroy(mid));
    BT_TEST_OK(ncclCommDestroy(eo));
    bt_test_leaks_end(&leaks);
    return 0;
}

int main(void)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    int shm0 = bt_test_shm_count();
    static const int ranks[] = {6, 3, 1};
    int failed = 0;
    for (int k = 0; k < 3; k++) {
        ncclUniqueId id;
        BT_TEST_OK(ncclGetUniqueId(&id));
        /* A normal run takes about a second; a hung split would wait BATON_TIMEOUT (60 s
         * under ctest) per rank count, so the launcher gives up sooner, within ctest's 120. */
        int rc = bt_test_run_ranks(ranks[k], rank_main, &id, 40);
        fprintf(stderr, "split: %d ranks %s\n", ranks[k], rc ? "FAILED" : "ok");
        failed |= rc;
    }
    int shm = bt_test_shm_count();
    BT_TEST_CHECK(shm <= shm0, "%d /dev/shm/baton* entries left behind", shm - shm0);
    BT_TEST_CHECK(!failed, "split tests failed (see above)");
    return 0;
}
