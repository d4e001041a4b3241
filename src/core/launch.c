/*
 * The launch: a group's operations checked, split between the executors and run, one loop for
 * both through their tables (exec/exec.h).
 *
 *   every comm in use (abort waits for it) -> CHECK_COLL (check_coll.c)
 *   -> the gate (each comm can run) and self pairing (sends to self with receives from self)
 *   -> host ops first, then the GPU comms' ops on device buffers, grouped per comm
 *   -> what an executor cannot do, refused before anything runs
 *   -> per executor (run_part): its states made where missing (the CUDA executor's together,
 *      watched), then per op: numbers and scalars (begin_op), then placed (place_op), then run
 *   -> a failure while ops run poisons the comms (fail_policy)
 * Nothing has run when a check fails: the communicators stay as they were.
 */
#include "core/launch.h"

#include <stdlib.h>
#include <string.h>

#include "coll/dtype.h"
#include "core/arrival.h"
#include "core/check_coll.h"
#include "core/comm.h"
#include "core/fanout.h"
#include "core/liveness.h"
#include "core/watch.h"
#include "core/window.h"
#include "device/device.h"
#include "exec/exec.h"
#include "plan/plan.h"

/* ---- what core does for a waiting executor --------------------------------------------- */

static void hook_hang(const struct bt_exec_comm *ec, uint64_t seq)
{
    bt_arrival_hang(ec->owner, seq);
}

static void hook_stalled(const struct bt_exec_comm *ec)
{
    bt_arrival_serve(ec->owner);
}

static int hook_peer_down(const struct bt_exec_comm *ec, int peer, const char *what, uint64_t seq)
{
    return bt_liveness_report_down(ec->owner, peer, what, seq, 0);
}

static int hook_peer_lost(const struct bt_exec_comm *ec, int peer, const char *what, uint64_t seq,
                          uint64_t stalled_ns)
{
    return bt_liveness_report_lost(ec->owner, peer, what, seq, stalled_ns);
}

static void hook_net_failed(const struct bt_exec_comm *ec, int peer)
{
    bt_liveness_report_net(ec->owner, peer);
}

const struct bt_exec_hooks bt_launch_hooks = {
    .hang = hook_hang,
    .stalled = hook_stalled,
    .peer_down = hook_peer_down,
    .peer_lost = hook_peer_lost,
    .net_failed = hook_net_failed,
};

/* ---- checks before anything runs ------------------------------------------------------ */

static int is_self(const struct bt_op *op)
{
    return bt_coll_is_p2p(op->coll) && op->peer == op->comm->rank && op->count != 0;
}

/* The communicator can run operations: its init finished and nothing failed since. */
bt_status_t bt_launch_gate(struct bt_comm *comm)
{
    if (!comm->init_done || comm->init_status != BT_OK) {
        BT_WARN("rank %d: communicator %p did not finish its initialization (error %d)", comm->rank,
                (void *)comm, (int)comm->init_status);
        return comm->init_status != BT_OK ? comm->init_status : BT_ERR_INVALID_USAGE;
    }
    if (atomic_load_explicit(&comm->revoked, memory_order_acquire)) {
        BT_WARN("rank %d: communicator %p was revoked (ncclCommRevoke or a NCCL_SHRINK_ABORT "
                "shrink); only ncclCommShrink, ncclCommDestroy and ncclCommAbort apply to it",
                comm->rank, (void *)comm);
        return BT_ERR_INVALID_USAGE;
    }
    if (atomic_load_explicit(&comm->suspended, memory_order_acquire)) {
        BT_WARN("rank %d: communicator %p is suspended (ncclCommSuspend): ncclCommResume it "
                "before its next operation",
                comm->rank, (void *)comm);
        return BT_ERR_INVALID_USAGE;
    }
    bt_status_t async = bt_comm_async_error(comm); /* a GPU kernel's report included */
    if (async != BT_OK) {
        BT_WARN("rank %d: communicator %p has failed earlier (error %d); destroy or abort it",
                comm->rank, (void *)comm, (int)async);
        return async;
    }
    return BT_OK;
}

/* Each communicator's k-th send to itself pairs with its k-th receive from itself, whatever
 * their order in the group (a send to self never waits, so there is no order to keep); the
 * pair's copy is made by the executor both run on, so both must run on one. Sets each
 * receive's self_src and self_bytes. */
