/*
 * Group semantics. Between ncclGroupStart and the matching ncclGroupEnd (groups nest),
 * collectives and point-to-point calls of the calling thread are collected; the outermost
 * GroupEnd launches them together: all communicators, all lanes, one executor run. Outside
 * a group every call is a group of one. Communicator inits inside a group are deferred
 * to GroupEnd too and run concurrently, so one thread can init several ranks.
 */
#ifndef BT_CORE_GROUP_H
#define BT_CORE_GROUP_H

#include "core/comm.h"
#include "core/launch.h"
#include "core/devcomm_abi.h"

/* A deferred init, run at GroupEnd concurrently with the group's others: either join a
 * rendezvous (comm allocated, id set), or split or shrink `parent` (then *newcomm_p is
 * written). */
struct bt_init_job {
    struct bt_comm *comm;
    unsigned char id[BT_UNIQUE_ID_BYTES];
    struct bt_comm *parent;
    int color, key, has_config;
    int shrink, shrink_flags, nexcl; /* a shrink: excl[nexcl] sorted, owned by the job */
    int *excl;
    int win; /* a window registration on `parent`: *win_out is written */
    void *win_buf;
    size_t win_size;
    int win_flags;
    void **win_out;                 /* the window's handle (ncclWindow_t) */
    int devcomm;                    /* a device communicator of `parent`: *dc_out is written */
    struct bt_devcomm_reqs dc_reqs; /* as read from the program's layout */
    void *dc_out;                   /* its ncclDevComm, in that release's layout */
    struct bt_comm_config config;
    struct bt_comm **newcomm_p;
    bt_status_t status;
};

int bt_group_depth(void);
void bt_group_start(void);

/* The outermost end runs the group: at once when its communicators are blocking; else in a
 * thread of its own, returning BT_IN_PROGRESS, each communicator busy until it is done
 * (ncclCommGetAsyncError then reports the result). Blocking and non-blocking communicators
 * in one group: BT_ERR_INVALID_ARG, nothing runs. */
bt_status_t bt_group_end(void);

/* End the outermost group without running it: *us is the tuner's time for its operations
 * (per communicator the sum of its operations', the longest communicator's), and the
 * operations are dropped. A group holding inits, splits or window registrations is left
 * open (BT_ERR_INVALID_USAGE): those must run. */
bt_status_t bt_group_simulate(double *us);

/* Record a failed call inside the group: GroupEnd returns it and runs nothing. */
void bt_group_set_error(bt_status_t st);

/* Add an op (inside a group) or run it at once (outside). */
bt_status_t bt_group_enqueue(const struct bt_op *op);

/* Add an init job to the current group (depth > 0 only). */
bt_status_t bt_group_add_init(const struct bt_init_job *job);

/* Forget queued ops and deferred inits/splits of a communicator being destroyed or
 * aborted. */
void bt_group_drop_comm(struct bt_comm *comm);

#endif
