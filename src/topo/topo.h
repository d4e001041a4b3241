/*
 * The machine as Baton sees it: a tree of PCIe nodes under
 * NUMA nodes (CPU sockets), with GPUs and NICs as leaves, NVLink counts between GPUs, and
 * the bandwidth of each link. From it: the path class and bandwidth between any two
 * devices, rings over the GPUs that avoid narrow links, and each GPU's nearest NIC.
 *
 * Path classes, nearest first (NCCL's names):
 *   NVL   GPU to GPU over NVLink
 *   PIX   through one PCIe switch        PXB  through several PCIe switches
 *   PHB   through a PCIe host bridge (the root complex of one CPU)
 *   NODE  between root complexes of one NUMA node      SYS  across NUMA nodes (CPU link)
 *   NET   another host
 *
 * Sources: discovery (topo/discover.c: /sys and the CUDA driver) or a text file
 * (TOPO_FILE; TOPO_DUMP_FILE writes one), format in topo/topo_file.c.
 */
#ifndef BT_TOPO_TOPO_H
#define BT_TOPO_TOPO_H

#include <stdio.h>

#include "util/status.h"

#define BT_TOPO_MAX_NODES 128
#define BT_TOPO_MAX_GPUS 32
#define BT_TOPO_NAME 32

enum bt_topo_kind {
    BT_TOPO_NUMA = 0, /* a CPU socket / NUMA node: the roots of the tree */
    BT_TOPO_PCI,      /* a PCIe host bridge (root complex) or switch */
    BT_TOPO_GPU,
    BT_TOPO_NIC,
};

enum bt_path {
    BT_PATH_NVL = 0,
    BT_PATH_PIX,
    BT_PATH_PXB,
    BT_PATH_PHB,
    BT_PATH_NODE,
    BT_PATH_SYS,
    BT_PATH_NET,
    BT_NUM_PATHS,
};

struct bt_topo_node {
    int kind; /* enum bt_topo_kind */
    char name[BT_TOPO_NAME];
    int parent;             /* index of the parent node, -1 for NUMA nodes */
    int numa;               /* NUMA node id (NUMA nodes: their own) */
    int is_root;            /* PCI: a host bridge (root complex) rather than a switch */
    double bw;              /* GB/s of the link to the parent (PCIe: from gen x width) */
    int gen, width;         /* PCIe link now (0: unknown) */
    int max_gen, max_width; /* what the link could do */
    int gpu;                /* GPU: its index (CUDA device) */
    char bus[64];           /* GPU: PCI bus id, lower case (discovered; empty from a file) */
    double speed_gbps;      /* NIC: line rate */
    char cpus[256];         /* NUMA: cpu list, as /sys prints it (may be cut short) */
};

struct bt_topo {
    int nnodes;
    struct bt_topo_node nodes[BT_TOPO_MAX_NODES];
    int ngpus;
    int gpu_node[BT_TOPO_MAX_GPUS];                  /* GPU index -> node */
    int nvlinks[BT_TOPO_MAX_GPUS][BT_TOPO_MAX_GPUS]; /* NVLink count between GPUs */
    double nvlink_bw;                                /* GB/s per link */
    double sys_bw;                                   /* GB/s between NUMA nodes */
};

struct bt_topo_path {
    int cls;    /* enum bt_path */
    double bw;  /* GB/s: the narrowest link on the way */
    double lat; /* us, by class */
};

/* Add a node; returns its index or -1 when full. */
int bt_topo_add(struct bt_topo *t, int kind, const char *name, int parent);
/* GB/s of a PCIe link of generation `gen` and `width` lanes (per direction). */
double bt_topo_pcie_bw(int gen, int width);
/* Fill derived fields (GPU index table, bandwidths of links with gen/width); call after
 * building or loading. Returns BT_ERR_INVALID_ARG (logged) on an inconsistent tree. */
bt_status_t bt_topo_finish(struct bt_topo *t);

/* The path between two nodes (GPUs or NICs). */
struct bt_topo_path bt_topo_path(const struct bt_topo *t, int a, int b);
const char *bt_topo_path_name(int cls);
/* A path class by name (NVL, PIX, PXB, PHB, NODE, SYS, case-insensitive; LOC: -1, below
 * every class), or -2 when `s` names none. For P2P_LEVEL. */
int bt_topo_path_parse(const char *s);

/* The topology's GPU for a rank's CUDA device: by PCI bus id when the topology was
 * discovered (device numbers differ between processes with different
 * CUDA_VISIBLE_DEVICES), by device number when it was read from a file. -1: not there. */
int bt_topo_gpu_index(const struct bt_topo *t, const char *bus, int dev);

/*
 * A ring over all GPUs (order[0..ngpus)) along the widest paths: graph/ring_plan.h's search
 * over the path bandwidth matrix. Returns the bottleneck bandwidth in GB/s. Channel c's ring
 * is bt_ring_channel_order(order, ngpus, c, ...).
 */
double bt_topo_ring(const struct bt_topo *t, int *order);

/* Ranks on GPUs: gpu[r] is rank r's topology GPU (bt_topo_gpu_index; NULL: rank i on GPU i).
 * bw[a * n + b]: GB/s of the path from a's GPU to b's (0 on one GPU), for graph/ring_plan.h.
 * The ring over the ranks along the widest paths (best[n]); returns the bottleneck in GB/s. */
void bt_topo_bw_matrix(const struct bt_topo *t, int n, const int *gpu, double *bw);
double bt_topo_rank_ring(const struct bt_topo *t, int n, const int *gpu, int *best);

/* P2P_LEVEL: 1 when every pair of the ranks' GPUs is within path class `level` (enum
 * bt_path; -1: none is), else 0 with the first pair beyond it in *a, *b. */
int bt_topo_p2p_within(const struct bt_topo *t, int n, const int *gpu, int level, int *a, int *b);

/* The CPUs of NUMA node `numa` as /sys lists them ("0-31,64-95"), or NULL when unknown. */
const char *bt_topo_numa_cpulist(const struct bt_topo *t, int numa);

/* Each GPU's NIC (node index, -1 without NICs): the nearest path class, then the widest,
 * then the least used so GPUs spread over equally near NICs (rails). */
void bt_topo_nics(const struct bt_topo *t, int *nic_of_gpu);

/* Problems worth a warning, one line each into `out`: a PCIe link below its capability,
 * GPU pairs without P2P (SYS), a GPU whose NIC is on another NUMA node. Returns the count. */
int bt_topo_warnings(const struct bt_topo *t, FILE *out);

/* topo_file.c: the text format. */
bt_status_t bt_topo_load(const char *path, struct bt_topo *t);
bt_status_t bt_topo_save(const struct bt_topo *t, FILE *out);

/* discover.c: this machine from /sys (NUMA nodes, PCIe tree of GPUs and NICs) and the CUDA
 * driver (GPU bus ids; NVLink through peer access). */
bt_status_t bt_topo_discover(struct bt_topo *t);

/* TOPO_FILE if set, else discovery; with `dump`, TOPO_DUMP_FILE (if set) gets what was found
 * (one caller per machine should: ranks of a job share the file). */
bt_status_t bt_topo_get(struct bt_topo *t, int dump);

#endif