static bt_status_t match_self(struct bt_op *ops, int nops, int (*on_gpu)(const struct bt_op *))
{
    for (int i = 0; i < nops; i++)
        ops[i].self_src = NULL;
    for (int i = 0; i < nops; i++) {
        struct bt_op *s = &ops[i];
        if (s->coll != BT_COLL_SEND || !is_self(s))
            continue;
        struct bt_op *r = NULL;
        for (int j = 0; j < nops && !r; j++)
            if (ops[j].coll == BT_COLL_RECV && ops[j].comm == s->comm && is_self(&ops[j]) &&
                !ops[j].self_src)
                r = &ops[j];
        if (!r) {
            BT_WARN("rank %d: ncclSend to itself (%zu elements) has no matching ncclRecv from "
                    "itself in the same group",
                    s->comm->rank, s->count);
            return BT_ERR_INVALID_USAGE;
        }
        if (on_gpu(s) != on_gpu(r)) {
            BT_WARN("rank %d: ncclSend to itself from %s memory pairs with an ncclRecv from itself "
                    "into %s memory: both buffers of a send/recv to oneself must be device "
                    "memory, or both host memory",
                    s->comm->rank, on_gpu(s) ? "device" : "host", on_gpu(r) ? "device" : "host");
            return BT_ERR_INVALID_USAGE;
        }
        r->self_src = s->sendbuf;
        r->self_bytes =
            bt_min_sz(s->count * bt_dtype_size(s->dtype), r->count * bt_dtype_size(r->dtype));
    }
    for (int j = 0; j < nops; j++) {
        struct bt_op *r = &ops[j];
        if (r->coll == BT_COLL_RECV && is_self(r) && !r->self_src) {
            BT_WARN("rank %d: ncclRecv from itself (%zu elements) has no matching ncclSend to "
                    "itself in the same group",
                    r->comm->rank, r->count);
            return BT_ERR_INVALID_USAGE;
        }
    }
    return BT_OK;
}

/* A communicator's operations on device buffers run on the CUDA executor, the rest on the
 * host's. */
static int op_is_gpu(const struct bt_op *op)
{
    return op->comm->cuda_dev >= 0 &&
           (bt_device_ptr_is_device(op->sendbuf) || bt_device_ptr_is_device(op->recvbuf));
}

/* Reorder ops (stably) so the host ones come first, then the GPU ones grouped by
 * communicator, each keeping its order: a communicator's sends and receives of a group then
 * share one kernel. Returns how many are GPU ops (-1: out of memory). */
static int gpu_ops_last(struct bt_op *ops, int nops)
{
    if (nops == 1) /* the common call outside a group: one pointer query, no allocation */
        return op_is_gpu(&ops[0]);
    /* one pointer query per op (~0.1-0.15 us each): into a small array, the heap past it */
    char small[64], *gpu = nops <= (int)sizeof(small) ? small : malloc((size_t)nops);
    if (!gpu)
        return -1;
    int ngpu = 0, ordered = 1;
    for (int i = 0; i < nops; i++) {
        gpu[i] = (char)op_is_gpu(&ops[i]);
        ngpu += gpu[i];
        /* in order already: host ops first, then each communicator's GPU ops together */
        if (i > 0 && gpu[i - 1] && !gpu[i])
            ordered = 0;
        if (i > 0 && gpu[i - 1] && gpu[i] && ops[i].comm != ops[i - 1].comm)
            for (int j = 0; j < i - 1 && ordered; j++)
                ordered = !(gpu[j] && ops[j].comm == ops[i].comm);
    }
    struct bt_op *tmp = NULL;
    if (ngpu > 0 && !ordered && !(tmp = malloc(sizeof(*tmp) * (size_t)nops)))
        ngpu = -1;
    if (tmp) {
        int n = 0;
        for (int i = 0; i < nops; i++)
            if (!gpu[i])
                tmp[n++] = ops[i];
        for (int i = 0; i < nops; i++) { /* each communicator's GPU ops, at its first one */
            if (!gpu[i])
                continue;
            struct bt_comm *c = ops[i].comm;
            for (int j = i; j < nops; j++)
                if (gpu[j] && ops[j].comm == c) {
                    tmp[n++] = ops[j];
                    gpu[j] = 0;
                }
        }
        memcpy(ops, tmp, sizeof(*tmp) * (size_t)nops);
        free(tmp);
    }
    if (gpu != small)
        free(gpu);
    return ngpu;
}

