/*
 * Channels (channel.h): each channel's ring (rank order, or the order a ring plan gives it)
 * and its tree, channels taking the double binary tree's two trees in turn.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/channel.h"
#include "graph/ring_plan.h"

/*
 * In-order binary tree over 0..n-1. A rank's lowest set bit b gives its level: the rank
 * sits between its children r - b/2 and r + b/2 and its parent is the nearest multiple
 * of 2b above or below. Rank 0 is the root and has a single child: the largest power of
 * two below n. Depth is about log2(n).
 *
 *   n = 8:           0
 *                    |
 *                    4
 *                 /     \
 *                2       6
 *               / \     / \
 *              1   3   5   7
 */
static void btree_plain(int n, int r, int *up, int *d0, int *d1)
{
    *up = *d0 = *d1 = -1;
    if (n <= 1)
        return;
    if (r == 0) {
        int top = 1;
        while (top * 2 < n)
            top *= 2;
        *d0 = top;
        return;
    }
    int bit = r & -r;
    /* Parent: clear the bit and set the next one up, unless that leaves the range. */
    int p = (r ^ bit) | (bit << 1);
    if (p >= n || (r & (bit << 1)))
        p = r ^ bit;
    *up = p;
    int half = bit >> 1;
    if (half) {
        *d0 = r - half;
        int c = r + half;
        while (half && c >= n) { /* right subtree cut short by n: descend */
            half >>= 1;
            c = r + half;
        }
        if (half && c < n && c != *d0)
            *d1 = c;
    }
}

void bt_graph_btree(int nranks, int rank, int which, struct bt_tree *tree)
{
    int up, d0, d1;
    if (which == 0 || nranks <= 2) {
        btree_plain(nranks, rank, &up, &d0, &d1);
    } else if (nranks % 2 == 0) {
        /* mirror: rank r plays n-1-r */
        int v = nranks - 1 - rank;
        btree_plain(nranks, v, &up, &d0, &d1);
        up = up < 0 ? -1 : nranks - 1 - up;
        d0 = d0 < 0 ? -1 : nranks - 1 - d0;
        d1 = d1 < 0 ? -1 : nranks - 1 - d1;
    } else {
        /* shift: rank r plays r-1 */
        int v = (rank - 1 + nranks) % nranks;
        btree_plain(nranks, v, &up, &d0, &d1);
        up = up < 0 ? -1 : (up + 1) % nranks;
        d0 = d0 < 0 ? -1 : (d0 + 1) % nranks;
        d1 = d1 < 0 ? -1 : (d1 + 1) % nranks;
    }
    tree->up = up;
    tree->ndown = 0;
    tree->down[0] = tree->down[1] = -1;
    if (d0 >= 0)
        tree->down[tree->ndown++] = d0;
    if (d1 >= 0)
        tree->down[tree->ndown++] = d1;
}

/* Ranks of host h and the rank at place i of its chain for tree `which` (tree 0: rank order;
 * tree 1: the reverse, so the two trees' traffic between hosts leaves from different ranks).
 * O(nranks) scans: a rank asks for a handful at init. */
static int host_size(int nranks, const int *host, int h)
{
    int g = 0;
    for (int r = 0; r < nranks; r++)
        g += host[r] == h;
    return g;
}

static int chain_rank(int nranks, const int *host, int h, int which, int i)
{
    int g = host_size(nranks, host, h), j = which ? g - 1 - i : i;
    for (int r = 0; r < nranks; r++)
        if (host[r] == h && j-- == 0)
            return r;
    return -1;
}

/* Where host h's k-th child host hangs in h's chain: the first two places (one each), or the
 * only one. Keeps every rank to BT_TREE_ARITY children: the chain's next and one host. */
static int attach_place(int g, int k)
{
    return k < g - 1 ? k : g - 1;
}

