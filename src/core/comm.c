#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/comm.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/arrival.h"
#include "core/launch.h"
#include "core/links.h"
#include "core/liveness.h"
#include "core/window.h"
#include "exec/cuda/cuda.h"
#include "proxy/proxy.h"
#include "transport/transport.h"
#include "util/hash.h"
#include "util/param.h"

#define BT_TAG_SPLIT 0x20000
#define BT_TAG_SHRINK 0x40000 /* + 15 bits of the excluded set's hash */

/* ---- registry of live communicators ------------------------------------------------ */

/* Entry points check a handle against this set before touching it, so a call on a
 * destroyed communicator gets an error instead of reading freed memory. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bt_comm **registry;
static int registry_n, registry_cap;

static int registry_add(struct bt_comm *c)
{
    pthread_mutex_lock(&registry_lock);
    if (registry_n == registry_cap) {
        int cap = registry_cap ? registry_cap * 2 : 16;
        struct bt_comm **r = realloc(registry, sizeof(*r) * (size_t)cap);
        if (!r) {
            pthread_mutex_unlock(&registry_lock);
            return -1;
        }
        registry = r;
        registry_cap = cap;
    }
    registry[registry_n++] = c;
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

static void registry_remove(struct bt_comm *c)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < registry_n; i++)
        if (registry[i] == c) {
            registry[i] = registry[--registry_n];
            break;
        }
    if (registry_n == 0) {
        free(registry);
        registry = NULL;
        registry_cap = 0;
    }
    pthread_mutex_unlock(&registry_lock);
}

int bt_comm_is_live(const struct bt_comm *c)
{
    int found = 0;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < registry_n && !found; i++)
        found = registry[i] == c && c->magic == BT_COMM_MAGIC;
    pthread_mutex_unlock(&registry_lock);
    return found;
}

int bt_comm_nonblocking(const struct bt_comm *c)
{
    int nb = -1;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < registry_n && nb < 0; i++)
        if (registry[i] == c && c->magic == BT_COMM_MAGIC)
            nb = !c->config.blocking;
    pthread_mutex_unlock(&registry_lock);
    return nb;
}

int bt_comm_acquire(struct bt_comm *c)
{
    int ok = 0;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < registry_n && !ok; i++)
        ok = registry[i] == c;
    ok = ok && c->magic == BT_COMM_MAGIC && !c->abort_flag;
    if (ok)
        atomic_fetch_add_explicit(&c->active_launches, 1, memory_order_acq_rel);
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

void bt_comm_release(struct bt_comm *c)
{
    atomic_fetch_sub_explicit(&c->active_launches, 1, memory_order_acq_rel);
}

/* ---- host identity ------------------------------------------------------------------ */

static uint64_t host_hash(void)
{
    char buf[256] = "";
    gethostname(buf, sizeof(buf) - 1);
    uint64_t h = bt_fnv1a_str(BT_FNV1A_INIT, buf);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        char id[64] = "";
        if (fgets(id, sizeof(id), f))
            h = bt_fnv1a_str(h, id);
        fclose(f);
    }
    return h;
}

static uint64_t ipc_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/ipc", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static uint64_t pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* CPUs this process may run on. */
static int online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

bt_status_t bt_comm_alloc(int nranks, int rank, struct bt_comm **comm_p)
{
    struct bt_comm *c = calloc(1, sizeof(*c));
    if (!c) {
        BT_WARN("out of memory allocating a communicator");
        return BT_ERR_SYSTEM;
    }
    c->magic = BT_COMM_MAGIC;
    c->rank = rank;
    c->nranks = nranks;
    c->cuda_dev = -1;
    c->config.blocking = 1;
    pthread_mutex_init(&c->ops_lock, NULL);
    if (registry_add(c) != 0) {
        free(c);
        return BT_ERR_SYSTEM;
    }
    *comm_p = c;
    return BT_OK;
}

/* What each rank tells the others at init. Fields that must agree across ranks (channel
 * count, FIFO sizes) are reduced to the minimum so a stray env difference cannot make
 * ranks disagree on a schedule. */
