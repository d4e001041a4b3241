/*
 * The topology text format (TOPO_FILE reads it, TOPO_DUMP_FILE and baton-topo write it).
 * One item per line, '#' starts a comment; a node's parent must come before it:
 *
 *   nvlink_bw 25                      GB/s per NVLink (default 25)
 *   sys_bw 20                         GB/s between NUMA nodes (default 20)
 *   numa 0 cpus 0-31                  a NUMA node, named numa0
 *   pci rc0 parent numa0 root         a PCIe host bridge (root complex)
 *   pci sw0 parent rc0 gen 5 width 16 [max_gen 5 max_width 16] [bw 63]
 *   gpu 0 gpu0 parent sw0 gen 5 width 16    GPU index 0, named gpu0
 *   nic mlx5_0 parent sw0 speed 400 gen 5 width 16
 *   nvlink 0 1 18                     18 NVLinks between GPUs 0 and 1
 *
 * gen/width describe the link from the node to its parent; bw overrides what they imply.
 */
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"
#include "util/log.h"

static int find(const struct bt_topo *t, const char *name)
{
    for (int i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].name, name) == 0)
            return i;
    return -1;
}

/* key value pairs after the fixed words of a line */
static int attrs(struct bt_topo *t, struct bt_topo_node *n, char **tok, int ntok, int *parent,
                 const char *path, int line)
{
    for (int i = 0; i < ntok; i++) {
        const char *k = tok[i];
        if (strcmp(k, "root") == 0) {
            n->is_root = 1;
            continue;
        }
        if (i + 1 >= ntok) {
            BT_WARN("%s:%d: '%s' needs a value", path, line, k);
            return -1;
        }
        const char *v = tok[++i];
        if (strcmp(k, "parent") == 0) {
            *parent = find(t, v);
            if (*parent < 0) {
                BT_WARN("%s:%d: parent '%s' is not defined above", path, line, v);
                return -1;
            }
        } else if (strcmp(k, "gen") == 0) {
            n->gen = atoi(v);
        } else if (strcmp(k, "width") == 0) {
            n->width = atoi(v);
        } else if (strcmp(k, "max_gen") == 0) {
            n->max_gen = atoi(v);
        } else if (strcmp(k, "max_width") == 0) {
            n->max_width = atoi(v);
        } else if (strcmp(k, "bw") == 0) {
            n->bw = atof(v);
        } else if (strcmp(k, "speed") == 0) {
            n->speed_gbps = atof(v);
        } else if (strcmp(k, "cpus") == 0) {
            snprintf(n->cpus, sizeof(n->cpus), "%s", v);
        } else {
            BT_WARN("%s:%d: unknown attribute '%s'", path, line, k);
            return -1;
        }
    }
    return 0;
}

