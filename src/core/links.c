#include "core/links.h"

#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "coll/redop.h"
#include "core/comm.h"
#include "core/launch.h"
#include "graph/ring_plan.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define PROBE_BYTES (4u << 20) /* per pair and round: long enough to see the rate */
/* Rounds over every pair: the first also connects; the best of the others counts. Rounds go
 * over all pairs in turn, so that a burst of load elsewhere on the machine (a descheduled
 * rank costs a time slice per step handed over) does not fall on every measure of one pair:
 * the probe wants the link's rate, and one quiet measure of it is enough. */
#define PROBE_ROUNDS 5

/* ---- INJECT_LINK_BW ------------------------------------------------------------------ */

/* "*" or a rank number: 1 if it names `r`. */
static int names(const char *s, size_t len, int r, int *bad)
{
    if (len == 1 && s[0] == '*')
        return 1;
    char buf[16];
    char *end;
    if (len == 0 || len >= sizeof(buf)) {
        *bad = 1;
        return 0;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    long v = strtol(buf, &end, 10);
    if (*end || v < 0) {
        *bad = 1;
        return 0;
    }
    return v == r;
}

int bt_links_parse_caps(const char *spec, int nranks, int rank, double *rates)
{
    for (int p = 0; p < nranks; p++)
        rates[p] = 0;
    const char *s = spec;
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        const char *gt = memchr(s, '>', len), *colon = memchr(s, ':', len);
        char *end;
        double mbps = colon ? strtod(colon + 1, &end) : 0;
        int bad = !gt || !colon || colon < gt || end != s + len || !(mbps > 0);
        int from = !bad && names(s, (size_t)(gt - s), rank, &bad);
        for (int p = 0; p < nranks && !bad; p++) {
            int to = names(gt + 1, (size_t)(colon - gt - 1), p, &bad);
            if (from && to && p != rank)
                rates[p] = mbps; /* later entries override earlier ones */
        }
        if (bad) {
            BT_WARN("INJECT_LINK_BW: cannot read '%.*s' (want SRC>DST:MB/s, SRC and DST a rank "
                    "or *, entries separated by commas)",
                    (int)len, s);
            return -1;
        }
        s = comma ? comma + 1 : NULL;
    }
    return 0;
}

bt_status_t bt_links_caps_init(struct bt_comm *comm)
{
    const char *spec = bt_param_str_inject_link_bw();
    if (comm->cuda_dev >= 0 || !spec || !*spec)
        return BT_OK; /* host memory only: the CUDA executor does not look at caps */
    double *rates = calloc((size_t)comm->nranks, sizeof(*rates));
    comm->link_caps = calloc((size_t)comm->nranks, sizeof(*comm->link_caps));
    if (!rates || !comm->link_caps) {
        free(rates);
        BT_WARN("out of memory for %d link caps", comm->nranks);
        return BT_ERR_SYSTEM;
    }
    if (bt_links_parse_caps(spec, comm->nranks, comm->rank, rates) != 0) {
        free(rates);
        return BT_ERR_INVALID_ARG;
    }
    for (int p = 0; p < comm->nranks; p++) {
        comm->link_caps[p].bytes_per_ns = rates[p] * 1e6 / 1e9;
        if (rates[p] > 0)
            BT_INFO(BT_LOG_INIT, "INJECT_LINK_BW: sends to rank %d capped at %.0f MB/s", p,
                    rates[p]);
    }
    free(rates);
    return BT_OK;
}

/* ---- TOPO_PROBE ---------------------------------------------------------------------- */

/* One directed pair a -> b, every rank called in the same order (the others only take part
 * in the barrier). *gbps: b raises it to what it received, in GB/s, unless `count` is 0. */
static bt_status_t probe_pair(struct bt_comm *comm, int a, int b, char *buf, int count,
                              double *gbps)
{
    int me = comm->rank;
    BT_CHECK(bt_bootstrap_barrier(comm->bs));
    if (me != a && me != b)
        return BT_OK;
    struct bt_op op;
    memset(&op, 0, sizeof(op));
    op.comm = comm;
    op.coll = me == a ? BT_COLL_SEND : BT_COLL_RECV;
    op.sendbuf = buf;
    op.recvbuf = buf;
    op.count = PROBE_BYTES;
    op.dtype = BT_UINT8;
    op.redop.dtype = BT_UINT8;
    op.peer = me == a ? b : a;
    uint64_t t0 = bt_time_ns();
    BT_CHECK(bt_launch(&op, 1));
    double ns = (double)(bt_time_ns() - t0);
    if (me == b && count && ns > 0 && PROBE_BYTES / ns > *gbps)
        *gbps = PROBE_BYTES / ns; /* bytes per ns = GB/s */
    return BT_OK;
}

