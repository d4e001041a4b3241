/*
 * What a GPU communicator costs in memory, stage by stage, for the library LD_LIBRARY_PATH
 * picks (Baton or NVIDIA's NCCL): one rank alone, or N processes started by baton-run (every
 * process on the GPU its local rank picks; N on one GPU: under CUDA MPS).
 *
 *   baton-gpu-memory [--stack BYTES] [--large-first]
 *
 * Stages, every process in step (a file barrier between them, so the device-wide figure of
 * each stage holds every process's part of it and nothing of the next):
 *   context    cudaFree(0) and the probe's own buffers (2 x 64 MB, counted apart)
 *   init       ncclCommInitRank
 *   allreduce  one AllReduce of 1024 floats (the first kernel: module code, local memory)
 *   colls      AllGather, ReduceScatter, Broadcast, Reduce, a Send/Recv ring (1 MB)
 *   large      AllReduce of 64 MB (buffers the large sizes need)
 *   destroy    ncclCommDestroy (what the library gives back; local memory and modules stay)
 * Rank 0 prints per stage the device memory in use (cudaMemGetInfo: every process's), the
 * change from the stage before, that change per process, and its own host RSS; then the
 * library's own count (ncclCommMemStats, where the library has it) and the stack limit.
 *
 * --stack BYTES: cudaDeviceSetLimit(cudaLimitStackSize, BYTES) before the context stage is
 * measured, so the local memory a kernel's stack frame needs is reserved up front: the
 * "allreduce" stage without it, less the same stage with it, is the reservation the library's
 * kernels caused (their stack frame x the threads the GPU can hold).
 *
 * --large-first: the large stage right after init, so that it holds what a ring collective
 * needs alone (Baton connects its send/recv FIFOs with a peer only when an operation first
 * needs them: a send or receive, or the one-shot AllReduce of the next stage, with every peer).
 */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

#define MB (1024.0 * 1024.0)
#define BIG (64u << 20)

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "baton-gpu-memory: %s failed (line %d)\n", #x, __LINE__);              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define NCCLCHECK(x)                                                                               \
    do {                                                                                           \
        ncclResult_t r_ = (x);                                                                     \
        if (r_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "baton-gpu-memory: %s: %s (line %d)\n", #x, ncclGetErrorString(r_),    \
                    __LINE__);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static long long device_used(void)
{
    size_t f = 0, t = 0;
    CHECK(cudaMemGetInfo(&f, &t) == cudaSuccess);
    return (long long)(t - f);
}

static long long host_rss(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    int n = fscanf(f, "%ld %ld", &pages, &res);
    fclose(f);
    return n == 2 ? (long long)res * sysconf(_SC_PAGESIZE) : -1;
}

/* The processes meet through files in a directory named after the meeting address (one
 * run's processes share it): "<tag>.<rank>" says rank has arrived at tag. */
static void arrive(const char *dir, const char *tag, int rank)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.%d", dir, tag, rank);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fclose(f);
}

/* Until every rank has arrived at tag. */
static void wait_all(const char *dir, const char *tag, int nranks)
{
    char path[512];
    for (int r = 0, waited_ms = 0; r < nranks; waited_ms++) {
        snprintf(path, sizeof(path), "%s/%s.%d", dir, tag, r);
        if (access(path, F_OK) == 0) {
            r++;
            continue;
        }
        CHECK(waited_ms < 120000);
        usleep(1000);
    }
}

/* Every process arrives at stage `k` before any goes on. */
static void file_barrier(const char *dir, int k, int rank, int nranks)
{
    if (nranks == 1)
        return;
    char tag[16];
    snprintf(tag, sizeof(tag), "%d", k);
    arrive(dir, tag, rank);
    wait_all(dir, tag, nranks);
}

struct stage {
    const char *name;
    long long used, rss;
};

int main(int argc, char **argv)
{
    long long stack = 0;
    int large_first = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--stack") == 0 && i + 1 < argc) {
            stack = atoll(argv[++i]);
        } else if (strcmp(argv[i], "--large-first") == 0) {
            large_first = 1;
        } else {
            fprintf(stderr, "usage: baton-gpu-memory [--stack BYTES] [--large-first] (ranks from "
                            "baton-run)\n");
            return 2;
        }
    }
    int rank = env_int("BATON_RANK", 0), nranks = env_int("BATON_NRANKS", 1);
    const char *meet = getenv("BATON_COMM_ID");
    if (nranks > 1) {
        CHECK(meet != NULL && *meet);
        setenv("NCCL_COMM_ID", meet, 0);
    }
    char dir[256];
    snprintf(dir, sizeof(dir), "/tmp/baton-gpu-memory-");
    for (const char *p = meet ? meet : "solo"; *p && strlen(dir) < sizeof(dir) - 2; p++) {
        char c = (*p == '/' || *p == ':' || *p == '[' || *p == ']') ? '_' : *p;
        strncat(dir, &c, 1);
    }
    if (mkdir(dir, 0700) != 0)
        CHECK(errno == EEXIST);

    struct stage st[8];
    int ns = 0;
    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0);
    CHECK(cudaSetDevice(env_int("BATON_LOCAL_RANK", 0) % ndev) == cudaSuccess);
    CHECK(cudaFree(0) == cudaSuccess);
    if (stack > 0)
        CHECK(cudaDeviceSetLimit(cudaLimitStackSize, (size_t)stack) == cudaSuccess);
    float *a = NULL, *b = NULL;
    CHECK(cudaMalloc((void **)&a, BIG) == cudaSuccess &&
          cudaMalloc((void **)&b, BIG) == cudaSuccess);
    CHECK(cudaMemset(a, 0, BIG) == cudaSuccess && cudaMemset(b, 0, BIG) == cudaSuccess);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);

