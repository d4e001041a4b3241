/*
 * Net plugins for the loader's tests (tests/plugins/loader.sh, ctest plugins/loader), one
 * library per mode, built from this file with FAKE_MODE set:
 *   1 FakeV6     exports only ncclNetPlugin_v6: Baton's socket backend behind the oldest
 *                table, so that collectives run through net/shim.c's v6 adapter
 *   2 FakeFail   a v11 table whose init fails
 *   3 FakeEmpty  a v11 table that finds no device
 *   4 (none)     a library that exports no net table at all
 *   5 FakeFlush  the socket backend behind a v11 table whose device asks for iflush after
 *                every receive (forceFlush): it checks what Baton flushes (below)
 *   6 FakeLate   the socket backend behind a v11 table whose send comm is usable only once
 *                the receiver's accept has returned (below): google/nccl-fastsocket's habit
 *   7 FakeRails  the socket backend behind a v11 table of 4 devices (rails), all the
 *                socket's first: it counts the devices listened on and every connect made
 *                on another device than its listener's (below)
 *   8 FakeCuda   GPUDirect RDMA's fixture (built where CUDA is): the socket backend behind a
 *                v11 table whose devices report NCCL_PTR_CUDA (FAKE_NET_PTR=dmabuf:
 *                NCCL_PTR_DMABUF instead, =both: both) and forceFlush; buffers registered as
 *                CUDA memory or by dma-buf move through host staging by cudaMemcpy; it checks
 *                every buffer it is handed against its registration's kind, every dma-buf
 *                descriptor, and counts (below)
 */
#include <string.h>

#include "net/net.h"

#define EXPORT __attribute__((visibility("default")))

static void *sock_ctx __attribute__((unused));

#if FAKE_MODE == 5 || FAKE_MODE == 6 || FAKE_MODE == 7 || FAKE_MODE == 8
/* The fakes that wrap the socket backend's own v11 table: that table, the logger init() was
 * given, and the table they export (the socket's, their own functions put in by fill()); a
 * lock for their counts, and what finalize() logs of them (summarize, when a fake sets it). */
#include <pthread.h>
#include <stdio.h>

static const ncclNet_v11_t *sock;
static ncclDebugLogger_t logger;
EXPORT ncclNet_v11_t ncclNetPlugin_v11;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void (*summarize)(char *line, size_t len);

static ncclResult_t wrap_init(void **ctx, uint64_t id, ncclNetCommConfig_v11_t *cfg,
                              ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    logger = log;
    return sock->init(ctx, id, cfg, log, prof);
}

static ncclResult_t wrap_finalize(void *ctx)
{
    char line[512]; /* FakeCuda's summary is ~300 characters */
    pthread_mutex_lock(&mu);
    if (logger && summarize) {
        summarize(line, sizeof(line));
        logger(NCCL_LOG_INFO, NCCL_LOGSUB_NET, __FILE__, __LINE__, "%s", line);
    }
    pthread_mutex_unlock(&mu);
    return sock->finalize(ctx);
}

/* The socket's table under `name`, with init() keeping the logger and finalize() logging the
 * fake's summary. */
static void wrap_socket(const char *name)
{
    sock = bt_net_socket.v11;
    ncclNetPlugin_v11 = *sock;
    ncclNetPlugin_v11.name = name;
    ncclNetPlugin_v11.init = wrap_init;
    ncclNetPlugin_v11.finalize = wrap_finalize;
}
#endif

#if FAKE_MODE == 1

static const ncclNet_v11_t *sock;

