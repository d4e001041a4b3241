/*
 * The socket network backend (net/socket/) through its ops table, both ends in one process
 * as two threads (no fork, so TSan can run it):
 *  - helper configurations 0x1, 1x1, 1x2, 2x1, 2x2, 4x4 (threads x sockets per thread), set
 *    with bt_net_socket_config_set: sizes 0, 1, 7, 64 KB + 3, 8 MB + 5, then 64 messages of
 *    mixed sizes with up to 8 in flight, received into larger buffers (the real size is
 *    reported), data checked byte by byte;
 *  - a message larger than the posted receive is an error;
 *  - SOCKET_DELAY_US: completions are late but the data is right;
 *  - SOCKET_FAIL_AFTER_BYTES: the receiver gets BT_ERR_REMOTE within a second;
 *  - a garbage connection to the listener is dropped, and a real one still works;
 *  - stalled strangers (silent, half a header) do not hold up a real peer and are dropped
 *    when their header is 5 s late;
 *  - idle helper threads use < 10 ms of CPU in 1 s; they carry their names;
 *  - no fd or thread left at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "net/net.h"
#include "net/socket/socket.h"
#include "util/time.h"

/* The backend's v11 table, called the way transport/net.c calls it (one buffer per irecv,
 * tag 0, the registration token of the buffer), behind short names. */
static const ncclNet_v11_t *t11;
static void *net_ctx;

static bt_status_t w_init(int *ndev)
{
    t11 = bt_net_socket.v11;
    BT_TEST_CHECK(t11->init(&net_ctx, 1, NULL, bt_net_log, NULL) == ncclSuccess, "init");
    return bt_net_status(t11->devices(ndev));
}
static bt_status_t w_listen(int dev, void *h, void **l)
{
    return bt_net_status(t11->listen(net_ctx, dev, h, l));
}
static bt_status_t w_connect(int dev, const void *h, void **s)
{
    return bt_net_status(t11->connect(net_ctx, dev, (void *)(uintptr_t)h, s, NULL));
}
static bt_status_t w_accept(void *l, void **r)
{
    return bt_net_status(t11->accept(l, r, NULL));
}
static bt_status_t w_isend(void *c, void *data, size_t size, void **r)
{
    void *mh = NULL;
    BT_TEST_CHECK(t11->regMr(c, data, size, NCCL_PTR_HOST, &mh) == ncclSuccess, "regMr");
    return bt_net_status(t11->isend(c, data, size, 0, mh, NULL, r));
}
static bt_status_t w_irecv(void *c, void *data, size_t size, void **r)
{
    int tag = 0;
    void *mh = NULL;
    return bt_net_status(t11->irecv(c, 1, &data, &size, &tag, &mh, NULL, r));
}
static bt_status_t w_iflush(void *c, void *data, size_t size, void **r)
{
    int n = (int)size;
    return bt_net_status(t11->iflush(c, 1, &data, &n, NULL, r));
}
static bt_status_t w_test(void *r, int *done, size_t *size)
{
    int s = -1;
    bt_status_t st = bt_net_status(t11->test(r, done, &s));
    if (size)
        *size = s < 0 ? 0 : (size_t)s;
    return st;
}
static void w_close_send(void *c)
{
    t11->closeSend(c);
}
static void w_close_recv(void *c)
{
    t11->closeRecv(c);
}
static void w_close_listen(void *c)
{
    t11->closeListen(c);
}
static const struct {
    bt_status_t (*init)(int *);
    bt_status_t (*listen)(int, void *, void **);
    bt_status_t (*connect)(int, const void *, void **);
    bt_status_t (*accept)(void *, void **);
    bt_status_t (*isend)(void *, void *, size_t, void **);
    bt_status_t (*irecv)(void *, void *, size_t, void **);
    bt_status_t (*iflush)(void *, void *, size_t, void **);
    bt_status_t (*test)(void *, int *, size_t *);
    void (*close_send)(void *);
    void (*close_recv)(void *);
    void (*close_listen)(void *);
} wrap = {w_init,   w_listen, w_connect,    w_accept,     w_isend,       w_irecv,
          w_iflush, w_test,   w_close_send, w_close_recv, w_close_listen},
  *net = &wrap;

