/* The arrival board (arrival.h). */
#include "core/arrival.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap/bootstrap.h"
#include "core/comm.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/param.h"
#include "util/shm.h"
#include "util/time.h"

struct bt_arrival_line {
    BT_ALIGNED(BT_CACHELINE) _Atomic uint64_t started;
    _Atomic uint64_t done;
    _Atomic int32_t gone; /* 1 + the rank whose death made this rank fail, or 0 */
};

struct bt_arrival_query {
    uint64_t seq;      /* the collective asked about */
    uint64_t until;    /* bt_time_ns: report with the answers in by then */
    int answers;       /* how many have come */
    int reported;      /* printed: this seq is done with */
    uint64_t *started; /* [nranks]: the collective each rank had called, or NO_ANSWER */
};

/* Every rank on this host, in this IPC namespace: the board can be shared (whether or not
 * the shared-memory transport is allowed: SHM_DISABLE concerns data, this is 128 bytes a
 * rank). */
static int board_possible(const struct bt_comm *comm)
{
    if (!bt_param_arrival_board())
        return 0;
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
    if (comm->query) {
        free(comm->query->started);
        free(comm->query);
        comm->query = NULL;
    }
    if (!comm->arrival_seg)
        return;
    bt_shm_close(comm->arrival_seg);
    free(comm->arrival_seg);
    comm->arrival_seg = NULL;
    comm->arrival = NULL;
}