void bt_graph_tree(int nranks, int rank, const int *host, int which, struct bt_tree *tree)
{
    int nhosts = 0;
    for (int r = 0; host && r < nranks; r++)
        nhosts = host[r] + 1 > nhosts ? host[r] + 1 : nhosts;
    if (nhosts <= 1 || nhosts == nranks) { /* one host, or one rank per host */
        bt_graph_btree(nranks, rank, which, tree);
        return;
    }
    int h = host[rank], g = host_size(nranks, host, h), place = 0;
    for (int r = 0; r < rank; r++)
        place += host[r] == h;
    if (which)
        place = g - 1 - place;
    struct bt_tree hosts, parent;
    bt_graph_btree(nhosts, h, which, &hosts);
    tree->ndown = 0;
    tree->down[0] = tree->down[1] = -1;
    if (place > 0) {
        tree->up = chain_rank(nranks, host, h, which, place - 1);
    } else if (hosts.up < 0) {
        tree->up = -1;
    } else { /* the head: under the place of the parent host's chain it hangs from */
        bt_graph_btree(nhosts, hosts.up, which, &parent);
        int k = 0;
        while (k < parent.ndown && parent.down[k] != h)
            k++;
        int pg = host_size(nranks, host, hosts.up);
        tree->up = chain_rank(nranks, host, hosts.up, which, attach_place(pg, k));
    }
    if (place + 1 < g)
        tree->down[tree->ndown++] = chain_rank(nranks, host, h, which, place + 1);
    for (int k = 0; k < hosts.ndown; k++)
        if (attach_place(g, k) == place)
            tree->down[tree->ndown++] = chain_rank(nranks, host, hosts.down[k], which, 0);
}

void bt_ring_place(struct bt_ring *r, int nranks, int rank)
{
    for (int i = 0; i < nranks; i++)
        if (r->order[i] == rank)
            r->index = i;
    r->next = r->order[(r->index + 1) % nranks];
    r->prev = r->order[(r->index - 1 + nranks) % nranks];
}

int bt_graph_channels_init(struct bt_channel *ch, int nch, int nranks, int rank, const int *host)
{
    for (int c = 0; c < nch; c++) {
        struct bt_channel *x = &ch[c];
        memset(x, 0, sizeof(*x));
        x->id = c;
        x->ring.order = malloc(sizeof(int) * (size_t)nranks);
        if (!x->ring.order)
            return -1;
        /* rank order; bt_graph_channels_plan may give the rings another before they connect */
        for (int i = 0; i < nranks; i++)
            x->ring.order[i] = i;
        bt_ring_place(&x->ring, nranks, rank);
        bt_graph_tree(nranks, rank, host, c % 2, &x->tree);
    }
    return 0;
}

int bt_graph_channels_plan(struct bt_channel *ch, int nch, int nranks, int rank, const int *best,
                           const double *bw, int split)
{
    uint32_t *share = malloc(sizeof(*share) * (size_t)nranks);
    if (!share)
        return -1;
    for (int c = 0; c < nch; c++) {
        struct bt_ring *r = &ch[c].ring;
        bt_ring_channel_order(best, nranks, c, r->order);
        bt_ring_place(r, nranks, rank);
        free(r->split);
        r->split = NULL;
        r->split_max = 0;
        if (!split || !bt_ring_split(nranks, r->order, bw, share))
            continue;
        r->split = malloc(sizeof(*r->split) * (size_t)(nranks + 1));
        if (!r->split) {
            free(share);
            return -1;
        }
        r->split[0] = 0;
        for (int i = 0; i < nranks; i++) {
            r->split[i + 1] = r->split[i] + share[i];
            r->split_max = share[i] > r->split_max ? share[i] : r->split_max;
        }
    }
    free(share);
    return 0;
}

void bt_graph_channels_free(struct bt_channel *ch, int nch)
{
    for (int c = 0; c < nch; c++) {
        free(ch[c].ring.order);
        free(ch[c].ring.split);
        ch[c].ring.order = NULL;
        ch[c].ring.split = NULL;
    }
}
