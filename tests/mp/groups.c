/*
 * Group semantics over rank processes and with several ranks in one process:
 *   - one group mixing AllReduce, AllGather, Broadcast, ring Send/Recv and self Send/Recv;
 *   - nested GroupStart/End, with sends larger than the FIFOs in an inner group and the
 *     matching receives in the outer one (the inner End must not run them, or it deadlocks);
 *   - many Send/Recv in one group: three messages per ordered pair of ranks, self included,
 *     one of them 0 elements with NULL buffers, posted in different orders on the two sides
 *     (messages between one pair match in order); empty groups and all-0-count groups;
 *   - several collectives of one comm in one group (they run in issue order);
 *   - PreMulSum in a group: a HostImmediate op destroyed before ncclGroupEnd still applies
 *     its scalar; a Device scalar changed after the enqueue is read when the group runs;
 *   - one thread, several ranks: ncclCommInitRank for 2 and 3 ranks inside one group, then
 *     collectives and a Send/Recv ring on all of them inside groups (as nccl-tests -g does);
 *     2 processes x 2 ranks each in one 4-rank comm; ncclCommInitAll.
 * Every value is an exact integer and is checked; each process ends with the leak check.
 * One executable, one suite per tuning (the table at the end, one ctest test mp/<name> each):
 * `mp_groups NAME` runs suite NAME; no argument or an unknown name lists them and exits 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define BIG (1u << 20) /* floats: 4 MB, more than every FIFO */

struct grp_arg {
    ncclUniqueId id, id2, id3;
};

static float fval(int rank, size_t i)
{
    return (float)((rank + 1) * 3 + (int)(i % 1000));
}

/* ---- rank processes ------------------------------------------------------------------ */

static void mixed_group(ncclComm_t c, int r, int n)
{
    size_t nar = 1000, nag = 77, np = 5000, nself = 33, nb = 10;
    float *ar_in = malloc(nar * 4), *ar_out = malloc(nar * 4);
    int32_t *ag_in = malloc(nag * 4), *ag_out = malloc(nag * 4 * (size_t)n);
    uint8_t *p_in = malloc(np), *p_out = malloc(np);
    int64_t self_in[33], self_out[33];
    double b[10];
    int root = 1 % n, next = (r + 1) % n, prev = (r + n - 1) % n;
    for (size_t i = 0; i < nar; i++)
        ar_in[i] = fval(r, i);
    for (size_t i = 0; i < nag; i++)
        ag_in[i] = r * 1000 + (int32_t)i;
    for (size_t i = 0; i < np; i++)
        p_in[i] = (uint8_t)(r * 31 + i);
    for (size_t i = 0; i < nself; i++)
        self_in[i] = -(int64_t)i * r;
    for (size_t i = 0; i < nb; i++)
        b[i] = r == root ? 0.5 * (double)i : -1;

    /* Sends to one peer match its receives in order; with 1 rank the ring is self too, so
     * the self pair comes first on both sides. */
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclSend(self_in, nself, ncclInt64, r, c, NULL));
    BT_TEST_OK(ncclAllReduce(ar_in, ar_out, nar, ncclFloat, ncclSum, c, NULL));
    BT_TEST_OK(ncclRecv(self_out, nself, ncclInt64, r, c, NULL));
    BT_TEST_OK(ncclAllGather(ag_in, ag_out, nag, ncclInt32, c, NULL));
    BT_TEST_OK(ncclRecv(p_out, np, ncclUint8, prev, c, NULL));
    BT_TEST_OK(ncclSend(p_in, np, ncclUint8, next, c, NULL));
    BT_TEST_OK(ncclBcast(b, nb, ncclDouble, root, c, NULL));
    BT_TEST_OK(ncclGroupEnd());

    for (size_t i = 0; i < nar; i++) {
        float want = 0;
        for (int k = 0; k < n; k++)
            want += fval(k, i);
        BT_TEST_CHECK(ar_out[i] == want, "mixed group AllReduce [%zu] = %g, want %g", i, ar_out[i],
                      want);
    }
    for (size_t i = 0; i < nag * (size_t)n; i++)
        BT_TEST_CHECK(ag_out[i] == (int32_t)(i / nag) * 1000 + (int32_t)(i % nag),
                      "mixed group AllGather [%zu] = %d", i, ag_out[i]);
    for (size_t i = 0; i < np; i++)
        BT_TEST_CHECK(p_out[i] == (uint8_t)(prev * 31 + i), "mixed group Recv [%zu] = %d", i,
                      p_out[i]);
    for (size_t i = 0; i < nself; i++)
        BT_TEST_CHECK(self_out[i] == self_in[i], "mixed group self Recv [%zu]", i);
    for (size_t i = 0; i < nb; i++)
        BT_TEST_CHECK(b[i] == 0.5 * (double)i, "mixed group Bcast [%zu] = %g", i, b[i]);
    free(ar_in), free(ar_out), free(ag_in), free(ag_out), free(p_in), free(p_out);
}