void bt_arrival_start(struct bt_comm *comm, uint64_t seq)
{
    atomic_store_explicit(&comm->arrived, seq, memory_order_relaxed);
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

/*
 * Without a board: questions over the bootstrap. A rank whose collective #seq hangs asks
 * every other rank which collective it has called. A host rank answers while it waits inside
 * a collective of this communicator (bt_arrival_serve from the executor's stall checks); a
 * GPU rank's watcher thread answers every 100 ms, inside the library or not. So the ranks
 * that answer with a smaller number have not arrived, and those that do not answer within
 * ASK_WAIT_MS have not called the communicator's collective either (host), have no GPU
 * communicator yet (GPU), or are gone.
 */
#define BT_TAG_ASK 0x30001
#define BT_TAG_ANSWER 0x30002
#define ASK_SEND_MS 100  /* per rank: a dead host must not hold the asker up for long */
#define ASK_WAIT_MS 1000 /* for the answers: the others look every 50-100 ms */
#define NO_ANSWER UINT64_MAX

struct arrival_msg {
    uint64_t seq;     /* ask: the collective asked about; answer: the one asked about */
    uint64_t started; /* answer: the last collective the answering rank has called */
};

static void query_print(struct bt_comm *comm, struct bt_arrival_query *q)
{
    char late[384] = "", silent[256] = "";
    size_t nl = 0, ns = 0;
    int nlate = 0, nsilent = 0;
    for (int r = 0; r < comm->nranks; r++) {
        uint64_t s = q->started[r];
        if (r == comm->rank || (s != NO_ANSWER && s >= q->seq))
            continue;
        if (s == NO_ANSWER) {
            if (ns < sizeof(silent) - 16)
                ns += (size_t)snprintf(silent + ns, sizeof(silent) - ns, "%s%d",
                                       nsilent ? ", " : "", r);
            nsilent++;
        } else {
            if (nl < sizeof(late) - 48)
                nl += (size_t)snprintf(late + nl, sizeof(late) - nl, "%s%d (last started #%llu)",
                                       nlate ? ", " : "", r, (unsigned long long)s);
            nlate++;
        }
    }
    if (nlate + nsilent == 0) {
        BT_REPORT("hang report: every rank has arrived at collective #%llu (asked the other %d "
                  "rank(s), all answered)",
                  (unsigned long long)q->seq, comm->nranks - 1);
        return;
    }
    BT_REPORT("hang report: %d rank(s) have not arrived at collective #%llu: %s%s%s%s; asked the "
              "other %d rank(s), %d answered",
              nlate + nsilent, (unsigned long long)q->seq, late, nlate && nsilent ? ", " : "",
              silent, nsilent ? " (no answer within 1 s)" : "", comm->nranks - 1, q->answers);
}

void bt_arrival_hang(struct bt_comm *comm, uint64_t seq)
{
    if (comm->arrival)
        bt_arrival_report(comm, seq);
    else
        (void)bt_arrival_ask(comm, seq);
}

/* Guards every communicator's query: the thread that runs a host collective and the GPU
 * watcher may both ask and serve (one communicator can run both kinds of collectives).
 * Never held across a message send. */
static pthread_mutex_t query_lock = PTHREAD_MUTEX_INITIALIZER;

bt_status_t bt_arrival_ask(struct bt_comm *comm, uint64_t seq)
{
    if (comm->arrival || !comm->bs || comm->nranks < 2)
        return BT_OK;
    pthread_mutex_lock(&query_lock);
    struct bt_arrival_query *q = comm->query;
    if (q && q->seq == seq && !q->reported) {
        pthread_mutex_unlock(&query_lock);
        return BT_OK; /* asked already, answers still coming */
    }
    if (!q) {
        q = calloc(1, sizeof(*q));
        if (q)
            q->started = malloc(sizeof(uint64_t) * (size_t)comm->nranks);
        if (!q || !q->started) {
            free(q);
            pthread_mutex_unlock(&query_lock);
            return BT_ERR_SYSTEM;
        }
        comm->query = q;
    }
    q->seq = seq;
    q->answers = 0;
    q->reported = 0;
    for (int r = 0; r < comm->nranks; r++)
        q->started[r] = NO_ANSWER;
    q->until = UINT64_MAX; /* not before the questions are out */
    pthread_mutex_unlock(&query_lock);

    struct arrival_msg m = {.seq = seq};
    for (int r = 0; r < comm->nranks; r++) {
        if (r == comm->rank)
            continue;
        uint64_t deadline = bt_time_ns() + ASK_SEND_MS * 1000000ull;
        (void)bt_bootstrap_send_until(comm->bs, r, BT_TAG_ASK, &m, sizeof(m), deadline);
    }
    pthread_mutex_lock(&query_lock);
    if (q->seq == seq)
        q->until = bt_time_ns() + ASK_WAIT_MS * 1000000ull;
    pthread_mutex_unlock(&query_lock);
    BT_INFO(BT_LOG_COLL, "rank %d: asked the other %d ranks which collective they have called",
            comm->rank, comm->nranks - 1);
    return BT_OK;
}

void bt_arrival_serve(struct bt_comm *comm)
{
    if (comm->arrival || !comm->bs)
        return;
    struct arrival_msg m;
    int from;
    while ((from = bt_bootstrap_poll(comm->bs, BT_TAG_ASK, &m, sizeof(m))) >= 0) {
        struct arrival_msg a = {
            .seq = m.seq, .started = atomic_load_explicit(&comm->arrived, memory_order_relaxed)};
        uint64_t deadline = bt_time_ns() + ASK_SEND_MS * 1000000ull;
        (void)bt_bootstrap_send_until(comm->bs, from, BT_TAG_ANSWER, &a, sizeof(a), deadline);
    }
    pthread_mutex_lock(&query_lock);
    struct bt_arrival_query *q = comm->query;
    while ((from = bt_bootstrap_poll(comm->bs, BT_TAG_ANSWER, &m, sizeof(m))) >= 0) {
        if (!q || q->reported || m.seq != q->seq || q->started[from] != NO_ANSWER)
            continue; /* an answer to an earlier question */
        q->started[from] = m.started;
        q->answers++;
    }
    int print = q && !q->reported && (q->answers == comm->nranks - 1 || bt_time_ns() >= q->until);
    if (print) {
        q->reported = 1;
        query_print(comm, q);
    }
    pthread_mutex_unlock(&query_lock);
}

#define BT_TAG_CAUSE 0x30000
#define CAUSE_SEND_MS 200 /* per rank: the failure path must not linger on dead hosts */

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
    /* Only the ranks this one has, or was making, connectors with can see it fail next or
     * wait on it: a few neighbours, whatever the job's size (each dead one costs a short
     * deadline). */
    int32_t msg = gone_rank;
    for (int r = 0; r < comm->nranks; r++) {
        if (r == comm->rank || r == gone_rank || !bt_transport_linked_peer(&comm->tctx, r))
            continue;
        uint64_t deadline = bt_time_ns() + CAUSE_SEND_MS * 1000000ull;
        if (bt_bootstrap_send_until(comm->bs, r, BT_TAG_CAUSE, &msg, sizeof(msg), deadline) !=
            BT_OK)
            BT_INFO(BT_LOG_INIT, "rank %d: could not tell rank %d that rank %d is gone", comm->rank,
                    r, gone_rank);
    }
}

int bt_arrival_told(struct bt_comm *comm, int rank)
{
    return !comm->arrival && comm->bs && rank >= 0 && rank < comm->nranks &&
           bt_bootstrap_queued(comm->bs, rank, BT_TAG_CAUSE);
}

int bt_arrival_board_cause(const struct bt_comm *comm, int rank)
{
    if (!comm->arrival || rank < 0 || rank >= comm->nranks)
        return -1;
    return atomic_load_explicit(&comm->arrival[rank].gone, memory_order_relaxed) - 1;
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