static ncclResult_t f_init(ncclDebugLogger_t log)
{
    sock = bt_net_socket.v11;
    return sock->init(&sock_ctx, 0, NULL, log, NULL);
}
static ncclResult_t f_devices(int *n)
{
    return sock->devices(n);
}
static ncclResult_t f_props(int dev, ncclNetProperties_v6_t *p)
{
    ncclNetProperties_v11_t q;
    ncclResult_t r = sock->getProperties(dev, &q);
    memset(p, 0, sizeof(*p));
    p->name = q.name, p->pciPath = q.pciPath, p->guid = q.guid, p->ptrSupport = q.ptrSupport;
    p->speed = q.speed, p->port = q.port, p->latency = q.latency, p->maxComms = q.maxComms;
    p->maxRecvs = q.maxRecvs;
    return r;
}
static ncclResult_t f_listen(int dev, void *h, void **l)
{
    return sock->listen(sock_ctx, dev, h, l);
}
static ncclResult_t f_connect(int dev, void *h, void **s)
{
    return sock->connect(sock_ctx, dev, h, s, NULL);
}
static ncclResult_t f_accept(void *l, void **r)
{
    return sock->accept(l, r, NULL);
}
static ncclResult_t f_reg(void *c, void *d, int n, int t, void **mh)
{
    return sock->regMr(c, d, (size_t)n, t, mh);
}
static ncclResult_t f_isend(void *c, void *d, int n, int tag, void *mh, void **r)
{
    return sock->isend(c, d, (size_t)n, tag, mh, NULL, r);
}
static ncclResult_t f_irecv(void *c, int n, void **d, int *s, int *t, void **mh, void **r)
{
    size_t sizes[8];
    for (int i = 0; i < n && i < 8; i++)
        sizes[i] = (size_t)s[i];
    return sock->irecv(c, n, d, sizes, t, mh, NULL, r);
}
/* an old plugin that never writes test()'s size: Baton must not rely on it */
static ncclResult_t f_test(void *r, int *done, int *sizes)
{
    (void)sizes;
    return sock->test(r, done, NULL);
}

EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = "FakeV6",
    .init = f_init,
    .devices = f_devices,
    .getProperties = f_props,
    .listen = f_listen,
    .connect = f_connect,
    .accept = f_accept,
    .regMr = f_reg,
    .isend = f_isend,
    .irecv = f_irecv,
    .test = f_test,
};

/* the remaining members point into the socket table, known only at load */
__attribute__((constructor)) static void fill(void)
{
    const ncclNet_v11_t *s = bt_net_socket.v11;
    ncclNetPlugin_v6.regMrDmaBuf = s->regMrDmaBuf;
    ncclNetPlugin_v6.deregMr = s->deregMr;
    ncclNetPlugin_v6.iflush = s->iflush;
    ncclNetPlugin_v6.closeSend = s->closeSend;
    ncclNetPlugin_v6.closeRecv = s->closeRecv;
    ncclNetPlugin_v6.closeListen = s->closeListen;
}

#elif FAKE_MODE == 2 || FAKE_MODE == 3

static ncclResult_t f_init(void **ctx, uint64_t id, ncclNetCommConfig_v11_t *cfg,
                           ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
    (void)id, (void)cfg, (void)prof;
    *ctx = &sock_ctx;
    if (FAKE_MODE == 2) {
        log(NCCL_LOG_WARN, NCCL_LOGSUB_NET, __FILE__, __LINE__, "FakeFail: refusing to start\n");
        return ncclSystemError;
    }
    return ncclSuccess;
}
static ncclResult_t f_devices(int *n)
{
    *n = 0;
    return ncclSuccess;
}
static ncclResult_t f_finalize(void *ctx)
{
    (void)ctx;
    return ncclSuccess;
}

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = FAKE_MODE == 2 ? "FakeFail" : "FakeEmpty",
    .init = f_init,
    .devices = f_devices,
    .finalize = f_finalize,
};

#elif FAKE_MODE == 5

/* Each iflush must name a receive that completed and was not flushed yet: its buffer, the
 * size that landed and its registration. The flush's request completes at its second test.
 * finalize() logs how many flushes matched and how many did not. */
#include <stdlib.h>

#define NREC 256
static struct rec {
    void *req, *data, *mh; /* a receive in flight (req), or landed and not flushed (req NULL) */
    int got;
    int used;
} recs[NREC];
static void *flush_reqs[NREC]; /* the flush requests handed out, not yet complete */
static int flush_tests[NREC];
static int nflush, nbad, nlost;

