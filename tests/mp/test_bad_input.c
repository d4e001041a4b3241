/*
 * Bad input (issue "Bad input"): every entry point given a NULL comm, NULL buffers with
 * count > 0, a count whose byte size overflows, a datatype or op out of range, a destroyed
 * custom op, a built-in op to destroy, a root or peer out of range, a config with a wrong
 * magic or an invalid field, or a destroyed or aborted communicator returns
 * ncclInvalidArgument (ncclInvalidUsage where NCCL does: ncclGroupEnd without a
 * ncclGroupStart), and ncclGetLastError() names the function and the argument.
 *
 * Two rank processes. Each bad call is made by one rank (alternating) or both; after every
 * one both ranks run a checked AllReduce on the same communicator: had the bad call
 * enqueued anything or left the peer waiting, that AllReduce would return wrong values or
 * hang. Bad ncclCommInitRankConfig calls use a second id on which both ranks then init
 * correctly: a rejected init must not have joined the rendezvous.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nccl.h"

#define NRANKS 2
#define BOTH -1

struct bad_arg {
    ncclUniqueId id, id_cfg;
};

struct bad_ctx {
    int rank, n;
    ncclComm_t comm;
    int nbad;  /* checks that failed */
    int ncall; /* bad calls made, for the healthy collective's values */
};

/* A checked AllReduce on both ranks: the communicator still works and nobody waits. */
static void healthy(struct bad_ctx *x, int line)
{
    int32_t in[3], out[3] = {0, 0, 0};
    x->ncall++;
    for (int i = 0; i < 3; i++)
        in[i] = (x->rank + 1) * (x->ncall + i);
    ncclResult_t r = ncclAllReduce(in, out, 3, ncclInt32, ncclSum, x->comm, NULL);
    BT_TEST_CHECK(r == ncclSuccess, "line %d: AllReduce after the bad call returned %d: %s", line,
                  (int)r, ncclGetLastError(x->comm));
    for (int i = 0; i < 3; i++) {
        int32_t want = 0;
        for (int k = 0; k < x->n; k++)
            want += (k + 1) * (x->ncall + i);
        BT_TEST_CHECK(out[i] == want, "line %d: AllReduce after the bad call: [%d] = %d, want %d",
                      line, i, out[i], want);
    }
}

static void expect(struct bad_ctx *x, ncclResult_t got, ncclResult_t want, ncclComm_t errcomm,
                   const char *substr, const char *what, int line)
{
    const char *le = ncclGetLastError(errcomm);
    if (got != want) {
        fprintf(stderr, "FAIL line %d rank %d: %s returned %d (%s), want %d (%s); last error: %s\n",
                line, x->rank, what, (int)got, ncclGetErrorString(got), (int)want,
                ncclGetErrorString(want), le ? le : "(null)");
        x->nbad++;
        return;
    }
    if (substr && (!le || !strstr(le, substr))) {
        fprintf(stderr,
                "FAIL line %d rank %d: %s: ncclGetLastError() = \"%s\" does not name \"%s\"\n",
                line, x->rank, what, le ? le : "(null)", substr);
        x->nbad++;
    }
}

/* Make `call` on rank `who` (or BOTH), check its result and the last error, then run the
 * healthy collective on both ranks. */
