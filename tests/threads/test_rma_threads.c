/*
 * One-sided calls across hosts with ranks as threads of one process (BATON_TEST_HOSTS=2:
 * 4 ranks, 2 hosts), so the one-sided link's thread, the owners that land for themselves
 * while they wait, and window registration beside landing run under ThreadSanitizer:
 * each rank puts 200 messages round a ring (1..4096 ints, the larger cut into several of the
 * link's messages), each checked at its target after its signal; then a second window
 * registered between puts. No fork.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define NRANKS 4
#define SLOT 4096 /* ints per round's place in the window */
#define ROUNDS 200

static ncclComm_t comms[NRANKS];

struct rank_arg {
    int rank;
    int ok;
};

static void *rank_thread(void *p)
{
    struct rank_arg *a = p;
    ncclComm_t c = comms[a->rank];
    int next = (a->rank + 1) % NRANKS, prev = (a->rank + NRANKS - 1) % NRANKS;
    size_t bytes = (size_t)2 * SLOT * sizeof(int32_t); /* two places, used in turn */
    int32_t *win_buf = calloc(2 * SLOT, sizeof(int32_t)), *src = malloc(SLOT * sizeof(int32_t));
    ncclWindow_t win = NULL, late = NULL;
    a->ok = ncclCommWindowRegister(c, win_buf, bytes, &win, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess;
    for (int k = 0; k < ROUNDS && a->ok; k++) {
        int cnt = 1 + (k * 997) % SLOT, place = k % 2;
        for (int i = 0; i < cnt; i++)
            src[i] = a->rank * 1000000 + k * 1000 + i % 1000;
        ncclWaitSignalDesc_t d = {.opCnt = 1, .peer = prev};
        a->ok = ncclPutSignal(src, (size_t)cnt, ncclInt32, next, win,
                              (size_t)place * SLOT * sizeof(int32_t), 0, 0, 0, c,
                              NULL) == ncclSuccess &&
                ncclWaitSignal(1, &d, c, NULL) == ncclSuccess;
        for (int i = 0; i < cnt && a->ok; i++)
            if (win_buf[place * SLOT + i] != prev * 1000000 + k * 1000 + i % 1000) {
                fprintf(stderr, "rank %d round %d: [%d] = %d\n", a->rank, k, i,
                        win_buf[place * SLOT + i]);
                a->ok = 0;
            }
        /* the next round's put into this place may come only after this check: say so */
        d.opCnt = 1;
        d.peer = next;
        a->ok = a->ok && ncclSignal(prev, 0, 0, 0, c, NULL) == ncclSuccess &&
                ncclWaitSignal(1, &d, c, NULL) == ncclSuccess;
        if (k == ROUNDS / 2 && a->ok) /* a registration while the link lands */
            a->ok = ncclCommWindowRegister(c, src, SLOT * sizeof(int32_t), &late,
                                           NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess;
    }
    int32_t z = 0, zs = 0;
    a->ok = a->ok && ncclAllReduce(&z, &zs, 1, ncclInt32, ncclSum, c, NULL) == ncclSuccess;
    if (late)
        ncclCommWindowDeregister(c, late);
    if (win)
        ncclCommWindowDeregister(c, win);
    free(win_buf);
    free(src);
    return NULL;
}

int main(void)
{
    setenv("BATON_TEST_HOSTS", "2", 1);
    setenv("BATON_DEVICE", "cpu", 1);
    BT_TEST_OK(ncclCommInitAll(comms, NRANKS, NULL));
    pthread_t t[NRANKS];
    struct rank_arg args[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        args[r] = (struct rank_arg){.rank = r};
        pthread_create(&t[r], NULL, rank_thread, &args[r]);
    }
    int ok = 1;
    for (int r = 0; r < NRANKS; r++) {
        pthread_join(t[r], NULL);
        ok &= args[r].ok;
    }
    for (int r = 0; r < NRANKS; r++)
        BT_TEST_OK(ncclCommDestroy(comms[r]));
    BT_TEST_CHECK(ok, "a rank failed (see above)");
    printf("rma threads: %d ranks on 2 hosts, %d puts each, exact\n", NRANKS, ROUNDS);
    return 0;
}
