/*
 * Two threads on one bootstrap, as the GPU watcher and the user's thread use a GPU
 * communicator's (core/arrival.c). On every rank a receiving thread waits in recv for tag 13
 * from each peer, while a polling thread takes tag 12 from each peer with bt_bootstrap_poll
 * and only then sends its tag 13s: if the waiting recv kept the bootstrap to itself, no rank
 * would poll, send or get anything (the test would time out). Ranks are threads of this
 * process (no fork), so `make tsan` checks the bootstrap's lock.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "harness.h"

#define NRANKS 4

static unsigned char id[BT_UNIQUE_ID_BYTES];

struct rank_state {
    struct bt_bootstrap *bs;
    int rank, polled, received;
};

static void *poll_thread(void *p)
{
    struct rank_state *st = p;
    int32_t v;
    for (int spins = 0; st->polled < NRANKS - 1 && spins < 20000; spins++) {
        int from = bt_bootstrap_poll(st->bs, 12, &v, sizeof(v));
        if (from < 0) {
            usleep(500);
            continue;
        }
        BT_TEST_CHECK(v == from * 100 + st->rank, "rank %d: tag 12 from %d is %d", st->rank, from,
                      v);
        st->polled++;
    }
    for (int r = 0; r < NRANKS && st->polled == NRANKS - 1; r++) {
        int32_t mine = st->rank * 100 + r;
        if (r != st->rank)
            BT_TEST_OK(bt_bootstrap_send(st->bs, r, 13, &mine, sizeof(mine)));
    }
    return NULL;
}

static void *recv_thread(void *p)
{
    struct rank_state *st = p;
    for (int r = 0; r < NRANKS; r++) {
        int32_t v = -1;
        if (r == st->rank)
            continue;
        BT_TEST_OK(bt_bootstrap_recv(st->bs, r, 13, &v, sizeof(v)));
        BT_TEST_CHECK(v == r * 100 + st->rank, "rank %d: tag 13 from %d is %d", st->rank, r, v);
        st->received++;
    }
    return NULL;
}

static void *rank_thread(void *arg)
{
    struct rank_state st = {.rank = (int)(intptr_t)arg};
    BT_TEST_OK(bt_bootstrap_init(id, st.rank, NRANKS, NULL, &st.bs));
    pthread_t recv_t, poll_t;
    BT_TEST_CHECK(pthread_create(&recv_t, NULL, recv_thread, &st) == 0, "pthread_create");
    usleep(20000); /* the receiver is waiting before anything comes */
    BT_TEST_CHECK(pthread_create(&poll_t, NULL, poll_thread, &st) == 0, "pthread_create");
    for (int r = 0; r < NRANKS; r++) {
        int32_t mine = st.rank * 100 + r;
        if (r != st.rank)
            BT_TEST_OK(bt_bootstrap_send(st.bs, r, 12, &mine, sizeof(mine)));
    }
    pthread_join(poll_t, NULL);
    pthread_join(recv_t, NULL);
    BT_TEST_CHECK(st.polled == NRANKS - 1 && st.received == NRANKS - 1,
                  "rank %d: polled %d and received %d of %d", st.rank, st.polled, st.received,
                  NRANKS - 1);
    BT_TEST_OK(bt_bootstrap_barrier(st.bs));
    bt_bootstrap_destroy(st.bs);
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