#define BAD(who, want, errcomm, substr, call)                                                      \
    do {                                                                                           \
        if ((who) == BOTH || (who) == x->rank)                                                     \
            expect(x, (call), (want), (errcomm), (substr), #call, __LINE__);                       \
        healthy(x, __LINE__);                                                                      \
    } while (0)

#define INVAL ncclInvalidArgument

static void bad_comm_null(struct bad_ctx *x)
{
    float f[4] = {0};
    int i = 0;
    ncclResult_t ar;
    ncclRedOp_t op;
    ncclComm_t nc;
    BAD(0, INVAL, NULL, "ncclAllReduce: comm", ncclAllReduce(f, f, 1, ncclFloat, ncclSum, NULL, 0));
    BAD(1, INVAL, NULL, "ncclAllGather: comm", ncclAllGather(f, f, 1, ncclFloat, NULL, 0));
    BAD(0, INVAL, NULL, "ncclReduceScatter: comm",
        ncclReduceScatter(f, f, 1, ncclFloat, ncclSum, NULL, 0));
    BAD(1, INVAL, NULL, "ncclBroadcast: comm", ncclBroadcast(f, f, 1, ncclFloat, 0, NULL, 0));
    BAD(0, INVAL, NULL, "comm", ncclBcast(f, 1, ncclFloat, 0, NULL, 0));
    BAD(1, INVAL, NULL, "ncclReduce: comm", ncclReduce(f, f, 1, ncclFloat, ncclSum, 0, NULL, 0));
    BAD(0, INVAL, NULL, "ncclSend: comm", ncclSend(f, 1, ncclFloat, 0, NULL, 0));
    BAD(1, INVAL, NULL, "ncclRecv: comm", ncclRecv(f, 1, ncclFloat, 0, NULL, 0));
    BAD(0, INVAL, NULL, "ncclAlltoAll: comm", ncclAlltoAll(f, f, 1, ncclFloat, NULL, 0));
    BAD(1, INVAL, NULL, "ncclGather: comm", ncclGather(f, f, 1, ncclFloat, 0, NULL, 0));
    BAD(0, INVAL, NULL, "ncclScatter: comm", ncclScatter(f, f, 1, ncclFloat, 0, NULL, 0));
    BAD(BOTH, INVAL, NULL, "ncclCommCount: comm", ncclCommCount(NULL, &i));
    BAD(BOTH, INVAL, NULL, "ncclCommUserRank: comm", ncclCommUserRank(NULL, &i));
    BAD(BOTH, INVAL, NULL, "ncclCommCuDevice: comm", ncclCommCuDevice(NULL, &i));
    BAD(BOTH, INVAL, NULL, "ncclCommGetAsyncError: comm", ncclCommGetAsyncError(NULL, &ar));
    BAD(BOTH, INVAL, NULL, "ncclCommFinalize: comm", ncclCommFinalize(NULL));
    BAD(BOTH, INVAL, NULL, "ncclRedOpCreatePreMulSum: comm",
        ncclRedOpCreatePreMulSum(&op, f, ncclFloat, ncclScalarHostImmediate, NULL));
    BAD(BOTH, INVAL, NULL, "ncclRedOpDestroy: comm", ncclRedOpDestroy((ncclRedOp_t)5, NULL));
    BAD(0, INVAL, NULL, "ncclCommSplit: comm", ncclCommSplit(NULL, 0, 0, &nc, NULL));
    /* As NCCL: destroying or aborting NULL is a no-op. */
    BAD(BOTH, ncclSuccess, NULL, NULL, ncclCommDestroy(NULL));
    BAD(BOTH, ncclSuccess, NULL, NULL, ncclCommAbort(NULL));
}

static void bad_null_buffers(struct bad_ctx *x)
{
    ncclComm_t c = x->comm;
    float f[8] = {0};
    BAD(0, INVAL, c, "ncclAllReduce: sendbuff",
        ncclAllReduce(NULL, f, 4, ncclFloat, ncclSum, c, 0));
    BAD(1, INVAL, c, "ncclAllReduce: recvbuff",
        ncclAllReduce(f, NULL, 4, ncclFloat, ncclSum, c, 0));
    BAD(0, INVAL, c, "ncclAllGather: sendbuff", ncclAllGather(NULL, f, 2, ncclFloat, c, 0));
    BAD(1, INVAL, c, "ncclAllGather: recvbuff", ncclAllGather(f, NULL, 2, ncclFloat, c, 0));
    BAD(0, INVAL, c, "ncclReduceScatter: sendbuff",
        ncclReduceScatter(NULL, f, 2, ncclFloat, ncclSum, c, 0));
    BAD(1, INVAL, c, "ncclReduceScatter: recvbuff",
        ncclReduceScatter(f, NULL, 2, ncclFloat, ncclSum, c, 0));
    /* Broadcast: sendbuff matters on the root only, recvbuff everywhere. */
    BAD(0, INVAL, c, "ncclBroadcast: sendbuff", ncclBroadcast(NULL, f, 4, ncclFloat, 0, c, 0));
    BAD(1, INVAL, c, "ncclBroadcast: recvbuff", ncclBroadcast(f, NULL, 4, ncclFloat, 0, c, 0));
    BAD(0, INVAL, c, "buff is NULL", ncclBcast(NULL, 4, ncclFloat, 0, c, 0));
    /* Reduce: recvbuff matters on the root only, sendbuff everywhere. */
    BAD(1, INVAL, c, "ncclReduce: sendbuff", ncclReduce(NULL, f, 4, ncclFloat, ncclSum, 0, c, 0));
    BAD(1, INVAL, c, "ncclReduce: recvbuff", ncclReduce(f, NULL, 4, ncclFloat, ncclSum, 1, c, 0));
    BAD(0, INVAL, c, "ncclSend: sendbuff", ncclSend(NULL, 4, ncclFloat, 1, c, 0));
    BAD(1, INVAL, c, "ncclRecv: recvbuff", ncclRecv(NULL, 4, ncclFloat, 0, c, 0));
    BAD(0, INVAL, c, "ncclAlltoAll: sendbuff", ncclAlltoAll(NULL, f, 2, ncclFloat, c, 0));
    BAD(1, INVAL, c, "ncclAlltoAll: recvbuff", ncclAlltoAll(f, NULL, 2, ncclFloat, c, 0));
    BAD(0, INVAL, c, "ncclGather: sendbuff", ncclGather(NULL, f, 2, ncclFloat, 1, c, 0));
    BAD(1, INVAL, c, "ncclGather: recvbuff", ncclGather(f, NULL, 2, ncclFloat, 1, c, 0));
    BAD(0, INVAL, c, "ncclScatter: sendbuff", ncclScatter(NULL, f, 2, ncclFloat, 0, c, 0));
    BAD(1, INVAL, c, "ncclScatter: recvbuff", ncclScatter(f, NULL, 2, ncclFloat, 0, c, 0));
}

static void bad_count_overflow(struct bad_ctx *x)
{
    ncclComm_t c = x->comm;
    float f[8] = {0};
    size_t big = SIZE_MAX / 2;                /* * 4 bytes overflows */
    size_t big_n = SIZE_MAX / 4 / NRANKS + 1; /* fits as bytes, not times nranks */
    BAD(0, INVAL, c, "ncclAllReduce: count", ncclAllReduce(f, f, big, ncclFloat, ncclSum, c, 0));
    BAD(1, INVAL, c, "ncclAllReduce: count",
        ncclAllReduce(f, f, SIZE_MAX, ncclInt64, ncclSum, c, 0));
    BAD(0, INVAL, c, "ncclAllGather: count", ncclAllGather(f, f, big_n, ncclFloat, c, 0));
    BAD(1, INVAL, c, "ncclReduceScatter: count",
        ncclReduceScatter(f, f, big_n, ncclFloat, ncclSum, c, 0));
    BAD(0, INVAL, c, "ncclBroadcast: count", ncclBroadcast(f, f, big, ncclDouble, 0, c, 0));
    BAD(1, INVAL, c, "ncclReduce: count", ncclReduce(f, f, big, ncclFloat, ncclSum, 0, c, 0));
    BAD(0, INVAL, c, "ncclSend: count", ncclSend(f, big, ncclInt64, 1, c, 0));
    BAD(1, INVAL, c, "ncclRecv: count", ncclRecv(f, big, ncclInt32, 0, c, 0));
    BAD(0, INVAL, c, "ncclAlltoAll: count", ncclAlltoAll(f, f, big_n, ncclFloat, c, 0));
    BAD(1, INVAL, c, "ncclGather: count", ncclGather(f, f, big_n, ncclFloat, 0, c, 0));
    BAD(0, INVAL, c, "ncclScatter: count", ncclScatter(f, f, big_n, ncclFloat, 0, c, 0));
}

static void bad_dtype_op(struct bad_ctx *x)
{
    ncclComm_t c = x->comm;
    float f[8] = {0};
    ncclRedOp_t op;
    const ncclDataType_t dts[] = {(ncclDataType_t)12, (ncclDataType_t)-1, (ncclDataType_t)1000};
    for (int k = 0; k < 3; k++) {
        ncclDataType_t d = dts[k];
        BAD(k & 1, INVAL, c, "ncclAllReduce: datatype", ncclAllReduce(f, f, 1, d, ncclSum, c, 0));
        BAD(0, INVAL, c, "ncclAllGather: datatype", ncclAllGather(f, f, 1, d, c, 0));
        BAD(1, INVAL, c, "ncclReduceScatter: datatype",
            ncclReduceScatter(f, f, 1, d, ncclSum, c, 0));
        BAD(0, INVAL, c, "ncclBroadcast: datatype", ncclBroadcast(f, f, 1, d, 0, c, 0));
        BAD(1, INVAL, c, "ncclReduce: datatype", ncclReduce(f, f, 1, d, ncclSum, 0, c, 0));
        BAD(0, INVAL, c, "ncclSend: datatype", ncclSend(f, 1, d, 1, c, 0));
        BAD(1, INVAL, c, "ncclRecv: datatype", ncclRecv(f, 1, d, 0, c, 0));
        BAD(0, INVAL, c, "ncclAlltoAll: datatype", ncclAlltoAll(f, f, 1, d, c, 0));
        BAD(1, INVAL, c, "ncclGather: datatype", ncclGather(f, f, 1, d, 0, c, 0));
        BAD(0, INVAL, c, "ncclScatter: datatype", ncclScatter(f, f, 1, d, 0, c, 0));
        BAD(1, INVAL, c, "ncclRedOpCreatePreMulSum: datatype",
            ncclRedOpCreatePreMulSum(&op, f, d, ncclScalarHostImmediate, c));
    }
    /* Count 0 does not excuse a bad datatype or op. */
    BAD(0, INVAL, c, "ncclAllReduce: datatype",
        ncclAllReduce(NULL, NULL, 0, (ncclDataType_t)12, ncclSum, c, 0));
    const ncclRedOp_t ops[] = {ncclNumOps, (ncclRedOp_t)-1, (ncclRedOp_t)6, ncclMaxRedOp};
    for (int k = 0; k < 4; k++) {
        ncclRedOp_t o = ops[k];
        BAD(k & 1, INVAL, c, "ncclAllReduce: op", ncclAllReduce(f, f, 1, ncclFloat, o, c, 0));
        BAD(0, INVAL, c, "ncclReduceScatter: op", ncclReduceScatter(f, f, 1, ncclFloat, o, c, 0));
        BAD(1, INVAL, c, "ncclReduce: op", ncclReduce(f, f, 1, ncclFloat, o, 0, c, 0));
    }
    BAD(0, INVAL, c, "ncclAllReduce: op",
        ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclNumOps, c, 0));
}

