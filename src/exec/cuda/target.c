/*
 * The CUDA executor as a planner's target (cuda.h): what a GPU communicator offers the planner
 * (its channels, connectors and slots, in device memory: only the kernels dereference them),
 * and the default geometry's target for a machine not at hand. Plain C without the CUDA
 * runtime: built without nvcc too (baton-topo and unit/test_topo ask it what the tuner picks).
 */
#include <string.h>

#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"

void bt_cuda_target(const struct bt_cuda_comm *cc, const struct bt_tune_settings *set,
                    float net_gbps, float net_latency_us, void *owner, struct bt_plan_target *tg)
{
    int direct_max = cc->np2p < cc->nch ? cc->np2p : cc->nch; /* its connector parts */
    if (direct_max > BT_CUDA_ONEPASS_MAX_WORKS)               /* what a launch carries */
        direct_max = BT_CUDA_ONEPASS_MAX_WORKS;
    *tg = (struct bt_plan_target){
        .rank = cc->rank,
        .nranks = cc->nranks,
        .set = set,
        .def = &bt_tune_gpu_defaults,
        .owner = owner,
        .max_channels = cc->nch,
        .simple_slot = cc->slot,
        .ll_payload = cc->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD,
        /* 0 unless every GPU pair is NVLink (fifos.c) */
        .ll128_payload = cc->ll128_slot / BT_LL128_LINE * BT_LL128_PAYLOAD,
        .direct_ll128_payload = bt_cuda_p2p_ll128_slot(cc) / BT_LL128_LINE * BT_LL128_PAYLOAD,
        .direct_slot = cc->slot,
        .direct_ok = !cc->net, /* every rank's FIFOs are mapped here */
        .tree_ok = cc->trees,  /* through the network, ranks on several hosts (host_conns.c) */
        .tree_max_channels = bt_cuda_tree_channels(cc), /* two blocks a channel */
        /* PAT over the send/recv connectors; its ReduceScatter's partial sums in the
         * one-shot's scratch (one_per_host: cuda_exec.c, from the communicator) */
        .pat_ok = cc->nranks > 1,
        .pat_scratch = cc->scratch_bytes,
        .direct_max_channels = direct_max,
        .shm_all = !cc->net, /* through the network: Simple, one channel */
        .shared_gpu = cc->nsame > 1,
        .net_gbps = net_gbps,
        .net_latency_us = net_latency_us,
        .align = BT_CUDA_ALIGN,
        .chan = cc->dchan, /* device addresses: only the kernel dereferences them */
        .peer_send = cc->dpeer_send,
        .peer_recv = cc->dpeer_recv,
        .scratch = cc->dscratch,
        .scratch_stride = cc->scratch_bytes,
        .p2p_parts = cc->np2p_run,
        .p2p_min_part = BT_CUDA_P2P_MIN_PART,
        .p2p_ll_max = cc->net ? 0 : BT_CUDA_P2P_LL_MAX,
        .p2p_slot = cc->slot,
    };
}

void bt_cuda_model(int nranks, int nvlink_all, const struct bt_tune_settings *set,
                   struct bt_plan_target *tg)
{
    struct bt_cuda_comm cc;
    memset(&cc, 0, sizeof(cc));
    cc.nranks = nranks;
    bt_cuda_geometry_default(&cc, 0);
    if (!nvlink_all)
        cc.ll128_slot = 0;
    bt_cuda_target(&cc, set, 0, 0, NULL, tg);
}
