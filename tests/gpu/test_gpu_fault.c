/*
 * Faults on GPUs (2 processes, BATON_TIMEOUT=3), one case per argument (default: all):
 *
 * kill      kill -9 of one rank in the middle of a stream of AllReduces: the survivor's
 *           kernel, spinning on flags the dead rank will never write, gives up at the deadline
 *           and reports through the host-mapped report; ncclCommGetAsyncError returns
 *           ncclRemoteError within TIMEOUT + 1 s of the kill, and ncclCommAbort plus exit
 *           finish cleanly. Rank 1 kills itself right after queueing a collective (its kernel
 *           in flight), at a random iteration; the kill time travels in shared memory. Three
 *           sizes: one-shot LL, one-shot LL128 (without NVLink: one-shot LL or Simple), the
 *           Simple ring.
 * absent    after one AllReduce together, rank 1 never calls the second, which rank 0 waits in
 *           (HANG_REPORT=1): rank 0 prints a hang report naming rank 1 as not arrived, then
 *           fails with ncclRemoteError within TIMEOUT + 1 s, its message naming the collective
 *           and rank 1.
 * absent_first  rank 1 never calls the first AllReduce: rank 0 waits in the GPU setup every
 *           rank joins at its first GPU operation, reports the hang naming rank 1 (HANG_REPORT=1)
 *           and fails within TIMEOUT + 1 s.
 * absent_one_gpu  the absent case with both ranks in one process on GPU 0 (TEST_SAME_GPU;
 *           runs on a one-GPU machine; not in the default list).
 * absent_ranks  BATON_TEST_GPUS ranks (default 4) of one process on GPU 0 (TEST_SAME_GPU): after
 *           an AllReduce together, the last rank stops calling; every other rank gets
 *           ncclRemoteError within TIMEOUT + 1 s (one-shot LL, 256 KB, and an 8 MB ring on
 *           every channel), and aborting every communicator ends the process cleanly.
 * spin_ranks  the same ranks, with a kernel holding all SMs of GPU 0 but 8 (harness/gpu_spin.h):
 *           an AllReduce of 8 MB (more blocks than fit) on every rank either completes right or
 *           ends with ncclRemoteError within TIMEOUT + 1 s on every rank, never a hang.
 * same_gpu  both ranks on GPU 0: without MPS (their kernels would take turns and wait on each
 *           other) ncclInvalidUsage at the first GPU operation on both, naming the other rank
 *           and MPS; as MPS clients the AllReduce runs (needs 1 GPU).
 * BATON_TEST_MPS=1: the two-process cases (kill, absent, absent_first) with both ranks on
 * GPU 0, as processes sharing it under MPS (needs 1 GPU).
 * The absent cases with the suffix _noboard run with ARRIVAL_BOARD=0, as across hosts: rank 0's
 * watcher asks rank 1 in a bootstrap message, and rank 1's watcher answers (absent,
 * absent_one_gpu: "last started #1"), or nothing does (absent_first: rank 1 has no GPU
 * communicator yet, so no watcher looks at it: "no answer").
 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_spin.h"
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

/* A rank's communicator on `dev`, a buffer of `count` floats and a stream; exits 20-22 on
 * failure (the exit codes the cases read). */
static void rank_open(int rank, int dev, const ncclUniqueId *id, size_t count, ncclComm_t *comm,
                      float **buf, cudaStream_t *stream)
{
    if (cudaSetDevice(dev) != cudaSuccess)
        _exit(20);
    if (ncclCommInitRank(comm, NR, *id, rank) != ncclSuccess)
        _exit(21);
    if (cudaMalloc((void **)buf, count * sizeof(float)) != cudaSuccess ||
        cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking) != cudaSuccess)
        _exit(22);
}

/* Exit codes: 0 the survivor saw the error in time; others name what went wrong. */
static void rank_main(int rank, const ncclUniqueId *id, size_t count, int kill_at,
                      struct shared *sh, int ready_fd)
{
    ncclComm_t comm;
    float *buf;
    cudaStream_t stream;
    rank_open(rank, bt_test_gpu_of(rank), id, count, &comm, &buf, &stream);
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
    struct bt_test_gate gate; /* no rank starts before every rank is forked */
    BT_TEST_CHECK(bt_test_gate_init(&gate) == 0, "start gate");
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        pids[r] = fork();
        BT_TEST_CHECK(pids[r] >= 0, "fork");
        if (pids[r] == 0) {
            close(fds[0]);
            bt_test_gate_pass(&gate);
            rank_main(r, &id, count, kill_at, sh, fds[1]);
        }
    }
    bt_test_gate_open(&gate);
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