static bt_status_t refuse_scale(const struct bt_exec_ops *ex)
{
    BT_WARN("PreMulSum with a scalar other than 1 on a one-rank communicator's %s operations is "
            "not supported yet",
            ex->name);
    return BT_ERR_INVALID_USAGE;
}

/* What the executor cannot do with op (its state: NULL until made). A one-rank collective
 * that scales needs an executor that can; a scalar in memory is only known at its turn
 * (single()). */
static bt_status_t check_op(const struct bt_exec_ops *ex, const void *state, const struct bt_op *op)
{
    if (!ex->check && ex->scale) /* nothing it cannot do (the host executor) */
        return BT_OK;
    if (state && ex->check)
        BT_CHECK(ex->check(state, op));
    if (!ex->scale && op->comm->nranks == 1 && op->count > 0 && !op->scalar_ptr &&
        !bt_coll_is_p2p(op->coll) && bt_plan_single(op) == 2)
        return refuse_scale(ex);
    return BT_OK;
}

/* ---- the executors' states --------------------------------------------------------------- */

static int lacks_state(const struct bt_op *op, void *kind)
{
    return op->comm->exec[(intptr_t)kind] == NULL;
}

/* Make comm's state on the executor and publish it whole: other threads read it
 * (ncclCommGetAsyncError, abort). */
static bt_status_t create_state(struct bt_comm *comm, void *kind)
{
    void *state = NULL;
    bt_status_t st = bt_exec_of((int)(intptr_t)kind)->create(&comm->ec, &state);
    __atomic_store_n(&comm->exec[(intptr_t)kind], state, __ATOMIC_RELEASE);
    return st;
}

static bt_status_t create_watched(struct bt_comm *comm, void *kind)
{
    bt_status_t st = create_state(comm, kind);
    bt_watch_setup_done(comm); /* now: another comm of the group may still wait */
    return st;
}

/* A collective setup: every rank joins it at its first operation on the executor. Before
 * it, each communicator that sets up marks its first collective of the launch on the arrival
 * board (begin_op marks it again, the same number) and tells the watcher, so that a rank that
 * never comes shows in a hang report instead of a silent wait. Several communicators of the
 * thread set up at once (fanout.h). Ops of one comm are contiguous. */
static bt_status_t create_collective(struct bt_op *ops, int nops, intptr_t kind)
{
    for (int i = 0; i < nops; i++) {
        struct bt_comm *comm = ops[i].comm;
        if (comm->exec[kind] || (i > 0 && comm == ops[i - 1].comm))
            continue;
        uint64_t seq = 0;
        for (int j = i; j < nops && ops[j].comm == comm && !seq; j++)
            if (!bt_coll_is_p2p(ops[j].coll))
                seq = comm->ncolls + 1;
        if (seq)
            bt_arrival_start(comm, seq);
        bt_watch_setup(comm, seq);
    }
    bt_status_t st = bt_for_each_comm(ops, nops, lacks_state, create_watched, (void *)kind);
    for (int i = 0; i < nops; i++) {
        if (i > 0 && ops[i].comm == ops[i - 1].comm)
            continue;
        bt_watch_setup_done(ops[i].comm); /* again, for a setup that never ran */
        if (!ops[i].comm->exec[kind])     /* it failed: the collective did not start after all */
            bt_arrival_start(ops[i].comm, ops[i].comm->ncolls);
    }
    return st;
}

/* *made: whether a state was made just now (its ops are checked again, with it). */
static bt_status_t make_states(struct bt_op *ops, int nops, intptr_t kind, int *made)
{
    int missing = 0;
    for (int i = 0; i < nops && !missing; i++)
        missing = ops[i].comm->exec[kind] == NULL;
    *made = missing;
    if (!missing)
        return BT_OK;
    if (bt_exec_of((int)kind)->collective_setup)
        return create_collective(ops, nops, kind);
    for (int i = 0; i < nops; i++)
        if (!ops[i].comm->exec[kind])
            BT_CHECK(create_state(ops[i].comm, (void *)kind));
    return BT_OK;
}

/* The connections the ops need that their states lack (exec.h: lacks, connect), made before
 * anything is placed: pairwise with peers, which may be communicators of this same thread
 * (fanout.h). */
struct connect_job {
    const struct bt_exec_ops *ex;
    const struct bt_op *ops;
    int nops;
    intptr_t kind;
};

static int lacks_conns(const struct bt_op *op, void *arg)
{
    const struct connect_job *j = arg;
    return j->ex->lacks(op->comm->exec[j->kind], op);
}

