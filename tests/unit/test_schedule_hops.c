/*
 * The all-peer schedules (coll/pat.h's AllGather and ReduceScatter, coll/direct.h's one-shot,
 * coll/twoshot.h's two-shot) run by a simulator on every rank at once, for 2..40 ranks and one
 * or three loops: the real prim functions (coll/algo.h), abstract data, and time in hops
 * (unit/test_schedule runs the ring and tree schedules on real data through real FIFOs).
 *
 *   - data: every element is a set of contributions (a bit per rank); a fold is the union and
 *     must join disjoint sets (nothing counted twice); every contribution in an output is
 *     pre-multiplied exactly once on its way; the final op (post) comes once, on a finished
 *     element, which is then only copied; AllGather's output holds every rank's block;
 *   - order: a receive takes the oldest message of its connector pair, which must be what its
 *     sender sent in that place;
 *   - FIFOs of BT_NSTEPS slots: a send waits for a free slot; a state where no rank can move
 *     is a deadlock;
 *   - latency: a step ends one hop after the messages it receives were sent, local work takes
 *     no time; one loop's critical path must be the hops the cost model charges
 *     (bt_pat_hops for PAT, 1 for the one-shot, 2 for the two-shot).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algo.h"
#include "coll/steps.h"
#include "harness.h"

#define MAXN 40

/* An element: the ranks whose contributions it holds, and those of them not yet
 * pre-multiplied. */
struct val {
    uint64_t set, raw;
    int post; /* the final op applied */
};

struct msg {
    struct val v;
    int time;
};

struct sim {
    int n, coll, algo, nloops;
    size_t count; /* elements per block */
    char *sendbuf[MAXN], *recvbuf[MAXN], *scratch[MAXN];
    size_t send_len, recv_len, scratch_len;
    struct val *sset[MAXN], *rset[MAXN], *xset[MAXN]; /* per element of each buffer */
    struct bt_conn conn_send[MAXN][MAXN], conn_recv[MAXN][MAXN];
    struct bt_conn *peer_send[MAXN][MAXN], *peer_recv[MAXN][MAXN];
    struct msg *q[MAXN][MAXN]; /* from, to */
    int qhead[MAXN][MAXN], qtail[MAXN][MAXN], qcap;
    struct bt_work w[MAXN];
    int time[MAXN];
};

/* The set cell behind a pointer the schedule computed, and which buffer it is in. */
static struct val *cell(struct sim *s, int r, const char *p, int *kind)
{
    if (p >= s->sendbuf[r] && p < s->sendbuf[r] + s->send_len) {
        *kind = 0;
        return &s->sset[r][p - s->sendbuf[r]];
    }
    if (p >= s->recvbuf[r] && p < s->recvbuf[r] + s->recv_len) {
        *kind = 1;
        return &s->rset[r][p - s->recvbuf[r]];
    }
    BT_TEST_CHECK(s->scratch[r] && p >= s->scratch[r] && p < s->scratch[r] + s->scratch_len,
                  "rank %d: a pointer outside its buffers and scratch", r);
    *kind = 2;
    return &s->xset[r][p - s->scratch[r]];
}

static int peer_of(struct bt_conn *const *list, int n, const struct bt_conn *c)
{
    for (int x = 0; x < n; x++)
        if (list[x] == c)
            return x;
    BT_TEST_CHECK(0, "a connector the work does not have");
    return -1;
}

