/*
 * Topology model: paths between devices, rings over the GPUs, NIC choice, warnings
 * (topo.h). Pure computation over struct bt_topo: tests feed it files of machines we do
 * not have.
 */
#include "topo/topo.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph/ring_plan.h"
#include "util/log.h"
#include "util/param.h"

/* Typical one-way latency of each path class, us (typical figures for PCIe and NVLink machines,
 * rounded). */
static const double path_lat[BT_NUM_PATHS] = {0.6, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0};
static const char *const path_names[BT_NUM_PATHS] = {"NVL",  "PIX", "PXB", "PHB",
                                                     "NODE", "SYS", "NET"};

const char *bt_topo_path_name(int cls)
{
    return cls >= 0 && cls < BT_NUM_PATHS ? path_names[cls] : "?";
}

int bt_topo_path_parse(const char *s)
{
    if (!s)
        return -2;
    if (strcasecmp(s, "LOC") == 0)
        return -1;
    for (int c = 0; c < BT_PATH_NET; c++)
        if (strcasecmp(s, path_names[c]) == 0)
            return c;
    return -2;
}

int bt_topo_gpu_index(const struct bt_topo *t, const char *bus, int dev)
{
    for (int g = 0; g < t->ngpus; g++) {
        const char *b = t->nodes[t->gpu_node[g]].bus;
        if (b[0] && bus && strcasecmp(b, bus) == 0)
            return g;
    }
    for (int g = 0; g < t->ngpus; g++) /* bus ids known: the device is not in this topology */
        if (t->nodes[t->gpu_node[g]].bus[0])
            return -1;
    return dev >= 0 && dev < t->ngpus ? dev : -1;
}

int bt_topo_add(struct bt_topo *t, int kind, const char *name, int parent)
{
    if (t->nnodes >= BT_TOPO_MAX_NODES)
        return -1;
    struct bt_topo_node *n = &t->nodes[t->nnodes];
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->parent = parent;
    n->gpu = -1;
    return t->nnodes++;
}

double bt_topo_pcie_bw(int gen, int width)
{
    /* GB/s per lane and direction after encoding */
    static const double lane[] = {0, 0.25, 0.5, 0.985, 1.97, 3.94, 7.56};
    if (gen < 1 || gen > 6 || width < 1)
        return 0;
    return lane[gen] * width;
}

bt_status_t bt_topo_finish(struct bt_topo *t)
{
    if (t->nvlink_bw <= 0)
        t->nvlink_bw = 25.0; /* GB/s per NVLink (NVLink 4: 26.56 line rate) */
    if (t->sys_bw <= 0)
        t->sys_bw = 20.0; /* a CPU-to-CPU link as GPUs see it */
    t->ngpus = 0;
    for (int i = 0; i < t->nnodes; i++) {
        struct bt_topo_node *n = &t->nodes[i];
        if (n->parent >= t->nnodes || n->parent == i ||
            (n->kind != BT_TOPO_NUMA && n->parent < 0)) {
            BT_WARN("topology: node %s has no valid parent", n->name);
            return BT_ERR_INVALID_ARG;
        }
        if (n->kind == BT_TOPO_NUMA)
            n->parent = -1;
        else
            n->numa = t->nodes[n->parent].numa;
        if (n->bw <= 0)
            n->bw = bt_topo_pcie_bw(n->gen, n->width);
        if (n->kind == BT_TOPO_GPU) {
            if (n->gpu < 0 || n->gpu >= BT_TOPO_MAX_GPUS) {
                BT_WARN("topology: GPU node %s has index %d (0..%d)", n->name, n->gpu,
                        BT_TOPO_MAX_GPUS - 1);
                return BT_ERR_INVALID_ARG;
            }
            t->gpu_node[n->gpu] = i;
            if (n->gpu + 1 > t->ngpus)
                t->ngpus = n->gpu + 1;
        }
    }
    return BT_OK;
}