static ncclResult_t f_props(int dev, ncclNetProperties_v11_t *p)
{
    ncclResult_t r = sock->getProperties(dev, p);
    p->forceFlush = 1;
    return r;
}
static ncclResult_t f_irecv(void *c, int n, void **d, size_t *s, int *t, void **mh, void **ph,
                            void **r)
{
    ncclResult_t res = sock->irecv(c, n, d, s, t, mh, ph, r);
    if (res != ncclSuccess || *r == NULL)
        return res;
    pthread_mutex_lock(&mu);
    int k = 0;
    while (k < NREC && recs[k].used)
        k++;
    if (k < NREC)
        recs[k] = (struct rec){.req = *r, .data = d[0], .mh = mh[0], .used = 1};
    else
        nlost++;
    pthread_mutex_unlock(&mu);
    return res;
}
static ncclResult_t f_test(void *r, int *done, int *sizes)
{
    pthread_mutex_lock(&mu);
    for (int k = 0; k < NREC; k++)
        if (flush_reqs[k] == r) {
            *done = ++flush_tests[k] >= 2;
            if (*done) {
                flush_reqs[k] = NULL;
                free(r);
            }
            pthread_mutex_unlock(&mu);
            return ncclSuccess;
        }
    pthread_mutex_unlock(&mu);
    int got = -1;
    ncclResult_t res = sock->test(r, done, &got);
    if (sizes)
        *sizes = got;
    if (res == ncclSuccess && *done) {
        pthread_mutex_lock(&mu);
        for (int k = 0; k < NREC; k++)
            if (recs[k].used && recs[k].req == r) {
                recs[k].req = NULL; /* landed: waits for its flush */
                recs[k].got = got;
            }
        pthread_mutex_unlock(&mu);
    }
    return res;
}
static ncclResult_t f_iflush(void *c, int n, void **d, int *s, void **mh, void **r)
{
    (void)c;
    pthread_mutex_lock(&mu);
    nflush++;
    int k = 0;
    while (k < NREC && !(recs[k].used && recs[k].req == NULL && recs[k].data == d[0]))
        k++;
    if (n != 1 || k == NREC || recs[k].got != s[0] || recs[k].mh != mh[0])
        nbad++;
    if (k < NREC)
        recs[k].used = 0;
    int f = 0;
    while (f < NREC && flush_reqs[f])
        f++;
    *r = f < NREC ? malloc(1) : NULL;
    if (*r) {
        flush_reqs[f] = *r;
        flush_tests[f] = 0;
    }
    pthread_mutex_unlock(&mu);
    return ncclSuccess;
}
static void f_summarize(char *line, size_t len)
{
    snprintf(line, len,
             "FakeFlush: %d flushes, %d not matching a landed receive, %d receives untracked",
             nflush, nbad, nlost);
}

__attribute__((constructor)) static void fill(void)
{
    wrap_socket("FakeFlush");
    ncclNetPlugin_v11.getProperties = f_props;
    ncclNetPlugin_v11.irecv = f_irecv;
    ncclNetPlugin_v11.test = f_test;
    ncclNetPlugin_v11.iflush = f_iflush;
    summarize = f_summarize;
}

#elif FAKE_MODE == 6

/* A plugin whose connect() returns a send comm at once and finishes connecting in the
 * background: the comm works only once the receiver's accept() has returned its recv comm
 * (nccl-fastsocket sets its control socket in a thread of its own, after the receiver's
 * accept has answered; until then an isend writes to fd 0). Here the receiver's accept
 * takes a while (ACCEPT_MS after the socket's) and then leaves a marker, named by a key
 * that listen() puts at the end of the handle; an isend on a comm whose marker is not
 * there yet fails, loudly, as fastsocket's does. So the suite fails whenever Baton posts a
 * send before the peer's accept returned (docs/NETWORK.md: the order Baton keeps). */
#include <unistd.h>

