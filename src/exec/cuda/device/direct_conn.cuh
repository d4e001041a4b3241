/*
 * The one-pass one-shot AllReduce's connectors (direct.cuh runs it): the state of thread r's
 * connectors to and from peer r, read into shared memory once per work, and what a chunk does
 * with them before and after it moves its lines (slots, flags, credit, head). Shared by the LL
 * and LL128 line formats.
 */
#ifndef BT_EXEC_CUDA_DEVICE_DIRECT_CONN_CUH
#define BT_EXEC_CUDA_DEVICE_DIRECT_CONN_CUH

#include <stdint.h>

#include "coll/work.h"
#include "exec/cuda/device/sync.cuh"
#include "exec/cuda/kargs.h"
#include "transport/conn.h"

/* Bytes of payload at offset o of an n-byte chunk, up to 8. */
static __device__ __forceinline__ int word_bytes(size_t n, size_t o)
{
    return n > o ? (int)bt_min_sz(8, n - o) : 0;
}

/* Thread r's connectors to and from peer r for one work of a one-shot block, read from
 * device memory once at the work's start and written back at its end: read at every chunk,
 * they were a chain of dependent loads (the connector's address, then its step, then the slot
 * geometry) ahead of each chunk. Only thread r touches entry r. */
struct DirectPeer {
    struct bt_conn *sc, *rc;
    char *sbuf, *rbuf;     /* the protocol's first slot, each way */
    size_t sslot, rslot;   /* bytes per slot */
    uint64_t sstep, rstep; /* next step to send, to receive */
    uint64_t cached;       /* the peer's head as last read (credit) */
};

/* Shared by the line formats: the connector state and the chunk's view in shared memory. */
struct DirectChunk {
    char *send[BT_CUDA_ONEPASS_MAX_RANKS], *recv[BT_CUDA_ONEPASS_MAX_RANKS];
    uint64_t sflag[BT_CUDA_ONEPASS_MAX_RANKS], rflag[BT_CUDA_ONEPASS_MAX_RANKS];
    DirectPeer peer[BT_CUDA_ONEPASS_MAX_RANKS];
};

static __device__ __forceinline__ bool direct_peer_thread(const struct bt_work *w)
{
    return (int)threadIdx.x < w->nranks && (int)threadIdx.x != w->rank;
}

/* At a work's start, thread r < n (r != me): its connectors' state for `proto`. */
static __device__ void direct_open(const struct bt_work *w, int proto, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    DirectPeer *p = &d->peer[threadIdx.x];
    p->sc = w->peer_send[threadIdx.x];
    p->rc = w->peer_recv[threadIdx.x];
    p->sbuf = p->sc->buf[proto];
    p->sslot = p->sc->sizes.slot_bytes[proto];
    p->sstep = p->sc->step;
    p->cached = p->sc->cached;
    p->rbuf = p->rc->buf[proto];
    p->rslot = p->rc->sizes.slot_bytes[proto];
    p->rstep = p->rc->step;
}

/* At a work's end, also an early one (an error): the steps back to the connectors. */
static __device__ void direct_close(const struct bt_work *w, const DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    const DirectPeer *p = &d->peer[threadIdx.x];
    p->sc->step = p->sstep;
    p->sc->cached = p->cached;
    p->rc->step = p->rstep;
}

/* Before sending a chunk, thread r < n (r != me): peer r's send slot and flag (step + 1),
 * after credit (the peer read step - NSTEPS). Returns 0 or an enum bt_exec_err; the caller
 * barriers. */
static __device__ int direct_send_begin(const struct bt_work *w, const struct bt_cuda_khdr &h,
                                        int widx, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return 0;
    int r = threadIdx.x;
    DirectPeer *p = &d->peer[r];
    d->send[r] = p->sbuf + (size_t)(p->sstep % BT_NSTEPS) * p->sslot;
    d->sflag[r] = p->sstep + 1;
    if (p->sstep < p->cached + BT_NSTEPS)
        return 0;
    uint64_t seen;
    int err = wait_ge((const uint64_t *)&p->sc->ctrl->head, p->sstep + 1 - BT_NSTEPS, &seen, h, r,
                      widx, 1);
    if (!err) /* after an abort or a timeout `seen` is not a head: keep no credit from it */
        p->cached = seen;
    return err;
}

/* Before receiving a chunk, thread r < n (r != me): peer r's receive slot and flag. */
static __device__ void direct_recv_begin(const struct bt_work *w, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    int r = threadIdx.x;
    const DirectPeer *p = &d->peer[r];
    d->recv[r] = p->rbuf + (size_t)(p->rstep % BT_NSTEPS) * p->rslot;
    d->rflag[r] = p->rstep + 1;
}

/* After a chunk is sent (every thread's stores issued, behind a barrier): the next step. */
static __device__ void direct_send_end(const struct bt_work *w, DirectChunk *d)
{
    if (direct_peer_thread(w))
        d->peer[threadIdx.x].sstep++;
}

/* After a chunk is received (every thread is done reading its lines, behind a barrier):
 * return the slot, move the step. */
static __device__ void direct_recv_end(const struct bt_work *w, DirectChunk *d)
{
    if (!direct_peer_thread(w))
        return;
    DirectPeer *p = &d->peer[threadIdx.x];
    st_relaxed_sys((uint64_t *)&p->rc->ctrl->head, p->rstep + 1);
    p->rstep++;
}

/* The chunk l of a work: where it starts (elements into the work's buffers) and its bytes. */
template <typename T>
static __device__ __forceinline__ void direct_chunk(const struct bt_work *w, uint64_t l,
                                                    size_t *off, size_t *nbytes)
{
    *off = w->chan_off + (size_t)l * w->chunk;
    *nbytes = bt_min_sz(w->chunk, w->chan_off + w->chan_count - *off) * sizeof(T);
}

#endif