static double now_s(void)
{
    return (double)bt_time_ns() / 1e9;
}

static unsigned char pattern(uint64_t msg, size_t j)
{
    return (unsigned char)(msg * 131u + j * 7u + (j >> 12) + 1u);
}

struct pair {
    void *listen, *send, *recv;
};

static void pair_open(const struct bt_net_socket_config *cfg, struct pair *p)
{
    unsigned char handle[BT_NET_HANDLE_BYTES];
    int ndev = 0;
    bt_net_socket_config_set(cfg);
    BT_TEST_OK(net->init(&ndev));
    BT_TEST_CHECK(ndev >= 1, "ndev %d", ndev);
    BT_TEST_OK(net->listen(0, handle, &p->listen));
    p->send = p->recv = NULL;
    double t0 = now_s();
    while (p->send == NULL || p->recv == NULL) {
        if (p->send == NULL)
            BT_TEST_OK(net->connect(0, handle, &p->send));
        if (p->recv == NULL)
            BT_TEST_OK(net->accept(p->listen, &p->recv));
        BT_TEST_CHECK(now_s() - t0 < 5, "connect/accept did not finish in 5 s");
    }
}

static void pair_close(struct pair *p)
{
    net->close_send(p->send);
    net->close_recv(p->recv);
    net->close_listen(p->listen);
}

/* One side of a stream of messages: posts up to `window` at once, tests in order. */
struct stream {
    void *comm;
    int is_send;
    int nmsg;
    const size_t *sizes; /* message sizes */
    size_t extra;        /* receive: post this many bytes more than the message */
    int window;
    bt_status_t expect; /* BT_OK, or the error test() must end with */
    double err_time;    /* when the error was seen */
};

static void *stream_run(void *arg)
{
    struct stream *s = arg;
    void *reqs[8];
    unsigned char *bufs[8];
    int posted = 0, done = 0;
    double t0 = now_s();
    while (done < s->nmsg) {
        BT_TEST_CHECK(now_s() - t0 < 30, "%s stream stuck at message %d of %d",
                      s->is_send ? "send" : "recv", done, s->nmsg);
        if (posted < s->nmsg && posted - done < s->window) {
            size_t size = s->sizes[posted];
            size_t cap = s->is_send ? size : size + s->extra;
            unsigned char *b = malloc(cap ? cap : 1);
            BT_TEST_CHECK(b != NULL, "malloc %zu", cap);
            if (s->is_send)
                for (size_t j = 0; j < size; j++)
                    b[j] = pattern((uint64_t)posted, j);
            else
                memset(b, 0xee, cap);
            void *r = NULL;
            bt_status_t st =
                s->is_send ? net->isend(s->comm, b, size, &r) : net->irecv(s->comm, b, cap, &r);
            if (st != BT_OK && s->expect != BT_OK) {
                free(b);
                s->err_time = now_s();
                BT_TEST_CHECK(st == s->expect, "post returned %d, expected %d", st, s->expect);
                for (int k = done; k < posted; k++)
                    free(bufs[k % 8]);
                return NULL;
            }
            BT_TEST_OK(st);
            if (r == NULL) {
                free(b);
            } else {
                reqs[posted % 8] = r;
                bufs[posted % 8] = b;
                posted++;
                continue;
            }
        }
        if (done == posted)
            continue;
        int d = 0;
        size_t got = 0;
        bt_status_t st = net->test(reqs[done % 8], &d, &got);
        if (st != BT_OK) {
            BT_TEST_CHECK(st == s->expect, "%s test of message %d returned %d",
                          s->is_send ? "send" : "recv", done, st);
            s->err_time = now_s();
            for (int k = done; k < posted; k++)
                free(bufs[k % 8]);
            return NULL;
        }
        if (!d)
            continue;
        size_t size = s->sizes[done];
        BT_TEST_CHECK(got == size, "message %d: size %zu, expected %zu", done, got, size);
        if (!s->is_send) {
            unsigned char *b = bufs[done % 8];
            for (size_t j = 0; j < size; j++)
                BT_TEST_CHECK(b[j] == pattern((uint64_t)done, j),
                              "message %d (%zu bytes) byte %zu: %u, expected %u", done, size, j,
                              b[j], pattern((uint64_t)done, j));
            for (size_t j = size; j < size + s->extra; j++)
                BT_TEST_CHECK(b[j] == 0xee, "message %d: byte %zu past the end written", done, j);
        }
        free(bufs[done % 8]);
        done++;
    }
    BT_TEST_CHECK(s->expect == BT_OK, "expected error %d never came", s->expect);
    return NULL;
}

