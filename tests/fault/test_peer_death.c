/*
 * kill -9 of one rank in the middle of a stream of collectives (3 ranks, shared memory,
 * TIMEOUT=30): the survivors notice that a process they wait on is gone (pid check every
 * ~50 ms of a stall) and fail at once with an error that says so, instead of waiting out
 * the timeout. Repeated for AllReduce, AllGather and Broadcast, killing rank 2 at a random
 * moment after the stream started. The parent reaps every rank as it ends (a zombie would
 * still look alive, as it would under a launcher that does not reap), and each survivor
 * must be done within 5 s of the kill. A survivor may name rank 2, or a survivor that
 * failed first and left: the error chain follows the ring.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

#define NR 3
#define COUNT (256 * 1024)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A rank: run collectives until one fails. Exit 0 when the failure names a gone rank. */
static void rank_main(int rank, const ncclUniqueId *id, int coll, int ready_fd)
{
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, NR, *id, rank) != ncclSuccess)
        _exit(10);
    float *in = calloc(COUNT * NR, sizeof(float)), *out = calloc(COUNT * NR, sizeof(float));
    char c = 1;
    if (write(ready_fd, &c, 1) != 1)
        _exit(11);
    for (int it = 0; it < 1000000; it++) {
        ncclResult_t r = coll == 0 ? ncclAllReduce(in, out, COUNT, ncclFloat32, ncclSum, comm, NULL)
                         : coll == 1 ? ncclAllGather(in, out, COUNT, ncclFloat32, comm, NULL)
                                     : ncclBroadcast(in, out, COUNT, ncclFloat32, 0, comm, NULL);
        if (r != ncclSuccess) {
            const char *msg = ncclGetLastError(comm);
            int named = msg && strstr(msg, "is gone") != NULL;
            if (!named)
                fprintf(stderr, "rank %d: failed without naming a gone rank: %s\n", rank,
                        msg ? msg : "(null)");
            ncclCommAbort(comm);
            _exit(named ? 0 : 12);
        }
    }
    _exit(13); /* never failed */
}

static void run_case(int coll, unsigned seed)
{
    static const char *names[] = {"AllReduce", "AllGather", "Broadcast"};
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    int pipefd[2];
    BT_TEST_CHECK(pipe(pipefd) == 0, "pipe");
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        pids[r] = fork();
        BT_TEST_CHECK(pids[r] >= 0, "fork");
        if (pids[r] == 0) {
            close(pipefd[0]);
            rank_main(r, &id, coll, pipefd[1]);
        }
    }
    close(pipefd[1]);
    for (int r = 0; r < NR; r++) { /* every rank is initialized and streaming */
        char c;
        BT_TEST_CHECK(read(pipefd[0], &c, 1) == 1, "%s: a rank failed to start", names[coll]);
    }
    close(pipefd[0]);
    srand(seed);
    usleep(50000 + (unsigned)(rand() % 250000));
    double t_kill = now_s();
    kill(pids[2], SIGKILL);
    int st;
    waitpid(pids[2], &st, 0); /* reaped at once: a zombie's pid still answers kill(pid, 0) */
    /* Reap every survivor as it ends (an unreaped one is a zombie the other still sees). */
    double deadline = t_kill + 5.0 * (getenv("BT_TEST_SLOW") ? atoi(getenv("BT_TEST_SLOW")) : 1);
    int status[2] = {0, 0}, done[2] = {0, 0};
    while ((!done[0] || !done[1]) && now_s() < deadline) {
        for (int r = 0; r < 2; r++)
            if (!done[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r])
                done[r] = 1;
        usleep(5000);
    }
    for (int r = 0; r < 2; r++) {
        if (!done[r]) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], &status[r], 0);
        }
        BT_TEST_CHECK(done[r], "%s: rank %d still running %.1f s after rank 2 was killed",
                      names[coll], r, now_s() - t_kill);
        BT_TEST_CHECK(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0,
                      "%s: rank %d ended with status %d", names[coll], r,
                      WIFEXITED(status[r]) ? WEXITSTATUS(status[r]) : -1);
    }
    printf("%s: survivors failed %.2f s after the kill, naming the gone rank\n", names[coll],
           now_s() - t_kill);
}

int main(void)
{
    setenv("BATON_TIMEOUT", "30", 1);
    setenv("BATON_HANG_REPORT", "0", 1);
    for (int coll = 0; coll < 3; coll++)
        run_case(coll, 1234u + (unsigned)coll);
    printf("peer death: ok\n");
    return 0;
}
