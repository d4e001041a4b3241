/*
 * libfabric backend (net/net.h's `bt_net_ofi`): loading libfabric, devices and their domains,
 * listen, connect, accept, and the v11 table. Wire protocol and data structures: ofi.h; the
 * data path: ofi_comm.c.
 *
 * libfabric is opened at run time (dlopen of libfabric.so.1), so one build runs on machines
 * with and without it: without, init() succeeds and there are 0 devices (one INFO line).
 * Only fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_strerror and fi_version are real
 * symbols; every other fi_* call is an inline call through the ops tables of the objects.
 *
 * Which provider: FI_PROVIDER (libfabric filters by it) or OFI_PROVIDER (Baton's, put in
 * the hints' prov_name, e.g. "tcp;ofi_rxm"); of the providers libfabric then lists, the
 * first one's entries are used. With neither set the backend has devices only when that
 * first provider drives a NIC of its own (verbs, efa, cxi, opx, psm3, psm2, usnic): on a
 * machine with plain Ethernet libfabric offers tcp;ofi_rxm, and Baton's socket backend is
 * the better way over TCP, so OFI must not win there by default.
 *
 * Devices: one per domain of that provider (tcp: one per interface, named after it). A
 * domain named after a network interface is kept only when SOCKET_IFNAME's rules select the
 * interface (util/socket.c: bt_socket_find_interfaces); other domains (mlx5_0, efa's) are
 * all kept. Each domain (fabric + domain objects) opens when its first endpoint does and
 * closes with its last, so nothing of libfabric stays open once every comm is closed.
 *
 * connect() and accept() make their comms at once (why: ofi.h, "Connection"), so
 * connect_cancel has nothing to drop; an unreachable listener shows as a failed request.
 *
 * tcp;ofi_rxm as libfabric 1.17 ships it: its shared receive context costs each endpoint
 * ~70 MB and ~35 ms and moves data 5x slower on loopback, so FI_OFI_RXM_USE_SRX=0 is set
 * (unless the user set it) before libfabric loads its providers; it has
 * FI_PROGRESS_MANUAL data progress and mr_mode 0 (no registration needed, but two with one
 * requested key fail: FI_ENOKEY).
 *
 * caller: the proxy threads; process-wide state (library, devices, domains, registration
 * keys) is under g_mu, a comm is used by one thread at a time.
 */
#ifdef BATON_HAVE_OFI

#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "net/ofi/ofi.h"
#include "util/hash.h"
#include "util/param.h"
#include "util/random.h"
#include "util/socket.h"
#include "util/time.h"

struct bt_ofi_lib bt_ofi;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_dl;     /* libfabric, once loaded (never closed: providers keep state) */
static int g_dl_tried; /* dlopen was tried (its failure is logged once) */
static int g_refs;     /* init() calls not finalized */
static int g_scanned;  /* the device list is built */
static int g_ndev;
static struct bt_ofi_dev g_dev[BT_OFI_MAX_DEVS];
static int g_ctx; /* what init() returns as the context: the backend keeps no per-init state */
#define BT_OFI_MAX_ZOMBIES 64
static void *g_zombies[BT_OFI_MAX_ZOMBIES]; /* domains and fabrics libfabric would not close */
static int g_nzombies;

void bt_ofi_lock(void)
{
    pthread_mutex_lock(&g_mu);
}

void bt_ofi_unlock(void)
{
    pthread_mutex_unlock(&g_mu);
}

bt_status_t bt_ofi_fail(const char *call, int rc, const char *what)
{
    BT_WARN("NET/OFI: %s%s%s failed: %s (%d)", call, what ? " " : "", what ? what : "",
            bt_ofi.strerror ? bt_ofi.strerror(-rc) : "?", rc);
    return BT_ERR_INTERNAL;
}

/* ---- loading libfabric ---- */