/* Read what a child wrote to `path` (its stderr), up to `len` - 1 bytes. */
static void slurp(const char *path, char *buf, size_t len)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = 0;
    fclose(f);
}

/* The cases of two ranks that do not both call (or cannot run) the same AllReduce. */
enum pair_mode {
    SAME_GPU,     /* both on GPU 0: the call fails with ncclInvalidUsage */
    ABSENT,       /* one AllReduce together, then rank 1 skips the second */
    ABSENT_FIRST, /* rank 1 skips the first: rank 0 waits in the GPU setup */
};

/* Rank `rank` of a pair case; writes when rank 0 called and saw its error to sh; the exit
 * code says what went wrong. */
static void pair_rank(int rank, enum pair_mode mode, const ncclUniqueId *id, struct shared *sh)
{
    ncclComm_t comm;
    float *buf;
    cudaStream_t stream;
    rank_open(rank, mode == SAME_GPU ? 0 : bt_test_gpu_of(rank), id, 1024, &comm, &buf, &stream);
    int mps = 0; /* this process reaches GPU 0 through MPS: sharing it is allowed */
    if (mode == SAME_GPU && cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0) != cudaSuccess)
        mps = 0;
    /* both ranks take part in a first AllReduce (it also connects the GPUs: a collective
     * setup every rank joins at its first GPU operation) */
    if (mode == ABSENT) {
        if (ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, stream) != ncclSuccess ||
            cudaStreamSynchronize(stream) != cudaSuccess)
            _exit(23);
    }
    if (rank == 1 && mode != SAME_GPU) { /* never arrives: stays until rank 0 saw its error */
        for (int i = 0; i < 200 && sh->detect_time == 0; i++)
            usleep(50000);
        ncclCommAbort(comm);
        _exit(0);
    }
    double start = now_s();
    ncclResult_t r = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, stream);
    if (mode == SAME_GPU ? r != (mps ? ncclSuccess : ncclInvalidUsage)
        : mode == ABSENT ? r != ncclSuccess
                         : r == ncclSuccess) {
        fprintf(stderr, "rank %d: ncclAllReduce returned %d\n", rank, (int)r);
        _exit(24);
    }
    if (mode == SAME_GPU && mps) { /* both MPS clients: the AllReduce runs (gpu_test_gpu_colls
                                    * under BATON_TEST_MPS=1 checks the results) */
        if (cudaStreamSynchronize(stream) != cudaSuccess)
            _exit(27);
        fprintf(stderr, "rank %d: an MPS client sharing GPU 0: the AllReduce ran\n", rank);
        ncclCommDestroy(comm);
        _exit(0);
    }
    if (r == ncclSuccess) { /* ABSENT: the kernel's error, through the async error */
        ncclResult_t async = ncclSuccess;
        while (cudaStreamQuery(stream) == cudaErrorNotReady && async == ncclSuccess)
            ncclCommGetAsyncError(comm, &async);
        ncclCommGetAsyncError(comm, &async);
        if (async != ncclRemoteError) {
            fprintf(stderr, "rank %d: async error %d, expected ncclRemoteError\n", rank,
                    (int)async);
            _exit(25);
        }
    }
    sh->kill_time = start;
    sh->detect_time = now_s();
    ncclCommAbort(comm);
    _exit(0);
}

/* Both ranks of a pair case, each one's stderr in a file (names in logs); their exit
 * statuses. */
static void run_pair(enum pair_mode mode, struct shared *sh, char logs[NR][256], int status[NR])
{
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    struct bt_test_gate gate; /* no rank starts before every rank is forked */
    BT_TEST_CHECK(bt_test_gate_init(&gate) == 0, "start gate");
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        snprintf(logs[r], 256, "/tmp/baton-gpu-fault-%d-%d.log", (int)getpid(), r);
        pids[r] = fork();
        BT_TEST_CHECK(pids[r] >= 0, "fork");
        if (pids[r] == 0) {
            if (!freopen(logs[r], "w", stderr))
                _exit(19);
            setvbuf(stderr, NULL, _IONBF, 0); /* a file is fully buffered; ranks _exit */
            bt_test_gate_pass(&gate);
            pair_rank(r, mode, &id, sh);
        }
    }
    bt_test_gate_open(&gate);
    for (int r = 0; r < NR; r++)
        BT_TEST_CHECK(waitpid(pids[r], &status[r], 0) == pids[r], "waitpid rank %d", r);
}

