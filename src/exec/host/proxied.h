/*
 * The host launch's steps that a proxy moves (connectors through the network): posted per
 * work and connector before the executor runs (bt_work_conn_steps counts them), driven by
 * the launching thread while it waits (the proxy's rounds and, when only sockets can move
 * the launch, a bounded poll() on them), and waited for after the executor is done, since
 * the proxy may still be sending the last data.
 *
 * caller: the launching thread; one struct per thread, reused across launches.
 */
#ifndef BT_EXEC_HOST_PROXIED_H
#define BT_EXEC_HOST_PROXIED_H

#include "coll/work.h"
#include "transport/transport.h"

struct bt_host_proxied {
    struct bt_proxied_op {
        struct bt_transport_op *op;
        void *owner; /* the work's communicator */
        int peer;
    } * ops;
    int nops, ops_cap;
    struct bt_proxy **drive; /* proxies this thread drives while it waits (distinct) */
    int ndrive, drive_cap;
    int all_proxied; /* every connector of the launch is proxied: only sockets can wake it */
};

/* Start a launch: nothing posted, nothing driven; all_proxied until a work says otherwise. */
void bt_host_proxied_begin(struct bt_host_proxied *s);

/* Post work w's proxied steps to ctx's proxy (and drive that proxy from here on when
 * `drive`, the PROXY_DRIVE setting). A work of a communicator whose connectors are all in
 * shared memory passes ctx NULL: nothing to walk, but the launch is not all proxied. */
bt_status_t bt_host_proxied_post(struct bt_host_proxied *s, const struct bt_work *w,
                                 struct bt_transport_ctx *ctx, int drive);

/* The executor's wait hooks (struct bt_wait_policy's poll and block; arg: the struct). */
int bt_host_proxied_poll(void *s);
int bt_host_proxied_block(void *s);

/* The first posted op of `owner` that has failed already, or NULL. */
const struct bt_proxied_op *bt_host_proxied_failed(const struct bt_host_proxied *s,
                                                   const void *owner);

/* Wait for every posted op, which frees it; the first failure is the result (report(op) is
 * called for it), and the ops after it are given up. With `st` an error already (a launch that
 * failed before its proxied steps were done), every op is given up and waited for: the
 * connectors are the failed communicator's, never used again. Stops driving. */
bt_status_t bt_host_proxied_finish(struct bt_host_proxied *s, bt_status_t st,
                                   void (*report)(const struct bt_proxied_op *op));

/* Free what the struct holds (the thread exits). */
void bt_host_proxied_free(struct bt_host_proxied *s);

#endif
