#include "tune/tuner.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"
#include "util/param.h"

/* Is `name` allowed by a list like "LL,Simple" or "^LL" (NCCL_PROTO / NCCL_ALGO syntax)? */
static int list_allows(const char *list, const char *name)
{
    if (!list || !*list)
        return 1;
    int neg = list[0] == '^';
    const char *s = neg ? list + 1 : list;
    size_t n = strlen(name);
    int found = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && strncasecmp(s, name, n) == 0)
            found = 1;
        if (!e)
            break;
        s = e + 1;
    }
    return neg ? !found : found;
}

#define R BT_ALGO_RING
#define T BT_ALGO_TREE
#define D BT_ALGO_DIRECT
#define W BT_ALGO_TWOSHOT
#define P BT_ALGO_PAT
#define LL BT_PROTO_LL
#define SI BT_PROTO_SIMPLE
#define L128 BT_PROTO_LL128

/*
 * Host memory, fitted to the 2-rank AllReduce sweeps on the 2-core development machine
 * (docs/TUNING.md): one-shot Simple 0.87 us + 5.0 GB/s, one-shot LL 0.68 us + 1.2 GB/s (LL
 * moves twice the bytes; on x86 Simple's tail store is cheap), the Simple ring 2.34 us for its
 * 2 hops + 6.8 GB/s. Crossovers for 2 ranks: LL to about 280 B, one-shot to about 28 KB.
 * Trees have the ring's links (different shape only). Over the network (loopback sockets,
 * one thread moving every channel): one-shot 2 us + 2.4 GB/s, the ring 14.5 us for 2 hops +
 * 2.8 GB/s: one-shot to about 215 KB for 2 ranks. The ring LL figures are the one-shot LL's
 * per byte with a shorter hop than Simple's: not measured on their own.
 */
const struct bt_tune_defaults bt_tune_host_defaults = {
    .ll_threshold = 256,
    .win_min = 2048, /* below it the one-shot LL won at 8-32 B (docs/TUNING.md) */
    .local.c =
        {
            [R][SI] = {0.90f, 0.72f, 6.8f},
            [R][LL] = {0.20f, 0.60f, 1.2f},
            [T][SI] = {0.90f, 0.72f, 6.8f},
            [T][LL] = {0.20f, 0.60f, 1.2f},
            [D][SI] = {0.87f, 0.0f, 5.0f},
            [D][LL] = {0.68f, 0.0f, 1.2f},
            /* the two-shot: 2 hops, the ring's copies (bench/results/host-twoshot-2026-12-02.md:
             * 4 and 8 ranks on 2 cores, fastest at 64 KB, about the ring at 256 KB) */
            [W][SI] = {2.0f, 0.72f, 6.5f},
            [W][LL] = {0.68f, 0.60f, 1.2f},
        },
    .net.c =
        {
            [R][SI] = {2.0f, 6.25f, 2.8f},
            [T][SI] = {2.0f, 6.25f, 2.8f},
            [D][SI] = {2.0f, 0.0f, 2.4f},
            /* the ring's links, log2 n hops (coll/pat.h) */
            [P][SI] = {2.0f, 6.25f, 2.8f},
        },
    .bytes_per_channel = 512 * 1024,
    .ll_bytes_per_channel = 0,
    .direct_bytes_per_channel = 0,
};

/*
 * The CUDA executor's, fitted to AllReduce sweeps on 2 x H200 over NVLink (docs/TUNING.md,
 * bench/results/gpu-2xh200-*.md): one-shot LL 5.5 us + 95 GB/s (batched one pass, 512 KB-2 MB),
 * one-shot LL128 7.9 us + 162 GB/s (1-8 MB), one-shot Simple 12.5 us + 159 GB/s (1-16 MB), the LL
 * ring 11 us for 2 hops + 150 GB/s (1-4 MB), the Simple ring 21.2 us for 2 hops + 337 GB/s
 * (2-32 MB). Two ranks cannot tell a hop from the base (every figure has both hops): 2 us per
 * hop for LL, 3 for Simple, from the 1-hop AllGather's and Broadcast's 8-byte times against
 * AllReduce's; to be fitted on 4 and 8 GPUs. Crossovers for 2 ranks: one-shot
 * LL to about 550 KB, LL128 to about 4.1 MB (NVLink only), else one-shot LL to about 1.5 MB
 * and the LL ring to 2-4 MB. Through the network: Simple only, the ring (figures from 64 MB over
 * loopback sockets with 8 channels), PAT and, with ranks on several hosts, the tree, whose
 * figures are the ring's: the tree wins below about 0.28 MB x n (2 (n - 1) - hops) / 2 for n
 * ranks (cost.h: its hops over hosts; 1.1 MB at 2 hosts of 2, 9 MB at 4 of 2). Where not every GPU
 * pair is NVLink (PCIe peers, or the connectors in host memory: never measured) AllReduce keeps LL
 * within 512 KB, as before the model. Other collectives' rings: LL up to 512 KB (measured on
 * AllGather, whose LL rings were slower at 128-512 KB than the AllReduce fit says), a channel
 * per 16 KB; Simple a channel per 128 KB; through the network a channel per 1 MB (each
 * channel is a block reading and writing host memory, the limit there); one-shot a channel
 * per 2 KB (16 KB: 13.1 us on 1 channel, 10.4 on 16).
 */
