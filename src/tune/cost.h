/*
 * The tuner's cost model for AllReduce: how long one takes by each algorithm and protocol,
 * from the algorithm's shape and three measured figures per (algorithm, protocol) and kind
 * of path:
 *
 *     time(us) = base + hops * hop + moved / bandwidth
 *
 * hops is how many link crossings follow one another before the result is complete, moved
 * the bytes each rank sends (for n ranks and S bytes):
 *
 *     ring     2(n - 1) hops            2(n - 1)/n x S
 *     tree     2 ceil(log2 n) hops      2 S            (up, then down; links as the ring's)
 *     direct   n - 1 hops               (n - 1) x S    (one-shot: every rank sends to every rank)
 *     twoshot  2 hops                   2(n - 1)/n x S (reduce-scatter, all-gather, direct)
 *
 * The other collectives' rings (one pass: n - 1 hops, (n - 1)/n x S) use the ring's figures to
 * choose between LL128 and Simple (bt_tune_ring_pass_us). AllGather and ReduceScatter by PAT
 * (coll/pat.h): bt_pat_hops(n) hops (ceil(log2 n) up to 16 ranks, a hop per window of
 * BT_NSTEPS blocks beyond), (n - 1)/n x S, with PAT's own figures (bt_tune_pat_us).
 *
 * (Every direct figure but the shared GPU's has hop 0: its base is the whole latency.)
 * The figures are fitted per executor and path to the AllReduce sweeps in bench/results
 * (docs/TUNING.md gives the fits and the crossovers they imply); the crossovers follow for
 * any rank count from there instead of thresholds divided by guesses.
 */
#ifndef BT_TUNE_COST_H
#define BT_TUNE_COST_H

#include <stddef.h>

#include "coll/work.h"
#include "transport/conn.h"

/* One (algorithm, protocol) on one kind of path; gbps 0: it does not run there. */
struct bt_tune_cost {
    float base_us; /* once per collective: launch, entry, the last wait */
    float hop_us;  /* per link crossing in sequence */
    float gbps;    /* what a rank sends per second, GB/s (10^3 bytes per us) */
};

struct bt_tune_costs {
    struct bt_tune_cost c[BT_NUM_ALGOS][BT_NUM_PROTOS];
};

/* Ranks sharing one GPU share its memory's bandwidth: the shared-GPU figures are fitted at
 * this many ranks, and at n ranks each moves its bytes at gbps x this / n. */
#define BT_TUNE_SHARED_GPU_RANKS 8

/* The shared-GPU figures `in` (fitted at BT_TUNE_SHARED_GPU_RANKS) for `nranks` ranks. */
void bt_tune_costs_shared(const struct bt_tune_costs *in, int nranks, struct bt_tune_costs *out);

/* The figures of `in` on a link of `gbps` and `latency_us` (0: not known): no pair sends
 * faster than the link, and no hop takes less than its latency. */
void bt_tune_costs_bound(const struct bt_tune_costs *in, float gbps, float latency_us,
                         struct bt_tune_costs *out);

/* Microseconds one AllReduce of `bytes` over `nranks` ranks on `nhosts` hosts (0: one) takes
 * by `algo` and `proto` according to `t`; a very large number where that pair has no figures.
 * The tree's hops: 2 ceil(log2 n) on one host or with one rank per host, else those of the
 * trees over hosts (graph/channel.h), 2 (ceil(log2 hosts) + ranks per host - 1), every hop at
 * the figures' one cost. */
double bt_tune_allreduce_us(const struct bt_tune_costs *t, int algo, int proto, int nranks,
                            int nhosts, size_t bytes);

/* Microseconds one pass around the ring takes (AllGather, ReduceScatter: n - 1 hops, each
 * rank sends (n - 1)/n x bytes) by `proto`, from the ring AllReduce's figures in `t`: the
 * same links, half the hops and bytes; a very large number where `proto` has no figures. */
double bt_tune_ring_pass_us(const struct bt_tune_costs *t, int proto, int nranks, size_t bytes);

/* Microseconds one PAT AllGather or ReduceScatter takes (bt_pat_hops(n) hops, (n - 1)/n x
 * bytes sent per rank) by `proto`; a very large number where PAT has no figures for it. */
double bt_tune_pat_us(const struct bt_tune_costs *t, int proto, int nranks, size_t bytes);

/*
 * Many hosts (baton-topo --nodes; the tuner itself still sees one kind of path): `hosts`
 * hosts of `per_host` ranks, hops within a host at `local`'s figures, across hosts at
 * `net_hop_us`, and every byte that crosses hosts through the host's NICs together
 * (`nic_gbps`, GB/s: the rings and trees of a collective spread over every rail). With
 * n = hosts x per_host ranks and S bytes:
 *
 *   ring pass (AllGather, ReduceScatter)  (hosts - 1) network hops + (n - hosts) local hops,
 *                                         (n - 1)/n x S at min(local, NIC) bandwidth
 *   ring AllReduce                        twice the pass's hops and bytes
 *   tree AllReduce                        2 [(per_host - 1) local + ceil(log2 hosts) network
 *                                         hops] (chains in a host, binary trees across: NCCL's
 *                                         shape), 2 S
 *   PAT (one rank per host)               bt_pat_hops(hosts) network hops, (n - 1)/n x S
 *
 * base is the local ring's. Returns a very large number where the pair does not apply (PAT
 * with several ranks per host, trees for other collectives).
 *
 * `fabric` (NULL: none) says where the hosts sit, in order, on a network of switches of
 * `radix` ports; net_hop_us is then a hop through one switch, and each further switch on a
 * hop's path adds switch_us:
 *   fat-tree   every NIC of a host on the host's leaf: radix/2 / nics hosts a leaf (G);
 *   rail       rail-optimized: NIC i of each host on rail i's leaf, the collective's
 *              channels bound to rails at both ends (as NCCL binds them): radix/2 hosts a
 *              leaf (G), every hop on one rail.
 * A hop between hosts of one leaf crosses 1 switch; of one two-tier block (G x radix hosts:
 * a spine reaches radix leaves) 3; else 5. A ring pass's H - 1 hops are between neighbours
 * (floor((H - 1)/G) of them leave a leaf); a tree's level l spans 2^l hosts, PAT's hop i
 * 2^min(i, ceil(log2 H) - 1). Leaves' uplinks carry 1/oversub of what their hosts can send:
 * with more than G hosts the bytes' time grows by max(1, f x oversub), f the share of a
 * leaf's hosts sending out of it at once (ring 1/G, tree 2/G, PAT 1).
 */
enum bt_fabric_kind { BT_FABRIC_FAT_TREE, BT_FABRIC_RAIL };

struct bt_tune_fabric {
    int kind;        /* enum bt_fabric_kind */
    int radix;       /* ports of every switch */
    int nics;        /* NICs of a host */
    float switch_us; /* each switch past the first on a hop's path */
    float oversub;   /* a leaf's down ports / its up ports (1: non-blocking) */
};

struct bt_tune_hosts {
    int hosts, per_host;
    const struct bt_tune_costs *local; /* figures of hops within a host */
    int proto;                         /* whose figures */
    float net_hop_us, nic_gbps;
    const struct bt_tune_fabric *fabric; /* NULL: every network hop net_hop_us, no bottleneck */
};

double bt_tune_hosts_us(const struct bt_tune_hosts *h, int coll, int algo, size_t bytes);

#endif
