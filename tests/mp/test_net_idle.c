/*
 * Idle is quiet: after a collective over NET (so the proxy's progress and service threads
 * and, with SOCKET_NTHREADS=2, socket helper threads exist) and a one-sided put between the
 * two ranks, which are different hosts (NCCL_HOSTID: so the one-sided link's thread runs
 * too), a communicator left idle for 5 s costs its process less than 1% of a core: the CPU
 * time of all the process's threads (utime + stime of /proc/self/task/<tid>/stat) grows by
 * less than 50 ms.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

/* CPU ticks (utime + stime) of every thread of this process. */
static long long process_ticks(int *nthreads_p)
{
    DIR *d = opendir("/proc/self/task");
    long long total = 0;
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], buf[1024];
        snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* fields after the ")" of comm: state is field 3, utime 14, stime 15 */
        char *p = strrchr(buf, ')');
        long long ut = 0, st = 0;
        if (p &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st) == 2) {
            total += ut + st;
            n++;
        }
    }
    if (d)
        closedir(d);
    *nthreads_p = n;
    return total;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const ncclUniqueId *id = arg;
    ncclComm_t comm;
    char host[16];
    snprintf(host, sizeof(host), "idle%d", rank);
    setenv("NCCL_HOSTID", host, 1);
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    float buf[1024];
    for (int i = 0; i < 1024; i++)
        buf[i] = (float)rank;
    BT_TEST_OK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, NULL));
    BT_TEST_CHECK(buf[0] == 1.0f, "allreduce result %f", buf[0]);
    /* a window and a put across the hosts: the one-sided link and its thread exist */
    static int32_t win_buf[256];
    ncclWindow_t win = NULL;
    BT_TEST_OK(
        ncclCommWindowRegister(comm, win_buf, sizeof(win_buf), &win, NCCL_WIN_COLL_SYMMETRIC));
    int32_t v = 40 + rank;
    BT_TEST_OK(ncclPutSignal(&v, 1, ncclInt32, 1 - rank, win, 0, 0, 0, 0, comm, NULL));
    ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = 1 - rank};
    BT_TEST_OK(ncclWaitSignal(1, &d, comm, NULL));
    BT_TEST_CHECK(win_buf[0] == 41 - rank, "the put landed %d", win_buf[0]);

    int nthreads = 0;
    long long t0 = process_ticks(&nthreads);
    sleep(5);
    long long t1 = process_ticks(&nthreads);
    double ms = (double)(t1 - t0) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
    printf("rank %d: %d threads used %.1f ms of CPU in 5 s idle\n", rank, nthreads, ms);
    BT_TEST_CHECK(nthreads >= 3, "expected proxy threads, saw %d threads", nthreads);
    /* 1% of a core (a thread polling would take 5000 ms); sanitized builds run every wake-up
     * several times slower (BT_TEST_SLOW), and CI runs them beside other tests */
    double limit = 50.0 * bt_test_slow();
    BT_TEST_CHECK(ms < limit, "idle communicator used %.1f ms of CPU in 5 s (limit %.0f ms)", ms,
                  limit);

    BT_TEST_OK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, NULL));
    BT_TEST_CHECK(buf[0] == 2.0f, "allreduce after idle: %f", buf[0]);
    BT_TEST_OK(ncclCommWindowDeregister(comm, win));
    BT_TEST_OK(ncclCommDestroy(comm));
    return 0;
}

/* `test_net_idle ofi`: the same over the libfabric backend (tcp;ofi_rxm), whose completion
 * queues have no descriptor to sleep on. */
int main(int argc, char **argv)
{
    setenv("BATON_SHM_DISABLE", "1", 1);
    setenv("BATON_SOCKET_NTHREADS", "2", 1);
    if (argc > 1 && strcmp(argv[1], "ofi") == 0) {
        setenv("BATON_NET", "OFI", 1);
        setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    }
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    BT_TEST_CHECK(bt_test_run_ranks(2, rank_main, &id, 60) == 0, "ranks failed");
    printf("net idle%s: ok\n", argc > 1 ? " (OFI)" : "");
    return 0;
}