/* Node i and its ancestors, nearest first; returns the count. */
static int chain(const struct bt_topo *t, int i, int *out)
{
    int n = 0;
    for (; i >= 0 && n < BT_TOPO_MAX_NODES; i = t->nodes[i].parent)
        out[n++] = i;
    return n;
}

struct bt_topo_path bt_topo_path(const struct bt_topo *t, int a, int b)
{
    struct bt_topo_path p = {BT_PATH_SYS, 0, 0};
    const struct bt_topo_node *na = &t->nodes[a], *nb = &t->nodes[b];
    if (na->kind == BT_TOPO_GPU && nb->kind == BT_TOPO_GPU && t->nvlinks[na->gpu][nb->gpu] > 0) {
        p.cls = BT_PATH_NVL;
        p.bw = t->nvlinks[na->gpu][nb->gpu] * t->nvlink_bw;
        p.lat = path_lat[p.cls];
        return p;
    }
    int ca[BT_TOPO_MAX_NODES], cb[BT_TOPO_MAX_NODES];
    int la = chain(t, a, ca), lb = chain(t, b, cb);
    int ia = -1, ib = -1; /* positions of the lowest common ancestor */
    for (int i = 1; i < la && ia < 0; i++)
        for (int j = 1; j < lb; j++)
            if (ca[i] == cb[j]) {
                ia = i;
                ib = j;
                break;
            }
    double bw = 1e30;
    int upa = ia < 0 ? la : ia, upb = ib < 0 ? lb : ib; /* links below the meeting point */
    for (int i = 0; i < upa; i++)
        if (t->nodes[ca[i]].kind != BT_TOPO_NUMA && t->nodes[ca[i]].bw > 0 &&
            t->nodes[ca[i]].bw < bw)
            bw = t->nodes[ca[i]].bw;
    for (int j = 0; j < upb; j++)
        if (t->nodes[cb[j]].kind != BT_TOPO_NUMA && t->nodes[cb[j]].bw > 0 &&
            t->nodes[cb[j]].bw < bw)
            bw = t->nodes[cb[j]].bw;
    if (ia < 0) {
        p.cls = BT_PATH_SYS; /* different NUMA roots */
        if (t->sys_bw < bw)
            bw = t->sys_bw;
    } else {
        const struct bt_topo_node *lca = &t->nodes[ca[ia]];
        if (lca->kind == BT_TOPO_NUMA)
            p.cls = BT_PATH_NODE;
        else if (lca->is_root)
            p.cls = BT_PATH_PHB;
        else
            p.cls = ia == 1 && ib == 1 ? BT_PATH_PIX : BT_PATH_PXB;
    }
    p.bw = bw >= 1e30 ? 0 : bw;
    p.lat = path_lat[p.cls];
    return p;
}

/* ---- rings --------------------------------------------------------------------------- */

void bt_topo_bw_matrix(const struct bt_topo *t, int n, const int *gpu, double *bw)
{
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            int ga = gpu ? gpu[a] : a, gb = gpu ? gpu[b] : b;
            bw[a * n + b] = ga == gb ? 0 : bt_topo_path(t, t->gpu_node[ga], t->gpu_node[gb]).bw;
        }
    }
}

double bt_topo_rank_ring(const struct bt_topo *t, int n, const int *gpu, int *best)
{
    double *bw = n > 0 ? malloc(sizeof(double) * (size_t)n * (size_t)n) : NULL;
    if (!bw) {
        for (int i = 0; i < n; i++)
            best[i] = i;
        return 0;
    }
    bt_topo_bw_matrix(t, n, gpu, bw);
    double bottleneck = bt_ring_search(n, bw, best);
    free(bw);
    return bottleneck;
}

double bt_topo_ring(const struct bt_topo *t, int *order)
{
    return bt_topo_rank_ring(t, t->ngpus, NULL, order);
}

