/*
 * Two threads on one bootstrap, as the GPU watcher and the user's thread use a GPU
 * communicator's (core/arrival.c): on every rank one thread polls for tag 12 while the other
 * waits in recv for tag 13, and each gets every peer's message of its own tag, whichever of
 * them took the connection in. Ranks are threads of this process (no fork), so `make tsan`
 * checks the bootstrap's lock.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "harness.h"

#define NRANKS 4

static unsigned char id[BT_UNIQUE_ID_BYTES];

struct poller {
    struct bt_bootstrap *bs;
    int rank, got;
};

static void *poll_thread(void *p)
{
    struct poller *pl = p;
    int32_t v;
    for (int spins = 0; pl->got < NRANKS - 1 && spins < 10000; spins++) {
        int from = bt_bootstrap_poll(pl->bs, 12, &v, sizeof(v));
        if (from < 0) {
            usleep(1000);
            continue;
        }
        BT_TEST_CHECK(v == from * 100 + pl->rank, "rank %d: tag 12 from %d is %d", pl->rank, from,
                      v);
        pl->got++;
    }
    return NULL;
}

static void *rank_thread(void *arg)
{
    int rank = (int)(intptr_t)arg;
    struct bt_bootstrap *bs;
    BT_TEST_OK(bt_bootstrap_init(id, rank, NRANKS, NULL, &bs));
    struct poller pl = {.bs = bs, .rank = rank};
    pthread_t t;
    BT_TEST_CHECK(pthread_create(&t, NULL, poll_thread, &pl) == 0, "pthread_create");
    for (int round = 0; round < 3; round++) {
        for (int r = 0; r < NRANKS; r++) {
            int32_t mine = rank * 100 + r;
            if (r == rank)
                continue;
            if (round == 0) /* the poller's, once */
                BT_TEST_OK(bt_bootstrap_send(bs, r, 12, &mine, sizeof(mine)));
            BT_TEST_OK(bt_bootstrap_send(bs, r, 13, &mine, sizeof(mine)));
        }
        for (int r = 0; r < NRANKS; r++) {
            int32_t v = -1;
            if (r == rank)
                continue;
            BT_TEST_OK(bt_bootstrap_recv(bs, r, 13, &v, sizeof(v)));
            BT_TEST_CHECK(v == r * 100 + rank, "rank %d: tag 13 from %d is %d", rank, r, v);
        }
    }
    pthread_join(t, NULL);
    BT_TEST_CHECK(pl.got == NRANKS - 1, "rank %d: the polling thread got %d of %d", rank, pl.got,
                  NRANKS - 1);
    BT_TEST_OK(bt_bootstrap_barrier(bs));
    bt_bootstrap_destroy(bs);
    return NULL;
}

int main(void)
{
    BT_TEST_OK(bt_bootstrap_unique_id(id));
    pthread_t t[NRANKS];
    for (int r = 0; r < NRANKS; r++)
        BT_TEST_CHECK(pthread_create(&t[r], NULL, rank_thread, (void *)(intptr_t)r) == 0,
                      "pthread_create");
    for (int r = 0; r < NRANKS; r++)
        pthread_join(t[r], NULL);
    bt_bootstrap_root_wait(id);
    printf("bootstrap threads: ok\n");
    return 0;
}
