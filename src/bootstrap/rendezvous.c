/*
 * Bootstrap rendezvous, rank side: init (listen, send the root a hello, get the address
 * table, connect the ring), the ring's allgather and barrier, and what concerns the
 * bootstrap as a whole (abort, the address table's lookups, destroy). The root thread that
 * answers the hellos is in root.c; the messages that travel on the listener once the ranks
 * know each other are in messages.c; the wire formats are in wire.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap_impl.h"
#include "bootstrap/unique_id.h"
#include "util/time.h"

/* Register with the root and receive the address table into bs->peers. */
static bt_status_t bs_rendezvous(struct bt_bootstrap *bs, const union bt_sockaddr *root,
                                 const union bt_sockaddr *me)
{
    struct bt_socket_wait w = bt_bootstrap_wait(bs, bt_deadline_from_now());
    struct bt_bs_root_hello h;
    char s[BT_SOCKADDR_STRLEN];
    uint64_t magic = 0;
    int fd = -1;
    bt_status_t st;

    bt_socket_addr_to_str(root, s, sizeof(s));
    memset(&h, 0, sizeof(h));
    h.magic = bs->magic;
    h.kind = BT_BS_KIND_ROOT;
    h.rank = bs->rank;
    h.nranks = bs->nranks;
    h.addr = *me;
    st = bt_socket_connect(root, &w, &fd);
    if (st != BT_OK) {
        BT_WARN("Bootstrap: rank %d could not reach the root at %s", bs->rank, s);
        return st;
    }
    BT_CHECK_GOTO(bt_socket_send_all(fd, &h, sizeof(h), &w), st, err_close);
    st = bt_socket_recv_all(fd, &magic, sizeof(magic), &w);
    if (st == BT_OK)
        st = bt_socket_recv_all(fd, bs->peers, sizeof(union bt_sockaddr) * (size_t)bs->nranks, &w);
    if (st != BT_OK) {
        BT_WARN("Bootstrap: rank %d got no address table from the root at %s (waiting for all "
                "%d ranks to arrive)",
                bs->rank, s, bs->nranks);
        goto err_close;
    }
    if (magic != bs->magic) {
        BT_WARN("Bootstrap: rank %d: the root at %s answered with magic 0x%llx, not 0x%llx",
                bs->rank, s, (unsigned long long)magic, (unsigned long long)bs->magic);
        st = BT_ERR_REMOTE;
        goto err_close;
    }
    for (int r = 0; r < bs->nranks; r++) {
        if (!bt_socket_addr_valid(&bs->peers[r])) {
            BT_WARN("Bootstrap: rank %d: the root sent an invalid address for rank %d", bs->rank,
                    r);
            st = BT_ERR_REMOTE;
            goto err_close;
        }
    }
    bt_socket_close(&fd);
    return BT_OK;

err_close:
    bt_socket_close(&fd);
    return st;
}

/* Connect to rank+1 and accept from rank-1 (queueing any early P2P messages). */
static bt_status_t bs_ring_connect(struct bt_bootstrap *bs)
{
    uint64_t deadline = bt_deadline_from_now();
    struct bt_socket_wait w = bt_bootstrap_wait(bs, deadline);
    int next = (bs->rank + 1) % bs->nranks, prev = (bs->rank - 1 + bs->nranks) % bs->nranks;
    struct bt_bs_peer_hdr h;
    char s[BT_SOCKADDR_STRLEN];

    bt_socket_addr_to_str(&bs->peers[next], s, sizeof(s));
    if (bt_socket_connect(&bs->peers[next], &w, &bs->ring_send_fd) != BT_OK) {
        BT_WARN("Bootstrap: rank %d could not connect the ring to rank %d at %s", bs->rank, next,
                s);
        return BT_ERR_REMOTE;
    }
    memset(&h, 0, sizeof(h));
    h.magic = bs->magic;
    h.kind = BT_BS_KIND_RING;
    h.rank = bs->rank;
    if (bt_socket_send_all(bs->ring_send_fd, &h, sizeof(h), &w) != BT_OK) {
        BT_WARN("Bootstrap: rank %d could not send the ring header to rank %d at %s", bs->rank,
                next, s);
        return BT_ERR_REMOTE;
    }
    while (bs->ring_recv_fd < 0) {
        int expired;
        if (bt_bootstrap_accept_one(bs, deadline, deadline, 1, &expired) != BT_OK) {
            BT_WARN("Bootstrap: rank %d: no ring link from rank %d at %s", bs->rank, prev,
                    bt_socket_addr_to_str(&bs->peers[prev], s, sizeof(s)));
            return BT_ERR_REMOTE;
        }
    }
    return BT_OK;
}

bt_status_t bt_bootstrap_init(const void *id, int rank, int nranks, volatile int *abort_flag,
                              struct bt_bootstrap **bs_p)
{
    struct bt_bootstrap *bs = NULL;
    union bt_sockaddr root, me;
    char ifname[64];
    uint64_t magic;
    bt_status_t st;

