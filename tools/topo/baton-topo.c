/*
 * baton-topo: the machine as Baton sees it. Devices (the PCIe tree under each NUMA node),
 * the path class and bandwidth between every pair of GPUs and from each GPU to each NIC,
 * the rings chosen per channel, each GPU's NIC (rail binding: the nearest, then the least
 * used), what the tuner picks per size for a job of one rank per GPU, and warnings.
 *
 *   baton-topo [--file F] [--dump] [--channels N] [--nodes [N]] [--net-hop US] [--nic-gbps G]
 *     --file F      read topology file F (else TOPO_FILE, else discover this machine)
 *     --dump        print the topology in the file format (what TOPO_DUMP_FILE writes)
 *     --channels N  rings to show (default 2)
 *     --nodes [N]   the model's time for ring, tree and PAT at N hosts of this machine
 *                   (default 2, 4, ..., 4096), instead of the rest
 *     --net-hop US  a network hop's latency for --nodes (default: the GPU tuner's network
 *                   ring figure, measured over loopback sockets)
 *     --nic-gbps G  each NIC's GB/s for --nodes (default: the topology's line rates)
 *     --fabric K    where the hosts sit for --nodes (tune/cost.h): fat-tree (every NIC of a
 *                   host on its leaf) or rail (rail-optimized, channels bound to rails);
 *                   default none (every hop net-hop, no bottleneck past the NICs)
 *     --radix N     ports of every switch (default 64), --switch-us US each switch past the
 *                   first on a hop (default 0.2), --oversub R leaf down/up ports (default 1)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/dtype.h"
#include "plan/plan.h"
#include "exec/exec.h"
#include "graph/ring_plan.h"
#include "topo/topo.h"
#include "tune/tuner.h"

static const char *kind_name(int k)
{
    return k == BT_TOPO_NUMA ? "NUMA" : k == BT_TOPO_PCI ? "PCI" : k == BT_TOPO_GPU ? "GPU" : "NIC";
}

static void print_tree(const struct bt_topo *t, int node, int depth)
{
    const struct bt_topo_node *n = &t->nodes[node];
    printf("%*s%s %s", depth * 2, "", kind_name(n->kind), n->name);
    if (n->kind == BT_TOPO_NUMA && n->cpus[0])
        printf(" cpus %s", n->cpus);
    if (n->kind == BT_TOPO_PCI && n->is_root)
        printf(" (host bridge)");
    if (n->gen)
        printf(" gen%d x%d", n->gen, n->width);
    if (n->bw > 0 && n->kind != BT_TOPO_NUMA)
        printf(" %.1f GB/s", n->bw);
    if (n->kind == BT_TOPO_NIC && n->speed_gbps > 0)
        printf(" %.0f Gb/s", n->speed_gbps);
    printf("\n");
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].parent == node)
            print_tree(t, i, depth + 1);
}

static const char *algo_name(int a)
{
    static const char *const names[] = {"Ring", "Tree", "Direct", "TwoShot", "PAT"};
    return a >= 0 && a < BT_NUM_ALGOS ? names[a] : "?";
}

static const char *proto_name(int p)
{
    return p == BT_PROTO_LL ? "LL" : p == BT_PROTO_LL128 ? "LL128" : "Simple";
}

/* What the tuner picks for a job of one rank per GPU of this machine (the CUDA executor's
 * default geometry; PROTO, ALGO and the thresholds from the environment as in a job), per
 * size as nccl-tests counts it, float. */