static void nested_groups(ncclComm_t c, int r, int n)
{
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    float *s = malloc(BIG * 4), *d = malloc(BIG * 4);
    int32_t a = r + 1, sum = -1, cnt = 0;
    for (size_t i = 0; i < BIG; i++)
        s[i] = fval(r, i), d[i] = -1;

    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclSend(s, BIG, ncclFloat, next, c, NULL));
    BT_TEST_OK(ncclGroupEnd()); /* inner: nothing may run yet */
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclAllReduce(&a, &sum, 1, ncclInt32, ncclSum, c, NULL));
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_CHECK(sum == -1, "an AllReduce in a nested group ran before the outer ncclGroupEnd");
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_OK(ncclRecv(d, BIG, ncclFloat, prev, c, NULL));
    BT_TEST_OK(ncclGroupEnd());

    BT_TEST_CHECK(sum == n * (n + 1) / 2, "nested AllReduce = %d", sum);
    for (size_t i = 0; i < BIG; i++)
        if (d[i] != fval(prev, i))
            BT_TEST_CHECK(0, "nested Recv [%zu] = %g, want %g", i, d[i], fval(prev, i));
    (void)cnt;
    free(s), free(d);
}

/* Three messages per ordered pair (self included): 0 elements (NULL), a small int32 one and
 * a uint8 one; sends posted by ascending peer, receives by descending peer. */
static void many_p2p(ncclComm_t c, int r, int n)
{
    int32_t **si = calloc((size_t)n, sizeof(*si)), **ri = calloc((size_t)n, sizeof(*ri));
    uint8_t **sb = calloc((size_t)n, sizeof(*sb)), **rb = calloc((size_t)n, sizeof(*rb));
#define NI(from, to) (size_t)(1 + 13 * (to) + (from))
#define NB(from, to) (size_t)(3000 + 7 * (from) + 1111 * (to))
    for (int p = 0; p < n; p++) {
        si[p] = malloc(NI(r, p) * 4), ri[p] = malloc(NI(p, r) * 4);
        sb[p] = malloc(NB(r, p)), rb[p] = malloc(NB(p, r));
        for (size_t i = 0; i < NI(r, p); i++)
            si[p][i] = r * 100000 + p * 1000 + (int32_t)i;
        for (size_t i = 0; i < NB(r, p); i++)
            sb[p][i] = (uint8_t)(r + 3 * p + i);
        memset(ri[p], 0xff, NI(p, r) * 4);
        memset(rb[p], 0xff, NB(p, r));
    }
    BT_TEST_OK(ncclGroupStart());
    for (int p = 0; p < n; p++) {
        BT_TEST_OK(ncclSend(NULL, 0, ncclFloat, p, c, NULL));
        BT_TEST_OK(ncclSend(si[p], NI(r, p), ncclInt32, p, c, NULL));
        BT_TEST_OK(ncclSend(sb[p], NB(r, p), ncclUint8, p, c, NULL));
    }
    for (int p = n - 1; p >= 0; p--) {
        BT_TEST_OK(ncclRecv(NULL, 0, ncclFloat, p, c, NULL));
        BT_TEST_OK(ncclRecv(ri[p], NI(p, r), ncclInt32, p, c, NULL));
        BT_TEST_OK(ncclRecv(rb[p], NB(p, r), ncclUint8, p, c, NULL));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int p = 0; p < n; p++) {
        for (size_t i = 0; i < NI(p, r); i++)
            BT_TEST_CHECK(ri[p][i] == p * 100000 + r * 1000 + (int32_t)i,
                          "many p2p: int32 from %d [%zu] = %d", p, i, ri[p][i]);
        for (size_t i = 0; i < NB(p, r); i++)
            BT_TEST_CHECK(rb[p][i] == (uint8_t)(p + 3 * r + i), "many p2p: uint8 from %d [%zu]", p,
                          i);
        free(si[p]), free(ri[p]), free(sb[p]), free(rb[p]);
    }
#undef NI
#undef NB
    free(si), free(ri), free(sb), free(rb);

    /* Empty group; a group of only 0-count operations. */
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_OK(ncclGroupStart());
    for (int p = 0; p < n; p++) {
        BT_TEST_OK(ncclSend(NULL, 0, ncclInt8, p, c, NULL));
        BT_TEST_OK(ncclRecv(NULL, 0, ncclInt8, (r + p) % n, c, NULL));
    }
    BT_TEST_OK(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, c, NULL));
    BT_TEST_OK(ncclAllGather(NULL, NULL, 0, ncclFloat, c, NULL));
    BT_TEST_OK(ncclGroupEnd());
}

