/*
 * One API, one behaviour: the cases where the host and GPU launches once differed, run the
 * same way on both executors (core/launch.c decides them for both, one loop). Two ranks
 * of one process, driven by one thread (group calls, as nccl-tests -g does); the buffers are
 * host memory (threads/test_plan_parity.c, CI) or device memory on one GPU shared by both
 * ranks (gpu/test_gpu_parity.c, BATON_TEST_SAME_GPU=1). Each case states what NCCL users
 * get:
 *   1. a send to oneself without a receive from oneself in the group: ncclInvalidUsage from
 *      ncclGroupEnd, nothing runs, and the communicator stays usable (its async error stays
 *      ncclSuccess, the next AllReduce is exact);
 *   2. a receive from oneself without a send: the same;
 *   3. a receive from oneself before the send in the group: it gets the send's data;
 *   4. two of each in any order: the k-th receive gets the k-th send's data;
 *   5. an invalid argument (a bad datatype) fails that call only: the comm stays usable;
 *   7. (GPU) a send to oneself from device memory with the receive into host memory:
 *      ncclInvalidUsage, nothing runs, no poisoning (the two ops would run on different
 *      executors);
 *   6. a communicator whose collective failed (its peer never called it: TIMEOUT; on a GPU the
 *      kernel's report says so) refuses its next operation at once with ncclRemoteError (no
 *      wait, nothing run), whether or not ncclCommGetAsyncError was asked first, and reports
 *      ncclRemoteError there; the other rank's communicator is untouched.
 * The backend gives buffers, copies and the stream; everything else is the public API.
 */
#ifndef BT_TEST_PARITY_H
#define BT_TEST_PARITY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define PARITY_N 4099      /* elements: several LL lines and an odd tail */
#define PARITY_TIMEOUT "2" /* BATON_TIMEOUT for case 6 */

struct parity_backend {
    const char *name;
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
    void (*put)(void *dst, const void *host, size_t bytes); /* host -> buffer */
    void (*get)(void *host, const void *src, size_t bytes); /* buffer -> host */
    void *(*stream)(int rank);                              /* cudaStream_t, or NULL */
    void (*sync)(int rank);                                 /* wait for the rank's stream */
    void (*init)(void); /* before the communicators: the device, streams (may be NULL) */
    /* memory of the other kind (host memory beside device buffers), or NULL: none */
    void *(*other_alloc)(size_t bytes);
    void (*other_release)(void *p);
};

static const struct parity_backend *pb;
static ncclComm_t pc[2];

static float parity_value(int rank, int tag, size_t i)
{
    return (float)(rank * 1000 + tag * 100 + (int)(i % 89));
}

/* A buffer holding parity_value(rank, tag, i), or zeros. */
static float *parity_buf(int rank, int tag, int zero)
{
    float *h = malloc(PARITY_N * sizeof(float));
    BT_TEST_CHECK(h != NULL, "out of memory");
    for (size_t i = 0; i < PARITY_N; i++)
        h[i] = zero ? 0.0f : parity_value(rank, tag, i);
    float *b = pb->alloc(PARITY_N * sizeof(float));
    pb->put(b, h, PARITY_N * sizeof(float));
    free(h);
    return b;
}

/* Whether buffer b holds parity_value(rank, tag, i); names the first wrong element. */
static int parity_holds(const float *b, int rank, int tag, const char *what)
{
    float *h = malloc(PARITY_N * sizeof(float));
    BT_TEST_CHECK(h != NULL, "out of memory");
    pb->get(h, b, PARITY_N * sizeof(float));
    int ok = 1;
    for (size_t i = 0; i < PARITY_N && ok; i++) {
        if (h[i] != parity_value(rank, tag, i)) {
            fprintf(stderr, "[%s] %s: element %zu is %g, expected %g\n", pb->name, what, i,
                    (double)h[i], (double)parity_value(rank, tag, i));
            ok = 0;
        }
    }
    free(h);
    return ok;
}

