/*
 * Communicators made from a parent (core/split.c): split and shrink.
 */
#ifndef BT_CORE_SPLIT_H
#define BT_CORE_SPLIT_H

#include "util/status.h"

struct bt_comm;
struct bt_comm_config;

#define BT_SHRINK_ABORT 0x01 /* NCCL_SHRINK_ABORT */

/* Split: collective over `parent`; color < 0 (NCCL_SPLIT_NOCOLOR) yields *newcomm_p = NULL. */
bt_status_t bt_comm_split(struct bt_comm *parent, int color, int key,
                          const struct bt_comm_config *config, struct bt_comm **newcomm_p);

/* Shrink: a communicator of `parent`'s ranks but the `nexcl` excluded ones (sorted, distinct,
 * in range, this rank not among them), renumbered in parent order. Only the remaining ranks
 * take part; excluded ones are never waited on. BT_SHRINK_ABORT in `flags` revokes the
 * parent first. config NULL: the parent's. */
bt_status_t bt_comm_shrink(struct bt_comm *parent, const int *excl, int nexcl, int flags,
                           const struct bt_comm_config *config, struct bt_comm **newcomm_p);

#endif