bt_status_t bt_topo_load(const char *path, struct bt_topo *t)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        BT_WARN("TOPO_FILE %s: cannot open it", path);
        return BT_ERR_INVALID_ARG;
    }
    memset(t, 0, sizeof(*t));
    char buf[512];
    int line = 0;
    bt_status_t st = BT_OK;
    while (st == BT_OK && fgets(buf, sizeof(buf), f)) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *tok[32], *save = NULL;
        int ntok = 0;
        for (char *w = strtok_r(buf, " \t\r\n", &save); w && ntok < 32;
             w = strtok_r(NULL, " \t\r\n", &save))
            tok[ntok++] = w;
        if (ntok == 0)
            continue;
        const char *kw = tok[0];
        if ((strcmp(kw, "nvlink_bw") == 0 || strcmp(kw, "sys_bw") == 0) && ntok == 2) {
            *(kw[0] == 'n' ? &t->nvlink_bw : &t->sys_bw) = atof(tok[1]);
        } else if (strcmp(kw, "nvlink") == 0 && ntok == 4) {
            int a = atoi(tok[1]), b = atoi(tok[2]);
            if (a < 0 || b < 0 || a >= BT_TOPO_MAX_GPUS || b >= BT_TOPO_MAX_GPUS) {
                BT_WARN("%s:%d: GPU index out of range", path, line);
                st = BT_ERR_INVALID_ARG;
            } else {
                t->nvlinks[a][b] = t->nvlinks[b][a] = atoi(tok[3]);
            }
        } else if (strcmp(kw, "numa") == 0 && ntok >= 2) {
            char name[BT_TOPO_NAME];
            snprintf(name, sizeof(name), "numa%s", tok[1]);
            int i = bt_topo_add(t, BT_TOPO_NUMA, name, -1);
            int parent = -1;
            if (i < 0 || attrs(t, &t->nodes[i], tok + 2, ntok - 2, &parent, path, line) != 0)
                st = BT_ERR_INVALID_ARG;
            else
                t->nodes[i].numa = atoi(tok[1]);
        } else if ((strcmp(kw, "pci") == 0 || strcmp(kw, "nic") == 0) && ntok >= 2) {
            int kind = kw[0] == 'p' ? BT_TOPO_PCI : BT_TOPO_NIC;
            int i = bt_topo_add(t, kind, tok[1], -1);
            int parent = -1;
            if (i < 0 || attrs(t, &t->nodes[i], tok + 2, ntok - 2, &parent, path, line) != 0)
                st = BT_ERR_INVALID_ARG;
            else
                t->nodes[i].parent = parent;
        } else if (strcmp(kw, "gpu") == 0 && ntok >= 3) {
            int i = bt_topo_add(t, BT_TOPO_GPU, tok[2], -1);
            int parent = -1;
            if (i < 0 || attrs(t, &t->nodes[i], tok + 3, ntok - 3, &parent, path, line) != 0) {
                st = BT_ERR_INVALID_ARG;
            } else {
                t->nodes[i].parent = parent;
                t->nodes[i].gpu = atoi(tok[1]);
            }
        } else {
            BT_WARN("%s:%d: cannot read '%s'", path, line, kw);
            st = BT_ERR_INVALID_ARG;
        }
    }
    fclose(f);
    if (st == BT_OK)
        st = bt_topo_finish(t);
    return st;
}

static void save_link(const struct bt_topo_node *n, FILE *out)
{
    if (n->gen)
        fprintf(out, " gen %d width %d", n->gen, n->width);
    if (n->max_gen)
        fprintf(out, " max_gen %d max_width %d", n->max_gen, n->max_width);
    if (!n->gen && n->bw > 0)
        fprintf(out, " bw %g", n->bw);
}

bt_status_t bt_topo_save(const struct bt_topo *t, FILE *out)
{
    fprintf(out, "# baton topology\nnvlink_bw %g\nsys_bw %g\n", t->nvlink_bw, t->sys_bw);
    for (int i = 0; i < t->nnodes; i++) {
        const struct bt_topo_node *n = &t->nodes[i];
        const char *parent = n->parent >= 0 ? t->nodes[n->parent].name : "";
        switch (n->kind) {
        case BT_TOPO_NUMA:
            fprintf(out, "numa %d", n->numa);
            if (n->cpus[0])
                fprintf(out, " cpus %s", n->cpus);
            break;
        case BT_TOPO_PCI:
            fprintf(out, "pci %s parent %s%s", n->name, parent, n->is_root ? " root" : "");
            save_link(n, out);
            break;
        case BT_TOPO_GPU:
            fprintf(out, "gpu %d %s parent %s", n->gpu, n->name, parent);
            save_link(n, out);
            break;
        default:
            fprintf(out, "nic %s parent %s", n->name, parent);
            if (n->speed_gbps > 0)
                fprintf(out, " speed %g", n->speed_gbps);
            save_link(n, out);
            break;
        }
        fprintf(out, "\n");
    }
    for (int a = 0; a < t->ngpus; a++)
        for (int b = a + 1; b < t->ngpus; b++)
            if (t->nvlinks[a][b] > 0)
                fprintf(out, "nvlink %d %d %d\n", a, b, t->nvlinks[a][b]);
    return BT_OK;
}
