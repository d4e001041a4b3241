/*
 * Every collective on GPU buffers, checked bit for bit against a host reference:
 *   AllReduce, AllGather, ReduceScatter, Broadcast (root 1), Reduce (root 0), and a ring of
 *   Send/Recv; every dtype; sum, prod, max, min, avg, PreMulSum (scalar 2) where the
 *   collective reduces; counts 0, 1, 7, 1M + 3 (and 64M for float sum AllReduce);
 *   out of place, in place, and with buffers one element off 16-byte alignment;
 *   CUDA graph capture of an AllReduce replayed three times; an AllReduce on ncclMemAlloc'ed
 *   (device) memory; AllReduces queued on three streams with no order between them.
 * Inputs are small integers (1..4) and the PreMulSum scalar is 2, so every partial result
 * that travels between ranks in the collective's dtype is exact even in fp8 (a ring sends
 * partial reductions in the dtype, as NCCL does: 3 x 3 = 9 would round in e5m2 before the
 * next rank adds to it); only final results may round, the same way on both sides.
 * With more than 2 ranks (BATON_TEST_GPUS=4 or 8) inputs are 0 or 1, so that partial sums of
 * 8 ranks stay exact in e5m2 too.
 * Two modes: N processes with one GPU each (ncclCommInitRank), and one process driving
 * every GPU (ncclCommInitAll, collectives inside ncclGroupStart/End), that one also with every
 * buffer in a symmetric window (BATON_TEST_WINDOWS=1 with BATON_TEST_SAME_GPU=1). Needs N GPUs,
 * or one with BATON_TEST_SAME_GPU=1 (the one-process mode with all N ranks on GPU 0) or with
 * BATON_TEST_MPS=1 (the N processes on GPU 0, under CUDA MPS). BATON_TEST_EXPECT=tree (or pat):
 * some collectives must have run on that algorithm (a run that forces it proves it ran).
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "coll/dtype.h"
#include "harness.h"
#include "nccl.h"

/* Ranks, one GPU each: BATON_TEST_GPUS (default 2, at most MAX_NR). */
#define MAX_NR 8
static int NR = 2;
#define BIG (1024 * 1024 + 3)

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

enum coll { C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_BCAST, C_REDUCE, C_SENDRECV, C_N };
static const char *coll_names[] = {"AllReduce", "AllGather", "ReduceScatter",
                                   "Broadcast", "Reduce",    "SendRecv"};
enum op { O_SUM, O_PROD, O_MAX, O_MIN, O_AVG, O_PREMUL, O_N };
static const char *op_names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};

static size_t dsize(int t)
{
    static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return s[t];
}

