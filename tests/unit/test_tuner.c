/*
 * The tuner's choices (tune/tuner.c) with the host's and the GPU's defaults: algorithm,
 * protocol, channels and chunk by size and rank count; PROTO / ALGO / *_THRESHOLD /
 * MIN_NCHANNELS overrides; the network forcing Simple; the clamps. Every rank must decide
 * alike from the same inputs, so these are the schedules' contract.
 */
#include <math.h>
#include <string.h>

#include "coll/pat.h"
#include "harness.h"
#include "tune/tuner.h"

#define KB 1024
#define MB (1024 * 1024)

static struct bt_tune_settings env_defaults(void)
{
    struct bt_tune_settings s;
    memset(&s, 0, sizeof(s));
    s.ll_threshold = s.tree_threshold = s.direct_threshold = s.ll128_threshold = -1;
    s.min_nchannels = 1;
    s.ll_ok = s.simple_ok = s.ll128_ok = s.ring_ok = s.tree_ok = s.direct_ok = s.twoshot_ok = 1;
    s.pat_ok = 1;
    return s;
}

static int no_nvlink;  /* the GPUs are not all joined by NVLink: no LL128 */
static int shared_gpu; /* every rank on one GPU (TEST_SAME_GPU) */
static int gpu_max_channels = 64, gpu_direct_channels = 32;
static float net_gbps, net_latency_us; /* the network's reported figures (0: none) */
static int one_per_host;               /* every rank on a host of its own */
static int gpu_trees; /* GPU connectors through the network with trees over hosts */
static int nhosts;    /* hosts the ranks are on (0: one) */
static int no_direct; /* ranks on several hosts, more than 2: no one-shot (host executor) */

struct want {
    int algo, proto, nch;
};

static struct bt_tune_out tune(const struct bt_tune_settings *set,
                               const struct bt_tune_defaults *def, int coll, int nranks,
                               size_t bytes, int gpu, int shm_all)
{
    struct bt_tune_in in = {
        .set = set,
        .def = def,
        .coll = coll,
        .nranks = nranks,
        .bytes = bytes,
        .esize = 4,
        .max_channels = gpu ? gpu_max_channels : 2,
        .simple_slot = gpu ? 512 * KB : 128 * KB,
        .ll_payload = gpu ? 32 * KB : 8 * KB,
        .direct_slot = gpu ? 512 * KB : 64 * KB,
        .ll128_payload = gpu && !no_nvlink ? 480 * KB : 0,
        .direct_ll128_payload = gpu && !no_nvlink ? 60 * KB : 0,
        .direct_ok = !no_direct,
        .direct_max_channels = gpu ? gpu_direct_channels : 1,
        .tree_ok = !gpu || gpu_trees,
        .tree_max_channels = gpu && gpu_trees ? gpu_max_channels / 2 : 0,
        .nhosts = nhosts,
        .pat_ok = 1,
        .one_per_host = one_per_host,
        .shm_all = shm_all,
        .shared_gpu = shared_gpu,
        .net_gbps = net_gbps,
        .net_latency_us = net_latency_us,
    };
    struct bt_tune_out out;
    bt_tune_coll(&in, &out);
    BT_TEST_CHECK(out.nchannels >= 1 && out.nchannels <= in.max_channels,
                  "channels %d outside 1..%d", out.nchannels, in.max_channels);
    size_t slot = out.proto == BT_PROTO_LL ? in.ll_payload
                  : out.proto == BT_PROTO_LL128 && bt_algo_all_peers(out.algo)
                      ? in.direct_ll128_payload
                  : out.proto == BT_PROTO_LL128 ? in.ll128_payload
                  : bt_algo_all_peers(out.algo) ? in.direct_slot
                                                : in.simple_slot;
    BT_TEST_CHECK(out.chunk == slot / in.esize, "chunk %zu, expected %zu", out.chunk,
                  slot / in.esize);
    return out;
}

static void expect(const char *what, struct bt_tune_out o, struct want w)
{
    BT_TEST_CHECK(o.algo == w.algo && o.proto == w.proto && o.nchannels == w.nch,
                  "%s: algo %d proto %d nch %d, expected algo %d proto %d nch %d", what, o.algo,
                  o.proto, o.nchannels, w.algo, w.proto, w.nch);
}

enum {
    RING = BT_ALGO_RING,
    TREE = BT_ALGO_TREE,
    DIRECT = BT_ALGO_DIRECT,
    TWOSHOT = BT_ALGO_TWOSHOT,
    PAT = BT_ALGO_PAT
};
enum { LL = BT_PROTO_LL, SIMPLE = BT_PROTO_SIMPLE, LL128 = BT_PROTO_LL128 };

