/*
 * Fan-out: a collective step run for several communicators of one thread at once, one thread
 * each, so that steps that wait on each other meet (ncclCommInitAll, one thread driving every
 * rank: a GPU setup or a CHECK_COLL exchange of rank 0 waits for rank 1's, which the same
 * caller would only reach after it).
 */
#ifndef BT_CORE_FANOUT_H
#define BT_CORE_FANOUT_H

#include "plan/op.h"
#include "util/status.h"

/*
 * Run fn(comm, ctx) once for each distinct communicator among ops[] that want(op, ctx) selects:
 * directly when there is one, else one thread each, concurrently - fn's collective steps
 * must meet each other when one thread drives several ranks (ncclCommInitAll). Returns the
 * first error.
 */
bt_status_t bt_for_each_comm(const struct bt_op *ops, int nops,
                             int (*want)(const struct bt_op *op, void *ctx),
                             bt_status_t (*fn)(struct bt_comm *comm, void *ctx), void *ctx);

#endif