/* comm's ops (contiguous in a launch) */
static bt_status_t connect_comm(struct bt_comm *comm, void *arg)
{
    const struct connect_job *j = arg;
    int first = 0, n = 0;
    while (first < j->nops && j->ops[first].comm != comm)
        first++;
    while (first + n < j->nops && j->ops[first + n].comm == comm)
        n++;
    return j->ex->connect(comm->exec[j->kind], j->ops + first, n);
}

/* ---- placing and running ------------------------------------------------------------------ */

/* An op starts (in launch order, on its executor): a collective gets its number (op->seq,
 * the same sequence on every rank) on the arrival board; a PreMulSum scalar in memory is read
 * now (device memory, on a GPU communicator, after the op's stream's earlier work). */
static bt_status_t begin_op(struct bt_op *op)
{
    struct bt_comm *comm = op->comm;
    bt_log_set_comm(comm->rank, comm->config.name);
    op->seq = 0; /* send/recv sequences differ between ranks: no number */
    if (!bt_coll_is_p2p(op->coll))
        bt_arrival_start(comm, op->seq = ++comm->ncolls); /* this rank has called it */
    if (!op->scalar_ptr)
        return BT_OK;
    unsigned char v[8] = {0};
    size_t es = bt_dtype_size(op->dtype);
    if (comm->cuda_dev >= 0 && bt_device_ptr_is_device(op->scalar_ptr)) /* no CUDA on host comms */
        BT_CHECK(bt_device_read_after(v, op->scalar_ptr, es, op->stream));
    else
        memcpy(v, op->scalar_ptr, es);
    bt_redop_scalar_from_bytes(&op->redop, v);
    return BT_OK;
}

/* A one-rank collective: the output is the input (AllReduce, Broadcast, ...), scaled where a
 * PreMulSum says so. */
static bt_status_t single(const struct bt_exec_ops *ex, void *s, const struct bt_op *op)
{
    switch (bt_plan_single(op)) {
    case 1:
        return ex->copy(s, op->recvbuf, op->sendbuf, op->count * bt_dtype_size(op->dtype),
                        op->stream);
    case 2:
        return ex->scale ? ex->scale(s, op) : refuse_scale(ex);
    }
    return BT_OK;
}

/* Place one op on its executor (state s). */
static bt_status_t place_op(const struct bt_exec_ops *ex, void *s, struct bt_op *op)
{
    struct bt_comm *comm = op->comm;
    BT_CHECK(begin_op(op));
    if (bt_coll_is_p2p(op->coll)) {
        if (op->self_src && op->recvbuf != op->self_src) /* paired by match_self */
            BT_CHECK(ex->copy(s, op->recvbuf, op->self_src, op->self_bytes, op->stream));
        if (op->count == 0 || op->peer == comm->rank)
            return BT_OK;
        return ex->p2p(s, op);
    }
    if (op->count == 0)
        return BT_OK;
    if (comm->nranks == 1)
        return single(ex, s, op);
    struct bt_win_pair wp;
    bt_status_t st = BT_OK;
    if (op->coll == BT_COLL_ALLREDUCE && ex->window &&
        bt_window_pair(comm, op->sendbuf, op->recvbuf, op->count * bt_dtype_size(op->dtype), ex,
                       &wp) &&
        ex->window(s, op, &wp, &st)) {
        comm->stats.colls += st == BT_OK;
        comm->stats.window += st == BT_OK;
        return st;
    }
    struct bt_exec_placed placed = {0};
    BT_CHECK(ex->coll(s, op, &placed));
    comm->stats.colls++;
    comm->stats.by_algo[placed.algo]++;
    comm->stats.ring_split += placed.split != 0;
    return BT_OK;
}

/* One executor's part of the launch, after the checks. */
static bt_status_t run_part(struct bt_op *ops, int nops, intptr_t kind)
{
    const struct bt_exec_ops *ex = bt_exec_of((int)kind);
    int made = 0;
    BT_CHECK(make_states(ops, nops, kind, &made));
    /* states made just now: what their executor refuses still queues nothing (the host part
     * of the launch has run, though: the checks before it refuse what they can) */
    for (int i = 0; i < nops && made; i++)
        BT_CHECK(check_op(ex, ops[i].comm->exec[kind], &ops[i]));
    if (ex->lacks) {
        struct connect_job j = {.ex = ex, .ops = ops, .nops = nops, .kind = kind};
        BT_CHECK(bt_for_each_comm(ops, nops, lacks_conns, connect_comm, &j));
    }
    ex->begin();
    bt_status_t st = BT_OK;
    for (int i = 0; i < nops && st == BT_OK; i++)
        st = place_op(ex, ops[i].comm->exec[kind], &ops[i]);
    if (st == BT_OK)
        st = ex->run();
    if (st != BT_OK) {
        ex->discard();
        return st;
    }
    if (ex->ops_complete) /* each comm's last collective of the launch is done */
        for (int i = 0; i < nops; i++)
            bt_arrival_done(ops[i].comm, ops[i].comm->ncolls);
    return BT_OK;
}