const struct bt_tune_defaults bt_tune_gpu_defaults = {
    .ll_threshold = 512 * 1024,
    .win_min = 64 * 1024, /* below it within the noise of the LL one-shot (docs/TUNING.md) */
    .ll_cap_off_nvlink = 512 * 1024,
    .local.c =
        {
            [R][SI] = {15.2f, 3.0f, 337.0f},
            [R][LL] = {7.0f, 2.0f, 150.0f},
            /* a prediction (docs/TUNING.md): the LL ring's latency and the Simple ring's
             * bandwidth, each scaled as LL128's ring stands to them on one GPU (shared_gpu:
             * base 18.5 / 7 us, hop 3.75 / 3.5 us; bandwidth 0.855 of Simple's, the two rings'
             * ratio at 32-64 MB there, where shared_gpu's own figure is fitted to the sizes at
             * which they cross) */
            [R][L128] = {18.5f, 2.1f, 288.0f},
            [D][SI] = {12.5f, 0.0f, 159.0f},
            [D][LL] = {5.5f, 0.0f, 95.0f},
            [D][L128] = {7.9f, 0.0f, 162.0f},
            /* a prediction (docs/TUNING.md): the two-shot runs its 4n - 3 steps a loop in the
             * general kernel, one connector each, on the one-shot's <= 8 channels at 8 ranks:
             * about 2 us a step, 10 GB/s a block (scaled from one H200's 8-rank runs) */
            [W][SI] = {45.0f, 3.0f, 80.0f},
            [W][LL] = {20.0f, 2.0f, 40.0f},
        },
    .net.c =
        {
            [R][SI] = {10.0f, 20.0f, 14.0f},
            /* a prediction: the ring's links, 2 ceil(log2 n) hops moving 2x the bytes (trees
             * over hosts, exec/cuda/host_conns.c; to be fitted on a real network) */
            [T][SI] = {10.0f, 20.0f, 14.0f},
            /* a prediction: the ring's hop, one channel's bandwidth (PAT runs on the one
             * send/recv connector pair a GPU has with each peer over the network; a ring
             * channel there moved 2.4-4.3 GB/s) */
            [P][SI] = {10.0f, 20.0f, 3.0f},
        },
    /* 8 ranks of one process on one H200, 16 channels each (bench/results/
     * gpu-1xh200-nranks-2026-12-02.md, 64 KB-64 MB): one-shot LL128 25 us + 100 GB/s, LL 28 us +
     * 70 GB/s (one point), Simple 60 us + 72 GB/s; the LL ring 2 us + 14 hops of 3 us + 48 GB/s
     * (512 KB-4 MB), the Simple ring 13 us + 14 hops of 6 us + 155 GB/s; the LL128 ring (its
     * step reworked; bench/results/ll128-entry-1xh100-2026-12-06.md, 8, 4 and 2 ranks on one
     * H100) as it stands to the Simple ring there: 26 us less latency at 8 ranks (70 against 96
     * at 64 KB), 1 more at 2 (20 against 19), so 18.5 us + 2 (n - 1) hops of 3.75 beside
     * Simple's 13 + 6, and 116 GB/s (Simple's x 0.75), fitted to where the two rings cross at
     * 8 ranks: between 4 and 8 MB in AllReduce, AllGather and ReduceScatter alike once the
     * Simple step's many-source fold was a call (e65abf7, one H100, LL128 / Simple us: AllReduce
     * 109.7 / 128.7 at 4 MB, 187.4 / 172.2 at 8; AllGather 59.2 / 68.2, 100.9 / 93.2;
     * ReduceScatter 60.9 / 72.3, 98.0 / 94.3; bench/results/ll128-opaque-op-1xh100-2026-12-06.md):
     * the fastest at 1-4 MB of 8 ranks, never at 2, the same figures for the one-pass
     * collectives; the two-shot LL 58 us +
     * 2 hops of 3 + 21 GB/s, Simple 109 us + 2 hops of 3 + 60 GB/s (its 4n - 3 steps a loop,
     * one connector each, are the cost: never the fastest here). At other rank counts the
     * bandwidths scale by 8 / n (bt_tune_costs_shared: the ranks share the GPU's memory) and
     * the one-shot waits on each of its n - 1 peers in turn: fitted to 2 ranks of one process on
     * one H100 as well (bench/results/small-launch-1xh100-2026-12-06.md: one-shot LL 10 us to
     * 512 KB, LL128 12.5 us to 1 MB, the LL ring 13-17.7 us to 1 MB), the one-shot LL 7 us + 7
     * hops of 3 and 45 GB/s at 8 ranks, LL128 10.6 + 7 of 2.05, the LL ring 7 + 14 of 3.5;
     * the 4-rank picks from the same run are within 10% of the fastest (unit/test_tuner). */
    .shared_gpu.c =
        {
            [R][SI] = {13.0f, 6.0f, 155.0f},
            [R][LL] = {7.0f, 3.5f, 48.0f},
            [R][L128] = {18.5f, 3.75f, 116.0f},
            [D][SI] = {60.0f, 0.0f, 72.0f},
            [D][LL] = {7.0f, 3.0f, 45.0f},
            [D][L128] = {10.6f, 2.05f, 100.0f},
            [W][SI] = {109.0f, 3.0f, 60.0f},
            [W][LL] = {58.0f, 3.0f, 21.0f},
        },
    .shared_gpu_direct_max = 8 * 1024 * 1024,
    .bytes_per_channel = 128 * 1024,
    .ll_bytes_per_channel = 16 * 1024,
    .direct_bytes_per_channel = 2 * 1024,
    .net_bytes_per_channel = 1024 * 1024,
};

