/*
 * The double binary tree (graph/channels.c bt_graph_btree) for n = 1..64 ranks, both trees:
 *   - every non-root's parent lists it as a child and every child names its parent;
 *   - exactly one root; every rank reaches it (connected) in fewer than n hops (no cycles);
 *   - at most 2 children, distinct, in range, not the rank itself, -1 in unused entries;
 *   - depth (edges from the root to the deepest rank) <= ceil(log2 n) + 1;
 *   - tree 1 with n > 2: most ranks that are leaves in tree 0 are inner nodes in tree 1
 *     (the counts are printed).
 * Also bt_graph_channels_init: channels alternate between the two trees, and the rings of
 * all ranks agree (my next's prev is me, positions follow order[]). And the trees over hosts
 * (bt_graph_tree) for hosts of equal, growing and spread-out ranks: valid, shallow, and
 * crossing between hosts nhosts - 1 times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "graph/channel.h"

#define MAXN 64

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* Check one tree over n ranks, of depth at most max_depth; returns its depth and fills
 * leaf[r] (1: no children). */
static int check_tree(int n, int which, const struct bt_tree *t, int *leaf, int max_depth)
{
    int roots = 0, root = -1;
    for (int r = 0; r < n; r++) {
        const struct bt_tree *x = &t[r];
        BT_TEST_CHECK(x->ndown >= 0 && x->ndown <= BT_TREE_ARITY,
                      "n=%d tree %d: rank %d has ndown %d", n, which, r, x->ndown);
        for (int k = 0; k < BT_TREE_ARITY; k++) {
            int d = x->down[k];
            if (k >= x->ndown) {
                BT_TEST_CHECK(d == -1, "n=%d tree %d: rank %d down[%d] = %d beyond ndown %d", n,
                              which, r, k, d, x->ndown);
                continue;
            }
            BT_TEST_CHECK(d >= 0 && d < n && d != r, "n=%d tree %d: rank %d has child %d", n, which,
                          r, d);
            BT_TEST_CHECK(t[d].up == r, "n=%d tree %d: rank %d lists child %d, whose parent is %d",
                          n, which, r, d, t[d].up);
            for (int j = 0; j < k; j++)
                BT_TEST_CHECK(x->down[j] != d, "n=%d tree %d: rank %d lists child %d twice", n,
                              which, r, d);
        }
        if (x->up < 0) {
            BT_TEST_CHECK(x->up == -1, "n=%d tree %d: rank %d has parent %d", n, which, r, x->up);
            roots++;
            root = r;
            continue;
        }
        BT_TEST_CHECK(x->up < n && x->up != r, "n=%d tree %d: rank %d has parent %d", n, which, r,
                      x->up);
        const struct bt_tree *p = &t[x->up];
        int listed = 0;
        for (int k = 0; k < p->ndown; k++)
            listed |= p->down[k] == r;
        BT_TEST_CHECK(listed, "n=%d tree %d: rank %d's parent %d does not list it as a child", n,
                      which, r, x->up);
    }
    BT_TEST_CHECK(roots == 1, "n=%d tree %d: %d roots", n, which, roots);

    /* Every rank reaches the root in < n hops: connected and acyclic. */
    int depth = 0;
    for (int r = 0; r < n; r++) {
        int hops = 0, x = r;
        while (x != root) {
            x = t[x].up;
            hops++;
            BT_TEST_CHECK(x >= 0 && hops < n, "n=%d tree %d: rank %d never reaches root %d", n,
                          which, r, root);
        }
        depth = hops > depth ? hops : depth;
        leaf[r] = t[r].ndown == 0;
    }
    BT_TEST_CHECK(depth <= max_depth, "n=%d tree %d: depth %d > %d", n, which, depth, max_depth);
    return depth;
}

static void check_channels(int n)
{
    enum { NCH = 4 };
    static struct bt_channel ch[MAXN][NCH];
    for (int r = 0; r < n; r++)
        BT_TEST_OK(bt_graph_channels_init(ch[r], NCH, n, r, NULL));
    for (int r = 0; r < n; r++)
        for (int c = 0; c < NCH; c++) {
            const struct bt_channel *x = &ch[r][c];
            struct bt_tree t;
            bt_graph_btree(n, r, c % 2, &t);
            BT_TEST_CHECK(x->id == c && x->tree.up == t.up && x->tree.ndown == t.ndown &&
                              x->tree.down[0] == t.down[0] && x->tree.down[1] == t.down[1],
                          "n=%d rank %d channel %d: tree is not tree %d", n, r, c, c % 2);
            BT_TEST_CHECK(x->ring.order[x->ring.index] == r,
                          "n=%d rank %d channel %d: order[index %d] = %d", n, r, c, x->ring.index,
                          x->ring.order[x->ring.index]);
            BT_TEST_CHECK(x->ring.next == x->ring.order[(x->ring.index + 1) % n] &&
                              x->ring.prev == x->ring.order[(x->ring.index + n - 1) % n],
                          "n=%d rank %d channel %d: next %d / prev %d do not follow order[]", n, r,
                          c, x->ring.next, x->ring.prev);
            BT_TEST_CHECK(ch[x->ring.next][c].ring.prev == r,
                          "n=%d channel %d: rank %d's next %d has prev %d", n, c, r, x->ring.next,
                          ch[x->ring.next][c].ring.prev);
            for (int i = 0; i < n; i++)
                BT_TEST_CHECK(x->ring.order[i] == ch[0][c].ring.order[i],
                              "n=%d channel %d: ranks %d and 0 disagree on the ring order", n, c,
                              r);
        }
    for (int r = 0; r < n; r++)
        bt_graph_channels_free(ch[r], NCH);
}

