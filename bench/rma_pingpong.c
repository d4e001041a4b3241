/*
 * One-sided put + signal against send/recv, host memory, 2 ranks: the half round trip of a
 * ping-pong of each, by size.
 *
 *   build/bin/baton-run -n 2 build/bin/baton-rma-pingpong [maxbytes]
 *   build/bin/baton-run -n 2 sh -c 'NCCL_HOSTID=h$BATON_RANK exec build/bin/baton-rma-pingpong'
 *
 * The first runs on one host (puts copy into the peer's mapped ncclMemAlloc window), the
 * second makes the two ranks different hosts (puts travel the one-sided network link, send
 * and recv the NET transport, both over the same sockets). Rank 0 puts `bytes` into rank 1's
 * window and signals; rank 1 waits for the signal and puts back; 1000 round trips (100 above
 * 1 MB) after 20 warm-up ones, timed on rank 0; the same with ncclSend/ncclRecv. Every
 * round's data is checked on arrival. Prints "bytes put_us sendrecv_us" (half round trips).
 */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank = -1;

#define NCCL_CHECK(call)                                                                           \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "baton-rma-pingpong: rank %d: %s failed: %s (%d)\n", rank, #call,     \
                    ncclGetErrorString(r_), (int)r_);                                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int bad;

/* Round k's byte pattern from rank r. */
static unsigned char pattern(int r, int k, size_t i)
{
    return (unsigned char)(r * 31 + k * 7 + (int)(i % 251));
}

static void fill(unsigned char *b, size_t n, int k)
{
    for (size_t i = 0; i < n; i += 4096)
        b[i] = pattern(rank, k, i);
    if (n)
        b[n - 1] = pattern(rank, k, n - 1);
}

static void check(const unsigned char *b, size_t n, int k, const char *what)
{
    int peer = 1 - rank;
    for (size_t i = 0; i < n && !bad; i += 4096)
        bad |= b[i] != pattern(peer, k, i);
    if (n && !bad)
        bad |= b[n - 1] != pattern(peer, k, n - 1);
    if (bad)
        fprintf(stderr, "baton-rma-pingpong: rank %d: %s round %d of %zu bytes wrong\n", rank,
                what, k, n);
}

int main(int argc, char **argv)
{
    const char *r = getenv("BATON_RANK"), *n = getenv("BATON_NRANKS");
    if (!r || !n || atoi(n) != 2) {
        fprintf(stderr, "usage: baton-run -n 2 baton-rma-pingpong [maxbytes]\n");
        return 2;
    }
    rank = atoi(r);
    setenv("BATON_DEVICE", "cpu", 0);
    size_t maxb = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)4 << 20;
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    ncclComm_t comm;
    NCCL_CHECK(ncclCommInitRank(&comm, 2, id, rank));
    unsigned char *win_buf, *src = malloc(maxb), *dst = malloc(maxb);
    NCCL_CHECK(ncclMemAlloc((void **)&win_buf, maxb));
    ncclWindow_t win;
    NCCL_CHECK(ncclCommWindowRegister(comm, win_buf, maxb, &win, NCCL_WIN_COLL_SYMMETRIC));
    int peer = 1 - rank;
    ncclWaitSignalDesc_t from_peer = {.opCnt = 1, .peer = peer};
    if (rank == 0)
        printf("# %10s %12s %14s\n", "bytes", "put_us", "sendrecv_us");
    for (size_t bytes = 8; bytes <= maxb; bytes *= 4) {
        int iters = bytes > (1u << 20) ? 100 : 1000, warm = 20;
        double t0 = 0, put_us, sr_us;
        for (int k = 0; k < warm + iters; k++) {
            if (k == warm)
                t0 = now_us();
            fill(src, bytes, k);
            if (rank == 0) {
                NCCL_CHECK(ncclPutSignal(src, bytes, ncclUint8, peer, win, 0, 0, 0, 0, comm, NULL));
                NCCL_CHECK(ncclWaitSignal(1, &from_peer, comm, NULL));
                check(win_buf, bytes, k, "put");
            } else {
                NCCL_CHECK(ncclWaitSignal(1, &from_peer, comm, NULL));
                check(win_buf, bytes, k, "put");
                NCCL_CHECK(ncclPutSignal(src, bytes, ncclUint8, peer, win, 0, 0, 0, 0, comm, NULL));
            }
        }
        put_us = (now_us() - t0) / iters / 2;
        for (int k = 0; k < warm + iters; k++) {
            if (k == warm)
                t0 = now_us();
            fill(src, bytes, k);
            if (rank == 0) {
                NCCL_CHECK(ncclSend(src, bytes, ncclUint8, peer, comm, NULL));
                NCCL_CHECK(ncclRecv(dst, bytes, ncclUint8, peer, comm, NULL));
            } else {
                NCCL_CHECK(ncclRecv(dst, bytes, ncclUint8, peer, comm, NULL));
                NCCL_CHECK(ncclSend(src, bytes, ncclUint8, peer, comm, NULL));
            }
            check(dst, bytes, k, "recv");
        }
        sr_us = (now_us() - t0) / iters / 2;
        if (rank == 0)
            printf("  %10zu %12.2f %14.2f\n", bytes, put_us, sr_us);
    }
    float z = 0;
    NCCL_CHECK(ncclAllReduce(&z, &z, 1, ncclFloat, ncclSum, comm, NULL));
    NCCL_CHECK(ncclCommWindowDeregister(comm, win));
    NCCL_CHECK(ncclMemFree(win_buf));
    NCCL_CHECK(ncclCommDestroy(comm));
    free(src);
    free(dst);
    if (rank == 0)
        printf("# %s\n", bad ? "WRONG results" : "all rounds checked");
    return bad;
}
