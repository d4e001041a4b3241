/* Fan-out over communicators (fanout.h). */
#include "core/fanout.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/log.h"

struct comm_job {
    struct bt_comm *comm;
    bt_status_t (*fn)(struct bt_comm *, void *);
    void *ctx;
    bt_status_t st;
    pthread_t thread;
};

static void *comm_job_main(void *arg)
{
    struct comm_job *j = arg;
    j->st = j->fn(j->comm, j->ctx);
    return NULL;
}

bt_status_t bt_for_each_comm(const struct bt_op *ops, int nops,
                             int (*want)(const struct bt_op *op, void *ctx),
                             bt_status_t (*fn)(struct bt_comm *comm, void *ctx), void *ctx)
{
    int any = 0; /* the hot path: launches where nothing is wanted allocate nothing */
    for (int i = 0; i < nops && !any; i++)
        any = want(&ops[i], ctx);
    if (!any)
        return BT_OK;
    struct comm_job *jobs = calloc((size_t)nops, sizeof(*jobs));
    if (!jobs)
        return BT_ERR_SYSTEM;
    int n = 0;
    for (int i = 0; i < nops; i++) {
        if (!want(&ops[i], ctx))
            continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = jobs[k].comm == ops[i].comm;
        if (!seen)
            jobs[n++] = (struct comm_job){.comm = ops[i].comm, .fn = fn, .ctx = ctx};
    }
    bt_status_t st = BT_OK;
    if (n == 1) { /* the common case: no thread */
        st = fn(jobs[0].comm, ctx);
    } else {
        int started = 0;
        for (; started < n; started++)
            if (pthread_create(&jobs[started].thread, NULL, comm_job_main, &jobs[started]) != 0) {
                BT_WARN("cannot start a thread for one of %d communicators of a group", n);
                st = BT_ERR_SYSTEM;
                break;
            }
        for (int k = 0; k < started; k++) {
            pthread_join(jobs[k].thread, NULL);
            if (st == BT_OK)
                st = jobs[k].st;
        }
    }
    free(jobs);
    return st;
}