/* The n x n matrix (directed, GB/s) on every rank. */
static bt_status_t probe(struct bt_comm *comm, double *m)
{
    int n = comm->nranks, me = comm->rank;
    double *in = calloc((size_t)n * n, sizeof(double)); /* row r: what r received */
    char *buf = malloc(PROBE_BYTES);
    bt_status_t st = BT_OK;
    if (!in || !buf) {
        BT_WARN("TOPO_PROBE: out of memory");
        st = BT_ERR_SYSTEM;
        goto out;
    }
    memset(buf, 0, PROBE_BYTES);
    uint64_t t0 = bt_time_ns();
    for (int round = 0; round < PROBE_ROUNDS && st == BT_OK; round++)
        for (int a = 0; a < n && st == BT_OK; a++)
            for (int b = 0; b < n && st == BT_OK; b++)
                if (a != b)
                    st = probe_pair(comm, a, b, buf, round > 0, &in[(size_t)me * n + a]);
    if (st == BT_OK)
        st = bt_bootstrap_allgather(comm->bs, in, sizeof(double) * (size_t)n);
    for (int a = 0; a < n && st == BT_OK; a++)
        for (int b = 0; b < n; b++)
            m[(size_t)a * n + b] = in[(size_t)b * n + a];
    if (st == BT_OK && me == 0) {
        BT_INFO(
            BT_LOG_INIT,
            "TOPO_PROBE: %d pairs x %d MB x %d rounds in %.0f ms; best GB/s from row to column:",
            n * (n - 1), (int)(PROBE_BYTES >> 20), PROBE_ROUNDS, (double)(bt_time_ns() - t0) / 1e6);
        for (int a = 0; a < n; a++) {
            char line[512];
            int len = snprintf(line, sizeof(line), "TOPO_PROBE %3d:", a);
            for (int b = 0; b < n && len < (int)sizeof(line) - 12; b++)
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %7.2f",
                                m[(size_t)a * n + b]);
            BT_INFO(BT_LOG_INIT | BT_LOG_TUNING, "%s", line);
        }
    }
out:
    free(in);
    free(buf);
    return st;
}

/* The rings follow the probed matrix: the widest ring, reversed on odd channels, blocks in
 * proportion to the links. Every rank has the same matrix and runs the same search, so the
 * rings agree. */
static bt_status_t plan_rings(struct bt_comm *comm, const double *m)
{
    int n = comm->nranks;
    for (int c = 0; c < comm->nchannels; c++) {
        if (comm->channels[c].ring_send.connected || comm->channels[c].ring_recv.connected) {
            BT_INFO(BT_LOG_INIT, "TOPO_PROBE: channel %d's ring is already connected; rings stay",
                    c);
            return BT_OK;
        }
    }
    int *best = malloc(sizeof(int) * (size_t)n);
    if (!best)
        return BT_ERR_SYSTEM;
    double bottleneck = bt_ring_search(n, m, best);
    int split = bt_param_ring_split() != 0;
    if (bt_graph_channels_plan(comm->channels, comm->nchannels, n, comm->rank, best, m, split) !=
        0) {
        free(best);
        BT_WARN("out of memory planning rings");
        return BT_ERR_SYSTEM;
    }
    if (comm->rank == 0) {
        for (int c = 0; c < comm->nchannels && c < 2; c++) {
            const struct bt_ring *r = &comm->channels[c].ring;
            char line[512];
            int len = snprintf(line, sizeof(line), "ring %d:", c);
            for (int i = 0; i < n && len < (int)sizeof(line) - 24; i++)
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %d", r->order[i]);
            if (r->split) {
                len += snprintf(line + len, sizeof(line) - (size_t)len, "; blocks (%%):");
                for (int i = 0; i < n && len < (int)sizeof(line) - 12; i++)
                    len += snprintf(line + len, sizeof(line) - (size_t)len, " %.1f",
                                    100.0 * (r->split[i + 1] - r->split[i]) / BT_RING_SPLIT_TOTAL);
            } else {
                len += snprintf(line + len, sizeof(line) - (size_t)len, "; equal blocks");
            }
            BT_INFO(BT_LOG_INIT | BT_LOG_TUNING, "TOPO_PROBE %s (bottleneck %.2f GB/s)", line,
                    bottleneck);
        }
    }
    free(best);
    return BT_OK;
}

bt_status_t bt_links_probe(struct bt_comm *comm)
{
    if (comm->cuda_dev >= 0)
        return BT_OK; /* the CUDA executor builds its rings itself */
    if (!bt_param_topo_probe())
        return BT_OK;
    if (comm->nranks < 3) {
        BT_INFO(BT_LOG_INIT, "TOPO_PROBE: %d rank(s), one ring: nothing to choose", comm->nranks);
        return BT_OK;
    }
    int n = comm->nranks;
    double *m = calloc((size_t)n * n, sizeof(double));
    if (!m)
        return BT_ERR_SYSTEM;
    bt_status_t st = probe(comm, m);
    if (st == BT_OK)
        st = plan_rings(comm, m);
    free(m);
    return st;
}
