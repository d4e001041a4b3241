/*
 * GIN in proxy mode (NCCL's device API, GPU-initiated networking): a thread, "baton GIN", that
 * serves the descriptor queues a device communicator's kernels write (ncclGinProxyGpuCtx_t).
 * Per GIN context and peer rank a queue of descriptors in host memory the device maps; the
 * device claims a slot (its producer index, device memory), writes the slot's flagged qwords,
 * and waits for credit on the consumer index this thread advances.
 *
 * Three formats, by the headers the program was built with (the device code is theirs):
 *   V1 (NCCL 2.28, 2.29.2-2.29.3): 64-byte descriptors, the op in the header; one context
 *       (include/nccl_device/layout.h);
 *   V1_WIDE (NCCL 2.29.5-2.29.7): V1's, with 23-bit counter and 24-bit signal ids (V2's
 *       completion word) and VA signals; contexts in an array of V1's context struct;
 *   V2 (NCCL 2.30.5 on): 128-byte descriptors, a version in the header and the op in qword 7;
 *       contexts in an array (the device indexes it by context id), each with its own queues,
 *       signals and counters, the signals' offsets (the device's resets) and get tracking;
 *       adds gets, VA signals and flushes (below).
 *
 * Each put (its bytes from a window of this rank, or a value inline) goes to a window of the
 * peer, optionally followed by a signal (increment, or add a value) of the same context on
 * the peer and a counter (local completion) here. This thread takes descriptors in order per
 * queue:
 *   - to another rank, over the one-sided link (transport/rma_net.h, the communicator's
 *     network: sockets, OFI, a plugin), the bytes copied out of device memory first; the
 *     peer's landing copies them into its window (a copy it waits for) and only then adds
 *     the signal: one comm per pair carries a put's messages and later ones in order, so a
 *     signal is seen after every byte of the puts before it to that peer (every signal is
 *     "strong" in NCCL 2.30's terms);
 *   - to itself, the same without the network.
 * A queue's consumer index advances (and the counter, if asked) once the bytes have left
 * the source (sent, or copied): the device's flush waits for exactly that.
 * V2 adds:
 *   - get: the bytes of a peer's window into a window here. The request goes to the peer,
 *     whose GIN thread reads its window and sends the bytes back; the queue's consumer index
 *     advances only once they have landed here, so a flush that follows (the device's wait
 *     for a get posts one) finds them in place and completes at once;
 *   - VA signal: add to a 64-bit word at an offset of a window of the peer (device memory),
 *     after the puts before it: read, add and write back by the landing side under a lock
 *     (every proxy write to that word goes through it). Not atomic against the device's own
 *     writes to the word: a kernel must not reset a VA signal while signals to it are on
 *     their way (NCCL's NIC atomics would lose the reset's order, not a value).
 * Signals and counters are host memory the device maps: this thread and the landing add to
 * them with CPU atomics; the device reads (and resets) them over PCIe.
 *
 * Windows are named by their GIN handle (ncclWindow_vidmem.ginWins[0]): the registration's
 * number + 1, the same on every rank, which the owner's `window` callback resolves.
 */
#ifndef BT_TRANSPORT_GIN_PROXY_H
#define BT_TRANSPORT_GIN_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_device/layout.h"
#include "util/status.h"

struct bt_transport_ctx;
struct bt_gin_proxy;

/* The descriptor formats (NCCL's, by release). */
enum bt_gin_format {
    BT_GIN_V1 = 1,      /* NCCL 2.28: 64-byte descriptors (ncclGinProxyGfd_t of layout.h) */
    BT_GIN_V2 = 2,      /* NCCL 2.30.5-2.30.7: 128-byte descriptors, several contexts */
    BT_GIN_V1_WIDE = 3, /* NCCL 2.29.5-2.29.7: V1's with wider ids, VA signals, contexts */
};

struct bt_gin_proxy_cfg {
    int dev;             /* the CUDA device of the communicator */
    int format;          /* enum bt_gin_format */
    uint32_t ncontexts;  /* GIN contexts (V1: 1) */
    uint32_t nsignals;   /* signal ids 0 .. nsignals - 1, per context */
    uint32_t ncounters;  /* counter ids 0 .. ncounters - 1, per context */
    uint32_t queue_size; /* descriptors per peer queue: a power of two */
    /* This rank's window of GIN handle `handle`: its device address and bytes; 0 if there is
     * none (deregistered). Any thread. */
    int (*window)(void *arg, uint64_t handle, char **base, size_t *bytes);
    /* The first descriptor the proxy could not serve (its error), once; any thread. NULL:
     * none. */
    void (*failed)(void *arg, bt_status_t st);
    void *arg;
};