static void print_picks(const struct bt_topo *t)
{
    int n = t->ngpus, gpu[BT_TOPO_MAX_GPUS], x, y;
    for (int g = 0; g < n; g++)
        gpu[g] = g;
    int nvl = bt_topo_p2p_within(t, n, gpu, BT_PATH_NVL, &x, &y);
    struct bt_tune_settings set;
    bt_tune_settings_from_env(&set);
    struct bt_plan_target tg;
    bt_exec_cuda.model(n, nvl, &set, &tg);
    printf("\n# tuner picks, %d ranks (one per GPU%s): algorithm protocol channels\n", n,
           nvl ? ", every pair NVLink" : "");
    printf("%12s  %-24s  %-24s  %-24s\n", "bytes", "AllReduce", "AllGather", "ReduceScatter");
    const int colls[] = {BT_COLL_ALLREDUCE, BT_COLL_ALLGATHER, BT_COLL_REDUCESCATTER};
    for (size_t bytes = 8; bytes <= ((size_t)1 << 30); bytes *= 2) {
        printf("%12zu", bytes);
        for (int k = 0; k < 3; k++) {
            struct bt_tune_out o;
            bt_plan_pick(&tg, colls[k], bytes, BT_FLOAT32, &o);
            char cell[64];
            snprintf(cell, sizeof(cell), "%s %s %d", algo_name(o.algo), proto_name(o.proto),
                     o.nchannels);
            printf("  %-24s", cell);
        }
        printf("\n");
    }
}

/* The cost model across hosts (tune/cost.h, bt_tune_hosts_us) for jobs of every GPU of
 * this machine on each of `hosts` hosts, and of one rank per host (PAT's case). */
static int print_nodes(const struct bt_topo *t, int only, float net_hop, float nic_gbps,
                       struct bt_tune_fabric *fabric)
{
    int g = t->ngpus > 0 ? t->ngpus : 1, nnic = 0;
    double nic_total = 0, nic_one = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == BT_TOPO_NIC && (t->nodes[i].speed_gbps > 0 || nic_gbps > 0)) {
            double gbs = nic_gbps > 0 ? nic_gbps : t->nodes[i].speed_gbps / 8; /* Gb/s -> GB/s */
            nic_total += gbs;
            nic_one = nic_one > 0 ? nic_one : gbs;
            nnic++;
        }
    if (nnic == 0) {
        fprintf(stderr, "baton-topo: --nodes: the topology has no NIC%s\n",
                nic_gbps > 0 ? "" : " of known speed (--nic-gbps gives each NIC's GB/s)");
        return 1;
    }
    const struct bt_tune_costs *local = &bt_tune_gpu_defaults.local;
    if (net_hop <= 0)
        net_hop = bt_tune_gpu_defaults.net.c[BT_ALGO_RING][BT_PROTO_SIMPLE].hop_us;
    const struct bt_tune_cost *lr = &local->c[BT_ALGO_RING][BT_PROTO_SIMPLE];
    printf("# the model across hosts (tune/cost.h bt_tune_hosts_us), Simple, microseconds\n");
    printf(
        "# constants: base %.1f us, hop within a host %.1f us at %.0f GB/s (the GPU tuner's "
        "ring), network hop %.1f us, NICs %d x %.0f GB/s per host (one rank per host: one NIC)\n",
        lr->base_us, lr->hop_us, lr->gbps, net_hop, nnic, nic_one);
    if (fabric) {
        fabric->nics = nnic;
        printf("# fabric: %s, switches of %d ports (%.2f us each past the first on a hop), "
               "leaves %.2g:1 oversubscribed\n",
               fabric->kind == BT_FABRIC_RAIL ? "rail-optimized (NIC i on rail i, channels bound "
                                                "to rails)"
                                              : "fat-tree (a host's NICs on its leaf)",
               fabric->radix, fabric->switch_us, fabric->oversub);
    }
    printf("# AG/RS: AllGather and ReduceScatter (the same hops and bytes); PAT only with one "
           "rank per host; bytes as nccl-tests counts them\n");
    printf("%6s %12s | %d GPUs per host: %10s %10s %10s | 1 per host: %10s %10s %10s %10s\n",
           "hosts", "bytes", g, "AR ring", "AR tree", "AG/RS ring", "AR ring", "AR tree",
           "AG/RS ring", "AG/RS PAT");
    static const size_t sizes[] = {8, 64 << 10, 1 << 20, 16 << 20, 256 << 20};
    for (int h = only > 0 ? only : 2; h <= (only > 0 ? only : 4096); h *= 2) {
        struct bt_tune_hosts full = {h, g, local, BT_PROTO_SIMPLE, net_hop, (float)nic_total, NULL};
        struct bt_tune_hosts one = {h, 1, local, BT_PROTO_SIMPLE, net_hop, (float)nic_one, NULL};
        full.fabric = one.fabric = fabric;
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t b = sizes[k];
            printf("%6d %12zu | %16s %10.0f %10.0f %10.0f | %11s %10.0f %10.0f %10.0f %10.0f\n", h,
                   b, "", bt_tune_hosts_us(&full, BT_COLL_ALLREDUCE, BT_ALGO_RING, b),
                   bt_tune_hosts_us(&full, BT_COLL_ALLREDUCE, BT_ALGO_TREE, b),
                   bt_tune_hosts_us(&full, BT_COLL_ALLGATHER, BT_ALGO_RING, b), "",
                   bt_tune_hosts_us(&one, BT_COLL_ALLREDUCE, BT_ALGO_RING, b),
                   bt_tune_hosts_us(&one, BT_COLL_ALLREDUCE, BT_ALGO_TREE, b),
                   bt_tune_hosts_us(&one, BT_COLL_ALLGATHER, BT_ALGO_RING, b),
                   bt_tune_hosts_us(&one, BT_COLL_ALLGATHER, BT_ALGO_PAT, b));
        }
    }
    return 0;
}