/* Send sizes[] from a thread while this thread receives them. */
static void transfer(struct pair *p, const size_t *sizes, int n, size_t extra, int window,
                     bt_status_t expect_send, bt_status_t expect_recv, struct stream *rs_p)
{
    struct stream ss = {.comm = p->send,
                        .is_send = 1,
                        .nmsg = n,
                        .sizes = sizes,
                        .window = window,
                        .expect = expect_send};
    struct stream rs = {.comm = p->recv,
                        .is_send = 0,
                        .nmsg = n,
                        .sizes = sizes,
                        .extra = extra,
                        .window = window,
                        .expect = expect_recv};
    pthread_t th;
    BT_TEST_CHECK(pthread_create(&th, NULL, stream_run, &ss) == 0, "pthread_create");
    stream_run(&rs);
    pthread_join(th, NULL);
    if (rs_p) {
        *rs_p = rs;
        rs_p->err_time = rs.err_time - ss.err_time; /* receiver's lag behind the sender */
    }
}

static struct bt_net_socket_config config(int nthreads, int nspt)
{
    struct bt_net_socket_config c = {.nthreads = nthreads,
                                     .nsocks_per_thread = nspt,
                                     .set_thread_name = 1,
                                     .delay_min_bytes = 65536};
    return c;
}

static void test_config(int nthreads, int nspt)
{
    double t0 = now_s();
    struct bt_net_socket_config cfg = config(nthreads, nspt);
    struct pair p;
    pair_open(&cfg, &p);
    static const size_t basic[] = {0, 1, 7, 65536 + 3, (8u << 20) + 5, 0, 1};
    transfer(&p, basic, 7, 0, 1, BT_OK, BT_OK, NULL);
    transfer(&p, basic, 7, 0, 8, BT_OK, BT_OK, NULL);
    size_t mixed[64];
    for (int i = 0; i < 64; i++)
        mixed[i] = (size_t)((i * 7919u) % 300000u) * (i % 4 != 0);
    transfer(&p, mixed, 64, 1000, 8, BT_OK, BT_OK, NULL);
    pair_close(&p);
    printf("config %dx%d (%d sockets): ok, %.2f s\n", nthreads, nspt,
           bt_net_socket_config_nsocks(&cfg), now_s() - t0);
}

static void test_too_large(void)
{
    struct bt_net_socket_config cfg = config(0, 1);
    struct pair p;
    pair_open(&cfg, &p);
    char sbuf[100] = {0}, rbuf[50];
    void *sr = NULL, *rr = NULL;
    BT_TEST_OK(net->isend(p.send, sbuf, sizeof(sbuf), &sr));
    BT_TEST_OK(net->irecv(p.recv, rbuf, sizeof(rbuf), &rr));
    BT_TEST_CHECK(sr && rr, "requests %p %p", sr, rr);
    int sd = 0, rd = 0;
    bt_status_t rst = BT_OK;
    double t0 = now_s();
    while (rst == BT_OK && now_s() - t0 < 5) {
        if (!sd)
            BT_TEST_OK(net->test(sr, &sd, NULL));
        rst = net->test(rr, &rd, NULL);
        BT_TEST_CHECK(!rd, "a 100-byte message fit a 50-byte receive");
    }
    BT_TEST_CHECK(rst == BT_ERR_INVALID_USAGE, "receive of a too large message returned %d", rst);
    pair_close(&p);
    printf("too large message: error %d, ok\n", rst);
}