struct init_info {
    struct bt_peer_info peer;
    int nchannels;
    uint32_t simple_slot, net_slot, ll_slot, p2p_slot;
    struct bt_tune_settings tune;
    int check_coll;
};

static size_t clamp_sz(int64_t v, size_t lo, size_t hi)
{
    if (v < (int64_t)lo)
        return lo;
    if ((uint64_t)v > hi)
        return hi;
    return (size_t)v;
}

/* The network's figures for the tuner, agreed: when the ranks span hosts, each asks the
 * transport to a rank of another host (which opens the network now rather than at the first
 * connector) and all take the slowest speed and the largest latency any rank reported.
 * Either every rank has a peer on another host or none has, so all or none exchange. */
static bt_status_t net_link_agree(struct bt_comm *comm)
{
    int remote = -1;
    for (int r = 0; r < comm->nranks && remote < 0; r++)
        if (comm->peers[r].host_hash != comm->peers[comm->rank].host_hash)
            remote = r;
    if (remote < 0)
        return BT_OK;
    struct bt_link_figures *all = calloc((size_t)comm->nranks, sizeof(*all));
    if (!all) {
        BT_WARN("out of memory for %d ranks' network figures", comm->nranks);
        return BT_ERR_SYSTEM;
    }
    bt_transport_link(&comm->tctx, remote, &all[comm->rank]);
    bt_status_t st = bt_bootstrap_allgather(comm->bs, all, sizeof(*all));
    struct bt_link_figures *f = &comm->net_link;
    for (int r = 0; r < comm->nranks && st == BT_OK; r++) {
        if (all[r].gbps > 0 && (f->gbps == 0 || all[r].gbps < f->gbps))
            f->gbps = all[r].gbps;
        if (all[r].latency_us > f->latency_us)
            f->latency_us = all[r].latency_us;
    }
    free(all);
    if (st == BT_OK)
        BT_INFO(BT_LOG_INIT | BT_LOG_TUNING,
                "rank %d: the network between hosts: %.2f GB/s, %.1f us (slowest reported; "
                "0: not reported)",
                comm->rank, (double)f->gbps, (double)f->latency_us);
    return st;
}

