/*
 * kill -9 of one rank in the middle of a stream of one-shot AllReduces on GPUs (2 processes,
 * BATON_TIMEOUT=3): the survivor's kernel, spinning on LL flags the dead rank will never
 * write, gives up at the deadline and reports through the host-mapped error word;
 * ncclCommGetAsyncError returns ncclRemoteError within TIMEOUT + 1 s of the kill, and
 * ncclCommAbort plus exit finish cleanly. Rank 1 kills itself right after queueing a
 * collective (its kernel in flight), at a random iteration; the kill time travels in
 * shared memory. Repeated for three sizes (one-shot LL, one-shot Simple, the Simple ring).
 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

#define NR 2
#define TIMEOUT_S 3

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct shared {
    volatile double kill_time;
    volatile double detect_time;
};

/* Exit codes: 0 the survivor saw the error in time; others name what went wrong. */
static void rank_main(int rank, const ncclUniqueId *id, size_t count, int kill_at,
                      struct shared *sh, int ready_fd)
{
    if (cudaSetDevice(rank) != cudaSuccess)
        _exit(20);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, NR, *id, rank) != ncclSuccess)
        _exit(21);
    float *buf;
    cudaStream_t stream;
    if (cudaMalloc((void **)&buf, count * sizeof(float)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        _exit(22);
    cudaMemset(buf, 0, count * sizeof(float));
    cudaDeviceSynchronize();
    char c = 1;
    if (write(ready_fd, &c, 1) != 1)
        _exit(23);
    for (int it = 0; it < 1000000; it++) {
        if (ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream) != ncclSuccess)
            break; /* a later call may refuse once the error is known */
        if (rank == 1 && it == kill_at) {
            sh->kill_time = now_s();
            kill(getpid(), SIGKILL);
        }
        ncclResult_t async = ncclSuccess;
        cudaError_t q;
        while ((q = cudaStreamQuery(stream)) == cudaErrorNotReady && async == ncclSuccess)
            ncclCommGetAsyncError(comm, &async);
        ncclCommGetAsyncError(comm, &async);
        if (q != cudaSuccess && q != cudaErrorNotReady) { /* the GPU itself failed */
            sh->detect_time = now_s();
            fprintf(stderr, "rank %d: the stream failed: %s\n", rank, cudaGetErrorString(q));
            break;
        }
        if (async != ncclSuccess) {
            sh->detect_time = now_s();
            if (async != ncclRemoteError) {
                fprintf(stderr, "rank %d: async error %d, expected ncclRemoteError\n", rank,
                        (int)async);
                _exit(24);
            }
            break;
        }
    }
    if (sh->detect_time == 0)
        _exit(25);
    ncclCommAbort(comm);
    _exit(0);
}

static void run_case(size_t count, unsigned seed)
{
    struct shared *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BT_TEST_CHECK(sh != MAP_FAILED, "mmap");
    sh->kill_time = sh->detect_time = 0;
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    int kill_at = 20 + (int)(seed % 200);
    int fds[2];
    BT_TEST_CHECK(pipe(fds) == 0, "pipe");
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        pids[r] = fork();
        BT_TEST_CHECK(pids[r] >= 0, "fork");
        if (pids[r] == 0) {
            close(fds[0]);
            rank_main(r, &id, count, kill_at, sh, fds[1]);
        }
    }
    close(fds[1]);
    char c;
    for (int r = 0; r < NR; r++)
        BT_TEST_CHECK(read(fds[0], &c, 1) == 1, "a rank failed before it was ready");
    close(fds[0]);
    int status;
    BT_TEST_CHECK(waitpid(pids[1], &status, 0) == pids[1], "waitpid rank 1");
    BT_TEST_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "rank 1 should have died by SIGKILL (status 0x%x)", status);
    double reaped = now_s();
    BT_TEST_CHECK(waitpid(pids[0], &status, 0) == pids[0], "waitpid rank 0");
    double gone = now_s();
    BT_TEST_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "survivor rank 0 ended with status 0x%x", status);
    double detect = sh->detect_time - sh->kill_time;
    printf("count %zu, killed at iteration %d: error after %.2f s (TIMEOUT %d s), survivor gone "
           "%.2f s after the kill was reaped\n",
           count, kill_at, detect, TIMEOUT_S, gone - reaped);
    BT_TEST_CHECK(detect <= TIMEOUT_S + 1.0, "the survivor saw the error %.2f s after the kill",
                  detect);
    munmap(sh, sizeof(*sh));
}

int main(void)
{
    setenv("BATON_TIMEOUT", "3", 1);
    unsigned seed = (unsigned)time(NULL);
    /* one-shot LL, one-shot Simple, Simple ring (the GPU tuner's defaults) */
    size_t counts[] = {1024, 192 * 1024, 4 * 1024 * 1024};
    for (int i = 0; i < 3; i++)
        run_case(counts[i], seed + (unsigned)i * 7919u);
    printf("test_gpu_fault: ok\n");
    return 0;
}