static void test_in_flight_limit(void)
{
    struct bt_net_socket_config cfg = config(0, 1);
    struct pair p;
    pair_open(&cfg, &p);
    char buf[16];
    void *r[BT_NET_SOCKET_MAX_REQS + 1];
    for (int i = 0; i < BT_NET_SOCKET_MAX_REQS; i++) {
        BT_TEST_OK(net->irecv(p.recv, buf, sizeof(buf), &r[i]));
        BT_TEST_CHECK(r[i] != NULL, "receive %d refused", i);
    }
    BT_TEST_OK(net->irecv(p.recv, buf, sizeof(buf), &r[BT_NET_SOCKET_MAX_REQS]));
    BT_TEST_CHECK(r[BT_NET_SOCKET_MAX_REQS] == NULL, "receive %d accepted", BT_NET_SOCKET_MAX_REQS);
    void *f = &f;
    BT_TEST_OK(net->iflush(p.recv, buf, sizeof(buf), &f));
    BT_TEST_CHECK(f == NULL, "a flush of host memory gave a request (nothing to flush)");
    pair_close(&p);
    printf("in-flight limit and flush: ok\n");
}

static void test_delay(void)
{
    struct bt_net_socket_config cfg = config(1, 2);
    cfg.delay_us = 50000;
    struct pair p;
    pair_open(&cfg, &p);
    static const size_t sizes[] = {1 << 20, 100, (1 << 20) + 1, 3 << 20};
    double t0 = now_s();
    transfer(&p, sizes, 4, 0, 8, BT_OK, BT_OK, NULL);
    double el = now_s() - t0;
    /* three large messages, tested in order: at least 3 x 50 ms on each side */
    BT_TEST_CHECK(el >= 0.15, "delay injection had no effect: %.3f s", el);
    pair_close(&p);
    printf("delay injection: ok, %.3f s\n", el);
}

static void test_fail_after(int nthreads, int nspt)
{
    struct bt_net_socket_config cfg = config(nthreads, nspt);
    cfg.fail_after_bytes = 3 << 20;
    struct pair p;
    pair_open(&cfg, &p);
    size_t sizes[10];
    for (int i = 0; i < 10; i++)
        sizes[i] = 1 << 20;
    struct stream rs;
    transfer(&p, sizes, 10, 0, 4, BT_ERR_REMOTE, BT_ERR_REMOTE, &rs);
    BT_TEST_CHECK(rs.err_time < 1.0, "receiver saw the failure %.3f s after the sender",
                  rs.err_time);
    pair_close(&p);
    printf("fail after bytes %dx%d: BT_ERR_REMOTE on both ends, receiver %.3f s later, ok\n",
           nthreads, nspt, rs.err_time);
}

/* A listener with the one-channel config, and the raw address a stranger can dial. */
static void *listen_raw(unsigned char *handle, union bt_sockaddr *addr)
{
    struct bt_net_socket_config cfg = config(0, 1);
    bt_net_socket_config_set(&cfg);
    void *l = NULL;
    BT_TEST_OK(net->listen(0, handle, &l));
    memcpy(addr, handle + 16, sizeof(*addr)); /* struct sock_handle: tag, magic, addr */
    return l;
}

/* Connect a real peer to listener l (both ends driven here) within `limit` s of t0. */
static void connect_real(void *l, const unsigned char *handle, double t0, double limit,
                         const char *what, void **s, void **r)
{
    *s = *r = NULL;
    while (*s == NULL || *r == NULL) {
        if (*s == NULL)
            BT_TEST_OK(net->connect(0, handle, s));
        if (*r == NULL)
            BT_TEST_OK(net->accept(l, r));
        BT_TEST_CHECK(now_s() - t0 < limit, "%s", what);
    }
}

