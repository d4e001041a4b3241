/* Liveness (liveness.h). */
#include "core/liveness.h"

#include <stdio.h>
#include <time.h>

#include "bootstrap/bootstrap.h"
#include "core/arrival.h"
#include "core/comm.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/socket.h"
#include "util/time.h"

int bt_liveness_local(const struct bt_comm *comm, int peer)
{
    const struct bt_peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
    /* a pid only names the peer on this host, inside this PID namespace */
    return peer != comm->rank && p->host_hash == me->host_hash && p->pid_ns == me->pid_ns &&
           me->pid_ns && p->pid > 0;
}

int bt_liveness_gone(const struct bt_comm *comm, int peer)
{
    return bt_liveness_local(comm, peer) && bt_pid_ended(comm->peers[peer].pid);
}

/* Why a rank failed, given the cause it recorded: the rank that died, as a rule; but a
 * connection that broke or timed out with a rank that still runs records that rank too. */
static void cause_text(const struct bt_comm *comm, int cause, char *buf, size_t len)
{
    if (cause < 0 || cause >= comm->nranks)
        snprintf(buf, len, "(cause unknown)");
    else if (cause == comm->rank)
        snprintf(buf, len, "because its connection with this rank broke or timed out");
    else if (bt_liveness_local(comm, cause) && !bt_liveness_gone(comm, cause))
        snprintf(buf, len, "because its connection with rank %d broke or timed out (rank %d runs)",
                 cause, cause);
    else /* across hosts the cause came in a message that said so */
        snprintf(buf, len, "because rank %d is gone (exited or killed)", cause);
}

int bt_liveness_down(const struct bt_comm *comm, int peer)
{
    return bt_liveness_gone(comm, peer) || bt_arrival_board_cause(comm, peer) >= 0;
}

