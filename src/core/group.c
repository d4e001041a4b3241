#include "core/group.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/devcomm.h"
#include "core/init.h"
#include "core/split.h"
#include "core/window.h"
#include "util/array.h"

struct bt_group {
    int depth;
    struct bt_op *ops;
    int nops, cap;
    struct bt_init_job *inits;
    int ninits, init_cap;
    bt_status_t error; /* first failure inside the group, returned by GroupEnd */
};

static __thread struct bt_group grp;

/* A thread's group arrays are freed when it exits. */
static pthread_key_t grp_key;
static pthread_once_t grp_key_once = PTHREAD_ONCE_INIT;

static void grp_free(void *unused)
{
    (void)unused;
    free(grp.ops);
    free(grp.inits);
    memset(&grp, 0, sizeof(grp));
}

static void grp_key_create(void)
{
    pthread_key_create(&grp_key, grp_free);
}

int bt_group_depth(void)
{
    return grp.depth;
}

void bt_group_start(void)
{
    grp.depth++;
}

/* Grow one of this thread's group arrays; the first growth arms the exit hook. */
static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    pthread_once(&grp_key_once, grp_key_create);
    if (!pthread_getspecific(grp_key))
        pthread_setspecific(grp_key, &grp);
    return bt_array_grow(arr, cap, need, elem);
}

void bt_group_set_error(bt_status_t st)
{
    if (grp.depth > 0 && grp.error == BT_OK)
        grp.error = st;
}

bt_status_t bt_group_enqueue(const struct bt_op *op)
{
    if (grp.depth == 0 && !op->comm->config.blocking) { /* a group of one, in the background */
        bt_group_start();
        bt_status_t st = bt_group_enqueue(op);
        bt_status_t end = bt_group_end();
        return st != BT_OK ? st : end;
    }
    if (grp.depth == 0) {
        struct bt_op one = *op;
        return bt_launch(&one, 1);
    }
    if (grow((void **)&grp.ops, &grp.cap, grp.nops + 1, sizeof(*grp.ops)) != 0) {
        BT_WARN("out of memory queueing an operation in a group");
        return BT_ERR_SYSTEM;
    }
    grp.ops[grp.nops++] = *op;
    return BT_OK;
}

bt_status_t bt_group_add_init(const struct bt_init_job *job)
{
    if (grow((void **)&grp.inits, &grp.init_cap, grp.ninits + 1, sizeof(*grp.inits)) != 0) {
        BT_WARN("out of memory queueing a communicator init in a group");
        return BT_ERR_SYSTEM;
    }
    grp.inits[grp.ninits++] = *job;
    return BT_OK;
}

static void init_job_release(struct bt_init_job *job)
{
    free(job->excl);
    job->excl = NULL;
}

void bt_group_drop_comm(struct bt_comm *comm)
{
    int k = 0;
    for (int i = 0; i < grp.nops; i++)
        if (grp.ops[i].comm != comm)
            grp.ops[k++] = grp.ops[i];
    grp.nops = k;
    k = 0;
    for (int i = 0; i < grp.ninits; i++)
        if (grp.inits[i].comm != comm && grp.inits[i].parent != comm)
            grp.inits[k++] = grp.inits[i];
        else
            init_job_release(&grp.inits[i]);
    grp.ninits = k;
}

/* One deferred job: join a rendezvous, or split a parent. A failure is also the new
 * communicator's async error, so a handle the caller already holds reports it. */
