/*
 * Topology discovery from /sys and the GPU driver:
 *   NUMA nodes      /sys/devices/system/node/node*\/cpulist (one node if there are none)
 *   PCIe tree       the real path of each device under /sys/devices: pciDDDD:BB is a host
 *                   bridge, each DDDD:BB:DD.F on the way a bridge or switch port; link
 *                   speed and width (current and maximum) from each device's attributes
 *   GPUs            CUDA devices by PCI bus id (exec/cuda: none without CUDA)
 *   NICs            /sys/class/net/<if> with a device link (virtual interfaces have none),
 *                   speed from .../speed (Mbit/s), NUMA node from the device
 *   NVLink          NVML loaded with dlopen: per GPU, the active links and the PCI bus id
 *                   at their far end (another GPU, or an NVSwitch shared by every GPU)
 * Every step that cannot read something leaves it out and says so at INFO level.
 */
#define _GNU_SOURCE /* realpath */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "device/device.h"
#include "topo/topo.h"
#include "util/log.h"

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* "16.0 GT/s PCIe" -> 4 (the generation with that rate) */
static int gen_of_speed(const char *s)
{
    double gts = atof(s);
    return gts >= 60 ? 6 : gts >= 30 ? 5 : gts >= 15 ? 4 : gts >= 7 ? 3 : gts >= 4 ? 2 : gts > 0;
}

static void read_link(const char *dir, struct bt_topo_node *n)
{
    char p[PATH_MAX + 64], v[64];
    snprintf(p, sizeof(p), "%s/current_link_speed", dir);
    if (read_line(p, v, sizeof(v)) == 0)
        n->gen = gen_of_speed(v);
    snprintf(p, sizeof(p), "%s/current_link_width", dir);
    if (read_line(p, v, sizeof(v)) == 0)
        n->width = atoi(v);
    snprintf(p, sizeof(p), "%s/max_link_speed", dir);
    if (read_line(p, v, sizeof(v)) == 0)
        n->max_gen = gen_of_speed(v);
    snprintf(p, sizeof(p), "%s/max_link_width", dir);
    if (read_line(p, v, sizeof(v)) == 0)
        n->max_width = atoi(v);
}

static int numa_node_of(struct bt_topo *t, const char *devdir)
{
    char p[PATH_MAX + 64], v[32];
    snprintf(p, sizeof(p), "%s/numa_node", devdir);
    int id = read_line(p, v, sizeof(v)) == 0 ? atoi(v) : 0;
    if (id < 0)
        id = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == BT_TOPO_NUMA && t->nodes[i].numa == id)
            return i;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == BT_TOPO_NUMA)
            return i;
    return -1;
}

static int find(const struct bt_topo *t, const char *name)
{
    for (int i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].name, name) == 0)
            return i;
    return -1;
}

/* Add the PCIe chain of device `real` (a /sys/devices path) and return the parent node the
 * device itself hangs from. */
static int pci_chain(struct bt_topo *t, const char *real)
{
    const char *p = strstr(real, "/pci");
    if (!p)
        return -1;
    int numa = numa_node_of(t, real);
    char *save = NULL, *comp;
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", p + 1);
    int parent = numa;
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - real), real);
    /* components: pciDDDD:BB, then BDFs; the last BDF is the device itself */
    char *comps[64];
    int nc = 0;
    for (comp = strtok_r(copy, "/", &save); comp && nc < 64; comp = strtok_r(NULL, "/", &save))
        comps[nc++] = comp;
    /* the device is the last component that looks like a BDF (NICs may add virtio etc.) */
    int last = nc - 1;
    while (last > 0 && strchr(comps[last], ':') == NULL)
        last--;
    char acc[PATH_MAX];
    snprintf(acc, sizeof(acc), "%s", prefix);
    for (int i = 0; i < last; i++) {
        size_t len = strlen(acc);
        snprintf(acc + len, sizeof(acc) - len, "/%s", comps[i]);
        int node = find(t, comps[i]);
        if (node < 0) {
            node = bt_topo_add(t, BT_TOPO_PCI, comps[i], parent);
            if (node < 0)
                return -1;
            t->nodes[node].is_root = i == 0;
            if (i > 0)
                read_link(acc, &t->nodes[node]);
        }
        parent = node;
    }
    return parent;
}

static void add_numa_nodes(struct bt_topo *t)
{
    DIR *d = opendir("/sys/devices/system/node");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "node", 4) != 0 || e->d_name[4] < '0' || e->d_name[4] > '9')
            continue;
        char p[PATH_MAX];
        int id = atoi(e->d_name + 4);
        char name[BT_TOPO_NAME];
        snprintf(name, sizeof(name), "numa%d", id);
        int i = bt_topo_add(t, BT_TOPO_NUMA, name, -1);
        if (i < 0)
            break;
        t->nodes[i].numa = id;
        snprintf(p, sizeof(p), "/sys/devices/system/node/%s/cpulist", e->d_name);
        read_line(p, t->nodes[i].cpus, sizeof(t->nodes[i].cpus));
    }
    if (d)
        closedir(d);
    if (t->nnodes == 0)
        bt_topo_add(t, BT_TOPO_NUMA, "numa0", -1);
}

