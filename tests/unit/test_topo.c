/*
 * Topology model on files of machines we do not have (tests/fixtures/topo/):
 *   pcie8      8 GPUs on PCIe, 2 sockets x 2 leaf switches, one uplink trained at x8:
 *              path classes PIX/PXB/SYS, the narrow uplink's bandwidth on its paths, a ring
 *              that crosses the sockets twice and the narrow uplink once each way, NICs
 *              per socket, a warning for the degraded link
 *   dgx8       8 GPUs on NVSwitch (18 links), a NIC per GPU behind its switch: every pair
 *              NVL at 18 x 25 GB/s, GPU i -> NIC i (rails), no warning
 *   gpu2split  2 GPUs on different sockets, one NIC: SYS, and warnings for both problems
 * and every file survives a save and reload unchanged; and what the tuner picks for a job of
 * one rank per GPU on pcie8 and dgx8 (the CUDA executor's default geometry, as baton-topo
 * prints it): one-shot LL for small AllReduces, LL128 only where every pair is NVLink, the
 * Simple ring for large ones, LL rings for small AllGathers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/redop.h"
#include "plan/plan.h"
#include "exec/exec.h"
#include "graph/ring_plan.h"
#include "harness.h"
#include "topo/topo.h"
#include "tune/tuner.h"

static struct bt_topo t, t2;

static void load(const char *name, struct bt_topo *x)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", BT_TOPO_DIR, name);
    BT_TEST_OK(bt_topo_load(path, x));
}

static int cls(const struct bt_topo *x, int a, int b)
{
    return bt_topo_path(x, x->gpu_node[a], x->gpu_node[b]).cls;
}

static double bw(const struct bt_topo *x, int a, int b)
{
    return bt_topo_path(x, x->gpu_node[a], x->gpu_node[b]).bw;
}

static int count_warnings(const struct bt_topo *x, const char *needle)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int n = bt_topo_warnings(x, f);
    fclose(f);
    if (needle)
        BT_TEST_CHECK(strstr(buf, needle) != NULL, "no warning mentions '%s' in:\n%s", needle, buf);
    free(buf);
    return n;
}

/* The ring is a permutation of the GPUs; returns its edges' classes and widths. */
static void ring_edges(const struct bt_topo *x, const int *order, int *nsys, int *nnarrow,
                       double narrow)
{
    int seen[BT_TOPO_MAX_GPUS] = {0};
    *nsys = *nnarrow = 0;
    for (int i = 0; i < x->ngpus; i++) {
        BT_TEST_CHECK(order[i] >= 0 && order[i] < x->ngpus && !seen[order[i]],
                      "ring is not a permutation at position %d", i);
        seen[order[i]] = 1;
        int a = order[i], b = order[(i + 1) % x->ngpus];
        *nsys += cls(x, a, b) == BT_PATH_SYS;
        *nnarrow += bw(x, a, b) < narrow;
    }
}

/* The AllReduce blocks of a ring over the file's GPUs: they add up exactly; where the links
 * differ the ranks beside the narrowest get more and the slowest link's time drops. */