static void run_job(struct bt_init_job *job)
{
    const struct bt_comm_config *cfg = job->has_config ? &job->config : NULL;
    if (job->devcomm) {
        job->status = BT_ERR_INVALID_USAGE;
        if (bt_comm_acquire(job->parent)) {
            job->status = bt_devcomm_create(job->parent, &job->dc_reqs, job->dc_out);
            bt_comm_release(job->parent);
        }
        return;
    }
    if (job->win) {
        struct bt_window *w = NULL;
        job->status = BT_ERR_INVALID_USAGE;
        if (bt_comm_acquire(job->parent)) {
            job->status =
                bt_window_register(job->parent, job->win_buf, job->win_size, job->win_flags, &w);
            bt_comm_release(job->parent);
        }
        __atomic_store_n(job->win_out, w ? w->handle : NULL, __ATOMIC_RELEASE);
        return;
    }
    if (job->shrink) { /* the parent may be revoked already: it is not acquired */
        struct bt_comm *nc = NULL;
        job->status =
            bt_comm_shrink(job->parent, job->excl, job->nexcl, job->shrink_flags, cfg, &nc);
        __atomic_store_n(job->newcomm_p, nc, __ATOMIC_RELEASE);
        return;
    }
    if (job->parent) {
        struct bt_comm *nc = NULL;
        job->status = BT_ERR_INVALID_USAGE;
        if (bt_comm_acquire(job->parent)) {
            job->status = bt_comm_split(job->parent, job->color, job->key, cfg, &nc);
            bt_comm_release(job->parent);
        }
        __atomic_store_n(job->newcomm_p, nc, __ATOMIC_RELEASE);
        return;
    }
    job->status = job->comm->init_status = bt_comm_start(job->comm, job->id);
    if (job->status != BT_OK)
        bt_comm_set_async_error(job->comm, job->status);
}

/* The communicator a job works on: its new one, or the parent it splits, shrinks or
 * registers a window with. Jobs of one communicator run one after the other, in group order
 * (their bootstrap exchanges would mix otherwise); jobs of different ones at once. */
static const struct bt_comm *job_key(const struct bt_init_job *job)
{
    return job->comm ? job->comm : job->parent;
}

struct init_lane {
    struct bt_init_job *jobs;
    int n, first; /* the lane is every job whose key is jobs[first]'s */
};

static void *init_lane_main(void *arg)
{
    struct init_lane *l = arg;
    const struct bt_comm *key = job_key(&l->jobs[l->first]);
    for (int i = l->first; i < l->n; i++)
        if (job_key(&l->jobs[i]) == key)
            run_job(&l->jobs[i]);
    return NULL;
}

/* Join every deferred init at once: each blocks until all ranks of its rendezvous
 * arrived, and several of those ranks may be in this thread's group. */
static bt_status_t run_inits(struct bt_init_job *jobs, int n)
{
    bt_status_t st = BT_OK;
    if (n == 1) {
        run_job(&jobs[0]);
        return jobs[0].status;
    }
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    struct init_lane *lanes = calloc((size_t)n, sizeof(*lanes));
    int *started = calloc((size_t)n, sizeof(*started));
    if (!th || !lanes || !started) {
        free(th);
        free(lanes);
        free(started);
        return BT_ERR_SYSTEM;
    }
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = job_key(&jobs[k]) == job_key(&jobs[i]);
        if (seen)
            continue; /* runs in the lane of the first job of its communicator */
        lanes[i] = (struct init_lane){.jobs = jobs, .n = n, .first = i};
        if (pthread_create(&th[i], NULL, init_lane_main, &lanes[i]) != 0) {
            BT_WARN("cannot start a thread for a communicator init or split in a group");
            for (int k = i; k < n; k++) {
                if (job_key(&jobs[k]) != job_key(&jobs[i]))
                    continue;
                jobs[k].status = BT_ERR_SYSTEM;
                if (jobs[k].comm) {
                    jobs[k].comm->init_status = BT_ERR_SYSTEM;
                    bt_comm_set_async_error(jobs[k].comm, BT_ERR_SYSTEM);
                }
            }
            continue;
        }
        started[i] = 1;
    }
    for (int i = 0; i < n; i++)
        if (started[i])
            pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++)
        if (jobs[i].status != BT_OK && st == BT_OK)
            st = jobs[i].status;
    free(th);
    free(lanes);
    free(started);
    return st;
}

/* The communicators a group uses: its inits' new comms, the parents it splits or shrinks,
 * its ops' comms; each once. */
