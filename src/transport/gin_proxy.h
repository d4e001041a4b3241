/*
 * GIN in proxy mode (NCCL's device API, GPU-initiated networking): a thread, "baton GIN", that
 * serves the descriptor queues a device communicator's kernels write (ncclGinProxyGpuCtx_t,
 * include/nccl_device/layout.h). Per peer rank a queue of 64-byte descriptors in host memory
 * the device maps; the device claims a slot (its producer index, device memory), writes the
 * eight flagged qwords, and waits for credit on the consumer index this thread advances.
 *
 * Each descriptor is a put (its bytes from a window of this rank, or a value inline) to a
 * window of the peer, optionally followed by a signal (increment, or add a value) on the peer
 * and a counter (local completion) here. This thread takes them in order per peer:
 *   - to another rank, over the one-sided link (transport/rma_net.h, the communicator's
 *     network: sockets, OFI, a plugin), the bytes copied out of device memory first; the
 *     peer's link thread lands them in its window (a copy it waits for) and only then adds
 *     the signal: one comm per pair carries a put's messages and later puts in order, so a
 *     signal is seen after every byte of the puts before it to that peer;
 *   - to itself, the same without the network.
 * The consumer index advances (and the counter, if asked) once the bytes have left the source
 * (sent, or copied): the device's flush waits for exactly that.
 * Signals and counters are host memory the device maps: this thread and the landing thread
 * add to them with CPU atomics; the device reads (and resets) them over PCIe.
 *
 * Windows are named by their GIN handle (ncclWindow_vidmem.ginWins[0]): the registration's
 * number + 1, the same on every rank, which the owner's `window` callback resolves.
 */
#ifndef BT_TRANSPORT_GIN_PROXY_H
#define BT_TRANSPORT_GIN_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

struct bt_transport_ctx;
struct bt_gin_proxy;

struct bt_gin_proxy_cfg {
    int dev;             /* the CUDA device of the communicator */
    uint32_t nsignals;   /* signal ids 0 .. nsignals - 1 */
    uint32_t ncounters;  /* counter ids 0 .. ncounters - 1 */
    uint32_t queue_size; /* descriptors per peer queue: a power of two */
    /* This rank's window of GIN handle `handle`: its device address and bytes; 0 if there is
     * none (deregistered). Any thread. */
    int (*window)(void *arg, uint64_t handle, char **base, size_t *bytes);
    /* The first put the proxy could not carry (its error), once; any thread. NULL: none. */
    void (*failed)(void *arg, bt_status_t st);
    void *arg;
};

/* Collective over every rank of ctx (the link, when there are other ranks): allocate the
 * queues, signals and counters, link with every other rank, start the thread. *dev_ctx: the
 * context as kernels read it (device memory; ncclDevComm.ginHandles[i]). caller: the owner;
 * the current device is cfg->dev. */
bt_status_t bt_gin_proxy_open(struct bt_transport_ctx *ctx, const struct bt_gin_proxy_cfg *cfg,
                              struct bt_gin_proxy **gp_p, void **dev_ctx);

/* A descriptor's fields (NCCL's proxy format: ncclGinProxyOp_t bits in op; the inline value
 * when op has ncclGinProxyOpWithInline, else the source's window handle and offset). */
struct bt_gin_gfd {
    unsigned op;
    uint64_t size, src_off, src_handle, dst_off, dst_handle, inline_val, signal_val;
    uint32_t counter, signal;
};
void bt_gin_gfd_decode(const uint64_t q[8], struct bt_gin_gfd *f);

/* Stop the thread, close the link, free everything (the kernels using it must be done). NULL
 * ok. */
void bt_gin_proxy_close(struct bt_gin_proxy *gp);

#endif