/* The far end of fd has closed it (or reset it). */
static int peer_closed(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void test_garbage(void)
{
    unsigned char handle[BT_NET_HANDLE_BYTES];
    union bt_sockaddr addr;
    void *l = listen_raw(handle, &addr);
    struct bt_socket_wait w = {.deadline = bt_time_ns() + 5000000000ull};
    int fd = -1;
    BT_TEST_OK(bt_socket_connect(&addr, &w, &fd));
    char junk[32];
    memset(junk, 0x5a, sizeof(junk));
    BT_TEST_OK(bt_socket_send_all(fd, junk, sizeof(junk), &w));
    double t0 = now_s();
    int closed = 0;
    while (!closed && now_s() - t0 < 3) {
        void *c = NULL;
        BT_TEST_OK(net->accept(l, &c));
        BT_TEST_CHECK(c == NULL, "garbage connection accepted");
        closed = peer_closed(fd);
        usleep(1000);
    }
    BT_TEST_CHECK(closed, "garbage connection not dropped in 3 s");
    close(fd);
    /* the listener still serves a real peer */
    void *s, *r;
    connect_real(l, handle, t0, 6, "connect after garbage did not finish", &s, &r);
    struct pair p = {.listen = l, .send = s, .recv = r};
    static const size_t sizes[] = {7, 65539};
    transfer(&p, sizes, 2, 0, 2, BT_OK, BT_OK, NULL);
    pair_close(&p);
    printf("garbage connection dropped after %.3f s: ok\n", now_s() - t0);
}

/* Strangers that connect and stall (one silent, one with half a header) while a real peer
 * connects: the real connection is accepted beside them at once, and they are dropped when
 * their header is 5 s late. */
static void test_half_open(void)
{
    unsigned char handle[BT_NET_HANDLE_BYTES];
    union bt_sockaddr addr;
    void *l = listen_raw(handle, &addr);
    struct bt_socket_wait w = {.deadline = bt_time_ns() + 5000000000ull};
    int silent = -1, half = -1;
    BT_TEST_OK(bt_socket_connect(&addr, &w, &silent));
    BT_TEST_OK(bt_socket_connect(&addr, &w, &half));
    uint64_t magic;
    memcpy(&magic, handle + 8, sizeof(magic)); /* the right magic, then nothing */
    magic = htobe64(magic);
    BT_TEST_OK(bt_socket_send_all(half, &magic, sizeof(magic), &w));
    double t0 = now_s();
    void *s, *r;
    connect_real(l, handle, t0, 1, "a real peer waited behind stalled strangers", &s, &r);
    double took = now_s() - t0;
    struct pair p = {.listen = NULL, .send = s, .recv = r};
    static const size_t sizes[] = {7, 65539};
    transfer(&p, sizes, 2, 0, 2, BT_OK, BT_OK, NULL);
    /* the strangers go when their header is late (accept() looks at them) */
    int gone = 0;
    while (gone < 2 && now_s() - t0 < 8) {
        void *c = NULL;
        BT_TEST_OK(net->accept(l, &c));
        BT_TEST_CHECK(c == NULL, "a stranger was accepted");
        gone = peer_closed(silent) + peer_closed(half);
        usleep(10000);
    }
    double dropped = now_s() - t0;
    BT_TEST_CHECK(gone == 2, "stalled strangers still connected after %.1f s", dropped);
    BT_TEST_CHECK(dropped >= 4.5, "strangers dropped after %.1f s, before their 5 s", dropped);
    close(silent);
    close(half);
    p.listen = l;
    pair_close(&p);
    printf("half-open strangers: the real peer connected in %.3f s beside them, they were dropped "
           "after %.1f s: ok\n",
           took, dropped);
}

static long long thread_cpu_ns(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
    FILE *f = fopen(path, "r");
    if (f) {
        long long ns = -1;
        if (fscanf(f, "%lld", &ns) != 1)
            ns = -1;
        fclose(f);
        if (ns >= 0)
            return ns;
    }
    /* no schedstat: utime + stime from stat, in clock ticks */
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    f = fopen(path, "r");
    BT_TEST_CHECK(f != NULL, "cannot open %s", path);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    BT_TEST_CHECK(
        p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2,
        "cannot parse %s", path);
    return (long long)((ut + st) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK)));
}

