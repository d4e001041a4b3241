/*
 * 10^4 AllReduces of random sizes, dtypes, ops and alignments on two GPUs (two processes),
 * every element checked against a host reference: the tuner's one-shot LL, LL ring and
 * Simple paths and their channel splits all get odd shapes. Sizes are log-uniform from 1
 * element to 256 K (most are small, where the paths change most often); buffers start 0..7
 * elements past a 512-byte boundary; half the calls are in place.
 *
 * Float bound: with two ranks every element is one fold of two inputs, done in float (half
 * and bfloat16 fold in float and round once), so the result must equal the reference
 * rounded once from the exact sum: bit for bit. Integers wrap and are exact.
 * More ranks (BATON_TEST_GPUS=N, up to 8) fold in an order that depends on the algorithm
 * (ring order, rank order, the two-shot's), so their float inputs are chosen for every partial
 * result to be exact in the dtype: halves for sums, powers of two for products. Then any
 * order gives the reference's bits, which folds the ranks' inputs in rank order.
 * BT_RANDOM_CASES overrides the count (default 10000), BT_RANDOM_SEED the seed.
 * BATON_TEST_SAME_GPU=1: every rank in one process on GPU 0 (a one-GPU machine).
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define MAX_NR 8
static int NR = 2;
#define MAX_COUNT (256u << 10) /* elements: up to 2 MB, past every path's threshold */

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        BT_TEST_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

/* xorshift64*: the same sequence in both ranks (the case) and a per-rank one (the data) */
static uint64_t next64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

struct rcase {
    ncclDataType_t t;
    ncclRedOp_t op;
    size_t count, off;
    int inplace;
};

static const ncclDataType_t dtypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,
                                        ncclInt64,   ncclUint64,  ncclFloat16, ncclFloat32,
                                        ncclFloat64, ncclBfloat16};

static size_t esize(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    default:
        return 8;
    }
}

static struct rcase pick(uint64_t *s)
{
    struct rcase c;
    c.t = dtypes[next64(s) % (sizeof(dtypes) / sizeof(dtypes[0]))];
    static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin};
    c.op = ops[next64(s) % 4];
    double l = (double)(next64(s) % 1000000) / 1e6 * log2((double)MAX_COUNT);
    c.count = (size_t)exp2(l);
    if (c.count < 1)
        c.count = 1;
    c.off = next64(s) % 8;
    c.inplace = (int)(next64(s) % 2);
    return c;
}

