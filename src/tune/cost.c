#include "tune/cost.h"

#include "coll/pat.h"

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* base + hops x hop + moved / bandwidth; a very large number where there are no figures */
static double path_us(const struct bt_tune_cost *c, int nranks, double hops, double moved)
{
    if (c->gbps <= 0 || nranks < 2)
        return 1e30;
    return c->base_us + hops * c->hop_us + moved / (c->gbps * 1e3);
}

/* Hops of a tree AllReduce's two halves (cost.h) */
static double tree_hops(int nranks, int nhosts)
{
    if (nhosts <= 1 || nhosts >= nranks)
        return 2.0 * ceil_log2(nranks);
    int per = (nranks + nhosts - 1) / nhosts;
    return 2.0 * (ceil_log2(nhosts) + per - 1);
}

double bt_tune_allreduce_us(const struct bt_tune_costs *t, int algo, int proto, int nranks,
                            int nhosts, size_t bytes)
{
    double s = (double)bytes, n = nranks, hops, moved;
    switch (algo) {
    case BT_ALGO_RING:
        hops = 2 * (n - 1);
        moved = 2 * (n - 1) / n * s;
        break;
    case BT_ALGO_TREE:
        hops = tree_hops(nranks, nhosts);
        moved = 2 * s;
        break;
    case BT_ALGO_TWOSHOT:
        hops = 2;
        moved = 2 * (n - 1) / n * s;
        break;
    default: /* BT_ALGO_DIRECT: a wait on each peer's part, one after another */
        hops = n - 1;
        moved = (n - 1) * s;
        break;
    }
    return path_us(&t->c[algo][proto], nranks, hops, moved);
}

void bt_tune_costs_shared(const struct bt_tune_costs *in, int nranks, struct bt_tune_costs *out)
{
    *out = *in;
    double k = nranks > 0 ? (double)BT_TUNE_SHARED_GPU_RANKS / nranks : 1.0;
    for (int a = 0; a < BT_NUM_ALGOS; a++)
        for (int p = 0; p < BT_NUM_PROTOS; p++)
            out->c[a][p].gbps = (float)(in->c[a][p].gbps * k);
}

void bt_tune_costs_bound(const struct bt_tune_costs *in, float gbps, float latency_us,
                         struct bt_tune_costs *out)
{
    *out = *in;
    for (int a = 0; a < BT_NUM_ALGOS; a++)
        for (int p = 0; p < BT_NUM_PROTOS; p++) {
            struct bt_tune_cost *c = &out->c[a][p];
            if (c->gbps <= 0)
                continue; /* does not run there */
            if (gbps > 0 && c->gbps > gbps)
                c->gbps = gbps;
            if (c->hop_us < latency_us)
                c->hop_us = latency_us;
        }
}

double bt_tune_ring_pass_us(const struct bt_tune_costs *t, int proto, int nranks, size_t bytes)
{
    double n = nranks;
    return path_us(&t->c[BT_ALGO_RING][proto], nranks, n - 1, (n - 1) / n * (double)bytes);
}

double bt_tune_pat_us(const struct bt_tune_costs *t, int proto, int nranks, size_t bytes)
{
    double n = nranks;
    return path_us(&t->c[BT_ALGO_PAT][proto], nranks, bt_pat_hops(nranks),
                   (n - 1) / n * (double)bytes);
}

/* Hosts a leaf of the fabric holds (G), and a two-tier block (cost.h). */
static double leaf_hosts(const struct bt_tune_fabric *f)
{
    double down = f->radix / 2.0;
    double g = f->kind == BT_FABRIC_RAIL ? down : down / (f->nics > 0 ? f->nics : 1);
    return g >= 1 ? g : 1;
}

/* Switches past the first on a hop between hosts d apart (in order, groups aligned). */
static int extra_switches(const struct bt_tune_fabric *f, double d)
{
    double g = leaf_hosts(f);
    return d < g ? 0 : d < g * f->radix ? 2 : 4;
}

/* The fabric's latency on top of net_hop_us a hop, and its bytes' slowdown, for `algo`
 * (cost.h). */
static void fabric_cost(const struct bt_tune_fabric *f, int hosts, int algo, int twice,
                        double *extra_us, double *slowdown)
{
    double g = leaf_hosts(f), block = g * f->radix, share;
    int L = ceil_log2(hosts), sw = 0;
    if (algo == BT_ALGO_PAT) {
        for (int i = 0; i < bt_pat_hops(hosts); i++)
            sw += extra_switches(f, (double)(1 << (i < L - 1 ? i : L - 1)));
        share = 1;
    } else if (algo == BT_ALGO_TREE) {
        for (int l = 0; l < L; l++)
            sw += 2 * extra_switches(f, (double)(1 << l));
        share = 2 / g;
    } else {
        sw = twice * (2 * (int)((hosts - 1) / g) + 2 * (int)((hosts - 1) / block));
        share = 1 / g;
    }
    *extra_us = sw * f->switch_us;
    double s = (share < 1 ? share : 1) * f->oversub;
    *slowdown = hosts > g && s > 1 ? s : 1;
}

double bt_tune_hosts_us(const struct bt_tune_hosts *h, int coll, int algo, size_t bytes)
{
    const struct bt_tune_cost *loc = &h->local->c[BT_ALGO_RING][h->proto];
    double n = (double)h->hosts * h->per_host, H = h->hosts, s = (double)bytes;
    double gbps = h->per_host > 1 && loc->gbps < h->nic_gbps ? loc->gbps : h->nic_gbps;
    if (loc->gbps <= 0 || gbps <= 0 || n < 2) /* no figures for the protocol, or no NIC */
        return 1e30;
    double hops_net, hops_local, moved;
    if (algo == BT_ALGO_PAT) {
        if (h->per_host != 1 || coll == BT_COLL_ALLREDUCE)
            return 1e30;
        hops_net = bt_pat_hops(h->hosts);
        hops_local = 0;
        moved = (n - 1) / n * s;
    } else if (algo == BT_ALGO_TREE) {
        if (coll != BT_COLL_ALLREDUCE)
            return 1e30;
        hops_net = 2.0 * ceil_log2(h->hosts);
        hops_local = 2.0 * (h->per_host - 1);
        moved = 2 * s;
    } else {
        int twice = coll == BT_COLL_ALLREDUCE ? 2 : 1;
        hops_net = twice * (H - 1);
        hops_local = twice * (n - H);
        moved = twice * (n - 1) / n * s;
    }
    double extra_us = 0, slowdown = 1;
    if (h->fabric)
        fabric_cost(h->fabric, h->hosts, algo, coll == BT_COLL_ALLREDUCE ? 2 : 1, &extra_us,
                    &slowdown);
    return loc->base_us + hops_net * h->net_hop_us + extra_us + hops_local * loc->hop_us +
           moved * slowdown / (gbps * 1e3);
}