static void host_defaults(void)
{
    struct bt_tune_settings s = env_defaults(), s2 = env_defaults();
    s2.twoshot_ok = 0;
    const struct bt_tune_defaults *d = &bt_tune_host_defaults;
    const int AR = BT_COLL_ALLREDUCE;
    expect("host AR 2r 8 B", tune(&s, d, AR, 2, 8, 0, 1), (struct want){DIRECT, LL, 1});
    expect("host AR 2r 4 KB", tune(&s, d, AR, 2, 4 * KB, 0, 1), (struct want){DIRECT, SIMPLE, 1});
    expect("host AR 2r 16 KB", tune(&s, d, AR, 2, 16 * KB, 0, 1), (struct want){DIRECT, SIMPLE, 1});
    expect("host AR 2r 64 KB", tune(&s, d, AR, 2, 64 * KB, 0, 1), (struct want){RING, SIMPLE, 1});
    expect("host AR 2r 4 MB", tune(&s, d, AR, 2, 4 * MB, 0, 1), (struct want){RING, SIMPLE, 2});
    /* more ranks: the one-shot moves (n - 1) x bytes, trees take fewer hops than the ring */
    expect("host AR 5r 4 KB", tune(&s, d, AR, 5, 4 * KB, 0, 1), (struct want){DIRECT, SIMPLE, 1});
    /* the two-shot's 2 hops beat the tree's 6 (measured at 4 ranks, 16 KB: 17.7 us, tree 19.9) */
    expect("host AR 5r 16 KB", tune(&s, d, AR, 5, 16 * KB, 0, 1),
           (struct want){TWOSHOT, SIMPLE, 1});
    expect("host AR 5r 16 KB no two-shot", tune(&s2, d, AR, 5, 16 * KB, 0, 1),
           (struct want){TREE, SIMPLE, 1});
    expect("host AR 5r 1 MB", tune(&s, d, AR, 5, 1 * MB, 0, 1), (struct want){RING, SIMPLE, 2});
    expect("host AG 4r 128 B", tune(&s, d, BT_COLL_ALLGATHER, 4, 128, 0, 1),
           (struct want){RING, LL, 1});
    /* the network: Simple only, one channel; two ranks one-shot up to 256 KB */
    expect("host net AR 2r 8 B", tune(&s, d, AR, 2, 8, 0, 0), (struct want){DIRECT, SIMPLE, 1});
    expect("host net AR 2r 257 KB", tune(&s, d, AR, 2, 257 * KB, 0, 0),
           (struct want){RING, SIMPLE, 1});
    expect("host net AG 4r 8 B", tune(&s, d, BT_COLL_ALLGATHER, 4, 8, 0, 0),
           (struct want){RING, SIMPLE, 1});
    /* across hosts (more than 2 ranks: no one-shot) the tree's 2 log2(n) hops win small
     * sizes from 4 ranks, the ring's (n - 1)/n bytes large ones */
    no_direct = 1;
    expect("host net AR 3r 4 KB", tune(&s, d, AR, 3, 4 * KB, 0, 0), (struct want){RING, SIMPLE, 1});
    expect("host net AR 4r 4 KB", tune(&s, d, AR, 4, 4 * KB, 0, 0), (struct want){TREE, SIMPLE, 1});
    expect("host net AR 8r 64 KB", tune(&s, d, AR, 8, 64 * KB, 0, 0),
           (struct want){TREE, SIMPLE, 1});
    expect("host net AR 8r 64 MB", tune(&s, d, AR, 8, 64 * MB, 0, 0),
           (struct want){RING, SIMPLE, 1});
    no_direct = 0;
    expect("host send", tune(&s, d, BT_COLL_SEND, 2, 8, 0, 1), (struct want){RING, SIMPLE, 1});
}