#include "util/random.h"

#define ACCEPT_MS 20
#define NCOMMS 1024
#define KEY_AT (NCCL_NET_HANDLE_MAXSIZE - (int)sizeof(uint64_t))
static struct late {
    void *comm; /* a listen comm (its key) or a send comm not yet seen ready; NULL: free */
    uint64_t key;
} lates[NCOMMS];

static void marker(uint64_t key, char *path, size_t len)
{
    snprintf(path, len, "/dev/shm/bt-fakelate-%016llx", (unsigned long long)key);
}
static void remember(void *comm, uint64_t key)
{
    pthread_mutex_lock(&mu);
    for (int k = 0; k < NCOMMS; k++)
        if (!lates[k].comm) {
            lates[k] = (struct late){comm, key};
            break;
        }
    pthread_mutex_unlock(&mu);
}
/* The key of `comm` (removed when `take`), or 0: not remembered. */
static uint64_t key_of(void *comm, int take)
{
    uint64_t key = 0;
    pthread_mutex_lock(&mu);
    for (int k = 0; k < NCOMMS && !key; k++)
        if (lates[k].comm == comm) {
            key = lates[k].key;
            if (take)
                lates[k].comm = NULL;
        }
    pthread_mutex_unlock(&mu);
    return key;
}

static ncclResult_t f_listen(void *ctx, int dev, void *handle, void **lc)
{
    ncclResult_t r = sock->listen(ctx, dev, handle, lc);
    if (r == ncclSuccess) {
        uint64_t key = bt_random_u64() | 1;
        memcpy((char *)handle + KEY_AT, &key, sizeof(key));
        remember(*lc, key);
    }
    return r;
}
static ncclResult_t f_connect(void *ctx, int dev, void *handle, void **sc,
                              ncclNetDeviceHandle_v11_t **dh)
{
    ncclResult_t r = sock->connect(ctx, dev, handle, sc, dh);
    if (r == ncclSuccess && *sc) {
        uint64_t key;
        memcpy(&key, (char *)handle + KEY_AT, sizeof(key));
        remember(*sc, key);
    }
    return r;
}
static ncclResult_t f_accept(void *lc, void **rc, ncclNetDeviceHandle_v11_t **dh)
{
    ncclResult_t r = sock->accept(lc, rc, dh);
    if (r != ncclSuccess || !*rc)
        return r;
    usleep(ACCEPT_MS * 1000); /* the background connection's last leg */
    char path[64];
    marker(key_of(lc, 0), path, sizeof(path));
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    return r;
}
static ncclResult_t f_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph,
                            void **req)
{
    uint64_t key = key_of(sc, 0);
    if (key) {
        char path[64];
        marker(key, path, sizeof(path));
        if (access(path, F_OK) != 0) {
            logger(NCCL_LOG_WARN, NCCL_LOGSUB_NET, __FILE__, __LINE__,
                   "FakeLate: isend on a send comm before the receiver's accept returned");
            return ncclSystemError;
        }
        unlink(path);
        key_of(sc, 1); /* ready from now on */
    }
    return sock->isend(sc, data, size, tag, mh, ph, req);
}
static ncclResult_t f_close_send(void *sc)
{
    uint64_t key = key_of(sc, 1);
    if (key) {
        char path[64];
        marker(key, path, sizeof(path));
        unlink(path);
    }
    return sock->closeSend(sc);
}
static ncclResult_t f_close_listen(void *lc)
{
    key_of(lc, 1);
    return sock->closeListen(lc);
}

__attribute__((constructor)) static void fill(void)
{
    wrap_socket("FakeLate");
    ncclNetPlugin_v11.listen = f_listen;
    ncclNetPlugin_v11.connect = f_connect;
    ncclNetPlugin_v11.accept = f_accept;
    ncclNetPlugin_v11.isend = f_isend;
    ncclNetPlugin_v11.closeSend = f_close_send;
    ncclNetPlugin_v11.closeListen = f_close_listen;
}

