/*
 * Ranks as threads of one process: ncclCommInitAll, then collectives driven two ways —
 * one thread per rank, and one thread driving every rank inside a group (nccl-tests -g).
 * No fork, so it runs under ThreadSanitizer (make tsan runs this label).
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define NRANKS 4
#define COUNT 100003 /* several Simple steps and an odd tail */

static ncclComm_t comms[NRANKS];

struct rank_arg {
    int rank;
    int ok;
};

static int check_allreduce(int rank, const int32_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int32_t want = 0;
        for (int r = 0; r < NRANKS; r++)
            want += (int32_t)(r * 1000 + (int)(i % 977));
        if (out[i] != want) {
            fprintf(stderr, "rank %d: element %zu is %d, expected %d\n", rank, i, out[i], want);
            return 0;
        }
    }
    return 1;
}

static void fill(int rank, int32_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (int32_t)(rank * 1000 + (int)(i % 977));
}

static void *rank_thread(void *p)
{
    struct rank_arg *a = p;
    int32_t *in = malloc(COUNT * sizeof(int32_t)), *out = malloc(COUNT * sizeof(int32_t));
    int32_t *gathered = malloc((size_t)NRANKS * 1000 * sizeof(int32_t));
    fill(a->rank, in, COUNT);
    a->ok = 1;
    for (int iter = 0; iter < 3 && a->ok; iter++) {
        memset(out, 0, COUNT * sizeof(int32_t));
        if (ncclAllReduce(in, out, COUNT, ncclInt32, ncclSum, comms[a->rank], NULL) != ncclSuccess)
            a->ok = 0;
        else
            a->ok = check_allreduce(a->rank, out, COUNT);
        if (ncclAllGather(in, gathered, 1000, ncclInt32, comms[a->rank], NULL) != ncclSuccess)
            a->ok = 0;
        for (int r = 0; r < NRANKS && a->ok; r++)
            for (int i = 0; i < 1000; i++)
                if (gathered[r * 1000 + i] != r * 1000 + i % 977)
                    a->ok = 0;
    }
    free(in);
    free(out);
    free(gathered);
    return NULL;
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitAll(comms, NRANKS, NULL));

    /* One thread per rank. */
    pthread_t th[NRANKS];
    struct rank_arg args[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        args[r] = (struct rank_arg){.rank = r};
        BT_TEST_CHECK(pthread_create(&th[r], NULL, rank_thread, &args[r]) == 0, "thread %d", r);
    }
    for (int r = 0; r < NRANKS; r++) {
        pthread_join(th[r], NULL);
        BT_TEST_CHECK(args[r].ok, "rank %d (own thread) got a wrong result", r);
    }

    /* One thread drives every rank in a group. */
    int32_t *in[NRANKS], *out[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        in[r] = malloc(COUNT * sizeof(int32_t));
        out[r] = malloc(COUNT * sizeof(int32_t));
        fill(r, in[r], COUNT);
    }
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < NRANKS; r++)
        BT_TEST_OK(ncclAllReduce(in[r], out[r], COUNT, ncclInt32, ncclSum, comms[r], NULL));
    BT_TEST_OK(ncclGroupEnd());
    for (int r = 0; r < NRANKS; r++) {
        BT_TEST_CHECK(check_allreduce(r, out[r], COUNT), "rank %d (grouped) wrong", r);
        free(in[r]);
        free(out[r]);
    }

    for (int r = 0; r < NRANKS; r++)
        BT_TEST_OK(ncclCommDestroy(comms[r]));
    bt_test_leaks_end(&leaks);
    printf("thread ranks: ok\n");
    return 0;
}
