/*
 * kill -9 of one rank in the middle of a stream of collectives, as a matrix: 2, 4 and 8
 * ranks x shared memory and the network (SHM_DISABLE=1: sockets through the proxy) x
 * AllReduce, AllGather, ReduceScatter, Broadcast, Reduce and a ring of Send/Recv; the victim
 * and the moment are random
 * (seeded per case, printed). TIMEOUT=30, so only detection can make the deadline: the
 * survivors notice that a process they wait on is gone (pid check every ~50 ms of a stall,
 * or the socket's EOF) and fail with an error that says so. The parent reaps every rank as
 * it ends (a zombie would still look alive, as under a launcher that does not reap), and
 * every survivor must fail within 5 s of the kill (x BT_TEST_SLOW) and name the victim: a
 * survivor that fails because its neighbour failed first reads the neighbour's cause on the
 * arrival board. In every other case a survivor that has failed stays (it neither aborts
 * nor exits, as a job that keeps its process after an error), so the ranks waiting on it
 * must learn from the board that it failed, not from its exit.
 * Then the same deaths before the survivors' connections exist (they are made at a
 * communicator's first collective): a victim that never calls one, and a victim killed
 * within ~30 ms of the first, while the ranks connect. Every wait of the connection setup
 * (bootstrap messages, the network's connect and accept) must notice the dead peer too.
 * BT_PEER_DEATH_CASES=N runs the first N cases only, BT_PEER_DEATH_FIRST=K from case K on.
 */
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

#define MAX_NR 8
#define COUNT (64 * 1024)

enum { C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_BCAST, C_REDUCE, C_SENDRECV, C_N };
static const char *names[] = {"AllReduce", "AllGather", "ReduceScatter",
                              "Broadcast", "Reduce",    "SendRecv ring"};

/* When the victim dies: in the stream, while the ranks connect, or before its first call. */
enum { DIE_STREAMING, DIE_CONNECTING, DIE_BEFORE_FIRST, DIE_N };
static const char *when_names[] = {"", " (while connecting)", " (before its first call)"};

/* A rank's message to the parent: {rank, what}; a pipe write this small is atomic. */
enum { MSG_READY = 100, MSG_NAMED = 0, MSG_UNNAMED = 12 };

static void tell_parent(int fd, int rank, int what)
{
    unsigned char m[2] = {(unsigned char)rank, (unsigned char)what};
    if (write(fd, m, 2) != 2)
        _exit(11);
}

/* A rank: run collectives until one fails, and say whether the failure named the victim.
 * Then abort and exit, or (stay) keep the failed communicator and wait to be killed. */