/* A launch failed with `st` while its ops ran: a peer that failed or a resource that broke
 * poisons the communicators involved (their async error: the ranks may be apart now); a
 * usage error of this call does not. */
static void fail_policy(struct bt_op *ops, int nops, bt_status_t st)
{
    if (st != BT_ERR_REMOTE && st != BT_ERR_SYSTEM && st != BT_ERR_INTERNAL && st != BT_ERR_CUDA)
        return;
    for (int i = 0; i < nops; i++)
        bt_comm_set_async_error(ops[i].comm, st);
}

/* ---- the model's time ------------------------------------------------------------------- */

bt_status_t bt_launch_predict_us(struct bt_op *op, double *us)
{
    intptr_t kind = op_is_gpu(op) ? BT_EXEC_CUDA : BT_EXEC_HOST;
    const struct bt_exec_ops *ex = bt_exec_of((int)kind);
    struct bt_comm *comm = op->comm;
    struct bt_plan_target model;
    const struct bt_plan_target *tg = NULL;
    if (!comm->exec[kind] && kind == BT_EXEC_HOST)
        BT_CHECK(create_state(comm, (void *)kind)); /* local and cheap, as at a first launch */
    if (comm->exec[kind] && ex->target)
        tg = ex->target(comm->exec[kind]);
    if (!tg && ex->model) {
        /* a GPU communicator before its first operation: its state is made collectively, so
         * the model of its size stands in (no NVLink assumed) */
        ex->model(comm->nranks, 0, comm->ec.tune, &model);
        tg = &model;
    }
    if (!tg) {
        BT_WARN("ncclGroupSimulateEnd: the %s executor has no model to ask", ex->name);
        return BT_ERR_INTERNAL;
    }
    *us = bt_plan_predict_us(tg, op);
    return BT_OK;
}

/* ---- the launch ------------------------------------------------------------------------- */

/* Mark the comms busy for the launch so ncclCommAbort from another thread waits for the
 * launch to notice the abort before it frees what the launch uses. */
bt_status_t bt_launch(struct bt_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        if (!bt_comm_acquire(ops[i].comm)) {
            BT_WARN("communicator %p was destroyed or aborted before its operation ran",
                    (void *)ops[i].comm);
            while (--i >= 0)
                bt_comm_release(ops[i].comm);
            return BT_ERR_INVALID_USAGE;
        }
    }
    /* Nothing has run while these fail: the communicators stay as they are. */
    bt_status_t st = bt_check_colls(ops, nops);
    for (int i = 0; i < nops && st == BT_OK; i++)
        if (i == 0 || ops[i].comm != ops[i - 1].comm)
            st = bt_launch_gate(ops[i].comm);
    if (st == BT_OK)
        st = match_self(ops, nops, op_is_gpu); /* in the group's order */
    int ngpu = st == BT_OK ? gpu_ops_last(ops, nops) : 0;
    if (ngpu < 0)
        st = BT_ERR_SYSTEM;
    int nhost = nops - ngpu;
    for (int i = 0; i < nops && st == BT_OK; i++) {
        intptr_t kind = i < nhost ? BT_EXEC_HOST : BT_EXEC_CUDA;
        st = check_op(bt_exec_of((int)kind), ops[i].comm->exec[kind], &ops[i]);
    }
    /* From here ops run: a failure may leave the ranks apart (fail_policy). */
    bt_status_t run = BT_OK;
    if (st == BT_OK && nhost > 0)
        run = run_part(ops, nhost, BT_EXEC_HOST);
    if (st == BT_OK && run == BT_OK && ngpu > 0)
        run = run_part(ops + nhost, ngpu, BT_EXEC_CUDA);
    if (run != BT_OK)
        fail_policy(ops, nops, run);
    for (int i = 0; i < nops; i++)
        bt_comm_release(ops[i].comm);
    return st != BT_OK ? st : run;
}
