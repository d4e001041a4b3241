/*
 * Ring planning over a bandwidth matrix: which order the ranks (or GPUs) of
 * a ring follow, and how a ring AllReduce splits its data into blocks when the ring's links
 * differ. The matrix is directed: bw[a * n + b] is GB/s (any unit) from a to b; it comes from
 * the topology model (topo/topo.h) or from a measurement at init (core/link_probe.c).
 *
 * Why unequal blocks help. In the ring AllReduce (coll/ring.h) the link from ring position p
 * to p + 1 carries every block but the one owned at p during the reduce-scatter, and every
 * block but the one owned at p + 1 during the all-gather: 2S - b[p] - b[p+1] bytes for S
 * bytes in all. Equal blocks give each link 2S(n-1)/n, so a slow link sets the pace; giving
 * the two ranks beside a slow link larger blocks takes load off it and puts it on the fast
 * links. bt_ring_split picks the blocks that minimise the slowest link's time.
 */
#ifndef BT_GRAPH_RING_PLAN_H
#define BT_GRAPH_RING_PLAN_H

#include <stdint.h>

#include "graph/channel.h" /* BT_RING_SPLIT_TOTAL */

/* The ring with the widest bottleneck (then the widest sum) starting at member 0: every
 * ring for n <= 8, the widest next link from each member above. order gets n members.
 * Returns the bottleneck. */
double bt_ring_search(int n, const double *bw, int *order);

/* Channel c's ring from the best one: as it is for even c, reversed for odd c (both
 * directions of every link carry traffic). */
void bt_ring_channel_order(const int *best, int n, int c, int *order);

/*
 * Block shares of a ring AllReduce over `order` (n members): share[m] for member m (indexed
 * by member, not by position), adding up to BT_RING_SPLIT_TOTAL exactly. Returns 1 when
 * the shares differ from an equal split (the ring's links differ by more than 15%: measured rates
 * vary that much), 0 when they are equal (share[] then holds the equal split).
 */
int bt_ring_split(int n, const int *order, const double *bw, uint32_t *share);

/* Relative time of the ring AllReduce with these shares: max over links of load / bw (the
 * slowest link), for comparing splits (tests, logs). */
double bt_ring_split_cost(int n, const int *order, const double *bw, const uint32_t *share);

#endif