/* 1 when libfabric is loaded and usable. Under g_mu. */
static int lib_load(void)
{
    if (g_dl)
        return 1;
    if (g_dl_tried)
        return 0;
    g_dl_tried = 1;
    void *dl = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        BT_INFO(BT_LOG_INIT | BT_LOG_NET, "NET/OFI: libfabric not available (%s): no devices",
                dlerror());
        return 0;
    }
    struct bt_ofi_lib l;
    *(void **)&l.getinfo = dlsym(dl, "fi_getinfo");
    *(void **)&l.freeinfo = dlsym(dl, "fi_freeinfo");
    *(void **)&l.dupinfo = dlsym(dl, "fi_dupinfo");
    *(void **)&l.fabric = dlsym(dl, "fi_fabric");
    *(void **)&l.strerror = dlsym(dl, "fi_strerror");
    *(void **)&l.version = dlsym(dl, "fi_version");
    if (!l.getinfo || !l.freeinfo || !l.dupinfo || !l.fabric || !l.strerror || !l.version) {
        BT_INFO(BT_LOG_INIT | BT_LOG_NET, "NET/OFI: libfabric.so.1 lacks fi_* symbols: no devices");
        dlclose(dl);
        return 0;
    }
    /* The fi_info structures are the library's: it must be at least as new as the header
     * this file was built with, or fields read here may not exist there. */
    uint32_t v = l.version(), want = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    if (v < want) {
        BT_INFO(BT_LOG_INIT | BT_LOG_NET,
                "NET/OFI: libfabric %u.%u is older than %u.%u (built with): no devices",
                FI_MAJOR(v), FI_MINOR(v), FI_MAJOR(want), FI_MINOR(want));
        dlclose(dl);
        return 0;
    }
    bt_ofi = l;
    g_dl = dl;
    return 1;
}

/* ---- devices ---- */

static int core_is_hardware(const char *prov)
{
    static const char *const hw[] = {"verbs", "efa", "cxi", "opx", "psm3", "psm2", "usnic"};
    size_t len = strcspn(prov, ";");
    for (size_t i = 0; i < sizeof(hw) / sizeof(hw[0]); i++)
        if (strlen(hw[i]) == len && strncmp(prov, hw[i], len) == 0)
            return 1;
    return 0;
}

static struct fi_info *get_info(int hmem, const char *prov)
{
    struct fi_info *hints = bt_ofi.dupinfo(NULL), *list = NULL;
    if (hints == NULL)
        return NULL;
    hints->caps = FI_TAGGED | (hmem ? FI_HMEM : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                                  FI_MR_PROV_KEY | (hmem ? FI_MR_HMEM : 0);
    /* Different comms of one domain are driven by different threads at once. */
    hints->domain_attr->threading = FI_THREAD_SAFE;
    if (prov)
        hints->fabric_attr->prov_name = strdup(prov); /* fi_freeinfo frees it */

    int rc =
        bt_ofi.getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &list);
    if (rc != 0) {
        BT_INFO(BT_LOG_INIT | BT_LOG_NET, "NET/OFI: fi_getinfo(RDM, tagged%s%s%s) found none: %s",
                hmem ? ", HMEM" : "", prov ? ", provider " : "", prov ? prov : "",
                bt_ofi.strerror(-rc));
        list = NULL;
    }
    bt_ofi.freeinfo(hints);
    return list;
}

/* Whether the interface `name` (a domain named after one) is one SOCKET_IFNAME selects. */
static int iface_selected(const char *name, const struct bt_socket_iface *ifs, int nifs)
{
    for (int i = 0; i < nifs; i++)
        if (strcmp(ifs[i].name, name) == 0)
            return 1;
    return 0;
}

static void dev_fill(struct bt_ofi_dev *d, const struct fi_info *fi)
{
    snprintf(d->name, sizeof(d->name), "%s", fi->domain_attr->name);
    static const char *const classes[] = {"/sys/class/net/%s/device",
                                          "/sys/class/infiniband/%s/device"};
    d->pci[0] = '\0';
    for (int c = 0; c < 2 && d->pci[0] == '\0'; c++) {
        char path[128], real[PATH_MAX];
        snprintf(path, sizeof(path), classes[c], d->name);
        if (realpath(path, real) && strlen(real) < sizeof(d->pci))
            memcpy(d->pci, real, strlen(real) + 1);
    }
    d->guid = bt_fnv1a_str(BT_FNV1A_INIT, d->pci[0] ? d->pci : d->name);
    d->speed = 10000;
    if (fi->nic && fi->nic->link_attr && fi->nic->link_attr->speed > 0)
        d->speed = (int)(fi->nic->link_attr->speed / 1000000); /* bits per second */
    d->max_msg = fi->ep_attr->max_msg_size;
    d->hmem = (fi->caps & FI_HMEM) != 0;
    d->mr_mode = (uint64_t)fi->domain_attr->mr_mode;
}