static ncclResult_t async_error(int rank)
{
    ncclResult_t e = ncclInternalError;
    BT_TEST_OK(ncclCommGetAsyncError(pc[rank], &e));
    return e;
}

/* Both ranks' AllReduce (sum of each rank's tag-0 input) in one group: exact. */
static void parity_allreduce_ok(const char *after)
{
    float *in[2], *out[2];
    for (int r = 0; r < 2; r++) {
        in[r] = parity_buf(r, 0, 0);
        out[r] = parity_buf(r, 0, 1);
    }
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(
            ncclAllReduce(in[r], out[r], PARITY_N, ncclFloat32, ncclSum, pc[r], pb->stream(r)));
    BT_TEST_CHECK(ncclGroupEnd() == ncclSuccess, "[%s] AllReduce after %s failed", pb->name, after);
    float *h = malloc(PARITY_N * sizeof(float));
    for (int r = 0; r < 2; r++) {
        pb->sync(r);
        pb->get(h, out[r], PARITY_N * sizeof(float));
        for (size_t i = 0; i < PARITY_N; i++)
            BT_TEST_CHECK(h[i] == parity_value(0, 0, i) + parity_value(1, 0, i),
                          "[%s] AllReduce after %s: rank %d element %zu is %g", pb->name, after, r,
                          i, (double)h[i]);
        pb->release(in[r]);
        pb->release(out[r]);
    }
    free(h);
}

/* A group of rank 0's sends (tags) and receives (into bufs) to itself, in the order given:
 * 's' a send of the next tag, 'r' a receive into the next buffer. */
static ncclResult_t parity_self(const char *order, float **recvs)
{
    float *sends[4];
    int ns = 0, nr = 0;
    for (const char *c = order; *c; c++)
        if (*c == 's') {
            sends[ns] = parity_buf(0, ns + 1, 0);
            ns++;
        }
    ns = 0;
    BT_TEST_OK(ncclGroupStart());
    for (const char *c = order; *c; c++) {
        if (*c == 's') {
            BT_TEST_OK(ncclSend(sends[ns], PARITY_N, ncclFloat32, 0, pc[0], pb->stream(0)));
            ns++;
        } else {
            BT_TEST_OK(ncclRecv(recvs[nr], PARITY_N, ncclFloat32, 0, pc[0], pb->stream(0)));
            nr++;
        }
    }
    ncclResult_t rc = ncclGroupEnd();
    pb->sync(0);
    for (int k = 0; k < ns; k++)
        pb->release(sends[k]);
    return rc;
}