/* ---- NCCL 2.30.5-2.30.7's formats (interface facts; V1's are layout.h's) ---------------- */

/* The qwords of a V2 descriptor: every one carries the written flag in bit 0 (the device
 * writes 16-byte pieces; the slot is complete when all 16 are flagged). */
enum {
    BT_GIN_V2_HEADER = 0,        /* version in bits 1-4, size in bits 7-63 */
    BT_GIN_V2_INLINE_LOW = 1,    /* an inline value's bits 0-31 in 8-39, 32-47 in 40-55 */
    BT_GIN_V2_INLINE_HIGH = 2,   /* its bits 48-63 in 8-23 */
    BT_GIN_V2_SRC_OFF = 1,       /* (no inline) the source's offset in bits 1-63; a get's */
    BT_GIN_V2_SRC_HANDLE = 2,    /* source is the peer's window */
    BT_GIN_V2_VA_SIG_OFF = 1,    /* (VA signal) the signal's offset in its window */
    BT_GIN_V2_VA_SIG_HANDLE = 2, /* the signal's window */
    BT_GIN_V2_DST_OFF = 3,
    BT_GIN_V2_DST_HANDLE = 4,
    BT_GIN_V2_COMPLETION = 5, /* counter id in bits 1-23, signal id in 24-47, value 0-15 in 48-63 */
    BT_GIN_V2_SIGNAL_VAL = 6, /* strong in bit 1, value 16-31 in 8-23, 32-63 in 24-55 */
    BT_GIN_V2_HEADER_EXT = 7, /* the op (ncclGinProxyOp_t) in bits 8-23 */
    BT_GIN_V2_QWORDS = 16,
};
#define BT_GIN_V2_GFD_VERSION 2
/* V2's ops beyond V1's (ncclGinProxyOp_t) */
#define BT_GIN_OP_VA_SIGNAL (1u << 5) /* a signal alone, to a word of a window */
#define BT_GIN_OP_GET (1u << 6)
#define BT_GIN_OP_FLUSH (1u << 7)

/* A V2 context as the device reads it (2.30.7's ncclGinProxyGpuCtx_t): V1's, then per signal
 * the offset the device's resets leave (device memory: a signal reads as the word minus it),
 * and per peer the last get posted and the last one made visible (device memory; the device's
 * own bookkeeping). */
struct bt_gin_ctx_v2 {
    ncclGinProxyGpuCtx_t v1;
    uint64_t *signalOffsets;
    uint32_t *lastIssuedGet;
    uint32_t *lastVisibleGet;
};

/* Collective over every rank of ctx (the link, when there are other ranks): allocate the
 * queues, signals and counters, link with every other rank, start the thread. *dev_ctx: the
 * contexts as kernels read them (device memory; ncclDevComm.ginHandles[0]: an array of
 * ncontexts ncclGinProxyGpuCtx_t, V2 of struct bt_gin_ctx_v2). caller: the owner;
 * the current device is cfg->dev. */
bt_status_t bt_gin_proxy_open(struct bt_transport_ctx *ctx, const struct bt_gin_proxy_cfg *cfg,
                              struct bt_gin_proxy **gp_p, void **dev_ctx);

/* A descriptor's fields, either format (ncclGinProxyOp_t bits and BT_GIN_OP_* in op; the
 * inline value when op has ncclGinProxyOpWithInline, else the source's window handle and
 * offset: a get's source is the peer's window, a VA signal's "source" its signal word). */
struct bt_gin_gfd {
    unsigned op;
    int strong; /* V2: the signal waits for every earlier put (V1: always) */
    uint64_t size, src_off, src_handle, dst_off, dst_handle, inline_val, signal_val;
    uint32_t counter, signal;
};
/* q: the descriptor's qwords (V1, V1_WIDE: 8, V2: 16). BT_OK, or BT_ERR_INVALID_USAGE for a
 * V2 descriptor of another version. */
bt_status_t bt_gin_gfd_decode(int format, const uint64_t *q, struct bt_gin_gfd *f);

/* Stop the thread, close the link, free everything (the kernels using it must be done). NULL
 * ok. */
void bt_gin_proxy_close(struct bt_gin_proxy *gp);

#endif