static void bad_custom_ops(struct bad_ctx *x)
{
    ncclComm_t c = x->comm;
    float f[8] = {0}, s = 2.0f;
    ncclRedOp_t op, op2;

    /* Use after destroy: the handle is dead on the rank that destroyed it. */
    BT_TEST_OK(ncclRedOpCreatePreMulSum(&op, &s, ncclFloat, ncclScalarHostImmediate, c));
    BT_TEST_CHECK((int)op >= (int)ncclNumOps, "custom op %d is not >= ncclNumOps", (int)op);
    BT_TEST_OK(ncclRedOpDestroy(op, c));
    BAD(BOTH, INVAL, c, "ncclAllReduce: op", ncclAllReduce(f, f, 1, ncclFloat, op, c, 0));
    BAD(0, INVAL, c, "ncclReduce: op", ncclReduce(f, f, 1, ncclFloat, op, 0, c, 0));
    BAD(1, INVAL, c, "ncclReduceScatter: op", ncclReduceScatter(f, f, 1, ncclFloat, op, c, 0));
    BAD(BOTH, INVAL, c, "ncclRedOpDestroy: op", ncclRedOpDestroy(op, c)); /* twice */

    /* A live op used with another datatype than it was created for. */
    BT_TEST_OK(ncclRedOpCreatePreMulSum(&op2, &s, ncclFloat, ncclScalarDevice, c));
    BAD(0, INVAL, c, "ncclAllReduce: op", ncclAllReduce(f, f, 1, ncclDouble, op2, c, 0));
    BT_TEST_OK(ncclRedOpDestroy(op2, c));

    /* Built-in and never-created ops cannot be destroyed. */
    BAD(0, INVAL, c, "ncclRedOpDestroy: op", ncclRedOpDestroy(ncclSum, c));
    BAD(1, INVAL, c, "ncclRedOpDestroy: op", ncclRedOpDestroy(ncclAvg, c));
    BAD(0, INVAL, c, "ncclRedOpDestroy: op", ncclRedOpDestroy((ncclRedOp_t)-3, c));
    BAD(1, INVAL, c, "ncclRedOpDestroy: op", ncclRedOpDestroy((ncclRedOp_t)4242, c));
    BAD(0, INVAL, c, "ncclRedOpDestroy: op", ncclRedOpDestroy(ncclMaxRedOp, c));

    /* Bad create arguments. */
    BAD(0, INVAL, c, "ncclRedOpCreatePreMulSum: op",
        ncclRedOpCreatePreMulSum(NULL, &s, ncclFloat, ncclScalarHostImmediate, c));
    BAD(1, INVAL, c, "ncclRedOpCreatePreMulSum: scalar",
        ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat, ncclScalarHostImmediate, c));
    BAD(0, INVAL, c, "ncclRedOpCreatePreMulSum: residence",
        ncclRedOpCreatePreMulSum(&op, &s, ncclFloat, (ncclScalarResidence_t)2, c));
}

