/*
 * One process drives every rank from one thread, as nccl-tests does with -g N: one
 * communicator per GPU from ncclCommInitAll, each call of an iteration inside one
 * ncclGroupStart/End, every rank's operation on its own stream. The anchor's small-AllReduce
 * figures (docs/ANCHORS.md: all_reduce_perf -g 2) are measured this way; baton-perf (one rank per
 * process) cannot. Built against the public NCCL API only: LD_LIBRARY_PATH picks the library.
 *
 *   baton-one-process [--same-gpu] [--ranks N] [--windows] allreduce|allgather|reducescatter
 *                     MIN_BYTES [MAX_BYTES [ITERS [ROUNDS]]]
 *
 * Ranks: one per visible GPU (--ranks N: the first N). --same-gpu: two ranks (or N) on GPU 0
 * (Baton with TEST_SAME_GPU=1): not a link measurement, the bytes never leave the GPU, so it
 * shows the kernels' own efficiency, which NVLink partly hides (compares builds of the kernels
 * on a one-GPU machine; SAME_GPU_PAD_MB=N first takes N MB of GPU memory, to move where later
 * allocations land).
 *
 * --windows: every rank's buffers are symmetric windows (ncclCommWindowRegister, all ranks in
 * one group; NCCL's symmetric kernels need them, Baton's window AllReduce reads the peers'
 * inputs through them); a library that refuses runs without and says so.
 *
 * Sizes MIN_BYTES .. MAX_BYTES (x2), float sum. Per size, out of place then in place: 5 calls
 * of warm-up, then ROUNDS (default 5) times ITERS (default 20) calls back to back and one
 * wait for all streams; the median round's time per call (us) is printed, nccl-tests' busbw
 * beside (AllReduce 2(n-1)/n, AllGather and ReduceScatter (n-1)/n of the bytes: AllGather's
 * whole output, ReduceScatter's whole input, as nccl-tests counts them), then one
 * checked call per placement: every element of every rank's output compared (#wrong). Last
 * columns: the host's time per call to enqueue (out of place), the median round's, and the
 * fastest round's time per call (out of place).
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl.h"

#define MAX_RANKS 16

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "baton-one-process: %s failed (line %d)\n", #x, __LINE__);             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum coll { ALLREDUCE, ALLGATHER, REDUCESCATTER };
static const char *const coll_names[] = {"allreduce", "allgather", "reducescatter"};

struct bench {
    int n;          /* ranks */
    enum coll coll; /* what is measured */
    ncclComm_t comms[MAX_RANKS];
    int devs[MAX_RANKS];
    cudaStream_t st[MAX_RANKS];
    float *send[MAX_RANKS], *recv[MAX_RANKS];
    float *host; /* staging for fill and check: the largest receive buffer */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ONEPRO_DIAG=1: inputs that name their rank and element (r * 2^20 + i mod 2^20, exact in
 * float for up to 16 ranks), and the first wrong elements printed with what each peer's
 * share of the sum would be: a peer's stale or early line shows as the element it came from. */
static int diag;

/* The input of rank r at element i: small integers, so every float sum is exact. */
static float value(int r, size_t i)
{
    if (diag)
        return (float)((size_t)r * (1u << 20) + i % (1u << 20));
    return (float)((r + 1) * (int)(i % 13 + 1));
}

/* A call's `count` is AllReduce's elements, AllGather's input and ReduceScatter's output
 * (NCCL's count arguments). Elements of rank r's input and of its output: */
static size_t in_elems(const struct bench *b, size_t count)
{
    return b->coll == REDUCESCATTER ? count * (size_t)b->n : count;
}
static size_t out_elems(const struct bench *b, size_t count)
{
    return b->coll == ALLGATHER ? count * (size_t)b->n : count;
}

/* Where rank r's input and output lie: in place, the smaller inside the larger at the rank's
 * own part (AllGather's input, ReduceScatter's output), as NCCL defines it. */
