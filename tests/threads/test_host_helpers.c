/*
 * Helper threads of the host executor (exec/host/helpers.h) forced on every launch of two
 * lanes or more (HOST_THREADS=8, HOST_THREADS_MIN_BYTES=0, four channels), ranks as threads of
 * one process:
 *   - one thread per rank: four launches at once want three helpers each, of seven, so some
 *     get fewer or none; out of place, then in place;
 *   - one thread drives every rank in a group: an AllReduce, then an all-to-all of sends and
 *     receives (a lane per peer and direction), shared among eight threads;
 *   - a late rank: the others' helpers stall and hand their lanes back, the launching
 *     threads wait it out and share them again;
 *   - helpers ran (threads named "baton Helper N" exist), and every one ends with the last
 *     communicator (none left; the harness counts threads too).
 * `test_host_helpers tree`: the same with AllReduce on the double binary tree, whose up and
 * down halves are two lanes of a channel. Every element of every output is checked. No
 * fork: it runs under ThreadSanitizer.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "nccl.h"

#define NRANKS 4
#define COUNT 200003 /* several Simple steps on each of two channels, and an odd tail */

static ncclComm_t comms[NRANKS];

static int32_t val(int rank, size_t i)
{
    return (int32_t)(rank * 1000 + (int)(i % 977));
}

static int32_t sum(size_t i)
{
    int32_t s = 0;
    for (int r = 0; r < NRANKS; r++)
        s += val(r, i);
    return s;
}

/* Threads of this process named "baton Helper N". */
static int count_helpers(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], name[32] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f && fgets(name, sizeof(name), f) && strncmp(name, "baton Helper", 12) == 0)
            n++;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

struct rank_arg {
    int rank;
    int late_ms; /* sleep before the collectives */
    int ok;
};

static void *rank_thread(void *p)
{
    struct rank_arg *a = p;
    int32_t *in = malloc(COUNT * sizeof(int32_t)), *out = malloc(COUNT * sizeof(int32_t));
    int32_t *all = malloc((size_t)NRANKS * COUNT * sizeof(int32_t));
    for (size_t i = 0; i < COUNT; i++)
        in[i] = val(a->rank, i);
    if (a->late_ms) {
        struct timespec ts = {0, a->late_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    a->ok = in && out && all;
    for (int iter = 0; iter < 3 && a->ok; iter++) {
        a->ok =
            ncclAllReduce(in, out, COUNT, ncclInt32, ncclSum, comms[a->rank], NULL) == ncclSuccess;
        for (size_t i = 0; i < COUNT && a->ok; i++)
            a->ok = out[i] == sum(i);
        a->ok =
            a->ok && ncclAllGather(in, all, COUNT, ncclInt32, comms[a->rank], NULL) == ncclSuccess;
        for (size_t i = 0; i < (size_t)NRANKS * COUNT && a->ok; i++)
            a->ok = all[i] == val((int)(i / COUNT), i % COUNT);
    }
    free(in);
    free(out);
    free(all);
    return NULL;
}

static void per_thread(int late_rank, int late_ms, const char *what)
{
    pthread_t th[NRANKS];
    struct rank_arg args[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        args[r] = (struct rank_arg){.rank = r, .late_ms = r == late_rank ? late_ms : 0};
        BT_TEST_CHECK(pthread_create(&th[r], NULL, rank_thread, &args[r]) == 0, "thread %d", r);
    }
    for (int r = 0; r < NRANKS; r++) {
        pthread_join(th[r], NULL);
        BT_TEST_CHECK(args[r].ok, "rank %d (%s) got a wrong result", r, what);
    }
}

/* One thread, every rank: an AllReduce, then each rank sends its input to every other. */
static void one_thread(void)
{
    int32_t *in[NRANKS], *out[NRANKS], *a2a[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        in[r] = malloc(COUNT * sizeof(int32_t));
        out[r] = malloc(COUNT * sizeof(int32_t));
        a2a[r] = malloc((size_t)NRANKS * COUNT * sizeof(int32_t));
        BT_TEST_CHECK(in[r] && out[r] && a2a[r], "out of memory");
        for (size_t i = 0; i < COUNT; i++)
            in[r][i] = val(r, i);
    }
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < NRANKS; r++)
        BT_TEST_OK(ncclAllReduce(in[r], out[r], COUNT, ncclInt32, ncclSum, comms[r], NULL));
    BT_TEST_OK(ncclGroupEnd());
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < NRANKS; r++)
        for (int p = 0; p < NRANKS; p++) {
            BT_TEST_OK(ncclSend(in[r], COUNT, ncclInt32, p, comms[r], NULL));
            BT_TEST_OK(ncclRecv(a2a[r] + (size_t)p * COUNT, COUNT, ncclInt32, p, comms[r], NULL));
        }
    BT_TEST_OK(ncclGroupEnd());
    for (int r = 0; r < NRANKS; r++) {
        for (size_t i = 0; i < COUNT; i++)
            if (out[r][i] != sum(i))
                BT_TEST_CHECK(0, "rank %d (one thread) AllReduce [%zu] = %d", r, i, out[r][i]);
        for (size_t i = 0; i < (size_t)NRANKS * COUNT; i++)
            if (a2a[r][i] != val((int)(i / COUNT), i % COUNT))
                BT_TEST_CHECK(0, "rank %d (one thread) all-to-all [%zu] = %d", r, i, a2a[r][i]);
        free(in[r]);
        free(out[r]);
        free(a2a[r]);
    }
}

int main(int argc, char **argv)
{
    int tree = argc > 1 && strcmp(argv[1], "tree") == 0;
    setenv("BATON_HOST_THREADS", "8", 1);
    setenv("BATON_HOST_THREADS_MIN_BYTES", "0", 1);
    setenv("BATON_MIN_NCHANNELS", "4", 1);
    setenv("BATON_MAX_NCHANNELS", "4", 1);
    if (tree)
        setenv("BATON_ALGO", "Tree", 1);
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitAll(comms, NRANKS, NULL));
    per_thread(-1, 0, "own thread");
    int made = count_helpers();
    BT_TEST_CHECK(made >= 1 && made <= 7, "%d helper threads after the first launches", made);
    one_thread();
    per_thread(NRANKS - 1, 100, "a late rank");
    made = count_helpers();
    for (int r = 0; r < NRANKS; r++)
        BT_TEST_OK(ncclCommDestroy(comms[r]));
    BT_TEST_CHECK(count_helpers() == 0, "helper threads left after the last destroy");
    bt_test_leaks_end(&leaks);
    printf("host helpers%s: ok (%d helper threads)\n", tree ? " (tree)" : "", made);
    return 0;
}