static void sim_init(struct sim *s, int n, int coll, int algo, size_t count, size_t chunk)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->coll = coll;
    s->algo = algo;
    s->count = count;
    /* esize 1: pointers are element indexes */
    int rs = coll == BT_COLL_REDUCESCATTER, ag = coll == BT_COLL_ALLGATHER;
    s->send_len = rs ? (size_t)n * count : count;
    s->recv_len = ag ? (size_t)n * count : count;
    s->scratch_len = (size_t)n * chunk + 1;
    s->qcap = BT_NSTEPS; /* a FIFO never holds more (try_step checks) */
    for (int r = 0; r < n; r++) {
        s->sendbuf[r] = calloc(s->send_len, 1);
        s->recvbuf[r] = calloc(s->recv_len, 1);
        s->scratch[r] = calloc(s->scratch_len, 1);
        s->sset[r] = calloc(s->send_len, sizeof(struct val));
        s->rset[r] = calloc(s->recv_len, sizeof(struct val));
        s->xset[r] = calloc(s->scratch_len, sizeof(struct val));
        for (size_t e = 0; e < s->send_len; e++)
            s->sset[r][e] = (struct val){1ull << r, 1ull << r, 0};
        for (int x = 0; x < n; x++) {
            s->peer_send[r][x] = &s->conn_send[r][x];
            s->peer_recv[r][x] = &s->conn_recv[r][x];
            s->q[r][x] = calloc((size_t)s->qcap, sizeof(struct msg));
        }
        struct bt_work *w = &s->w[r];
        w->coll = (uint8_t)coll;
        w->algo = (uint8_t)algo;
        w->redop = (struct bt_redop){0};
        w->sendbuf = s->sendbuf[r];
        w->recvbuf = s->recvbuf[r];
        w->esize = 1;
        w->count = count;
        w->nranks = n;
        w->rank = r;
        w->chan_off = 0;
        w->chan_count = count;
        w->chunk = chunk;
        w->peer_send = s->peer_send[r];
        w->peer_recv = s->peer_recv[r];
        w->scratch = s->scratch[r];
        w->nsteps = bt_algo_nsteps(w);
    }
    s->nloops = (int)bt_div_up(count, chunk);
}

static void sim_free(struct sim *s)
{
    for (int r = 0; r < s->n; r++) {
        free(s->sendbuf[r]);
        free(s->recvbuf[r]);
        free(s->scratch[r]);
        free(s->sset[r]);
        free(s->rset[r]);
        free(s->xset[r]);
        for (int x = 0; x < s->n; x++)
            free(s->q[r][x]);
    }
}

/* Run rank r's next step if its messages are there and its FIFOs have room: 1 if it ran. */
static int try_step(struct sim *s, int r)
{
    struct bt_work *w = &s->w[r];
    if (w->step >= w->nsteps)
        return 0;
    struct bt_prim p;
    bt_algo_prim(w, w->step, &p);
    int from[BT_PRIM_MAX_PEERS], to[BT_PRIM_MAX_PEERS];
    for (int i = 0; i < p.nrecv; i++) {
        from[i] = peer_of(s->peer_recv[r], s->n, p.recv[i]);
        if (s->qhead[from[i]][r] == s->qtail[from[i]][r])
            return 0;
    }
    for (int i = 0; i < p.nsend; i++) {
        to[i] = peer_of(s->peer_send[r], s->n, p.send[i]);
        if (s->qtail[r][to[i]] - s->qhead[r][to[i]] >= BT_NSTEPS)
            return 0;
    }
    int t = s->time[r];
    for (int i = 0; i < p.nrecv; i++) { /* a hop after its message was sent */
        const struct msg *m = &s->q[from[i]][r][s->qhead[from[i]][r] % s->qcap];
        t = m->time + 1 > t ? m->time + 1 : t;
    }
    int gather = s->coll == BT_COLL_ALLGATHER;
    for (size_t e = 0; e < p.nelem; e++) {
        struct val v = {0, 0, 0};
        int kind, parts = 0;
        if (p.acc) {
            v = *cell(s, r, p.acc + e, &kind);
            parts++;
        }
        for (int i = 0; i < p.nrecv; i++) {
            struct msg *m = &s->q[from[i]][r][s->qhead[from[i]][r] % s->qcap];
            BT_TEST_CHECK(gather || !(v.set & m->v.set),
                          "rank %d step %llu: a contribution folded twice", r,
                          (unsigned long long)w->step);
            v.set |= m->v.set;
            v.raw |= m->v.raw;
            v.post |= m->v.post;
            parts++;
        }
        if (p.src) {
            struct val sv = *cell(s, r, p.src + e, &kind);
            if (p.pre_src) {
                BT_TEST_CHECK(gather || sv.raw == sv.set,
                              "rank %d step %llu: pre-multiplies a contribution twice", r,
                              (unsigned long long)w->step);
                sv.raw = 0;
            }
            BT_TEST_CHECK(gather || !(v.set & sv.set),
                          "rank %d step %llu: a contribution folded twice", r,
                          (unsigned long long)w->step);
            v.set |= sv.set;
            v.raw |= sv.raw;
            v.post |= sv.post;
            parts++;
        }
        BT_TEST_CHECK(gather || !(v.post && parts > 1),
                      "rank %d step %llu: folds a result the final op was applied to", r,
                      (unsigned long long)w->step);
        BT_TEST_CHECK(gather || !(v.post && p.post), "rank %d step %llu: the final op twice", r,
                      (unsigned long long)w->step);
        v.post |= p.post;
        if (p.dst) {
            struct val *d = cell(s, r, p.dst + e, &kind);
            BT_TEST_CHECK(gather || !p.post || v.set == (1ull << s->n) - 1,
                          "rank %d step %llu: the final op on an unfinished element", r,
                          (unsigned long long)w->step);
            *d = v;
        }
        for (int i = 0; i < p.nsend; i++) {
            s->q[r][to[i]][s->qtail[r][to[i]] % s->qcap].v = v;
        }
    }
    /* one slot per connector per step, whatever its elements (chunks of one element here:
     * a slot holds at most one) */
    BT_TEST_CHECK(p.nelem <= 1, "a step of %zu elements from chunks of 1", p.nelem);
    for (int i = 0; i < p.nrecv; i++)
        s->qhead[from[i]][r]++;
    for (int i = 0; i < p.nsend; i++) {
        if (p.nelem == 0)
            s->q[r][to[i]][s->qtail[r][to[i]] % s->qcap].v = (struct val){0, 0, 0};
        s->q[r][to[i]][s->qtail[r][to[i]] % s->qcap].time = t;
        s->qtail[r][to[i]]++;
    }
    s->time[r] = t;
    w->step++;
    return 1;
}