/*
 * Several collectives of one comm in one group, each reading what the one before wrote, all
 * with the same count and type (so any implementation splits them across channels the same
 * way): they must run in issue order, as on a stream. Returns the number of wrong elements
 * (reported, not fatal, so the other group tests still run).
 */
static int ordered_colls(ncclComm_t c, int r, int n)
{
    enum { N = 4096 };
    int32_t v[N], w[N];
    int bad = 0;
    for (int i = 0; i < N; i++)
        v[i] = r + i, w[i] = -7;
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclAllReduce(v, v, N, ncclInt32, ncclSum, c, NULL)); /* v = S */
    BT_TEST_OK(ncclAllReduce(v, w, N, ncclInt32, ncclMax, c, NULL)); /* w = max(S) = S */
    BT_TEST_OK(ncclAllReduce(w, w, N, ncclInt32, ncclSum, c, NULL)); /* w = n S */
    BT_TEST_OK(ncclGroupEnd());
    for (int i = 0; i < N; i++) {
        int32_t sum = n * (n - 1) / 2 + n * i;
        if ((v[i] != sum || w[i] != n * sum) && bad++ < 3)
            fprintf(stderr,
                    "FAIL rank %d/%d: dependent AllReduces in one group ran out of order: "
                    "v[%d] = %d (want %d), w[%d] = %d (want %d)\n",
                    r, n, i, v[i], sum, i, w[i], n * sum);
    }
    return bad;
}

static void premulsum_in_group(ncclComm_t c, int r, int n)
{
    float in[300], out_imm[300], out_dev[300];
    float s_imm = 2.0f, s_dev = 8.0f;
    ncclRedOp_t op_imm, op_dev;
    for (int i = 0; i < 300; i++)
        in[i] = (float)(r + i);
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclRedOpCreatePreMulSum(&op_imm, &s_imm, ncclFloat, ncclScalarHostImmediate, c));
    BT_TEST_OK(ncclRedOpCreatePreMulSum(&op_dev, &s_dev, ncclFloat, ncclScalarDevice, c));
    BT_TEST_OK(ncclAllReduce(in, out_imm, 300, ncclFloat, op_imm, c, NULL));
    BT_TEST_OK(ncclAllReduce(in, out_dev, 300, ncclFloat, op_dev, c, NULL));
    /* Destroyed before the group runs: the enqueued AllReduce keeps the scalar 2. */
    BT_TEST_OK(ncclRedOpDestroy(op_imm, c));
    s_imm = 100.0f;
    /* Device residence: the value at the time the collective runs (ncclGroupEnd). */
    s_dev = 0.5f;
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_OK(ncclRedOpDestroy(op_dev, c));
    for (int i = 0; i < 300; i++) {
        float sum = (float)(n * (n - 1) / 2 + n * i);
        BT_TEST_CHECK(out_imm[i] == 2.0f * sum,
                      "PreMulSum op destroyed in the group: [%d] = %g, "
                      "want %g",
                      i, out_imm[i], 2.0f * sum);
        BT_TEST_CHECK(out_dev[i] == 0.5f * sum,
                      "PreMulSum device scalar changed in the group: "
                      "[%d] = %g, want %g",
                      i, out_dev[i], 0.5f * sum);
    }
}

static int rank_main(int rank, int nranks, void *argp)
{
    const struct grp_arg *arg = argp;
    struct bt_test_leaks leaks;
    ncclComm_t c;
    int bad = 0;
    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitRank(&c, nranks, arg->id, rank));
    for (int rep = 0; rep < 2; rep++) {
        mixed_group(c, rank, nranks);
        nested_groups(c, rank, nranks);
        many_p2p(c, rank, nranks);
        bad += ordered_colls(c, rank, nranks);
        premulsum_in_group(c, rank, nranks);
    }
    BT_TEST_OK(ncclCommDestroy(c));
    bt_test_leaks_end(&leaks);
    return bad ? 1 : 0;
}

/* ---- several ranks in one thread ---------------------------------------------------- */