/* The GPUs' paths to each other and to their nearest NICs. */
static void print_paths(const struct bt_topo *t)
{
    printf("\n# GPU paths (class, GB/s)\n");
    if (t->ngpus == 0)
        printf("no GPUs\n");
    else
        printf("      ");
    for (int b = 0; b < t->ngpus; b++)
        printf("  GPU%-9d", b);
    if (t->ngpus > 0)
        printf("\n");
    for (int a = 0; a < t->ngpus; a++) {
        printf("GPU%-3d", a);
        for (int b = 0; b < t->ngpus; b++) {
            if (a == b) {
                printf("  %-12s", "X");
                continue;
            }
            struct bt_topo_path p = bt_topo_path(t, t->gpu_node[a], t->gpu_node[b]);
            printf("  %-4s %-7.1f", bt_topo_path_name(p.cls), p.bw);
        }
        printf("\n");
    }
    int nic[BT_TOPO_MAX_GPUS];
    bt_topo_nics(t, nic);
    printf("\n# GPU -> NIC\n");
    for (int g = 0; g < t->ngpus; g++) {
        if (nic[g] < 0) {
            printf("GPU%d: no NIC\n", g);
            continue;
        }
        struct bt_topo_path p = bt_topo_path(t, t->gpu_node[g], nic[g]);
        printf("GPU%d: %s (%s, %.1f GB/s)\n", g, t->nodes[nic[g]].name, bt_topo_path_name(p.cls),
               p.bw);
    }
}

/* The rings over the GPUs, `nch` channels, with the AllReduce blocks in proportion to the
 * links where they differ (graph/ring_plan.h). */