/* Runs every rank to the end; the critical path in hops. */
static int sim_run(struct sim *s)
{
    for (;;) {
        int moved = 0, left = 0;
        for (int r = 0; r < s->n; r++) {
            while (try_step(s, r))
                moved = 1;
            left += s->w[r].step < s->w[r].nsteps;
        }
        if (!left)
            break;
        BT_TEST_CHECK(moved, "deadlock: %d ranks stuck (n %d, coll %d, algo %d)", left, s->n,
                      s->coll, s->algo);
    }
    int most = 0;
    for (int r = 0; r < s->n; r++) {
        most = s->time[r] > most ? s->time[r] : most;
        for (int x = 0; x < s->n; x++)
            BT_TEST_CHECK(s->qhead[x][r] == s->qtail[x][r], "messages %d -> %d left over", x, r);
    }
    return most;
}

static void check_results(struct sim *s)
{
    uint64_t all = (1ull << s->n) - 1;
    for (int r = 0; r < s->n; r++) {
        for (size_t e = 0; e < s->recv_len; e++) {
            struct val v = s->rset[r][e];
            uint64_t want = s->coll == BT_COLL_ALLGATHER ? 1ull << (e / s->count) : all;
            BT_TEST_CHECK(v.set == want, "n %d rank %d output element %zu holds %#llx, want %#llx",
                          s->n, r, e, (unsigned long long)v.set, (unsigned long long)want);
            BT_TEST_CHECK(s->coll == BT_COLL_ALLGATHER || v.post,
                          "n %d rank %d output element %zu: the final op never applied", s->n, r,
                          e);
            BT_TEST_CHECK(s->coll == BT_COLL_ALLGATHER || v.raw == 0,
                          "n %d rank %d output element %zu: contributions %#llx never "
                          "pre-multiplied",
                          s->n, r, e, (unsigned long long)v.raw);
        }
    }
}

static int any_conn(const struct bt_conn *c)
{
    (void)c;
    return 1;
}

/* A PAT work at 4096 ranks walks 2 x 12 connectors, within what a launch counts steps for
 * (coll/steps.h): each peer at distance 2^k both ways, every step on one of them. */
