/*
 * Bootstrap wire formats and the root's internal interface. All fields are in host byte
 * order: the ranks of one job run the same build on the same architecture. Every message
 * starts with the id's 64-bit magic so that strangers and stale jobs are told apart.
 *
 *   rank -> root  (connection to the root address, one per rank)
 *       struct bt_bs_root_hello          must arrive within BT_BS_HELLO_TIMEOUT_S
 *   root -> rank  (same connection, once every rank has arrived)
 *       uint64_t magic, then nranks x union bt_sockaddr (each rank's listen address)
 *   rank -> rank  (a new connection to the peer's listen address)
 *       struct bt_bs_peer_hdr kind RING: the ring link from rank-1 to rank (kept open)
 *       struct bt_bs_peer_hdr kind P2P, then `size` payload bytes (one message, closed)
 */
#ifndef BT_BOOTSTRAP_WIRE_H
#define BT_BOOTSTRAP_WIRE_H

#include <assert.h>
#include <stdint.h>

#include "util/socket.h"

/* A connection that has not sent its whole header by then is dropped (seconds). */
#define BT_BS_HELLO_TIMEOUT_S 5

/* Larger nranks or message sizes in a header are garbage. */
#define BT_BS_MAX_NRANKS (1 << 20)
#define BT_BS_MAX_MSG_BYTES (1ull << 32)

enum bt_bs_kind {
    BT_BS_KIND_ROOT = 0x524f4f54, /* "ROOT" */
    BT_BS_KIND_RING = 0x52494e47, /* "RING" */
    BT_BS_KIND_P2P = 0x50325031,  /* "P2P1" */
};

struct bt_bs_root_hello {
    uint64_t magic;
    uint32_t kind; /* BT_BS_KIND_ROOT */
    int32_t rank;
    int32_t nranks;
    uint32_t reserved;      /* 0 */
    union bt_sockaddr addr; /* where this rank listens */
};
static_assert(sizeof(struct bt_bs_root_hello) == 56, "wire format changed");

struct bt_bs_peer_hdr {
    uint64_t magic;
    uint32_t kind;     /* BT_BS_KIND_RING or BT_BS_KIND_P2P */
    int32_t rank;      /* sender */
    int32_t tag;       /* P2P only */
    uint32_t reserved; /* 0 */
    uint64_t size;     /* P2P payload bytes that follow */
};
static_assert(sizeof(struct bt_bs_peer_hdr) == 32, "wire format changed");

/*
 * Start the root thread of `magic`, which takes ownership of `listen_fd` (closed on
 * failure too). The thread serves one rendezvous and exits when every rank has its table
 * or after BOOTSTRAP_TIMEOUT seconds.
 */
bt_status_t bt_bootstrap_root_start(uint64_t magic, int listen_fd);

/* Join the root thread of `magic` if this process started it; no-op otherwise. */
void bt_bootstrap_root_join(uint64_t magic);
/* The same, but the root gives up at once instead of waiting for ranks still to come. */
void bt_bootstrap_root_cancel_magic(uint64_t magic);

#endif
