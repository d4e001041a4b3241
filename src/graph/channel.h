/*
 * Channels: independent lanes of an algorithm. Each channel has a ring and a tree over
 * the communicator's ranks and the connectors those use. On a GPU a channel is one
 * thread block; on the host the executor interleaves channels in the calling thread.
 */
#ifndef BT_GRAPH_CHANNEL_H
#define BT_GRAPH_CHANNEL_H

#include <stdint.h>

#include "transport/conn.h"

#define BT_MAX_CHANNELS 32
#define BT_HOST_NCHANNELS 2 /* default MAX_NCHANNELS on host memory (docs/TUNING.md) */
#define BT_TREE_ARITY 2

struct bt_work;

/* A FIFO of works run in order; works of different lanes run concurrently. */
struct bt_lane {
    struct bt_work *head, *tail;
};

#define BT_RING_SPLIT_TOTAL 65536u /* a ring's AllReduce block shares add up to this */

struct bt_ring {
    int prev, next;
    int index;  /* my position in order[] */
    int *order; /* order[i] = rank at ring position i (nranks entries) */
    /* AllReduce blocks in proportion to the ring's links (graph/ring_plan.h), or NULL for
     * equal blocks: rank r's block is [split[r], split[r + 1]) of BT_RING_SPLIT_TOTAL
     * (nranks + 1 entries); split_max is the largest block's share. */
    uint32_t *split;
    uint32_t split_max;
};

struct bt_tree {
    int up;                  /* parent rank, -1 at the root */
    int down[BT_TREE_ARITY]; /* children, -1 when absent */
    int ndown;
};

struct bt_channel {
    int id;
    struct bt_ring ring;
    struct bt_tree tree;
    struct bt_conn ring_send, ring_recv;
    struct bt_conn tree_up_send, tree_up_recv; /* with the parent */
    struct bt_conn tree_down_send[BT_TREE_ARITY], tree_down_recv[BT_TREE_ARITY]; /* children */
    struct bt_lane lane;
};

/*
 * Double binary tree: tree 0 is an in-order binary tree over ranks 0..n-1; tree 1 is the
 * mirror image (even n) or the shift by one (odd n), so that most leaves of one tree are
 * inner nodes of the other and each rank's bandwidth is used by both trees.
 */
void bt_graph_btree(int nranks, int rank, int which, struct bt_tree *tree);

/*
 * The trees of a communicator whose ranks sit on hosts (host[r]: rank r's host, numbered
 * 0, 1, ... by first appearance; NULL: unknown). On one host, or with one rank per host, the
 * double binary tree above over the ranks. Otherwise the double binary tree over the hosts,
 * each host a chain of its ranks (tree 0 in rank order, tree 1 reversed): the chain's first
 * rank hangs from its parent host and takes the first child host, the second rank the second
 * (a host of one rank takes both), so every rank keeps at most two children and a tree
 * crosses between hosts only on the host tree's edges. Depth: 2 ceil(log2 hosts) + the
 * longest chain, about.
 *
 *   4 hosts x 2 ranks, tree 0:   host 0 (0 1)
 *                                  0 -> 1, host 2's 4      (host tree: 0 -> 2 -> 1, 3)
 *                                  4 -> 5, host 1's 2;  5 -> host 3's 6
 *                                  2 -> 3;  6 -> 7
 */
void bt_graph_tree(int nranks, int rank, const int *host, int which, struct bt_tree *tree);

/* `rank`'s place in a ring whose order[] is filled: index, next and prev. */
void bt_ring_place(struct bt_ring *r, int nranks, int rank);

/* Fill rings and trees (bt_graph_tree: channels take the two trees in turn) of `nch` channels
 * for `rank` of `nranks` on hosts `host` (may be NULL). ring orders allocated. */
int bt_graph_channels_init(struct bt_channel *ch, int nch, int nranks, int rank, const int *host);
/* Give the channels' rings a planned order: channel c follows bt_ring_channel_order(best,
 * nranks, c) and, where `bw` (nranks x nranks, directed) says the ring's links differ,
 * splits AllReduce blocks in proportion (split = 0: equal blocks). Only before the rings'
 * connectors are connected. Returns -1 when out of memory. */
int bt_graph_channels_plan(struct bt_channel *ch, int nch, int nranks, int rank, const int *best,
                           const double *bw, int split);
void bt_graph_channels_free(struct bt_channel *ch, int nch);

#endif
