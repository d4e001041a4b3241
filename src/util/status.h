/*
 * Internal status codes. The values equal ncclResult_t's so the API layer returns them
 * unchanged; util/ stays free of the public header.
 */
#ifndef BT_UTIL_STATUS_H
#define BT_UTIL_STATUS_H

typedef enum bt_status {
    BT_OK = 0,
    BT_ERR_CUDA = 1,
    BT_ERR_SYSTEM = 2,
    BT_ERR_INTERNAL = 3,
    BT_ERR_INVALID_ARG = 4,
    BT_ERR_INVALID_USAGE = 5,
    BT_ERR_REMOTE = 6, /* a peer failed, closed, or did not answer in time */
    BT_IN_PROGRESS = 7,
} bt_status_t;

#include "util/log.h"

/* Propagate a failure; the place that first saw it has already logged why. */
#define BT_CHECK(call)                                                                             \
    do {                                                                                           \
        bt_status_t bt_st_ = (call);                                                               \
        if (bt_st_ != BT_OK && bt_st_ != BT_IN_PROGRESS) {                                         \
            BT_TRACE(BT_LOG_ALL, "%s:%d -> %d", __FILE__, __LINE__, (int)bt_st_);                  \
            return bt_st_;                                                                         \
        }                                                                                          \
    } while (0)

/* Same, but jump to a cleanup label with the status stored in `st`. */
#define BT_CHECK_GOTO(call, st, label)                                                             \
    do {                                                                                           \
        (st) = (call);                                                                             \
        if ((st) != BT_OK) {                                                                       \
            BT_TRACE(BT_LOG_ALL, "%s:%d -> %d", __FILE__, __LINE__, (int)(st));                    \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* A system call that returns -1 on failure: log errno text and fail with BT_ERR_SYSTEM. */
#define BT_SYSCHECK(call, what)                                                                    \
    do {                                                                                           \
        if ((call) == -1) {                                                                        \
            BT_WARN("%s failed: %s", (what), strerror(errno));                                     \
            return BT_ERR_SYSTEM;                                                                  \
        }                                                                                          \
    } while (0)

#endif
