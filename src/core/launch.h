/*
 * The launch: a group's operations checked, split between the executors and run through their
 * tables (exec/exec.h). Operations on host buffers run on the host executor before the call
 * returns; those of GPU communicators on device buffers become kernels on their streams.
 */
#ifndef BT_CORE_LAUNCH_H
#define BT_CORE_LAUNCH_H

#include "plan/op.h"
#include "util/status.h"

struct bt_exec_hooks;

/* Run a set of ops now: check, create what the executors need, place, run (host ops to
 * completion, GPU ops queued on their streams). */
bt_status_t bt_launch(struct bt_op *ops, int nops);

/* Whether comm takes operations now: initialized, not revoked, not suspended, not failed
 * (WARNed when not, naming why). */
bt_status_t bt_launch_gate(struct bt_comm *comm);

/* The time the tuner's model gives op on the executor it would run on (ncclGroupSimulateEnd);
 * nothing runs, though a host communicator's executor state is made if it was not yet. */
bt_status_t bt_launch_predict_us(struct bt_op *op, double *us);

/* What core does for the executors while they wait (struct bt_exec_comm's hooks). */
extern const struct bt_exec_hooks bt_launch_hooks;

#endif