static void gpu_defaults(void)
{
    struct bt_tune_settings s = env_defaults();
    const struct bt_tune_defaults *d = &bt_tune_gpu_defaults;
    const int AR = BT_COLL_ALLREDUCE;
    expect("gpu AR 8 B", tune(&s, d, AR, 2, 8, 1, 1), (struct want){DIRECT, LL, 1});
    expect("gpu AR 16 KB", tune(&s, d, AR, 2, 16 * KB, 1, 1), (struct want){DIRECT, LL, 8});
    expect("gpu AR 512 KB", tune(&s, d, AR, 2, 512 * KB, 1, 1), (struct want){DIRECT, LL, 32});
    expect("gpu AR 1 MB", tune(&s, d, AR, 2, 1 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    expect("gpu AR 2 MB", tune(&s, d, AR, 2, 2 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    no_nvlink = 1; /* PCIe, or host shared memory: no LL128, and LL kept within 512 KB */
    expect("gpu AR 512 KB no NVLink", tune(&s, d, AR, 2, 512 * KB, 1, 1),
           (struct want){DIRECT, LL, 32});
    expect("gpu AR 1 MB no NVLink", tune(&s, d, AR, 2, 1 * MB, 1, 1),
           (struct want){DIRECT, SIMPLE, 32});
    expect("gpu AR 2 MB no NVLink", tune(&s, d, AR, 2, 2 * MB, 1, 1),
           (struct want){DIRECT, SIMPLE, 32});
    expect("gpu AR 4 MB no NVLink", tune(&s, d, AR, 2, 4 * MB, 1, 1),
           (struct want){RING, SIMPLE, 32});
    no_nvlink = 0;
    expect("gpu AR 1 GB", tune(&s, d, AR, 2, 1024 * MB, 1, 1), (struct want){RING, SIMPLE, 64});
    /* no trees on GPUs, even when asked */
    struct bt_tune_settings t = s;
    t.ring_ok = t.direct_ok = t.twoshot_ok = 0;
    expect("gpu ALGO=Tree", tune(&t, d, AR, 8, 16 * MB, 1, 1), (struct want){RING, SIMPLE, 64});
    /* nor does TREE_THRESHOLD turn the ring into the one-shot where trees do not run */
    t = s;
    t.tree_threshold = 4 * MB;
    expect("gpu TREE_THRESHOLD", tune(&t, d, AR, 8, 2 * MB, 1, 1), (struct want){RING, LL, 64});
    expect("gpu AG 64 KB", tune(&s, d, BT_COLL_ALLGATHER, 2, 64 * KB, 1, 1),
           (struct want){RING, LL, 4});
    /* through the network: Simple, a channel per MB */
    expect("gpu net AR 64 MB", tune(&s, d, AR, 2, 64 * MB, 1, 0), (struct want){RING, SIMPLE, 64});
    expect("gpu net AR 4 MB", tune(&s, d, AR, 2, 4 * MB, 1, 0), (struct want){RING, SIMPLE, 4});
}

static void overrides(void)
{
    const struct bt_tune_defaults *h = &bt_tune_host_defaults, *g = &bt_tune_gpu_defaults;
    const int AR = BT_COLL_ALLREDUCE;
    struct bt_tune_settings s = env_defaults();
    s.simple_ok = s.ll128_ok = 0; /* PROTO=LL */
    expect("PROTO=LL host 4 MB", tune(&s, h, AR, 4, 4 * MB, 0, 1), (struct want){TWOSHOT, LL, 1});
    expect("PROTO=LL net stays Simple", tune(&s, h, AR, 4, 8, 0, 0),
           (struct want){DIRECT, SIMPLE, 1});
    s = env_defaults();
    s.ll_ok = s.ll128_ok = 0; /* PROTO=Simple */
    expect("PROTO=Simple gpu 8 B", tune(&s, g, AR, 2, 8, 1, 1), (struct want){DIRECT, SIMPLE, 1});
    s = env_defaults();
    s.ring_ok = s.tree_ok = 0; /* ALGO=Direct */
    expect("ALGO=Direct 1 GB", tune(&s, g, AR, 2, 1024 * MB, 1, 1),
           (struct want){DIRECT, LL128, 32});
    no_nvlink = 1;
    expect("ALGO=Direct 1 GB no NVLink", tune(&s, g, AR, 2, 1024 * MB, 1, 1),
           (struct want){DIRECT, SIMPLE, 32});
    no_nvlink = 0;
    s = env_defaults();
    s.direct_ok = s.tree_ok = 0; /* ALGO=Ring */
    expect("ALGO=Ring gpu 8 B", tune(&s, g, AR, 2, 8, 1, 1), (struct want){RING, LL, 1});
    s = env_defaults();
    s.ll_threshold = 0;
    s.direct_threshold = 0;
    expect("thresholds 0", tune(&s, h, AR, 2, 8, 0, 1), (struct want){RING, SIMPLE, 1});
    s = env_defaults();
    s.ll_threshold = 4 * MB;
    expect("LL_THRESHOLD 4 MB gpu AG", tune(&s, g, BT_COLL_ALLGATHER, 2, 4 * MB, 1, 1),
           (struct want){RING, LL, 64});
    s = env_defaults();
    s.min_nchannels = 16;
    /* GPU: MIN_NCHANNELS spreads everything; host: the Simple ring only (and the clamp) */
    expect("MIN 16 gpu direct LL", tune(&s, g, AR, 2, 8, 1, 1), (struct want){DIRECT, LL, 16});
    expect("MIN 16 gpu ring LL", tune(&s, g, BT_COLL_ALLGATHER, 2, 8, 1, 1),
           (struct want){RING, LL, 16});
    expect("MIN 16 host LL", tune(&s, h, BT_COLL_ALLGATHER, 2, 8, 0, 1),
           (struct want){RING, LL, 1});
    expect("MIN 16 host Simple", tune(&s, h, BT_COLL_ALLGATHER, 2, 64 * KB, 0, 1),
           (struct want){RING, SIMPLE, 2});
    expect("MIN 16 host net", tune(&s, h, AR, 4, 1 * MB, 0, 0), (struct want){RING, SIMPLE, 2});
}

/* LL128: only over NVLink; by default the one-shot AllReduce between LL and Simple (to about
 * 4 MB for 2 ranks; the LL128 ring from 4 ranks on); forced, the rings too */
static void ll128(void)
{
    const struct bt_tune_defaults *h = &bt_tune_host_defaults, *g = &bt_tune_gpu_defaults;
    const int AR = BT_COLL_ALLREDUCE, AG = BT_COLL_ALLGATHER;
    struct bt_tune_settings s = env_defaults();
    expect("default 1 MB", tune(&s, g, AR, 2, 1 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    expect("default 3 MB", tune(&s, g, AR, 2, 3 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    /* measured on 2 x H200: the Simple ring 32.5 us, the one-shot LL128 34.0; the LL128 ring
     * (predicted: 2 ranks on one GPU gave it no lower latency than Simple's) never below
     * Simple's */
    expect("default 4 MB", tune(&s, g, AR, 2, 4 * MB, 1, 1), (struct want){RING, SIMPLE, 32});
    expect("default 8 MB", tune(&s, g, AR, 2, 8 * MB, 1, 1), (struct want){RING, SIMPLE, 64});
    s.ll_ok = s.simple_ok = 0; /* PROTO=LL128 */
    expect("PROTO=LL128 8 B", tune(&s, g, AR, 2, 8, 1, 1), (struct want){DIRECT, LL128, 1});
    expect("PROTO=LL128 1 MB", tune(&s, g, AR, 2, 1 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    expect("PROTO=LL128 2 MB", tune(&s, g, AR, 2, 2 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    /* the one-shot LL128 is cheaper than the LL128 ring (predicted figures) to ~5.5 MB */
    expect("PROTO=LL128 8 MB: ring", tune(&s, g, AR, 2, 8 * MB, 1, 1),
           (struct want){RING, LL128, 64});
    expect("PROTO=LL128 32 MB: ring", tune(&s, g, AR, 2, 32 * MB, 1, 1),
           (struct want){RING, LL128, 64});
    expect("PROTO=LL128 AG: LL128 ring", tune(&s, g, AG, 2, 64 * KB, 1, 1),
           (struct want){RING, LL128, 1});
    expect("PROTO=LL128 host: Simple", tune(&s, h, AR, 2, 8, 0, 1),
           (struct want){DIRECT, SIMPLE, 1});
    expect("PROTO=LL128 net: Simple", tune(&s, g, AR, 2, 8, 1, 0), (struct want){RING, SIMPLE, 1});
    s.ring_ok = s.tree_ok = 0; /* and ALGO=Direct */
    expect("Direct LL128 4 MB", tune(&s, g, AR, 2, 4 * MB, 1, 1), (struct want){DIRECT, LL128, 32});
    s = env_defaults();
    s.ll128_threshold = 4 * MB;
    expect("LL128_THRESHOLD 256 KB: LL", tune(&s, g, AR, 2, 256 * KB, 1, 1),
           (struct want){DIRECT, LL, 32});
    expect("LL128_THRESHOLD 1 MB", tune(&s, g, AR, 2, 1 * MB, 1, 1),
           (struct want){DIRECT, LL128, 32});
    expect("LL128_THRESHOLD 4 MB", tune(&s, g, AR, 2, 4 * MB, 1, 1),
           (struct want){DIRECT, LL128, 32});
    expect("LL128_THRESHOLD 8 MB: ring", tune(&s, g, AR, 2, 8 * MB, 1, 1),
           (struct want){RING, SIMPLE, 64});
    /* 4 ranks: one-shot up to 4 MB / 3 */
    expect("LL128_THRESHOLD 4r 1 MB", tune(&s, g, AR, 4, 1 * MB, 1, 1),
           (struct want){DIRECT, LL128, 32});
    expect("LL128_THRESHOLD 4r 2 MB: ring", tune(&s, g, AR, 4, 2 * MB, 1, 1),
           (struct want){RING, LL, 64});
    s.ll128_ok = 0; /* PROTO=^LL128 */
    expect("PROTO=^LL128 1 MB", tune(&s, g, AR, 2, 1 * MB, 1, 1), (struct want){DIRECT, LL, 32});
    expect("PROTO=^LL128 4 MB", tune(&s, g, AR, 2, 4 * MB, 1, 1), (struct want){RING, SIMPLE, 32});
}

/* The cost model against the measurements it was fitted to (2 ranks; bench/results, the
 * commits named in docs/TUNING.md): each figure within 20% (the network's, noisier, 25%), so
 * that a change of figures that no longer describes what was measured fails here. */
struct measured {
    const struct bt_tune_costs *costs;
    int algo, proto;
    size_t bytes;
    double us, tolerance;
};

static void calibration(void)
{
    const struct bt_tune_costs *g = &bt_tune_gpu_defaults.local, *h = &bt_tune_host_defaults.local;
    const struct bt_tune_costs *hn = &bt_tune_host_defaults.net;
    const struct measured m[] = {
        /* 2 x H200, NVLink: one-shot LL d69b7b6, LL128 913c5ee, the rest cc54ccc */
        {g, DIRECT, LL, 512 * KB, 10.90, 0.2},
        {g, DIRECT, LL, 1 * MB, 16.85, 0.2},
        {g, DIRECT, LL, 2 * MB, 28.48, 0.2},
        {g, DIRECT, LL128, 1 * MB, 14.00, 0.2},
        {g, DIRECT, LL128, 2 * MB, 20.91, 0.2},
        {g, DIRECT, LL128, 4 * MB, 34.02, 0.2},
        {g, DIRECT, LL128, 8 * MB, 59.85, 0.2},
        {g, DIRECT, SIMPLE, 1 * MB, 18.89, 0.2},
        {g, DIRECT, SIMPLE, 4 * MB, 38.39, 0.2},
        {g, DIRECT, SIMPLE, 16 * MB, 117.6, 0.2},
        {g, RING, LL, 1 * MB, 18.14, 0.2},
        {g, RING, LL, 2 * MB, 24.61, 0.2},
        {g, RING, LL, 4 * MB, 39.08, 0.2},
        {g, RING, SIMPLE, 2 * MB, 26.99, 0.2},
        {g, RING, SIMPLE, 8 * MB, 46.09, 0.2},
        {g, RING, SIMPLE, 32 * MB, 124.4, 0.2},
        /* the 2-core development machine, shared memory */
        {h, DIRECT, LL, 8, 0.68, 0.2},
        {h, DIRECT, LL, 2 * KB, 2.36, 0.2},
        {h, DIRECT, SIMPLE, 2 * KB, 1.22, 0.2},
        {h, DIRECT, SIMPLE, 16 * KB, 4.13, 0.2},
        {h, DIRECT, SIMPLE, 128 * KB, 26.95, 0.2},
        {h, RING, SIMPLE, 16 * KB, 4.76, 0.2},
        {h, RING, SIMPLE, 128 * KB, 21.68, 0.2},
        /* loopback sockets */
        {hn, DIRECT, SIMPLE, 64 * KB, 29.0, 0.25},
        {hn, DIRECT, SIMPLE, 1 * MB, 440.0, 0.25},
        {hn, RING, SIMPLE, 64 * KB, 38.0, 0.25},
        {hn, RING, SIMPLE, 1 * MB, 390.0, 0.25},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        double us = bt_tune_allreduce_us(m[i].costs, m[i].algo, m[i].proto, 2, 1, m[i].bytes);
        double err = us / m[i].us - 1;
        BT_TEST_CHECK(err <= m[i].tolerance && err >= -m[i].tolerance,
                      "figure %zu (algo %d proto %d, %zu B): model %.2f us, measured %.2f", i,
                      m[i].algo, m[i].proto, m[i].bytes, us, m[i].us);
    }
    /* the shapes: more ranks, more hops for the ring, more bytes for the one-shot */
    BT_TEST_CHECK(bt_tune_allreduce_us(g, RING, LL, 8, 1, 8) >
                      bt_tune_allreduce_us(g, RING, LL, 2, 1, 8),
                  "ring latency grows with ranks");
    BT_TEST_CHECK(bt_tune_allreduce_us(g, DIRECT, LL, 8, 1, MB) >
                      3 * bt_tune_allreduce_us(g, DIRECT, LL, 2, 1, MB),
                  "one-shot bytes grow with ranks");
    BT_TEST_CHECK(bt_tune_allreduce_us(h, TREE, SIMPLE, 8, 1, 8) <
                      bt_tune_allreduce_us(h, RING, SIMPLE, 8, 1, 8),
                  "a tree of 8 has fewer hops than the ring");
    BT_TEST_CHECK(bt_tune_allreduce_us(g, TREE, SIMPLE, 2, 1, 8) >= 1e29, "no trees on GPUs");
}

/* The network's reported figures bound the fitted ones: on a 1 Gb/s link the one-shot's
 * (n - 1) x S bytes cost more than the ring's extra hops from a few KB on (4 ranks: direct
 * 3S/125 vs ring 37.5 + 1.5S/125 us), where the fit (2.4-2.8 GB/s) keeps the one-shot to
 * ~50 KB; a faster link than the fit changes nothing; shared memory ignores them. */
static void net_link_bounds(void)
{
    struct bt_tune_settings s = env_defaults();
    const struct bt_tune_defaults *d = &bt_tune_host_defaults;
    const int AR = BT_COLL_ALLREDUCE;
    expect("host AR 4r 16K net", tune(&s, d, AR, 4, 16 * KB, 0, 0),
           (struct want){DIRECT, SIMPLE, 1});
    net_gbps = 0.125f; /* 1 Gb/s */
    expect("host AR 4r 16K net 1Gb/s", tune(&s, d, AR, 4, 16 * KB, 0, 0),
           (struct want){RING, SIMPLE, 1});
    expect("host AR 4r 2K net 1Gb/s", tune(&s, d, AR, 4, 2 * KB, 0, 0),
           (struct want){DIRECT, SIMPLE, 1});
    struct bt_tune_out shm_bounded = tune(&s, d, AR, 4, 16 * KB, 0, 1);
    net_gbps = 0;
    struct bt_tune_out shm = tune(&s, d, AR, 4, 16 * KB, 0, 1);
    expect("host AR 4r 16K shm, net 1Gb/s", shm_bounded,
           (struct want){shm.algo, shm.proto, shm.nchannels});
    net_gbps = 100.0f; /* 800 Gb/s: above the fit */
    expect("host AR 4r 16K net 800Gb/s", tune(&s, d, AR, 4, 16 * KB, 0, 0),
           (struct want){DIRECT, SIMPLE, 1});
    net_gbps = 0;
    net_latency_us = 200.0f; /* every hop at least 200 us: the one hop wins longer */
    expect("host AR 4r 64K net 200us", tune(&s, d, AR, 4, 64 * KB, 0, 0),
           (struct want){DIRECT, SIMPLE, 1});
    net_latency_us = 0;
}

/* AllReduce out of place, us per call, by (algorithm, protocol); 1e9: not measured (the
 * tuner must not pick it) */
enum { M_RS, M_RL, M_WS, M_WL, M_D128, M_DS, M_DL, M_R128, NV };
struct shared_row {
    size_t bytes;
    double us[NV]; /* ring Simple, ring LL, two-shot Simple, LL, one-shot LL128, Simple, LL,
                    * ring LL128 */
};

/* At every size of m the tuner's pick for `nranks` ranks sharing one GPU, measured, is within
 * 10% of the fastest measured there (the bar). */
static void check_shared_picks(struct bt_tune_settings *s, int nranks, const struct shared_row *m,
                               size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct bt_tune_out o =
            tune(s, &bt_tune_gpu_defaults, BT_COLL_ALLREDUCE, nranks, m[i].bytes, 1, 1);
        int k = o.algo == RING      ? (o.proto == LL      ? M_RL
                                       : o.proto == LL128 ? M_R128
                                                          : M_RS)
                : o.algo == TWOSHOT ? (o.proto == LL ? M_WL : M_WS)
                : o.proto == LL128  ? M_D128
                : o.proto == LL     ? M_DL
                                    : M_DS;
        double best = m[i].us[0];
        for (int v = 1; v < NV; v++)
            if (m[i].us[v] < best)
                best = m[i].us[v];
        BT_TEST_CHECK(m[i].us[k] <= 1.10 * best,
                      "%d ranks on one GPU, %zu B: the tuner picks algo %d proto %d, measured "
                      "%.1f us, the fastest %.1f",
                      nranks, m[i].bytes, o.algo, o.proto, m[i].us[k], best);
    }
}

/*
 * 8, 4 and 2 ranks of one process on one H100 (TEST_SAME_GPU), each table from one session's
 * sweeps (bench/results/ll128-entry-1xh100-2026-12-06.md, raw/ll128-fit-1xh100-2026-12-06.txt:
 * the faster of two rounds; 512 KB LL128 ring slots, as the default gives 16 channels; the
 * two-shot and the one-shot Simple not measured there): the tuner's picks with the shared-GPU
 * figures. The 8-rank sizes to 256 KB are the host's enqueue of eight launches, whose runs
 * differ by up to 30%. The 8-rank Simple and LL128 rings from 1 MB on are e65abf7's (the
 * Simple step's many-source fold a call: its ring 3-10% faster there; the LL128 ring 16-64 MB
 * and the other columns as before; bench/results/ll128-opaque-op-1xh100-2026-12-06.md).
 */
static void shared_gpu_picks(void)
{
    static const struct shared_row m8[] = {
        {64 * KB, {95.59, 59.75, 1e9, 1e9, 36.03, 1e9, 35.76, 69.23}},
        {128 * KB, {98.00, 61.20, 1e9, 1e9, 36.52, 1e9, 35.18, 71.84}},
        {256 * KB, {102.73, 61.71, 1e9, 1e9, 34.87, 1e9, 53.37, 78.38}},
        {512 * KB, {105.34, 65.96, 1e9, 1e9, 55.76, 1e9, 99.29, 78.62}},
        {1 * MB, {105.64, 86.70, 1e9, 1e9, 96.14, 1e9, 188.46, 79.09}},
        {2 * MB, {118.60, 131.94, 1e9, 1e9, 169.35, 1e9, 370.52, 81.56}},
        {4 * MB, {128.65, 242.19, 1e9, 1e9, 319.96, 1e9, 730.49, 109.72}},
        {8 * MB, {172.24, 482.93, 1e9, 1e9, 625.94, 1e9, 1456.69, 187.43}},
        {16 * MB, {307.46, 969.43, 1e9, 1e9, 1224.00, 1e9, 2908.19, 347.08}},
        {32 * MB, {583.65, 1940.89, 1e9, 1e9, 2418.56, 1e9, 5804.85, 646.77}},
        {64 * MB, {1097.96, 3884.10, 1e9, 1e9, 4816.24, 1e9, 11634.24, 1230.67}},
    };
    static const struct shared_row m4[] = {
        {64 * KB, {45.08, 30.11, 1e9, 1e9, 21.13, 1e9, 22.23, 35.71}},
        {128 * KB, {48.13, 31.28, 1e9, 1e9, 20.58, 1e9, 21.46, 43.99}},
        {256 * KB, {50.08, 31.63, 1e9, 1e9, 21.50, 1e9, 21.45, 43.52}},
        {512 * KB, {51.48, 32.49, 1e9, 1e9, 21.66, 1e9, 24.42, 47.17}},
        {1 * MB, {52.76, 41.41, 1e9, 1e9, 26.81, 1e9, 41.89, 48.07}},
        {2 * MB, {55.56, 60.65, 1e9, 1e9, 45.92, 1e9, 77.45, 49.71}},
        {4 * MB, {63.15, 108.93, 1e9, 1e9, 81.29, 1e9, 144.89, 52.25}},
        {8 * MB, {95.10, 214.56, 1e9, 1e9, 144.32, 1e9, 284.35, 88.48}},
        {16 * MB, {163.10, 423.58, 1e9, 1e9, 275.34, 1e9, 562.60, 158.71}},
        {32 * MB, {292.35, 847.22, 1e9, 1e9, 532.65, 1e9, 1122.41, 285.45}},
        {64 * MB, {525.65, 1702.71, 1e9, 1e9, 1048.82, 1e9, 2221.95, 542.12}},
    };
    static const struct shared_row m2[] = {
        {64 * KB, {19.18, 15.94, 1e9, 1e9, 9.74, 1e9, 8.43, 20.10}},
        {128 * KB, {22.80, 16.03, 1e9, 1e9, 9.65, 1e9, 9.24, 23.62}},
        {256 * KB, {23.41, 16.59, 1e9, 1e9, 10.70, 1e9, 8.91, 24.00}},
        {512 * KB, {23.64, 16.70, 1e9, 1e9, 11.78, 1e9, 10.75, 23.90}},
        {1 * MB, {24.05, 17.83, 1e9, 1e9, 13.05, 1e9, 15.22, 26.13}},
        {2 * MB, {24.97, 24.60, 1e9, 1e9, 17.57, 1e9, 25.85, 25.96}},
        {4 * MB, {27.14, 43.59, 1e9, 1e9, 29.27, 1e9, 50.45, 27.35}},
        {8 * MB, {39.28, 80.88, 1e9, 1e9, 53.22, 1e9, 95.05, 37.34}},
        {16 * MB, {67.25, 153.85, 1e9, 1e9, 93.12, 1e9, 182.20, 65.72}},
        {32 * MB, {121.50, 302.61, 1e9, 1e9, 172.85, 1e9, 357.04, 119.42}},
        {64 * MB, {214.87, 596.15, 1e9, 1e9, 329.73, 1e9, 707.32, 221.29}},
    };
    struct bt_tune_settings s = env_defaults();
    shared_gpu = 1;
    gpu_max_channels = 16;
    gpu_direct_channels = 8;
    check_shared_picks(&s, 8, m8, sizeof(m8) / sizeof(m8[0]));
    check_shared_picks(&s, 4, m4, sizeof(m4) / sizeof(m4[0]));
    check_shared_picks(&s, 2, m2, sizeof(m2) / sizeof(m2[0]));
    /* AllGather's and ReduceScatter's rings at 8 ranks (e65abf7, out of place, LL128 / Simple
     * us: AG 2 MB 44.8 / 59.5, 4 MB 59.2 / 68.2, 8 MB 100.9 / 93.2; RS 4 MB 60.9 / 72.3, 8 MB
     * 98.0 / 94.3): LL to its threshold, LL128 to 4 MB, then Simple; without Simple, LL128 */
    const int AG = BT_COLL_ALLGATHER, RS = BT_COLL_REDUCESCATTER, AR = BT_COLL_ALLREDUCE;
    expect("8 ranks on one GPU AG 512 KB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 512 * KB, 1, 1),
           (struct want){RING, LL, 16});
    expect("8 ranks on one GPU AG 2 MB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 2 * MB, 1, 1),
           (struct want){RING, LL128, 16});
    expect("8 ranks on one GPU AR 4 MB", tune(&s, &bt_tune_gpu_defaults, AR, 8, 4 * MB, 1, 1),
           (struct want){RING, LL128, 16});
    expect("8 ranks on one GPU AR 8 MB", tune(&s, &bt_tune_gpu_defaults, AR, 8, 8 * MB, 1, 1),
           (struct want){RING, SIMPLE, 16});
    expect("8 ranks on one GPU RS 4 MB", tune(&s, &bt_tune_gpu_defaults, RS, 8, 4 * MB, 1, 1),
           (struct want){RING, LL128, 16});
    expect("8 ranks on one GPU RS 8 MB", tune(&s, &bt_tune_gpu_defaults, RS, 8, 8 * MB, 1, 1),
           (struct want){RING, SIMPLE, 16});
    expect("8 ranks on one GPU AG 4 MB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 4 * MB, 1, 1),
           (struct want){RING, LL128, 16});
    expect("8 ranks on one GPU AG 8 MB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 8 * MB, 1, 1),
           (struct want){RING, SIMPLE, 16});
    expect("8 ranks on one GPU AG 16 MB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 16 * MB, 1, 1),
           (struct want){RING, SIMPLE, 16});
    s.simple_ok = 0; /* PROTO=LL,LL128 */
    expect("8 ranks on one GPU AG 16 MB, PROTO=LL,LL128",
           tune(&s, &bt_tune_gpu_defaults, AG, 8, 16 * MB, 1, 1), (struct want){RING, LL128, 16});
    shared_gpu = 0;
    gpu_max_channels = 64;
    gpu_direct_channels = 32;
}

/* AllGather and ReduceScatter with one rank per host: PAT where its ceil(log2 n) rounds are
 * fewer than the ring's n - 1 hops (both the ring's links and bytes), at every size; the ring
 * at 2 and 3 ranks, with several ranks on a host, or under ALGO=Ring; PAT anywhere under
 * ALGO=PAT. GPUs across hosts: PAT on its one connector pair a peer (one channel) up to where
 * the ring's 8 channels move the bytes faster. */
static void pat_picks(void)
{
    struct bt_tune_settings s = env_defaults(), ring = env_defaults(), pat = env_defaults();
    ring.pat_ok = 0;
    pat.ring_ok = pat.tree_ok = pat.direct_ok = pat.twoshot_ok = 0;
    const struct bt_tune_defaults *d = &bt_tune_host_defaults;
    const int AG = BT_COLL_ALLGATHER, RS = BT_COLL_REDUCESCATTER, AR = BT_COLL_ALLREDUCE;
    one_per_host = 1;
    static const int ns[] = {4, 5, 8, 16, 64, 256, 4096};
    static const size_t sizes[] = {8, 4 * KB, 1 * MB, 64 * MB};
    for (int c = AG; c <= RS; c++)
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
            for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
                char what[80];
                snprintf(what, sizeof(what), "one per host %s %dr %zu B", bt_coll_name(c), ns[i],
                         sizes[j]);
                expect(what, tune(&s, d, c, ns[i], sizes[j], 0, 0), (struct want){PAT, SIMPLE, 1});
            }
    expect("one per host AG 2r", tune(&s, d, AG, 2, 4 * KB, 0, 0), (struct want){RING, SIMPLE, 1});
    expect("one per host AG 3r", tune(&s, d, AG, 3, 4 * KB, 0, 0), (struct want){RING, SIMPLE, 1});
    expect("one per host AG 8r ALGO=Ring", tune(&ring, d, AG, 8, 4 * KB, 0, 0),
           (struct want){RING, SIMPLE, 1});
    expect("one per host AR 8r ALGO=PAT: AllReduce has no PAT", tune(&pat, d, AR, 8, 4 * KB, 0, 0),
           (struct want){RING, SIMPLE, 1});
    gpu_direct_channels = 1; /* over the network: one send/recv part a peer, 8 rings */
    gpu_max_channels = 8;
    expect("one per host AG 8r GPU 4 KB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 4 * KB, 1, 0),
           (struct want){PAT, SIMPLE, 1});
    expect("one per host RS 64r GPU 1 MB", tune(&s, &bt_tune_gpu_defaults, RS, 64, 1 * MB, 1, 0),
           (struct want){PAT, SIMPLE, 1});
    expect("one per host AG 8r GPU 64 MB", tune(&s, &bt_tune_gpu_defaults, AG, 8, 64 * MB, 1, 0),
           (struct want){RING, SIMPLE, 8});
    expect("one per host AG 3r GPU 4 KB", tune(&s, &bt_tune_gpu_defaults, AG, 3, 4 * KB, 1, 0),
           (struct want){RING, SIMPLE, 1});
    gpu_direct_channels = 32;
    gpu_max_channels = 64;
    one_per_host = 0;
    expect("2 per host AG 8r", tune(&s, d, AG, 8, 4 * KB, 0, 0), (struct want){RING, SIMPLE, 1});
    expect("one host AG 8r ALGO=PAT", tune(&pat, d, AG, 8, 4 * KB, 0, 1),
           (struct want){PAT, SIMPLE, 1});
    expect("one host RS 3r ALGO=PAT", tune(&pat, d, RS, 3, 4 * MB, 0, 1),
           (struct want){PAT, SIMPLE, 1});
    double p = bt_tune_pat_us(&d->net, BT_PROTO_SIMPLE, 1024, 4 * KB),
           r = bt_tune_ring_pass_us(&d->net, BT_PROTO_SIMPLE, 1024, 4 * KB);
    /* 130 hops (a window of BT_NSTEPS blocks a hop: coll/pat.h) against 1023 */
    BT_TEST_CHECK(p < r / 7, "1024 hosts, 4 KB: PAT %.1f us, ring %.1f us", p, r);
    printf("PAT picks: ok (1024 hosts, 4 KB AllGather: PAT %.0f us, ring %.0f us)\n", p, r);
}

/* GPUs across hosts (connectors through the network, trees over hosts: exec/cuda/
 * host_conns.c): the tree AllReduce below the crossover the model gives (tune/tuner.c,
 * tune/cost.h: 2 (ceil(log2 hosts) + ranks per host - 1) hops against the ring's 2 (n - 1),
 * 2 S against 2 (n - 1) / n S), the ring above it; the ring at 2 ranks (as many hops, half
 * the bytes), without trees, and under ALGO=Ring. A tree takes half the channels (two blocks
 * each). */
static void gpu_tree_picks(void)
{
    struct bt_tune_settings s = env_defaults(), ring = env_defaults();
    ring.tree_ok = 0;
    const struct bt_tune_defaults *g = &bt_tune_gpu_defaults;
    const int AR = BT_COLL_ALLREDUCE;
    gpu_direct_channels = 1;
    gpu_max_channels = 8;
    gpu_trees = 1;
    static const struct {
        int n, hosts;
        size_t bytes;
        int algo, nch;
    } m[] = {
        {2, 2, 8, RING, 1},
        {2, 2, 1 * MB, RING, 1},
        {4, 2, 8, TREE, 1},
        {4, 2, 512 * KB, TREE, 1},
        {4, 2, 2 * MB, RING, 2},
        {8, 4, 8, TREE, 1},
        {8, 4, 4 * MB, TREE, 4},
        {8, 4, 16 * MB, RING, 8},
        {16, 8, 32 * MB, TREE, 4},
        {16, 8, 128 * MB, RING, 8},
        /* 2 hosts of 8: 16 hops against 30 */
        {16, 2, 16 * MB, TREE, 4},
        {16, 2, 64 * MB, RING, 8},
        /* 8 hosts of 8: 20 hops against 126 */
        {64, 8, 256 * MB, TREE, 4},
        {64, 8, (size_t)2048 * MB, RING, 8},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        char what[80];
        snprintf(what, sizeof(what), "GPUs across %d hosts AR %dr %zu B", m[i].hosts, m[i].n,
                 m[i].bytes);
        nhosts = m[i].hosts;
        expect(what, tune(&s, g, AR, m[i].n, m[i].bytes, 1, 0),
               (struct want){m[i].algo, SIMPLE, m[i].nch});
    }
    nhosts = 4;
    expect("GPUs across hosts AR 8r 1 MB ALGO=Ring", tune(&ring, g, AR, 8, 1 * MB, 1, 0),
           (struct want){RING, SIMPLE, 1});
    gpu_trees = 0;
    expect("GPUs across hosts AR 8r 1 MB, no trees", tune(&s, g, AR, 8, 1 * MB, 1, 0),
           (struct want){RING, SIMPLE, 1});
    nhosts = 0;
    gpu_direct_channels = 32;
    gpu_max_channels = 64;
    printf("GPU tree picks: ok\n");
}

/* The model across hosts (bt_tune_hosts_us): hops and bytes as cost.h states them. */
static void hosts_model(void)
{
    struct bt_tune_costs c;
    memset(&c, 0, sizeof(c));
    c.c[RING][SIMPLE] = (struct bt_tune_cost){10.0f, 1.0f, 100.0f};
    /* 64 hosts x 8: ring pass 63 network hops + 448 local; AllReduce twice; tree 2 (7 + 6) */
    struct bt_tune_hosts h = {64, 8, &c, SIMPLE, 20.0f, 400.0f, NULL};
    const int AG = BT_COLL_ALLGATHER, AR = BT_COLL_ALLREDUCE;
    double n = 512, pass = 10 + 63 * 20.0 + 448 * 1.0 + (n - 1) / n * 1e6 / 1e5;
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&h, AG, RING, 1000000) - pass) < 1e-6, "ring pass %.3f",
                  bt_tune_hosts_us(&h, AG, RING, 1000000));
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&h, AR, RING, 0) - (10 + 2 * (63 * 20.0 + 448))) < 1e-6,
                  "ring AllReduce hops");
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&h, AR, TREE, 0) - (10 + 2 * 7 + 2 * 6 * 20.0)) < 1e-6,
                  "tree hops");
    BT_TEST_CHECK(bt_tune_hosts_us(&h, AG, PAT, 8) > 1e29 &&
                      bt_tune_hosts_us(&h, AG, TREE, 8) > 1e29,
                  "PAT with 8 per host, or a tree AllGather, has no figure");
    /* one per host: the NIC's bandwidth alone, PAT's hops (10 at 64: coll/pat.h) */
    struct bt_tune_hosts one = {64, 1, &c, SIMPLE, 20.0f, 50.0f, NULL};
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&one, AG, PAT, 64000000) -
                       (10 + bt_pat_hops(64) * 20.0 + 63.0 / 64 * 64e6 / 5e4)) < 1e-6,
                  "PAT one per host %.3f", bt_tune_hosts_us(&one, AG, PAT, 64000000));

    /* fabrics (cost.h), 16 hosts of one rank, switches of 64 ports, 8 NICs a host: a
     * fat-tree leaf holds 4 hosts (32 down ports / 8), a rail leaf 32, a two-tier block 64
     * leaves; 0.5 us a switch past the first, leaves 2:1 oversubscribed */
    struct bt_tune_fabric fat = {BT_FABRIC_FAT_TREE, 64, 8, 0.5f, 2.0f};
    struct bt_tune_fabric rail = {BT_FABRIC_RAIL, 64, 8, 0.5f, 2.0f};
    struct bt_tune_hosts flat16 = {16, 1, &c, SIMPLE, 20.0f, 50.0f, NULL};
    struct bt_tune_hosts fat16 = flat16, rail16 = flat16;
    fat16.fabric = &fat;
    rail16.fabric = &rail;
    /* ring pass: 15 hops, 3 of them leave a leaf (2 switches more each) on the fat-tree;
     * ring and tree bytes: 1/4 and 2/4 of a leaf's hosts leave it, x 2 <= 1: no slowdown */
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&fat16, AG, RING, 8) -
                       bt_tune_hosts_us(&flat16, AG, RING, 8) - 3 * 2 * 0.5) < 1e-6,
                  "fat-tree ring pass");
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&fat16, AR, RING, 1 << 20) -
                       bt_tune_hosts_us(&flat16, AR, RING, 1 << 20) - 2 * 3 * 2 * 0.5) < 1e-6,
                  "fat-tree ring AllReduce");
    /* tree: levels 1, 2, 4, 8 hosts apart, up and down: 4 and 8 leave a leaf */
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&fat16, AR, TREE, 1 << 20) -
                       bt_tune_hosts_us(&flat16, AR, TREE, 1 << 20) - 2 * 2 * 2 * 0.5) < 1e-6,
                  "fat-tree tree");
    /* PAT: hops 1, 2, 4, 8 apart (2 leave a leaf); every host sends out of its leaf at
     * once: its bytes take twice as long */
    double pat_flat = bt_tune_hosts_us(&flat16, AG, PAT, 16000000);
    double pat_bytes = 15.0 / 16 * 16e6 / 5e4;
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&fat16, AG, PAT, 16000000) - pat_flat - 2 * 2 * 0.5 -
                       pat_bytes) < 1e-6,
                  "fat-tree PAT %.3f against %.3f", bt_tune_hosts_us(&fat16, AG, PAT, 16000000),
                  pat_flat);
    /* rail-optimized: 16 hosts share each rail's leaf: the flat model's figures */
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&rail16, AG, PAT, 16000000) - pat_flat) < 1e-6 &&
                      fabs(bt_tune_hosts_us(&rail16, AR, TREE, 8) -
                           bt_tune_hosts_us(&flat16, AR, TREE, 8)) < 1e-6,
                  "rail-optimized within a leaf");
    /* 128 hosts: past a rail leaf too, within a two-tier block (32 x 64) */
    struct bt_tune_hosts flat128 = flat16, rail128 = rail16;
    flat128.hosts = rail128.hosts = 128;
    BT_TEST_CHECK(fabs(bt_tune_hosts_us(&rail128, AG, RING, 8) -
                       bt_tune_hosts_us(&flat128, AG, RING, 8) - 3 * 2 * 0.5) < 1e-6,
                  "rail ring pass at 128 hosts");
    printf("hosts model: ok\n");
}

int main(void)
{
    calibration();
    shared_gpu_picks();
    host_defaults();
    net_link_bounds();
    gpu_defaults();
    overrides();
    ll128();
    pat_picks();
    gpu_tree_picks();
    hosts_model();
    printf("test_tuner: ok\n");
    return 0;
}
