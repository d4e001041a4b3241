/*
 * CUDA mode, host side: a GPU communicator's CUDA state (made at its first GPU operation:
 * the connectors of exec/cuda/p2p.c or host_conns.c, the kernels' abort flag and report),
 * and the launch of a planned struct bt_cuda_kargs as one kernel on the caller's stream
 * (exec/cuda/kernel.cu runs it), after the communicator's kernels before it whatever their
 * streams. Planning is core's (core/plan.h, core/launch_gpu.c).
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

/* ---- per-communicator state ------------------------------------------------------- */

bt_status_t bt_cuda_comm_create(const struct bt_cuda_setup *s, struct bt_cuda_comm **cc_p)
{
    struct bt_cuda_comm *cc = calloc(1, sizeof(*cc));
    *cc_p = NULL;
    if (!cc)
        return BT_ERR_SYSTEM;
    cc->dev = s->dev;
    cc->rank = s->ctx->rank;
    cc->nranks = s->ctx->nranks;
    cc->ctx = s->ctx;
    int64_t nch = bt_param_max_nchannels();
    if (s->max_nchannels > 0 && (nch <= 0 || nch > s->max_nchannels))
        nch = s->max_nchannels; /* config.maxCTAs */
    bt_cuda_geometry_default(cc, (int)(nch > BT_GPU_MAX_CHANNELS ? BT_GPU_MAX_CHANNELS : nch));
    /* BUFFSIZE when the user set it (its default is the host's), else 4 MB FIFOs */
    if (bt_param_env("BUFFSIZE"))
        cc->slot = ((size_t)bt_param_buffsize() / BT_NSTEPS + 4095) & ~(size_t)4095;
    if (bt_param_env("LL_BUFFSIZE"))
        cc->ll_slot = ((size_t)bt_param_ll_buffsize() / BT_NSTEPS + 255) & ~(size_t)255;
    if (cc->ll_slot < 4096) /* whole lines, and a chunk of at least one 8-byte element */
        cc->ll_slot = 4096;
    if (cc->ll_slot > (1u << 20))
        cc->ll_slot = 1u << 20;
    bt_status_t st = cuda_status(cudaHostAlloc((void **)&cc->abort_h, sizeof(int),
                                               cudaHostAllocMapped | cudaHostAllocPortable),
                                 "cudaHostAlloc (abort flag)");
    if (st == BT_OK)
        st = cuda_status(cudaHostAlloc((void **)&cc->report_h, sizeof(*cc->report_h),
                                       cudaHostAllocMapped | cudaHostAllocPortable),
                         "cudaHostAlloc (kernel report)");
    if (st == BT_OK) {
        *cc->abort_h = *s->ctx->abort_flag;
        memset(cc->report_h, 0, sizeof(*cc->report_h));
        st = cuda_status(cudaHostGetDevicePointer(&cc->abort_d, cc->abort_h, 0),
                         "cudaHostGetDevicePointer");
    }
    if (st == BT_OK)
        st = cuda_status(cudaHostGetDevicePointer(&cc->report_d, cc->report_h, 0),
                         "cudaHostGetDevicePointer");
    if (st == BT_OK)
        st = bt_cuda_p2p_setup(s, cc);
    if (st != BT_OK) {
        cudaFreeHost(cc->abort_h);
        cudaFreeHost(cc->report_h);
        free(cc);
        return st;
    }
    *cc_p = cc;
    return BT_OK;
}

bt_status_t bt_cuda_comm_error(const struct bt_cuda_comm *cc)
{
    if (!cc || __atomic_load_n(&cc->report_h->error, __ATOMIC_ACQUIRE) == BT_CUDA_KERR_NONE)
        return BT_OK;
    return BT_ERR_REMOTE;
}

void bt_cuda_comm_abort(struct bt_cuda_comm *cc)
{
    if (cc)
        __atomic_store_n(cc->abort_h, 1, __ATOMIC_RELEASE);
}

