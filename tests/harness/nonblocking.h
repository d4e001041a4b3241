/*
 * For tests of non-blocking communicators (through the public API): poll until a
 * communicator's last call is done.
 */
#ifndef BT_TEST_NONBLOCKING_H
#define BT_TEST_NONBLOCKING_H

#include <unistd.h>

#include "harness.h"
#include "nccl.h"

/* ncclCommGetAsyncError every 100 us until it is no longer ncclInProgress (at most 60 s):
 * the result then (ncclInProgress if it never ended). */
static inline ncclResult_t bt_test_wait_done(ncclComm_t c)
{
    double end = bt_test_now_s() + 60;
    ncclResult_t r = ncclInProgress;
    while (r == ncclInProgress && bt_test_now_s() < end) {
        BT_TEST_OK(ncclCommGetAsyncError(c, &r));
        if (r == ncclInProgress)
            usleep(100);
    }
    return r;
}

#endif