#elif FAKE_MODE == 7

/* Four rails over one socket device: a connector on channel c should listen on rail c mod 4
 * and its peer connect on the same rail (transport/net.c pick_dev, CROSS_NIC). listen()
 * puts its rail in the handle's last byte; connect() compares. */

#define NRAILS 4
#define RAIL_AT (NCCL_NET_HANDLE_MAXSIZE - 1)
static int listens[NRAILS], nconnect, ncross;

static ncclResult_t f_devices(int *n)
{
    *n = NRAILS;
    return ncclSuccess;
}
static ncclResult_t f_props(int dev, ncclNetProperties_v11_t *p)
{
    ncclResult_t r = sock->getProperties(0, p);
    static char names[NRAILS][8];
    if (r == ncclSuccess && dev >= 0 && dev < NRAILS) {
        snprintf(names[dev], sizeof(names[dev]), "rail%d", dev);
        p->name = names[dev];
        p->guid += (uint64_t)dev;
    }
    return r;
}
static ncclResult_t f_listen(void *ctx, int dev, void *handle, void **lc)
{
    ncclResult_t r = sock->listen(ctx, 0, handle, lc);
    if (r == ncclSuccess) {
        ((unsigned char *)handle)[RAIL_AT] = (unsigned char)dev;
        pthread_mutex_lock(&mu);
        if (dev >= 0 && dev < NRAILS)
            listens[dev]++;
        pthread_mutex_unlock(&mu);
    }
    return r;
}
static ncclResult_t f_connect(void *ctx, int dev, void *handle, void **sc,
                              ncclNetDeviceHandle_v11_t **dh)
{
    pthread_mutex_lock(&mu);
    nconnect++;
    ncross += ((unsigned char *)handle)[RAIL_AT] != (unsigned char)dev;
    pthread_mutex_unlock(&mu);
    return sock->connect(ctx, 0, handle, sc, dh);
}
static void f_summarize(char *line, size_t len)
{
    snprintf(line, len,
             "FakeRails: listens on rails 0-3: %d %d %d %d; %d connects, %d on another rail than "
             "their listener's",
             listens[0], listens[1], listens[2], listens[3], nconnect, ncross);
}

__attribute__((constructor)) static void fill(void)
{
    wrap_socket("FakeRails");
    ncclNetPlugin_v11.devices = f_devices;
    ncclNetPlugin_v11.getProperties = f_props;
    ncclNetPlugin_v11.listen = f_listen;
    ncclNetPlugin_v11.connect = f_connect;
    summarize = f_summarize;
}

#elif FAKE_MODE == 8

/* What the GPUDirect RDMA contract (docs/NETWORK.md) promises a network that reports
 * NCCL_PTR_CUDA, checked here: every registration's kind is the buffer's
 * (cudaPointerGetAttributes), every isend/irecv/iflush names a buffer inside its registration,
 * and only Simple slots of GPU connectors come as GPU memory. The bytes of a GPU buffer go
 * through a host copy (cudaMemcpyAsync on the fixture's own stream, waited for) around the
 * socket's isend and irecv; a receive into GPU memory lands at its test(). finalize() logs the
 * counts (INFO, NET): the GPU test's lab script checks them. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct reg {
    void *data, *inner; /* the registration, and the socket's (host buffers) */
    size_t size;
    int cuda;
};
struct req {
    void *inner; /* the socket's request; NULL: a flush, done at its test */
    char *stage; /* a GPU buffer's bytes in host memory */
    void *dev;   /* a receive into GPU memory: where the staged bytes go */
    size_t size;
};
static int nreg_cuda, nreg_host, nsend_gpu, nrecv_gpu, nsend_host, nrecv_host, nflush_gpu,
    nflush_host, nbad, nreg_dmabuf;

/* The fixture's copies, on a stream of its own that waits for no other (a kernel on the
 * legacy stream may be waiting for these bytes), each waited for before the bytes count as
 * moved. */