static void test_idle(void)
{
    struct bt_net_socket_config cfg = config(4, 4);
    struct pair p;
    pair_open(&cfg, &p);
    static const size_t sizes[] = {(4u << 20) + 1, 5};
    transfer(&p, sizes, 2, 0, 2, BT_OK, BT_OK, NULL);
    int tids[2 * BT_NET_SOCKET_MAX_THREADS];
    int ns = bt_net_socket_comm_helper_tids(p.send, tids, BT_NET_SOCKET_MAX_THREADS);
    int n = ns + bt_net_socket_comm_helper_tids(p.recv, tids + ns, BT_NET_SOCKET_MAX_THREADS);
    BT_TEST_CHECK(n == 8, "%d helper threads, expected 4 + 4", n);
    for (int i = 0; i < n; i++) {
        char path[64], name[32] = "", want[32];
        snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tids[i]);
        FILE *f = fopen(path, "r");
        BT_TEST_CHECK(f && fgets(name, sizeof(name), f), "cannot read %s", path);
        fclose(f);
        name[strcspn(name, "\n")] = '\0';
        snprintf(want, sizeof(want), "baton Sock%c %d", i < ns ? 'S' : 'R', i < ns ? i : i - ns);
        BT_TEST_CHECK(strcmp(name, want) == 0, "thread %d named '%s', expected '%s'", tids[i], name,
                      want);
    }
    long long before = 0, after = 0;
    for (int i = 0; i < n; i++)
        before += thread_cpu_ns(tids[i]);
    usleep(1000000);
    for (int i = 0; i < n; i++)
        after += thread_cpu_ns(tids[i]);
    BT_TEST_CHECK(after - before < 10000000, "idle helpers used %.3f ms of CPU in 1 s",
                  (double)(after - before) / 1e6);
    /* still working after the idle second */
    transfer(&p, sizes, 2, 0, 2, BT_OK, BT_OK, NULL);
    pair_close(&p);
    printf("idle: 8 helpers used %.3f ms of CPU in 1 s, names ok\n",
           (double)(after - before) / 1e6);
}

/* The parameters, with their caps (set in main before any getter caches them). */
static void test_params(void)
{
    struct bt_net_socket_config cfg;
    bt_net_socket_config_set(NULL);
    bt_net_socket_config_get(&cfg);
    BT_TEST_CHECK(cfg.nthreads == 16 && cfg.nsocks_per_thread == 8,
                  "SOCKET_NTHREADS=20 NSOCKS_PERTHREAD=8 gave %dx%d, expected 16x8", cfg.nthreads,
                  cfg.nsocks_per_thread);
    BT_TEST_CHECK(bt_net_socket_config_nsocks(&cfg) == 64, "%d sockets, expected the cap 64",
                  bt_net_socket_config_nsocks(&cfg));
    BT_TEST_CHECK(cfg.delay_us == 0 && cfg.fail_after_bytes == 0 && cfg.delay_min_bytes == 65536,
                  "fault injection defaults changed");
    struct pair p;
    pair_open(NULL, &p);
    static const size_t sizes[] = {(8u << 20) + 5, 3};
    transfer(&p, sizes, 2, 0, 2, BT_OK, BT_OK, NULL);
    pair_close(&p);
    printf("parameters and caps (16 threads, 64 sockets): ok\n");
}

int main(void)
{
    setenv("BATON_SOCKET_NTHREADS", "20", 1);
    setenv("BATON_NSOCKS_PERTHREAD", "8", 1);
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    double t0 = now_s();
    static const int configs[][2] = {{0, 1}, {1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 4}};
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
        test_config(configs[i][0], configs[i][1]);
    test_too_large();
    test_in_flight_limit();
    test_delay();
    test_fail_after(0, 1);
    test_fail_after(2, 2);
    test_garbage();
    test_half_open();
    test_idle();
    test_params();
    bt_test_leaks_end(&leaks);
    printf("test_net_socket: all ok, %.2f s\n", now_s() - t0);
    return 0;
}