static int group_comms(struct bt_comm **out)
{
    int n = 0;
    for (int i = 0; i < grp.ninits + grp.nops; i++) {
        struct bt_comm *c = i < grp.ninits
                                ? (grp.inits[i].comm ? grp.inits[i].comm : grp.inits[i].parent)
                                : grp.ops[i - grp.ninits].comm;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = out[k] == c;
        if (!seen)
            out[n++] = c;
    }
    return n;
}

/* Everything the group runs; the non-blocking end moves it into a job of its own. */
struct group_job {
    struct bt_init_job *inits;
    int ninits;
    struct bt_op *ops;
    int nops;
    struct bt_comm **comms; /* each busy until the job ends */
    int ncomms;
};

static bt_status_t group_run(struct bt_init_job *inits, int ninits, struct bt_op *ops, int nops,
                             bt_status_t st)
{
    if (ninits > 0 && st == BT_OK) {
        st = run_inits(inits, ninits);
    } else if (ninits > 0) {
        /* The group failed: its inits do not run; handles already returned report it. */
        for (int i = 0; i < ninits; i++)
            if (inits[i].comm) {
                inits[i].comm->init_status = st;
                bt_comm_set_async_error(inits[i].comm, st);
            }
    }
    for (int i = 0; i < ninits; i++)
        init_job_release(&inits[i]);
    if (st == BT_OK && nops > 0)
        st = bt_launch(ops, nops);
    return st;
}

static void *group_job_main(void *arg)
{
    struct group_job *j = arg;
    bt_status_t st = group_run(j->inits, j->ninits, j->ops, j->nops, BT_OK);
    for (int i = 0; i < j->ncomms; i++) {
        if (st != BT_OK) /* what ncclCommGetAsyncError reports once the job is done */
            bt_comm_set_async_error(j->comms[i], st);
        atomic_store_explicit(&j->comms[i]->busy, 0, memory_order_release);
    }
    free(j->inits);
    free(j->ops);
    free(j->comms);
    free(j);
    return NULL;
}

/* Move the group into a job and start its thread: BT_IN_PROGRESS, or the failure to start
 * it (then nothing ran and nothing is busy). */
static bt_status_t group_start_job(struct bt_comm **comms, int ncomms)
{
    struct group_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->inits = grp.ninits ? malloc(sizeof(*j->inits) * (size_t)grp.ninits) : NULL;
        j->ops = grp.nops ? malloc(sizeof(*j->ops) * (size_t)grp.nops) : NULL;
    }
    if (!j || (grp.ninits && !j->inits) || (grp.nops && !j->ops)) {
        BT_WARN("out of memory for a non-blocking group of %d operations", grp.nops + grp.ninits);
        if (j) {
            free(j->inits);
            free(j->ops);
        }
        free(j);
        free(comms);
        return BT_ERR_SYSTEM;
    }
    if (grp.ninits)
        memcpy(j->inits, grp.inits, sizeof(*j->inits) * (size_t)grp.ninits);
    if (grp.nops)
        memcpy(j->ops, grp.ops, sizeof(*j->ops) * (size_t)grp.nops);
    j->ninits = grp.ninits;
    j->nops = grp.nops;
    j->comms = comms;
    j->ncomms = ncomms;
    for (int i = 0; i < ncomms; i++) {
        int init = 0;
        for (int k = 0; k < grp.ninits && !init; k++)
            init = grp.inits[k].comm == comms[i];
        atomic_store_explicit(&comms[i]->busy, init ? BT_BUSY_INIT : BT_BUSY_OPS,
                              memory_order_release);
    }
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, group_job_main, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        BT_WARN("cannot start the thread of a non-blocking group");
        for (int i = 0; i < ncomms; i++)
            atomic_store_explicit(&comms[i]->busy, 0, memory_order_release);
        free(j->inits);
        free(j->ops);
        free(j->comms);
        free(j);
        return BT_ERR_SYSTEM;
    }
    return BT_IN_PROGRESS;
}