static void check_split(const struct bt_topo *tp, const int *order, const char *what)
{
    int n = tp->ngpus;
    double m[BT_TOPO_MAX_GPUS * BT_TOPO_MAX_GPUS] = {0}, cmin = 1e300, cmax = 0;
    bt_topo_bw_matrix(tp, n, NULL, m);
    for (int p = 0; p < n; p++) {
        double c = m[order[p] * n + order[(p + 1) % n]];
        cmin = c < cmin ? c : cmin;
        cmax = c > cmax ? c : cmax;
    }
    uint32_t share[BT_TOPO_MAX_GPUS], eq[BT_TOPO_MAX_GPUS], sum = 0;
    int split = bt_ring_split(n, order, m, share);
    for (int i = 0; i < n; i++) {
        sum += share[i];
        eq[i] = BT_RING_SPLIT_TOTAL / (uint32_t)n;
    }
    BT_TEST_CHECK(sum == BT_RING_SPLIT_TOTAL, "%s: shares add up to %u", what, sum);
    double c_eq = bt_ring_split_cost(n, order, m, eq),
           c_split = bt_ring_split_cost(n, order, m, share);
    if (cmin < 0.85 * cmax) {
        BT_TEST_CHECK(split == 1, "%s: links %g..%g GB/s but an equal split", what, cmin, cmax);
        BT_TEST_CHECK(c_split < 0.9 * c_eq, "%s: split cost %g vs equal %g", what, c_split, c_eq);
    } else {
        BT_TEST_CHECK(split == 0, "%s: equal links but an unequal split", what);
    }
    printf("%s: ring links %.1f..%.1f GB/s, split %d, slowest link %.3f vs equal %.3f\n", what,
           cmin, cmax, split, c_split, c_eq);
}