static void bad_root_peer(struct bad_ctx *x)
{
    ncclComm_t c = x->comm;
    float f[8] = {0};
    const int roots[] = {-1, NRANKS, INT_MAX, INT_MIN};
    for (int k = 0; k < 4; k++) {
        int r = roots[k];
        BAD(k & 1, INVAL, c, "ncclBroadcast: root", ncclBroadcast(f, f, 1, ncclFloat, r, c, 0));
        BAD(0, INVAL, c, "root", ncclBcast(f, 1, ncclFloat, r, c, 0));
        BAD(1, INVAL, c, "ncclReduce: root", ncclReduce(f, f, 1, ncclFloat, ncclSum, r, c, 0));
        BAD(0, INVAL, c, "ncclGather: root", ncclGather(f, f, 1, ncclFloat, r, c, 0));
        BAD(1, INVAL, c, "ncclScatter: root", ncclScatter(f, f, 1, ncclFloat, r, c, 0));
        BAD(0, INVAL, c, "ncclSend: peer", ncclSend(f, 1, ncclFloat, r, c, 0));
        BAD(1, INVAL, c, "ncclRecv: peer", ncclRecv(f, 1, ncclFloat, r, c, 0));
        /* Count 0 does not excuse a bad peer or root. */
        BAD(0, INVAL, c, "ncclSend: peer", ncclSend(NULL, 0, ncclFloat, r, c, 0));
        BAD(1, INVAL, c, "ncclReduce: root",
            ncclReduce(NULL, NULL, 0, ncclFloat, ncclSum, r, c, 0));
    }
}