/* Collectives on `nlocal` local comms (global ranks first..first+nlocal-1 of n), each call
 * issued for every local rank inside one group. */
static void local_colls(ncclComm_t *comms, int nlocal, int first, int n)
{
    size_t cnt = 300001; /* several steps of every protocol */
    float **in = calloc((size_t)nlocal, sizeof(*in)), **out = calloc((size_t)nlocal, sizeof(*out));
    float **ag = calloc((size_t)nlocal, sizeof(*ag));
    for (int l = 0; l < nlocal; l++) {
        in[l] = malloc(cnt * 4), out[l] = malloc(cnt * 4);
        ag[l] = malloc(cnt * 4 * (size_t)n);
        for (size_t i = 0; i < cnt; i++)
            in[l][i] = fval(first + l, i);
    }
    for (int l = 0; l < nlocal; l++) {
        int rk = -1, ct = -1;
        BT_TEST_OK(ncclCommUserRank(comms[l], &rk));
        BT_TEST_OK(ncclCommCount(comms[l], &ct));
        BT_TEST_CHECK(rk == first + l && ct == n, "local comm %d: rank %d of %d", l, rk, ct);
    }

    BT_TEST_OK(ncclGroupStart());
    for (int l = 0; l < nlocal; l++)
        BT_TEST_OK(ncclAllReduce(in[l], out[l], cnt, ncclFloat, ncclSum, comms[l], NULL));
    BT_TEST_OK(ncclGroupEnd());
    for (int l = 0; l < nlocal; l++)
        for (size_t i = 0; i < cnt; i++) {
            float want = 0;
            for (int k = 0; k < n; k++)
                want += fval(k, i);
            if (out[l][i] != want)
                BT_TEST_CHECK(0, "local AllReduce comm %d [%zu] = %g, want %g", l, i, out[l][i],
                              want);
        }

    BT_TEST_OK(ncclGroupStart());
    for (int l = 0; l < nlocal; l++)
        BT_TEST_OK(ncclAllGather(in[l], ag[l], cnt, ncclFloat, comms[l], NULL));
    BT_TEST_OK(ncclGroupEnd());
    for (int l = 0; l < nlocal; l++)
        for (size_t i = 0; i < cnt * (size_t)n; i++)
            if (ag[l][i] != fval((int)(i / cnt), i % cnt))
                BT_TEST_CHECK(0, "local AllGather comm %d [%zu] = %g", l, i, ag[l][i]);

    /* Ring Send/Recv among all ranks, and a small Bcast and Reduce, in one group. */
    BT_TEST_OK(ncclGroupStart());
    for (int l = 0; l < nlocal; l++) {
        int r = first + l;
        BT_TEST_OK(ncclSend(in[l], cnt, ncclFloat, (r + 1) % n, comms[l], NULL));
        BT_TEST_OK(ncclRecv(out[l], cnt, ncclFloat, (r + n - 1) % n, comms[l], NULL));
        BT_TEST_OK(ncclBroadcast(in[l], ag[l], 1000, ncclFloat, n - 1, comms[l], NULL));
        BT_TEST_OK(ncclReduce(in[l], ag[l] + 1000, 1000, ncclFloat, ncclMax, 0, comms[l], NULL));
    }
    BT_TEST_OK(ncclGroupEnd());
    for (int l = 0; l < nlocal; l++) {
        int r = first + l, prev = (r + n - 1) % n;
        for (size_t i = 0; i < cnt; i++)
            if (out[l][i] != fval(prev, i))
                BT_TEST_CHECK(0, "local ring comm %d [%zu] = %g", l, i, out[l][i]);
        for (size_t i = 0; i < 1000; i++)
            BT_TEST_CHECK(ag[l][i] == fval(n - 1, i), "local Bcast comm %d [%zu]", l, i);
        if (r == 0)
            for (size_t i = 0; i < 1000; i++)
                BT_TEST_CHECK(ag[l][1000 + i] == fval(n - 1, i), "local Reduce [%zu]", i);
    }
    for (int l = 0; l < nlocal; l++)
        free(in[l]), free(out[l]), free(ag[l]);
    free(in), free(out), free(ag);
}

