/*
 * Recovery after a rank dies, the way a fault-tolerant trainer does it: 4 rank processes
 * stream AllReduces; the parent kill -9s rank 2 (mid-stream, so almost always inside an
 * AllReduce) and reaps it. Each survivor's collective fails; it shrinks the communicator
 * with NCCL_SHRINK_ABORT, excluding rank 2, and then runs 1000 collectives on the new
 * 3-rank communicator (AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll as
 * grouped Send/Recv; sizes from 1 element to 256 K), every result checked exactly. The time
 * from the kill to the end of the first collective on the new communicator is measured
 * (CLOCK_MONOTONIC is one clock for every process) and must be within TIMEOUT + 1 s; when
 * every process has ended, nothing of Baton's is left in /dev/shm.
 */
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

#define NR 4
#define VICTIM 2
#define NCOLLS 1000
#define MAXC (256 * 1024)

struct msg {
    int rank, what; /* what: 0 streaming, 1 first collective on the new comm done, 2 done */
    double t;
};

static void tell(int fd, int rank, int what)
{
    struct msg m = {rank, what, bt_test_now_s()};
    if (write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
        _exit(11);
}

static int32_t val(int rank, size_t i, int round)
{
    return (int32_t)((i * 7 + (size_t)round * 13) % 1001) + 10000 * rank;
}

/* Collective `k` on the 3-rank comm, checked; the parent ranks of new ranks 0, 1, 2 are
 * 0, 1, 3 but the values depend on the new rank only. */
static void run_one(ncclComm_t c, int me, int n, int k, int32_t *a, int32_t *b)
{
    static const size_t sizes[] = {1, 3, 64, 1000, 4096, 65536, MAXC / 4, MAXC};
    size_t cnt = sizes[k % 8] / (size_t)n * (size_t)n;
    if (cnt == 0)
        cnt = (size_t)n;
    size_t per = cnt / (size_t)n;
    int kind = (k / 8) % 6, root = k % n;
    for (size_t i = 0; i < cnt; i++)
        a[i] = val(me, i, k);
    switch (kind) {
    case 0:
        BT_TEST_OK(ncclAllReduce(a, b, cnt, ncclInt32, ncclSum, c, NULL));
        for (size_t i = 0; i < cnt; i++) {
            int32_t w = 0;
            for (int r = 0; r < n; r++)
                w += val(r, i, k);
            BT_TEST_CHECK(b[i] == w, "coll %d AllReduce [%zu] = %d, want %d", k, i, b[i], w);
        }
        break;
    case 1:
        BT_TEST_OK(ncclAllGather(a, b, per, ncclInt32, c, NULL));
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < per; i++)
                BT_TEST_CHECK(b[(size_t)r * per + i] == val(r, i, k), "coll %d AllGather", k);
        break;
    case 2:
        BT_TEST_OK(ncclReduceScatter(a, b, per, ncclInt32, ncclSum, c, NULL));
        for (size_t i = 0; i < per; i++) {
            int32_t w = 0;
            for (int r = 0; r < n; r++)
                w += val(r, (size_t)me * per + i, k);
            BT_TEST_CHECK(b[i] == w, "coll %d ReduceScatter [%zu] = %d, want %d", k, i, b[i], w);
        }
        break;
    case 3:
        BT_TEST_OK(ncclBroadcast(a, b, cnt, ncclInt32, root, c, NULL));
        for (size_t i = 0; i < cnt; i++)
            BT_TEST_CHECK(b[i] == val(root, i, k), "coll %d Broadcast [%zu]", k, i);
        break;
    case 4:
        BT_TEST_OK(ncclReduce(a, b, cnt, ncclInt32, ncclMax, root, c, NULL));
        if (me == root)
            for (size_t i = 0; i < cnt; i++)
                BT_TEST_CHECK(b[i] == val(n - 1, i, k), "coll %d Reduce [%zu]", k, i);
        break;
    default:
        BT_TEST_OK(ncclGroupStart());
        for (int r = 0; r < n; r++) {
            BT_TEST_OK(ncclSend(a + (size_t)r * per, per, ncclInt32, r, c, NULL));
            BT_TEST_OK(ncclRecv(b + (size_t)r * per, per, ncclInt32, r, c, NULL));
        }
        BT_TEST_OK(ncclGroupEnd());
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < per; i++)
                BT_TEST_CHECK(b[(size_t)r * per + i] == val(r, (size_t)me * per + i, k),
                              "coll %d AlltoAll from %d [%zu]", k, r, i);
        break;
    }
}