static struct shared *shared_new(void)
{
    struct shared *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BT_TEST_CHECK(sh != MAP_FAILED, "mmap");
    sh->kill_time = sh->detect_time = 0;
    return sh;
}

static int no_board(void)
{
    const char *v = getenv("BATON_ARRIVAL_BOARD");
    return v && strcmp(v, "0") == 0;
}

/* Rank 1 does not call the AllReduce rank 0 waits in (HANG_REPORT=1): rank 0 reports the
 * hang naming rank 1 (in the kernel, or in the GPU setup when it is the first), then fails
 * within TIMEOUT + 1 s. */
static void absent_case(enum pair_mode mode)
{
    const char *name = mode == ABSENT ? "absent" : "absent_first";
    setenv("BATON_HANG_REPORT", "1", 1);
    struct shared *sh = shared_new();
    char logs[NR][256], out[16384];
    int status[NR];
    run_pair(mode, sh, logs, status);
    unsetenv("BATON_HANG_REPORT");
    slurp(logs[0], out, sizeof(out));
    for (int r = 0; r < NR; r++)
        BT_TEST_CHECK(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0,
                      "%s: rank %d ended with status 0x%x; rank 0 said:\n%s", name, r, status[r],
                      out);
    double detect = sh->detect_time - sh->kill_time;
    printf("%s: rank 0 got its error %.2f s after its AllReduce (TIMEOUT %d s)\n", name, detect,
           TIMEOUT_S);
    BT_TEST_CHECK(detect <= TIMEOUT_S + 1.0, "%s: the error came %.2f s after the call", name,
                  detect);
    if (mode == ABSENT) { /* the kernel's hang report, then its timeout, naming rank 1 */
        BT_TEST_CHECK(strstr(out, "has waited 1 s for rank 1"), "no hang report naming rank 1:\n%s",
                      out);
        BT_TEST_CHECK(
            strstr(out, "1 rank(s) have not arrived at collective #2: 1 (last started #1)"),
            "the hang report does not name rank 1 as not arrived:\n%s", out);
        BT_TEST_CHECK(strstr(out, "no progress for TIMEOUT=3 s while waiting for rank 1"),
                      "the timeout does not name rank 1:\n%s", out);
        BT_TEST_CHECK(!no_board() || strstr(out, "asked the other 1 rank(s), 1 answered"),
                      "without a board, rank 1's answer is not in the report:\n%s", out);
    } else { /* the setup's hang report */
        BT_TEST_CHECK(strstr(out, "GPU setup, which every rank joins at its first GPU operation "
                                  "(here collective #1), has waited 1 s"),
                      "no hang report of the GPU setup:\n%s", out);
        const char *want = no_board() ? "1 rank(s) have not arrived at collective #1: 1 (no answer"
                                      : "1 rank(s) have not arrived at collective #1: 1 (last "
                                        "started #0)";
        BT_TEST_CHECK(strstr(out, want),
                      "the setup's hang report does not name rank 1 as not "
                      "arrived:\n%s",
                      out);
    }
    printf("%s: rank 0's report:\n%s", name, out);
    for (int r = 0; r < NR; r++)
        unlink(logs[r]);
    munmap(sh, sizeof(*sh));
}

/* The absent case inside one process on one GPU (TEST_SAME_GPU; a one-GPU machine): two
 * communicators on GPU 0 run an AllReduce together, then only rank 0 calls the second. Runs
 * in a child whose stderr goes to `log`; exit 0 when rank 0 got ncclRemoteError in time. */