void bt_cuda_comm_sync(struct bt_cuda_comm *cc)
{
    if (!cc)
        return;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(cc->dev);
    cudaDeviceSynchronize(); /* kernels still running use the FIFOs */
    if (prev >= 0)
        cudaSetDevice(prev);
}

void bt_cuda_comm_free(struct bt_cuda_comm *cc)
{
    if (!cc)
        return;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(cc->dev);
    bt_cuda_p2p_free(cc);
    if (cc->order_ev)
        cudaEventDestroy((cudaEvent_t)cc->order_ev);
    cudaFreeHost(cc->abort_h);
    cudaFreeHost(cc->report_h);
    if (prev >= 0)
        cudaSetDevice(prev);
    free(cc);
}

/* ---- launches ------------------------------------------------------------------------ */

void bt_cuda_kargs_init(struct bt_cuda_kargs *a, const struct bt_cuda_comm *cc)
{
    a->h.nworks = 0;
    a->h.abort_flag = cc->abort_d;
    a->h.report = (struct bt_cuda_report *)cc->report_d;
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

/* The capture sequence `stream` is in (0: none, or the stream is gone), */
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

/*
 * A communicator's kernels share its connectors and their device step counters, so they must
 * run one after another in the order they were queued, whatever streams they are queued on
 * (NCCL orders a communicator's kernels the same way; FSDP2, for one, reduce-scatters on
 * another stream than it all-gathers). On one stream CUDA does it and this costs nothing.
 * When a kernel comes on another stream than the last one's, its stream first waits for an
 * event after the last kernel: recorded on the old stream at that moment the first time, and
 * after every launch from then on. Only between launches of one capture sequence, or of none:
 * a captured graph runs when it is replayed, and its order with other work is the caller's.
 * Before the launch: *id gets the stream's capture sequence for order_streams_after.
 */
static bt_status_t order_streams(struct bt_cuda_comm *cc, void *stream, unsigned long long *id)
{
    *id = cc->last_capture;
    if (cc->launched && stream == cc->last_stream && !cc->multi_stream)
        return BT_OK;
    *id = capture_id(stream);
    if (!cc->launched || stream == cc->last_stream || *id != cc->last_capture)
        return BT_OK;
    if (!cc->order_ev)
        BT_CHECK(cuda_status(
            cudaEventCreateWithFlags((cudaEvent_t *)&cc->order_ev, cudaEventDisableTiming),
            "cudaEventCreate (stream order)"));
    if (!cc->multi_stream) {
        if (capture_id(cc->last_stream) != *id)
            return BT_OK; /* the old stream is gone, or now in another capture */
        BT_CHECK(
            cuda_status(cudaEventRecord((cudaEvent_t)cc->order_ev, (cudaStream_t)cc->last_stream),
                        "cudaEventRecord (stream order)"));
        cc->multi_stream = 1;
        BT_INFO(BT_LOG_INIT, "GPU operations on a second stream: each waits for the one before");
    }
    return cuda_status(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)cc->order_ev, 0),
                       "cudaStreamWaitEvent (stream order)");
}

static bt_status_t order_streams_after(struct bt_cuda_comm *cc, void *stream, unsigned long long id)
{
    cc->launched = 1;
    cc->last_stream = stream;
    cc->last_capture = id;
    if (!cc->multi_stream)
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
    BT_CHECK(order_streams(cc, stream, &id));
    BT_CHECK(cuda_status((cudaError_t)bt_cuda_kernel_launch(a, nblocks, stream), "kernel launch"));
    BT_CHECK(order_streams_after(cc, stream, id));
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
    BT_CHECK(order_streams(cc, stream, &id));
    BT_CHECK(cuda_status((cudaError_t)bt_cuda_window_kernel_launch(a, nblocks, stream),
                         "window kernel launch"));
    return order_streams_after(cc, stream, id);
}
