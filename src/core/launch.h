/*
 * The launch: a group's operations, planned (core/plan.h) and run. Operations on host
 * buffers run on the host executor before the call returns (core/launch.c); those of GPU
 * communicators on device buffers become kernels on their streams (core/launch_gpu.c).
 */
#ifndef BT_CORE_LAUNCH_H
#define BT_CORE_LAUNCH_H

#include "coll/redop.h"
#include "coll/work.h"
#include "util/status.h"

struct bt_comm;

struct bt_op {
    struct bt_comm *comm;
    int coll; /* enum bt_coll */
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    int dtype;
    struct bt_redop redop;
    const void *scalar_ptr; /* PreMulSum with the scalar in memory: read at launch */
    int peer;               /* root (Bcast, Reduce) or peer (Send, Recv) */
    void *stream;           /* cudaStream_t: where a GPU operation runs */
    /* set by the planner: a receive from this rank itself takes the matched send's input,
     * the smaller of their byte counts, NULL otherwise (bt_plan_check); the communicator's
     * collective number, 0 for send/recv (bt_plan_begin) */
    const void *self_src;
    size_t self_bytes;
    uint64_t seq;
};

/* Run a set of ops now: plan, connect what they need, execute (host ops to completion, GPU
 * ops queued on their streams). */
bt_status_t bt_launch(struct bt_op *ops, int nops);

/* The host part of a launch (core/launch.c) and the GPU part (core/launch_gpu.c), both after
 * bt_plan_check; bt_launch runs the host ops first. */
bt_status_t bt_launch_host(struct bt_op *ops, int nops);
bt_status_t bt_launch_gpu(struct bt_op *ops, int nops);

/* What the GPU part can tell before anything of the launch runs: ncclInvalidUsage (logged)
 * for what the CUDA executor cannot do (a capture through the network, on a communicator set
 * up already; a one-rank PreMulSum with a host-immediate scalar other than 1). */
bt_status_t bt_launch_gpu_check(const struct bt_op *ops, int nops);

/* A GPU communicator `cc` as the planner's target (what bt_launch_gpu plans against; set:
 * the tuner's settings, rank 0's; net_*: the network between hosts, 0: unknown or none). */
struct bt_cuda_comm;
struct bt_plan_target;
struct bt_tune_settings;
void bt_launch_gpu_target(const struct bt_cuda_comm *cc, const struct bt_tune_settings *set,
                          float net_gbps, float net_latency_us, void *owner,
                          struct bt_plan_target *tg);
/* The target a communicator of `nranks` ranks on one host, one GPU each, would plan against
 * with the default geometry (every GPU pair NVLink when `nvlink_all`: LL128 slots), for tools
 * and tests that ask what the tuner picks on a machine not at hand (baton-topo --file). `cc`
 * holds the geometry the target points into. */
void bt_launch_gpu_model(int nranks, int nvlink_all, const struct bt_tune_settings *set,
                         struct bt_cuda_comm *cc, struct bt_plan_target *tg);

/* Wait for a GPU communicator's kernels, then free its CUDA state (none: nothing). */
void bt_launch_gpu_free(struct bt_comm *comm);

#endif