#define MARK(label)                                                                                \
    do {                                                                                           \
        CHECK(cudaStreamSynchronize(s) == cudaSuccess);                                            \
        file_barrier(dir, 2 * ns, rank, nranks);                                                   \
        st[ns].name = (label);                                                                     \
        st[ns].used = device_used();                                                               \
        st[ns].rss = host_rss();                                                                   \
        ns++;                                                                                      \
        file_barrier(dir, 2 * ns - 1, rank, nranks);                                               \
    } while (0)

    MARK("context");
    /* Baton reads the meeting address itself from a zeroed id (its ncclGetUniqueId would
     * start a root); NVIDIA's NCCL builds the id from NCCL_COMM_ID on every rank. */
    int is_baton = dlsym(RTLD_DEFAULT, "batonCommInitRankHost") != NULL;
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (nranks == 1 || !is_baton)
        NCCLCHECK(ncclGetUniqueId(&id));
    ncclComm_t comm;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double init_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
    MARK("init");
    if (large_first) {
        NCCLCHECK(ncclAllReduce(a, b, BIG / sizeof(float), ncclFloat, ncclSum, comm, s));
        MARK("large");
    }
    NCCLCHECK(ncclAllReduce(a, b, 1024, ncclFloat, ncclSum, comm, s));
    MARK("allreduce");
    size_t n = (1u << 20) / sizeof(float) / nranks; /* 1 MB in all */
    NCCLCHECK(ncclAllGather(a, b, n, ncclFloat, comm, s));
    NCCLCHECK(ncclReduceScatter(a, b, n, ncclFloat, ncclSum, comm, s));
    NCCLCHECK(ncclBroadcast(a, b, n, ncclFloat, 0, comm, s));
    NCCLCHECK(ncclReduce(a, b, n, ncclFloat, ncclSum, 0, comm, s));
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclSend(a, n, ncclFloat, (rank + 1) % nranks, comm, s));
    NCCLCHECK(ncclRecv(b, n, ncclFloat, (rank + nranks - 1) % nranks, comm, s));
    NCCLCHECK(ncclGroupEnd());
    MARK("colls");
    if (!large_first) {
        NCCLCHECK(ncclAllReduce(a, b, BIG / sizeof(float), ncclFloat, ncclSum, comm, s));
        MARK("large");
    }
    uint64_t own = 0;
    typedef ncclResult_t (*stats_fn)(ncclComm_t, int, uint64_t *);
    stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "ncclCommMemStats");
    int have_own = stats && stats(comm, 3 /* ncclStatGpuMemTotal */, &own) == ncclSuccess;
    size_t stack_now = 0;
    CHECK(cudaDeviceGetLimit(&stack_now, cudaLimitStackSize) == cudaSuccess);
    NCCLCHECK(ncclCommDestroy(comm));
    MARK("destroy");

    if (rank == 0) {
        int v = 0;
        ncclGetVersion(&v);
        printf("# baton-gpu-memory: %s %d, %d process(es), stack limit %zu bytes%s, "
               "init %.1f ms (rank 0)\n",
               is_baton ? "Baton" : "NCCL", v, nranks, stack_now,
               stack > 0 ? " (set up front)" : "", init_ms);
        printf("# the context stage holds the probe's 2 x %u MB of buffers per process\n",
               BIG >> 20);
        printf("# %-10s %12s %12s %14s %12s\n", "stage", "device MB", "change MB", "per process MB",
               "rank0 RSS MB");
        for (int i = 0; i < ns; i++) {
            double d = i ? (st[i].used - st[i - 1].used) / MB : 0;
            printf("  %-10s %12.1f %+12.1f %+14.1f %12.1f\n", st[i].name, st[i].used / MB, d,
                   d / nranks, st[i].rss / MB);
        }
        if (have_own)
            printf("# the library's own count (ncclCommMemStats GpuMemTotal, rank 0): %.2f MB\n",
                   own / MB);
    }
    /* Barrier files go only when nobody can still be looking for them: every rank says it
     * is past the last barrier, and rank 0, having seen them all, takes everything away. */
    arrive(dir, "done", rank);
    if (rank == 0) {
        wait_all(dir, "done", nranks);
        char path[512];
        for (int r = 0; r < nranks; r++) {
            for (int k = 0; k < 2 * ns; k++) {
                snprintf(path, sizeof(path), "%s/%d.%d", dir, k, r);
                unlink(path);
            }
            snprintf(path, sizeof(path), "%s/done.%d", dir, r);
            unlink(path);
        }
        rmdir(dir);
    }
    cudaFree(a);
    cudaFree(b);
    return 0;
}