static void test_pcie8(void)
{
    load("pcie8.txt", &t);
    BT_TEST_CHECK(t.ngpus == 8, "%d GPUs", t.ngpus);
    BT_TEST_CHECK(cls(&t, 0, 1) == BT_PATH_PIX, "0-1 %s", bt_topo_path_name(cls(&t, 0, 1)));
    BT_TEST_CHECK(cls(&t, 0, 2) == BT_PATH_PXB, "0-2 %s", bt_topo_path_name(cls(&t, 0, 2)));
    BT_TEST_CHECK(cls(&t, 0, 4) == BT_PATH_SYS, "0-4 %s", bt_topo_path_name(cls(&t, 0, 4)));
    BT_TEST_CHECK(cls(&t, 6, 7) == BT_PATH_PIX, "6-7 %s", bt_topo_path_name(cls(&t, 6, 7)));
    BT_TEST_CHECK(cls(&t, 4, 6) == BT_PATH_PXB, "4-6 %s", bt_topo_path_name(cls(&t, 4, 6)));
    double x8 = bt_topo_pcie_bw(4, 8), x16 = bt_topo_pcie_bw(4, 16);
    BT_TEST_CHECK(bw(&t, 0, 1) == x16 && bw(&t, 4, 6) == x8 && bw(&t, 6, 7) == x16,
                  "bandwidths %g %g %g", bw(&t, 0, 1), bw(&t, 4, 6), bw(&t, 6, 7));
    BT_TEST_CHECK(bw(&t, 0, 4) == 20.0, "SYS bandwidth %g", bw(&t, 0, 4));

    int order[BT_TOPO_MAX_GPUS], nsys, nnarrow;
    double bottleneck = bt_topo_ring(&t, order);
    BT_TEST_CHECK(bottleneck == x8, "bottleneck %g", bottleneck);
    ring_edges(&t, order, &nsys, &nnarrow, x8 + 0.01);
    BT_TEST_CHECK(nsys == 2, "the ring crosses the sockets %d times (2 is the least)", nsys);
    BT_TEST_CHECK(nnarrow == 2, "the ring uses the x8 uplink %d times (2 is the least)", nnarrow);
    int zigzag[8] = {0, 6, 1, 7, 2, 4, 3, 5}; /* a ring that ignores the topology */
    int zsys, znarrow;
    ring_edges(&t, zigzag, &zsys, &znarrow, x8 + 0.01);
    BT_TEST_CHECK(znarrow > nnarrow && zsys > nsys, "a zigzag ring: %d narrow, %d SYS", znarrow,
                  zsys);
    int ch1[BT_TOPO_MAX_GPUS];
    bt_ring_channel_order(order, 8, 1, ch1);
    for (int i = 0; i < 8; i++)
        BT_TEST_CHECK(ch1[i] == order[(8 - i) % 8], "channel 1 is not the reverse ring");
    check_split(&t, order, "pcie8");

    int nic[BT_TOPO_MAX_GPUS];
    bt_topo_nics(&t, nic);
    for (int g = 0; g < 8; g++)
        BT_TEST_CHECK(strcmp(t.nodes[nic[g]].name, g < 4 ? "nic0" : "nic1") == 0, "GPU %d uses %s",
                      g, t.nodes[nic[g]].name);
    count_warnings(&t, "sw3 runs at gen4 x8, capable of gen4 x16");

    /* A communicator's view: ranks on GPUs in a shuffled order (as CUDA_VISIBLE_DEVICES may
     * give them). Its ring follows the GPUs' best ring, so it crosses the narrow uplink and
     * the sockets twice each, like the GPU ring. */
    int gpu_of[8] = {5, 2, 7, 0, 3, 6, 1, 4}, rank_ring[8], gring[8];
    BT_TEST_CHECK(bt_topo_rank_ring(&t, 8, gpu_of, rank_ring) == x8, "rank ring bottleneck");
    for (int i = 0; i < 8; i++)
        gring[i] = gpu_of[rank_ring[i]];
    ring_edges(&t, gring, &nsys, &nnarrow, x8 + 0.01);
    BT_TEST_CHECK(nsys == 2 && nnarrow == 2, "rank ring: %d SYS, %d narrow links", nsys, nnarrow);
    /* GPUs from a file are matched by device number; unknown devices are refused */
    BT_TEST_CHECK(bt_topo_gpu_index(&t, "0000:1b:00.0", 3) == 3, "file GPUs by number");
    BT_TEST_CHECK(bt_topo_gpu_index(&t, NULL, 8) == -1, "device 8 of 8");
    /* P2P_LEVEL: classes by name; 0-1 share a switch (PIX), 0-4 cross the sockets (SYS) */
    BT_TEST_CHECK(bt_topo_path_parse("pix") == BT_PATH_PIX && bt_topo_path_parse("LOC") == -1 &&
                      bt_topo_path_parse("SYS") == BT_PATH_SYS && bt_topo_path_parse("x") == -2,
                  "path class names");
    int pair01[2] = {0, 1}, pair04[2] = {0, 4}, a = -1, b = -1;
    BT_TEST_CHECK(bt_topo_p2p_within(&t, 2, pair01, BT_PATH_PIX, &a, &b), "0-1 within PIX");
    BT_TEST_CHECK(!bt_topo_p2p_within(&t, 2, pair01, -1, &a, &b), "LOC allows no P2P");
    BT_TEST_CHECK(!bt_topo_p2p_within(&t, 2, pair04, BT_PATH_PHB, &a, &b) && a == 0 && b == 1,
                  "0-4 beyond PHB (pair %d %d)", a, b);
    BT_TEST_CHECK(bt_topo_p2p_within(&t, 8, gpu_of, BT_PATH_SYS, &a, &b), "all within SYS");
    /* the proxy's CPUs for a GPU on socket 1 */
    const char *cpus = bt_topo_numa_cpulist(&t, t.nodes[t.gpu_node[6]].numa);
    BT_TEST_CHECK(cpus && strcmp(cpus, "32-63") == 0, "GPU 6's CPUs %s", cpus ? cpus : "(none)");
}

static void test_dgx8(void)
{
    load("dgx8.txt", &t);
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            if (a != b)
                BT_TEST_CHECK(cls(&t, a, b) == BT_PATH_NVL && bw(&t, a, b) == 18 * 25.0,
                              "%d-%d %s %g", a, b, bt_topo_path_name(cls(&t, a, b)), bw(&t, a, b));
    int order[BT_TOPO_MAX_GPUS];
    BT_TEST_CHECK(bt_topo_ring(&t, order) == 450.0, "bottleneck");
    check_split(&t, order, "dgx8");
    int nic[BT_TOPO_MAX_GPUS];
    bt_topo_nics(&t, nic);
    for (int g = 0; g < 8; g++) {
        char want[16];
        snprintf(want, sizeof(want), "nic%d", g);
        BT_TEST_CHECK(strcmp(t.nodes[nic[g]].name, want) == 0, "GPU %d uses %s", g,
                      t.nodes[nic[g]].name);
        BT_TEST_CHECK(bt_topo_path(&t, t.gpu_node[g], nic[g]).cls == BT_PATH_PIX, "GPU %d NIC path",
                      g);
    }
    BT_TEST_CHECK(count_warnings(&t, NULL) == 0, "warnings on a healthy DGX");
}