#undef R
#undef T
#undef D
#undef W
#undef P
#undef LL
#undef SI
#undef L128

/* Channels for `bytes` at `per` bytes each (0: one), within [1, max]. */
static int channels_for(size_t bytes, size_t per, int max)
{
    int n = per ? (int)(bytes / per) : 1;
    if (n > max)
        n = max;
    return n < 1 ? 1 : n;
}

void bt_tune_settings_from_env(struct bt_tune_settings *set)
{
    const char *protos = bt_param_str_proto(), *algos = bt_param_str_algo();
    memset(set, 0, sizeof(*set));
    set->ll_threshold = bt_param_ll_threshold();
    set->ll128_threshold = bt_param_ll128_threshold();
    set->tree_threshold = bt_param_tree_threshold();
    set->direct_threshold = bt_param_direct_threshold();
    set->win_min = bt_param_win_min_bytes();
    set->win_max = bt_param_win_max_bytes();
    set->min_nchannels = (int32_t)bt_param_min_nchannels();
    set->ll_ok = (uint8_t)list_allows(protos, "LL");
    set->simple_ok = (uint8_t)list_allows(protos, "Simple");
    set->ll128_ok = (uint8_t)list_allows(protos, "LL128");
    if (!set->ll_ok && !set->simple_ok && !set->ll128_ok) {
        BT_WARN("PROTO=%s allows no protocol Baton implements (LL, LL128, Simple); using Simple",
                protos);
        set->simple_ok = 1;
    }
    set->ring_ok = (uint8_t)list_allows(algos, "Ring");
    set->tree_ok = (uint8_t)list_allows(algos, "Tree");
    set->gpu_trees = (uint8_t)(bt_param_gpu_trees() != 0);
    set->direct_ok = (uint8_t)list_allows(algos, "Direct");
    set->twoshot_ok = (uint8_t)list_allows(algos, "TwoShot");
    set->pat_ok = (uint8_t)list_allows(algos, "PAT");
    if (!set->ring_ok && !set->tree_ok && !set->direct_ok && !set->twoshot_ok && !set->pat_ok) {
        BT_WARN("ALGO=%s allows no algorithm Baton implements (Ring, Tree, Direct, TwoShot, "
                "PAT); using Ring",
                algos);
        set->ring_ok = 1;
    }
}