static int is_float(int t)
{
    return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
           t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

static double input(int rank, size_t i)
{
    if (NR > 2) { /* 0 or 1, hashed per rank and element (a misplaced block or a shifted ring
                     still shows); partial sums of up to 8 ranks (x 2 for PreMulSum) stay exact
                     in e5m2 */
        uint32_t h = (uint32_t)(i + 1) * 2654435761u ^ (uint32_t)(rank + 1) * 0x9E3779B9u;
        return (double)((h >> 17) & 1);
    }
    return (double)(1 + (i * 7 + (size_t)rank * 3) % 4);
}

/* Store an exactly computed value as dtype t (narrow floats: round once, as the GPU does). */
static void encode(int t, double v, void *dst)
{
    switch (t) {
    case ncclInt8:
        *(int8_t *)dst = (int8_t)(int64_t)v;
        break;
    case ncclUint8:
        *(uint8_t *)dst = (uint8_t)(int64_t)v;
        break;
    case ncclInt32:
        *(int32_t *)dst = (int32_t)(int64_t)v;
        break;
    case ncclUint32:
        *(uint32_t *)dst = (uint32_t)(int64_t)v;
        break;
    case ncclInt64:
        *(int64_t *)dst = (int64_t)v;
        break;
    case ncclUint64:
        *(uint64_t *)dst = (uint64_t)(int64_t)v;
        break;
    case ncclFloat16:
        *(uint16_t *)dst = bt_float_to_half((float)v);
        break;
    case ncclFloat32:
        *(float *)dst = (float)v;
        break;
    case ncclFloat64:
        *(double *)dst = v;
        break;
    case ncclBfloat16:
        *(uint16_t *)dst = bt_float_to_bf16((float)v);
        break;
    case ncclFloat8e4m3:
        *(uint8_t *)dst = bt_float_to_e4m3((float)v);
        break;
    default:
        *(uint8_t *)dst = bt_float_to_e5m2((float)v);
        break;
    }
}

/* A float dtype's value as a double, and its mantissa bits. */
static double decode_float(int t, const void *p)
{
    switch (t) {
    case ncclFloat16:
        return bt_half_to_float(*(const uint16_t *)p);
    case ncclFloat32:
        return *(const float *)p;
    case ncclFloat64:
        return *(const double *)p;
    case ncclBfloat16:
        return bt_bf16_to_float(*(const uint16_t *)p);
    case ncclFloat8e4m3:
        return bt_e4m3_to_float(*(const uint8_t *)p);
    default:
        return bt_e5m2_to_float(*(const uint8_t *)p);
    }
}

static int mantissa_bits(int t)
{
    switch (t) {
    case ncclFloat16:
        return 10;
    case ncclFloat32:
        return 23;
    case ncclFloat64:
        return 52;
    case ncclBfloat16:
        return 7;
    case ncclFloat8e4m3:
        return 3;
    default:
        return 2;
    }
}

/* How far a float average may be from the exact one: every rank's input is scaled by 1 / NR
 * before the sum (NCCL's average of floats, and Baton's), and where NR is not a power of two
 * neither 1 / NR nor the scaled terms are exact, and a ring rounds each partial sum to the
 * dtype: NR + 1 roundings at the result's order (its inputs are >= 0: tests/mp/colls_suite.c's
 * tolerance, with the sum of magnitudes). 0 (exact) otherwise. */
static double avg_tolerance(int t, double exact)
{
    if ((NR & (NR - 1)) == 0 || exact == 0)
        return 0;
    int e;
    (void)frexp(fabs(exact), &e); /* |exact| = f 2^e, f in [0.5, 1): an ulp is 2^(e - 1 - m) */
    return (NR + 1) * ldexp(1, e - 1 - mantissa_bits(t));
}

/* The reduction of every rank's element, exactly. */
static double reduce_ref(int t, int op, size_t i, size_t idx_shift)
{
    double acc = 0;
    for (int r = 0; r < NR; r++) {
        double x = input(r, i + idx_shift);
        if (op == O_PREMUL)
            x *= 2;
        if (r == 0) {
            acc = x;
            continue;
        }
        switch (op) {
        case O_PROD:
            acc *= x;
            break;
        case O_MAX:
            acc = x > acc ? x : acc;
            break;
        case O_MIN:
            acc = x < acc ? x : acc;
            break;
        default:
            acc += x;
            break;
        }
    }
    if (op == O_AVG)
        acc = is_float(t) ? acc / NR : (double)((int64_t)acc / NR);
    return acc;
}

struct tcase {
    int coll, dtype, op, inplace, misalign;
    size_t count;
};

/* Bytes of input and output per rank for the case. */
static void case_counts(const struct tcase *c, size_t *in_p, size_t *out_p)
{
    size_t n = c->count;
    *in_p = c->coll == C_REDUCESCATTER ? n * NR : n;
    *out_p = c->coll == C_ALLGATHER ? n * NR : n;
}

struct rank_bufs {
    char *base; /* device allocation */
    char *send, *recv;
    size_t cap;
    cudaStream_t stream;
    ncclRedOp_t op;
};

static void prepare(const struct tcase *c, int rank, struct rank_bufs *b)
{
    size_t es = dsize(c->dtype), nin, nout;
    case_counts(c, &nin, &nout);
    size_t off = c->misalign ? es : 0;
    size_t need = (nin + nout) * es + 2 * 256;
    if (need > b->cap) {
        if (b->base)
            CU(cudaFree(b->base));
        CU(cudaMalloc((void **)&b->base, need));
        b->cap = need;
    }
    b->recv = b->base + off;
    if (c->inplace) /* nccl's in-place layouts: input is the output, or this rank's slice */
        b->send = b->recv + (c->coll == C_ALLGATHER ? (size_t)rank * c->count * es : 0);
    else
        b->send = b->base + 256 + ((nout * es + 255) / 256) * 256 + off;
    CU(cudaMemset(b->recv, 0xEE, nout * es)); /* poison: every element must be written */
    char *h = malloc(nin * es + 1);
    for (size_t i = 0; i < nin; i++)
        encode(c->dtype, input(rank, i), h + i * es);
    CU(cudaMemcpy(b->send, h, nin * es, cudaMemcpyHostToDevice));
    free(h);
    /* The memset and the copy run on the legacy stream, which the collective's non-blocking
     * stream does not wait for (a pageable copy may return before its last DMA lands). */
    CU(cudaDeviceSynchronize());
    b->op = ncclSum;
    if (c->op == O_PROD)
        b->op = ncclProd;
    else if (c->op == O_MAX)
        b->op = ncclMax;
    else if (c->op == O_MIN)
        b->op = ncclMin;
    else if (c->op == O_AVG)
        b->op = ncclAvg;
}

static void issue(const struct tcase *c, int rank, ncclComm_t comm, struct rank_bufs *b)
{
    ncclDataType_t t = (ncclDataType_t)c->dtype;
    size_t n = c->count;
    if (c->op == O_PREMUL && c->coll != C_ALLGATHER && c->coll != C_BCAST &&
        c->coll != C_SENDRECV) {
        unsigned char scalar[8];
        encode(c->dtype, 2, scalar);
        BT_TEST_OK(ncclRedOpCreatePreMulSum(&b->op, scalar, t, ncclScalarHostImmediate, comm));
    }
    switch (c->coll) {
    case C_ALLREDUCE:
        BT_TEST_OK(ncclAllReduce(b->send, b->recv, n, t, b->op, comm, b->stream));
        break;
    case C_ALLGATHER:
        BT_TEST_OK(ncclAllGather(b->send, b->recv, n, t, comm, b->stream));
        break;
    case C_REDUCESCATTER:
        BT_TEST_OK(ncclReduceScatter(b->send, b->recv, n, t, b->op, comm, b->stream));
        break;
    case C_BCAST:
        BT_TEST_OK(ncclBroadcast(b->send, b->recv, n, t, 1, comm, b->stream));
        break;
    case C_REDUCE:
        BT_TEST_OK(ncclReduce(b->send, b->recv, n, t, b->op, 0, comm, b->stream));
        break;
    default:
        BT_TEST_OK(ncclGroupStart());
        BT_TEST_OK(ncclSend(b->send, n, t, (rank + 1) % NR, comm, b->stream));
        BT_TEST_OK(ncclRecv(b->recv, n, t, (rank - 1 + NR) % NR, comm, b->stream));
        BT_TEST_OK(ncclGroupEnd());
        break;
    }
}

/* Compare this rank's output with the reference; returns the number of wrong elements. */
static size_t verify(const struct tcase *c, int rank, struct rank_bufs *b)
{
    size_t es = dsize(c->dtype), nin, nout;
    case_counts(c, &nin, &nout);
    if (c->coll == C_REDUCE && rank != 0)
        return 0; /* only the root's output is defined */
    char *got = malloc(nout * es + 1), *want = malloc(es);
    CU(cudaMemcpy(got, b->recv, nout * es, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < nout; i++) {
        double v;
        switch (c->coll) {
        case C_ALLGATHER:
            v = input((int)(i / c->count), i % c->count);
            break;
        case C_REDUCESCATTER:
            v = reduce_ref(c->dtype, c->op, i, (size_t)rank * c->count);
            break;
        case C_BCAST:
            v = input(1, i);
            break;
        case C_SENDRECV:
            v = input((rank - 1 + NR) % NR, i);
            break;
        default:
            v = reduce_ref(c->dtype, c->op, i, 0);
            break;
        }
        encode(c->dtype, v, want);
        int ok = memcmp(got + i * es, want, es) == 0;
        if (!ok && c->op == O_AVG && is_float(c->dtype))
            ok = fabs(decode_float(c->dtype, got + i * es) - v) <= avg_tolerance(c->dtype, v);
        if (!ok) {
            if (wrong < 3)
                fprintf(stderr, "rank %d %s %s dtype %d count %zu%s%s: element %zu wrong\n", rank,
                        coll_names[c->coll], op_names[c->op], c->dtype, c->count,
                        c->inplace ? " in-place" : "", c->misalign ? " misaligned" : "", i);
            wrong++;
        }
    }
    free(got);
    free(want);
    return wrong;
}

static int reduces(int coll)
{
    return coll == C_ALLREDUCE || coll == C_REDUCESCATTER || coll == C_REDUCE;
}

/* The case list, the same on every rank. */
static int next_case(int k, struct tcase *c)
{
    static const size_t counts[] = {0, 1, 7, BIG};
    int idx = 0;
    for (int coll = 0; coll < C_N; coll++)
        for (int t = 0; t < 12; t++)
            for (int op = 0; op < (reduces(coll) ? O_N : 1); op++)
                for (int ci = 0; ci < 4; ci++)
                    for (int v = 0; v < 3; v++) { /* out of place, in place, misaligned */
                        if (v == 1 && coll == C_SENDRECV)
                            continue;
                        if (idx++ != k)
                            continue;
                        *c = (struct tcase){coll, t, op, v == 1, v == 2, counts[ci]};
                        return 1;
                    }
    if (idx++ == k) { /* one large AllReduce */
        *c = (struct tcase){C_ALLREDUCE, ncclFloat32, O_SUM, 0, 0, (size_t)64 << 20};
        return 1;
    }
    return 0;
}

static void finish(const struct tcase *c, ncclComm_t comm, struct rank_bufs *b)
{
    if (c->op == O_PREMUL && b->op != ncclSum && b->op > ncclAvg)
        BT_TEST_OK(ncclRedOpDestroy(b->op, comm));
}

/* Both P2P and shared memory off, or the ranks cut into hosts (BATON_TEST_HOSTS): the GPUs
 * talk through the network. */
static int net_forced(void)
{
    const char *p = getenv("BATON_P2P_DISABLE"), *s = getenv("BATON_SHM_DISABLE");
    const char *h = getenv("BATON_TEST_HOSTS");
    return (p && s && atoi(p) == 1 && atoi(s) == 1) || (h && atoi(h) > 1);
}

/* Capture one AllReduce into a graph and replay it three times. Through the network
 * capture is refused (documented limit): the call says so with ncclInvalidUsage. */
static void graph_case(int rank, ncclComm_t comm, struct rank_bufs *b, size_t *wrong)
{
    struct tcase c = {C_ALLREDUCE, ncclFloat32, O_SUM, 0, 0, 4096};
    prepare(&c, rank, b);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    if (net_forced()) {
        CU(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
        ncclResult_t r =
            ncclAllReduce(b->send, b->recv, c.count, ncclFloat32, ncclSum, comm, b->stream);
        cudaError_t e = cudaStreamEndCapture(b->stream, &g);
        if (e == cudaSuccess)
            CU(cudaGraphDestroy(g));
        (void)cudaGetLastError();
        BT_TEST_CHECK(r == ncclInvalidUsage, "captured AllReduce through the network gave %d", r);
        return;
    }
    CU(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
    issue(&c, rank, comm, b);
    CU(cudaStreamEndCapture(b->stream, &g));
    CU(cudaGraphInstantiate(&ge, g, 0));
    for (int rep = 0; rep < 3; rep++) {
        CU(cudaMemset(b->recv, 0xEE, c.count * 4));
        CU(cudaDeviceSynchronize()); /* the legacy stream's memset before the graph */
        CU(cudaGraphLaunch(ge, b->stream));
        CU(cudaStreamSynchronize(b->stream));
        *wrong += verify(&c, rank, b);
    }
    CU(cudaGraphExecDestroy(ge));
    CU(cudaGraphDestroy(g));
}

/* ncclMemAlloc gives device memory in CUDA mode, and collectives run on it. */
static void memalloc_case(int rank, ncclComm_t comm, cudaStream_t stream, size_t *wrong)
{
    const size_t n = 4096;
    float *buf = NULL;
    BT_TEST_OK(ncclMemAlloc((void **)&buf, n * sizeof(float)));
    struct cudaPointerAttributes at;
    CU(cudaPointerGetAttributes(&at, buf));
    BT_TEST_CHECK(at.type == cudaMemoryTypeDevice, "ncclMemAlloc gave memory of type %d",
                  (int)at.type);
    float h[4096];
    for (size_t i = 0; i < n; i++)
        h[i] = (float)input(rank, i);
    CU(cudaMemcpy(buf, h, sizeof(h), cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize()); /* the legacy stream's copy before the collective's stream */
    BT_TEST_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, stream));
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(h, buf, sizeof(h), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        *wrong += h[i] != (float)reduce_ref(ncclFloat32, O_SUM, i, 0);
    BT_TEST_OK(ncclMemFree(buf));
}

/* Collectives of one communicator queued on three streams with nothing ordering them but
 * the library (torch's FSDP2 reduce-scatters on another stream than it all-gathers): a large
 * ring AllReduce, then small one-shot ones and others, round robin over the streams, and no
 * synchronization until the end. The communicator's kernels share connectors: run together
 * or out of order they hang or mix data. */
static void streams_case(int rank, ncclComm_t comm, size_t *wrong)
{
    enum { NOPS = 20, NSTREAMS = 3 };
    static const size_t counts[] = {4 << 20, 1024, 256 << 10, 7, 65536};
    cudaStream_t st[NSTREAMS];
    for (int i = 0; i < NSTREAMS; i++)
        CU(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    float *buf[NOPS];
    float *h = malloc(sizeof(float) * (4 << 20));
    BT_TEST_CHECK(h != NULL, "out of memory");
    for (size_t i = 0; i < (4 << 20); i++)
        h[i] = (float)input(rank, i);
    for (int k = 0; k < NOPS; k++) {
        size_t n = counts[k % 5];
        CU(cudaMalloc((void **)&buf[k], n * sizeof(float)));
        CU(cudaMemcpy(buf[k], h, n * sizeof(float), cudaMemcpyHostToDevice));
    }
    CU(cudaDeviceSynchronize());
    for (int k = 0; k < NOPS; k++)
        BT_TEST_OK(ncclAllReduce(buf[k], buf[k], counts[k % 5], ncclFloat32, ncclSum, comm,
                                 st[k % NSTREAMS]));
    for (int i = 0; i < NSTREAMS; i++)
        CU(cudaStreamSynchronize(st[i]));
    for (int k = 0; k < NOPS; k++) {
        size_t n = counts[k % 5], bad = 0;
        CU(cudaMemcpy(h, buf[k], n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            bad += h[i] != (float)reduce_ref(ncclFloat32, O_SUM, i, 0);
        if (bad)
            fprintf(stderr, "rank %d: streams case op %d (count %zu): %zu wrong\n", rank, k, n,
                    bad);
        *wrong += bad;
        CU(cudaFree(buf[k]));
    }
    for (int i = 0; i < NSTREAMS; i++)
        CU(cudaStreamDestroy(st[i]));
    free(h);
}

/* BATON_TEST_EXPECT=tree or pat: the collectives that algorithm must have run some of
 * (batonCommGetStats), so that a run forcing it proves it ran; says how many either way. */
static void expect_algo(int rank, ncclComm_t comm)
{
    batonCommStats_t st;
    BT_TEST_OK(batonCommGetStats(comm, &st, sizeof(st)));
    const char *want = getenv("BATON_TEST_EXPECT");
    printf("rank %d: %llu collectives: ring %llu, tree %llu, pat %llu, one-shot %llu\n", rank,
           st.colls, st.ring, st.tree, st.pat, st.oneshot);
    if (want && strcmp(want, "tree") == 0)
        BT_TEST_CHECK(st.tree > 0, "rank %d: no collective ran on a tree", rank);
    else if (want && strcmp(want, "pat") == 0)
        BT_TEST_CHECK(st.pat > 0, "rank %d: no collective ran by PAT", rank);
    else if (want)
        BT_TEST_CHECK(0, "BATON_TEST_EXPECT=%s: tree or pat", want);
}

static int rank_main(int rank, int nranks, void *arg)
{
    const ncclUniqueId *id = arg;
    CU(cudaSetDevice(bt_test_gpu_of(rank)));
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    int dev = -2;
    BT_TEST_OK(ncclCommCuDevice(comm, &dev));
    BT_TEST_CHECK(dev == bt_test_gpu_of(rank), "ncclCommCuDevice says %d, not %d", dev,
                  bt_test_gpu_of(rank));
    struct rank_bufs b = {0};
    CU(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    size_t wrong = 0;
    int ncases = 0;
    struct tcase c;
    for (int k = 0; next_case(k, &c); k++, ncases++) {
        prepare(&c, rank, &b);
        issue(&c, rank, comm, &b);
        CU(cudaStreamSynchronize(b.stream));
        wrong += verify(&c, rank, &b);
        finish(&c, comm, &b);
    }
    graph_case(rank, comm, &b, &wrong);
    memalloc_case(rank, comm, b.stream, &wrong);
    streams_case(rank, comm, &wrong);
    ncclResult_t async;
    BT_TEST_OK(ncclCommGetAsyncError(comm, &async));
    BT_TEST_CHECK(async == ncclSuccess, "async error %d", (int)async);
    expect_algo(rank, comm);
    BT_TEST_OK(ncclCommDestroy(comm));
    CU(cudaFree(b.base));
    CU(cudaStreamDestroy(b.stream));
    BT_TEST_CHECK(wrong == 0, "rank %d: %zu wrong elements over %d cases", rank, wrong, ncases);
    printf("rank %d: %d cases (%d processes) ok\n", rank, ncases, NR);
    return 0;
}

/* One process, every GPU: every case as a group over the communicators. windows: each
 * rank's buffer (sized once for the largest case) is a symmetric window, registered in one
 * group, so AllReduces read the peers' inputs directly where the tuner says so. */
static void single_process(int one_gpu, int windows)
{
    ncclComm_t comms[MAX_NR];
    int devs[MAX_NR] = {0};
    BT_TEST_OK(ncclCommInitAll(comms, NR, one_gpu ? devs : NULL));
    struct rank_bufs b[MAX_NR];
    ncclWindow_t win[MAX_NR] = {NULL};
    memset(b, 0, sizeof(b));
    for (int g = 0; g < NR; g++) {
        CU(cudaSetDevice(one_gpu ? 0 : g));
        CU(cudaStreamCreateWithFlags(&b[g].stream, cudaStreamNonBlocking));
        if (windows) { /* the largest case: 64M floats in and out */
            b[g].cap = ((size_t)128 << 20) * 4 + 2 * 256;
            CU(cudaMalloc((void **)&b[g].base, b[g].cap));
        }
    }
    if (windows) {
        BT_TEST_OK(ncclGroupStart());
        for (int g = 0; g < NR; g++)
            BT_TEST_OK(ncclCommWindowRegister(comms[g], b[g].base, b[g].cap, &win[g],
                                              NCCL_WIN_COLL_SYMMETRIC));
        BT_TEST_OK(ncclGroupEnd());
        for (int g = 0; g < NR; g++)
            BT_TEST_CHECK(win[g] != NULL, "rank %d: no window", g);
    }
    size_t wrong = 0;
    int ncases = 0;
    struct tcase c;
    for (int k = 0; next_case(k, &c); k++, ncases++) {
        if (c.count == BIG && (c.dtype != ncclFloat32 && c.dtype != ncclInt8))
            continue; /* the 2-process run covers every dtype at this size */
        for (int g = 0; g < NR; g++) {
            CU(cudaSetDevice(one_gpu ? 0 : g));
            prepare(&c, g, &b[g]);
        }
        if (c.coll != C_SENDRECV)
            BT_TEST_OK(ncclGroupStart());
        for (int g = 0; g < NR; g++) {
            CU(cudaSetDevice(one_gpu ? 0 : g));
            if (c.coll == C_SENDRECV) /* both ranks' sends and receives in one group */
                continue;
            issue(&c, g, comms[g], &b[g]);
        }
        if (c.coll == C_SENDRECV) {
            BT_TEST_OK(ncclGroupStart());
            for (int g = 0; g < NR; g++) {
                CU(cudaSetDevice(one_gpu ? 0 : g));
                BT_TEST_OK(ncclSend(b[g].send, c.count, (ncclDataType_t)c.dtype, (g + 1) % NR,
                                    comms[g], b[g].stream));
                BT_TEST_OK(ncclRecv(b[g].recv, c.count, (ncclDataType_t)c.dtype, (g - 1 + NR) % NR,
                                    comms[g], b[g].stream));
            }
        }
        BT_TEST_OK(ncclGroupEnd());
        for (int g = 0; g < NR; g++) {
            CU(cudaSetDevice(one_gpu ? 0 : g));
            CU(cudaStreamSynchronize(b[g].stream));
            wrong += verify(&c, g, &b[g]);
            finish(&c, comms[g], &b[g]);
        }
    }
    for (int g = 0; g < NR; g++) {
        expect_algo(g, comms[g]);
        BT_TEST_OK(ncclCommWindowDeregister(comms[g], win[g]));
        BT_TEST_OK(ncclCommDestroy(comms[g]));
        CU(cudaSetDevice(one_gpu ? 0 : g));
        CU(cudaFree(b[g].base));
        CU(cudaStreamDestroy(b[g].stream));
    }
    BT_TEST_CHECK(wrong == 0, "one process: %zu wrong elements over %d cases", wrong, ncases);
    printf("one process, %d ranks on %s%s: %d cases ok\n", NR, one_gpu ? "GPU 0" : "as many GPUs",
           windows ? ", buffers in windows" : "", ncases);
}

int main(void)
{
    /* CUDA is not touched before the fork: the children initialize it themselves. The id's
     * rendezvous root runs here, in the parent. */
    const char *g = getenv("BATON_TEST_GPUS");
    if (g)
        NR = atoi(g);
    BT_TEST_CHECK(NR >= 2 && NR <= MAX_NR, "BATON_TEST_GPUS=%s: 2..%d", g, MAX_NR);
    /* BATON_TEST_SAME_GPU=1 (a one-GPU machine): the one-process mode only, every rank on
     * GPU 0 (the library allows it within one process when asked) */
    const char *same = getenv("BATON_TEST_SAME_GPU");
    if (same && atoi(same)) {
        /* any rank count: the library cuts channels so that every rank's blocks fit the GPU */
        const char *w = getenv("BATON_TEST_WINDOWS");
        single_process(1, w && atoi(w));
        printf("test_gpu_colls: ok (one process, every rank on GPU 0)\n");
        return 0;
    }
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    BT_TEST_OK(bt_test_run_ranks(NR, rank_main, &id, 600));
    if (bt_test_mps()) { /* BATON_TEST_MPS=1: the processes on GPU 0 only */
        printf("test_gpu_colls: ok (%d processes on GPU 0, MPS)\n", NR);
        return 0;
    }
    int n = 0;
    CU(cudaGetDeviceCount(&n));
    BT_TEST_CHECK(n >= NR, "this test needs %d GPUs, the process sees %d", NR, n);
    single_process(0, 0);
    single_process(0, 1);
    printf("test_gpu_colls: ok\n");
    return 0;
}