bt_status_t bt_group_end(void)
{
    if (grp.depth == 0) {
        BT_WARN("ncclGroupEnd called without a matching ncclGroupStart");
        return BT_ERR_INVALID_USAGE;
    }
    if (--grp.depth > 0)
        return BT_OK;

    bt_status_t st = grp.error;
    if (st != BT_OK)
        BT_WARN("ncclGroupEnd: a call inside the group failed (error %d); none of the group's "
                "%d operations ran",
                (int)st, grp.nops);
    /* Non-blocking when its communicators are (all of them: a mix is refused, as NCCL). */
    struct bt_comm **comms = NULL;
    int ncomms = 0, nonblocking = 0;
    if (st == BT_OK && grp.ninits + grp.nops > 0) {
        comms = malloc(sizeof(*comms) * (size_t)(grp.ninits + grp.nops));
        if (!comms) {
            BT_WARN("out of memory ending a group of %d operations", grp.nops + grp.ninits);
            st = BT_ERR_SYSTEM;
        } else {
            ncomms = group_comms(comms);
            int nb = 0;
            for (int i = 0; i < ncomms; i++) /* a comm destroyed meanwhile counts as blocking:
                                                 the launch then refuses it */
                nb += bt_comm_nonblocking(comms[i]) == 1;
            if (nb > 0 && nb < ncomms) {
                BT_WARN("ncclGroupEnd: the group mixes blocking and non-blocking communicators "
                        "(%d of %d non-blocking: config.blocking / COMM_BLOCKING); none of its "
                        "operations ran",
                        nb, ncomms);
                st = BT_ERR_INVALID_ARG;
            }
            nonblocking = nb > 0 && nb == ncomms;
        }
    }
    if (st == BT_OK && nonblocking) {
        st = group_start_job(comms, ncomms); /* takes comms */
        comms = NULL;
        if (st == BT_IN_PROGRESS) {
            grp.ninits = 0; /* the job owns them now */
            grp.nops = 0;
        }
    }
    free(comms);
    if (st != BT_IN_PROGRESS)
        st = group_run(grp.inits, grp.ninits, grp.ops, grp.nops, st);

    grp.nops = 0;
    grp.ninits = 0;
    grp.error = BT_OK;
    if (grp.cap > 1024) { /* do not keep a huge group's memory forever */
        free(grp.ops);
        grp.ops = NULL;
        grp.cap = 0;
    }
    return st;
}

/* Whether op i is its communicator's first in the group. */
static int first_of_comm(int i)
{
    for (int j = 0; j < i; j++)
        if (grp.ops[j].comm == grp.ops[i].comm)
            return 0;
    return 1;
}

bt_status_t bt_group_simulate(double *us)
{
    *us = 0;
    if (grp.depth != 1) {
        BT_WARN("ncclGroupSimulateEnd must end the outermost group (the group depth is %d)",
                grp.depth);
        return BT_ERR_INVALID_USAGE;
    }
    if (grp.ninits > 0) {
        BT_WARN("ncclGroupSimulateEnd: the group holds %d communicator init(s), split(s) or "
                "window registration(s), which must run: end it with ncclGroupEnd",
                grp.ninits);
        return BT_ERR_INVALID_USAGE;
    }
    /* The communicators of a group run at once, each its operations one after another. */
    bt_status_t st = grp.error;
    for (int i = 0; i < grp.nops && st == BT_OK; i++) {
        struct bt_comm *comm = grp.ops[i].comm;
        if (!first_of_comm(i))
            continue;
        if (!bt_comm_acquire(comm)) {
            BT_WARN("ncclGroupSimulateEnd: communicator %p was destroyed or aborted", (void *)comm);
            st = BT_ERR_INVALID_USAGE;
            break;
        }
        double sum = 0, one = 0;
        for (int k = i; k < grp.nops && st == BT_OK; k++)
            if (grp.ops[k].comm == comm) {
                st = bt_launch_predict_us(&grp.ops[k], &one);
                sum += one;
            }
        bt_comm_release(comm);
        if (sum > *us)
            *us = sum;
    }
    grp.nops = 0;
    grp.depth = 0;
    grp.error = BT_OK;
    return st;
}
