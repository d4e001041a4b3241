/*
 * An operation as the API hands it to core and core to the planner and the executors: one
 * collective, send or receive of one communicator. The communicator is opaque below core:
 * the planner and the executors carry the pointer, never look inside.
 */
#ifndef BT_PLAN_OP_H
#define BT_PLAN_OP_H

#include <stddef.h>
#include <stdint.h>

#include "coll/redop.h"

struct bt_comm;

struct bt_op {
    struct bt_comm *comm;
    int coll; /* enum bt_coll */
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    int dtype;
    struct bt_redop redop;
    const void *scalar_ptr; /* PreMulSum with the scalar in memory: read at launch */
    int peer;               /* root (Bcast, Reduce) or peer (Send, Recv) */
    void *stream;           /* cudaStream_t: where a GPU operation runs */
    /* set by core's launch: a receive from this rank itself takes the matched send's input,
     * the smaller of their byte counts, NULL otherwise; the communicator's collective number,
     * 0 for send/recv */
    const void *self_src;
    size_t self_bytes;
    uint64_t seq;
};

#endif
