/*
 * CUDA mode, host side: turn a group's GPU operations into kernel launches on the user's
 * streams (exec/cuda/kernel.cu runs them).
 *
 *   per communicator, in op order:
 *     first GPU op -> set up the GPU connectors with every rank (transport/cuda/p2p.c)
 *     a collective -> one launch: ring schedule, Simple protocol, one block per channel
 *     consecutive send/recv -> one launch: one block per (peer, direction), so a group's
 *                              sends and receives progress together
 *     send/recv to self -> cudaMemcpyAsync
 * Each launch switches to the communicator's device and back. A collective runs alone in
 * its launch so that the next one, queued after it on the stream, sees all its output.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algo.h"
#include "coll/dtype.h"
#include "core/arrival.h"
#include "core/comm.h"
#include "core/group.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_comm.h"
#include "exec/cuda/kargs.h"
#include "tune/tuner.h"
#include "util/log.h"
#include "util/param.h"

/* Channels: one block each. Measured on 2 x H200 (docs/TUNING.md), AllReduce busbw at 1 GB:
 * 16 channels 188 GB/s, 32 307, 48 325, 64 341 (NCCL 327-331); a block moves 5-12 GB/s. */
#define BT_GPU_NCHANNELS 64            /* default MAX_NCHANNELS */
#define BT_GPU_MAX_CHANNELS 64         /* MAX_NCHANNELS may ask for up to this many */
#define BT_GPU_SLOT (512 * 1024)       /* bytes per Simple slot: 4 MB FIFOs */
#define BT_GPU_LL_SLOT (64 * 1024)     /* bytes per LL slot (32 KB of payload) */
#define BT_GPU_LL128_SLOT (64 * 1024)  /* bytes per LL128 slot (60 KB of payload) */
#define BT_GPU_ALIGN 512               /* channel shares start at this many bytes */
#define BT_GPU_P2P_PARTS 32            /* blocks per peer and direction for send/recv */
#define BT_GPU_P2P_MIN_PART (8 * 1024) /* bytes: smaller messages use fewer blocks */
#define BT_GPU_P2P_LL_MAX (64 * 1024)  /* send/recv up to this size in LL lines */