static void rank_main(int rank, int nr, const ncclUniqueId *id, int coll, int victim, int when,
                      int stay, int fd)
{
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, nr, *id, rank) != ncclSuccess)
        _exit(10);
    float *in = calloc((size_t)COUNT * nr, sizeof(float));
    float *out = calloc((size_t)COUNT * nr, sizeof(float));
    tell_parent(fd, rank, MSG_READY);
    if (when == DIE_BEFORE_FIRST && rank == victim)
        for (;;)
            pause(); /* killed here, its connections never made */
    for (int it = 0; it < 1000000; it++) {
        ncclResult_t r;
        switch (coll) {
        case C_ALLREDUCE:
            r = ncclAllReduce(in, out, COUNT, ncclFloat32, ncclSum, comm, NULL);
            break;
        case C_ALLGATHER:
            r = ncclAllGather(in, out, COUNT, ncclFloat32, comm, NULL);
            break;
        case C_REDUCESCATTER:
            r = ncclReduceScatter(in, out, COUNT, ncclFloat32, ncclSum, comm, NULL);
            break;
        case C_BCAST:
            r = ncclBroadcast(in, out, COUNT, ncclFloat32, 0, comm, NULL);
            break;
        case C_REDUCE:
            r = ncclReduce(in, out, COUNT, ncclFloat32, ncclSum, nr - 1, comm, NULL);
            break;
        default: /* send to the next rank, receive from the previous, in one group */
            r = ncclGroupStart();
            if (r == ncclSuccess)
                r = ncclSend(in, COUNT, ncclFloat32, (rank + 1) % nr, comm, NULL);
            if (r == ncclSuccess)
                r = ncclRecv(out, COUNT, ncclFloat32, (rank + nr - 1) % nr, comm, NULL);
            ncclResult_t e = ncclGroupEnd();
            if (r == ncclSuccess)
                r = e;
            break;
        }
        if (r != ncclSuccess) {
            /* the dead rank itself, not only the neighbour that failed first */
            const char *msg = ncclGetLastError(comm);
            char gone[64], pid[64];
            snprintf(gone, sizeof(gone), "rank %d is gone", victim);
            snprintf(pid, sizeof(pid), "rank %d (pid", victim);
            int named = msg && (strstr(msg, gone) || (strstr(msg, pid) && strstr(msg, "is gone")));
            if (!named)
                fprintf(stderr, "rank %d: failed without naming rank %d as gone: %s\n", rank,
                        victim, msg ? msg : "(null)");
            tell_parent(fd, rank, named ? MSG_NAMED : MSG_UNNAMED);
            if (stay)
                for (;;)
                    pause();
            ncclCommAbort(comm);
            _exit(0);
        }
    }
    _exit(13); /* never failed */
}

/* Take in the ranks' words that have come (the first of each rank counts). */
static void read_words(int fd, int *said, int nr)
{
    unsigned char m[2];
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    while (poll(&pf, 1, 0) > 0 && read(fd, m, 2) == 2)
        if (m[0] < nr && said[m[0]] < 0)
            said[m[0]] = m[1];
}

/* Shared-memory segments the victim made and no peer mapped yet (it died before they could:
 * the names go once every user has mapped them) stay in /dev/shm: remove them. */
static void remove_segments_of(pid_t pid)
{
    char prefix[32], path[300];
    snprintf(prefix, sizeof(prefix), "baton-%d-", (int)pid);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
            unlink(path);
        }
    closedir(d);
}