/* The window AllReduce: each rank reads (n - 1) inputs and writes one output, the least any
 * AllReduce can move at n = 2, against a ring's 2 (n - 1) / n per rank; so beyond two ranks
 * its bound shrinks as 2 / n (a model prediction until measured at n > 2, docs/TUNING.md).
 * A block per WIN_BYTES_PER_BLOCK of input. */
#define WIN_MAX_DEFAULT_2 (64ull << 20)
#define WIN_BYTES_PER_BLOCK (32u << 10)

int bt_tune_window(const struct bt_tune_settings *set, const struct bt_tune_defaults *def,
                   int nranks, size_t bytes, int max_blocks)
{
    uint64_t lo = set->win_min >= 0 ? (uint64_t)set->win_min : def->win_min;
    uint64_t hi = set->win_max >= 0 ? (uint64_t)set->win_max
                                    : WIN_MAX_DEFAULT_2 * 2 / (uint64_t)(nranks > 2 ? nranks : 2);
    if (bytes == 0 || bytes < lo || bytes > hi || max_blocks < 1)
        return 0;
    size_t nb = bt_div_up(bytes, WIN_BYTES_PER_BLOCK);
    return nb < (size_t)max_blocks ? (int)nb : max_blocks;
}

/* A set of (algorithm, protocol) candidates, one bit each. */
#define CAND(a, p) (1u << ((a)*BT_NUM_PROTOS + (p)))

static unsigned algo_bits(int algo)
{
    return CAND(algo, BT_PROTO_LL) | CAND(algo, BT_PROTO_SIMPLE) | CAND(algo, BT_PROTO_LL128);
}

static unsigned proto_bits(int proto)
{
    unsigned bits = 0;
    for (int a = 0; a < BT_NUM_ALGOS; a++)
        bits |= CAND(a, proto);
    return bits;
}

/* The overrides narrow the candidates but never empty them: keep only `keep`, or drop
 * `drop`, where something is left. */
static unsigned keep_only(unsigned set, unsigned keep)
{
    return set & keep ? set & keep : set;
}
static unsigned drop(unsigned set, unsigned d)
{
    return set & ~d ? set & ~d : set;
}

/* The cost figures for `in`'s path: the network's bounded by the link, the shared GPU's
 * for this many ranks (both made in *made), else the local ones. */
static const struct bt_tune_costs *costs_for(const struct bt_tune_in *in,
                                             struct bt_tune_costs *made)
{
    const struct bt_tune_costs *costs = in->shm_all ? &in->def->local : &in->def->net;
    if (in->shm_all && in->shared_gpu &&
        in->def->shared_gpu.c[BT_ALGO_RING][BT_PROTO_SIMPLE].gbps > 0) {
        bt_tune_costs_shared(&in->def->shared_gpu, in->nranks, made);
        return made;
    }
    if (!in->shm_all && (in->net_gbps > 0 || in->net_latency_us > 0)) {
        bt_tune_costs_bound(costs, in->net_gbps, in->net_latency_us, made);
        costs = made;
    }
    return costs;
}

/* The other collectives' rings: LL up to the threshold; beyond it LL128 where it runs and
 * its ring pass costs less than Simple's (tune/cost.h), else Simple. A protocol PROTO leaves
 * alone is kept even where another would be cheaper. */
static int choose_ring_proto(const struct bt_tune_in *in, const struct bt_tune_costs *costs,
                             int ll_ok, int simple_ok, int ll128_ok)
{
    const struct bt_tune_settings *env = in->set;
    int64_t ll_thr = env->ll_threshold >= 0 ? env->ll_threshold : in->def->ll_threshold;
    if (ll_ok && (in->bytes <= (size_t)ll_thr || (!simple_ok && !ll128_ok)))
        return BT_PROTO_LL;
    if (ll128_ok) {
        if (!simple_ok || bt_tune_ring_pass_us(costs, BT_PROTO_LL128, in->nranks, in->bytes) <
                              bt_tune_ring_pass_us(costs, BT_PROTO_SIMPLE, in->nranks, in->bytes))
            return BT_PROTO_LL128;
    }
    return BT_PROTO_SIMPLE;
}

/* AllGather or ReduceScatter by PAT (Simple): where the executor runs it and ALGO allows
 * it, when ALGO rules the ring out, or, with one rank per host, when the model says PAT is
 * cheaper than the ring the collective would otherwise take. */
