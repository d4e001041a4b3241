/*
 * The libfabric network backend (net/ofi/) through its v11 table, over tcp;ofi_rxm on
 * loopback, both ends in one process as threads (no fork):
 *  - init, devices, getProperties; init twice, finalize twice;
 *  - connect completes before accept is ever called (Baton accepts only once every rank has
 *    connected), accept then, both tolerating NULL-comm rounds;
 *  - OFI_NEPS 1 and 4 (a message of 64 KB or more is cut into one piece per endpoint),
 *    with buffers registered by regMr and with mhandle NULL: sizes 0, 1, 7, 64 KB + 3,
 *    8 MB + 5, then 200 messages of mixed sizes with up to 8 in flight, two streams each
 *    way at once (four threads, four comms of one domain), received into larger buffers
 *    (the real size is reported), data checked byte by byte;
 *  - registrations: many at once in one domain (requested keys must differ: FI_ENOKEY),
 *    CUDA and DMA-BUF refused without FI_HMEM;
 *  - a message larger than its receive is an error (provider truncation, and the split
 *    header's check);
 *  - at most NCCL_NET_MAX_REQUESTS in flight; iflush gives no request;
 *  - no fd or thread left at the end.
 * CI installs libfabric: without it (or without a device) the test fails, unless
 * BATON_TEST_ALLOW_NO_OFI=1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "net/net.h"
#include "net/ofi/ofi.h"
#include "util/time.h"

#ifdef BATON_HAVE_OFI

static const ncclNet_v11_t *net;
static void *ctx;

static double now_s(void)
{
    return (double)bt_time_ns() / 1e9;
}

static unsigned char pattern(uint64_t stream, uint64_t msg, size_t j)
{
    return (unsigned char)(stream * 29u + msg * 131u + j * 7u + (j >> 12) + 1u);
}

struct pair {
    void *send, *recv;
};

/* listen, connect to the end, then accept (Baton's order), then close the listener. */
static void pair_open(int neps, struct pair *p)
{
    unsigned char handle[BT_NET_HANDLE_BYTES];
    void *listen = NULL;
    bt_net_ofi_neps_set(neps);
    BT_TEST_OK(net->listen(ctx, 0, handle, &listen));
    BT_TEST_CHECK(listen != NULL, "listen gave no comm");
    p->send = p->recv = NULL;
    double t0 = now_s();
    while (p->send == NULL) {
        BT_TEST_OK(net->connect(ctx, 0, handle, &p->send, NULL));
        BT_TEST_CHECK(now_s() - t0 < 5, "connect did not finish in 5 s without an accept");
    }
    while (p->recv == NULL) {
        BT_TEST_OK(net->accept(listen, &p->recv, NULL));
        BT_TEST_CHECK(now_s() - t0 < 5, "accept did not finish in 5 s");
    }
    void *again = NULL;
    BT_TEST_CHECK(net->accept(listen, &again, NULL) != ncclSuccess && again == NULL,
                  "a second accept on one listener succeeded");
    BT_TEST_OK(net->closeListen(listen));
}

static void pair_close(struct pair *p)
{
    BT_TEST_OK(net->closeSend(p->send));
    BT_TEST_OK(net->closeRecv(p->recv));
}

/* One side of a stream of messages: posts up to `window` at once, tests in order. */
struct stream {
    void *comm;
    int id; /* for the data pattern */
    int is_send;
    int reg; /* regMr each buffer (else mhandle NULL) */
    int nmsg;
    const size_t *sizes;
    const size_t *extra; /* receive: post this many bytes more than the message */
    int window;
    ncclResult_t expect; /* ncclSuccess, or what test() must end with */
    size_t bytes;
};

