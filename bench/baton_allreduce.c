/*
 * Baton's side of the host-memory AllReduce comparison: the measurement of
 * bench/anchors/mpi_allreduce.c, through the public NCCL API, on host memory.
 *
 *   build/bin/baton-run -n 2 build/bin/baton-allreduce-bench [maxbytes]
 *
 * Rank and size come from BATON_RANK / BATON_NRANKS, which `baton-run -n N` sets together
 * with BATON_COMM_ID (the rendezvous address), so every rank passes a zeroed ncclUniqueId to
 * ncclCommInitRank. BATON_DEVICE defaults to "cpu" here: buffers are malloc'ed host memory.
 *
 * Same as the MPI anchor, line for line: float sum, sizes 4 KB x4 .. maxbytes (default
 * 64 MB), 5 warm-up calls, then the result is checked (every element == n(n+1)/2), then 200
 * timed calls (20 above 1 MB), each preceded by a barrier; the median of the per-call times
 * is printed as "bytes median_us busbw_GBps ok", busbw = bytes / time * 2(n-1)/n.
 *
 * The barrier is a 1-element float ncclAllReduce. It plays MPI_Barrier's role in the anchor:
 * it lines the ranks up before each timed call, so a call's time does not include waiting
 * for a late peer. (It is an AllReduce, not a true barrier, but it cannot complete on any
 * rank before every rank has entered it, which is all the measurement needs.)
 *
 *   build/bin/baton-allreduce-bench --local N [maxbytes]
 *
 * N ranks as communicators of this one process (ncclCommInitAll), every call (barrier or
 * timed) one group over all of them issued by this thread, as nccl-tests' -g N does: what
 * one thread's lanes cost, and what the host executor's helper threads take off them
 * (HOST_THREADS).
 *
 * Exit status: 0 when every check passed, 1 otherwise (or when setup fails).
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCCL_CHECK(call)                                                                           \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "baton-allreduce-bench: rank %d: %s failed: %s (%d)\n", rank, #call,   \
                    ncclGetErrorString(r_), (int)r_);                                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The MPI anchor's MPI_Wtime, in seconds, from a monotonic clock. */
static double wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int env_int(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long x;

    if (v == NULL || *v == '\0') {
        fprintf(stderr, "baton-allreduce-bench: %s is not set (run under baton-run -n N)\n", name);
        exit(1);
    }
    x = strtol(v, &end, 10);
    if (*end != '\0' || x < 0 || x > (1 << 24)) {
        fprintf(stderr, "baton-allreduce-bench: %s=%s is not a rank count/index\n", name, v);
        exit(1);
    }
    return (int)x;
}

#define MAX_LOCAL 16

/* One AllReduce of n floats on each of the ncomm communicators (a group when several). */
static void allreduce(ncclComm_t *comm, int ncomm, float **x, float **y, size_t n, int rank)
{
    if (ncomm > 1)
        NCCL_CHECK(ncclGroupStart());
    for (int c = 0; c < ncomm; c++)
        NCCL_CHECK(ncclAllReduce(x[c], y[c], n, ncclFloat, ncclSum, comm[c], NULL));
    if (ncomm > 1)
        NCCL_CHECK(ncclGroupEnd());
}

int main(int argc, char **argv)
{
    int local = argc > 2 && strcmp(argv[1], "--local") == 0, ncomm = 1, rank = 0, world;
    if (local) {
        ncomm = world = atoi(argv[2]);
        argv += 2;
        argc -= 2;
        if (world < 1 || world > MAX_LOCAL) {
            fprintf(stderr, "baton-allreduce-bench: --local takes 1..%d ranks\n", MAX_LOCAL);
            return 1;
        }
    } else {
        rank = env_int("BATON_RANK");
        world = env_int("BATON_NRANKS");
    }
    size_t maxb = argc > 1 ? strtoull(argv[1], 0, 0) : (64u << 20);
    ncclComm_t comm[MAX_LOCAL];
    float *x[MAX_LOCAL], *y[MAX_LOCAL], bar_in[MAX_LOCAL], bar_out[MAX_LOCAL];
    float *bi[MAX_LOCAL], *bo[MAX_LOCAL];
    int all_ok = 1;

    if (rank >= world) {
        fprintf(stderr, "baton-allreduce-bench: BATON_RANK %d >= BATON_NRANKS %d\n", rank, world);
        return 1;
    }
    setenv("BATON_DEVICE", "cpu", 0); /* host memory; an explicit setting wins */
    if (local) {
        NCCL_CHECK(ncclCommInitAll(comm, world, NULL));
    } else {
        ncclUniqueId id;
        memset(&id, 0, sizeof(id)); /* BATON_COMM_ID carries the rendezvous */
        NCCL_CHECK(ncclCommInitRank(&comm[0], world, id, rank));
    }
    for (int c = 0; c < ncomm; c++) {
        x[c] = malloc(maxb);
        y[c] = malloc(maxb);
        if (x[c] == NULL || y[c] == NULL) {
            fprintf(stderr, "baton-allreduce-bench: out of memory for 2 x %zu bytes\n", maxb);
            return 1;
        }
        bar_in[c] = 1.0f;
        bi[c] = &bar_in[c];
        bo[c] = &bar_out[c];
    }
    if (rank == 0)
        printf("%12s %12s %11s ok\n", "bytes", "median_us", "busbw_GBps");
    for (size_t b = 4096; b <= maxb; b *= 4) {
        size_t n = b / 4;
        int iters = b <= (1 << 20) ? 200 : 20, ok = 1;
        double t[200], med;

        for (int c = 0; c < ncomm; c++)
            for (size_t i = 0; i < n; i++)
                x[c][i] = rank + c + 1;
        for (int w = 0; w < 5; w++)
            allreduce(comm, ncomm, x, y, n, rank);
        for (int c = 0; c < ncomm; c++) {
            for (size_t i = 0; i < n; i++) {
                if (y[c][i] != world * (world + 1) / 2.0f) {
                    ok = 0;
                    break;
                }
            }
        }
        all_ok &= ok;
        for (int i = 0; i < iters; i++) {
            double t0;

            /* barrier: lines the ranks up before the timed call, as MPI_Barrier does */
            allreduce(comm, ncomm, bi, bo, 1, rank);
            t0 = wtime();
            allreduce(comm, ncomm, x, y, n, rank);
            t[i] = (wtime() - t0) * 1e6;
        }
        qsort(t, iters, sizeof(double), cmp);
        med = t[iters / 2];
        if (rank == 0)
            printf("%12zu %12.2f %11.2f %s\n", b, med, b / med / 1e3 * 2.0 * (world - 1) / world,
                   ok ? "True" : "False");
        fflush(stdout);
    }
    for (int c = 0; c < ncomm; c++) {
        NCCL_CHECK(ncclCommDestroy(comm[c]));
        free(x[c]);
        free(y[c]);
    }
    return all_ok ? 0 : 1;
}