static int choose_pat(const struct bt_tune_in *in, const struct bt_tune_costs *costs, int ll_ok,
                      int simple_ok, int ll128_ok)
{
    const struct bt_tune_settings *env = in->set;
    if ((in->coll != BT_COLL_ALLGATHER && in->coll != BT_COLL_REDUCESCATTER) || in->nranks < 2 ||
        !in->pat_ok || !env->pat_ok)
        return 0;
    if (!env->ring_ok)
        return 1;
    if (!in->one_per_host)
        return 0;
    int proto = choose_ring_proto(in, costs, ll_ok, simple_ok, ll128_ok);
    return bt_tune_pat_us(costs, BT_PROTO_SIMPLE, in->nranks, in->bytes) <
           bt_tune_ring_pass_us(costs, proto, in->nranks, in->bytes);
}

/* AllReduce over 2+ ranks: the cheapest candidate by the cost model among those the executor
 * runs and PROTO / ALGO allow, narrowed first by whichever *_THRESHOLD is set. */
static void choose_allreduce(const struct bt_tune_in *in, const struct bt_tune_costs *costs,
                             int ll_ok, int simple_ok, int ll128_ok, int *algo, int *proto)
{
    const struct bt_tune_settings *env = in->set;
    int ok[BT_NUM_ALGOS] = {env->ring_ok, env->tree_ok && in->tree_ok,
                            env->direct_ok && in->direct_ok, env->twoshot_ok && in->direct_ok};
    if (!ok[BT_ALGO_RING] && !ok[BT_ALGO_TREE] && !ok[BT_ALGO_DIRECT] && !ok[BT_ALGO_TWOSHOT])
        ok[BT_ALGO_RING] = 1; /* e.g. ALGO=Tree where trees do not run */
    unsigned set = 0;
    for (int a = 0; a < BT_NUM_ALGOS; a++) {
        if (!ok[a])
            continue;
        unsigned mine = ll_ok ? CAND(a, BT_PROTO_LL) : 0;
        /* LL128 runs where every GPU pair is NVLink, by any algorithm (a pair without
         * figures is a candidate only when forced) */
        if (ll128_ok)
            mine |= CAND(a, BT_PROTO_LL128);
        if (simple_ok || !mine)
            mine |= CAND(a, BT_PROTO_SIMPLE);
        set |= mine;
    }

    size_t bytes = in->bytes;
    int64_t thr;
    if ((thr = env->direct_threshold) >= 0)
        set = bytes <= (size_t)thr ? keep_only(set, algo_bits(BT_ALGO_DIRECT))
                                   : drop(set, algo_bits(BT_ALGO_DIRECT));
    if ((thr = env->tree_threshold) >= 0 && (set & algo_bits(BT_ALGO_TREE)))
        set = bytes <= (size_t)thr ? drop(set, algo_bits(BT_ALGO_RING))
                                   : drop(set, algo_bits(BT_ALGO_TREE));
    /* LL128_THRESHOLD counts for 2 ranks: the one-shot moves (n - 1) x bytes per rank */
    if ((thr = env->ll128_threshold) >= 0 && (set & CAND(BT_ALGO_DIRECT, BT_PROTO_LL128))) {
        unsigned one_shot =
            CAND(BT_ALGO_DIRECT, BT_PROTO_LL) | CAND(BT_ALGO_DIRECT, BT_PROTO_LL128);
        set = bytes * (size_t)(in->nranks - 1) <= (size_t)thr
                  ? keep_only(set, one_shot)
                  : drop(set, CAND(BT_ALGO_DIRECT, BT_PROTO_LL128));
    }
    /* Ranks sharing one GPU: the one-shot's figures hold while its ranks' inputs stay in the
     * GPU's cache (2 ranks on one H100: 17.9 us at 2 MB, 53 at 8 MB, the Simple ring's 40) */
    if (in->shared_gpu && in->def->shared_gpu_direct_max > 0 &&
        bytes * (size_t)in->nranks > in->def->shared_gpu_direct_max)
        set = drop(set, algo_bits(BT_ALGO_DIRECT));
    if ((thr = env->ll_threshold) >= 0)
        set = bytes <= (size_t)thr ? keep_only(set, proto_bits(BT_PROTO_LL))
                                   : drop(set, proto_bits(BT_PROTO_LL));
    else if (in->def->ll_cap_off_nvlink > 0 && in->ll128_payload == 0 &&
             bytes > (size_t)in->def->ll_cap_off_nvlink)
        set = drop(set, proto_bits(BT_PROTO_LL));

    double best = 0;
    int found = 0;
    for (int a = 0; a < BT_NUM_ALGOS; a++) {
        for (int p = 0; p < BT_NUM_PROTOS; p++) {
            if (!(set & CAND(a, p)))
                continue;
            double us = bt_tune_allreduce_us(costs, a, p, in->nranks, in->nhosts, bytes);
            if (!found || us < best) {
                best = us;
                *algo = a;
                *proto = p;
                found = 1;
            }
        }
    }
}