/* A bad call inside a group returns the error at once and is not part of the group. */
static void bad_in_group(struct bad_ctx *x)
{
    ncclComm_t c = x->comm;
    int32_t in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
    float f[2] = {0};
    BT_TEST_OK(ncclGroupStart());
    BT_TEST_OK(ncclSend(in, 5, ncclInt32, x->rank, c, 0));
    expect(x, ncclAllReduce(f, NULL, 2, ncclFloat, ncclSum, c, 0), INVAL, c,
           "ncclAllReduce: recvbuff", "ncclAllReduce in a group", __LINE__);
    expect(x, ncclSend(f, 2, ncclFloat, 7, c, 0), INVAL, c, "ncclSend: peer", "ncclSend in a group",
           __LINE__);
    BT_TEST_OK(ncclRecv(out, 5, ncclInt32, x->rank, c, 0));
    ncclResult_t end = ncclGroupEnd();
    /* NCCL fails the whole group at ncclGroupEnd after a bad call in it; Baton drops only the
     * bad call. Either way nothing of the bad calls may run; report which one this is. */
    if (end == ncclSuccess) {
        for (int i = 0; i < 5; i++)
            BT_TEST_CHECK(out[i] == in[i], "self send/recv in the group: [%d] = %d", i, out[i]);
    } else {
        BT_TEST_CHECK(end == INVAL, "ncclGroupEnd after a bad call returned %d", (int)end);
    }
    if (x->rank == 0)
        fprintf(stderr, "note: ncclGroupEnd after a bad call in the group returned %d (%s)\n",
                (int)end, end == ncclSuccess ? "the good calls ran" : "the group failed");
    healthy(x, __LINE__);
    /* Unbalanced ncclGroupEnd: ncclInvalidUsage, as NCCL. */
    BAD(BOTH, ncclInvalidUsage, c, "ncclGroupEnd", ncclGroupEnd());
}

