/*
 * Connectors: one direction of a (channel, peer) link as seen from this rank.
 *
 * A send connector and the matching recv connector share a FIFO of BT_NSTEPS slots per
 * protocol, in memory both can reach (for shm: a segment the receiver created).
 * Steps are absolute and shared by all protocols of the connector: step s uses slot
 * s % BT_NSTEPS of whichever protocol buffer the collective runs on.
 *
 *   sender, step s:   wait head + NSTEPS > s           (a free slot: credit)
 *                     write data; Simple: sizes[slot] = bytes, then tail = s + 1 (release)
 *                                 LL: each 16-byte line carries flag s + 1 beside its data
 *   receiver, step s: Simple: wait tail >= s + 1 (acquire);  LL: wait each line's flag
 *                     read data; sizes[slot] = -1; then head = s + 1 (release: the slot may
 *                     be overwritten only after we stopped reading it)
 *
 * Because tail and the LL flags carry absolute step numbers, a Simple step may follow LL
 * steps (or the reverse) on the same connector with no reset, and a stale LL line from
 * NSTEPS steps ago never matches.
 */
#ifndef BT_TRANSPORT_CONN_H
#define BT_TRANSPORT_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "util/hd.h"

/* The CUDA executor (C++) sees these structures too: there the counters are plain words it
 * reads and writes with explicit device fences. */
#ifdef __cplusplus
#define BT_ATOMIC(T) T
#define BT_ATOMIC_Q
#else
#include <stdatomic.h>
#define BT_ATOMIC(T) _Atomic T
#define BT_ATOMIC_Q _Atomic /* qualifier form, for pointers */
#endif
#define BT_ALIGNED(n) __attribute__((aligned(n)))

#define BT_NSTEPS 8
#define BT_CACHELINE 128 /* flags and counters each own a 128-byte line (two x86 lines) */

enum bt_proto {
    BT_PROTO_LL = 0,
    BT_PROTO_SIMPLE = 1,
    BT_PROTO_LL128 = 2, /* the CUDA executor's, over NVLink only (see below) */
    BT_NUM_PROTOS = 3,
};
#define BT_NUM_HOST_PROTOS 2 /* LL and Simple: what the host executor runs */

/* An LL line: 8 bytes of payload in two 4-byte halves, each beside a 4-byte flag, stored
 * as two 8-byte atomic words so a reader never sees data without its flag. */
union bt_ll_line {
    struct {
        uint32_t data1, flag1, data2, flag2;
    } f;
    uint64_t v[2];
};
#define BT_LL_PAYLOAD 8 /* bytes of payload per 16-byte line */

/* An LL128 line: 128 bytes written by 8 threads of a warp in one store instruction (16 bytes
 * each), 120 of payload and an 8-byte flag (step + 1) in one thread's second half (the last
 * thread's, or the first's: exec/cuda/device/ll128.cuh lays out which bytes go where). It
 * relies on what NVLink gives a warp's aligned 128-byte store and load: the line arrives and
 * is read whole, so a reader that sees the flag sees the line's data. PCIe and host memory
 * give no such promise: LL128 runs only where every GPU pair is NVLink. */
#define BT_LL128_LINE 128
#define BT_LL128_PAYLOAD 120

/* Control block shared by the two ends of a connector. */
struct bt_fifo_ctrl {
    BT_ALIGNED(BT_CACHELINE) BT_ATOMIC(uint64_t) tail; /* written by the sender */
    BT_ALIGNED(BT_CACHELINE) BT_ATOMIC(uint64_t) head; /* written by the receiver */
    BT_ALIGNED(BT_CACHELINE) BT_ATOMIC(int32_t) sizes[BT_NSTEPS];
    /* Zero-copy connectors (NET, each end's private FIFO): the user's buffer a slot's data
     * is in instead of the slot (send: written by the executor before tail; recv: by the
     * proxy before tail), or NULL. */
    BT_ALIGNED(BT_CACHELINE) void *BT_ATOMIC_Q zc[BT_NSTEPS];
};

/* Bytes of each protocol's FIFO, decided by the receiver and sent in the connect blob. */
struct bt_fifo_sizes {
    uint32_t slot_bytes[BT_NUM_PROTOS]; /* Simple: payload bytes; LL, LL128: line bytes (0: none) */
};

/* Offsets inside a FIFO region (control block first, then each protocol's slots). */
static inline BT_HD size_t bt_fifo_proto_offset(const struct bt_fifo_sizes *s, int proto)
{
    size_t off = sizeof(struct bt_fifo_ctrl);
    for (int p = 0; p < proto; p++)
        off += (size_t)s->slot_bytes[p] * BT_NSTEPS;
    return off;
}
static inline BT_HD size_t bt_fifo_bytes(const struct bt_fifo_sizes *s)
{
    return bt_fifo_proto_offset(s, BT_NUM_PROTOS);
}

struct bt_transport_ops;

/* A send rate cap on the link to one peer (core/links.h, INJECT_LINK_BW): the next step may
 * be sent once the link has carried the previous ones at `bytes_per_ns`. Shared by every
 * connector to that peer; the host executor honours it. */
struct bt_link_cap {
    double bytes_per_ns;
    uint64_t free_ns; /* when the link has finished with what was sent so far */
};

struct bt_conn {
    int peer;
    int is_send;
    int connected;
    int pending;         /* queued for connection by the launch in progress */
    int zero_copy;       /* the transport can move pure steps from/to user buffers (NET) */
    uint64_t step;       /* next step to produce (send) or consume (recv) */
    uint64_t cached;     /* last seen head (send) or tail (recv), to spare shared reads */
    uint64_t proxy_base; /* NET: steps handed to the proxy so far (launch thread) */
    struct bt_fifo_ctrl *ctrl;
    char *buf[BT_NUM_PROTOS]; /* first slot of each protocol */
    struct bt_fifo_sizes sizes;
    const struct bt_transport_ops *tp;
    void *tp_priv;           /* transport resources (segment, sockets) */
    size_t held;             /* bytes of FIFO memory this end made (not mapped from the peer) */
    struct bt_link_cap *cap; /* send rate cap (core/links.h: INJECT_LINK_BW), or NULL */
    /* GPUDirect RDMA (transport/net.c), set by a GPU executor for connectors its kernels
     * fill and drain (exec/cuda/host_conns.c): whether NET_GDR_LEVEL admits GPU memory for
     * the slots on the GPU's nearest NIC (gpu_near) and on any other (gpu_far); and whether
     * the transport put them there (gdr: Simple slots GPU memory, ctrl host memory) */
    int gpu_near, gpu_far, gdr;
    const char *kind; /* "ring", "tree", "p2p": for logs */
    int channel;
};

static inline BT_HD char *bt_conn_slot(const struct bt_conn *c, int proto, uint64_t step)
{
    return c->buf[proto] + (size_t)(step % BT_NSTEPS) * c->sizes.slot_bytes[proto];
}

#ifndef __CUDACC__
/* What a connector's transport (transport.h) makes of it; host code only (transport.c). */
/* Whether a connected connector is moved by a proxy: its steps must be posted (the
 * transport has `post`). */
int bt_conn_proxied(const struct bt_conn *c);
/* The connector's transport as logs name it ("SHM", "NET/Socket/0"). */
const char *bt_conn_via(const struct bt_conn *c);
/* Release a connector's transport resources and mark it unconnected. Accepts NULL. */
void bt_conn_free(struct bt_conn *conn);
#endif

#endif
