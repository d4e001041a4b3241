/*
 * Where an executor's work reports once its launch has returned (GPU kernels): host-mapped
 * words the kernels write and core's watcher (core/watch.c) reads and prints. Plain C with
 * stdint only: the kernels include it too.
 */
#ifndef BT_EXEC_REPORT_H
#define BT_EXEC_REPORT_H

#include <stdint.h>

/* Where a wait was: the collective (the communicator's operation number, as the arrival
 * board counts them; 0 for send/recv), the peer and the direction. */
struct bt_exec_where {
    uint64_t seq, count;               /* the collective's number (0: a send/recv), elements */
    int32_t coll, peer, work, is_send; /* is_send 1: waiting for credit to send to the peer */
};
enum bt_exec_err {
    BT_EXEC_ERR_NONE = 0,
    BT_EXEC_ERR_ABORT = 1,   /* the communicator's abort flag was raised */
    BT_EXEC_ERR_TIMEOUT = 2, /* a wait saw no progress for TIMEOUT seconds */
    BT_EXEC_ERR_PEER = 3,    /* a peer's wait timed out and said so (error_at.peer) */
};
struct bt_exec_report {
    int32_t error;   /* enum bt_exec_err (first one wins) */
    int32_t stalled; /* 1: a wait passed HANG_REPORT seconds; the watcher clears it once told */
    struct bt_exec_where error_at, stall_at;
};

#endif