static void bad_queries(struct bad_ctx *x)
{
    ncclComm_t c = x->comm, nc = (ncclComm_t)0x1;
    BAD(0, INVAL, c, "ncclCommCount: count", ncclCommCount(c, NULL));
    BAD(1, INVAL, c, "ncclCommUserRank: rank", ncclCommUserRank(c, NULL));
    BAD(0, INVAL, c, "ncclCommCuDevice: device", ncclCommCuDevice(c, NULL));
    BAD(1, INVAL, c, "ncclCommGetAsyncError: asyncError", ncclCommGetAsyncError(c, NULL));
    BAD(0, INVAL, NULL, "ncclGetVersion", ncclGetVersion(NULL));
    BAD(1, INVAL, NULL, "ncclGetUniqueId", ncclGetUniqueId(NULL));
    BAD(0, INVAL, c, "ncclCommSplit: newcomm", ncclCommSplit(c, 0, 0, NULL, NULL));
    BAD(1, INVAL, c, "ncclCommSplit: color", ncclCommSplit(c, -5, 0, &nc, NULL));
    if (x->rank == 1)
        BT_TEST_CHECK(nc == NULL, "ncclCommSplit with a bad color left *newcomm = %p", (void *)nc);
    const char *s = ncclGetErrorString(ncclNumResults);
    BT_TEST_CHECK(s && strcmp(s, "unknown result code") == 0, "ncclGetErrorString(8) = %s", s);
}

static void init_config(ncclConfig_t *cfg)
{
    ncclConfig_t def = NCCL_CONFIG_INITIALIZER;
    *cfg = def;
}

