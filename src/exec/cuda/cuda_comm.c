/*
 * A GPU communicator's CUDA state (cuda_comm.h), made at its first GPU operation: the
 * geometry, the kernels' host-mapped abort flag and report, and the connectors (fifos.c, or
 * through the network: host_conns.c); freed after its kernels.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "util/log.h"
#include "util/param.h"

static bt_status_t cuda_status(cudaError_t e, const char *what)
{
    return bt_device_error((int)e, what);
}

bt_status_t bt_cuda_comm_create(const struct bt_exec_comm *ec, struct bt_cuda_comm **cc_p)
{
    struct bt_cuda_comm *cc = calloc(1, sizeof(*cc));
    *cc_p = NULL;
    if (!cc)
        return BT_ERR_SYSTEM;
    cc->dev = ec->dev;
    cc->rank = ec->tctx->rank;
    cc->nranks = ec->tctx->nranks;
    cc->ctx = ec->tctx;
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, cc->dev) != cudaSuccess)
        (void)cudaGetLastError();
    /* programmatic events (enqueue.c: order_streams) */
    cc->launch_orders = major >= 9 && bt_param_launch_event() != 0;
    int64_t nch = bt_param_max_nchannels();
    if (ec->max_ctas > 0 && (nch <= 0 || nch > ec->max_ctas))
        nch = ec->max_ctas; /* config.maxCTAs */
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
    if (bt_param_env("LL128_BUFFSIZE")) /* whole lines, 4 KB to 4 MB a slot */
        cc->ll128_slot =
            (size_t)bt_param_ll128_buffsize() / BT_NSTEPS / BT_LL128_LINE * BT_LL128_LINE;
    if (cc->ll128_slot < 4096)
        cc->ll128_slot = 4096;
    if (cc->ll128_slot > (4u << 20))
        cc->ll128_slot = 4u << 20;
    bt_status_t st = cuda_status(cudaHostAlloc((void **)&cc->abort_h, sizeof(int),
                                               cudaHostAllocMapped | cudaHostAllocPortable),
                                 "cudaHostAlloc (abort flag)");
    if (st == BT_OK)
        st = cuda_status(cudaHostAlloc((void **)&cc->report_h, sizeof(*cc->report_h),
                                       cudaHostAllocMapped | cudaHostAllocPortable),
                         "cudaHostAlloc (kernel report)");
    if (st == BT_OK) {
        *cc->abort_h = *ec->tctx->abort_flag;
        memset(cc->report_h, 0, sizeof(*cc->report_h));
        st = cuda_status(cudaHostGetDevicePointer(&cc->abort_d, cc->abort_h, 0),
                         "cudaHostGetDevicePointer");
    }
    if (st == BT_OK)
        st = cuda_status(cudaHostGetDevicePointer(&cc->report_d, cc->report_h, 0),
                         "cudaHostGetDevicePointer");
    if (st == BT_OK)
        st = bt_cuda_fifos_setup(ec, cc);
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
    if (!cc || __atomic_load_n(&cc->report_h->error, __ATOMIC_ACQUIRE) == BT_EXEC_ERR_NONE)
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

void bt_cuda_comm_drain(struct bt_cuda_comm *cc)
{
    bt_cuda_hostconn_drain(cc);
}

void bt_cuda_comm_free(struct bt_cuda_comm *cc)
{
    if (!cc)
        return;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(cc->dev);
    bt_cuda_fifos_free(cc);
    if (cc->order_ev)
        cudaEventDestroy((cudaEvent_t)cc->order_ev);
    cudaFreeHost(cc->abort_h);
    cudaFreeHost(cc->report_h);
    if (prev >= 0)
        cudaSetDevice(prev);
    free(cc);
}

volatile struct bt_exec_report *bt_cuda_comm_report(struct bt_cuda_comm *cc)
{
    return cc->report_h;
}