/* Whether the provider list `names` ("tcp;ofi_rxm", "tcp,tcp;ofi_rxm") names only tcp. */
static int tcp_only(const char *names)
{
    if (!names || !*names || *names == '^')
        return 0;
    for (const char *p = names; p; p = strchr(p, ',')) {
        p += *p == ',';
        if (strncmp(p, "tcp", 3) != 0 || (p[3] && p[3] != ';' && p[3] != ','))
            return 0;
    }
    return 1;
}

/* Whether the machine shows a NIC that one of core_is_hardware's providers drives: an RDMA
 * device (verbs, efa, usnic, psm3 and Omni-Path's psm2/opx all sit under
 * /sys/class/infiniband) or a Slingshot one (cxi: /sys/class/cxi, /dev/cxi*). Asked before
 * libfabric is loaded when nothing names a provider: its first fi_getinfo costs ~150 ms of
 * one core (libfabric 1.17's verbs provider reads all of /proc/kallsyms), for nothing where
 * only tcp would answer. */
static int rdma_nic_present(void)
{
    static const char *const classes[] = {"/sys/class/infiniband", "/sys/class/cxi"};
    for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]); c++) {
        DIR *d = opendir(classes[c]);
        if (d == NULL)
            continue;
        struct dirent *e;
        int found = 0;
        while (!found && (e = readdir(d)) != NULL)
            found = e->d_name[0] != '.';
        closedir(d);
        if (found)
            return 1;
    }
    glob_t g;
    int found = glob("/dev/cxi*", 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

/* Build the device list. Under g_mu. */
static void scan(void)
{
    g_ndev = 0;
    /* ofi_rxm over tcp (libfabric 1.17) defaults to a shared receive context that costs each
     * endpoint ~70 MB and ~35 ms to make, and moves 5x less data than without it. rxm reads
     * this when libfabric loads its providers (the first fi_getinfo); the user's value wins. */
    if (setenv("FI_OFI_RXM_USE_SRX", "0", 0) != 0)
        BT_INFO(BT_LOG_INIT | BT_LOG_NET, "NET/OFI: setenv(FI_OFI_RXM_USE_SRX) failed");
    const char *prov = bt_param_str_ofi_provider();
    const char *fi_prov = getenv("FI_PROVIDER");
    if (prov && *prov == '\0')
        prov = NULL;
    /* Over tcp, rxm places eager messages straight into the posted receive buffers (its
     * dynamic receive buffering), so a larger eager limit costs no bounce buffers and spares
     * each message of 16 KB-4 MB rxm's rendezvous round trips (64 KB AllReduce 66 -> 31 us,
     * 1 MB 326 -> 247 us, 2 ranks on loopback; RSS 172 -> 142 MB). Baton's messages are one
     * NET slot (512 KB by default). Only when every provider asked for is tcp's: over verbs
     * the eager limit must equal rxm's buffer size. The user's value wins. */
    if (tcp_only(prov ? prov : fi_prov) && setenv("FI_OFI_RXM_EAGER_LIMIT", "4194304", 0) != 0)
        BT_INFO(BT_LOG_INIT | BT_LOG_NET, "NET/OFI: setenv(FI_OFI_RXM_EAGER_LIMIT) failed");
    /* FI_PROVIDER="^name" only excludes: it chooses nothing. */
    int chosen = prov || (fi_prov && *fi_prov && *fi_prov != '^');
    const char *net = bt_param_str_net();
    if (!chosen && !(net && strcasecmp(net, "OFI") == 0) && !rdma_nic_present()) {
        BT_INFO(BT_LOG_INIT | BT_LOG_NET,
                "NET/OFI: no RDMA NIC (/sys/class/infiniband, /sys/class/cxi): libfabric not "
                "loaded; FI_PROVIDER, OFI_PROVIDER or NET=OFI use it anyway");
        return;
    }
    if (!lib_load())
        return;
    struct fi_info *list = NULL;
    const char *first = NULL;
#ifdef BATON_HAVE_CUDA
    int hmem = 1; /* a provider that takes CUDA buffers first, then any */
#else
    int hmem = 0;
#endif
    for (; hmem >= 0 && first == NULL; hmem--) {
        list = get_info(hmem, prov);
        if (list == NULL)
            continue;
        first = list->fabric_attr->prov_name;
        if (!chosen && !core_is_hardware(first)) {
            BT_INFO(BT_LOG_INIT | BT_LOG_NET,
                    "NET/OFI: the first provider%s is %s, not a NIC's: not used unless "
                    "FI_PROVIDER or OFI_PROVIDER names it",
                    hmem ? " with HMEM" : "", first);
            bt_ofi.freeinfo(list);
            list = NULL;
            first = NULL;
        }
    }
    if (list == NULL)
        return;
    struct bt_socket_iface ifs[64];
    int nifs = -1;
    for (struct fi_info *fi = list; fi && g_ndev < BT_OFI_MAX_DEVS; fi = fi->next) {
        if (strcmp(fi->fabric_attr->prov_name, first) != 0 || fi->domain_attr->name == NULL)
            continue;
        int seen = 0;
        for (int d = 0; d < g_ndev; d++)
            seen |= strcmp(g_dev[d].name, fi->domain_attr->name) == 0;
        if (seen)
            continue;
        if (if_nametoindex(fi->domain_attr->name) != 0) {
            /* as the socket backend: SOCKET_IFNAME's interfaces, else only the first usable
             * one (others may not reach the peers) */
            int max = bt_param_str_socket_ifname() ? (int)(sizeof(ifs) / sizeof(ifs[0])) : 1;
            if (nifs < 0)
                nifs = bt_socket_find_interfaces(ifs, max);
            if (!iface_selected(fi->domain_attr->name, ifs, nifs))
                continue;
        }
        struct bt_ofi_dev *d = &g_dev[g_ndev];
        memset(d, 0, sizeof(*d));
        d->info = bt_ofi.dupinfo(fi);
        if (d->info == NULL) {
            BT_WARN("NET/OFI: fi_dupinfo failed (out of memory)");
            break;
        }
        dev_fill(d, fi);
        d->hardware = core_is_hardware(first);
        BT_INFO(BT_LOG_INIT | BT_LOG_NET,
                "NET/OFI: device %d is %s (provider %s, fabric %s, mr_mode 0x%llx, %s progress, "
                "%d Mbps%s%s)",
                g_ndev, d->name, first, fi->fabric_attr->name, (unsigned long long)d->mr_mode,
                fi->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual", d->speed,
                d->hmem ? ", CUDA buffers" : "", d->pci[0] ? "" : ", no PCI path");
        g_ndev++;
    }
    if (g_ndev == 0)
        BT_INFO(BT_LOG_INIT | BT_LOG_NET,
                "NET/OFI: provider %s has no domain SOCKET_IFNAME selects", first);
    bt_ofi.freeinfo(list);
}

bt_status_t bt_ofi_dev_acquire(struct bt_ofi_dev *d)
{
    if (d->refs > 0) {
        d->refs++;
        return BT_OK;
    }
    int rc = bt_ofi.fabric(d->info->fabric_attr, &d->fabric, NULL);
    if (rc != 0) {
        d->fabric = NULL;
        return bt_ofi_fail("fi_fabric", rc, d->info->fabric_attr->name);
    }
    rc = fi_domain(d->fabric, d->info, &d->domain, NULL);
    if (rc != 0) {
        d->domain = NULL;
        bt_ofi_fail("fi_domain", rc, d->name);
        fi_close(&d->fabric->fid);
        d->fabric = NULL;
        return BT_ERR_INTERNAL;
    }
    d->refs = 1;
    return BT_OK;
}

/* Close the domain and fabric of a device nothing uses. Under g_mu. */
static void dev_close(struct bt_ofi_dev *d)
{
    if (d->domain == NULL)
        return;
    int rc = fi_close(&d->domain->fid);
    if (rc == -FI_EBUSY) {
        /* libfabric 1.17's ofi_rxm keeps what a rendezvous send still in flight holds (its
         * own registration of the buffer) when the endpoint closes: a peer that died, or a
         * receive that failed. Its domain close has then undone part of the domain already,
         * so the domain can be neither used nor closed again: it is left as it is (kept in
         * g_zombies, reachable), with its fabric, and the device opens a new one. */
        BT_INFO(BT_LOG_NET,
                "NET/OFI: domain %s still busy after its last endpoint closed "
                "(a send was in flight): left open",
                d->name);
        if (g_nzombies + 2 <= BT_OFI_MAX_ZOMBIES) {
            g_zombies[g_nzombies++] = d->domain;
            g_zombies[g_nzombies++] = d->fabric;
        }
        d->domain = NULL;
        d->fabric = NULL;
        return;
    }
    if (rc != 0)
        bt_ofi_fail("fi_close(domain)", rc, d->name);
    rc = fi_close(&d->fabric->fid);
    if (rc != 0)
        bt_ofi_fail("fi_close(fabric)", rc, d->name);
    d->domain = NULL;
    d->fabric = NULL;
}

void bt_ofi_dev_release(struct bt_ofi_dev *d)
{
    if (--d->refs == 0)
        dev_close(d);
}

/* Free the device list when nothing uses it. Under g_mu. */
static void unscan(void)
{
    for (int d = 0; d < g_ndev; d++)
        if (g_dev[d].refs > 0)
            return; /* a comm outlived finalize(): keep everything */
    for (int d = 0; d < g_ndev; d++) {
        bt_ofi.freeinfo(g_dev[d].info);
        g_dev[d].info = NULL;
    }
    g_ndev = 0;
    g_scanned = 0;
}

/* ---- the table: init, devices ---- */

static ncclResult_t ofi_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *config,
                             ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn)
{
    (void)comm_id, (void)config, (void)log_fn, (void)prof_fn; /* Baton logs through util/log */
    pthread_mutex_lock(&g_mu);
    g_refs++;
    if (!g_scanned) {
        scan();
        g_scanned = 1;
    }
    pthread_mutex_unlock(&g_mu);
    *ctx = &g_ctx;
    return ncclSuccess;
}