static int local_main(int proc, int nprocs, void *argp)
{
    const struct grp_arg *arg = argp;
    struct bt_test_leaks leaks;
    ncclComm_t comms[3];
    bt_test_leaks_begin(&leaks);
    if (nprocs == 1) {
        /* 2 then 3 ranks in this thread, each initialized inside one group. */
        const ncclUniqueId *ids[2] = {&arg->id, &arg->id2};
        for (int k = 0; k < 2; k++) {
            int n = 2 + k;
            BT_TEST_OK(ncclGroupStart());
            for (int r = 0; r < n; r++)
                BT_TEST_OK(ncclCommInitRank(&comms[r], n, *ids[k], r));
            BT_TEST_OK(ncclGroupEnd());
            local_colls(comms, n, 0, n);
            for (int r = 0; r < n; r++)
                BT_TEST_OK(ncclCommDestroy(comms[r]));
        }
        /* ncclCommInitAll: 3 ranks in this process. */
        BT_TEST_OK(ncclCommInitAll(comms, 3, NULL));
        local_colls(comms, 3, 0, 3);
        for (int r = 0; r < 3; r++)
            BT_TEST_OK(ncclCommDestroy(comms[r]));
    } else {
        /* 2 processes x 2 ranks: process p holds ranks 2p and 2p + 1 of a 4-rank comm. */
        BT_TEST_OK(ncclGroupStart());
        for (int l = 0; l < 2; l++)
            BT_TEST_OK(ncclCommInitRank(&comms[l], 2 * nprocs, arg->id3, 2 * proc + l));
        BT_TEST_OK(ncclGroupEnd());
        local_colls(comms, 2, 2 * proc, 2 * nprocs);
        for (int l = 0; l < 2; l++)
            BT_TEST_OK(ncclCommDestroy(comms[l]));
    }
    bt_test_leaks_end(&leaks);
    return 0;
}

/* env: "NAME=VALUE" strings, NULL-terminated, set before any NCCL call. */
static int groups_main(const char *const *env)
{
    bt_test_setenv_list(env);
    setvbuf(stderr, NULL, _IOLBF, 0);
    int shm0 = bt_test_shm_count();
    static const int ranks[] = {1, 2, 3, 4, 8};
    int failed = 0;
    for (int k = 0; k < 5; k++) {
        struct grp_arg arg;
        BT_TEST_OK(ncclGetUniqueId(&arg.id));
        int rc = bt_test_run_ranks(ranks[k], rank_main, &arg, 100);
        fprintf(stderr, "groups: %d rank processes %s\n", ranks[k], rc ? "FAILED" : "ok");
        failed |= rc;
    }
    struct grp_arg arg;
    BT_TEST_OK(ncclGetUniqueId(&arg.id));
    BT_TEST_OK(ncclGetUniqueId(&arg.id2));
    BT_TEST_OK(ncclGetUniqueId(&arg.id3));
    BT_TEST_CHECK(bt_test_run_ranks(1, local_main, &arg, 100) == 0,
                  "several ranks in one thread failed");
    fprintf(stderr, "groups: 2 and 3 ranks in one thread, ncclCommInitAll ok\n");
    BT_TEST_CHECK(bt_test_run_ranks(2, local_main, &arg, 100) == 0, "2 processes x 2 ranks failed");
    fprintf(stderr, "groups: 2 processes x 2 ranks ok\n");
    int shm = bt_test_shm_count();
    BT_TEST_CHECK(shm <= shm0, "%d /dev/shm/baton* entries left behind", shm - shm0);
    BT_TEST_CHECK(!failed, "group tests failed (see above)");
    return 0;
}

struct groups_suite {
    const char *name; /* the argument that selects it, and its ctest name mp/<name> */
    const char *what; /* one line (the usage lists it) */
    const char *env[4];
};

static const struct groups_suite suites[] = {
    {
        .name = "groups",
        .what = "group semantics with the library's default algorithm and protocol choices",
    },
    {
        /* the tree runs its two halves on separate lanes */
        .name = "groups_tree",
        .what = "group semantics with AllReduce forced onto the double binary tree, 2 channels",
        .env = {"BATON_ALGO=Tree", "BATON_MIN_NCHANNELS=2"},
    },
};

int main(int argc, char **argv)
{
    int n = (int)(sizeof(suites) / sizeof(suites[0]));
    for (int k = 0; argc == 2 && k < n; k++)
        if (strcmp(argv[1], suites[k].name) == 0)
            return groups_main(suites[k].env);
    if (argc == 2)
        fprintf(stderr, "%s: no suite '%s'\n", argv[0], argv[1]);
    fprintf(stderr, "usage: %s SUITE (ctest mp/SUITE runs it); suites:\n", argv[0]);
    for (int k = 0; k < n; k++)
        fprintf(stderr, "  %-16s %s\n", suites[k].name, suites[k].what);
    return 2;
}