static cudaStream_t copy_stream;
static pthread_once_t copy_once = PTHREAD_ONCE_INIT;
static void copy_init(void)
{
    if (cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking) != cudaSuccess)
        copy_stream = NULL;
}
static int copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    pthread_once(&copy_once, copy_init);
    return copy_stream && cudaMemcpyAsync(dst, src, n, kind, copy_stream) == cudaSuccess &&
           cudaStreamSynchronize(copy_stream) == cudaSuccess;
}

static int is_device(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice;
}
static void bad(void)
{
    pthread_mutex_lock(&mu);
    nbad++;
    pthread_mutex_unlock(&mu);
}
static void count(int *n)
{
    pthread_mutex_lock(&mu);
    (*n)++;
    pthread_mutex_unlock(&mu);
}
/* buffer [d, d + n) inside registration r, of its kind */
static int inside(const struct reg *r, const void *d, size_t n)
{
    const char *p = d;
    return r && p >= (char *)r->data && p + n <= (char *)r->data + r->size &&
           is_device(d) == r->cuda;
}
static ncclResult_t f_props(int dev, ncclNetProperties_v11_t *p)
{
    ncclResult_t r = sock->getProperties(dev, p);
    const char *ptr = getenv("FAKE_NET_PTR");
    int dmabuf = ptr && (strcmp(ptr, "dmabuf") == 0 || strcmp(ptr, "both") == 0);
    int cuda = !ptr || strcmp(ptr, "dmabuf") != 0;
    p->ptrSupport |= (cuda ? NCCL_PTR_CUDA : 0) | (dmabuf ? NCCL_PTR_DMABUF : 0);
    p->forceFlush = 1;
    return r;
}
static ncclResult_t f_reg(void *c, void *d, size_t n, int type, void **mh)
{
    struct reg *r = calloc(1, sizeof(*r));
    if (!r)
        return ncclSystemError;
    r->data = d, r->size = n, r->cuda = type == NCCL_PTR_CUDA;
    if (is_device(d) != r->cuda)
        bad();
    count(r->cuda ? &nreg_cuda : &nreg_host);
    ncclResult_t res = r->cuda ? ncclSuccess : sock->regMr(c, d, n, NCCL_PTR_HOST, &r->inner);
    if (res != ncclSuccess) {
        free(r);
        return res;
    }
    *mh = r;
    return ncclSuccess;
}
/* A GPU buffer by dma-buf, as NCCL hands one over: type NCCL_PTR_CUDA, offset 0 (the
 * descriptor covers exactly the buffer), the descriptor a dma-buf (the kernel names its inode
 * so), open while registering, the buffer device memory; it then moves as a CUDA pointer. */
