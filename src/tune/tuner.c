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

/*
 * Defaults measured on host memory (2-core development machine, see docs/TUNING.md):
 * LL wins while a collective is a few slots of latency-bound steps; Simple past that.
 * Tree beats ring for small AllReduce once the ring is long (latency 2 log n vs 2(n-1)).
 * One-shot sends (n-1) x bytes per rank, the ring 2(n-1)/n x bytes over 2(n-1) hops:
 * measured crossover for 2 ranks 32 KB; two ranks over the network: one-shot moves the
 * ring's bytes in one exchange instead of two, better up to 256 KB.
 */
const struct bt_tune_defaults bt_tune_host_defaults = {
    .ll_threshold = 256,
    .ll128_threshold = 0, /* no LL128 on host memory */
    .direct_threshold = 32 * 1024,
    .net_direct_threshold = 256 * 1024,
    .tree_threshold = 64 * 1024,
    .bytes_per_channel = 512 * 1024,
    .ll_bytes_per_channel = 0,
    .direct_bytes_per_channel = 0,
};

/* The CUDA executor's defaults, from AllReduce sweeps on 2 x H200 (docs/TUNING.md): one-shot
 * with LL lines up to 512 KB and LL128 lines up to 4 MB where every GPU pair is NVLink (2 MB:
 * 20.9 us against 28.3 for LL, 31.8 for the Simple ring; 8 MB: 59.9 against the ring's 48.8),
 * else with Simple slots up to 1 MB, a channel per 2 KB (the
 * one-shot's time at 16-128 KB fell 20-25% from 1 channel to 16); LL rings a channel per
 * 16 KB; Simple rings a channel per 128 KB; through the network a channel per 1 MB (each
 * channel is a block reading and writing host memory, the limit there). */
const struct bt_tune_defaults bt_tune_gpu_defaults = {
    .ll_threshold = 512 * 1024,
    .ll128_threshold = 4 * 1024 * 1024,
    .direct_threshold = 1024 * 1024,
    .net_direct_threshold = 0,
    .tree_threshold = 0, /* no trees on GPUs yet */
    .bytes_per_channel = 128 * 1024,
    .ll_bytes_per_channel = 16 * 1024,
    .direct_bytes_per_channel = 2 * 1024,
    .net_bytes_per_channel = 1024 * 1024,
};

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
    set->direct_ok = (uint8_t)list_allows(algos, "Direct");
    if (!set->ring_ok && !set->tree_ok && !set->direct_ok) {
        BT_WARN("ALGO=%s allows no algorithm Baton implements (Ring, Tree, Direct); using Ring",
                algos);
        set->ring_ok = 1;
    }
}

void bt_tune_coll(const struct bt_tune_in *in, struct bt_tune_out *out)
{
    const struct bt_tune_settings *env = in->set;
    const struct bt_tune_defaults *def = in->def;
    int64_t ll_thr = env->ll_threshold;
    int64_t tree_thr = env->tree_threshold;
    int64_t ll128_thr = env->ll128_threshold >= 0 ? env->ll128_threshold : def->ll128_threshold;
    if (ll_thr < 0)
        ll_thr = def->ll_threshold;
    if (tree_thr < 0)
        tree_thr = in->nranks >= 4 ? def->tree_threshold : 0;
    /* Over the network a receive lands in pieces, which LL's per-line flags cannot take. */
    int ll_ok = env->ll_ok && in->shm_all, simple_ok = env->simple_ok || !in->shm_all;
    int p2p = in->coll == BT_COLL_SEND || in->coll == BT_COLL_RECV;
    out->proto = p2p || !ll_ok                 ? BT_PROTO_SIMPLE
                 : !simple_ok                  ? BT_PROTO_LL
                 : in->bytes <= (size_t)ll_thr ? BT_PROTO_LL
                                               : BT_PROTO_SIMPLE;

    out->algo = BT_ALGO_RING;
    if (in->coll == BT_COLL_ALLREDUCE && in->nranks > 1) {
        int64_t direct_thr = env->direct_threshold;
        if (direct_thr < 0) {
            direct_thr = def->direct_threshold / (in->nranks - 1);
            if (direct_thr < 4096)
                direct_thr = 4096;
            /* LL128 carries the one-shot further (its threshold counts for 2 ranks) */
            if (in->ll128_payload > 0 && env->ll128_ok && ll128_thr / (in->nranks - 1) > direct_thr)
                direct_thr = ll128_thr / (in->nranks - 1);
            if (!in->shm_all)
                direct_thr = def->net_direct_threshold;
        }
        int ring_ok = env->ring_ok, tree_ok = env->tree_ok && in->tree_ok;
        int direct_ok = env->direct_ok && in->direct_ok;
        int only_direct = direct_ok && !ring_ok && !tree_ok;
        if (direct_ok && (only_direct || in->bytes <= (size_t)direct_thr))
            out->algo = BT_ALGO_DIRECT;
        else if (tree_ok && (!ring_ok || in->bytes <= (size_t)tree_thr))
            out->algo = BT_ALGO_TREE;
    }

    /* LL128 (the one-shot AllReduce on GPUs joined by NVLink) between LL and Simple: LL's
     * one flag crossing with 120 of every 128 bytes payload instead of 8 of 16. Where PROTO
     * allows neither LL nor Simple, LL128 wherever it runs and Simple elsewhere. */
    if (out->algo == BT_ALGO_DIRECT && in->ll128_payload > 0 && env->ll128_ok) {
        int above_ll = !ll_ok || in->bytes > (size_t)ll_thr;
        if (above_ll && (!env->simple_ok || in->bytes <= (size_t)ll128_thr))
            out->proto = BT_PROTO_LL128;
    }

    /* On the host over the network one thread (the launching one, or the proxy) moves every
     * channel's bytes, so more channels add interleaving, not bandwidth: one unless
     * MIN_NCHANNELS (GPUs: each channel is also a block copying through host memory). */
    int nch;
    if (out->algo == BT_ALGO_DIRECT)
        nch = channels_for(in->bytes, def->direct_bytes_per_channel, in->direct_max_channels);
    else if (out->proto == BT_PROTO_LL)
        nch = channels_for(in->bytes, def->ll_bytes_per_channel, in->max_channels);
    else if (!in->shm_all)
        nch = channels_for(in->bytes, def->net_bytes_per_channel, in->max_channels);
    else
        nch = channels_for(in->bytes, def->bytes_per_channel, in->max_channels);
    /* MIN_NCHANNELS applies where the defaults spread by size (on the host: the Simple
     * ring, also over the network; its LL and one-shot works stay on one channel) */
    size_t per = out->algo == BT_ALGO_DIRECT ? def->direct_bytes_per_channel
                 : out->proto == BT_PROTO_LL ? def->ll_bytes_per_channel
                                             : def->bytes_per_channel;
    int max = out->algo == BT_ALGO_DIRECT ? in->direct_max_channels : in->max_channels;
    if (per != 0 && nch < env->min_nchannels)
        nch = env->min_nchannels < max ? env->min_nchannels : max;
    out->nchannels = nch;

    size_t slot = out->proto == BT_PROTO_LL      ? in->ll_payload
                  : out->proto == BT_PROTO_LL128 ? in->ll128_payload
                  : out->algo == BT_ALGO_DIRECT  ? in->direct_slot
                                                 : in->simple_slot;
    out->chunk = slot / in->esize;
    if (out->chunk == 0)
        out->chunk = 1;
}