static ncclResult_t ofi_finalize(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&g_mu);
    if (g_refs > 0 && --g_refs == 0)
        unscan();
    pthread_mutex_unlock(&g_mu);
    return ncclSuccess;
}

static ncclResult_t ofi_devices(int *ndev)
{
    pthread_mutex_lock(&g_mu);
    *ndev = g_ndev;
    pthread_mutex_unlock(&g_mu);
    return ncclSuccess;
}

/* The device `dev`, or NULL (logged). */
static struct bt_ofi_dev *dev_get(int dev, const char *call)
{
    pthread_mutex_lock(&g_mu);
    struct bt_ofi_dev *d = dev >= 0 && dev < g_ndev ? &g_dev[dev] : NULL;
    int n = g_ndev;
    pthread_mutex_unlock(&g_mu);
    if (d == NULL)
        BT_WARN("NET/OFI: %s on device %d, but there are %d", call, dev, n);
    return d;
}

static ncclResult_t ofi_get_properties(int dev, ncclNetProperties_v11_t *props)
{
    struct bt_ofi_dev *d = dev_get(dev, "getProperties");
    if (d == NULL)
        return ncclInvalidArgument;
    memset(props, 0, sizeof(*props));
    props->name = d->name;
    props->pciPath = d->pci[0] ? d->pci : NULL;
    props->guid = d->guid;
    props->ptrSupport = NCCL_PTR_HOST;
#ifdef BATON_HAVE_CUDA
    if (d->hmem)
        props->ptrSupport |= NCCL_PTR_CUDA;
#endif
    props->regIsGlobal = 0;
    props->forceFlush = 0;
    props->speed = d->speed;
    props->port = 0;
    props->latency = 0;
    props->maxComms = 65536;
    props->maxRecvs = 1;
    props->netDeviceType = NCCL_NET_DEVICE_HOST;
    props->netDeviceVersion = 0;
    props->vProps.ndevs = 1;
    props->vProps.devs[0] = dev;
    size_t max = (size_t)1 << 30;
    props->maxP2pBytes = props->maxCollBytes = d->max_msg < max ? d->max_msg : max;
    props->maxMultiRequestSize = 1;
    return ncclSuccess;
}