static void test_gpu2split(void)
{
    load("gpu2split.txt", &t);
    BT_TEST_CHECK(cls(&t, 0, 1) == BT_PATH_SYS, "0-1 %s", bt_topo_path_name(cls(&t, 0, 1)));
    BT_TEST_CHECK(count_warnings(&t, "GPUs 0 and 1 are on different NUMA nodes") == 2,
                  "two warnings");
    count_warnings(&t, "GPU 1 (NUMA node 1) has its nearest NIC eth0 on NUMA node 0");
}

struct pick {
    int coll;
    size_t bytes;
    int algo, proto, nch;
};

/* The tuner's picks for 8 ranks on machine `name` (pins what baton-topo --file prints). */
static void test_picks(const char *name, const struct pick *want, int nwant)
{
    load(name, &t);
    int gpu[BT_TOPO_MAX_GPUS], x, y;
    for (int g = 0; g < t.ngpus; g++)
        gpu[g] = g;
    int nvl = bt_topo_p2p_within(&t, t.ngpus, gpu, BT_PATH_NVL, &x, &y);
    struct bt_tune_settings set;
    bt_tune_settings_from_env(&set);
    struct bt_plan_target tg;
    bt_exec_cuda.model(t.ngpus, nvl, &set, &tg);
    for (int i = 0; i < nwant; i++) {
        struct bt_tune_out o;
        bt_plan_pick(&tg, want[i].coll, want[i].bytes, BT_FLOAT32, &o);
        BT_TEST_CHECK(o.algo == want[i].algo && o.proto == want[i].proto &&
                          o.nchannels == want[i].nch,
                      "%s, coll %d, %zu B: algo %d proto %d %d channels, expected %d %d %d", name,
                      want[i].coll, want[i].bytes, o.algo, o.proto, o.nchannels, want[i].algo,
                      want[i].proto, want[i].nch);
    }
}

/* The CUDA executor's default LL128 slots as the model sees them (exec/cuda/cuda_comm.h): ring
 * FIFOs share 64 MB over the channels (64 on an 8-GPU machine: 128 KB slots, 120/128 of it
 * payload), send/recv FIFOs keep 64 KB; no LL128 without NVLink between every pair. */
static void test_model_ll128_slots(void)
{
    struct bt_tune_settings set;
    bt_tune_settings_from_env(&set);
    struct bt_plan_target tg;
    bt_exec_cuda.model(8, 1, &set, &tg);
    BT_TEST_CHECK(tg.max_channels == 64 && tg.ll128_payload == 128 * 1024 / 128 * 120 &&
                      tg.direct_ll128_payload == 64 * 1024 / 128 * 120,
                  "8 NVLink GPUs: %d channels, ring LL128 payload %zu, send/recv %zu",
                  tg.max_channels, (size_t)tg.ll128_payload, (size_t)tg.direct_ll128_payload);
    bt_exec_cuda.model(8, 0, &set, &tg);
    BT_TEST_CHECK(tg.ll128_payload == 0, "8 GPUs without NVLink: ring LL128 payload %zu",
                  (size_t)tg.ll128_payload);
}