bt_status_t bt_comm_init(struct bt_comm *comm, const void *unique_id)
{
    bt_status_t st;
    struct init_info *all = NULL;

    bt_log_set_comm(comm->rank, comm->config.name);
    memcpy(comm->unique_id, unique_id, sizeof(comm->unique_id));
    BT_CHECK(bt_bootstrap_init(unique_id, comm->rank, comm->nranks, &comm->abort_flag, &comm->bs));

    all = calloc((size_t)comm->nranks, sizeof(*all));
    comm->peers = calloc((size_t)comm->nranks, sizeof(*comm->peers));
    comm->probed_ns = calloc((size_t)comm->nranks, sizeof(*comm->probed_ns));
    comm->p2p = calloc((size_t)comm->nranks, sizeof(*comm->p2p));
    comm->direct_send = calloc((size_t)comm->nranks, sizeof(*comm->direct_send));
    comm->direct_recv = calloc((size_t)comm->nranks, sizeof(*comm->direct_recv));
    if (!all || !comm->peers || !comm->probed_ns || !comm->p2p || !comm->direct_send ||
        !comm->direct_recv) {
        BT_WARN("out of memory for %d peers", comm->nranks);
        st = BT_ERR_SYSTEM;
        goto fail;
    }

    struct init_info *me = &all[comm->rank];
    me->peer.rank = comm->rank;
    me->peer.pid = (int)getpid();
    me->peer.cuda_dev = comm->cuda_dev;
    me->peer.is_host = comm->cuda_dev < 0;
    me->peer.host_hash = host_hash();
    me->peer.shm_ns = ipc_namespace();
    me->peer.pid_ns = pid_namespace();
    int64_t maxch = bt_param_max_nchannels();
    me->nchannels =
        (int)clamp_sz(maxch > 0 ? (size_t)maxch : BT_HOST_NCHANNELS, 1, BT_MAX_CHANNELS);
    if (comm->config.max_ctas > 0 && me->nchannels > comm->config.max_ctas)
        me->nchannels = comm->config.max_ctas;
    /* Slots hold whole 16-byte LL lines and 4 KB-aligned Simple chunks. */
    me->simple_slot =
        (uint32_t)(clamp_sz(bt_param_buffsize() / BT_NSTEPS, 4096, 64u << 20) & ~(size_t)4095);
    me->net_slot =
        (uint32_t)(clamp_sz(bt_param_net_buffsize() / BT_NSTEPS, 4096, 64u << 20) & ~(size_t)4095);
    me->ll_slot =
        (uint32_t)(clamp_sz(bt_param_ll_buffsize() / BT_NSTEPS, 256, 64u << 10) & ~(size_t)255);
    me->p2p_slot = (uint32_t)(clamp_sz(bt_param_p2p_chunksize(), 4096, 64u << 20) & ~(size_t)4095);

    bt_tune_settings_from_env(&me->tune);
    if (comm->config.min_ctas > me->tune.min_nchannels) /* config.minCTAs: rank 0's wins */
        me->tune.min_nchannels = comm->config.min_ctas;
    me->check_coll = bt_param_check_coll() != 0;

    BT_CHECK_GOTO(bt_bootstrap_allgather(comm->bs, all, sizeof(*all)), st, fail);

    comm->tune = all[0].tune;
    comm->check_coll = all[0].check_coll; /* every rank must take part in the checks */
    if (memcmp(&all[comm->rank].tune, &comm->tune, sizeof(comm->tune)) != 0)
        BT_WARN("rank %d: PROTO/ALGO/*_THRESHOLD/MIN_NCHANNELS differ from rank 0's; every "
                "rank uses rank 0's so their schedules match",
                comm->rank);

    int nch = BT_MAX_CHANNELS;
    uint32_t ss = UINT32_MAX, ns = UINT32_MAX, ls = UINT32_MAX, ps = UINT32_MAX;
    for (int r = 0; r < comm->nranks; r++) {
        comm->peers[r] = all[r].peer;
        nch = all[r].nchannels < nch ? all[r].nchannels : nch;
        ss = all[r].simple_slot < ss ? all[r].simple_slot : ss;
        ns = all[r].net_slot < ns ? all[r].net_slot : ns;
        ls = all[r].ll_slot < ls ? all[r].ll_slot : ls;
        ps = all[r].p2p_slot < ps ? all[r].p2p_slot : ps;
    }
    struct bt_transport_ctx *tc = &comm->tctx;
    tc->rank = comm->rank;
    tc->nranks = comm->nranks;
    tc->peers = comm->peers;
    tc->bs = comm->bs;
    tc->abort_flag = &comm->abort_flag;
    snprintf(tc->name, sizeof(tc->name), "%s%scomm %p rank %d", comm->config.name,
             comm->config.name[0] ? " " : "", (void *)comm, comm->rank);
    snprintf(tc->net_name, sizeof(tc->net_name), "%s", comm->config.net_name);
    tc->comm_id = comm->comm_hash;
    tc->traffic_class = comm->config.traffic_class;
    bt_liveness_attach(comm);
    comm->local_ranks = 0;
    for (int r = 0; r < comm->nranks; r++)
        comm->local_ranks += comm->peers[r].host_hash == comm->peers[comm->rank].host_hash;
    comm->oversubscribed = comm->local_ranks > online_cpus();
    comm->shm_all = 1;
    for (int r = 0; r < comm->nranks; r++)
        if (r != comm->rank && !bt_transport_direct(tc, r))
            comm->shm_all = 0;
    BT_CHECK_GOTO(net_link_agree(comm), st, fail);
    comm->nchannels = nch;
    /* Every rank reaches the same shm_all (shared memory joins ranks of one host and IPC
     * namespace, an equivalence), so they agree on the slot. Over the network a slot is a
     * message: larger ones cost fewer system calls per byte (docs/TUNING.md). */
    comm->simple_slot = comm->shm_all ? ss : ns;
    comm->ll_slot = ls;
    comm->p2p_slot = ps;
    /* One-shot AllReduce moves small messages to every peer: small slots keep n^2 FIFOs
     * cheap. */
    comm->direct_slot = ss < BT_DIRECT_SLOT_MAX ? ss : BT_DIRECT_SLOT_MAX;
    if (!comm->shm_all)
        comm->direct_slot = comm->simple_slot; /* messages: see above */
    for (int r = 0; r < comm->nranks; r++) {
        comm->direct_send[r] = &comm->p2p[r].direct_send;
        comm->direct_recv[r] = &comm->p2p[r].direct_recv;
    }
    free(all);
    all = NULL;

    if (bt_graph_channels_init(comm->channels, comm->nchannels, comm->nranks, comm->rank) != 0) {
        BT_WARN("out of memory building %d channels", comm->nchannels);
        st = BT_ERR_SYSTEM;
        goto fail;
    }
    BT_CHECK_GOTO(bt_arrival_init(comm), st, fail);
    BT_CHECK_GOTO(bt_links_caps_init(comm), st, fail);
    bt_proxy_dump_signal_init(); /* the dump signal also makes waiting launches report */
    comm->init_done = 1;
    if (comm->rank == 0)
        BT_INFO(BT_LOG_INIT, "Baton %s, NCCL 2.28.9 interface: comm %p %d ranks, %s, %d channels%s",
                BATON_VERSION_STRING, (void *)comm, comm->nranks,
                comm->cuda_dev < 0 ? "host memory" : "CUDA", comm->nchannels,
                comm->oversubscribed ? ", more local ranks than CPUs: waits yield at once" : "");
    BT_INFO(BT_LOG_INIT, "comm %p rank %d nranks %d pid %d - Init COMPLETE", (void *)comm,
            comm->rank, comm->nranks, (int)getpid());
    return BT_OK;

fail:
    free(all);
    return st;
}

