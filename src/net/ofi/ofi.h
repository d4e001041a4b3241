/*
 * The libfabric network backend (net/net.h's `bt_net_ofi`), internals shared by its two files:
 * ofi.c (loading libfabric, devices and domains, listen/connect/accept, the v11 table)
 * and ofi_comm.c (endpoint sets, memory registration, requests, the data path).
 *
 * Connection. listen() opens the listener's endpoint and publishes in the 128-byte handle
 * {BT_OFI_TAG, a random 64-bit id, the endpoint's name}. connect() opens `neps` endpoints,
 * puts the listener's name in their AV, queues the hello {BT_OFI_TAG, the id, neps, their
 * names} and returns the send comm at once; accept() returns the recv comm at once too, which
 * takes the listener's endpoint over. Neither may wait for the other side: a connection-based
 * provider (tcp;ofi_rxm) completes the sender's first send only once the listening side
 * reads its CQ, Baton accepts only after every rank has connected, and a sender's comm
 * progresses only once it sends. The hello is checked when it arrives (the id must be the
 * listener's): a wrong one fails the recv comm.
 *
 * Wire protocol (RDM endpoints, tagged messages, every tag below 2^48 so that providers with
 * 48 tag bits work):
 *   TAG_HELLO                       the connector's hello (struct bt_ofi_hello), to ep 0
 *   TAG_DATA | seq                  a whole message (under BT_OFI_MIN_SPLIT bytes, or one
 *                                   endpoint)
 *   TAG_DATA | TAG_SPLIT | seq      the 16-byte header {u64 size, u64 parts} of a split one
 *   TAG_DATA | TAG_PIECE | j | seq  piece j of a split message
 * seq is the comm's message count (36 bits, wrapping): the k-th isend of a send comm matches
 * the k-th irecv of its recv comm whatever order the provider delivers in.
 *
 * A send comm has `neps` endpoints (OFI_NEPS); the listener and its recv comm have one. The
 * sender's endpoint j talks to the listener's endpoint, so each is its own connection in a
 * connection-based provider (tcp;ofi_rxm: its own TCP socket). A message of at least
 * BT_OFI_MIN_SPLIT bytes on a comm of several endpoints is cut into `parts` contiguous
 * pieces of ceil(size / parts) bytes (the last may be shorter, an empty one is not sent),
 * piece j on endpoint j, after the header on endpoint 0. The receiver posts one receive of
 * the whole buffer on TAG_DATA | seq, ignoring TAG_SPLIT: it gets either the whole message,
 * or the header (into the first 16 bytes of its buffer, which piece 0 overwrites later),
 * from which it knows the pieces' places and posts them.
 */
#ifndef BT_NET_OFI_OFI_H
#define BT_NET_OFI_OFI_H

#ifdef BATON_HAVE_OFI

#include <poll.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"
#include "util/status.h"

#define BT_OFI_MAX_DEVS 16
#define BT_OFI_MAX_EPS 16                     /* endpoints of one send comm (OFI_NEPS, capped) */
#define BT_OFI_NAME_MAX 64                    /* bytes of an endpoint name (fi_getname) */
#define BT_OFI_MAX_REQS NCCL_NET_MAX_REQUESTS /* requests in flight per comm */
#define BT_OFI_MIN_SPLIT (64 * 1024)
#define BT_OFI_TAG 0x42544f4649303031ull /* "BTOFI001": a handle made by listen() */

#define BT_OFI_TAG_HELLO (1ull << 47)
#define BT_OFI_TAG_DATA (1ull << 46)
#define BT_OFI_TAG_SPLIT (1ull << 45)
#define BT_OFI_TAG_PIECE (1ull << 44)
#define BT_OFI_PIECE_SHIFT 36 /* piece index: bits 36..43 */
#define BT_OFI_SEQ_MASK ((1ull << BT_OFI_PIECE_SHIFT) - 1)

/* The few real symbols of libfabric (the rest are inline calls through the fid ops). */
struct bt_ofi_lib {
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
    uint32_t (*version)(void);
};
extern struct bt_ofi_lib bt_ofi; /* filled once libfabric is loaded */

/* One device: a domain of the chosen provider, opened on first use (refs: endpoint sets). */
struct bt_ofi_dev {
    char name[64];
    char pci[256]; /* "" when the device has no PCI path */
    uint64_t guid;
    int speed; /* Mbps */
    size_t max_msg;
    int hmem;     /* the provider takes CUDA buffers (FI_HMEM) */
    int hardware; /* the provider drives a NIC (a registration pins memory) */
    uint64_t mr_mode;
    struct fi_info *info; /* this domain's entry of the provider's list (a copy) */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    int refs; /* under the backend's lock */
};

/* A registration: one MR, or one per endpoint when the provider wants FI_MR_ENDPOINT. */
struct bt_ofi_mr {
    struct bt_ofi_dev *dev;
    int n;
    struct fid_mr *mr[BT_OFI_MAX_EPS];
    void *desc[BT_OFI_MAX_EPS];
};

/* One posted operation; its context is what the completion hands back. */
enum { BT_OFI_OP_IDLE, BT_OFI_OP_TO_POST, BT_OFI_OP_POSTED, BT_OFI_OP_DONE };
struct bt_ofi_req;
struct bt_ofi_op {
    struct fi_context2 ctx; /* first: the provider may use it (FI_CONTEXT2 mode) */
    struct bt_ofi_req *req; /* NULL: a control message (hello) */
    int state;
    int ep;
    int is_send;
    void *buf;
    size_t len;
    void *desc;
    uint64_t tag, ignore;
    size_t got;    /* completion: bytes */
    uint64_t rtag; /* completion: the tag that matched */
    int err;       /* completion: a positive FI_E* (0: success) */
};