static bt_status_t cuda_status(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return BT_OK;
    BT_WARN("%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return BT_ERR_CUDA;
}

int bt_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

int bt_cuda_current_device(void)
{
    int d = -1;
    if (bt_cuda_device_count() == 0 || cudaGetDevice(&d) != cudaSuccess)
        return -1;
    return d;
}

bt_status_t bt_cuda_pci_bus_id(int dev, char *buf, int len)
{
    return cuda_status(cudaDeviceGetPCIBusId(buf, len, dev), "cudaDeviceGetPCIBusId");
}

int bt_cuda_is_device_ptr(const void *p)
{
    if (!p)
        return 0;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

bt_status_t bt_cuda_mem_alloc(void **ptr_p, size_t bytes)
{
    return cuda_status(cudaMalloc(ptr_p, bytes ? bytes : 1), "ncclMemAlloc: cudaMalloc");
}

bt_status_t bt_cuda_mem_free(void *ptr)
{
    return cuda_status(cudaFree(ptr), "ncclMemFree: cudaFree");
}

/* ---- per-communicator state ------------------------------------------------------- */

static bt_status_t cuda_comm_setup(struct bt_comm *comm)
{
    struct bt_cuda_comm *cc = calloc(1, sizeof(*cc));
    if (!cc)
        return BT_ERR_SYSTEM;
    cc->dev = comm->cuda_dev;
    int64_t nch = bt_param_max_nchannels();
    if (nch <= 0)
        nch = BT_GPU_NCHANNELS;
    cc->nch = (int)(nch > BT_GPU_MAX_CHANNELS ? BT_GPU_MAX_CHANNELS : nch);
    /* BUFFSIZE when the user set it (its default is the host's), else 4 MB FIFOs */
    /* send/recv parts: as many as fit a launch with every peer in both directions */
    cc->np2p = comm->nranks > 1 ? (BT_CUDA_MAX_WORKS - 8) / (2 * (comm->nranks - 1)) : 1;
    if (cc->np2p > BT_GPU_P2P_PARTS)
        cc->np2p = BT_GPU_P2P_PARTS;
    if (cc->np2p < 1)
        cc->np2p = 1;
    cc->slot = BT_GPU_SLOT;
    if (bt_param_env("BUFFSIZE"))
        cc->slot = ((size_t)bt_param_buffsize() / BT_NSTEPS + 4095) & ~(size_t)4095;
    cc->ll_slot = BT_GPU_LL_SLOT;
    if (bt_param_env("LL_BUFFSIZE"))
        cc->ll_slot = ((size_t)bt_param_ll_buffsize() / BT_NSTEPS + 255) & ~(size_t)255;
    if (cc->ll_slot < 4096) /* whole lines, and a chunk of at least one 8-byte element */
        cc->ll_slot = 4096;
    if (cc->ll_slot > (1u << 20))
        cc->ll_slot = 1u << 20;
    cc->ll128_slot = BT_GPU_LL128_SLOT; /* kept only over NVLink (transport/cuda/p2p.c) */
    bt_status_t st = cuda_status(cudaHostAlloc((void **)&cc->abort_h, sizeof(int),
                                               cudaHostAllocMapped | cudaHostAllocPortable),
                                 "cudaHostAlloc (abort flag)");
    if (st == BT_OK)
        st = cuda_status(cudaHostAlloc((void **)&cc->report_h, sizeof(*cc->report_h),
                                       cudaHostAllocMapped | cudaHostAllocPortable),
                         "cudaHostAlloc (kernel report)");
    if (st == BT_OK) {
        *cc->abort_h = comm->abort_flag;
        memset(cc->report_h, 0, sizeof(*cc->report_h));
        st = cuda_status(cudaHostGetDevicePointer(&cc->abort_d, cc->abort_h, 0),
                         "cudaHostGetDevicePointer");
    }
    if (st == BT_OK)
        st = cuda_status(cudaHostGetDevicePointer(&cc->report_d, cc->report_h, 0),
                         "cudaHostGetDevicePointer");
    if (st == BT_OK)
        st = bt_cuda_p2p_setup(comm, cc);
    if (st != BT_OK) {
        cudaFreeHost(cc->abort_h);
        cudaFreeHost(cc->report_h);
        free(cc);
        return st;
    }
    comm->cuda = cc;
    return BT_OK;
}

bt_status_t bt_cuda_comm_error(struct bt_comm *comm)
{
    struct bt_cuda_comm *cc = comm->cuda;
    if (!cc || __atomic_load_n(&cc->report_h->error, __ATOMIC_ACQUIRE) == BT_CUDA_KERR_NONE)
        return BT_OK;
    return BT_ERR_REMOTE;
}

void bt_cuda_comm_abort(struct bt_comm *comm)
{
    struct bt_cuda_comm *cc = comm->cuda;
    if (cc)
        __atomic_store_n(cc->abort_h, 1, __ATOMIC_RELEASE);
}

void bt_cuda_comm_free(struct bt_comm *comm)
{
    struct bt_cuda_comm *cc = comm ? comm->cuda : NULL;
    if (!cc)
        return;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(cc->dev);
    cudaDeviceSynchronize();    /* kernels still running use the FIFOs */
    bt_cuda_watch_remove(comm); /* after the kernels: its last look sees what they reported */
    bt_cuda_p2p_free(comm, cc);
    if (cc->order_ev)
        cudaEventDestroy((cudaEvent_t)cc->order_ev);
    cudaFreeHost(cc->abort_h);
    cudaFreeHost(cc->report_h);
    if (prev >= 0)
        cudaSetDevice(prev);
    free(cc);
    comm->cuda = NULL;
}

/* ---- planning ------------------------------------------------------------------------ */

static void kargs_init(struct bt_cuda_kargs *a, struct bt_comm *comm)
{
    struct bt_cuda_comm *cc = comm->cuda;
    a->h.nworks = 0;
    a->h.abort_flag = cc->abort_d;
    a->h.report = (struct bt_cuda_report *)cc->report_d;
    a->h.timeout_ns = (uint64_t)bt_param_timeout() * 1000000000ull;
    a->h.hang_ns = (uint64_t)bt_param_hang_report() * 1000000000ull;
}

static struct bt_work *kargs_add(struct bt_cuda_kargs *a, int block)
{
    struct bt_work *w = &a->works[a->h.nworks];
    memset(w, 0, sizeof(*w));
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
 * through the network only: transport/cuda/host_conns.c). */
static bt_status_t kargs_launch(struct bt_comm *comm, const struct bt_cuda_kargs *a, void *stream)
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
    BT_CHECK(bt_cuda_hostconn_reap(comm, comm->cuda, 0));
    unsigned long long id;
    BT_CHECK(order_streams(comm->cuda, stream, &id));
    BT_CHECK(cuda_status((cudaError_t)bt_cuda_kernel_launch(a, nblocks, stream), "kernel launch"));
    BT_CHECK(order_streams_after(comm->cuda, stream, id));
    return bt_cuda_hostconn_post(comm, a);
}

/* The work fields every kind shares. */
static void work_common(struct bt_work *w, const struct bt_op *op, struct bt_comm *comm)
{
    w->coll = (uint8_t)op->coll;
    w->algo = BT_ALGO_RING;
    w->proto = BT_PROTO_SIMPLE;
    w->redop = op->redop;
    w->sendbuf = op->sendbuf;
    w->recvbuf = op->recvbuf;
    w->esize = bt_dtype_size(op->dtype);
    w->count = op->count;
    w->root = op->peer;
    w->nranks = comm->nranks;
    w->rank = comm->rank;
    w->owner = comm;
    w->seq = op->coll == BT_COLL_SEND || op->coll == BT_COLL_RECV ? 0 : comm->ncolls;
}

static size_t coll_bytes(const struct bt_op *op, int nranks)
{
    size_t b = op->count * bt_dtype_size(op->dtype);
    if (op->coll == BT_COLL_ALLGATHER || op->coll == BT_COLL_REDUCESCATTER)
        b *= (size_t)nranks;
    return b;
}

/* The one-shot's channels: its send/recv connector parts, at most what a one-pass launch
 * carries. */
static int direct_max_channels(const struct bt_cuda_comm *cc)
{
    int n = cc->np2p < cc->nch ? cc->np2p : cc->nch;
    return n < BT_CUDA_ONEPASS_MAX_WORKS ? n : BT_CUDA_ONEPASS_MAX_WORKS;
}

/* One collective: the tuner's algorithm, protocol and channels (ring, or one-shot
 * AllReduce over the send/recv connectors), one block per channel, all in one work that
 * stands for every channel it uses (bt_work_channel). */
static bt_status_t launch_coll(struct bt_op *op)
{
    struct bt_comm *comm = op->comm;
    struct bt_cuda_comm *cc = comm->cuda;
    size_t es = bt_dtype_size(op->dtype);
    struct bt_tune_in in = {
        .set = &comm->tune,
        .def = &bt_tune_gpu_defaults,
        .coll = op->coll,
        .nranks = comm->nranks,
        .bytes = coll_bytes(op, comm->nranks),
        .esize = es,
        .max_channels = cc->nch,
        .simple_slot = cc->slot,
        .ll_payload = cc->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD,
        .direct_slot = cc->slot,
        /* LL128 runs only in the one-pass one-shot (kernel.cu), up to its rank count */
        .ll128_payload = comm->nranks <= BT_CUDA_ONEPASS_MAX_RANKS
                             ? cc->ll128_slot / BT_LL128_LINE * BT_LL128_PAYLOAD
                             : 0,
        .direct_ok = !cc->net,                          /* every rank's FIFOs are mapped here */
        .direct_max_channels = direct_max_channels(cc), /* a block per channel */
        .tree_ok = 0,
        .shm_all = !cc->net, /* through the network: Simple, one channel */
    };
    struct bt_tune_out t;
    bt_tune_coll(&in, &t);
    BT_TRACE(BT_LOG_TUNING, "GPU coll %d count %zu bytes %zu: algo %d proto %d nch %d chunk %zu",
             op->coll, op->count, in.bytes, t.algo, t.proto, t.nchannels, t.chunk);
    size_t align = BT_GPU_ALIGN / es;
    size_t share = bt_div_up(bt_div_up(op->count, (size_t)t.nchannels), align) * align;

    static __thread struct bt_cuda_kargs a;
    kargs_init(&a, comm);
    struct bt_work *w = kargs_add(&a, 0);
    work_common(w, op, comm);
    w->algo = (uint8_t)t.algo;
    w->proto = (uint8_t)t.proto;
    /* the channels that have elements: every rank counts the same */
    w->nchans = (uint32_t)bt_min_sz((size_t)t.nchannels, bt_div_up(op->count, share));
    w->chan_off = 0;
    w->chan_count = bt_min_sz(share, op->count);
    w->chunk = t.chunk;
    w->chan = cc->dchan; /* device addresses: only the kernel dereferences them */
    if (t.algo == BT_ALGO_DIRECT) {
        w->peer_send = cc->dpeer_send;
        w->peer_recv = cc->dpeer_recv;
        w->scratch = cc->dscratch;
        w->scratch_stride = cc->scratch_bytes;
    }
    w->nsteps = bt_algo_nsteps(w); /* channel 0's: each block counts its own */
    return kargs_launch(comm, &a, op->stream);
}

/* Send/recv ops[i0..i1) of one communicator: one block per (peer, direction). Self
 * send/recv pairs become copies. */
static bt_status_t launch_p2p(struct bt_op *ops, int i0, int i1)
{
    struct bt_comm *comm = ops[i0].comm;
    struct bt_cuda_comm *cc = comm->cuda;
    static __thread struct bt_cuda_kargs a;
    kargs_init(&a, comm);
    void *stream = ops[i0].stream;
    const struct bt_op *self_send = NULL;
    for (int i = i0; i < i1; i++) {
        struct bt_op *op = &ops[i];
        if (op->count == 0)
            continue;
        if (op->peer == comm->rank) {
            /* a group's self send and self recv pair up in order */
            if (op->coll == BT_COLL_SEND) {
                self_send = op;
                continue;
            }
            if (!self_send) {
                BT_WARN("ncclRecv from self (rank %d) without a matching ncclSend in the group",
                        comm->rank);
                return BT_ERR_INVALID_USAGE;
            }
            BT_CHECK(cuda_status(cudaMemcpyAsync(op->recvbuf, self_send->sendbuf,
                                                 op->count * bt_dtype_size(op->dtype),
                                                 cudaMemcpyDeviceToDevice, op->stream),
                                 "cudaMemcpyAsync (send to self)"));
            self_send = NULL;
            continue;
        }
        /* Cut into parts by size alone, so sender and receiver cut alike; each part is a
         * byte copy on its own block and connector (the uint8 kernel runs every send/recv). */
        int is_send = op->coll == BT_COLL_SEND;
        size_t bytes = op->count * bt_dtype_size(op->dtype);
        size_t want = bt_div_up(bytes, BT_GPU_P2P_MIN_PART);
        if (want < (size_t)comm->tune.min_nchannels) /* MIN_NCHANNELS, as many as fit */
            want = bt_min_sz((size_t)comm->tune.min_nchannels, bt_div_up(bytes, BT_GPU_ALIGN));
        int parts = (int)bt_min_sz((size_t)cc->np2p, want);
        /* small messages in LL lines (no fence, no tail) unless PROTO says otherwise; both
         * ends decide from the size and rank 0's settings */
        const struct bt_tune_settings *ts = &comm->tune;
        int ll = !cc->net && ts->ll_ok && (!ts->simple_ok || bytes <= BT_GPU_P2P_LL_MAX);
        size_t share = bt_div_up(bt_div_up(bytes, (size_t)parts), BT_GPU_ALIGN) * BT_GPU_ALIGN;
        for (int k = 0; k < parts; k++) {
            size_t off = (size_t)k * share;
            if (off >= bytes)
                break;
            if (a.h.nworks == BT_CUDA_MAX_WORKS) {
                /* only with many ops per peer in one group: later ones wait for these */
                BT_CHECK(kargs_launch(comm, &a, stream));
                kargs_init(&a, comm);
            }
            int idx = bt_cuda_p2p_index(cc, op->peer, !is_send, k);
            struct bt_work *w = kargs_add(&a, idx);
            work_common(w, op, comm);
            w->redop.dtype = BT_UINT8;
            w->esize = 1;
            w->count = bytes;
            w->chan_off = off;
            w->chan_count = bt_min_sz(share, bytes - off);
            w->chunk = cc->slot;
            if (ll) {
                w->proto = BT_PROTO_LL;
                w->chunk = cc->ll_slot / sizeof(union bt_ll_line) * BT_LL_PAYLOAD;
            }
            w->p2p_conn = &cc->dp2p[idx];
            w->nsteps = bt_algo_nsteps(w);
        }
    }
    return kargs_launch(comm, &a, stream);
}

/* A one-rank collective: the output is the input (AllReduce, Broadcast, ...). */
static bt_status_t launch_single(struct bt_op *op)
{
    size_t bytes = op->count * bt_dtype_size(op->dtype);
    if (op->redop.pre_mul && op->redop.scalar_f != 1.0 && op->redop.scalar_i != 1 &&
        (op->coll == BT_COLL_ALLREDUCE || op->coll == BT_COLL_REDUCE ||
         op->coll == BT_COLL_REDUCESCATTER)) {
        BT_WARN("PreMulSum with a scalar other than 1 on a one-rank GPU communicator is not "
                "supported yet");
        return BT_ERR_INVALID_USAGE;
    }
    if (op->sendbuf == op->recvbuf || bytes == 0)
        return BT_OK;
    return cuda_status(
        cudaMemcpyAsync(op->recvbuf, op->sendbuf, bytes, cudaMemcpyDeviceToDevice, op->stream),
        "cudaMemcpyAsync (one-rank collective)");
}

/* PreMulSum's scalar in device memory: read it now (the stream's earlier work may write it,
 * so wait for the stream first). */
static bt_status_t read_scalar(struct bt_op *op)
{
    if (!op->scalar_ptr)
        return BT_OK;
    unsigned char v[8] = {0};
    if (bt_cuda_is_device_ptr(op->scalar_ptr)) {
        BT_CHECK(cuda_status(cudaStreamSynchronize(op->stream), "cudaStreamSynchronize"));
        BT_CHECK(cuda_status(
            cudaMemcpy(v, op->scalar_ptr, bt_dtype_size(op->dtype), cudaMemcpyDeviceToHost),
            "cudaMemcpy of the PreMulSum scalar"));
    } else {
        memcpy(v, op->scalar_ptr, bt_dtype_size(op->dtype));
    }
    bt_redop_scalar_from_bytes(&op->redop, v);
    return BT_OK;
}

/* Set up every communicator of the launch that has no GPU state yet (collective: several
 * ranks of one thread set up concurrently, bt_for_each_comm). */
static bt_status_t setup_one(struct bt_comm *comm, void *unused)
{
    (void)unused;
    cudaError_t e = cudaSetDevice(comm->cuda_dev);
    bt_status_t st = e == cudaSuccess ? cuda_comm_setup(comm) : cuda_status(e, "cudaSetDevice");
    bt_cuda_watch_setup_done(comm); /* now: another comm of the group may still wait */
    return st;
}

static int needs_setup(const struct bt_op *op)
{
    return op->comm->cuda == NULL;
}

static bt_status_t setup_comms(struct bt_op *ops, int nops)
{
    return bt_for_each_comm(ops, nops, needs_setup, setup_one, NULL);
}

/* The setup is collective: every rank joins it at its first GPU operation. Before it, each
 * communicator that sets up marks its first collective of the launch on the arrival board
 * (launch_comm_ops marks it again, the same number) and tells the watcher, so that a rank
 * that never comes shows in a hang report instead of a silent wait. Ops of one comm are
 * contiguous. */
static void watch_setups(const struct bt_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        if (!needs_setup(&ops[i]) || (i > 0 && ops[i].comm == ops[i - 1].comm))
            continue;
        struct bt_comm *comm = ops[i].comm;
        uint64_t seq = 0;
        for (int j = i; j < nops && ops[j].comm == comm && !seq; j++)
            if (ops[j].coll != BT_COLL_SEND && ops[j].coll != BT_COLL_RECV)
                seq = comm->ncolls + 1;
        if (seq)
            bt_arrival_start(comm, seq);
        bt_cuda_watch_setup(comm, seq);
    }
}

