/*
 * Bootstrap: out-of-band TCP rendezvous and the small collectives that set up a
 * communicator (allgather of peer info, barrier, point-to-point exchange of connect
 * blobs). Never on the data path.
 *
 *   unique id (128 B) = { magic, root address }     (bt_bootstrap_unique_id)
 *   init: each rank listens, connects to the root, sends {magic, rank, nranks, address};
 *         the root answers each rank with the whole address table; ranks connect a ring.
 *   allgather/barrier: over the ring. send/recv: a connection per message, matched by
 *         (peer, tag), unexpected messages queued.
 *
 * Every blocking call honours the deadline (BATON_TIMEOUT) and the abort flag passed at
 * init, and fails with BT_ERR_REMOTE naming the peer it waited on.
 */
#ifndef BT_BOOTSTRAP_H
#define BT_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/socket.h" /* union bt_sockaddr */
#include "util/status.h"

#define BT_UNIQUE_ID_BYTES 128

struct bt_bootstrap;

/*
 * Create a rendezvous root: bind a listening socket on the chosen interface, start the
 * root thread, and write the 128-byte id that carries {magic, address}.
 * caller: any thread (ncclGetUniqueId).
 */
bt_status_t bt_bootstrap_unique_id(void *id_p);

/* Always a new root on a free port, whatever COMM_ID says (communicators made inside the
 * library, e.g. by split). */
bt_status_t bt_bootstrap_unique_id_new(void *id_p);

/*
 * Fill `id_p` from BATON_COMM_ID / NCCL_COMM_ID ("host:port", "[v6]:port"). Rank 0 also
 * starts the root on that address (rank -1: nobody does; bt_bootstrap_unique_id uses that
 * when COMM_ID is set, as ncclGetUniqueId does not start a root then: the caller of init
 * calls this with its rank when COMM_ID is set). Every rank derives the same magic from the
 * COMM_ID text. Returns BT_ERR_INVALID_USAGE when the variable is unset.
 */
bt_status_t bt_bootstrap_unique_id_from_env(int rank, void *id_p);

/*
 * Wait for the root thread this process started for `id` (bt_bootstrap_unique_id or
 * rank 0's bt_bootstrap_unique_id_from_env) to finish, and reap it. The root finishes when
 * every rank has its address table, or after BOOTSTRAP_TIMEOUT seconds. A rank of this
 * process that completes bt_bootstrap_init on `id` reaps it already; call this in a process
 * that made the id but runs no rank (a launcher), before checking for leaked threads.
 * No-op when this process has no root for `id`.
 */
void bt_bootstrap_root_wait(const void *id);

/* The same, but the root stops waiting for ranks still to come: for an init that was
 * aborted before the rendezvous completed (its peers would wait for this rank anyway). */
void bt_bootstrap_root_cancel(const void *id);

/* Join the rendezvous named by `id` as `rank` of `nranks`. `abort_flag` may be NULL. */
bt_status_t bt_bootstrap_init(const void *id, int rank, int nranks, volatile int *abort_flag,
                              struct bt_bootstrap **bs_p);

/* Every rank contributes `bytes` at buf + rank*bytes; on return all slots are filled. */
bt_status_t bt_bootstrap_allgather(struct bt_bootstrap *bs, void *buf, size_t bytes);

bt_status_t bt_bootstrap_barrier(struct bt_bootstrap *bs);

/* Point-to-point, matched by (peer, tag); messages with the same (peer, tag) stay ordered. */
bt_status_t bt_bootstrap_send(struct bt_bootstrap *bs, int peer, int tag, const void *data,
                              size_t size);
bt_status_t bt_bootstrap_recv(struct bt_bootstrap *bs, int peer, int tag, void *data, size_t size);
/* The same with a deadline (bt_time_ns units) instead of TIMEOUT from now, for failure paths
 * that must not linger; recv_until does not log when the deadline passes (BT_ERR_REMOTE). */
bt_status_t bt_bootstrap_send_until(struct bt_bootstrap *bs, int peer, int tag, const void *data,
                                    size_t size, uint64_t deadline);
bt_status_t bt_bootstrap_recv_until(struct bt_bootstrap *bs, int peer, int tag, void *data,
                                    size_t size, uint64_t deadline);

/* A message of `tag` from any rank that has come already (connections waiting on the listen
 * socket are taken in, without waiting for more): copies it to `data` and returns the sender's
 * rank; -1 when none has come (or one of another size, dropped). For messages a rank may be
 * sent at any time, read while it waits for something else (core/arrival.c's questions). */
int bt_bootstrap_poll(struct bt_bootstrap *bs, int tag, void *data, size_t size);

/*
 * How to tell that rank `peer` is down, for the point-to-point calls: `down` (1: its process
 * is gone, or it failed and will send nothing more) is asked by a send to it or a recv from
 * it, `lost` (the same answer, given that the recv has waited `waited_ns` on it: what takes
 * a probe or a message, for a rank of another host) by a recv; the call then stops within a
 * slice (10 ms for a recv, 100 ms for a connect retry) with BT_ERR_REMOTE instead of at
 * TIMEOUT; a recv still takes what the rank sent before it went down. Either may be NULL. Set
 * once, before the calls start (the communicator, once it knows its peers' pids); the quiet
 * recv_until, a failure path's short wait, asks neither.
 */
void bt_bootstrap_set_peer_check(struct bt_bootstrap *bs, int (*down)(void *arg, int peer),
                                 int (*lost)(void *arg, int peer, uint64_t waited_ns), void *arg);

/* 1 when a message of `tag` from rank `peer` has come and waits to be received (it stays
 * queued); 0 otherwise. Looks at what has been accepted only. Any thread. */
int bt_bootstrap_queued(struct bt_bootstrap *bs, int peer, int tag);

/* 1 when rank `peer`'s bootstrap listener refuses connections (bt_socket_refused): its
 * process is gone, even on another host, as long as that host answers; 0 otherwise. A rank
 * listens from its init until its communicator is destroyed. */
int bt_bootstrap_peer_refuses(const struct bt_bootstrap *bs, int peer, int timeout_ms);

/* Make every current and future wait of this bootstrap fail at once (ncclCommAbort). */
void bt_bootstrap_abort(struct bt_bootstrap *bs);

/* Close sockets and free. Accepts NULL. */
void bt_bootstrap_destroy(struct bt_bootstrap *bs);

/* Where rank `rank` listens for bootstrap messages (NULL: no such rank); for tests. */
const union bt_sockaddr *bt_bootstrap_peer_addr(const struct bt_bootstrap *bs, int rank);

#endif