/* Trees over hosts (bt_graph_tree) for a layout host[0..n-1] of nhosts hosts: each a valid
 * tree within the depth bound of its comment; the ranks of a host joined among themselves
 * (g - 1 edges inside it) and the hosts by nhosts - 1 edges, the fewest there can be; one
 * host or one rank per host: the double binary tree over the ranks. */
static void check_hosts(int n, const int *host, int nhosts, const char *layout)
{
    static struct bt_tree t[MAXN], flat;
    int leaf[MAXN], size[MAXN] = {0}, gmax = 0;
    for (int r = 0; r < n; r++)
        size[host[r]]++;
    for (int h = 0; h < nhosts; h++)
        gmax = size[h] > gmax ? size[h] : gmax;
    for (int which = 0; which < 2; which++) {
        for (int r = 0; r < n; r++) {
            memset(&t[r], 0x7f, sizeof(t[r]));
            bt_graph_tree(n, r, host, which, &t[r]);
        }
        check_tree(n, which, t, leaf, 2 * (ceil_log2(nhosts) + 1) + gmax);
        int cross = 0, inside[MAXN] = {0};
        for (int r = 0; r < n; r++) {
            if (t[r].up < 0)
                continue;
            if (host[t[r].up] == host[r])
                inside[host[r]]++;
            else
                cross++;
        }
        BT_TEST_CHECK(cross == nhosts - 1, "%s n=%d tree %d: %d edges between %d hosts", layout, n,
                      which, cross, nhosts);
        for (int h = 0; h < nhosts; h++)
            BT_TEST_CHECK(inside[h] == size[h] - 1,
                          "%s n=%d tree %d: host %d of %d ranks has %d "
                          "edges inside",
                          layout, n, which, h, size[h], inside[h]);
        for (int r = 0; r < n && (nhosts == 1 || nhosts == n); r++) {
            bt_graph_btree(n, r, which, &flat);
            BT_TEST_CHECK(memcmp(&flat, &t[r], sizeof(flat)) == 0,
                          "%s n=%d tree %d: rank %d's tree is not the double binary tree's", layout,
                          n, which, r);
        }
    }
}

static void check_layouts(int n)
{
    int host[MAXN];
    for (int g = 1; g <= n; g++) { /* hosts of g ranks each, the last one shorter */
        for (int r = 0; r < n; r++)
            host[r] = r / g;
        check_hosts(n, host, (n + g - 1) / g, "blocks");
    }
    for (int nh = 1; nh <= n; nh++) { /* round robin: every host's ranks spread out */
        for (int r = 0; r < n; r++)
            host[r] = r % nh;
        check_hosts(n, host, nh, "round-robin");
    }
    /* hosts of 1, 2, 3, ... ranks */
    int h = 0, left = 1;
    for (int r = 0; r < n; r++) {
        host[r] = h;
        if (--left == 0)
            left = ++h + 1;
    }
    check_hosts(n, host, host[n - 1] + 1, "growing");
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);
    static struct bt_tree t[2][MAXN];
    int leaf[2][MAXN];

    printf("  n  depth0 depth1  leaves0  leaves0-inner-in-1  leaves-in-both\n");
    for (int n = 1; n <= MAXN; n++) {
        int depth[2];
        for (int which = 0; which < 2; which++) {
            for (int r = 0; r < n; r++) {
                memset(&t[which][r], 0x7f, sizeof(t[which][r])); /* no stale values */
                bt_graph_btree(n, r, which, &t[which][r]);
            }
            depth[which] = check_tree(n, which, t[which], leaf[which], ceil_log2(n) + 1);
        }
        int leaves0 = 0, flipped = 0, both = 0;
        for (int r = 0; r < n; r++) {
            leaves0 += leaf[0][r];
            flipped += leaf[0][r] && !leaf[1][r];
            both += leaf[0][r] && leaf[1][r];
        }
        printf("%3d  %6d %6d  %7d  %18d  %14d\n", n, depth[0], depth[1], leaves0, flipped, both);
        if (n > 2)
            BT_TEST_CHECK(2 * flipped > leaves0,
                          "n=%d: only %d of the %d leaves of tree 0 are inner nodes of tree 1", n,
                          flipped, leaves0);
        check_channels(n);
        check_layouts(n);
    }
    /* the example of graph/channel.h: 4 hosts x 2 ranks, tree 0 */
    const int host[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    const int up[8] = {-1, 0, 4, 2, 0, 4, 5, 6};
    for (int r = 0; r < 8; r++) {
        struct bt_tree x;
        bt_graph_tree(8, r, host, 0, &x);
        BT_TEST_CHECK(x.up == up[r], "4 x 2 tree 0: rank %d's parent %d, not %d", r, x.up, up[r]);
    }
    bt_test_leaks_end(&leaks);
    return 0;
}