/* Through the network the launch hands the proxy each kernel's steps as it queues the
 * kernel; a graph would replay kernels without them. */
static bt_status_t check_capture(const struct bt_op *ops, int i0, int nops)
{
    struct bt_comm *comm = ops[i0].comm;
    if (!comm->cuda->net)
        return BT_OK;
    for (int i = i0; i < nops && ops[i].comm == comm; i++) {
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(ops[i].stream, &cs) == cudaSuccess &&
            cs != cudaStreamCaptureStatusNone) {
            BT_WARN("rank %d: CUDA graph capture of GPU operations through the network (a rank "
                    "on another host, or P2P_DISABLE=1 with SHM_DISABLE=1) is not supported yet; "
                    "run them outside the capture",
                    comm->rank);
            return BT_ERR_INVALID_USAGE;
        }
    }
    return BT_OK;
}

static bt_status_t launch_comm_ops(struct bt_op *ops, int i0, int i1)
{
    struct bt_comm *comm = ops[i0].comm;
    for (int i = i0; i < i1;) {
        struct bt_op *op = &ops[i];
        bt_log_set_rank(comm->rank);
        comm->coll_seq++;
        if (op->coll == BT_COLL_SEND || op->coll == BT_COLL_RECV) {
            int j = i;
            while (j < i1 && (ops[j].coll == BT_COLL_SEND || ops[j].coll == BT_COLL_RECV))
                j++;
            BT_CHECK(launch_p2p(ops, i, j));
            i = j;
            continue;
        }
        BT_CHECK(read_scalar(op));
        bt_arrival_start(comm, ++comm->ncolls); /* this rank has called it (hang reports) */
        if (op->count == 0)
            ;
        else if (comm->nranks == 1)
            BT_CHECK(launch_single(op));
        else
            BT_CHECK(launch_coll(op));
        i++;
    }
    return BT_OK;
}

