/*
 * Liveness: whether a rank is still with us, the one place that decides it. A rank is *down*
 * when its process has ended (a rank on this host, in this PID namespace: util/proc.h, also
 * a zombie its launcher has yet to reap) or when its arrival-board line names a cause: it failed
 * because another rank died and will not take part again, even if its process stays with its
 * sockets and mappings open. Every wait on one rank asks: the executor's stall check
 * (core/launch.c), and, through tests this module installs at init (bt_liveness_attach), the
 * bootstrap's point-to-point send and recv, the connection setup and the network transport's
 * connects, accepts and proxied ops. Cheap (a kill(pid, 0), a read of /proc/PID/stat, a load:
 * callers ask every ~50 ms of a wait), any thread.
 */
#ifndef BT_CORE_LIVENESS_H
#define BT_CORE_LIVENESS_H

#include <stdint.h>

struct bt_comm;

/* 1 if rank `peer`'s pid means something here: this host, this PID namespace. */
int bt_liveness_local(const struct bt_comm *comm, int peer);
/* 1 if rank `peer` is local and its process no longer exists. 0 when it lives or cannot be
 * told from here (another host: its sockets report that). */
int bt_liveness_gone(const struct bt_comm *comm, int peer);
/* Whether rank `peer` is down (gone, or failed and staying out). */
int bt_liveness_down(const struct bt_comm *comm, int peer);

/*
 * If rank `peer` is down: WARN, naming the rank whose death started the chain (the peer, or
 * the cause it recorded), record that cause as this rank's (bt_arrival_failed) and return 1;
 * else 0. `what` and `seq` say what waited ("collective", #seq; 0: no number). The caller then
 * fails: once per failure is enough. wait_ms: how long to keep looking when it is not down
 * yet, for a failure path where a connection with it broke (BT_PEER_DYING_MS).
 */
int bt_liveness_report_down(struct bt_comm *comm, int peer, const char *what, uint64_t seq,
                            int wait_ms);

/*
 * For a wait on a rank of another host (or of another PID namespace): if it said it failed
 * (a bootstrap message, bt_arrival_told), or the wait has lasted stalled_ns >=
 * BT_LIVENESS_PROBE_AFTER_NS and its bootstrap listener refuses connections
 * (bt_bootstrap_peer_refuses: its process is gone, its host still answers), WARN naming it
 * (and the cause it sent), record the cause (bt_arrival_failed) and return 1; else 0. Networks that
 * say nothing when a peer dies (a posted receive from it just never completes) fail this way within
 * a second or two instead of at TIMEOUT. Each peer is probed at most once per
 * BT_LIVENESS_PROBE_EVERY_NS; a rank of this host is left to the pid check. Not earlier than
 * a second into a stall: a peer that finished and destroyed its communicator stops listening
 * while the last of its data may still be on the way.
 */
#define BT_LIVENESS_PROBE_AFTER_NS 1000000000ull
#define BT_LIVENESS_PROBE_EVERY_NS 1000000000ull
int bt_liveness_report_lost(struct bt_comm *comm, int peer, const char *what, uint64_t seq,
                            uint64_t stalled_ns);

/* A network transfer with `peer` failed: name the peer, and the rank whose death started it
 * when the peer said so before it left (the board on one host; across hosts a bootstrap
 * message, waited for a moment: a rank that died sends none); then pass the cause on. */
void bt_liveness_report_net(struct bt_comm *comm, int peer);

/* Install the tests in the comm's bootstrap (waits on one rank) and transport context
 * (connects, accepts, proxied ops). At init, once peers are known. */
void bt_liveness_attach(struct bt_comm *comm);

#endif