static float *input(const struct bench *b, int r, int in_place, size_t count)
{
    if (!in_place)
        return b->send[r];
    return b->coll == ALLGATHER ? b->recv[r] + (size_t)r * count : b->recv[r];
}
static float *output(const struct bench *b, int r, int in_place, size_t count)
{
    return in_place && b->coll == REDUCESCATTER ? b->recv[r] + (size_t)r * count : b->recv[r];
}

/* One iteration: every rank's call in one group. */
static void iterate(struct bench *b, size_t count, int in_place)
{
    CHECK(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < b->n; r++) {
        float *in = input(b, r, in_place, count), *out = output(b, r, in_place, count);
        if (b->coll == ALLGATHER)
            CHECK(ncclAllGather(in, out, count, ncclFloat32, b->comms[r], b->st[r]) == ncclSuccess);
        else if (b->coll == REDUCESCATTER)
            CHECK(ncclReduceScatter(in, out, count, ncclFloat32, ncclSum, b->comms[r], b->st[r]) ==
                  ncclSuccess);
        else
            CHECK(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, b->comms[r], b->st[r]) ==
                  ncclSuccess);
    }
    CHECK(ncclGroupEnd() == ncclSuccess);
}

static void sync_all(struct bench *b)
{
    for (int r = 0; r < b->n; r++)
        CHECK(cudaStreamSynchronize(b->st[r]) == cudaSuccess);
}

/* Median over `rounds` of the mean time per call of `iters` calls back to back (us); *enq:
 * the median round's host time per call before its wait (the enqueue alone: when it is close
 * to the whole, the host, not the GPUs, bounds the call); *best: the fastest round's time per
 * call (a busy machine only ever adds time, so the best of many rounds is the least moved by
 * it when the host's enqueue bounds the call). */
static double time_call(struct bench *b, size_t count, int in_place, int iters, int rounds,
                        double *enq, double *best)
{
    double t[64], e[64];
    for (int i = 0; i < 5; i++)
        iterate(b, count, in_place);
    sync_all(b);
    for (int k = 0; k < rounds; k++) {
        double t0 = now_s();
        for (int i = 0; i < iters; i++)
            iterate(b, count, in_place);
        e[k] = (now_s() - t0) / iters * 1e6;
        sync_all(b);
        t[k] = (now_s() - t0) / iters * 1e6;
    }
    qsort(t, (size_t)rounds, sizeof(double), cmp_double);
    qsort(e, (size_t)rounds, sizeof(double), cmp_double);
    *enq = e[rounds / 2];
    *best = t[0];
    return t[rounds / 2];
}

/* One call on known inputs; the number of output elements (all ranks) that differ. */
static long check_call(struct bench *b, size_t count, int in_place)
{
    size_t in = in_elems(b, count), out = out_elems(b, count);
    for (int r = 0; r < b->n; r++) {
        CHECK(cudaSetDevice(b->devs[r]) == cudaSuccess);
        CHECK(cudaMemset(b->recv[r], 0, (in > out ? in : out) * sizeof(float)) == cudaSuccess);
        for (size_t i = 0; i < in; i++)
            b->host[i] = value(r, i);
        CHECK(cudaMemcpy(input(b, r, in_place, count), b->host, in * sizeof(float),
                         cudaMemcpyHostToDevice) == cudaSuccess);
    }
    /* The memset and the copies run on the legacy stream, which the ranks' non-blocking
     * streams do not wait for, and a copy from pageable memory may return before its last
     * DMA lands: without this the collective could read the tail of an input before it is
     * there (seen on one H200 at 1-2 MB: the last rank's input missing from the sum near the
     * end of the buffers, in 4 KB-aligned runs). */
    for (int r = 0; r < b->n; r++) {
        CHECK(cudaSetDevice(b->devs[r]) == cudaSuccess);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
    }
    iterate(b, count, in_place);
    sync_all(b);
    long wrong = 0;
    for (int r = 0; r < b->n; r++) {
        int run = 0, nruns = 0;
        size_t run_start = 0;
        CHECK(cudaMemcpy(b->host, output(b, r, in_place, count), out * sizeof(float),
                         cudaMemcpyDeviceToHost) == cudaSuccess);
        /* ReduceScatter's rank r holds part r of the sum */
        size_t base = b->coll == REDUCESCATTER ? (size_t)r * count : 0;
        for (size_t i = 0; i < out; i++) {
            float want = 0;
            if (b->coll == ALLGATHER)
                want = value((int)(i / count), i % count);
            else
                for (int q = 0; q < b->n; q++)
                    want += value(q, base + i);
            int bad = b->host[i] != want;
            /* a run of wrong elements: its first one, and its length when it ends */
            if (bad && diag && (i == 0 || !run) && nruns++ < 12)
                printf("#   rank %d %s wrong from element %zu (byte %zu): got %.0f want %.0f "
                       "(got - own %.0f)\n",
                       r, in_place ? "in place" : "out of place", i, i * sizeof(float),
                       (double)b->host[i], (double)want, (double)(b->host[i] - value(r, i)));
            if (diag && run && !bad && nruns <= 12)
                printf("#     ... to element %zu (%zu elements)\n", i - 1, i - run_start);
            if (bad && !run)
                run_start = i;
            run = bad;
            wrong += bad;
        }
        if (diag && run && nruns <= 12)
            printf("#     ... to the end, element %zu (%zu elements)\n", out - 1, out - run_start);
    }
    return wrong;
}