void bt_tune_coll(const struct bt_tune_in *in, struct bt_tune_out *out)
{
    const struct bt_tune_settings *env = in->set;
    const struct bt_tune_defaults *def = in->def;
    /* Over the network a receive lands in pieces, which LL's per-line flags cannot take. */
    int p2p = in->coll == BT_COLL_SEND || in->coll == BT_COLL_RECV;
    int ll_ok = env->ll_ok && in->shm_all && !p2p;
    /* LL128: the CUDA executor's FIFOs where every GPU pair is NVLink (ll128_payload) */
    int ll128_ok = env->ll128_ok && in->ll128_payload > 0 && in->shm_all && !p2p;
    int simple_ok = env->simple_ok || !in->shm_all || p2p;
    struct bt_tune_costs made;
    const struct bt_tune_costs *costs = costs_for(in, &made);
    if (in->coll == BT_COLL_ALLREDUCE && in->nranks > 1) {
        choose_allreduce(in, costs, ll_ok, simple_ok, ll128_ok, &out->algo, &out->proto);
        out->us =
            bt_tune_allreduce_us(costs, out->algo, out->proto, in->nranks, in->nhosts, in->bytes);
    } else if (choose_pat(in, costs, ll_ok, simple_ok, ll128_ok)) {
        out->algo = BT_ALGO_PAT;
        out->proto = BT_PROTO_SIMPLE;
        out->us = bt_tune_pat_us(costs, BT_PROTO_SIMPLE, in->nranks, in->bytes);
    } else {
        out->algo = BT_ALGO_RING;
        out->proto = choose_ring_proto(in, costs, ll_ok, simple_ok, ll128_ok);
        /* a send or receive: one hop of all its bytes, a 2-rank pass of twice as many */
        out->us = p2p ? bt_tune_ring_pass_us(costs, out->proto, 2, 2 * in->bytes)
                      : bt_tune_ring_pass_us(costs, out->proto, in->nranks, in->bytes);
    }

    /* On the host over the network one thread (the launching one, or the proxy) moves every
     * channel's bytes, so more channels add interleaving, not bandwidth: one unless
     * MIN_NCHANNELS (GPUs: each channel is also a block copying through host memory). */
    /* the two-shot spreads as a ring (its traffic), over the one-shot's connectors */
    size_t per = out->algo == BT_ALGO_DIRECT ? def->direct_bytes_per_channel
                 : out->proto == BT_PROTO_LL ? def->ll_bytes_per_channel
                                             : def->bytes_per_channel;
    int max = bt_algo_all_peers(out->algo)                             ? in->direct_max_channels
              : out->algo == BT_ALGO_TREE && in->tree_max_channels > 0 ? in->tree_max_channels
                                                                       : in->max_channels;
    int spread_simple = out->algo != BT_ALGO_DIRECT && out->proto != BT_PROTO_LL;
    int nch = channels_for(in->bytes,
                           spread_simple && !in->shm_all ? def->net_bytes_per_channel : per, max);
    /* MIN_NCHANNELS applies where the defaults spread by size (on the host: the Simple
     * ring, also over the network; its LL and one-shot works stay on one channel) */
    if (per != 0 && nch < env->min_nchannels)
        nch = env->min_nchannels < max ? env->min_nchannels : max;
    out->nchannels = nch;

    size_t slot = out->proto == BT_PROTO_LL ? in->ll_payload
                  : out->proto == BT_PROTO_LL128 && bt_algo_all_peers(out->algo)
                      ? in->direct_ll128_payload
                  : out->proto == BT_PROTO_LL128 ? in->ll128_payload
                  : bt_algo_all_peers(out->algo) ? in->direct_slot
                                                 : in->simple_slot;
    out->chunk = slot / in->esize;
    if (out->chunk == 0)
        out->chunk = 1;
}
