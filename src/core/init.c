/*
 * A communicator's init: the rendezvous, what every rank tells the others (where it runs, its
 * settings and FIFO sizes), what they agree on from that (rank 0's settings, the smallest
 * sizes), the views its transports and executors get, its channels; and the start, which runs
 * what a ready communicator does before its caller gets it (TOPO_PROBE).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/init.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arrival.h"
#include "core/comm.h"
#include "core/launch.h"
#include "core/links.h"
#include "core/liveness.h"
#include "proxy/proxy.h" /* the dump signal: the process's, not one comm's proxy */
#include "util/hash.h"
#include "util/param.h"

/* Which host rank `rank` of `nranks` is on: the host name and boot id, or HOSTID in their
 * place; TEST_HOSTS=N then cuts the ranks into N hosts of consecutive ranks (a test's hosts
 * on one machine, even for ranks of one process). */
static uint64_t host_hash(int rank, int nranks)
{
    const char *id = bt_param_str_hostid();
    uint64_t h;
    if (id) {
        h = bt_fnv1a_str(BT_FNV1A_INIT, id);
    } else {
        char buf[256] = "";
        gethostname(buf, sizeof(buf) - 1);
        h = bt_fnv1a_str(BT_FNV1A_INIT, buf);
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (f) {
            char boot[64] = "";
            if (fgets(boot, sizeof(boot), f))
                h = bt_fnv1a_str(h, boot);
            fclose(f);
        }
    }
    int64_t hosts = bt_param_test_hosts();
    if (hosts > 1) {
        char part[32];
        snprintf(part, sizeof(part), "/test-host-%lld",
                 (long long)((int64_t)rank * hosts / nranks));
        h = bt_fnv1a_str(h, part);
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

/* This rank's view: where it runs and what its environment asks for. */
static void my_info(const struct bt_comm *comm, struct init_info *me)
{
    me->peer.rank = comm->rank;
    me->peer.pid = (int)getpid();
    me->peer.cuda_dev = comm->cuda_dev;
    me->peer.is_host = comm->cuda_dev < 0;
    me->peer.host_hash = host_hash(comm->rank, comm->nranks);
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
}

/* What the ranks agree on from everyone's view: rank 0's settings, the smallest channel
 * count and slots (*agreed gets them in its fields), every rank's peer info. */
static void agree(struct bt_comm *comm, const struct init_info *all, struct init_info *agreed)
{
    comm->tune = all[0].tune;
    comm->check_coll = all[0].check_coll; /* every rank must take part in the checks */
    if (memcmp(&all[comm->rank].tune, &comm->tune, sizeof(comm->tune)) != 0)
        BT_WARN("rank %d: PROTO/ALGO/*_THRESHOLD/MIN_NCHANNELS/WIN_*_BYTES/GPU_TREES differ "
                "from rank 0's; every rank uses rank 0's so their schedules match",
                comm->rank);
    *agreed = all[0];
    for (int r = 0; r < comm->nranks; r++) {
        const struct init_info *a = &all[r];
        comm->peers[r] = a->peer;
        agreed->nchannels = a->nchannels < agreed->nchannels ? a->nchannels : agreed->nchannels;
        agreed->simple_slot =
            a->simple_slot < agreed->simple_slot ? a->simple_slot : agreed->simple_slot;
        agreed->net_slot = a->net_slot < agreed->net_slot ? a->net_slot : agreed->net_slot;
        agreed->ll_slot = a->ll_slot < agreed->ll_slot ? a->ll_slot : agreed->ll_slot;
        agreed->p2p_slot = a->p2p_slot < agreed->p2p_slot ? a->p2p_slot : agreed->p2p_slot;
    }
}

/* Each rank's host, numbered 0, 1, ... by first appearance: every rank sees every host hash,
 * so all agree (n^2 / 2 compares at most, ~10 ms at 4096 ranks). */
static void number_hosts(struct bt_comm *comm)
{
    comm->nhosts = 0;
    for (int r = 0; r < comm->nranks; r++) {
        int h = -1;
        for (int q = 0; q < r && h < 0; q++)
            if (comm->peers[q].host_hash == comm->peers[r].host_hash)
                h = comm->host[q];
        comm->host[r] = h >= 0 ? h : comm->nhosts++;
    }
}

/* The communicator as its transports see it, and what follows from where the peers are. */
static void transport_view(struct bt_comm *comm)
{
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
    tc->nic_path = -1; /* unknown; a GPU executor sets it from its topology when it places FIFOs */
    bt_liveness_attach(comm);
    comm->local_ranks = 0;
    for (int r = 0; r < comm->nranks; r++)
        comm->local_ranks += comm->peers[r].host_hash == comm->peers[comm->rank].host_hash;
    int cpus = online_cpus();
    comm->oversubscribed = comm->local_ranks > cpus;
    comm->cpus_per_rank = cpus / comm->local_ranks;
    number_hosts(comm);
    comm->one_per_host = comm->nhosts == comm->nranks;
    comm->shm_all = 1;
    for (int r = 0; r < comm->nranks; r++)
        if (r != comm->rank && !bt_transport_mapped(tc, r))
            comm->shm_all = 0;
}

/* The FIFO geometry every rank reaches from the agreed figures. */
static void geometry(struct bt_comm *comm, const struct init_info *agreed)
{
    comm->nchannels = agreed->nchannels;
    /* Every rank reaches the same shm_all (shared memory joins ranks of one host and IPC
     * namespace, an equivalence), so they agree on the slot. Over the network a slot is a
     * message: larger ones cost fewer system calls per byte (docs/TUNING.md). */
    comm->simple_slot = comm->shm_all ? agreed->simple_slot : agreed->net_slot;
    comm->ll_slot = agreed->ll_slot;
    comm->p2p_slot = agreed->p2p_slot;
    /* One-shot AllReduce moves small messages to every peer: small slots keep n^2 FIFOs
     * cheap. */
    comm->direct_slot =
        agreed->simple_slot < BT_DIRECT_SLOT_MAX ? agreed->simple_slot : BT_DIRECT_SLOT_MAX;
    if (!comm->shm_all)
        comm->direct_slot = comm->simple_slot; /* messages: see above */
}

/* The communicator as its executors see it (exec/exec.h), once everything in it is known. */
static void exec_view(struct bt_comm *comm)
{
    comm->ec = (struct bt_exec_comm){
        .rank = comm->rank,
        .nranks = comm->nranks,
        .dev = comm->cuda_dev,
        .owner = comm,
        .abort_flag = &comm->abort_flag,
        .tctx = &comm->tctx,
        .tune = &comm->tune,
        .hooks = &bt_launch_hooks,
        .net_link = comm->net_link,
        .shm_all = comm->shm_all,
        .local_ranks = comm->local_ranks,
        .one_per_host = comm->one_per_host,
        .host = comm->host,
        .nhosts = comm->nhosts,
        .oversubscribed = comm->oversubscribed,
        .cpus_per_rank = comm->cpus_per_rank,
        .nchannels = comm->nchannels,
        .channels = comm->channels,
        .link_caps = comm->link_caps,
        .simple_slot = comm->simple_slot,
        .ll_slot = comm->ll_slot,
        .p2p_slot = comm->p2p_slot,
        .direct_slot = comm->direct_slot,
        .max_ctas = comm->config.max_ctas,
        .name = comm->config.name,
    };
}

bt_status_t bt_comm_init(struct bt_comm *comm, const void *unique_id)
{
    bt_status_t st;
    bt_log_set_comm(comm->rank, comm->config.name);
    memcpy(comm->unique_id, unique_id, sizeof(comm->unique_id));
    BT_CHECK(bt_bootstrap_init(unique_id, comm->rank, comm->nranks, &comm->abort_flag, &comm->bs));

    struct init_info *all = calloc((size_t)comm->nranks, sizeof(*all)), agreed = {0};
    comm->peers = calloc((size_t)comm->nranks, sizeof(*comm->peers));
    comm->probed_ns = calloc((size_t)comm->nranks, sizeof(*comm->probed_ns));
    comm->host = calloc((size_t)comm->nranks, sizeof(*comm->host));
    if (!all || !comm->peers || !comm->probed_ns || !comm->host) {
        BT_WARN("out of memory for %d peers", comm->nranks);
        free(all);
        return BT_ERR_SYSTEM;
    }
    my_info(comm, &all[comm->rank]);
    st = bt_bootstrap_allgather(comm->bs, all, sizeof(*all));
    if (st == BT_OK)
        agree(comm, all, &agreed);
    free(all);
    BT_CHECK(st);
    transport_view(comm);
    BT_CHECK(net_link_agree(comm));
    geometry(comm, &agreed);
    if (bt_graph_channels_init(comm->channels, comm->nchannels, comm->nranks, comm->rank,
                               comm->host) != 0) {
        BT_WARN("out of memory building %d channels", comm->nchannels);
        return BT_ERR_SYSTEM;
    }
    BT_CHECK(bt_arrival_init(comm));
    BT_CHECK(bt_links_caps_init(comm));
    exec_view(comm);
    bt_proxy_dump_signal_init(); /* the dump signal also makes waiting launches report */
    comm->init_done = 1;
    if (comm->rank == 0)
        BT_INFO(BT_LOG_INIT, "Baton %s, NCCL %s interface: comm %p %d ranks, %s, %d channels%s",
                BATON_VERSION_STRING, BATON_NCCL_INTERFACE, (void *)comm, comm->nranks,
                comm->cuda_dev < 0 ? "host memory" : "CUDA", comm->nchannels,
                comm->oversubscribed ? ", more local ranks than CPUs: waits yield at once" : "");
    BT_INFO(BT_LOG_INIT, "comm %p rank %d nranks %d pid %d - Init COMPLETE", (void *)comm,
            comm->rank, comm->nranks, (int)getpid());
    return BT_OK;
}

bt_status_t bt_comm_start(struct bt_comm *comm, const void *unique_id)
{
    BT_CHECK(bt_comm_init(comm, unique_id));
    return bt_links_probe(comm);
}
