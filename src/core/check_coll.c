/*
 * CHECK_COLL=1: before a launch runs, the ranks of each communicator compare the
 * collectives they are about to run — collective, count, dtype, op, root, and how many
 * collectives the launch holds — with one bootstrap allgather per collective. The first
 * difference fails the launch on every rank with a message naming both sides, where it
 * would otherwise hang (different counts or roots) or compute garbage (different dtypes or
 * ops). Send/Recv are not compared: their counts pair with one peer, not all.
 * Every rank sees the same gathered records, so all of them fail (or pass) together, and
 * nothing has run yet: the communicator stays usable.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "coll/work.h"
#include "core/comm.h"
#include "core/check_coll.h"
#include "core/fanout.h"
#include "util/log.h"

struct coll_record {
    uint64_t seq; /* the communicator's collective number */
    int32_t coll, dtype, op, root;
    uint64_t count;
    int32_t nleft; /* collectives of this launch from here on, this one included */
    int32_t pre_mul, post_div;
};

static const char *op_names[] = {"sum", "prod", "max", "min"};

static void describe(const struct coll_record *r, char *buf, size_t len)
{
    static const char *dtypes[] = {"int8",    "uint8",    "int32",   "uint32",
                                   "int64",   "uint64",   "float16", "float32",
                                   "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
    const char *dt = r->dtype >= 0 && r->dtype < BT_NUM_DTYPES ? dtypes[r->dtype] : "?";
    const char *op = r->op >= 0 && r->op < 4 ? op_names[r->op] : "?";
    const char *coll = bt_coll_name(r->coll);
    int reduces = r->coll == BT_COLL_ALLREDUCE || r->coll == BT_COLL_REDUCESCATTER ||
                  r->coll == BT_COLL_REDUCE;
    int rooted = r->coll == BT_COLL_BROADCAST || r->coll == BT_COLL_REDUCE;
    char opbuf[48] = "", rootbuf[24] = "";
    if (reduces)
        snprintf(opbuf, sizeof(opbuf), ", op %s%s",
                 r->pre_mul && !r->post_div ? "premulsum/avg" : op, r->post_div ? " (avg)" : "");
    if (rooted)
        snprintf(rootbuf, sizeof(rootbuf), ", root %d", r->root);
    snprintf(buf, len, "%s(count %llu, %s%s%s) [%d collective(s) in this launch from here]", coll,
             (unsigned long long)r->count, dt, opbuf, rootbuf, r->nleft);
}

static int is_coll(const struct bt_op *op)
{
    return op->coll != BT_COLL_SEND && op->coll != BT_COLL_RECV;
}

/* Compare comm's collectives among ops[]. caller: the launching thread (or a helper). */
static bt_status_t check_comm(struct bt_comm *comm, const struct bt_op *ops, int nops)
{
    int total = 0;
    for (int i = 0; i < nops; i++)
        total += ops[i].comm == comm && is_coll(&ops[i]);
    struct coll_record *all = calloc((size_t)comm->nranks, sizeof(*all));
    if (!all)
        return BT_ERR_SYSTEM;
    bt_status_t st = BT_OK;
    int k = 0;
    for (int i = 0; i < nops && st == BT_OK; i++) {
        const struct bt_op *op = &ops[i];
        if (op->comm != comm || !is_coll(op))
            continue;
        struct coll_record *me = &all[comm->rank];
        memset(all, 0, sizeof(*all) * (size_t)comm->nranks);
        me->seq = comm->ncolls + (uint64_t)k + 1;
        me->coll = op->coll;
        me->dtype = op->dtype;
        me->op = op->coll == BT_COLL_ALLGATHER || op->coll == BT_COLL_BROADCAST ? 0 : op->redop.op;
        me->pre_mul =
            op->coll == BT_COLL_ALLGATHER || op->coll == BT_COLL_BROADCAST ? 0 : op->redop.pre_mul;
        me->post_div = op->redop.post_div;
        me->root = op->coll == BT_COLL_BROADCAST || op->coll == BT_COLL_REDUCE ? op->peer : -1;
        me->count = op->count;
        me->nleft = total - k;
        k++;
        st = bt_bootstrap_allgather(comm->bs, all, sizeof(*all));
        if (st != BT_OK)
            break;
        for (int r = 1; r < comm->nranks; r++) {
            struct coll_record a = all[0], b = all[r];
            a.seq = b.seq = 0; /* numbering may differ after earlier p2p-only launches */
            if (memcmp(&a, &b, sizeof(a)) == 0)
                continue;
            char d0[160], dr[160];
            describe(&all[0], d0, sizeof(d0));
            describe(&all[r], dr, sizeof(dr));
            BT_WARN("CHECK_COLL: collective #%llu of this communicator differs between ranks: "
                    "rank 0 calls %s, rank %d calls %s",
                    (unsigned long long)all[comm->rank].seq, d0, r, dr);
            st = BT_ERR_INVALID_USAGE;
            break;
        }
    }
    free(all);
    return st;
}

struct check_ctx {
    const struct bt_op *ops;
    int nops;
};

static bt_status_t check_one(struct bt_comm *comm, void *ctx)
{
    const struct check_ctx *c = ctx;
    return check_comm(comm, c->ops, c->nops);
}

static int wants_check(const struct bt_op *op, void *ctx)
{
    (void)ctx;
    return op->comm->check_coll && is_coll(op);
}

bt_status_t bt_check_colls(const struct bt_op *ops, int nops)
{
    struct check_ctx ctx = {ops, nops};
    return bt_for_each_comm(ops, nops, wants_check, check_one, &ctx);
}
