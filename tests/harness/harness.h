/*
 * Test harness: checks that fail loudly, a launcher that runs n ranks as processes with a
 * deadline, and the leak check every test ends with.
 */
#ifndef BT_TEST_HARNESS_H
#define BT_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

#define BT_TEST_CHECK(cond, ...)                                                                   \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A call that returns 0 (ncclSuccess / BT_OK) on success. */
#define BT_TEST_OK(call)                                                                           \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        BT_TEST_CHECK(rc_ == 0, "%s returned %d", #call, rc_);                                     \
    } while (0)

/* A CUDA runtime call that must succeed (the including file includes cuda_runtime_api.h). */
#define BT_TEST_CUDA(call)                                                                         \
    do {                                                                                           \
        int e_ = (int)(call);                                                                      \
        BT_TEST_CHECK(e_ == 0, "%s: %s", #call, cudaGetErrorString((cudaError_t)e_));              \
    } while (0)

/* Seconds on the monotonic clock, for tests that time what they wait for. */
double bt_test_now_s(void);

/* Set each "NAME=VALUE" of env (NULL-terminated), overwriting: a suite's environment, before
 * any NCCL call. A malformed entry fails the test. */
void bt_test_setenv_list(const char *const *env);

/* Send this process's stderr to `dir`/rank<rank>.log (the parent reads it afterwards). */
void bt_test_stderr_to(const char *dir, int rank);

typedef int (*bt_test_rank_fn)(int rank, int nranks, void *arg);

/* The GPU of rank process `rank` in the GPU tests: `rank`, or 0 for every rank when
 * BATON_TEST_MPS=1 (processes sharing GPU 0 under CUDA MPS: a one-GPU machine). */
int bt_test_gpu_of(int rank);
/* 1 when BATON_TEST_MPS=1. */
int bt_test_mps(void);

/* How many times slower this build runs ($BT_TEST_SLOW, set for sanitized builds; >= 1):
 * the factor for a test's deadlines and time limits. */
int bt_test_slow(void);

/* A test that may stall (a deadlock between GPU streams and its own thread): after `seconds`
 * (times bt_test_slow) it prints its main thread's stack and exits with status 3. Call it from
 * the main thread after the first CUDA call: it also puts the crash reports back, which the
 * CUDA driver may have replaced (harness/crash.c). */
void bt_test_watchdog(int seconds);

/* Ranks start only once all of them are forked (see harness.c for why). */

/*
 * Fork `nranks` processes, each running fn(rank, nranks, arg) and exiting with its return
 * value. Waits at most `timeout_s` seconds (times $BT_TEST_SLOW, set for sanitized
 * builds); on timeout or on the first failure it kills the others. Returns 0 when every rank exited
 * 0.
 */
int bt_test_run_ranks(int nranks, bt_test_rank_fn fn, void *arg, int timeout_s);

/*
 * Leak check. Call begin() at the start of a process's test body and end() at its end:
 * end() fails the test if file descriptors, threads or /dev/shm entries named baton-*
 * created by this process are left.
 */
struct bt_test_leaks {
    int nfds;
    int nthreads;
};
void bt_test_leaks_begin(struct bt_test_leaks *l);
void bt_test_leaks_end(const struct bt_test_leaks *l);

/* Count of /dev/shm segments of Baton created by this process or the ranks it forked
 * (so tests running beside it do not count). */
int bt_test_shm_count(void);

/* A start gate for ranks forked after ncclGetUniqueId: no rank starts before every rank is
 * forked. A rank talking to this process's rendezvous root makes the root thread allocate,
 * and a fork meanwhile can hand the next child the allocator's lock held (seen under ASan: a
 * forked rank hung in malloc). init before the forks; each child passes (it waits until the
 * parent opens: the pipe's EOF); the parent opens once every rank is forked. */
struct bt_test_gate {
    int fd[2];
};
int bt_test_gate_init(struct bt_test_gate *g); /* 0, or -1 (said on stderr) */
void bt_test_gate_pass(struct bt_test_gate *g);
void bt_test_gate_open(struct bt_test_gate *g);

#endif