/* Bad configs on a second id, then a correct init on it: the rejected calls joined nothing. */
static void bad_config(struct bad_ctx *x, const ncclUniqueId *id_cfg)
{
    ncclComm_t nc = (ncclComm_t)0x1, c = x->comm;
    ncclConfig_t cfg;
    const char *fn = "ncclCommInitRankConfig";
    char sub[128];

#define CFG_CASE(who, field_expr, name)                                                            \
    do {                                                                                           \
        init_config(&cfg);                                                                         \
        field_expr;                                                                                \
        snprintf(sub, sizeof(sub), "%s: config->%s", fn, name);                                    \
        BAD(who, INVAL, NULL, sub, ncclCommInitRankConfig(&nc, x->n, *id_cfg, x->rank, &cfg));     \
        if ((who) == BOTH || (who) == x->rank)                                                     \
            BT_TEST_CHECK(nc == NULL, "a rejected init left *comm = %p", (void *)nc);              \
        snprintf(sub, sizeof(sub), "ncclCommSplit: config->%s", name);                             \
        BAD(who, INVAL, c, sub, ncclCommSplit(c, 0, x->rank, &nc, &cfg));                          \
    } while (0)

    CFG_CASE(0, cfg.magic = 0, "magic");
    CFG_CASE(1, cfg.magic = 0xcafebeee, "magic");
    CFG_CASE(BOTH, cfg.blocking = 2, "blocking");
    CFG_CASE(0, cfg.blocking = -1, "blocking");
    CFG_CASE(1, (cfg.minCTAs = 8, cfg.maxCTAs = 4), "minCTAs");
    CFG_CASE(0, cfg.minCTAs = 0, "minCTAs");
    CFG_CASE(1, cfg.maxCTAs = -3, "maxCTAs");
    CFG_CASE(0, cfg.CTAPolicy = 5, "CTAPolicy");
    CFG_CASE(1, cfg.CTAPolicy = -2, "CTAPolicy");
    CFG_CASE(0, cfg.splitShare = 3, "splitShare");
    CFG_CASE(1, cfg.collnetEnable = 7, "collnetEnable");
    CFG_CASE(0, cfg.nChannelsPerNetPeer = 65, "nChannelsPerNetPeer");
#undef CFG_CASE

    BAD(0, INVAL, NULL, "nranks", ncclCommInitRank(&nc, 0, *id_cfg, 0));
    BAD(1, INVAL, NULL, "rank", ncclCommInitRank(&nc, x->n, *id_cfg, x->n));
    BAD(0, INVAL, NULL, "rank", ncclCommInitRank(&nc, x->n, *id_cfg, -1));
    BAD(1, INVAL, NULL, "comm", ncclCommInitRank(NULL, x->n, *id_cfg, x->rank));

    /* Now the real init on that id, with a valid non-default config. */
    init_config(&cfg);
    cfg.blocking = 1;
    cfg.minCTAs = 2;
    cfg.maxCTAs = 4;
    cfg.CTAPolicy = 1;
    ncclComm_t good = NULL;
    BT_TEST_OK(ncclCommInitRankConfig(&good, x->n, *id_cfg, x->rank, &cfg));
    int32_t v = x->rank + 1, sum = 0;
    BT_TEST_OK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, good, 0));
    BT_TEST_CHECK(sum == x->n * (x->n + 1) / 2, "AllReduce on the config comm: %d", sum);
    BT_TEST_OK(ncclCommDestroy(good));
}