/* save -> load gives the same paths and NICs */
static void test_roundtrip(const char *name)
{
    load(name, &t);
    char tmp[] = "/tmp/baton-topo-XXXXXX";
    int fd = mkstemp(tmp);
    BT_TEST_CHECK(fd >= 0, "mkstemp");
    FILE *f = fdopen(fd, "w");
    BT_TEST_OK(bt_topo_save(&t, f));
    fclose(f);
    BT_TEST_OK(bt_topo_load(tmp, &t2));
    unlink(tmp);
    BT_TEST_CHECK(t2.ngpus == t.ngpus && t2.nnodes == t.nnodes, "%s: sizes differ", name);
    for (int a = 0; a < t.ngpus; a++)
        for (int b = 0; b < t.ngpus; b++)
            if (a != b)
                BT_TEST_CHECK(cls(&t, a, b) == cls(&t2, a, b) && bw(&t, a, b) == bw(&t2, a, b),
                              "%s: path %d-%d changed", name, a, b);
    int n1[BT_TOPO_MAX_GPUS], n2[BT_TOPO_MAX_GPUS];
    bt_topo_nics(&t, n1);
    bt_topo_nics(&t2, n2);
    for (int g = 0; g < t.ngpus; g++)
        BT_TEST_CHECK(strcmp(t.nodes[n1[g]].name, t2.nodes[n2[g]].name) == 0, "%s: NIC of %d", name,
                      g);
}

int main(void)
{
    test_pcie8();
    test_dgx8();
    test_gpu2split();
    test_model_ll128_slots();
    enum { AR = BT_COLL_ALLREDUCE, AG = BT_COLL_ALLGATHER, RS = BT_COLL_REDUCESCATTER };
    enum { RING = BT_ALGO_RING, DIRECT = BT_ALGO_DIRECT };
    enum { LL = BT_PROTO_LL, SIMPLE = BT_PROTO_SIMPLE, LL128 = BT_PROTO_LL128 };
    const struct pick dgx8[] = {
        {AR, 8, DIRECT, LL, 1},
        {AR, 64 << 10, DIRECT, LL, 8},
        {AR, 256 << 10, DIRECT, LL128, 8},
        {AR, 1 << 20, RING, LL, 64},
        /* the LL128 ring between the LL ring and Simple (a prediction: docs/TUNING.md) */
        {AR, 4 << 20, RING, LL128, 32},
        {AR, 16 << 20, RING, SIMPLE, 64},
        {AR, 1 << 30, RING, SIMPLE, 64},
        {AG, 8, RING, LL, 1},
        {AG, 512 << 10, RING, LL, 32},
        {AG, 1 << 20, RING, LL128, 8},
        {AG, 32 << 20, RING, SIMPLE, 64},
        {RS, 4 << 20, RING, LL128, 32},
        {RS, 1 << 30, RING, SIMPLE, 64},
    };
    test_picks("dgx8.txt", dgx8, (int)(sizeof(dgx8) / sizeof(dgx8[0])));
    const struct pick pcie8[] = {
        {AR, 8, DIRECT, LL, 1},
        {AR, 128 << 10, DIRECT, LL, 8},
        {AR, 512 << 10, DIRECT, SIMPLE, 8},
        {AR, 2 << 20, RING, SIMPLE, 16},
        {AR, 1 << 30, RING, SIMPLE, 64},
        {AG, 8, RING, LL, 1},
        {RS, 8 << 20, RING, SIMPLE, 64},
    };
    test_picks("pcie8.txt", pcie8, (int)(sizeof(pcie8) / sizeof(pcie8[0])));
    test_roundtrip("pcie8.txt");
    test_roundtrip("dgx8.txt");
    test_roundtrip("gpu2split.txt");
    /* discovery on this machine must work without GPUs, NVML or NICs */
    BT_TEST_OK(bt_topo_discover(&t));
    BT_TEST_CHECK(t.nnodes >= 1 && t.nodes[0].kind == BT_TOPO_NUMA, "no NUMA node discovered");
    printf("test_topo: ok\n");
    return 0;
}