static void print_rings(const struct bt_topo *t, int nch)
{
    int best[BT_TOPO_MAX_GPUS], order[BT_TOPO_MAX_GPUS];
    double bw = bt_topo_ring(t, best);
    printf("\n# rings (bottleneck %.1f GB/s)\n", bw);
    double m[BT_TOPO_MAX_GPUS * BT_TOPO_MAX_GPUS];
    int n = t->ngpus;
    bt_topo_bw_matrix(t, n, NULL, m);
    for (int c = 0; c < nch; c++) {
        uint32_t share[BT_TOPO_MAX_GPUS];
        bt_ring_channel_order(best, n, c, order);
        printf("channel %d:", c);
        for (int i = 0; i < n; i++)
            printf(" %d", order[i]);
        if (bt_ring_split(n, order, m, share)) {
            uint32_t eq[BT_TOPO_MAX_GPUS];
            for (int i = 0; i < n; i++)
                eq[i] = BT_RING_SPLIT_TOTAL / (uint32_t)n;
            printf("  blocks (%% per GPU):");
            for (int i = 0; i < n; i++)
                printf(" %.1f", 100.0 * share[order[i]] / BT_RING_SPLIT_TOTAL);
            printf("  (slowest link's time %.0f%% of equal blocks')",
                   100.0 * bt_ring_split_cost(n, order, m, share) /
                       bt_ring_split_cost(n, order, m, eq));
        }
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    const char *file = NULL;
    int dump = 0, nch = 2, nodes = 0, only = 0;
    float net_hop = 0, nic_gbps = 0;
    struct bt_tune_fabric fabric = {BT_FABRIC_FAT_TREE, 64, 0, 0.2f, 1.0f};
    int use_fabric = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
            file = argv[++i];
        } else if (strcmp(argv[i], "--dump") == 0) {
            dump = 1;
        } else if (strcmp(argv[i], "--channels") == 0 && i + 1 < argc) {
            nch = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--nodes") == 0) {
            nodes = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-' && (only = atoi(argv[i + 1])) > 0)
                i++;
        } else if (strcmp(argv[i], "--net-hop") == 0 && i + 1 < argc) {
            net_hop = (float)atof(argv[++i]);
        } else if (strcmp(argv[i], "--nic-gbps") == 0 && i + 1 < argc) {
            nic_gbps = (float)atof(argv[++i]);
        } else if (strcmp(argv[i], "--fabric") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "fat-tree") == 0 || strcmp(argv[i + 1], "rail") == 0)) {
            fabric.kind = strcmp(argv[++i], "rail") == 0 ? BT_FABRIC_RAIL : BT_FABRIC_FAT_TREE;
            use_fabric = 1;
        } else if (strcmp(argv[i], "--radix") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 2) {
            fabric.radix = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--switch-us") == 0 && i + 1 < argc) {
            fabric.switch_us = (float)atof(argv[++i]);
        } else if (strcmp(argv[i], "--oversub") == 0 && i + 1 < argc && atof(argv[i + 1]) >= 1) {
            fabric.oversub = (float)atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: baton-topo [--file F] [--dump] [--channels N] [--nodes [N]] "
                            "[--net-hop US] [--nic-gbps G] [--fabric fat-tree|rail] [--radix N] "
                            "[--switch-us US] [--oversub R]\n");
            return 2;
        }
    }
    static struct bt_topo t;
    bt_status_t st = file ? bt_topo_load(file, &t) : bt_topo_get(&t, 1);
    if (st != BT_OK) {
        fprintf(stderr, "baton-topo: no topology (%d)\n", (int)st);
        return 1;
    }
    if (dump) {
        bt_topo_save(&t, stdout);
        return 0;
    }
    if (nodes) {
        if (only > 0 && (only < 2 || only > 1 << 20)) {
            fprintf(stderr, "baton-topo: --nodes %d: want 2..1048576 hosts\n", only);
            return 2;
        }
        return print_nodes(&t, only, net_hop, nic_gbps, use_fabric ? &fabric : NULL);
    }
    printf("# devices\n");
    for (int i = 0; i < t.nnodes; i++)
        if (t.nodes[i].parent < 0)
            print_tree(&t, i, 0);

    print_paths(&t);
    if (t.ngpus > 1)
        print_rings(&t, nch);
    if (t.ngpus > 1)
        print_picks(&t);
    printf("\n# warnings\n");
    if (bt_topo_warnings(&t, stdout) == 0)
        printf("none\n");
    return 0;
}
