/* The arrival board (arrival.h). */
#include "core/arrival.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "core/comm.h"
#include "transport/conn.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/shm.h"
#include "util/time.h"

struct bt_arrival_line {
    BT_ALIGNED(BT_CACHELINE) _Atomic uint64_t started;
    _Atomic uint64_t done;
    _Atomic int32_t gone; /* 1 + the rank whose death made this rank fail, or 0 */
};

/* Every rank on this host, in this IPC namespace: the board can be shared (whether or not
 * the shared-memory transport is allowed: SHM_DISABLE concerns data, this is 128 bytes a
 * rank). */
static int board_possible(const struct bt_comm *comm)
{
    const struct bt_peer_info *me = &comm->peers[comm->rank];
    for (int r = 0; r < comm->nranks; r++)
        if (comm->peers[r].host_hash != me->host_hash || comm->peers[r].shm_ns != me->shm_ns)
            return 0;
    return 1;
}

bt_status_t bt_arrival_init(struct bt_comm *comm)
{
    if (comm->nranks < 2 || !board_possible(comm))
        return BT_OK;
    size_t bytes = sizeof(struct bt_arrival_line) * (size_t)comm->nranks;
    char(*names)[BT_SHM_NAME_MAX] = calloc((size_t)comm->nranks, BT_SHM_NAME_MAX);
    if (!names)
        return BT_ERR_SYSTEM;
    struct bt_shm_seg seg;
    memset(&seg, 0, sizeof(seg));
    bt_status_t st = BT_OK;
    if (comm->rank == 0) {
        st = bt_shm_create(bytes, &seg);
        if (st == BT_OK)
            snprintf(names[0], BT_SHM_NAME_MAX, "%s", seg.name);
    }
    /* every rank takes part even when rank 0 failed: an empty name means no board */
    bt_status_t gst = bt_bootstrap_allgather(comm->bs, names, BT_SHM_NAME_MAX);
    if (gst != BT_OK) {
        bt_shm_close(&seg);
        free(names);
        return gst;
    }
    if (comm->rank != 0 && names[0][0])
        st = bt_shm_open(names[0], bytes, &seg);
    gst = bt_bootstrap_barrier(comm->bs); /* all mapped: the name can go */
    if (comm->rank == 0)
        bt_shm_unlink(&seg);
    free(names);
    if (gst != BT_OK || st != BT_OK || !seg.ptr) {
        bt_shm_close(&seg);
        BT_INFO(BT_LOG_INIT, "comm %p: no arrival board; hang reports name direct peers only",
                (void *)comm);
        return gst;
    }
    comm->arrival_seg = malloc(sizeof(seg));
    if (!comm->arrival_seg) {
        bt_shm_close(&seg);
        return BT_ERR_SYSTEM;
    }
    *comm->arrival_seg = seg;
    comm->arrival = seg.ptr;
    return BT_OK;
}

void bt_arrival_free(struct bt_comm *comm)
{
    if (!comm->arrival_seg)
        return;
    bt_shm_close(comm->arrival_seg);
    free(comm->arrival_seg);
    comm->arrival_seg = NULL;
    comm->arrival = NULL;
}

void bt_arrival_start(struct bt_comm *comm, uint64_t seq)
{
    if (comm->arrival)
        atomic_store_explicit(&comm->arrival[comm->rank].started, seq, memory_order_relaxed);
}

void bt_arrival_done(struct bt_comm *comm, uint64_t seq)
{
    if (comm->arrival)
        atomic_store_explicit(&comm->arrival[comm->rank].done, seq, memory_order_relaxed);
}

int bt_arrival_report(struct bt_comm *comm, uint64_t seq)
{
    if (!comm->arrival)
        return 0;
    char list[512] = "";
    size_t len = 0;
    int n = 0;
    for (int r = 0; r < comm->nranks; r++) {
        uint64_t s = atomic_load_explicit(&comm->arrival[r].started, memory_order_relaxed);
        if (s >= seq)
            continue;
        n++;
        if (len < sizeof(list) - 48)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d (last started #%llu)",
                                    n > 1 ? ", " : "", r, (unsigned long long)s);
    }
    if (n)
        BT_REPORT("hang report: %d rank(s) have not arrived at collective #%llu: %s", n,
                  (unsigned long long)seq, list);
    else
        BT_REPORT("hang report: every rank has arrived at collective #%llu",
                  (unsigned long long)seq);
    return n;
}

#define BT_TAG_CAUSE 0x30000
#define CAUSE_SEND_MS 200 /* per rank: the failure path must not linger on dead hosts */

static void tell_if_net(const struct bt_conn *c, char *tell)
{
    if (c->connected && c->tp == &bt_transport_net && c->peer >= 0)
        tell[c->peer] = 1;
}

void bt_arrival_failed(struct bt_comm *comm, int gone_rank)
{
    if (gone_rank < 0)
        return;
    if (comm->arrival) {
        int32_t none = 0;
        atomic_compare_exchange_strong(&comm->arrival[comm->rank].gone, &none, gone_rank + 1);
        return;
    }
    if (comm->cause_sent || !comm->bs)
        return;
    comm->cause_sent = 1;
    /* Only the ranks this one has network connections with can see it fail next and ask:
     * a few neighbours, whatever the job's size (each dead one costs a short deadline). */
    char *tell = calloc((size_t)comm->nranks, 1);
    if (!tell)
        return;
    for (int c = 0; c < comm->nchannels; c++) {
        struct bt_channel *ch = &comm->channels[c];
        tell_if_net(&ch->ring_send, tell);
        tell_if_net(&ch->ring_recv, tell);
        tell_if_net(&ch->tree_up_send, tell);
        tell_if_net(&ch->tree_up_recv, tell);
        for (int k = 0; k < BT_TREE_ARITY; k++) {
            tell_if_net(&ch->tree_down_send[k], tell);
            tell_if_net(&ch->tree_down_recv[k], tell);
        }
    }
    for (int r = 0; r < comm->nranks && comm->p2p; r++) {
        tell_if_net(&comm->p2p[r].send, tell);
        tell_if_net(&comm->p2p[r].recv, tell);
        tell_if_net(&comm->p2p[r].direct_send, tell);
        tell_if_net(&comm->p2p[r].direct_recv, tell);
    }
    int32_t msg = gone_rank;
    for (int r = 0; r < comm->nranks; r++) {
        if (r == comm->rank || r == gone_rank || !tell[r])
            continue;
        uint64_t deadline = bt_time_ns() + CAUSE_SEND_MS * 1000000ull;
        if (bt_bootstrap_send_until(comm->bs, r, BT_TAG_CAUSE, &msg, sizeof(msg), deadline) !=
            BT_OK)
            BT_INFO(BT_LOG_INIT, "rank %d: could not tell rank %d that rank %d is gone", comm->rank,
                    r, gone_rank);
    }
    free(tell);
}

int bt_arrival_cause(struct bt_comm *comm, int rank, int wait_ms)
{
    if (rank < 0 || rank >= comm->nranks)
        return -1;
    if (comm->arrival)
        return atomic_load_explicit(&comm->arrival[rank].gone, memory_order_relaxed) - 1;
    int32_t msg = -1;
    if (!comm->bs || wait_ms < 0)
        return -1; /* wait_ms 0: a message already here only */
    uint64_t deadline = bt_time_ns() + (uint64_t)wait_ms * 1000000ull;
    if (bt_bootstrap_recv_until(comm->bs, rank, BT_TAG_CAUSE, &msg, sizeof(msg), deadline) != BT_OK)
        return -1;
    return msg >= 0 && msg < comm->nranks ? msg : -1;
}
