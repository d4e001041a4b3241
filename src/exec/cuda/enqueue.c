/*
 * Queuing kernels: a planned struct bt_cuda_kargs becomes one kernel on the caller's stream
 * (exec/cuda/kernel.cu runs it), after the communicator's kernels before it whatever their
 * streams; likewise the window AllReduce's kernel. What goes into a launch is decided in
 * cuda_exec.c (the planner, plan/plan.h, makes its works).
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "exec/cuda/kargs.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/param.h"

static bt_status_t cuda_status(cudaError_t e, const char *what)
{
    return bt_device_error((int)e, what);
}

/* ---- launches ------------------------------------------------------------------------ */

void bt_cuda_kargs_init(struct bt_cuda_kargs *a, const struct bt_cuda_comm *cc)
{
    a->h.nworks = 0;
    a->h.abort_flag = cc->abort_d;
    a->h.report = (struct bt_exec_report *)cc->report_d;
    a->h.timeout_ns = (uint64_t)bt_param_timeout() * 1000000000ull;
    a->h.hang_ns = (uint64_t)bt_param_hang_report() * 1000000000ull;
    a->h.failed = cc->dfail_own;
    a->h.fail_words = cc->dfail;
    a->h.rank = cc->rank;
    a->h.nranks = cc->nranks;
}

struct bt_work *bt_cuda_kargs_add(struct bt_cuda_kargs *a, int block)
{
    struct bt_work *w = &a->works[a->h.nworks];
    a->block[a->h.nworks++] = (uint16_t)block;
    return w;
}

/* The capture sequence `stream` is in (0: none; ~0: unknown). */
static unsigned long long capture_id(void *stream)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    if (cudaStreamGetCaptureInfo((cudaStream_t)stream, &cs, &id, NULL, NULL, NULL, NULL) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return ~0ull; /* unknown: never matches */
    }
    return cs == cudaStreamCaptureStatusActive ? id : 0;
}

/* The event the launch on `stream` records itself, or NULL: then order_streams_after does. */
static void *order_event_of_launch(struct bt_cuda_comm *cc, void *stream)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    if (!cc->launch_orders)
        return NULL;
    if (cudaStreamIsCapturing((cudaStream_t)stream, &cs) != cudaSuccess)
        (void)cudaGetLastError();
    return cs == cudaStreamCaptureStatusNone ? cc->order_ev : NULL;
}

/*
 * A communicator's kernels share its connectors and their device step counters, so they must
 * run one after another in the order they were queued, whatever streams they are queued on
 * (NCCL orders a communicator's kernels the same way; FSDP2, for one, reduce-scatters on
 * another stream than it all-gathers). An event is recorded after every launch; a kernel
 * that comes on another stream than the last one's first waits for it. The old stream itself
 * is never touched again: the caller may have destroyed it (a stream per step), and CUDA
 * crashes on a destroyed stream's handle, it does not return an error. Only between launches
 * of one capture sequence, or of none: a captured graph runs when it is replayed, and its
 * order with other work is the caller's. Before the launch: *id gets the stream's capture
 * sequence for order_streams_after, *ev the event the launch records (or NULL).
 * The event costs 0.2-0.25 us of host time per launch (one H200) recorded after it. From sm_90
 * the launch records it instead (a programmatic event: device/launch.cuh), in the same call,
 * outside captures. Kernels that order themselves instead (each block adds to a device count
 * as it ends; cuStreamWaitValue32 on the new stream) cost 0.4-0.7 us per kernel on the GPU,
 * which is worse where the GPU is the bound (bench/results/processes-hosts-1xh200-2026-12-04.md).
 */
static bt_status_t order_streams(struct bt_cuda_comm *cc, void *stream, unsigned long long *id,
                                 void **ev)
{
    if (!cc->order_ev)
        BT_CHECK(cuda_status(
            cudaEventCreateWithFlags((cudaEvent_t *)&cc->order_ev, cudaEventDisableTiming),
            "cudaEventCreate (stream order)"));
    *ev = order_event_of_launch(cc, stream);
    *id = cc->last_capture;
    if (cc->launched && stream == cc->last_stream)
        return BT_OK;
    *id = capture_id(stream);
    if (!cc->launched || *id != cc->last_capture)
        return BT_OK;
    if (!cc->multi_stream) {
        cc->multi_stream = 1;
        BT_INFO(BT_LOG_INIT, "GPU operations on a second stream: each waits for the one before");
    }
    return cuda_status(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)cc->order_ev, 0),
                       "cudaStreamWaitEvent (stream order)");
}

static bt_status_t order_streams_after(struct bt_cuda_comm *cc, void *stream, unsigned long long id,
                                       void *recorded)
{
    cc->launched = 1;
    cc->last_stream = stream;
    cc->last_capture = id;
    if (recorded)
        return BT_OK;
    return cuda_status(cudaEventRecord((cudaEvent_t)cc->order_ev, (cudaStream_t)stream),
                       "cudaEventRecord (stream order)");
}

/* Launch the kernel, then hand the network's share of its steps to the proxy (connectors
 * through the network only: exec/cuda/host_conns.c). */
bt_status_t bt_cuda_kargs_launch(struct bt_cuda_comm *cc, const struct bt_cuda_kargs *a,
                                 void *stream)
{
    int nblocks = 0;
    for (int i = 0; i < a->h.nworks; i++) {
        int end = a->block[i] + (a->works[i].nchans > 1 ? (int)a->works[i].nchans : 1);
        if (end > nblocks)
            nblocks = end;
    }
    if (nblocks == 0)
        return BT_OK;
    /* an earlier network failure stops us before this kernel is queued: once it is, its
     * steps must be posted or it would wait for them until TIMEOUT */
    BT_CHECK(bt_cuda_hostconn_reap(cc, 0));
    unsigned long long id;
    void *ev;
    BT_CHECK(order_streams(cc, stream, &id, &ev));
    BT_CHECK(
        cuda_status((cudaError_t)bt_cuda_kernel_launch(a, nblocks, stream, ev), "kernel launch"));
    BT_CHECK(order_streams_after(cc, stream, id, ev));
    return bt_cuda_hostconn_post(cc, a);
}

bt_status_t bt_cuda_window_launch(struct bt_cuda_comm *cc, struct bt_cuda_wargs *a, int nblocks,
                                  void *stream)
{
    struct bt_cuda_kargs k;
    bt_cuda_kargs_init(&k, cc);
    a->h = k.h;
    BT_CHECK(bt_cuda_hostconn_reap(cc, 0));
    unsigned long long id;
    void *ev;
    BT_CHECK(order_streams(cc, stream, &id, &ev));
    BT_CHECK(cuda_status((cudaError_t)bt_cuda_window_kernel_launch(a, nblocks, stream, ev),
                         "window kernel launch"));
    return order_streams_after(cc, stream, id, ev);
}