/* ---- listen, connect, accept ---- */

/* What listen() publishes in the 128-byte handle. */
struct ofi_handle {
    uint64_t tag; /* BT_OFI_TAG */
    uint64_t id;  /* random per listener; the hello repeats it */
    uint32_t namelen;
    uint32_t pad;
    unsigned char name[BT_NET_HANDLE_BYTES - 24]; /* the listener's endpoint */
};
_Static_assert(sizeof(struct ofi_handle) == BT_NET_HANDLE_BYTES, "handle size");

static ncclResult_t ofi_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
    (void)ctx;
    *listen_comm = NULL;
    struct bt_ofi_dev *d = dev_get(dev, "listen");
    if (d == NULL)
        return ncclInvalidArgument;
    struct bt_ofi_comm *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        BT_WARN("NET/OFI: out of memory for a listen comm");
        return ncclSystemError;
    }
    l->kind = BT_OFI_LISTEN;
    bt_status_t st = bt_ofi_eps_open(d, 1, &l->eps);
    if (st != BT_OK) {
        free(l);
        return (ncclResult_t)st;
    }
    struct ofi_handle h = {.tag = BT_OFI_TAG, .id = bt_random_u64()};
    if (l->eps->namelen[0] > sizeof(h.name)) {
        BT_WARN("NET/OFI: %s's endpoint name has %zu bytes, more than a handle holds (%zu)",
                d->name, l->eps->namelen[0], sizeof(h.name));
        bt_ofi_comm_free(l);
        return ncclInternalError;
    }
    l->eps->id = h.id;
    h.namelen = (uint32_t)l->eps->namelen[0];
    memcpy(h.name, l->eps->name[0], h.namelen);
    memcpy(handle, &h, sizeof(h));
    st = bt_ofi_hello_post(l);
    if (st != BT_OK) {
        bt_ofi_comm_free(l);
        return (ncclResult_t)st;
    }
    BT_INFO(BT_LOG_NET, "NET/OFI: listening on %s (id %016llx)", d->name, (unsigned long long)h.id);
    *listen_comm = l;
    return ncclSuccess;
}

