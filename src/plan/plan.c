/* The planner (plan.h). */
#include "plan/plan.h"

#include <string.h>

#include "coll/algo.h"
#include "coll/dtype.h"
#include "util/log.h"
#include "util/param.h"

size_t bt_plan_bytes(const struct bt_op *op, int nranks)
{
    size_t b = op->count * bt_dtype_size(op->dtype);
    if (op->coll == BT_COLL_ALLGATHER || op->coll == BT_COLL_REDUCESCATTER)
        b *= (size_t)nranks;
    return b;
}

void bt_redop_scalar_from_bytes(struct bt_redop *op, const void *v)
{
    switch (op->dtype) {
    case BT_INT8:
        op->scalar_i = *(const int8_t *)v;
        break;
    case BT_UINT8:
        op->scalar_i = *(const uint8_t *)v;
        break;
    case BT_INT32:
        op->scalar_i = *(const int32_t *)v;
        break;
    case BT_UINT32:
        op->scalar_i = *(const uint32_t *)v;
        break;
    case BT_INT64:
    case BT_UINT64:
        memcpy(&op->scalar_i, v, 8);
        break;
    case BT_FLOAT16:
        op->scalar_f = bt_half_to_float(*(const uint16_t *)v);
        break;
    case BT_BFLOAT16:
        op->scalar_f = bt_bf16_to_float(*(const uint16_t *)v);
        break;
    case BT_FP8E4M3:
        op->scalar_f = bt_e4m3_to_float(*(const uint8_t *)v);
        break;
    case BT_FP8E5M2:
        op->scalar_f = bt_e5m2_to_float(*(const uint8_t *)v);
        break;
    case BT_FLOAT32:
        op->scalar_f = *(const float *)v;
        break;
    case BT_FLOAT64:
        op->scalar_f = *(const double *)v;
        break;
    }
}

int bt_plan_single(const struct bt_op *op)
{
    const struct bt_redop *r = &op->redop;
    int reduces = op->coll == BT_COLL_ALLREDUCE || op->coll == BT_COLL_REDUCE ||
                  op->coll == BT_COLL_REDUCESCATTER;
    /* a one-rank average divides by 1; only a PreMulSum by another scalar changes values */
    int scales =
        r->pre_mul && (bt_dtype_is_float(r->dtype) ? r->scalar_f != 1.0 : r->scalar_i != 1);
    if (reduces && scales)
        return 2;
    return op->recvbuf != op->sendbuf ? 1 : 0;
}

/* Whether the op's input and output do not overlap: then a NET connector may send from
 * the one and land data in the other directly (bt_work.zero_copy). */
static int bufs_disjoint(const struct bt_op *op, int nranks)
{
    size_t es = bt_dtype_size(op->dtype), in = op->count * es, out = in;
    if (op->coll == BT_COLL_ALLGATHER)
        out *= (size_t)nranks;
    else if (op->coll == BT_COLL_REDUCESCATTER)
        in *= (size_t)nranks;
    uintptr_t s = (uintptr_t)op->sendbuf, r = (uintptr_t)op->recvbuf;
    return !op->sendbuf || !op->recvbuf || s + in <= r || r + out <= s;
}

/* The fields every work of an op shares. */
static void work_common(struct bt_work *w, const struct bt_plan_target *tg, const struct bt_op *op)
{
    memset(w, 0, sizeof(*w));
    w->coll = (uint8_t)op->coll;
    w->algo = BT_ALGO_RING;
    w->proto = BT_PROTO_SIMPLE;
    w->redop = op->redop;
    w->sendbuf = op->sendbuf;
    w->recvbuf = op->recvbuf;
    w->esize = bt_dtype_size(op->dtype);
    w->count = op->count;
    w->root = op->peer;
    w->nranks = tg->nranks;
    w->rank = tg->rank;
    w->abort_flag = tg->abort_flag;
    w->owner = tg->owner;
    w->seq = op->seq;
}