/* Calls on a destroyed and on an aborted communicator. */
static void bad_dead_comm(struct bad_ctx *x)
{
    float f[4] = {0};
    int i;
    ncclResult_t ar;
    ncclRedOp_t op;
    ncclComm_t nc;
    for (int abort_it = 0; abort_it < 2; abort_it++) {
        ncclComm_t d = NULL;
        BT_TEST_OK(ncclCommSplit(x->comm, 0, x->rank, &d, NULL));
        BT_TEST_CHECK(d != NULL, "split returned NULL");
        BT_TEST_OK(abort_it ? ncclCommAbort(d) : ncclCommDestroy(d));
        const char *sub = "not a live communicator";
        BAD(BOTH, INVAL, d, sub, ncclAllReduce(f, f, 1, ncclFloat, ncclSum, d, 0));
        BAD(0, INVAL, d, sub, ncclAllGather(f, f, 1, ncclFloat, d, 0));
        BAD(1, INVAL, d, sub, ncclReduceScatter(f, f, 1, ncclFloat, ncclSum, d, 0));
        BAD(0, INVAL, d, sub, ncclBroadcast(f, f, 1, ncclFloat, 0, d, 0));
        BAD(1, INVAL, d, sub, ncclReduce(f, f, 1, ncclFloat, ncclSum, 0, d, 0));
        BAD(0, INVAL, d, sub, ncclSend(f, 1, ncclFloat, 1, d, 0));
        BAD(1, INVAL, d, sub, ncclRecv(f, 1, ncclFloat, 0, d, 0));
        BAD(0, INVAL, d, sub, ncclAlltoAll(f, f, 1, ncclFloat, d, 0));
        BAD(1, INVAL, d, sub, ncclGather(f, f, 1, ncclFloat, 0, d, 0));
        BAD(0, INVAL, d, sub, ncclScatter(f, f, 1, ncclFloat, 0, d, 0));
        BAD(BOTH, INVAL, d, sub, ncclCommCount(d, &i));
        BAD(BOTH, INVAL, d, sub, ncclCommUserRank(d, &i));
        BAD(BOTH, INVAL, d, sub, ncclCommCuDevice(d, &i));
        BAD(BOTH, INVAL, d, sub, ncclCommGetAsyncError(d, &ar));
        BAD(BOTH, INVAL, d, sub, ncclCommFinalize(d));
        BAD(BOTH, INVAL, d, sub,
            ncclRedOpCreatePreMulSum(&op, f, ncclFloat, ncclScalarHostImmediate, d));
        BAD(BOTH, INVAL, d, sub, ncclRedOpDestroy((ncclRedOp_t)5, d));
        BAD(0, INVAL, d, sub, ncclCommSplit(d, 0, 0, &nc, NULL));
        BAD(BOTH, INVAL, d, sub, ncclCommDestroy(d)); /* destroy twice */
        BAD(BOTH, INVAL, d, sub, ncclCommAbort(d));
    }
}

static int rank_main(int rank, int nranks, void *argp)
{
    const struct bad_arg *arg = argp;
    struct bt_test_leaks leaks;
    struct bad_ctx ctx = {.rank = rank, .n = nranks}, *x = &ctx;

    bt_test_leaks_begin(&leaks);
    BT_TEST_OK(ncclCommInitRank(&x->comm, nranks, arg->id, rank));
    healthy(x, __LINE__);
    bad_comm_null(x);
    bad_null_buffers(x);
    bad_count_overflow(x);
    bad_dtype_op(x);
    bad_custom_ops(x);
    bad_root_peer(x);
    bad_in_group(x);
    bad_queries(x);
    bad_config(x, &arg->id_cfg);
    bad_dead_comm(x);
    ncclResult_t ar = ncclInternalError;
    BT_TEST_OK(ncclCommGetAsyncError(x->comm, &ar));
    BT_TEST_CHECK(ar == ncclSuccess, "async error %d after the bad calls", (int)ar);
    BT_TEST_OK(ncclCommDestroy(x->comm));
    bt_test_leaks_end(&leaks);
    fprintf(stderr, "rank %d: %d bad calls checked, %d failed\n", rank, x->ncall, x->nbad);
    return x->nbad ? 1 : 0;
}

int main(void)
{
    struct bad_arg arg;
    setvbuf(stderr, NULL, _IOLBF, 0);
    int shm0 = bt_test_shm_count();
    BT_TEST_OK(ncclGetUniqueId(&arg.id));
    BT_TEST_OK(ncclGetUniqueId(&arg.id_cfg));
    int rc = bt_test_run_ranks(NRANKS, rank_main, &arg, 100);
    int shm = bt_test_shm_count();
    BT_TEST_CHECK(shm <= shm0, "%d /dev/shm/baton* entries left behind", shm - shm0);
    BT_TEST_CHECK(rc == 0, "a rank failed");
    fprintf(stderr, "bad_input passed\n");
    return 0;
}