/* The send comm is complete when made (see the top of the file): no NULL-comm rounds. */
static ncclResult_t ofi_connect(void *ctx, int dev, void *handle, void **send_comm,
                                ncclNetDeviceHandle_v11_t **dev_comm)
{
    (void)ctx;
    *send_comm = NULL;
    if (dev_comm)
        *dev_comm = NULL;
    struct ofi_handle h;
    memcpy(&h, handle, sizeof(h));
    if (h.tag != BT_OFI_TAG || h.namelen == 0 || h.namelen > sizeof(h.name)) {
        BT_WARN("NET/OFI: connect with a handle that listen() did not make (tag 0x%llx)",
                (unsigned long long)h.tag);
        return ncclInvalidArgument;
    }
    struct bt_ofi_dev *d = dev_get(dev, "connect");
    if (d == NULL)
        return ncclInvalidArgument;
    struct bt_ofi_comm *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        BT_WARN("NET/OFI: out of memory for a send comm");
        return ncclSystemError;
    }
    c->kind = BT_OFI_SEND;
    bt_status_t st = bt_ofi_eps_open(d, bt_net_ofi_neps(), &c->eps);
    if (st != BT_OK) {
        free(c);
        return (ncclResult_t)st;
    }
    struct bt_ofi_eps *e = c->eps;
    c->parts = e->n;
    bt_ofi_lock();
    int rc = fi_av_insert(e->av, h.name, 1, &c->peer, 0, NULL);
    bt_ofi_unlock();
    if (rc != 1) {
        bt_ofi_fail("fi_av_insert", rc < 0 ? rc : -FI_EINVAL, "of the listener's address");
        bt_ofi_comm_free(c);
        return ncclInternalError;
    }
    struct bt_ofi_hello *hello = &e->ctl->hello;
    memset(hello, 0, sizeof(*hello));
    hello->tag = BT_OFI_TAG;
    hello->id = h.id;
    hello->neps = (uint32_t)e->n;
    for (int i = 0; i < e->n; i++) {
        hello->namelen[i] = (uint32_t)e->namelen[i];
        memcpy(hello->names[i], e->name[i], e->namelen[i]);
    }
    st = bt_ofi_hello_post(c);
    if (st == BT_OK)
        st = bt_ofi_comm_progress(c);
    if (st != BT_OK) {
        bt_ofi_comm_free(c);
        return (ncclResult_t)st;
    }
    BT_INFO(BT_LOG_NET, "NET/OFI: connecting on %s to listener %016llx with %d endpoint%s", d->name,
            (unsigned long long)h.id, e->n, e->n > 1 ? "s" : "");
    *send_comm = c;
    return ncclSuccess;
}