/* What the tuner is told of an operation on a target. */
static struct bt_tune_in tune_in(const struct bt_plan_target *tg, const struct bt_op *op)
{
    return (struct bt_tune_in){
        .set = tg->set,
        .def = tg->def,
        .coll = op->coll,
        .nranks = tg->nranks,
        .bytes = bt_plan_bytes(op, tg->nranks),
        .esize = bt_dtype_size(op->dtype),
        .max_channels = tg->max_channels,
        .simple_slot = tg->simple_slot,
        .ll_payload = tg->ll_payload,
        .ll128_payload = tg->ll128_payload,
        .direct_ll128_payload = tg->direct_ll128_payload,
        .direct_slot = tg->direct_slot,
        .direct_ok = tg->direct_ok,
        .direct_max_channels = tg->direct_max_channels,
        .tree_ok = tg->tree_ok,
        .tree_max_channels = tg->tree_max_channels,
        .nhosts = tg->nhosts,
        .pat_ok = tg->pat_ok,
        .one_per_host = tg->one_per_host,
        .shm_all = tg->shm_all,
        .shared_gpu = tg->shared_gpu,
        .net_gbps = tg->net_gbps,
        .net_latency_us = tg->net_latency_us,
    };
}

double bt_plan_predict_us(const struct bt_plan_target *tg, const struct bt_op *op)
{
    if (tg->nranks <= 1 || op->count == 0)
        return 0; /* a copy at most, or nothing */
    struct bt_tune_in in = tune_in(tg, op);
    struct bt_tune_out t;
    bt_tune_coll(&in, &t);
    return t.us;
}

/* The tuner's choice for a collective, through the target's memo. */
static void plan_tune(const struct bt_plan_target *tg, const struct bt_op *op,
                      struct bt_tune_out *t)
{
    size_t es = bt_dtype_size(op->dtype);
    struct bt_tune_in in = tune_in(tg, op);
    struct bt_tune_memo *m = tg->memo;
    int hit = 0;
    for (int k = 0; m && k < BT_TUNE_MEMO && !hit; k++) {
        const struct bt_tune_memo_entry *e = &m->e[k];
        if (e->bytes == in.bytes && e->coll == op->coll && e->esize == es) {
            *t = e->out;
            hit = 1;
        }
    }
    if (!hit) {
        bt_tune_coll(&in, t);
        /* a PAT ReduceScatter keeps partial sums of bt_pat_scratch_blocks chunks (coll/pat.h):
         * chunks small enough that they fit BT_PAT_SCRATCH_MAX */
        if (t->algo == BT_ALGO_PAT && op->coll == BT_COLL_REDUCESCATTER) {
            size_t room = tg->pat_scratch ? tg->pat_scratch : BT_PAT_SCRATCH_MAX;
            size_t most = room / ((size_t)bt_pat_scratch_blocks(tg->nranks) * es);
            if (t->chunk > most)
                t->chunk = most > 0 ? most : 1;
        }
        if (m) {
            m->e[m->next] = (struct bt_tune_memo_entry){op->coll, in.bytes, es, *t};
            m->next = (m->next + 1) % BT_TUNE_MEMO;
        }
    }
    BT_TRACE(BT_LOG_TUNING, "coll %d count %zu bytes %zu: algo %d proto %d nch %d chunk %zu",
             op->coll, op->count, in.bytes, t->algo, t->proto, t->nchannels, t->chunk);
}

int bt_plan_all_peers(const struct bt_plan_target *tg, const struct bt_op *op)
{
    if (tg->nranks <= 1 || op->count == 0 || bt_coll_is_p2p(op->coll))
        return 0;
    struct bt_tune_out t;
    plan_tune(tg, op, &t);
    return bt_algo_all_peers(t.algo);
}

void bt_plan_coll(const struct bt_plan_target *tg, const struct bt_op *op, struct bt_tune_out *t,
                  struct bt_work *w)
{
    size_t es = bt_dtype_size(op->dtype);
    plan_tune(tg, op, t);

    /* Channel c takes elements [c * share, (c + 1) * share): shares start on `align`-byte
     * boundaries; the channels that get elements are the same on every rank. */
    size_t align = tg->align > es ? tg->align / es : 1;
    size_t share = bt_div_up(bt_div_up(op->count, (size_t)t->nchannels), align) * align;
    work_common(w, tg, op);
    w->algo = (uint8_t)t->algo;
    w->proto = (uint8_t)t->proto;
    w->nchans = (uint32_t)bt_min_sz((size_t)t->nchannels, bt_div_up(op->count, share));
    w->chan_off = 0;
    w->chan_count = bt_min_sz(share, op->count);
    w->chunk = t->chunk;
    w->chan = tg->chan;
    if (tg->host_chan && tg->host_chan[0].ring.split)
        w->split_max = tg->host_chan[0].ring.split_max;
    /* Not for trees: their halves share the output between two lanes. */
    /* Nor for a PAT ReduceScatter: it sends partial sums from scratch, which the next loop
     * rewrites. */
    w->zero_copy = tg->zero_copy && t->algo != BT_ALGO_TREE &&
                   !(t->algo == BT_ALGO_PAT && op->coll == BT_COLL_REDUCESCATTER) &&
                   bt_param_net_zero_copy() && bufs_disjoint(op, tg->nranks);
    if (bt_algo_all_peers(t->algo)) {
        w->peer_send = tg->peer_send;
        w->peer_recv = tg->peer_recv;
        w->scratch = tg->scratch;
        w->scratch_stride = tg->scratch_stride;
    }
    w->nsteps = bt_algo_nsteps(w); /* channel 0's: each channel counts its own */
}

