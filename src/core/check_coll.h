/*
 * CHECK_COLL=1 (core/check_coll.c): compare the collectives of ops[] across the ranks of each
 * communicator that has the check on; BT_ERR_INVALID_USAGE (logged, naming both sides) at the
 * first difference, on every rank alike.
 */
#ifndef BT_CORE_CHECK_COLL_H
#define BT_CORE_CHECK_COLL_H

#include "plan/op.h"
#include "util/status.h"

bt_status_t bt_check_colls(const struct bt_op *ops, int nops);

#endif