bt_status_t bt_comm_start(struct bt_comm *comm, const void *unique_id)
{
    BT_CHECK(bt_comm_init(comm, unique_id));
    return bt_links_probe(comm);
}

/* Until no launch uses the comm (each sees the abort flag within a few ms). */
static void wait_no_launch(struct bt_comm *comm)
{
    while (atomic_load_explicit(&comm->active_launches, memory_order_acquire) > 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

bt_status_t bt_comm_async_error(struct bt_comm *comm)
{
    bt_status_t st = (bt_status_t)atomic_load_explicit(&comm->async_error, memory_order_acquire);
    struct bt_cuda_comm *cc = __atomic_load_n(&comm->cuda, __ATOMIC_ACQUIRE); /* any thread */
    /* a revoked comm's kernels were aborted on purpose: not an error to report */
    if (st == BT_OK && cc && !atomic_load_explicit(&comm->revoked, memory_order_acquire)) {
        st = bt_cuda_comm_error(cc); /* a kernel that met an abort or timeout */
        if (st != BT_OK)
            bt_comm_set_async_error(comm, st);
    }
    return st;
}

void bt_comm_abort_signal(struct bt_comm *comm)
{
    /* Under the registry lock, so no launch acquires the comm after this point. */
    pthread_mutex_lock(&registry_lock);
    __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&registry_lock);
    /* kernels waiting on peers end with an error */
    bt_cuda_comm_abort(__atomic_load_n(&comm->cuda, __ATOMIC_ACQUIRE));
    /* A non-blocking init writes comm->bs in its own thread; its waits see the flag. */
    if (atomic_load_explicit(&comm->busy, memory_order_acquire) != BT_BUSY_INIT && comm->bs)
        bt_bootstrap_abort(comm->bs);
    /* A collective stuck in another thread sees the flag within a few ms and returns;
     * only then may the caller free what it uses. */
    wait_no_launch(comm);
    bt_comm_wait_idle(comm);
    /* An init that never completed: a root this process runs for it would wait for ranks
     * until BOOTSTRAP_TIMEOUT. */
    if (!comm->init_done)
        bt_bootstrap_root_cancel(comm->unique_id);
}

void bt_comm_wait_idle(struct bt_comm *comm)
{
    while (bt_comm_busy(comm)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void bt_comm_revoke(struct bt_comm *comm)
{
    pthread_mutex_lock(&registry_lock);
    int was = atomic_exchange(&comm->revoked, 1); /* launches from here on fail their gate */
    if (!was)
        __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&registry_lock);
    if (was)
        return;
    BT_INFO(BT_LOG_INIT, "comm %p rank %d: revoked - its operations stop", (void *)comm,
            comm->rank);
    struct bt_cuda_comm *cc = __atomic_load_n(&comm->cuda, __ATOMIC_ACQUIRE);
    /* Its kernels end with an error (the CUDA state stays aborted; bt_comm_free waits for
     * them); no device-wide sync here, which would wait on other comms' kernels too. */
    bt_cuda_comm_abort(cc);
    wait_no_launch(comm);
    /* The proxy completes the stopped launches' ops and takes no more; it and the
     * connectors stay until free. */
    bt_proxy_stop(comm->tctx.proxy);
    /* Only now, with nothing running, may waits on this comm succeed again: the bootstrap
     * carries the shrink that follows, whose result ncclCommGetAsyncError then reports (the
     * failure that led here is handled). */
    atomic_store_explicit(&comm->async_error, 0, memory_order_release);
    __atomic_store_n(&comm->abort_flag, 0, __ATOMIC_RELEASE);
}

void bt_comm_set_async_error(struct bt_comm *comm, bt_status_t st)
{
    int expected = 0;
    atomic_compare_exchange_strong(&comm->async_error, &expected, (int)st);
}

void bt_comm_free(struct bt_comm *comm)
{
    if (!comm)
        return;
    registry_remove(comm);
    bt_launch_gpu_free(comm); /* waits for the comm's kernels */
    bt_window_free_all(comm);
    bt_arrival_free(comm);
    /* The proxy first: its threads use the connectors freed below. */
    bt_proxy_destroy(comm->tctx.proxy);
    comm->tctx.proxy = NULL;
    for (int c = 0; c < comm->nchannels; c++) {
        struct bt_channel *ch = &comm->channels[c];
        bt_conn_free(&ch->ring_send);
        bt_conn_free(&ch->ring_recv);
        bt_conn_free(&ch->tree_up_send);
        bt_conn_free(&ch->tree_up_recv);
        for (int k = 0; k < BT_TREE_ARITY; k++) {
            bt_conn_free(&ch->tree_down_send[k]);
            bt_conn_free(&ch->tree_down_recv[k]);
        }
    }
    bt_graph_channels_free(comm->channels, comm->nchannels);
    if (comm->p2p)
        for (int r = 0; r < comm->nranks; r++) {
            bt_conn_free(&comm->p2p[r].send);
            bt_conn_free(&comm->p2p[r].recv);
            bt_conn_free(&comm->p2p[r].direct_send);
            bt_conn_free(&comm->p2p[r].direct_recv);
        }
    free(comm->p2p);
    bt_transport_ctx_fini(&comm->tctx); /* after every connector: closes the network */
    free(comm->link_caps);
    free(comm->direct_send);
    free(comm->direct_recv);
    bt_bootstrap_destroy(comm->bs);
    free(comm->peers);
    free(comm->probed_ns);
    free(comm->custom_ops);
    pthread_mutex_destroy(&comm->ops_lock);
    comm->magic = BT_COMM_DEAD;
    free(comm);
}

/* ---- split -------------------------------------------------------------------------- */

/* A child of `parent` made of its ranks members[0..m) (new rank i is parent rank
 * members[i]; this rank is members[newrank]): the first member makes the rendezvous and hands
 * its id to the others over the parent's bootstrap (`tag`), and each starts the comm. */
static bt_status_t child_start(struct bt_comm *parent, const int *members, int m, int newrank,
                               int tag, const struct bt_comm_config *config,
                               struct bt_comm **child_p)
{
    unsigned char id[BT_UNIQUE_ID_BYTES];
    if (newrank == 0) {
        BT_CHECK(bt_bootstrap_unique_id_new(id));
        for (int i = 1; i < m; i++)
            BT_CHECK(bt_bootstrap_send(parent->bs, members[i], tag, id, sizeof(id)));
    } else {
        BT_CHECK(bt_bootstrap_recv(parent->bs, members[0], tag, id, sizeof(id)));
    }
    struct bt_comm *nc = NULL;
    BT_CHECK(bt_comm_alloc(m, newrank, &nc));
    nc->cuda_dev = parent->cuda_dev;
    nc->config = config ? *config : parent->config;
    bt_status_t st = bt_comm_start(nc, id);
    if (st != BT_OK) {
        bt_comm_free(nc);
        return st;
    }
    *child_p = nc;
    return BT_OK;
}

struct split_info {
    int color, key, rank;
};

static int split_cmp(const void *a, const void *b)
{
    const struct split_info *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

bt_status_t bt_comm_split(struct bt_comm *parent, int color, int key,
                          const struct bt_comm_config *config, struct bt_comm **newcomm_p)
{
    int n = parent->nranks;
    struct split_info *all = calloc((size_t)n, sizeof(*all));
    struct split_info *members = calloc((size_t)n, sizeof(*members));
    int *ranks = calloc((size_t)n, sizeof(*ranks));
    bt_status_t st = BT_OK;

    *newcomm_p = NULL;
    if (!all || !members || !ranks) {
        st = BT_ERR_SYSTEM;
        goto out;
    }
    all[parent->rank] = (struct split_info){color < 0 ? -1 : color, key, parent->rank};
    BT_CHECK_GOTO(bt_bootstrap_allgather(parent->bs, all, sizeof(*all)), st, out);
    /* Every rank, NOCOLOR ones too, takes the tag so the next split agrees on it. */
    int tag = BT_TAG_SPLIT + (int)(parent->split_seq++ % 0x8000);
    if (color < 0)
        goto out; /* NCCL_SPLIT_NOCOLOR: took part, gets no communicator */

    int m = 0;
    for (int r = 0; r < n; r++)
        if (all[r].color == color)
            members[m++] = all[r];
    qsort(members, (size_t)m, sizeof(*members), split_cmp);
    int newrank = 0;
    for (int i = 0; i < m; i++) {
        ranks[i] = members[i].rank;
        if (members[i].rank == parent->rank)
            newrank = i;
    }
    st = child_start(parent, ranks, m, newrank, tag, config, newcomm_p);
out:
    free(all);
    free(members);
    free(ranks);
    return st;
}

/* ---- shrink ------------------------------------------------------------------------- */

bt_status_t bt_comm_shrink(struct bt_comm *parent, const int *excl, int nexcl, int flags,
                           const struct bt_comm_config *config, struct bt_comm **newcomm_p)
{
    *newcomm_p = NULL;
    if (flags & BT_SHRINK_ABORT)
        bt_comm_revoke(parent); /* its operations stop; the bootstrap stays */
    /* New ranks in parent order, the excluded left out (NCCL numbers them so too). The
     * first remaining rank makes the rendezvous and tells each other one; the tag is the
     * excluded set's, so ranks that took part in different shrinks never mix messages. */
    int n = parent->nranks, m = 0, newrank = -1;
    int *ranks = calloc((size_t)n, sizeof(*ranks));
    if (!ranks)
        return BT_ERR_SYSTEM;
    uint64_t h = BT_FNV1A_INIT;
    for (int r = 0, k = 0; r < n; r++) {
        if (k < nexcl && excl[k] == r) {
            h = bt_fnv1a(h, &r, sizeof(r));
            k++;
            continue;
        }
        if (r == parent->rank)
            newrank = m;
        ranks[m++] = r;
    }
    int tag = BT_TAG_SHRINK + (int)(h % 0x8000);
    bt_status_t st = child_start(parent, ranks, m, newrank, tag, config, newcomm_p);
    free(ranks);
    if (st == BT_OK)
        BT_INFO(BT_LOG_INIT, "comm %p rank %d: shrunk from comm %p rank %d (%d of %d ranks left%s)",
                (void *)*newcomm_p, newrank, (void *)parent, parent->rank, m, n,
                flags & BT_SHRINK_ABORT ? ", parent revoked" : "");
    return st;
}