void bt_plan_pick(const struct bt_plan_target *tg, int coll, size_t bytes, int dtype,
                  struct bt_tune_out *t)
{
    struct bt_op op = {.coll = coll, .dtype = dtype, .redop = {.dtype = dtype}};
    size_t per =
        bt_dtype_size(dtype) *
        (coll == BT_COLL_ALLGATHER || coll == BT_COLL_REDUCESCATTER ? (size_t)tg->nranks : 1);
    op.count = bytes / per > 0 ? bytes / per : 1;
    struct bt_work w;
    bt_plan_coll(tg, &op, t, &w);
    t->nchannels = (int)(w.nchans > 1 ? w.nchans : 1); /* the channels that get elements */
}

int bt_plan_channel(struct bt_work *w, uint32_t c, struct bt_work *down)
{
    if (c > 0)
        bt_work_channel(w, c);
    else
        w->nchans = 1; /* channel 0's fields are the planned work's */
    /* a ring split by link speed has its own blocks (host channels only: a GPU's rings keep
     * equal blocks) */
    const struct bt_ring *ring = &w->chan->ring;
    if (w->split_max != (ring->split ? ring->split_max : 0)) {
        w->split_max = ring->split ? ring->split_max : 0;
        w->nsteps = bt_algo_nsteps(w);
    }
    if (w->algo != BT_ALGO_TREE || w->chan->tree.up < 0)
        return 0;
    *down = *w;
    down->algo = BT_ALGO_TREE_DOWN;
    return 1;
}

int bt_plan_p2p(const struct bt_plan_target *tg, const struct bt_op *op, struct bt_work *works)
{
    size_t bytes = op->count * bt_dtype_size(op->dtype);
    size_t align = tg->align ? tg->align : 1;
    /* Cut by size alone, so sender and receiver cut alike; MIN_NCHANNELS asks for more parts,
     * as many as fit. */
    size_t want = bt_div_up(bytes, tg->p2p_min_part ? tg->p2p_min_part : bytes);
    if (want < (size_t)tg->set->min_nchannels)
        want = bt_min_sz((size_t)tg->set->min_nchannels, bt_div_up(bytes, align));
    int parts = (int)bt_min_sz((size_t)(tg->p2p_parts > 0 ? tg->p2p_parts : 1), want);
    /* Small messages in LL lines (no fence, no tail) unless PROTO says otherwise; both ends
     * decide from the size and rank 0's settings. */
    const struct bt_tune_settings *ts = tg->set;
    int ll = tg->p2p_ll_max > 0 && ts->ll_ok && (!ts->simple_ok || bytes <= tg->p2p_ll_max);
    size_t share = bt_div_up(bt_div_up(bytes, (size_t)parts), align) * align;
    int n = 0;
    for (int k = 0; k < parts; k++) {
        size_t off = (size_t)k * share;
        if (off >= bytes)
            break;
        struct bt_work *w = &works[n++];
        work_common(w, tg, op);
        /* a byte copy: the uint8 kernel on a GPU, whatever the dtype */
        w->redop.dtype = BT_UINT8;
        w->esize = 1;
        w->count = bytes;
        w->chan_off = off;
        w->chan_count = bt_min_sz(share, bytes - off);
        w->chunk = tg->p2p_slot;
        if (ll) {
            w->proto = BT_PROTO_LL;
            w->chunk = tg->ll_payload;
        }
        w->zero_copy = tg->zero_copy && bt_param_net_zero_copy(); /* one buffer: in or out */
        w->nsteps = bt_algo_nsteps(w);
    }
    return n;
}
