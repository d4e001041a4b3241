/*
 * The NET transport with ranks as threads of one process (shared memory off): every byte
 * goes through the proxies' progress threads and the socket backend, with one thread per
 * rank issuing collectives. No fork, so `make tsan` checks the proxy, the socket backend
 * and the launch's hand-off to the proxy for races. After a first round, every Baton thread
 * (progress, service, socket helpers) is pinned to one CPU and the collectives run again.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define NRANKS 3
#define COUNT 300007

static ncclComm_t comms[NRANKS];
static int ok[NRANKS];

static void *rank_thread(void *arg)
{
    int rank = (int)(intptr_t)arg;
    int32_t *in = malloc(COUNT * sizeof(int32_t)), *out = malloc(COUNT * sizeof(int32_t));
    int32_t *all = malloc(NRANKS * 1000 * sizeof(int32_t));
    for (int i = 0; i < COUNT; i++)
        in[i] = rank * 100 + i % 89;
    ok[rank] = 1;
    for (int iter = 0; iter < 3 && ok[rank]; iter++) {
        if (ncclAllReduce(in, out, COUNT, ncclInt32, ncclSum, comms[rank], NULL) != ncclSuccess)
            ok[rank] = 0;
        for (int i = 0; i < COUNT && ok[rank]; i++)
            if (out[i] != 300 + 3 * (i % 89))
                ok[rank] = 0;
        if (ncclAllGather(in, all, 1000, ncclInt32, comms[rank], NULL) != ncclSuccess)
            ok[rank] = 0;
        for (int r = 0; r < NRANKS && ok[rank]; r++)
            for (int i = 0; i < 1000; i++)
                if (all[r * 1000 + i] != r * 100 + i % 89)
                    ok[rank] = 0;
    }
    free(in);
    free(out);
    free(all);
    return NULL;
}

/* Pin every thread named "baton ..." to CPU 0; returns how many. */
static int pin_baton_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    while (d && (e = readdir(d)) != NULL) {
        char path[300], comm[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof(comm), f) && strncmp(comm, "baton ", 6) == 0 &&
            sched_setaffinity(atoi(e->d_name), sizeof(one), &one) == 0)
            n++;
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static void run_round(const char *what)
{
    pthread_t th[NRANKS];
    for (int r = 0; r < NRANKS; r++)
        pthread_create(&th[r], NULL, rank_thread, (void *)(intptr_t)r);
    for (int r = 0; r < NRANKS; r++) {
        pthread_join(th[r], NULL);
        BT_TEST_CHECK(ok[r], "rank %d got a wrong result over NET (%s)", r, what);
    }
}

int main(void)
{
    setenv("BATON_SHM_DISABLE", "1", 1);
    setenv("BATON_SOCKET_NTHREADS", "1", 1); /* helper threads too */
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitAll(comms, NRANKS, NULL));
    run_round("warm-up");
    int pinned = pin_baton_threads();
    BT_TEST_CHECK(pinned >= 2 * NRANKS, "pinned only %d Baton threads", pinned);
    run_round("threads pinned to one CPU");
    for (int r = 0; r < NRANKS; r++)
        BT_TEST_OK(ncclCommDestroy(comms[r]));
    bt_test_leaks_end(&leaks);
    printf("net threads: ok\n");
    return 0;
}
