/*
 * ncclConfig_t: read the caller's `size` first and copy at most what we know (newer
 * clients pass larger structs, older ones smaller); fields the struct's size or version
 * does not cover count as unset. Then validate and apply defaults.
 */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "api/check.h"
#include "util/param.h"

#define CONFIG_MAGIC 0xcafebeefu

static int is_bool_or_unset(int v)
{
    return v == NCCL_CONFIG_UNDEF_INT || v == 0 || v == 1;
}

bt_status_t bt_api_config_parse(const ncclConfig_t *config, struct bt_comm_config *out,
                                const char *fn)
{
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    if (config) {
        size_t size = config->size;
        if (config->magic != CONFIG_MAGIC) {
            BT_WARN("%s: config->magic is 0x%x, expected 0x%x: initialize the config with "
                    "NCCL_CONFIG_INITIALIZER",
                    fn, config->magic, CONFIG_MAGIC);
            return BT_ERR_INVALID_ARG;
        }
        if (size < offsetof(ncclConfig_t, blocking)) {
            BT_WARN("%s: config->size %zu is too small", fn, size);
            return BT_ERR_INVALID_ARG;
        }
        memcpy(&c, config, size < sizeof(c) ? size : sizeof(c));
        /* Fields added after the caller's header version are unset. */
        if (c.version < 22700) {
            c.trafficClass = c.collnetEnable = c.CTAPolicy = c.shrinkShare = c.nvlsCTAs =
                NCCL_CONFIG_UNDEF_INT;
            c.commName = NULL;
        }
        if (c.version < 22800)
            c.nChannelsPerNetPeer = c.nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
        /* NCCL 2.30's fields: a struct from an older header is too small to hold them (the
         * copy above stopped short, leaving them unset). */
    }

    const struct {
        const char *name;
        int value;
    } bools[] = {
        {"blocking", c.blocking},           {"splitShare", c.splitShare},
        {"shrinkShare", c.shrinkShare},     {"nvlinkCentricSched", c.nvlinkCentricSched},
        {"collnetEnable", c.collnetEnable}, {"graphStreamOrdering", c.graphStreamOrdering}};
    for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
        if (!is_bool_or_unset(bools[i].value)) {
            BT_WARN("%s: config->%s is %d, must be 0 or 1", fn, bools[i].name, bools[i].value);
            return BT_ERR_INVALID_ARG;
        }
    if (c.minCTAs != NCCL_CONFIG_UNDEF_INT && c.minCTAs <= 0) {
        BT_WARN("%s: config->minCTAs is %d, must be > 0", fn, c.minCTAs);
        return BT_ERR_INVALID_ARG;
    }
    if (c.maxCTAs != NCCL_CONFIG_UNDEF_INT && c.maxCTAs <= 0) {
        BT_WARN("%s: config->maxCTAs is %d, must be > 0", fn, c.maxCTAs);
        return BT_ERR_INVALID_ARG;
    }
    if (c.minCTAs != NCCL_CONFIG_UNDEF_INT && c.maxCTAs != NCCL_CONFIG_UNDEF_INT &&
        c.minCTAs > c.maxCTAs) {
        BT_WARN("%s: config->minCTAs %d is larger than config->maxCTAs %d", fn, c.minCTAs,
                c.maxCTAs);
        return BT_ERR_INVALID_ARG;
    }
    if (c.CTAPolicy != NCCL_CONFIG_UNDEF_INT && (c.CTAPolicy < 0 || c.CTAPolicy > 2)) {
        BT_WARN("%s: config->CTAPolicy is %d, must be 0, 1 or 2", fn, c.CTAPolicy);
        return BT_ERR_INVALID_ARG;
    }
    if (c.nChannelsPerNetPeer != NCCL_CONFIG_UNDEF_INT &&
        (c.nChannelsPerNetPeer < 1 || c.nChannelsPerNetPeer > 64)) {
        BT_WARN("%s: config->nChannelsPerNetPeer is %d, must be in [1, 64]", fn,
                c.nChannelsPerNetPeer);
        return BT_ERR_INVALID_ARG;
    }

    if (c.graphUsageMode != NCCL_CONFIG_UNDEF_INT &&
        (c.graphUsageMode < 0 || c.graphUsageMode > 2)) {
        BT_WARN("%s: config->graphUsageMode is %d, must be 0, 1 or 2", fn, c.graphUsageMode);
        return BT_ERR_INVALID_ARG;
    }
    if (c.numRmaCtx != NCCL_CONFIG_UNDEF_INT && c.numRmaCtx < 0) {
        BT_WARN("%s: config->numRmaCtx is %d, must be >= 0", fn, c.numRmaCtx);
        return BT_ERR_INVALID_ARG;
    }
    if (c.maxP2pPeers != NCCL_CONFIG_UNDEF_INT && c.maxP2pPeers <= 0) {
        BT_WARN("%s: config->maxP2pPeers is %d, must be > 0", fn, c.maxP2pPeers);
        return BT_ERR_INVALID_ARG;
    }

#define DEF(v, d) ((v) == NCCL_CONFIG_UNDEF_INT ? (d) : (v))
    memset(out, 0, sizeof(*out));
    out->blocking =
        c.blocking == NCCL_CONFIG_UNDEF_INT ? bt_param_comm_blocking() != 0 : c.blocking;
    out->cga_cluster_size = DEF(c.cgaClusterSize, 4);
    out->min_ctas = DEF(c.minCTAs, 1);
    out->max_ctas = DEF(c.maxCTAs, 64);
    out->split_share = DEF(c.splitShare, 0);
    out->traffic_class = DEF(c.trafficClass, -1); /* -1: none (NCCL_NET_TRAFFIC_CLASS_UNDEF) */
    out->collnet_enable = DEF(c.collnetEnable, 0);
    out->cta_policy = DEF(c.CTAPolicy, 0);
    out->shrink_share = DEF(c.shrinkShare, 0);
    out->nvls_ctas = DEF(c.nvlsCTAs, 0);
    out->nchannels_per_net_peer = DEF(c.nChannelsPerNetPeer, 0);
    out->nvlink_centric_sched = DEF(c.nvlinkCentricSched, 0);
    out->graph_usage_mode = DEF(c.graphUsageMode, 2);
    out->num_rma_ctx = DEF(c.numRmaCtx, 1);
    out->max_p2p_peers = DEF(c.maxP2pPeers, 0);
    out->graph_stream_ordering = DEF(c.graphStreamOrdering, 1);
#undef DEF
    if (c.commName)
        snprintf(out->name, sizeof(out->name), "%s", c.commName);
    if (c.netName)
        snprintf(out->net_name, sizeof(out->net_name), "%s", c.netName);
    return BT_OK;
}