static void *stream_run(void *arg)
{
    struct stream *s = arg;
    void *reqs[8], *mhs[8];
    unsigned char *bufs[8];
    int posted = 0, done = 0;
    double t0 = now_s();
    while (done < s->nmsg) {
        BT_TEST_CHECK(now_s() - t0 < 60, "%s stream %d stuck at message %d of %d",
                      s->is_send ? "send" : "recv", s->id, done, s->nmsg);
        if (posted < s->nmsg && posted - done < s->window) {
            size_t size = s->sizes[posted];
            size_t cap = s->is_send ? size : size + s->extra[posted];
            unsigned char *b = malloc(cap ? cap : 1);
            BT_TEST_CHECK(b != NULL, "malloc %zu", cap);
            if (s->is_send)
                for (size_t j = 0; j < size; j++)
                    b[j] = pattern((uint64_t)s->id, (uint64_t)posted, j);
            else
                memset(b, 0xee, cap);
            void *mh = NULL, *r = NULL;
            if (s->reg)
                BT_TEST_OK(net->regMr(s->comm, b, cap, NCCL_PTR_HOST, &mh));
            ncclResult_t st;
            if (s->is_send) {
                st = net->isend(s->comm, b, size, 0, mh, NULL, &r);
            } else {
                void *data[1] = {b};
                size_t sizes[1] = {cap};
                int tags[1] = {0};
                void *mhandles[1] = {mh};
                st = net->irecv(s->comm, 1, data, sizes, tags, mhandles, NULL, &r);
            }
            BT_TEST_OK(st);
            if (r == NULL) {
                if (mh)
                    BT_TEST_OK(net->deregMr(s->comm, mh));
                free(b);
            } else {
                reqs[posted % 8] = r;
                bufs[posted % 8] = b;
                mhs[posted % 8] = mh;
                posted++;
                continue;
            }
        }
        if (done == posted)
            continue;
        int d = 0, got = -1;
        ncclResult_t st = net->test(reqs[done % 8], &d, &got);
        if (st != ncclSuccess) {
            BT_TEST_CHECK(st == s->expect, "%s stream %d: test of message %d returned %d",
                          s->is_send ? "send" : "recv", s->id, done, st);
            for (int k = done; k < posted; k++) {
                if (mhs[k % 8])
                    BT_TEST_OK(net->deregMr(s->comm, mhs[k % 8]));
                free(bufs[k % 8]);
            }
            return NULL;
        }
        if (!d)
            continue;
        size_t size = s->sizes[done];
        BT_TEST_CHECK(got >= 0 && (size_t)got == size,
                      "stream %d message %d: size %d, expected %zu", s->id, done, got, size);
        if (!s->is_send) {
            unsigned char *b = bufs[done % 8];
            for (size_t j = 0; j < size; j++)
                BT_TEST_CHECK(b[j] == pattern((uint64_t)s->id, (uint64_t)done, j),
                              "stream %d message %d (%zu bytes) byte %zu: %u, expected %u", s->id,
                              done, size, j, b[j], pattern((uint64_t)s->id, (uint64_t)done, j));
            for (size_t j = size; j < size + s->extra[done]; j++)
                BT_TEST_CHECK(b[j] == 0xee, "stream %d message %d: byte %zu past the end written",
                              s->id, done, j);
        }
        s->bytes += size;
        if (mhs[done % 8])
            BT_TEST_OK(net->deregMr(s->comm, mhs[done % 8]));
        free(bufs[done % 8]);
        done++;
    }
    BT_TEST_CHECK(s->expect == ncclSuccess, "expected error %d never came", s->expect);
    return NULL;
}

/* The messages sizes[] on each pair at once, each from its own sending thread to its own
 * receiving thread. Returns the seconds it took. */