static void parity_run(const struct parity_backend *backend)
{
    pb = backend;
    setenv("BATON_TIMEOUT", PARITY_TIMEOUT, 1);
    if (pb->init)
        pb->init();
    /* both ranks of one rendezvous, from one thread */
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    BT_TEST_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++)
        BT_TEST_OK(ncclCommInitRank(&pc[r], 2, id, r));
    BT_TEST_OK(ncclGroupEnd());
    parity_allreduce_ok("init");

    /* 1, 2: unmatched; nothing runs, nothing is poisoned */
    float *r0 = parity_buf(0, 9, 1), *r1 = parity_buf(0, 9, 1);
    float *recvs[2] = {r0, r1};
    ncclResult_t rc = parity_self("s", recvs);
    BT_TEST_CHECK(rc == ncclInvalidUsage, "[%s] unmatched send to self: %d", pb->name, (int)rc);
    BT_TEST_CHECK(async_error(0) == ncclSuccess, "[%s] unmatched send poisoned the comm", pb->name);
    parity_allreduce_ok("an unmatched send to self");
    rc = parity_self("r", recvs);
    BT_TEST_CHECK(rc == ncclInvalidUsage, "[%s] unmatched recv from self: %d", pb->name, (int)rc);
    BT_TEST_CHECK(async_error(0) == ncclSuccess, "[%s] unmatched recv poisoned the comm", pb->name);
    parity_allreduce_ok("an unmatched receive from self");

    /* 3: receive first */
    BT_TEST_CHECK(parity_self("rs", recvs) == ncclSuccess, "[%s] recv-then-send to self", pb->name);
    BT_TEST_CHECK(parity_holds(r0, 0, 1, "recv-then-send to self"), "[%s]", pb->name);

    /* 4: k-th with k-th, any order */
    BT_TEST_CHECK(parity_self("srrs", recvs) == ncclSuccess, "[%s] send, recv, recv, send",
                  pb->name);
    BT_TEST_CHECK(parity_holds(r0, 0, 1, "the first receive of s r r s"), "[%s]", pb->name);
    BT_TEST_CHECK(parity_holds(r1, 0, 2, "the second receive of s r r s"), "[%s]", pb->name);
    pb->release(r0);
    pb->release(r1);

    /* 5: a bad argument fails that call only */
    float *x = parity_buf(0, 0, 0);
    rc = ncclAllReduce(x, x, PARITY_N, (ncclDataType_t)99, ncclSum, pc[0], pb->stream(0));
    BT_TEST_CHECK(rc == ncclInvalidArgument, "[%s] bad datatype: %d", pb->name, (int)rc);
    BT_TEST_CHECK(async_error(0) == ncclSuccess, "[%s] a bad argument poisoned the comm", pb->name);
    parity_allreduce_ok("an invalid argument");

    /* 7: one pair across executors */
    if (pb->other_alloc) {
        float *dev = parity_buf(0, 1, 0), *host = pb->other_alloc(PARITY_N * sizeof(float));
        BT_TEST_OK(ncclGroupStart());
        BT_TEST_OK(ncclSend(dev, PARITY_N, ncclFloat32, 0, pc[0], pb->stream(0)));
        BT_TEST_OK(ncclRecv(host, PARITY_N, ncclFloat32, 0, pc[0], pb->stream(0)));
        rc = ncclGroupEnd();
        BT_TEST_CHECK(rc == ncclInvalidUsage,
                      "[%s] send to self from device memory into host "
                      "memory: %d",
                      pb->name, (int)rc);
        BT_TEST_CHECK(async_error(0) == ncclSuccess, "[%s] a cross-memory pair poisoned the comm",
                      pb->name);
        pb->release(dev);
        pb->other_release(host);
        parity_allreduce_ok("a send to self across memory kinds");
    }

    /* 6: rank 0 alone: its peer never comes, TIMEOUT ends it; then the comm is failed (told by
     * the next operation, before anyone asked ncclCommGetAsyncError) */
    double t0 = bt_test_now_s();
    ncclResult_t first = ncclAllReduce(x, x, PARITY_N, ncclFloat32, ncclSum, pc[0], pb->stream(0));
    pb->sync(0); /* a GPU kernel ends at TIMEOUT and reports it */
    double waited = bt_test_now_s() - t0;
    t0 = bt_test_now_s();
    rc = ncclAllReduce(x, x, PARITY_N, ncclFloat32, ncclSum, pc[0], pb->stream(0));
    double again = bt_test_now_s() - t0;
    ncclResult_t e = async_error(0);
    BT_TEST_CHECK((first == ncclRemoteError || first == ncclSuccess) && e == ncclRemoteError,
                  "[%s] a collective whose peer never came: returned %d, async error %d", pb->name,
                  (int)first, (int)e);
    BT_TEST_CHECK(rc == ncclRemoteError, "[%s] an operation on a failed comm returned %d", pb->name,
                  (int)rc);
    BT_TEST_CHECK(again < 0.5, "[%s] an operation on a failed comm took %.2f s", pb->name, again);
    BT_TEST_CHECK(async_error(1) == ncclSuccess, "[%s] the other rank's comm failed too", pb->name);
    pb->release(x);
    printf("[%s] ok: unmatched self send/recv refused, recv-before-send and k-th pairing exact, "
           "no poisoning by usage errors; a failed comm failed after %.2f s and refused its next "
           "operation in %.4f s\n",
           pb->name, waited, again);
    BT_TEST_OK(ncclCommDestroy(pc[0]));
    BT_TEST_OK(ncclCommDestroy(pc[1]));
}

#endif