static float bf16_to_f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f_to_bf16(float f) /* round to nearest even (inputs are finite) */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static float h_to_f(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f_to_h(float f) /* exact for the values used: small integers and halves */
{
    uint16_t s = signbit(f) ? 0x8000 : 0; /* -0 too: 0 x -1.5 is -0 */
    f = fabsf(f);
    if (f == 0)
        return s;
    int e;
    float m = frexpf(f, &e); /* f = m * 2^e, m in [0.5, 1) */
    int he = e + 14;
    uint16_t mant = (uint16_t)(m * 2048.0f) & 1023;
    return (uint16_t)(s | (he << 10) | mant);
}

/* Element i of rank r's input, as the dtype's bits (small values: products stay exact). */
static void input(const struct rcase *c, int r, size_t i, void *dst)
{
    uint64_t s = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(r + 1) * 0xC2B2AE3D27D4EB4Full;
    int v = (int)(next64(&s) % 7) - 3; /* -3..3 */
    double f = c->t == ncclFloat32 || c->t == ncclFloat64 ? v * 0.1 : v * 0.5;
    if (NR > 2) { /* every partial result exact: halves for sums, +-2^k for products */
        static const double pow2[] = {-2, -1, -0.5, 0.5, 1, 2, 1};
        f = c->op == ncclProd ? pow2[v + 3] : v * 0.5;
    }
    switch (c->t) {
    case ncclInt8:
    case ncclUint8: {
        int8_t x = (int8_t)v;
        memcpy(dst, &x, 1);
        break;
    }
    case ncclInt32:
    case ncclUint32: {
        int32_t x = v * 1000;
        memcpy(dst, &x, 4);
        break;
    }
    case ncclInt64:
    case ncclUint64: {
        int64_t x = (int64_t)v * 100000;
        memcpy(dst, &x, 8);
        break;
    }
    case ncclFloat16: {
        uint16_t x = f_to_h((float)f);
        memcpy(dst, &x, 2);
        break;
    }
    case ncclBfloat16: {
        uint16_t x = f_to_bf16((float)f);
        memcpy(dst, &x, 2);
        break;
    }
    case ncclFloat32: {
        float x = (float)f;
        memcpy(dst, &x, 4);
        break;
    }
    default: {
        double x = f;
        memcpy(dst, &x, 8);
        break;
    }
    }
}

/* fold(a, b) as the library's reference: the dtype's arithmetic, rounded once. */
#define FOLD(a, b, op)                                                                             \
    ((op) == ncclSum    ? (a) + (b)                                                                \
     : (op) == ncclProd ? (a) * (b)                                                                \
     : (op) == ncclMax  ? ((a) > (b) ? (a) : (b))                                                  \
                        : ((a) < (b) ? (a) : (b)))

static void reference(const struct rcase *c, const void *a, const void *b, void *out)
{
    switch (c->t) {
    case ncclInt8: {
        int8_t x, y;
        memcpy(&x, a, 1);
        memcpy(&y, b, 1);
        int8_t z = c->op == ncclSum    ? (int8_t)(uint8_t)((uint8_t)x + (uint8_t)y)
                   : c->op == ncclProd ? (int8_t)(uint8_t)((uint8_t)x * (uint8_t)y)
                                       : FOLD(x, y, c->op);
        memcpy(out, &z, 1);
        break;
    }
    case ncclUint8: {
        uint8_t x, y;
        memcpy(&x, a, 1);
        memcpy(&y, b, 1);
        uint8_t z = (uint8_t)FOLD(x, y, c->op);
        memcpy(out, &z, 1);
        break;
    }
    case ncclInt32: {
        int32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        int32_t z = c->op == ncclSum    ? (int32_t)((uint32_t)x + (uint32_t)y)
                    : c->op == ncclProd ? (int32_t)((uint32_t)x * (uint32_t)y)
                                        : FOLD(x, y, c->op);
        memcpy(out, &z, 4);
        break;
    }
    case ncclUint32: {
        uint32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        uint32_t z = FOLD(x, y, c->op);
        memcpy(out, &z, 4);
        break;
    }
    case ncclInt64: {
        int64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        int64_t z = c->op == ncclSum    ? (int64_t)((uint64_t)x + (uint64_t)y)
                    : c->op == ncclProd ? (int64_t)((uint64_t)x * (uint64_t)y)
                                        : FOLD(x, y, c->op);
        memcpy(out, &z, 8);
        break;
    }
    case ncclUint64: {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        uint64_t z = FOLD(x, y, c->op);
        memcpy(out, &z, 8);
        break;
    }
    case ncclFloat16:
    case ncclBfloat16: {
        uint16_t x, y;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        int bf = c->t == ncclBfloat16;
        float fx = bf ? bf16_to_f(x) : h_to_f(x), fy = bf ? bf16_to_f(y) : h_to_f(y);
        float fz = FOLD(fx, fy, c->op);
        uint16_t z = bf ? f_to_bf16(fz) : f_to_h(fz);
        memcpy(out, &z, 2);
        break;
    }
    case ncclFloat32: {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        float z = FOLD(x, y, c->op);
        memcpy(out, &z, 4);
        break;
    }
    default: {
        double x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        double z = FOLD(x, y, c->op);
        memcpy(out, &z, 8);
        break;
    }
    }
}

/* One rank's side of the test: its communicator, stream, buffers and tally. */
struct rank_state {
    int rank;
    ncclComm_t comm;
    cudaStream_t stream;
    char *dsend, *drecv, *hin, *hout, *want, *hother;
    size_t wrong, bytes_total;
};

static const size_t cap = (size_t)MAX_COUNT * 8 + 4096;

static void rank_open(struct rank_state *st, int rank)
{
    memset(st, 0, sizeof(*st));
    st->rank = rank;
    CU(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    CU(cudaMalloc((void **)&st->dsend, cap));
    CU(cudaMalloc((void **)&st->drecv, cap));
    st->hin = malloc(cap);
    st->hout = malloc(cap);
    st->want = malloc(cap);
    st->hother = malloc(8);
    BT_TEST_CHECK(st->hin && st->hout && st->want && st->hother, "out of memory");
}

/* Case k's inputs into place; returns the send and receive pointers. */
static void case_stage(struct rank_state *st, const struct rcase *c, char **send, char **recv)
{
    size_t es = esize(c->t), n = c->count;
    for (size_t i = 0; i < n; i++) { /* own input, and the reference: the ranks in order */
        input(c, st->rank, i, st->hin + i * es);
        char *want = st->want + i * es;
        input(c, 0, i, want);
        for (int r = 1; r < NR; r++) {
            input(c, r, i, st->hother);
            reference(c, want, st->hother, want);
        }
    }
    *recv = st->drecv + c->off * es;
    *send = c->inplace ? *recv : st->dsend + c->off * es;
    CU(cudaMemcpy(*send, st->hin, n * es, cudaMemcpyHostToDevice));
    if (!c->inplace)
        CU(cudaMemset(*recv, 0xEE, n * es));
    CU(cudaDeviceSynchronize()); /* the legacy stream's copy before the collective's */
}

/* After case k's AllReduce: every element against the reference. */
static void case_check(struct rank_state *st, const struct rcase *c, const char *recv, long k)
{
    size_t es = esize(c->t), n = c->count, bad = 0;
    CU(cudaStreamSynchronize(st->stream));
    CU(cudaMemcpy(st->hout, recv, n * es, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        if (memcmp(st->want + i * es, st->hout + i * es, es) != 0 && bad++ < 2)
            fprintf(
                stderr, "rank %d case %ld: dtype %d op %d count %zu off %zu%s: element %zu wrong\n",
                st->rank, k, (int)c->t, (int)c->op, n, c->off, c->inplace ? " in place" : "", i);
    }
    st->wrong += bad;
    st->bytes_total += n * es;
}

static int rank_close(struct rank_state *st, long ncases)
{
    ncclResult_t async;
    BT_TEST_OK(ncclCommGetAsyncError(st->comm, &async));
    BT_TEST_CHECK(async == ncclSuccess, "async error %d", (int)async);
    BT_TEST_OK(ncclCommDestroy(st->comm));
    CU(cudaFree(st->dsend));
    CU(cudaFree(st->drecv));
    CU(cudaStreamDestroy(st->stream));
    free(st->hin);
    free(st->hout);
    free(st->want);
    free(st->hother);
    BT_TEST_CHECK(st->wrong == 0, "rank %d: %zu wrong elements over %ld AllReduces", st->rank,
                  st->wrong, ncases);
    printf("rank %d: %ld random AllReduces (%zu bytes), every element exact\n", st->rank, ncases,
           st->bytes_total);
    return 0;
}

static long cases_asked(uint64_t *seed)
{
    const char *e = getenv("BT_RANDOM_CASES"), *sd = getenv("BT_RANDOM_SEED");
    *seed = sd ? strtoull(sd, NULL, 0) : 0x5eedBA70u;
    return e ? atol(e) : 10000;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const ncclUniqueId *id = arg;
    CU(cudaSetDevice(bt_test_gpu_of(rank))); /* GPU 0 for all under BATON_TEST_MPS=1 */
    struct rank_state st;
    rank_open(&st, rank);
    BT_TEST_OK(ncclCommInitRank(&st.comm, nranks, *id, rank));
    uint64_t s;
    long ncases = cases_asked(&s);
    for (long k = 0; k < ncases; k++) {
        struct rcase c = pick(&s);
        char *send, *recv;
        case_stage(&st, &c, &send, &recv);
        BT_TEST_OK(ncclAllReduce(send, recv, c.count, c.t, c.op, st.comm, st.stream));
        case_check(&st, &c, recv, k);
    }
    return rank_close(&st, ncases);
}

/* BATON_TEST_SAME_GPU=1 (a one-GPU machine): every rank in this process on GPU 0, one thread,
 * each case's AllReduces in one group (processes on one GPU: BATON_TEST_MPS=1, under MPS). */
static int same_gpu_main(const ncclUniqueId *id)
{
    struct rank_state st[MAX_NR];
    CU(cudaSetDevice(0));
    for (int r = 0; r < NR; r++)
        rank_open(&st[r], r);
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < NR; r++)
        BT_TEST_OK(ncclCommInitRank(&st[r].comm, NR, *id, r));
    BT_TEST_OK(ncclGroupEnd());
    uint64_t s;
    long ncases = cases_asked(&s);
    for (long k = 0; k < ncases; k++) {
        struct rcase c = pick(&s);
        char *send[MAX_NR], *recv[MAX_NR];
        for (int r = 0; r < NR; r++)
            case_stage(&st[r], &c, &send[r], &recv[r]);
        BT_TEST_OK(ncclGroupStart());
        for (int r = 0; r < NR; r++)
            BT_TEST_OK(
                ncclAllReduce(send[r], recv[r], c.count, c.t, c.op, st[r].comm, st[r].stream));
        BT_TEST_OK(ncclGroupEnd());
        for (int r = 0; r < NR; r++)
            case_check(&st[r], &c, recv[r], k);
    }
    for (int r = 0; r < NR; r++)
        rank_close(&st[r], ncases);
    return 0;
}

int main(void)
{
    const char *g = getenv("BATON_TEST_GPUS");
    if (g)
        NR = atoi(g);
    BT_TEST_CHECK(NR >= 2 && NR <= MAX_NR, "BATON_TEST_GPUS=%s: 2..%d", g, MAX_NR);
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    const char *same = getenv("BATON_TEST_SAME_GPU");
    if (same && atoi(same) == 1)
        BT_TEST_OK(same_gpu_main(&id));
    else
        BT_TEST_OK(bt_test_run_ranks(NR, rank_main, &id, 850));
    printf("test_gpu_random: ok\n");
    return 0;
}