static void run_case(int nr, int net, int coll, int when, int stay, unsigned seed)
{
    if (net)
        setenv("BATON_SHM_DISABLE", "1", 1);
    else
        unsetenv("BATON_SHM_DISABLE");
    srand(seed);
    int victim = rand() % nr;
    char what[160];
    snprintf(what, sizeof(what), "%d ranks, %s, %s, rank %d killed%s%s", nr, net ? "NET" : "SHM",
             names[coll], victim, when_names[when], stay ? ", survivors stay" : "");
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    int pipefd[2];
    struct bt_test_gate gate; /* no rank starts before every rank is forked */
    BT_TEST_CHECK(pipe(pipefd) == 0, "pipe");
    BT_TEST_CHECK(bt_test_gate_init(&gate) == 0, "start gate");
    pid_t pids[MAX_NR];
    for (int r = 0; r < nr; r++) {
        pids[r] = fork();
        BT_TEST_CHECK(pids[r] >= 0, "fork");
        if (pids[r] == 0) {
            close(pipefd[0]);
            bt_test_gate_pass(&gate);
            rank_main(r, nr, &id, coll, victim, when, stay, pipefd[1]);
        }
    }
    bt_test_gate_open(&gate);
    close(pipefd[1]);
    unsigned char m[2];
    int slow = bt_test_slow();
    for (int r = 0; r < nr; r++) { /* every rank is initialized */
        struct pollfd pf = {.fd = pipefd[0], .events = POLLIN};
        int ok = poll(&pf, 1, 60000 * slow) == 1 && read(pipefd[0], m, 2) == 2 && m[1] == MSG_READY;
        if (!ok) /* none left behind to hold the pipe open */
            for (int k = 0; k < nr; k++) {
                kill(pids[k], SIGKILL);
                waitpid(pids[k], NULL, 0);
            }
        BT_TEST_CHECK(ok, "%s: a rank failed to start (or took over %d s)", what, 60 * slow);
    }
    usleep(when == DIE_STREAMING    ? 50000 + (unsigned)(rand() % 250000)
           : when == DIE_CONNECTING ? (unsigned)(rand() % 30000)
                                    : (unsigned)(rand() % 10000));
    double t_kill = bt_test_now_s();
    kill(pids[victim], SIGKILL);
    int st;
    waitpid(pids[victim], &st, 0); /* reaped at once: a zombie's pid answers kill(pid, 0) */
    /* Every survivor's word, reaping each as it ends (an unreaped one is a zombie the others
     * still see). Reap, then read: a rank's word is in the pipe before it ends. */
    double deadline = t_kill + 5.0 * slow, took;
    int said[MAX_NR], ended[MAX_NR] = {0}, status[MAX_NR] = {0};
    for (int r = 0; r < nr; r++)
        said[r] = -1;
    ended[victim] = 1;
    said[victim] = MSG_NAMED;
    for (;;) {
        for (int r = 0; r < nr; r++)
            if (!ended[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r])
                ended[r] = 1;
        read_words(pipefd[0], said, nr);
        int left = 0;
        for (int r = 0; r < nr; r++)
            left += said[r] < 0 && !ended[r];
        double now = bt_test_now_s();
        took = now - t_kill;
        if (left == 0 || now >= deadline)
            break;
        usleep(5000);
    }
    for (int r = 0; r < nr; r++) /* none outlives the case, to print into the next one */
        if (!ended[r]) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], &status[r], 0);
        }
    read_words(pipefd[0], said, nr); /* a word that came with the end */
    close(pipefd[0]);
    remove_segments_of(pids[victim]);
    for (int r = 0; r < nr; r++) {
        if (r == victim)
            continue;
        BT_TEST_CHECK(said[r] >= 0 || ended[r], "%s: rank %d still running %.1f s after the kill",
                      what, r, took);
        BT_TEST_CHECK(said[r] >= 0, "%s: rank %d ended (status 0x%x) without a failure to report",
                      what, r, status[r]);
        BT_TEST_CHECK(said[r] == MSG_NAMED, "%s: rank %d failed without naming rank %d", what, r,
                      victim);
    }
    printf("%s: every survivor failed within %.2f s, naming it\n", what, took);
}

int main(void)
{
    setenv("BATON_TIMEOUT", "30", 1);
    setenv("BATON_HANG_REPORT", "0", 1);
    const char *lim = getenv("BT_PEER_DEATH_CASES");
    int max_cases = lim ? atoi(lim) : 1 << 30, n = 0;
    const char *first_s = getenv("BT_PEER_DEATH_FIRST");
    int first = first_s ? atoi(first_s) : 0;
    static const int sizes[] = {2, 4, 8};
    for (int si = 0; si < 3; si++)
        for (int net = 0; net < 2; net++)
            for (int coll = 0; coll < C_N && n < max_cases; coll++, n++)
                if (n >= first)
                    run_case(sizes[si], net, coll, DIE_STREAMING, (n + n / C_N) % 2,
                             1234u + (unsigned)(n * 7919));
    /* before the connections: the ring's AllReduce and the peer links of a Send/Recv ring */
    for (int when = DIE_CONNECTING; when < DIE_N; when++)
        for (int si = 0; si < 3; si++)
            for (int net = 0; net < 2; net++)
                for (int k = 0; k < 2 && n < max_cases; k++, n++)
                    if (n >= first)
                        run_case(sizes[si], net, k ? C_SENDRECV : C_ALLREDUCE, when,
                                 (n + n / 2) % 2, 1234u + (unsigned)(n * 7919));
    printf("peer death: ok (%d cases)\n", n - first);
    return 0;
}