static void absent_one_gpu_child(const char *log)
{
    if (!freopen(log, "w", stderr))
        _exit(19);
    setvbuf(stderr, NULL, _IONBF, 0);
    ncclComm_t comms[NR];
    int devs[NR] = {0, 0};
    if (ncclCommInitAll(comms, NR, devs) != ncclSuccess)
        _exit(21);
    float *buf[NR];
    cudaStream_t st[NR];
    for (int r = 0; r < NR; r++)
        if (cudaMalloc((void **)&buf[r], 1024 * sizeof(float)) != cudaSuccess ||
            cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking) != cudaSuccess)
            _exit(22);
    ncclGroupStart();
    for (int r = 0; r < NR; r++)
        ncclAllReduce(buf[r], buf[r], 1024, ncclFloat32, ncclSum, comms[r], st[r]);
    if (ncclGroupEnd() != ncclSuccess || cudaDeviceSynchronize() != cudaSuccess)
        _exit(23);
    double start = now_s();
    if (ncclAllReduce(buf[0], buf[0], 1024, ncclFloat32, ncclSum, comms[0], st[0]) != ncclSuccess)
        _exit(24);
    ncclResult_t async = ncclSuccess;
    while (cudaStreamQuery(st[0]) == cudaErrorNotReady && async == ncclSuccess)
        ncclCommGetAsyncError(comms[0], &async);
    ncclCommGetAsyncError(comms[0], &async);
    double took = now_s() - start;
    if (async != ncclRemoteError)
        _exit(25);
    fprintf(stderr, "absent_one_gpu: ncclRemoteError after %.2f s\n", took);
    for (int r = 0; r < NR; r++)
        ncclCommAbort(comms[r]);
    _exit(took <= TIMEOUT_S + 1.0 ? 0 : 26);
}

static void absent_one_gpu_case(void)
{
    setenv("BATON_HANG_REPORT", "1", 1);
    setenv("BATON_TEST_SAME_GPU", "1", 1);
    char log[256], out[16384];
    snprintf(log, sizeof(log), "/tmp/baton-gpu-fault-%d-one.log", (int)getpid());
    pid_t pid = fork();
    BT_TEST_CHECK(pid >= 0, "fork");
    if (pid == 0)
        absent_one_gpu_child(log);
    int status;
    BT_TEST_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    unsetenv("BATON_HANG_REPORT");
    unsetenv("BATON_TEST_SAME_GPU");
    slurp(log, out, sizeof(out));
    unlink(log);
    BT_TEST_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "absent_one_gpu: ended with status 0x%x:\n%s", status, out);
    BT_TEST_CHECK(strstr(out, "has waited 1 s for rank 1"), "no hang report naming rank 1:\n%s",
                  out);
    BT_TEST_CHECK(strstr(out, "1 rank(s) have not arrived at collective #2: 1 (last started #1)"),
                  "the hang report does not name rank 1 as not arrived:\n%s", out);
    BT_TEST_CHECK(strstr(out, "no progress for TIMEOUT=3 s while waiting for rank 1"),
                  "the timeout does not name rank 1:\n%s", out);
    BT_TEST_CHECK(!no_board() || strstr(out, "asked the other 1 rank(s), 1 answered"),
                  "without a board, rank 1's answer is not in the report:\n%s", out);
    printf("absent_one_gpu: rank 0's report:\n%s", out);
}

/* N ranks of one process on GPU 0 (TEST_SAME_GPU), in a child whose stderr goes to `log`:
 * one AllReduce of `count` floats together, then every rank but the last (absent) or every
 * rank beside a kernel holding all SMs but 8 (spin) calls another. Each caller's outcome
 * within TIMEOUT + 1 s, polled: its stream done with the right sums, or ncclRemoteError.
 * Exit 0 when every caller ended in time (spin: either way; absent: with the error). */