bt_status_t bt_cuda_launch(struct bt_op *ops, int nops)
{
    int prev = -1, setup = 0;
    cudaGetDevice(&prev);
    for (int i = 0; i < nops; i++)
        setup |= needs_setup(&ops[i]);
    bt_status_t st = BT_OK;
    if (setup) {
        watch_setups(ops, nops);
        st = setup_comms(ops, nops);
        for (int i = 0; i < nops; i++) {
            if (i > 0 && ops[i].comm == ops[i - 1].comm)
                continue;
            bt_cuda_watch_setup_done(ops[i].comm); /* again, for a setup that never ran */
            if (!ops[i].comm->cuda) /* it failed: the collective did not start after all */
                bt_arrival_start(ops[i].comm, ops[i].comm->ncolls);
        }
    }
    /* a refused capture leaves the communicators as they are: nothing was queued */
    for (int i = 0; i < nops && st == BT_OK; i++)
        if (i == 0 || ops[i].comm != ops[i - 1].comm)
            st = check_capture(ops, i, nops);
    if (st != BT_OK) {
        if (prev >= 0)
            cudaSetDevice(prev);
        return st;
    }
    /* ops of one communicator are contiguous in group order per comm: take them in runs.
     * The device is switched only when it differs (cudaSetDevice costs ~0.1 us a call, a
     * few percent of a small collective's enqueue). */
    int cur = prev;
    if (setup && cudaGetDevice(&cur) != cudaSuccess) /* setting up may have switched */
        cur = -1;
    for (int i = 0; i < nops && st == BT_OK;) {
        int j = i + 1;
        while (j < nops && ops[j].comm == ops[i].comm)
            j++;
        if (cur != ops[i].comm->cuda_dev) {
            st = cuda_status(cudaSetDevice(ops[i].comm->cuda_dev), "cudaSetDevice");
            cur = st == BT_OK ? ops[i].comm->cuda_dev : -1;
        }
        if (st == BT_OK)
            st = launch_comm_ops(ops, i, j);
        if (st != BT_OK)
            bt_comm_set_async_error(ops[i].comm, st);
        i = j;
    }
    if (prev >= 0 && cur != prev)
        cudaSetDevice(prev);
    return st;
}