/* What a connector says first, to the listener's endpoint. */
struct bt_ofi_hello {
    uint64_t tag; /* BT_OFI_TAG */
    uint64_t id;  /* the listener's id, from its handle */
    uint32_t neps;
    uint32_t namelen[BT_OFI_MAX_EPS];
    unsigned char names[BT_OFI_MAX_EPS][BT_OFI_NAME_MAX];
};

/* Buffers the backend itself sends from or receives into (registered when FI_MR_LOCAL). */
struct bt_ofi_ctl {
    struct bt_ofi_hello hello;
    uint64_t hdr[BT_OFI_MAX_REQS][2]; /* split headers {size, parts}, per request slot */
};

/* Endpoints with one CQ and one AV: a send comm's, or a listener's, which its recv comm
 * takes over. */
struct bt_ofi_eps {
    struct bt_ofi_dev *dev;
    int n;
    struct fid_ep *ep[BT_OFI_MAX_EPS];
    struct fid_cq *cq;
    int wait_fd;      /* the CQ's wait object (FI_WAIT_FD), -1 when the provider has none */
    uint64_t busy_ns; /* when the CQ last gave completions */
    struct fid_av *av;
    unsigned char name[BT_OFI_MAX_EPS][BT_OFI_NAME_MAX];
    size_t namelen[BT_OFI_MAX_EPS];
    struct bt_ofi_ctl *ctl;
    struct bt_ofi_mr *ctl_mr; /* NULL unless FI_MR_LOCAL */
    struct bt_ofi_op hello;   /* listener: the hello's receive; sender: its send */
    uint64_t id;              /* listener: the id its handle and every hello carry */
    int ntopost;              /* operations waiting to be posted (EAGAIN), hello included */
    bt_status_t err;          /* sticky failure (the hello failed, or was wrong) */
};

struct bt_ofi_req {
    struct bt_ofi_comm *comm;
    int used;      /* slot taken */
    int abandoned; /* test() reported it (failed): free once nothing is in flight */
    int is_send;
    int slot;
    uint64_t seq;
    char *buf;
    size_t cap;   /* receive: the posted size; send: the size */
    size_t bytes; /* moved so far */
    int nops;
    int inflight; /* ops posted or to post, not complete */
    bt_status_t err;
    struct bt_ofi_mr *mr;     /* the caller's, or NULL */
    struct bt_ofi_mr *tmp_mr; /* registered for this request (mhandle NULL, FI_MR_LOCAL) */
    struct bt_ofi_op op[1 + BT_OFI_MAX_EPS];
};

enum { BT_OFI_LISTEN, BT_OFI_SEND, BT_OFI_RECV };
struct bt_ofi_comm {
    int kind;
    struct bt_ofi_eps *eps; /* listen: NULL once accepted (the recv comm has it) */
    fi_addr_t peer;         /* send: the listener's endpoint */
    int parts;              /* send: pieces of a split message, one per endpoint */
    uint64_t seq;           /* next message */
    struct bt_ofi_req reqs[BT_OFI_MAX_REQS];
};

/* "fi_xxx(...) failed: text" at WARN, for a libfabric call that returned `rc` (< 0). */
bt_status_t bt_ofi_fail(const char *call, int rc, const char *what);

/* Domain of `dev`, opened on first use; release what acquire gave. Under the lock. */
bt_status_t bt_ofi_dev_acquire(struct bt_ofi_dev *dev);
void bt_ofi_dev_release(struct bt_ofi_dev *dev);
/* The backend's lock (devices, domains, key counter); domain-level calls are made under it. */
void bt_ofi_lock(void);
void bt_ofi_unlock(void);

/* Endpoints on `dev`: n of them, one CQ and AV, enabled and named. */
bt_status_t bt_ofi_eps_open(struct bt_ofi_dev *dev, int n, struct bt_ofi_eps **eps_p);
/* Close everything eps holds. Accepts NULL. */
void bt_ofi_eps_close(struct bt_ofi_eps *eps);

bt_status_t bt_ofi_mr_register(struct bt_ofi_eps *eps, void *buf, size_t len, int cuda,
                               struct bt_ofi_mr **mr_p);
void bt_ofi_mr_close(struct bt_ofi_mr *mr);

/* net.h's pollfds for a comm: its CQ's descriptor once libfabric says blocking is safe
 * (fi_trywait); -1 when completions or posts wait now, or the comm was busy within the last
 * millisecond (poll it); 0 when the CQ has no descriptor. */
int bt_ofi_comm_pollfds(struct bt_ofi_comm *comm, struct pollfd *fds, int max);

/* Read the comm's CQ until it is empty, posting what waits; a hello that failed or is
 * wrong becomes the endpoints' error. */
bt_status_t bt_ofi_comm_progress(struct bt_ofi_comm *comm);
/* Queue the hello (a send to comm->peer, or the listener's receive) and post it if the
 * provider takes it now. */
bt_status_t bt_ofi_hello_post(struct bt_ofi_comm *comm);

bt_status_t bt_ofi_isend(struct bt_ofi_comm *comm, void *data, size_t size, struct bt_ofi_mr *mr,
                         void **request_p);
bt_status_t bt_ofi_irecv(struct bt_ofi_comm *comm, void *data, size_t size, struct bt_ofi_mr *mr,
                         void **request_p);
bt_status_t bt_ofi_test(void *request, int *done_p, size_t *size_p);
/* Close a comm's requests' own registrations, its endpoints (if it has them), free it. */
void bt_ofi_comm_free(struct bt_ofi_comm *comm);

/* Endpoints a new send comm opens: OFI_NEPS, or what a test set (0: the parameter again). */
int bt_net_ofi_neps(void);
void bt_net_ofi_neps_set(int neps);

#endif /* BATON_HAVE_OFI */
#endif