static double transfer(struct pair *p, int npairs, const size_t *sizes, const size_t *extra, int n,
                       int window, int reg)
{
    struct stream st[4];
    pthread_t th[4];
    double t0 = now_s();
    for (int i = 0; i < 2 * npairs; i++) {
        st[i] = (struct stream){.comm = i % 2 ? p[i / 2].recv : p[i / 2].send,
                                .id = i / 2,
                                .is_send = i % 2 == 0,
                                .reg = reg,
                                .nmsg = n,
                                .sizes = sizes,
                                .extra = extra,
                                .window = window};
        BT_TEST_CHECK(pthread_create(&th[i], NULL, stream_run, &st[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 2 * npairs; i++)
        pthread_join(th[i], NULL);
    return now_s() - t0;
}

static void test_props(void)
{
    int ndev = 0;
    BT_TEST_OK(net->devices(&ndev));
    BT_TEST_CHECK(ndev >= 1, "%d devices", ndev);
    ncclNetProperties_v11_t pr;
    BT_TEST_OK(net->getProperties(0, &pr));
    BT_TEST_CHECK(pr.name && strcmp(pr.name, "lo") == 0, "device 0 is %s, expected lo",
                  pr.name ? pr.name : "(null)");
    BT_TEST_CHECK(pr.pciPath == NULL, "lo has a PCI path %s", pr.pciPath);
    BT_TEST_CHECK(pr.ptrSupport == NCCL_PTR_HOST, "ptrSupport 0x%x", pr.ptrSupport);
    BT_TEST_CHECK(pr.speed > 0 && pr.maxComms == 65536 && pr.maxRecvs == 1,
                  "speed %d maxComms %d maxRecvs %d", pr.speed, pr.maxComms, pr.maxRecvs);
    BT_TEST_CHECK(pr.regIsGlobal == 0 && pr.forceFlush == 0 && pr.latency == 0,
                  "regIsGlobal %d forceFlush %d", pr.regIsGlobal, pr.forceFlush);
    BT_TEST_CHECK(pr.netDeviceType == NCCL_NET_DEVICE_HOST && pr.vProps.ndevs == 1 &&
                      pr.vProps.devs[0] == 0,
                  "device type %d vProps %d", (int)pr.netDeviceType, pr.vProps.ndevs);
    BT_TEST_CHECK(pr.maxP2pBytes == (size_t)1 << 30 && pr.maxCollBytes == (size_t)1 << 30 &&
                      pr.maxMultiRequestSize == 1,
                  "maxP2pBytes %zu", pr.maxP2pBytes);
    BT_TEST_CHECK(net->getProperties(ndev, &pr) != ncclSuccess, "properties of device %d", ndev);
    BT_TEST_CHECK(bt_net_ofi.ext.zero_copy_safe && bt_net_ofi.ext.zero_copy_safe(0) == 1,
                  "tcp;ofi_rxm registrations pin nothing: zero-copy must be safe");
    ncclNetVDeviceProps_v11_t vp = {.ndevs = 1, .devs = {0}};
    int vd = -1;
    BT_TEST_OK(net->makeVDevice(&vd, &vp));
    BT_TEST_CHECK(vd == 0, "virtual device of device 0 is %d", vd);
    printf("properties: %d device(s), 0 is %s at %d Mbps: ok\n", ndev, pr.name, pr.speed);
}

static void test_neps(int neps, int reg)
{
    double t0 = now_s();
    struct pair p[2];
    pair_open(neps, &p[0]);
    pair_open(neps, &p[1]);
    double t_open = now_s() - t0;

    static const size_t basic[] = {0, 1, 7, 65536 + 3, (8u << 20) + 5};
    static const size_t basic_extra[] = {0, 0, 1, 4096, 3};
    double t1 = transfer(p, 1, basic, basic_extra, 5, 1, reg);
    double t8 = transfer(p, 2, basic, basic_extra, 5, 8, reg);

    enum { N = 200 };
    size_t sizes[N], extra[N], total = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        static const size_t classes[] = {0, 1, 100, 4096, 65535, 65536, 200000, 1u << 20};
        size_t c = classes[x % 8];
        sizes[i] = c < 4096 ? c : c + (size_t)((x >> 8) % 3000); /* odd sizes around each */
        extra[i] = (x >> 20) % 4 == 0 ? 0 : (size_t)((x >> 24) % 70000);
        total += sizes[i];
    }
    double tm = transfer(p, 2, sizes, extra, N, 8, reg);
    pair_close(&p[0]);
    pair_close(&p[1]);
    printf("OFI_NEPS=%d, %s: ok (open %.3f s, basic %.3f s one at a time, %.3f s 8 in flight x4 "
           "streams; 200 mixed x4 streams %.3f s, %.0f MB/s in all) %.2f s\n",
           neps, reg ? "regMr'd buffers" : "mhandle NULL", t_open, t1, t8, tm,
           4.0 * (double)total / tm / 1e6, now_s() - t0);
}

static void test_registrations(void)
{
    struct pair p;
    pair_open(1, &p);
    enum { NREG = 16 };
    static char bufs[NREG][4096];
    void *mh[2][NREG];
    for (int i = 0; i < NREG; i++) {
        BT_TEST_OK(net->regMr(p.send, bufs[i], sizeof(bufs[i]), NCCL_PTR_HOST, &mh[0][i]));
        BT_TEST_OK(net->regMr(p.recv, bufs[i], sizeof(bufs[i]), NCCL_PTR_HOST, &mh[1][i]));
    }
    void *m = &m;
    BT_TEST_CHECK(net->regMr(p.send, bufs[0], 64, NCCL_PTR_CUDA, &m) == ncclInternalError,
                  "regMr of CUDA memory without FI_HMEM did not fail");
    BT_TEST_CHECK(net->regMrDmaBuf(p.send, bufs[0], 64, NCCL_PTR_CUDA, 0, -1, &m) ==
                      ncclInternalError,
                  "regMrDmaBuf of CUDA memory did not fail");
    BT_TEST_OK(net->regMrDmaBuf(p.send, bufs[0], 64, NCCL_PTR_HOST, 0, -1, &m));
    BT_TEST_OK(net->deregMr(p.send, m));
    for (int i = 0; i < NREG; i++) {
        BT_TEST_OK(net->deregMr(p.send, mh[0][i]));
        BT_TEST_OK(net->deregMr(p.recv, mh[1][i]));
    }
    pair_close(&p);
    printf("registrations: %d at once in one domain, CUDA and DMA-BUF refused: ok\n", 2 * NREG);
}

/* A message of `ssize` bytes into a receive of `rsize`: the receive fails. */
static void test_too_large(int neps, size_t ssize, size_t rsize)
{
    struct pair p;
    pair_open(neps, &p);
    char *sbuf = calloc(1, ssize), *rbuf = calloc(1, rsize);
    void *sr = NULL, *rr = NULL;
    BT_TEST_OK(net->isend(p.send, sbuf, ssize, 0, NULL, NULL, &sr));
    void *data[1] = {rbuf};
    size_t sizes[1] = {rsize};
    int tags[1] = {0};
    BT_TEST_OK(net->irecv(p.recv, 1, data, sizes, tags, NULL, NULL, &rr));
    BT_TEST_CHECK(sr && rr, "requests %p %p", sr, rr);
    int sd = 0, rd = 0;
    ncclResult_t rst = ncclSuccess;
    double t0 = now_s();
    while (rst == ncclSuccess && now_s() - t0 < 5) {
        if (!sd)
            BT_TEST_OK(net->test(sr, &sd, NULL)); /* the sender may finish, or not */
        rst = net->test(rr, &rd, NULL);
        BT_TEST_CHECK(!rd, "a %zu-byte message fit a %zu-byte receive", ssize, rsize);
    }
    BT_TEST_CHECK(rst == ncclInternalError || rst == ncclRemoteError,
                  "receive of a too large message returned %d", rst);
    pair_close(&p);
    free(sbuf);
    free(rbuf);
    printf("%zu bytes into %zu (OFI_NEPS=%d): error %d, ok\n", ssize, rsize, neps, rst);
}

static void test_in_flight_limit(void)
{
    struct pair p;
    pair_open(1, &p);
    char buf[16];
    void *r[NCCL_NET_MAX_REQUESTS + 1];
    void *data[1] = {buf};
    size_t sizes[1] = {sizeof(buf)};
    int tags[1] = {0};
    for (int i = 0; i <= NCCL_NET_MAX_REQUESTS; i++)
        BT_TEST_OK(net->irecv(p.recv, 1, data, sizes, tags, NULL, NULL, &r[i]));
    for (int i = 0; i < NCCL_NET_MAX_REQUESTS; i++)
        BT_TEST_CHECK(r[i] != NULL, "receive %d refused", i);
    BT_TEST_CHECK(r[NCCL_NET_MAX_REQUESTS] == NULL, "receive %d accepted", NCCL_NET_MAX_REQUESTS);
    void *f = &f;
    int fsize = sizeof(buf);
    BT_TEST_OK(net->iflush(p.recv, 1, data, &fsize, NULL, &f));
    BT_TEST_CHECK(f == NULL, "a flush of host memory gave a request (nothing to flush)");
    pair_close(&p); /* with 32 receives posted */
    printf("in-flight limit and flush: ok\n");
}

/* An idle receiver can sleep in poll() on what pollfds gives: nothing comes, the poll times
 * out; a message sent, the descriptor wakes it (the receive itself untested meanwhile). */
static void test_pollfds(void)
{
    struct pair p;
    pair_open(1, &p);
    static char sbuf[100], rbuf[100];
    memset(sbuf, 0x5a, sizeof(sbuf));
    void *sr = NULL, *rr = NULL, *data[1] = {rbuf};
    size_t sizes[1] = {sizeof(rbuf)};
    int tags[1] = {0}, d = 0;
    BT_TEST_OK(net->irecv(p.recv, 1, data, sizes, tags, NULL, NULL, &rr));
    struct pollfd fds[4];
    int k = -1;
    double t0 = now_s();
    while ((k = bt_net_ofi.ext.pollfds(p.recv, fds, 4)) < 0) { /* the hello, the post */
        BT_TEST_OK(net->test(rr, &d, NULL));
        BT_TEST_CHECK(now_s() - t0 < 2, "pollfds still says 'work now' after 2 s");
    }
    BT_TEST_CHECK(k == 1 && fds[0].fd >= 0 && fds[0].events == POLLIN,
                  "tcp;ofi_rxm's CQ has a wait descriptor: pollfds gave %d", k);
    double tp = now_s();
    BT_TEST_CHECK(poll(fds, 1, 100) == 0 && now_s() - tp > 0.09,
                  "an idle comm's descriptor is ready (poll returned early)");
    BT_TEST_OK(net->isend(p.send, sbuf, sizeof(sbuf), 0, NULL, NULL, &sr));
    int woke = 0, sd = 0;
    t0 = now_s();
    while (!woke && now_s() - t0 < 2) {
        if (!sd)
            BT_TEST_OK(net->test(sr, &sd, NULL));
        woke = poll(fds, 1, 10) > 0;
    }
    double t_wake = now_s() - t0;
    BT_TEST_CHECK(woke, "the descriptor did not wake in 2 s for a message sent");
    for (t0 = now_s(); !d || !sd;) {
        BT_TEST_CHECK(now_s() - t0 < 5, "message not done in 5 s");
        if (!sd)
            BT_TEST_OK(net->test(sr, &sd, NULL));
        if (!d)
            BT_TEST_OK(net->test(rr, &d, NULL));
    }
    BT_TEST_CHECK(memcmp(rbuf, sbuf, sizeof(rbuf)) == 0, "the message's bytes");
    pair_close(&p);
    printf("pollfds: an idle comm blocks, a message wakes it (%.1f ms): ok\n", t_wake * 1e3);
}

/* Wait up to `s` seconds for a request: "done", "error N" or "pending". */
static const char *wait_req(void *r, double s, char *buf, size_t len)
{
    double t0 = now_s();
    int d = 0;
    while (now_s() - t0 < s) {
        ncclResult_t st = net->test(r, &d, NULL);
        if (st != ncclSuccess) {
            snprintf(buf, len, "error %d after %.2f s", st, now_s() - t0);
            return buf;
        }
        if (d) {
            snprintf(buf, len, "done after %.3f s", now_s() - t0);
            return buf;
        }
    }
    return "pending";
}

/* The receiver closes: what its sender sees is reported, not required (a request that
 * never completes is allowed: Baton's deadlines and liveness checks end the wait). Then a
 * new pair on the same device still works. */
static void test_dead_peer(void)
{
    struct pair p;
    pair_open(1, &p);
    static char small[100], big[4 << 20], rbuf[4 << 20];
    void *sr = NULL, *rr = NULL, *data[1] = {rbuf};
    size_t sizes[1] = {sizeof(rbuf)};
    int tags[1] = {0};
    char b1[64], b2[64];
    BT_TEST_OK(net->isend(p.send, big, sizeof(big), 0, NULL, NULL, &sr));
    BT_TEST_OK(net->irecv(p.recv, 1, data, sizes, tags, NULL, NULL, &rr));
    int sd = 0, rd = 0;
    double t0 = now_s();
    while (!sd || !rd) { /* the rendezvous needs both ends to progress */
        if (!sd)
            BT_TEST_OK(net->test(sr, &sd, NULL));
        if (!rd)
            BT_TEST_OK(net->test(rr, &rd, NULL));
        BT_TEST_CHECK(now_s() - t0 < 5, "warm-up message not done in 5 s");
    }
    BT_TEST_OK(net->closeRecv(p.recv));
    BT_TEST_OK(net->isend(p.send, small, sizeof(small), 0, NULL, NULL, &sr));
    const char *small_res = wait_req(sr, 1, b1, sizeof(b1));
    BT_TEST_OK(net->isend(p.send, big, sizeof(big), 0, NULL, NULL, &sr));
    const char *big_res = wait_req(sr, 2, b2, sizeof(b2));
    BT_TEST_OK(net->closeSend(p.send));
    printf("dead receiver: a 100-byte send is %s, a 4 MB send is %s\n", small_res, big_res);
    static const size_t one[] = {65536 + 3};
    static const size_t none[] = {0};
    pair_open(1, &p);
    transfer(&p, 1, one, none, 1, 1, 0);
    pair_close(&p);
    printf("dead receiver: a new pair works after it: ok\n");
}

int main(void)
{
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    setenv("FI_TCP_IFACE", "lo", 1);
    setenv("BATON_SOCKET_IFNAME", "lo", 1);
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    double t0 = now_s();
    net = bt_net_ofi.v11;
    BT_TEST_CHECK(strcmp(net->name, "OFI") == 0, "name %s", net->name);
    BT_TEST_OK(net->init(&ctx, 1, NULL, NULL, NULL));
    void *ctx2 = NULL;
    BT_TEST_OK(net->init(&ctx2, 2, NULL, NULL, NULL));
    int ndev = 0;
    BT_TEST_OK(net->devices(&ndev));
    if (ndev == 0) {
        const char *allow = getenv("BATON_TEST_ALLOW_NO_OFI");
        printf("%s: no OFI device (libfabric.so.1 missing, or no tcp;ofi_rxm on lo)\n",
               allow && atoi(allow) ? "skipped" : "FAILED");
        BT_TEST_OK(net->finalize(ctx2));
        BT_TEST_OK(net->finalize(ctx));
        return allow && atoi(allow) ? 0 : 1;
    }
    test_props();
    test_registrations();
    test_in_flight_limit();
    test_pollfds();
    for (int neps = 1; neps <= 4; neps += 3) {
        test_neps(neps, 1);
        test_neps(neps, 0);
        test_too_large(neps, 1000, 10);               /* the provider truncates */
        test_too_large(neps, (1u << 20) + 1, 300000); /* neps 4: the split header */
    }
    test_dead_peer();
    BT_TEST_OK(net->finalize(ctx2));
    BT_TEST_OK(net->finalize(ctx));
    bt_net_ofi_neps_set(0);
    bt_test_leaks_end(&leaks);
    printf("test_net_ofi: all ok, %.2f s\n", now_s() - t0);
    return 0;
}

#else /* !BATON_HAVE_OFI */

int main(void)
{
    const char *allow = getenv("BATON_TEST_ALLOW_NO_OFI");
    printf("%s: Baton was built without libfabric's headers (no OFI backend)\n",
           allow && atoi(allow) ? "skipped" : "FAILED");
    return allow && atoi(allow) ? 0 : 1;
}

#endif