int bt_liveness_report_down(struct bt_comm *comm, int peer, const char *what, uint64_t seq,
                            int wait_ms)
{
    int gone;
    for (int waited = 0;
         !(gone = bt_liveness_gone(comm, peer)) && bt_arrival_board_cause(comm, peer) < 0;
         waited += 10) {
        if (waited >= wait_ms || !bt_liveness_local(comm, peer))
            return 0;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char op[96];
    if (seq > 0)
        snprintf(op, sizeof(op), "%s #%llu", what, (unsigned long long)seq);
    else
        snprintf(op, sizeof(op), "%s", what);
    int cause = gone ? bt_arrival_cause(comm, peer, 0) : bt_arrival_board_cause(comm, peer);
    char why[96];
    cause_text(comm, cause, why, sizeof(why));
    if (!gone) {
        BT_WARN("%s: rank %d (pid %d) failed %s, and will not take part again; this rank (%d) "
                "waited for rank %d",
                op, peer, comm->peers[peer].pid, why, comm->rank, peer);
    } else if (cause >= 0 && cause != peer) {
        BT_WARN("%s: rank %d (pid %d on this host) left after failing %s; this rank (%d) waited "
                "for rank %d",
                op, peer, comm->peers[peer].pid, why, comm->rank, peer);
    } else {
        cause = peer;
        BT_WARN("%s: rank %d (pid %d on this host) is gone: exited or killed while this rank (%d) "
                "waited for it",
                op, peer, comm->peers[peer].pid, comm->rank);
    }
    bt_arrival_failed(comm, cause);
    return 1;
}

/* Rank `peer` stopped answering (`lead` says how): name the rank whose death it reported
 * before it left (a bootstrap message, waited for up to wait_ms), else the peer itself
 * (`own` completes the sentence), and pass that cause on. */
static void report_lost(struct bt_comm *comm, int peer, const char *lead, const char *own,
                        int wait_ms)
{
    int cause = bt_arrival_cause(comm, peer, wait_ms);
    if (cause >= 0 && cause != peer) {
        BT_WARN("%s: rank %d failed first, because rank %d is gone (exited or killed)", lead, peer,
                cause);
    } else {
        cause = peer;
        BT_WARN("%s%s", lead, own);
    }
    bt_arrival_failed(comm, cause);
}

/* Whether rank `peer` (of another host, or PID namespace) no longer listens; asked at most
 * once per BT_LIVENESS_PROBE_EVERY_NS per peer, unless now_please (a failure's report). */
static int peer_refuses(struct bt_comm *comm, int peer, int now_please)
{
    if (peer < 0 || peer >= comm->nranks || peer == comm->rank || bt_liveness_local(comm, peer) ||
        !comm->probed_ns || !comm->bs)
        return 0;
    uint64_t now = bt_time_ns();
    uint64_t last = __atomic_load_n(&comm->probed_ns[peer], __ATOMIC_RELAXED);
    if (!now_please && last && now - last < BT_LIVENESS_PROBE_EVERY_NS)
        return 0;
    __atomic_store_n(&comm->probed_ns[peer], now, __ATOMIC_RELAXED);
    return bt_bootstrap_peer_refuses(comm->bs, peer, 100);
}

/* Report rank `peer` as gone because its listener refuses (the probe said so). */
static void report_refused(struct bt_comm *comm, int peer, const char *what)
{
    char addr[BT_SOCKADDR_STRLEN], lead[224], own[64];
    bt_socket_addr_to_str(bt_bootstrap_peer_addr(comm->bs, peer), addr, sizeof(addr));
    snprintf(lead, sizeof(lead),
             "%s: this rank (%d) waited for rank %d, whose host answers but nothing listens at "
             "its bootstrap address %s any more",
             what, comm->rank, peer, addr);
    snprintf(own, sizeof(own), ": rank %d is gone (exited or killed)", peer);
    report_lost(comm, peer, lead, own, 100);
}

/* Rank `peer` (of another host) said it failed: name it and the cause it sent. */
static void report_told(struct bt_comm *comm, int peer, const char *what)
{
    char lead[160];
    snprintf(lead, sizeof(lead), "%s: this rank (%d) waited for rank %d", what, comm->rank, peer);
    report_lost(comm, peer, lead, ", which failed", 0);
}

/* A rank of another host that said it failed is down whatever the stall (it sends nothing
 * more), except during a shrink (revoked): the ranks that failed still run and carry it. */
static int peer_told(struct bt_comm *comm, int peer)
{
    return !atomic_load_explicit(&comm->revoked, memory_order_acquire) &&
           bt_arrival_told(comm, peer);
}

int bt_liveness_report_lost(struct bt_comm *comm, int peer, const char *what, uint64_t seq,
                            uint64_t stalled_ns)
{
    int told = peer_told(comm, peer);
    if (!told && (stalled_ns < BT_LIVENESS_PROBE_AFTER_NS || !peer_refuses(comm, peer, 0)))
        return 0;
    char op[96];
    snprintf(op, sizeof(op), "%s #%llu", what, (unsigned long long)seq);
    if (told)
        report_told(comm, peer, op);
    else
        report_refused(comm, peer, op);
    return 1;
}

void bt_liveness_report_net(struct bt_comm *comm, int peer)
{
    /* aborted here (ncclCommAbort: the launch reports it), or the peer is down (named now;
     * it may still be dying: its sockets close before its process is gone) */
    if (comm->abort_flag ||
        bt_liveness_report_down(comm, peer, "network transfer", comm->ncolls, BT_PEER_DYING_MS))
        return;
    if (peer_refuses(comm, peer, 1)) {
        char op[64];
        snprintf(op, sizeof(op), "network transfer #%llu", (unsigned long long)comm->ncolls);
        report_refused(comm, peer, op);
        return;
    }
    char lead[96], own[96];
    snprintf(lead, sizeof(lead), "rank %d: the network connection with rank %d failed", comm->rank,
             peer);
    snprintf(own, sizeof(own),
             " (closed or reset by the peer, or timed out: is rank %d still "
             "running?)",
             peer);
    report_lost(comm, peer, lead, own, 300);
}

/* The tests as the lower layers take them: a context argument and a rank. */
static int peer_down(void *comm, int peer)
{
    /* A revoked comm's bootstrap carries the shrink, among ranks that failed (they all did:
     * that is why they shrink) but still run: only a process that is gone is down then. */
    struct bt_comm *c = comm;
    if (atomic_load_explicit(&c->revoked, memory_order_acquire))
        return bt_liveness_gone(c, peer);
    return bt_liveness_down(c, peer);
}

static int report_down(void *comm, int peer, const char *what, int wait_ms)
{
    if (bt_liveness_report_down(comm, peer, what, 0, wait_ms))
        return 1;
    if (wait_ms <= 0)
        return 0;
    /* A failure path (a connection with the peer broke or timed out, or a wait on it ended
     * early): a rank of another host whose bootstrap listener refuses is gone; ask now, as a
     * failed network transfer does (bt_liveness_report_net), rather than after the stall a
     * wait needs. One that still runs but said it failed is named with its cause. */
    if (peer_refuses(comm, peer, 1)) {
        report_refused(comm, peer, what);
        return 1;
    }
    if (peer_told(comm, peer)) {
        report_told(comm, peer, what);
        return 1;
    }
    return 0;
}

/* Down, given a wait of stalled_ns on it (lower layers' view, not logged): a rank of another
 * host that said it failed, or, a second into the stall, whose listener refuses. */
static int peer_lost(void *comm, int peer, uint64_t stalled_ns)
{
    return peer_told(comm, peer) ||
           (stalled_ns >= BT_LIVENESS_PROBE_AFTER_NS && peer_refuses(comm, peer, 0));
}

void bt_liveness_attach(struct bt_comm *comm)
{
    comm->tctx.peer_down = peer_down;
    comm->tctx.report_down = report_down;
    comm->tctx.peer_lost = peer_lost;
    comm->tctx.live_arg = comm;
    /* from now on a bootstrap wait on a rank ends when its process does, or once it failed */
    bt_bootstrap_set_peer_check(comm->bs, peer_down, peer_lost, comm);
}