#define MAX_RANKS 16
static void ranks_child(const char *log, int n, size_t count, int spin)
{
    if (!freopen(log, "w", stderr))
        _exit(19);
    setvbuf(stderr, NULL, _IONBF, 0);
    ncclComm_t comms[MAX_RANKS];
    int devs[MAX_RANKS] = {0};
    if (ncclCommInitAll(comms, n, devs) != ncclSuccess)
        _exit(21);
    float *buf[MAX_RANKS];
    cudaStream_t st[MAX_RANKS];
    for (int r = 0; r < n; r++)
        if (cudaMalloc((void **)&buf[r], count * sizeof(float)) != cudaSuccess ||
            cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking) != cudaSuccess)
            _exit(22);
    ncclGroupStart();
    for (int r = 0; r < n; r++)
        ncclAllReduce(buf[r], buf[r], count, ncclFloat32, ncclSum, comms[r], st[r]);
    if (ncclGroupEnd() != ncclSuccess || cudaDeviceSynchronize() != cudaSuccess)
        _exit(23);
    int callers = spin ? n : n - 1;
    float *ones = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++)
        ones[i] = 1.0f;
    for (int r = 0; r < callers; r++)
        if (cudaMemcpy(buf[r], ones, count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
            _exit(22);
    if (spin) {
        int held = bt_test_spin_start(8, 4.0 * TIMEOUT_S);
        if (held < 0)
            _exit(27);
        fprintf(stderr, "spin_ranks: a kernel holds %d SMs\n", held);
    }
    double start = now_s();
    ncclGroupStart();
    for (int r = 0; r < callers; r++)
        ncclAllReduce(buf[r], buf[r], count, ncclFloat32, ncclSum, comms[r], st[r]);
    if (ncclGroupEnd() != ncclSuccess)
        _exit(24);
    double took[MAX_RANKS];
    ncclResult_t res[MAX_RANKS];
    int left = callers;
    for (int r = 0; r < callers; r++)
        took[r] = -1;
    while (left > 0 && now_s() - start < 3.0 * TIMEOUT_S) {
        for (int r = 0; r < callers; r++) {
            if (took[r] >= 0)
                continue;
            int done = cudaStreamQuery(st[r]) == cudaSuccess;
            ncclCommGetAsyncError(comms[r], &res[r]);
            if (done || res[r] != ncclSuccess) {
                took[r] = now_s() - start;
                left--;
            }
        }
    }
    if (spin)
        bt_test_spin_stop();
    int bad = 0, failed = 0;
    for (int r = 0; r < callers; r++) {
        if (took[r] < 0) {
            fprintf(stderr, "rank %d: neither done nor failed after %.0f s\n", r, 3.0 * TIMEOUT_S);
            bad = 1;
            continue;
        }
        if (res[r] == ncclSuccess) {
            if (cudaStreamSynchronize(st[r]) != cudaSuccess ||
                cudaMemcpy(ones, buf[r], count * sizeof(float), cudaMemcpyDeviceToHost) !=
                    cudaSuccess)
                _exit(22);
            size_t wrong = 0;
            for (size_t i = 0; i < count; i++)
                wrong += ones[i] != (float)n;
            fprintf(stderr, "rank %d: done after %.2f s, %zu wrong\n", r, took[r], wrong);
            bad |= wrong != 0 || !spin; /* absent: it cannot complete */
        } else {
            failed++;
            fprintf(stderr, "rank %d: %s after %.2f s\n", r, ncclGetErrorString(res[r]), took[r]);
            bad |= res[r] != ncclRemoteError || took[r] > TIMEOUT_S + 1.0;
        }
    }
    fprintf(stderr, "%s: %d ranks, %zu floats: %d of %d callers failed\n",
            spin ? "spin_ranks" : "absent_ranks", n, count, failed, callers);
    for (int r = 0; r < n; r++)
        ncclCommAbort(comms[r]);
    free(ones);
    _exit(bad ? 26 : 0);
}

static void ranks_case(int spin)
{
    const char *g = getenv("BATON_TEST_GPUS");
    int n = g ? atoi(g) : 4;
    BT_TEST_CHECK(n >= 2 && n <= MAX_RANKS, "BATON_TEST_GPUS=%s: 2..%d", g, MAX_RANKS);
    setenv("BATON_TEST_SAME_GPU", "1", 1);
    /* one-shot LL, 256 KB, an 8 MB ring on every channel the GPU fits */
    size_t counts[] = {1024, 64 * 1024, 2 * 1024 * 1024};
    for (int i = spin ? 2 : 0; i < 3; i++) {
        char log[256], out[16384];
        snprintf(log, sizeof(log), "/tmp/baton-gpu-fault-%d-ranks.log", (int)getpid());
        pid_t pid = fork();
        BT_TEST_CHECK(pid >= 0, "fork");
        if (pid == 0)
            ranks_child(log, n, counts[i], spin);
        int status;
        BT_TEST_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        slurp(log, out, sizeof(out));
        unlink(log);
        BT_TEST_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "%s (%zu floats): ended with status 0x%x:\n%s",
                      spin ? "spin_ranks" : "absent_ranks", counts[i], status, out);
        printf("%s", out);
    }
    unsetenv("BATON_TEST_SAME_GPU");
}