int bt_topo_p2p_within(const struct bt_topo *t, int n, const int *gpu, int level, int *a, int *b)
{
    for (int x = 0; x < n; x++) {
        for (int y = 0; y < n; y++) {
            if (x == y || gpu[x] == gpu[y])
                continue;
            if (bt_topo_path(t, t->gpu_node[gpu[x]], t->gpu_node[gpu[y]]).cls > level) {
                *a = x;
                *b = y;
                return 0;
            }
        }
    }
    return 1;
}

const char *bt_topo_numa_cpulist(const struct bt_topo *t, int numa)
{
    for (int i = 0; i < t->nnodes; i++) {
        const struct bt_topo_node *x = &t->nodes[i];
        if (x->kind == BT_TOPO_NUMA && x->numa == numa && x->cpus[0])
            return x->cpus;
    }
    return NULL;
}

/* ---- NICs ---------------------------------------------------------------------------- */

void bt_topo_nics(const struct bt_topo *t, int *nic_of_gpu)
{
    int uses[BT_TOPO_MAX_NODES] = {0};
    for (int g = 0; g < t->ngpus; g++) {
        int best = -1;
        struct bt_topo_path bp = {0, 0, 0};
        for (int i = 0; i < t->nnodes; i++) {
            if (t->nodes[i].kind != BT_TOPO_NIC)
                continue;
            struct bt_topo_path p = bt_topo_path(t, t->gpu_node[g], i);
            int better =
                best < 0 || p.cls < bp.cls ||
                (p.cls == bp.cls && (p.bw > bp.bw || (p.bw == bp.bw && uses[i] < uses[best])));
            if (better) {
                best = i;
                bp = p;
            }
        }
        nic_of_gpu[g] = best;
        if (best >= 0)
            uses[best]++;
    }
}

int bt_topo_warnings(const struct bt_topo *t, FILE *out)
{
    int n = 0;
    for (int i = 0; i < t->nnodes; i++) {
        const struct bt_topo_node *x = &t->nodes[i];
        if ((x->max_gen && x->gen < x->max_gen) || (x->max_width && x->width < x->max_width)) {
            fprintf(out, "warning: the PCIe link of %s runs at gen%d x%d, capable of gen%d x%d\n",
                    x->name, x->gen, x->width, x->max_gen ? x->max_gen : x->gen,
                    x->max_width ? x->max_width : x->width);
            n++;
        }
    }
    for (int a = 0; a < t->ngpus; a++)
        for (int b = a + 1; b < t->ngpus; b++)
            if (bt_topo_path(t, t->gpu_node[a], t->gpu_node[b]).cls == BT_PATH_SYS) {
                fprintf(out,
                        "warning: GPUs %d and %d are on different NUMA nodes: no P2P, their "
                        "traffic crosses the CPU link (SYS)\n",
                        a, b);
                n++;
            }
    int nic[BT_TOPO_MAX_GPUS];
    bt_topo_nics(t, nic);
    for (int g = 0; g < t->ngpus; g++) {
        const struct bt_topo_node *gn = &t->nodes[t->gpu_node[g]];
        if (nic[g] >= 0 && t->nodes[nic[g]].numa != gn->numa) {
            fprintf(out, "warning: GPU %d (NUMA node %d) has its nearest NIC %s on NUMA node %d\n",
                    g, gn->numa, t->nodes[nic[g]].name, t->nodes[nic[g]].numa);
            n++;
        }
    }
    return n;
}

bt_status_t bt_topo_get(struct bt_topo *t, int dump_it)
{
    memset(t, 0, sizeof(*t));
    const char *file = bt_param_str_topo_file();
    bt_status_t st = file && file[0] ? bt_topo_load(file, t) : bt_topo_discover(t);
    if (st != BT_OK)
        return st;
    const char *dump = bt_param_str_topo_dump_file();
    if (dump_it && dump && dump[0]) {
        FILE *f = fopen(dump, "w");
        if (!f) {
            BT_WARN("TOPO_DUMP_FILE=%s: cannot open it for writing", dump);
        } else {
            bt_topo_save(t, f);
            fclose(f);
        }
    }
    return BT_OK;
}
