/*
 * A communicator's init (core/init.c): every init path (ncclCommInitRank and its kin, a
 * group's deferred inits, split and shrink) takes bt_comm_start.
 */
#ifndef BT_CORE_INIT_H
#define BT_CORE_INIT_H

#include "util/status.h"

struct bt_comm;

/* Join the rendezvous, exchange peer info, build channels: the communicator is then ready
 * (init_done). caller: any thread. */
bt_status_t bt_comm_init(struct bt_comm *comm, const void *unique_id);

/* Init, then what a ready communicator runs before the caller gets it: TOPO_PROBE's link
 * measurement (core/links.h), ordinary send/recv launches on it. Every init path (InitRank,
 * a group's deferred inits, split) takes this way. */
bt_status_t bt_comm_start(struct bt_comm *comm, const void *unique_id);

#endif