static void same_gpu_case(void)
{
    struct shared *sh = shared_new();
    char logs[NR][256], out[NR][8192];
    int status[NR];
    run_pair(SAME_GPU, sh, logs, status);
    for (int r = 0; r < NR; r++) {
        slurp(logs[r], out[r], sizeof(out[r]));
        BT_TEST_CHECK(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0,
                      "rank %d ended with status 0x%x:\n%s", r, status[r], out[r]);
        BT_TEST_CHECK(strstr(out[r], "use the same GPU") || strstr(out[r], "the AllReduce ran"),
                      "rank %d does not say why:\n%s", r, out[r]);
        unlink(logs[r]);
    }
    if (strstr(out[0], "the AllReduce ran"))
        printf("same_gpu: both ranks are MPS clients: the AllReduce ran on GPU 0 shared\n");
    else
        printf("same_gpu: both ranks got ncclInvalidUsage: %s", strstr(out[0], "ranks "));
    munmap(sh, sizeof(*sh));
}

static void kill_cases(void)
{
    unsigned seed = (unsigned)time(NULL);
    /* one-shot LL, one-shot LL128 (NVLink; else LL), the Simple ring (the tuner's choices) */
    size_t counts[] = {1024, 192 * 1024, 4 * 1024 * 1024};
    for (int i = 0; i < 3; i++)
        run_case(counts[i], seed + (unsigned)i * 7919u);
}

int main(int argc, char **argv)
{
    setenv("BATON_TIMEOUT", "3", 1);
    setenv("BATON_DEBUG", "WARN", 0); /* the messages the cases check */
    /* counted in a child: CUDA used here would be unusable in the ranks forked after */
    int ngpus = 0, st;
    pid_t pid = fork();
    if (pid == 0)
        _exit(cudaGetDeviceCount(&ngpus) == cudaSuccess ? ngpus : 0);
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
        ngpus = WEXITSTATUS(st);
    const char *all[] = {
        "same_gpu", "absent", "absent_noboard", "absent_first", "absent_first_noboard", "kill"};
    const char **cases = argc > 1 ? (const char **)argv + 1 : all;
    int ncases = argc > 1 ? argc - 1 : (int)(sizeof(all) / sizeof(all[0]));
    for (int i = 0; i < ncases; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s", cases[i]);
        char *suffix = strstr(name, "_noboard");
        if (suffix && strncmp(name, "absent", 6) == 0 && suffix[8] == '\0') {
            *suffix = '\0';
            setenv("BATON_ARRIVAL_BOARD", "0", 1);
        } else {
            unsetenv("BATON_ARRIVAL_BOARD");
        }
        const char *c = name;
        int need = strcmp(c, "same_gpu") == 0 || strcmp(c, "absent_one_gpu") == 0 ||
                           strcmp(c, "absent_ranks") == 0 || strcmp(c, "spin_ranks") == 0 ||
                           bt_test_mps()
                       ? 1
                       : 2;
        BT_TEST_CHECK(ngpus >= need, "case %s needs %d GPUs, this machine has %d", c, need, ngpus);
        if (strcmp(c, "same_gpu") == 0)
            same_gpu_case();
        else if (strcmp(c, "absent") == 0)
            absent_case(ABSENT);
        else if (strcmp(c, "absent_first") == 0)
            absent_case(ABSENT_FIRST);
        else if (strcmp(c, "absent_one_gpu") == 0)
            absent_one_gpu_case();
        else if (strcmp(c, "kill") == 0)
            kill_cases();
        else if (strcmp(c, "absent_ranks") == 0)
            ranks_case(0);
        else if (strcmp(c, "spin_ranks") == 0)
            ranks_case(1);
        else
            BT_TEST_CHECK(0,
                          "unknown case %s (same_gpu, absent, absent_first, absent_one_gpu (each "
                          "absent case also with _noboard), kill, absent_ranks, spin_ranks)",
                          c);
    }
    printf("test_gpu_fault: ok\n");
    return 0;
}