static void add_gpus(struct bt_topo *t)
{
    int n = bt_device_count();
    for (int g = 0; g < n && g < BT_TOPO_MAX_GPUS; g++) {
        char bus[64], sys[PATH_MAX], real[PATH_MAX] = "";
        if (bt_device_bus_id(g, bus, sizeof(bus)) != BT_OK)
            continue;
        for (char *c = bus; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
        snprintf(sys, sizeof(sys), "/sys/bus/pci/devices/%s", bus);
        char name[BT_TOPO_NAME];
        snprintf(name, sizeof(name), "gpu%d", g);
        int parent = realpath(sys, real) ? pci_chain(t, real) : -1;
        if (parent < 0) {
            BT_INFO(BT_LOG_INIT, "topology: GPU %d (%s) not found under /sys; placed on NUMA 0", g,
                    bus);
            parent = numa_node_of(t, "/nonexistent");
        }
        int i = bt_topo_add(t, BT_TOPO_GPU, name, parent);
        if (i < 0)
            return;
        t->nodes[i].gpu = g;
        snprintf(t->nodes[i].bus, sizeof(t->nodes[i].bus), "%s", bus);
        if (parent >= 0 && real[0])
            read_link(real, &t->nodes[i]);
    }
}

static void add_nics(struct bt_topo *t)
{
    DIR *d = opendir("/sys/class/net");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX], real[PATH_MAX], v[32];
        snprintf(p, sizeof(p), "/sys/class/net/%s/device", e->d_name);
        if (!realpath(p, real))
            continue; /* lo, bridges, veths: no device */
        int parent = pci_chain(t, real);
        if (parent < 0)
            continue;
        int i = bt_topo_add(t, BT_TOPO_NIC, e->d_name, parent);
        if (i < 0)
            break;
        snprintf(p, sizeof(p), "/sys/class/net/%s/speed", e->d_name);
        if (read_line(p, v, sizeof(v)) == 0 && atoi(v) > 0)
            t->nodes[i].speed_gbps = atoi(v) / 1000.0;
        read_link(real, &t->nodes[i]);
    }
    if (d)
        closedir(d);
}

/* NVML, by dlopen: the few calls and types used (nvml.h's values). */
typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvml_pci_t;

static void add_nvlinks(struct bt_topo *t)
{
    if (t->ngpus < 2)
        return;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        BT_INFO(BT_LOG_INIT, "topology: no NVML (%s): NVLinks unknown", dlerror());
        return;
    }
    int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
    int (*by_bus)(const char *, void **) =
        (int (*)(const char *, void **))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    int (*state)(void *, unsigned, int *) =
        (int (*)(void *, unsigned, int *))dlsym(lib, "nvmlDeviceGetNvLinkState");
    int (*remote)(void *, unsigned, nvml_pci_t *) =
        (int (*)(void *, unsigned, nvml_pci_t *))dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    int (*shutdown)(void) = (int (*)(void))dlsym(lib, "nvmlShutdown");
    if (!init || !by_bus || !state || !remote || init() != 0) {
        BT_INFO(BT_LOG_INIT, "topology: NVML unusable: NVLinks unknown");
        dlclose(lib);
        return;
    }
    char bus[BT_TOPO_MAX_GPUS][64];
    for (int g = 0; g < t->ngpus; g++)
        if (bt_device_bus_id(g, bus[g], sizeof(bus[g])) != BT_OK)
            bus[g][0] = '\0';
    int switch_links[BT_TOPO_MAX_GPUS] = {0};
    for (int g = 0; g < t->ngpus; g++) {
        void *h = NULL;
        if (!bus[g][0] || by_bus(bus[g], &h) != 0)
            continue;
        for (unsigned l = 0; l < 18; l++) {
            int active = 0;
            nvml_pci_t pci;
            if (state(h, l, &active) != 0 || !active || remote(h, l, &pci) != 0)
                continue;
            int peer = -1;
            for (int q = 0; q < t->ngpus; q++)
                if (q != g && strcasecmp(pci.busId, bus[q]) == 0)
                    peer = q;
            if (peer >= 0)
                t->nvlinks[g][peer]++;
            else
                switch_links[g]++; /* an NVSwitch: every GPU on one reaches the others */
        }
    }
    for (int a = 0; a < t->ngpus; a++)
        for (int b = 0; b < t->ngpus; b++)
            if (a != b && switch_links[a] && switch_links[b] && !t->nvlinks[a][b])
                t->nvlinks[a][b] =
                    switch_links[a] < switch_links[b] ? switch_links[a] : switch_links[b];
    if (shutdown)
        shutdown();
    dlclose(lib);
}

bt_status_t bt_topo_discover(struct bt_topo *t)
{
    memset(t, 0, sizeof(*t));
    add_numa_nodes(t);
    add_gpus(t);
    add_nics(t);
    bt_status_t st = bt_topo_finish(t);
    if (st == BT_OK) {
        add_nvlinks(t);
        st = bt_topo_finish(t);
    }
    return st;
}