static void ofi_connect_cancel(void *ctx, int dev, void *handle)
{
    (void)ctx, (void)dev, (void)handle; /* connect() keeps nothing pending */
}

/* The recv comm is made at once too: the hello needs the sender to progress its comm, which
 * it does only once it sends. The hello is checked when it arrives (ofi_comm.c).
 * caller: the thread that owns the listen comm. */
static ncclResult_t ofi_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v11_t **dev_comm)
{
    struct bt_ofi_comm *l = listen_comm;
    *recv_comm = NULL;
    if (dev_comm)
        *dev_comm = NULL;
    if (l->eps == NULL) {
        BT_WARN("NET/OFI: a second accept on a listener (one connection each)");
        return ncclInvalidUsage;
    }
    bt_status_t st = bt_ofi_comm_progress(l);
    if (st != BT_OK)
        return (ncclResult_t)st;
    struct bt_ofi_comm *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        BT_WARN("NET/OFI: out of memory for a recv comm");
        return ncclSystemError;
    }
    r->kind = BT_OFI_RECV;
    r->eps = l->eps;
    l->eps = NULL; /* the recv comm owns the endpoint now: closing it closes the endpoint */
    BT_INFO(BT_LOG_NET, "NET/OFI: listener %016llx accepts", (unsigned long long)r->eps->id);
    *recv_comm = r;
    return ncclSuccess;
}

static ncclResult_t ofi_close(void *comm)
{
    bt_ofi_comm_free(comm);
    return ncclSuccess;
}

/* ---- registration ---- */

static ncclResult_t ofi_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
    struct bt_ofi_comm *c = comm;
    *mhandle = NULL;
    if (c->eps == NULL) {
        BT_WARN("NET/OFI: regMr on a listen comm that has accepted");
        return ncclInvalidUsage;
    }
    struct bt_ofi_dev *d = c->eps->dev;
    if (type != NCCL_PTR_HOST && !(type == NCCL_PTR_CUDA && d->hmem)) {
        BT_WARN("NET/OFI: regMr of a buffer of type %d on %s, which takes %s", type, d->name,
                d->hmem ? "host and CUDA buffers" : "host buffers");
        return ncclInternalError;
    }
    struct bt_ofi_mr *mr = NULL;
    bt_status_t st = bt_ofi_mr_register(c->eps, data, size, type == NCCL_PTR_CUDA, &mr);
    if (st != BT_OK)
        return (ncclResult_t)st;
    *mhandle = mr;
    return ncclSuccess;
}

static ncclResult_t ofi_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mhandle)
{
    (void)offset, (void)fd;
    if (type != NCCL_PTR_HOST) {
        BT_WARN("NET/OFI: regMrDmaBuf of a buffer of type %d: DMA-BUF is not supported", type);
        *mhandle = NULL;
        return ncclInternalError;
    }
    return ofi_reg_mr(comm, data, size, type, mhandle);
}

static ncclResult_t ofi_dereg_mr(void *comm, void *mhandle)
{
    (void)comm;
    bt_ofi_mr_close(mhandle);
    return ncclSuccess;
}

