/*
 * Communicators made from a parent: split (ncclCommSplit: by color, ranked by key) and shrink
 * (ncclCommShrink: without excluded ranks, in parent order). Both start a child the same way:
 * its first member makes a rendezvous and hands the id to the others over the parent's
 * bootstrap, and each member starts the child as any new communicator (core/init.h).
 */
#include "core/split.h"

#include <stdlib.h>

#include "core/comm.h"
#include "core/init.h"
#include "util/hash.h"
#include "util/log.h"

#define BT_TAG_SPLIT 0x20000
#define BT_TAG_SHRINK 0x40000 /* + 15 bits of the excluded set's hash */

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