static void rank_main(int rank, const ncclUniqueId *id, int fd)
{
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, NR, *id, rank));
    float *x = malloc(sizeof(float) << 18);
    for (size_t i = 0; i < (1u << 18); i++)
        x[i] = 1;
    ncclResult_t r = ncclSuccess;
    for (int it = 0; r == ncclSuccess; it++) {
        if (it == 20)
            tell(fd, rank, 0);
        r = ncclAllReduce(x, x, 1u << 18, ncclFloat, ncclSum, comm, NULL);
        for (size_t i = 0; i < (1u << 18) && r == ncclSuccess && it < 3; i++)
            BT_TEST_CHECK(x[i] == 1 << (2 * (it + 1)), "stream AllReduce");
    }
    BT_TEST_CHECK(rank != VICTIM, "the victim's collective failed before it was killed");
    fprintf(stderr, "rank %d: the stream failed (%d): %s\n", rank, (int)r, ncclGetLastError(comm));
    int excl = VICTIM;
    ncclComm_t nc = NULL;
    BT_TEST_OK(ncclCommShrink(comm, &excl, 1, &nc, NULL, NCCL_SHRINK_ABORT));
    int me = -1, n = -1;
    BT_TEST_OK(ncclCommUserRank(nc, &me));
    BT_TEST_OK(ncclCommCount(nc, &n));
    BT_TEST_CHECK(n == NR - 1 && me == (rank < VICTIM ? rank : rank - 1),
                  "rank %d is %d of %d after the shrink", rank, me, n);
    int32_t *a = malloc(sizeof(int32_t) * MAXC), *b = malloc(sizeof(int32_t) * MAXC);
    for (int k = 0; k < NCOLLS; k++) {
        run_one(nc, me, n, k, a, b);
        if (k == 0)
            tell(fd, rank, 1);
    }
    BT_TEST_OK(ncclCommDestroy(nc));
    BT_TEST_OK(ncclCommAbort(comm));
    free(a);
    free(b);
    free(x);
    tell(fd, rank, 2);
    _exit(0);
}

int main(void)
{
    int shm0 = bt_test_shm_count();
    int64_t timeout = getenv("BATON_TIMEOUT") ? atoll(getenv("BATON_TIMEOUT")) : 600;
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    int p[2];
    BT_TEST_CHECK(pipe(p) == 0, "pipe");
    struct bt_test_gate gate; /* no rank starts before every rank is forked */
    BT_TEST_CHECK(bt_test_gate_init(&gate) == 0, "start gate");
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        pids[r] = fork();
        BT_TEST_CHECK(pids[r] >= 0, "fork");
        if (pids[r] == 0) {
            close(p[0]);
            bt_test_gate_pass(&gate);
            rank_main(r, &id, p[1]);
        }
    }
    bt_test_gate_open(&gate);
    close(p[1]);
    int streaming = 0, first = 0, done = 0;
    double t_kill = 0, t_first_max = 0;
    double deadline = bt_test_now_s() + 120 * bt_test_slow();
    while (done < NR - 1 && bt_test_now_s() < deadline) {
        struct msg m;
        struct pollfd pf = {.fd = p[0], .events = POLLIN}; /* a hung rank: fail, not hang */
        if (poll(&pf, 1, (int)((deadline - bt_test_now_s()) * 1000) + 1) != 1)
            break;
        ssize_t got = read(p[0], &m, sizeof(m));
        if (got != (ssize_t)sizeof(m))
            break; /* every writer gone */
        if (m.what == 0 && ++streaming == NR) {
            usleep(20000); /* well inside the stream */
            t_kill = bt_test_now_s();
            kill(pids[VICTIM], SIGKILL);
            waitpid(pids[VICTIM], NULL, 0); /* a zombie's pid still answers kill(pid, 0) */
            printf("killed rank %d (pid %d)\n", VICTIM, (int)pids[VICTIM]);
        } else if (m.what == 1) {
            first++;
            printf("rank %d: first collective on the shrunk comm %.3f s after the kill\n", m.rank,
                   m.t - t_kill);
            if (m.t - t_kill > t_first_max)
                t_first_max = m.t - t_kill;
        } else if (m.what == 2) {
            done++;
        }
    }
    int ok = 1;
    for (int r = 0; r < NR; r++) {
        if (r == VICTIM)
            continue;
        int st = 0;
        if (done < NR - 1)
            kill(pids[r], SIGKILL);
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rank %d ended with status 0x%x\n", r, st);
            ok = 0;
        }
    }
    BT_TEST_CHECK(ok && done == NR - 1 && first == NR - 1, "%d of %d survivors finished", done,
                  NR - 1);
    printf("kill -> first collective on the new comm: %.3f s (the slowest survivor; limit "
           "TIMEOUT + 1 = %lld s); %d verified collectives per survivor\n",
           t_first_max, (long long)timeout + 1, NCOLLS);
    BT_TEST_CHECK(t_first_max <= (double)timeout + 1, "recovery took %.3f s", t_first_max);
    int shm = bt_test_shm_count();
    BT_TEST_CHECK(shm == shm0, "%d Baton segments left in /dev/shm (%d before)", shm, shm0);
    printf("ok\n");
    return 0;
}
