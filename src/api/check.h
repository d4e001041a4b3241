/*
 * Argument checks shared by the entry points. Each failing check logs a WARN naming the
 * function, the argument and its value, and returns ncclInvalidArgument before anything
 * is enqueued.
 */
#ifndef BT_API_CHECK_H
#define BT_API_CHECK_H

#include "core/comm.h"
#include "core/window.h"
#include "nccl.h"
#include "util/log.h"

/* The registered window of handle `h` (ncclWindow_t), or NULL, WARNed naming fn. */
static inline struct bt_window *bt_api_window(ncclWindow_t h, const char *fn)
{
    struct bt_window *w = h ? bt_window_of(h) : NULL;
    if (!w)
        BT_WARN("%s: window %p is not a registered window (deregistered already?)", fn, (void *)h);
    return w;
}

#define BT_API_CHECK_COMM(comm, fn)                                                                \
    do {                                                                                           \
        if (!(comm)) {                                                                             \
            BT_WARN("%s: comm is NULL", (fn));                                                     \
            return ncclInvalidArgument;                                                            \
        }                                                                                          \
        if (!bt_comm_is_live((const struct bt_comm *)(comm))) {                                    \
            BT_WARN("%s: comm %p is not a live communicator (destroyed or aborted?)", (fn),        \
                    (const void *)(comm));                                                         \
            return ncclInvalidArgument;                                                            \
        }                                                                                          \
    } while (0)

/* A live communicator whose previous non-blocking call has finished (NCCL's "ensure
 * ready"): while a job uses it, only ncclCommGetAsyncError, Abort and Destroy apply. */
#define BT_API_CHECK_READY(comm, fn)                                                               \
    do {                                                                                           \
        BT_API_CHECK_COMM(comm, fn);                                                               \
        if (bt_comm_busy((struct bt_comm *)(comm))) {                                              \
            BT_WARN("%s: comm %p is still busy with its previous non-blocking call (init, split, " \
                    "shrink or group): poll ncclCommGetAsyncError until it is no longer "          \
                    "ncclInProgress",                                                              \
                    (fn), (const void *)(comm));                                                   \
            return ncclInvalidArgument;                                                            \
        }                                                                                          \
    } while (0)

#define BT_API_CHECK_PTR(ptr, fn, name)                                                            \
    do {                                                                                           \
        if (!(ptr)) {                                                                              \
            BT_WARN("%s: %s is NULL", (fn), (name));                                               \
            return ncclInvalidArgument;                                                            \
        }                                                                                          \
    } while (0)

/* Validate and copy a user ncclConfig_t (NULL: defaults) per the 2.28 rules. */
bt_status_t bt_api_config_parse(const ncclConfig_t *config, struct bt_comm_config *out,
                                const char *fn);

#endif