    if (nranks <= 0 || nranks > BT_BS_MAX_NRANKS || rank < 0 || rank >= nranks) {
        BT_WARN("Bootstrap: invalid rank %d / nranks %d", rank, nranks);
        return BT_ERR_INVALID_ARG;
    }
    BT_CHECK(bt_bootstrap_id_unpack(id, &magic, &root));
    bs = calloc(1, sizeof(*bs));
    if (bs == NULL) {
        BT_WARN("Bootstrap: out of memory");
        return BT_ERR_SYSTEM;
    }
    pthread_mutex_init(&bs->lock, NULL);
    bs->magic = magic;
    bs->rank = rank;
    bs->nranks = nranks;
    bs->abort_flag = abort_flag;
    bs->listen_fd = bs->ring_send_fd = bs->ring_recv_fd = -1;
    bs->peers = calloc((size_t)nranks, sizeof(union bt_sockaddr));
    if (bs->peers == NULL) {
        BT_WARN("Bootstrap: out of memory for %d addresses", nranks);
        st = BT_ERR_SYSTEM;
        goto err_destroy;
    }
    BT_CHECK_GOTO(bt_socket_find_interface(&me, ifname, sizeof(ifname)), st, err_destroy);
    BT_CHECK_GOTO(bt_socket_listen(&me, &bs->listen_fd, &me), st, err_destroy);
    BT_CHECK_GOTO(bs_rendezvous(bs, &root, &me), st, err_destroy);
    /* The root (if it is ours) is done once every rank has its table: reap its thread. */
    bt_bootstrap_root_join(magic);
    if (nranks > 1)
        BT_CHECK_GOTO(bs_ring_connect(bs), st, err_destroy);

    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap: rank %d/%d listening on %s (%s)", rank,
            nranks, bt_socket_addr_to_str(&me, s, sizeof(s)), ifname);
    *bs_p = bs;
    return BT_OK;

err_destroy:
    bt_bootstrap_destroy(bs); /* accepts a half-built bootstrap */
    return st;
}

/*
 * Ring AllGather, n ranks, slot k = rank k's contribution.
 *   step s (0..n-2): send slot (rank-s) to rank+1 while receiving slot (rank-s-1) from rank-1
 * Both directions progress together, so full socket buffers cannot deadlock the ring.
 */
bt_status_t bt_bootstrap_allgather(struct bt_bootstrap *bs, void *buf, size_t bytes)
{
    int n = bs->nranks;
    struct bt_socket_wait w = bt_bootstrap_wait(bs, bt_deadline_from_now());
    char *b = buf;
    for (int step = 0; step < n - 1; step++) {
        int sslot = (bs->rank - step + n) % n;
        int rslot = (bs->rank - step - 1 + n) % n;
        bt_status_t st = bt_socket_exchange(bs->ring_send_fd, b + (size_t)sslot * bytes, bytes,
                                            bs->ring_recv_fd, b + (size_t)rslot * bytes, bytes, &w);
        if (st != BT_OK) {
            if (bt_bootstrap_aborted(bs))
                BT_INFO(BT_LOG_BOOTSTRAP, "Bootstrap: rank %d allgather aborted", bs->rank);
            else
                BT_WARN("Bootstrap: rank %d allgather step %d/%d failed (send to rank %d, "
                        "receive from rank %d)",
                        bs->rank, step, n - 1, (bs->rank + 1) % n, (bs->rank - 1 + n) % n);
            return BT_ERR_REMOTE;
        }
    }
    return BT_OK;
}

bt_status_t bt_bootstrap_barrier(struct bt_bootstrap *bs)
{
    char *tmp = calloc((size_t)bs->nranks, 1);
    if (tmp == NULL) {
        BT_WARN("Bootstrap: out of memory for a %d-rank barrier", bs->nranks);
        return BT_ERR_SYSTEM;
    }
    bt_status_t st = bt_bootstrap_allgather(bs, tmp, 1);
    free(tmp);
    return st;
}

void bt_bootstrap_abort(struct bt_bootstrap *bs)
{
    if (bs)
        __atomic_store_n(&bs->aborted, 1, __ATOMIC_RELEASE);
}

int bt_bootstrap_peer_refuses(const struct bt_bootstrap *bs, int peer, int timeout_ms)
{
    return peer >= 0 && peer < bs->nranks && peer != bs->rank &&
           bt_socket_refused(&bs->peers[peer], timeout_ms);
}

const union bt_sockaddr *bt_bootstrap_peer_addr(const struct bt_bootstrap *bs, int rank)
{
    return rank >= 0 && rank < bs->nranks ? &bs->peers[rank] : NULL;
}

void bt_bootstrap_destroy(struct bt_bootstrap *bs)
{
    if (bs == NULL)
        return;
    bt_socket_close(&bs->ring_send_fd);
    bt_socket_close(&bs->ring_recv_fd);
    bt_socket_close(&bs->listen_fd);
    int left = bt_bootstrap_queue_clear(bs);
    if (left)
        BT_INFO(BT_LOG_BOOTSTRAP, "Bootstrap: rank %d destroyed with %d unreceived messages",
                bs->rank, left);
    free(bs->peers);
    pthread_mutex_destroy(&bs->lock);
    free(bs);
}