static void conns_at_scale(void)
{
    enum { N = 4096 };
    static struct bt_conn sc[N], rc[N];
    static struct bt_conn *ps[N], *pr[N];
    static char in[N], out[N], scratch[N];
    for (int x = 0; x < N; x++)
        ps[x] = &sc[x], pr[x] = &rc[x];
    for (int coll = BT_COLL_ALLGATHER; coll <= BT_COLL_REDUCESCATTER; coll++) {
        struct bt_work w = {.coll = (uint8_t)coll,
                            .algo = BT_ALGO_PAT,
                            .esize = 1,
                            .count = 1,
                            .nranks = N,
                            .rank = 7,
                            .chan_count = 1,
                            .chunk = 1,
                            .peer_send = ps,
                            .peer_recv = pr,
                            .sendbuf = in,
                            .recvbuf = out,
                            .scratch = scratch};
        w.nsteps = bt_algo_nsteps(&w);
        struct bt_conn_steps t[BT_WORK_MAX_CONNS];
        int nt = 0;
        BT_TEST_OK(bt_work_conn_steps(&w, any_conn, 0, t, BT_WORK_MAX_CONNS, &nt, NULL));
        uint64_t sum = 0;
        for (int e = 0; e < nt; e++)
            sum += t[e].nsteps;
        BT_TEST_CHECK(nt == 2 * bt_pat_rounds(N) && sum == w.nsteps && w.nsteps == 2 * (N - 1),
                      "%s at %d ranks: %d connectors, %llu of %llu steps", bt_coll_name(coll), N,
                      nt, (unsigned long long)sum, (unsigned long long)w.nsteps);
    }
    printf("PAT at %d ranks: %d connectors a work, within %d: ok\n", N, 2 * bt_pat_rounds(N),
           BT_WORK_MAX_CONNS);
}

int main(void)
{
    struct sim *s = malloc(sizeof(*s));
    BT_TEST_CHECK(s != NULL, "out of memory");
    struct {
        int coll, algo;
        const char *name;
    } cases[] = {
        {BT_COLL_ALLGATHER, BT_ALGO_PAT, "PAT AllGather"},
        {BT_COLL_REDUCESCATTER, BT_ALGO_PAT, "PAT ReduceScatter"},
        {BT_COLL_ALLREDUCE, BT_ALGO_DIRECT, "one-shot AllReduce"},
        {BT_COLL_ALLREDUCE, BT_ALGO_TWOSHOT, "two-shot AllReduce"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int n = 2; n <= MAXN; n++) {
            /* the two-shot's loop is n chunks (its parts), the others' one chunk */
            int two = cases[c].algo == BT_ALGO_TWOSHOT;
            size_t loop = two ? (size_t)n : 1;
            sim_init(s, n, cases[c].coll, cases[c].algo, loop, 1);
            int hops = sim_run(s);
            check_results(s);
            int want = cases[c].algo == BT_ALGO_PAT ? bt_pat_hops(n) : two ? 2 : 1;
            BT_TEST_CHECK(hops == want, "%s, %d ranks: %d hops in sequence, the model charges %d",
                          cases[c].name, n, hops, want);
            sim_free(s);
            /* three loops, the last one short */
            sim_init(s, n, cases[c].coll, cases[c].algo, 3 * loop - (two ? 1 : 0), 1);
            sim_run(s);
            check_results(s);
            sim_free(s);
        }
        printf("%s: exact at 2..%d ranks, 1 and 3 loops, FIFOs of %d; hops as the model's "
               "(%d at 16 ranks, %d at 40)\n",
               cases[c].name, MAXN, BT_NSTEPS,
               cases[c].algo == BT_ALGO_PAT       ? bt_pat_hops(16)
               : cases[c].algo == BT_ALGO_TWOSHOT ? 2
                                                  : 1,
               cases[c].algo == BT_ALGO_PAT       ? bt_pat_hops(40)
               : cases[c].algo == BT_ALGO_TWOSHOT ? 2
                                                  : 1);
    }
    free(s);
    conns_at_scale();
    printf("test_schedule_hops: ok\n");
    return 0;
}