static ncclResult_t f_regdb(void *c, void *d, size_t n, int type, uint64_t offset, int fd,
                            void **mh)
{
    char path[64], target[128] = "";
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t len = fd >= 0 ? readlink(path, target, sizeof(target) - 1) : -1;
    if (len > 0)
        target[len] = 0;
    if (type != NCCL_PTR_CUDA || offset != 0 || len <= 0 || !strstr(target, "dmabuf") ||
        !is_device(d))
        bad();
    count(&nreg_dmabuf);
    return f_reg(c, d, n, NCCL_PTR_CUDA, mh);
}
static ncclResult_t f_dereg(void *c, void *mh)
{
    struct reg *r = mh;
    ncclResult_t res = r && r->inner ? sock->deregMr(c, r->inner) : ncclSuccess;
    free(r);
    return res;
}
static ncclResult_t f_isend(void *c, void *d, size_t n, int tag, void *mh, void *ph, void **rq)
{
    struct reg *r = mh;
    *rq = NULL;
    struct req *q = calloc(1, sizeof(*q));
    if (!q)
        return ncclSystemError;
    void *src = d;
    if (r && r->cuda) {
        q->stage = malloc(n ? n : 1);
        if (!q->stage || !copy(q->stage, d, n, cudaMemcpyDeviceToHost)) {
            free(q->stage);
            free(q);
            return ncclSystemError;
        }
        src = q->stage;
    }
    ncclResult_t res = sock->isend(c, src, n, tag, r ? r->inner : NULL, ph, &q->inner);
    if (res != ncclSuccess || !q->inner) { /* not now: the caller tries again */
        free(q->stage);
        free(q);
        return res;
    }
    count(r && r->cuda ? &nsend_gpu : &nsend_host);
    if (!inside(r, d, n))
        bad();
    *rq = q;
    return ncclSuccess;
}
static ncclResult_t f_irecv(void *c, int n, void **d, size_t *s, int *t, void **mh, void **ph,
                            void **rq)
{
    struct reg *r = mh[0];
    *rq = NULL;
    struct req *q = calloc(1, sizeof(*q));
    if (!q)
        return ncclSystemError;
    void *dst = d[0];
    if (r && r->cuda) {
        q->stage = malloc(s[0] ? s[0] : 1);
        q->dev = d[0];
        q->size = s[0];
        if (!q->stage) {
            free(q);
            return ncclSystemError;
        }
        dst = q->stage;
    }
    void *inner_mh = r ? r->inner : NULL;
    ncclResult_t res = sock->irecv(c, 1, &dst, s, t, &inner_mh, ph, &q->inner);
    if (res != ncclSuccess || !q->inner) {
        free(q->stage);
        free(q);
        return res;
    }
    count(r && r->cuda ? &nrecv_gpu : &nrecv_host);
    if (n != 1 || !inside(r, d[0], s[0]))
        bad();
    *rq = q;
    return ncclSuccess;
}
static ncclResult_t f_test(void *rq, int *done, int *sizes)
{
    struct req *q = rq;
    int got = -1;
    if (!q->inner) { /* a flush */
        *done = 1;
        free(q);
        return ncclSuccess;
    }
    ncclResult_t res = sock->test(q->inner, done, &got);
    if (sizes)
        *sizes = got;
    if (res == ncclSuccess && !*done)
        return res;
    if (res == ncclSuccess && q->dev && got > 0 &&
        !copy(q->dev, q->stage, (size_t)got, cudaMemcpyHostToDevice))
        res = ncclSystemError;
    free(q->stage);
    free(q);
    return res;
}
static ncclResult_t f_iflush(void *c, int n, void **d, int *s, void **mh, void **rq)
{
    (void)c;
    struct reg *r = mh[0];
    if (n != 1 || !inside(r, d[0], (size_t)(s[0] > 0 ? s[0] : 0)))
        bad();
    count(r && r->cuda ? &nflush_gpu : &nflush_host);
    *rq = calloc(1, sizeof(struct req));
    return *rq ? ncclSuccess : ncclSystemError;
}
static void f_summarize(char *line, size_t len)
{
    snprintf(line, len,
             "FakeCuda: %d GPU and %d host registrations; %d sends from GPU memory, %d receives "
             "into it, %d of them flushed; %d sends and %d receives of host memory, %d flushed; "
             "%d buffers of another kind or outside their registration; %d of the GPU "
             "registrations by dma-buf",
             nreg_cuda, nreg_host, nsend_gpu, nrecv_gpu, nflush_gpu, nsend_host, nrecv_host,
             nflush_host, nbad, nreg_dmabuf);
}

__attribute__((constructor)) static void fill(void)
{
    wrap_socket("FakeCuda");
    ncclNetPlugin_v11.getProperties = f_props;
    ncclNetPlugin_v11.regMr = f_reg;
    ncclNetPlugin_v11.regMrDmaBuf = f_regdb;
    ncclNetPlugin_v11.deregMr = f_dereg;
    ncclNetPlugin_v11.isend = f_isend;
    ncclNetPlugin_v11.irecv = f_irecv;
    ncclNetPlugin_v11.test = f_test;
    ncclNetPlugin_v11.iflush = f_iflush;
    summarize = f_summarize;
}

#else

EXPORT int fake_net_nothing_here = 1;

#endif