static void usage(void)
{
    fprintf(stderr, "usage: baton-one-process [--same-gpu] [--ranks N] [--windows] "
                    "allreduce|allgather|reducescatter MIN_BYTES [MAX_BYTES [ITERS [ROUNDS]]]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct bench b;
    int same_gpu = 0, want = 0, windows = 0, a = 1;
    memset(&b, 0, sizeof(b));
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--same-gpu") == 0)
            same_gpu = 1;
        else if (strcmp(argv[a], "--windows") == 0)
            windows = 1;
        else if (strcmp(argv[a], "--ranks") == 0 && a + 1 < argc)
            want = atoi(argv[++a]);
        else
            usage();
    }
    if (argc - a < 2 || argc - a > 5)
        usage();
    int known = 0;
    for (int c = ALLREDUCE; c <= REDUCESCATTER && !known; c++)
        if ((known = strcmp(argv[a], coll_names[c]) == 0))
            b.coll = (enum coll)c;
    if (!known)
        usage();
    size_t min = strtoull(argv[a + 1], NULL, 0);
    size_t max = argc - a > 2 ? strtoull(argv[a + 2], NULL, 0) : min;
    int iters = argc - a > 3 ? atoi(argv[a + 3]) : 20;
    diag = getenv("ONEPRO_DIAG") && atoi(getenv("ONEPRO_DIAG")) > 0;
    int rounds = argc - a > 4 ? atoi(argv[a + 4]) : 5;
    int ngpus = 0;
    CHECK(cudaGetDeviceCount(&ngpus) == cudaSuccess && ngpus > 0);
    b.n = want > 0 ? want : same_gpu ? 2 : ngpus;
    if (b.n < 2 || b.n > MAX_RANKS || (!same_gpu && b.n > ngpus) || iters < 1 || rounds < 1 ||
        rounds > 64 || min < sizeof(float) * (size_t)b.n || max < min) {
        fprintf(stderr,
                "baton-one-process: 2..%d ranks (%d GPUs seen), ITERS >= 1, 1 <= ROUNDS <= "
                "64, %zu <= MIN_BYTES <= MAX_BYTES\n",
                MAX_RANKS, ngpus, sizeof(float) * (size_t)b.n);
        return 2;
    }
    const char *pad = getenv("SAME_GPU_PAD_MB");
    void *padding = NULL;
    if (pad && atoi(pad) > 0)
        CHECK(cudaMalloc(&padding, (size_t)atoi(pad) << 20) == cudaSuccess);
    for (int r = 0; r < b.n; r++)
        b.devs[r] = same_gpu ? 0 : r;
    CHECK(ncclCommInitAll(b.comms, b.n, b.devs) == ncclSuccess);
    /* sizes are total bytes: AllReduce's per-rank buffer, AllGather's whole output,
     * ReduceScatter's whole input */
    size_t in_max = b.coll == ALLGATHER ? max / (size_t)b.n : max;
    for (int r = 0; r < b.n; r++) {
        CHECK(cudaSetDevice(b.devs[r]) == cudaSuccess);
        CHECK(cudaMalloc((void **)&b.send[r], in_max) == cudaSuccess);
        CHECK(cudaMalloc((void **)&b.recv[r], max) == cudaSuccess);
        CHECK(cudaMemset(b.send[r], 0, in_max) == cudaSuccess);
        CHECK(cudaStreamCreateWithFlags(&b.st[r], cudaStreamNonBlocking) == cudaSuccess);
    }
    CHECK((b.host = malloc(max)) != NULL);
    ncclWindow_t wins[MAX_RANKS][2];
    memset(wins, 0, sizeof(wins));
    const char *win_note = "no";
    if (windows) {
        CHECK(ncclGroupStart() == ncclSuccess);
        ncclResult_t r = ncclSuccess;
        for (int k = 0; k < b.n && r == ncclSuccess; k++) {
            r = ncclCommWindowRegister(b.comms[k], b.send[k], in_max, &wins[k][0],
                                       NCCL_WIN_COLL_SYMMETRIC);
            if (r == ncclSuccess)
                r = ncclCommWindowRegister(b.comms[k], b.recv[k], max, &wins[k][1],
                                           NCCL_WIN_COLL_SYMMETRIC);
        }
        ncclResult_t end = ncclGroupEnd();
        win_note = r == ncclSuccess && end == ncclSuccess ? "every buffer in a symmetric window"
                                                          : "windows refused, none";
    }

    int version = 0;
    ncclGetVersion(&version);
    const char *(*vs)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "batonVersionString");
    printf("# %s, one process, %d ranks on %s, NCCL version code %d, library: %s\n",
           coll_names[b.coll], b.n, same_gpu ? "GPU 0" : "one GPU each", version,
           vs ? vs() : "not Baton (no batonVersionString)");
    printf("# median of %d rounds of %d calls; busbw GB/s; #wrong over all ranks' outputs; "
           "windows: %s\n",
           rounds, iters, win_note);
    printf("# %10s %10s %10s %8s %10s %10s %8s %10s %10s\n", "bytes", "oop us", "busbw", "#wrong",
           "ip us", "busbw", "#wrong", "enqueue us", "best oop");
    long total_wrong = 0;
    double factor = b.coll == ALLREDUCE ? 2.0 * (b.n - 1) / b.n : (double)(b.n - 1) / b.n;
    for (size_t bytes = min; bytes <= max; bytes *= 2) {
        size_t count = (b.coll == ALLREDUCE ? bytes : bytes / (size_t)b.n) / sizeof(float);
        double us[2], enq[2], best[2];
        long wrong[2];
        for (int ip = 0; ip < 2; ip++) {
            us[ip] = time_call(&b, count, ip, iters, rounds, &enq[ip], &best[ip]);
            wrong[ip] = check_call(&b, count, ip);
            total_wrong += wrong[ip];
        }
        printf("  %10zu %10.2f %10.2f %8ld %10.2f %10.2f %8ld %10.2f %10.2f\n", bytes, us[0],
               bytes / us[0] / 1e3 * factor, wrong[0], us[1], bytes / us[1] / 1e3 * factor,
               wrong[1], enq[0], best[0]);
        if (bytes > max / 2)
            break;
    }
    printf("# wrong: %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    for (int r = 0; r < b.n; r++) {
        for (int k = 0; k < 2; k++)
            if (wins[r][k])
                ncclCommWindowDeregister(b.comms[r], wins[r][k]);
        ncclCommDestroy(b.comms[r]);
    }
    cudaFree(padding);
    free(b.host);
    return total_wrong ? 1 : 0;
}