/* ---- data ---- */

static ncclResult_t ofi_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request)
{
    (void)tag, (void)phandle; /* messages match in posting order */
    return (ncclResult_t)bt_ofi_isend(send_comm, data, size, mhandle, request);
}

static ncclResult_t ofi_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request)
{
    (void)tags, (void)phandles;
    *request = NULL;
    if (n != 1) {
        BT_WARN("NET/OFI: irecv of %d buffers (maxRecvs is 1)", n);
        return ncclInvalidArgument;
    }
    return (ncclResult_t)bt_ofi_irecv(recv_comm, data[0], sizes[0], mhandles ? mhandles[0] : NULL,
                                      request);
}

/* Host memory and CUDA memory through the provider: nothing to flush. */
static ncclResult_t ofi_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                               void **request)
{
    (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
    *request = NULL;
    return ncclSuccess;
}

static ncclResult_t ofi_test(void *request, int *done, int *sizes)
{
    size_t size = 0;
    bt_status_t st = bt_ofi_test(request, done, &size);
    if (st == BT_OK && *done && sizes)
        sizes[0] = size > INT_MAX ? INT_MAX : (int)size; /* receives are at most maxP2pBytes */
    return (ncclResult_t)st;
}

static ncclResult_t ofi_get_device_mr(void *comm, void *mhandle, void **dptr_mhandle)
{
    (void)comm, (void)mhandle;
    *dptr_mhandle = NULL;
    return ncclSuccess;
}

static ncclResult_t ofi_irecv_consumed(void *recv_comm, int n, void *request)
{
    (void)recv_comm, (void)n, (void)request;
    return ncclSuccess;
}

/* A virtual device of one physical device is that device; fusing several is not offered. */
static ncclResult_t ofi_make_vdevice(int *d, ncclNetVDeviceProps_v11_t *props)
{
    int ndev = 0;
    ofi_devices(&ndev);
    if (props->ndevs != 1 || props->devs[0] < 0 || props->devs[0] >= ndev) {
        BT_WARN("NET/OFI: cannot make a virtual device of %d devices", props->ndevs);
        return ncclInvalidUsage;
    }
    *d = props->devs[0];
    return ncclSuccess;
}

static ncclResult_t ofi_set_net_attr(void *ctx, ncclNetAttr_v11_t *attr)
{
    (void)ctx, (void)attr;
    return ncclSuccess;
}

/* A software provider (tcp, shm, udp) reads and writes through the process's own mappings:
 * a registration pins nothing. A NIC's does. */
static int ofi_zero_copy_safe(int dev)
{
    struct bt_ofi_dev *d = dev_get(dev, "zero_copy_safe");
    return d != NULL && !d->hardware;
}

static int ofi_pollfds(void *comm, struct pollfd *fds, int max)
{
    return bt_ofi_comm_pollfds(comm, fds, max);
}

static const ncclNet_v11_t ofi_v11 = {
    .name = "OFI",
    .init = ofi_init,
    .devices = ofi_devices,
    .getProperties = ofi_get_properties,
    .listen = ofi_listen,
    .connect = ofi_connect,
    .accept = ofi_accept,
    .regMr = ofi_reg_mr,
    .regMrDmaBuf = ofi_reg_mr_dmabuf,
    .deregMr = ofi_dereg_mr,
    .isend = ofi_isend,
    .irecv = ofi_irecv,
    .iflush = ofi_iflush,
    .test = ofi_test,
    .closeSend = ofi_close,
    .closeRecv = ofi_close,
    .closeListen = ofi_close,
    .getDeviceMr = ofi_get_device_mr,
    .irecvConsumed = ofi_irecv_consumed,
    .makeVDevice = ofi_make_vdevice,
    .finalize = ofi_finalize,
    .setNetAttr = ofi_set_net_attr,
};

const struct bt_net_backend bt_net_ofi = {
    .v11 = &ofi_v11,
    .ext =
        {
            .pollfds = ofi_pollfds,
            .connect_cancel = ofi_connect_cancel,
            .zero_copy_safe = ofi_zero_copy_safe,
        },
};

#endif /* BATON_HAVE_OFI */
