/*
 * Device communicators (NCCL's ncclDevCommCreate): what kernels written against the device
 * API get by value (struct ncclDevComm, include/nccl_device/layout.h). Its resources live in
 * a resource window: one buffer every rank registers symmetrically, holding the LSA barriers
 * and every buffer the requirement list asks for, at 128-byte units (the handles). So far
 * the LSA team only: every rank on one host (their windows flat-mapped) or a world of one. A
 * GIN context is given where asked (proxy type: signals, counters and the GIN barriers of
 * one-rank rail teams work; puts and signals to other ranks are not carried yet); teams
 * across hosts and multimem are refused, naming what was asked.
 */
#ifndef BT_CORE_DEVCOMM_H
#define BT_CORE_DEVCOMM_H

#include "nccl_device/layout.h"
#include "util/status.h"

struct bt_comm;
struct bt_devcomm;

/* Collective over comm's ranks: lay out, allocate and register the resources `reqs` asks
 * for (its requirement lists' out-handles are written) and fill *out. */
bt_status_t bt_devcomm_create(struct bt_comm *comm, const struct ncclDevCommRequirements *reqs,
                              struct ncclDevComm *out);

/* Local: free what bt_devcomm_create made for *dc (found by its resource window); the
 * comm's kernels using it must be done. BT_ERR_INVALID_ARG: not one of comm's. */
bt_status_t bt_devcomm_destroy(struct bt_comm *comm, const struct ncclDevComm *dc);

/* At the comm's end: every device communicator it still has. */
void bt_devcomm_free_all(struct bt_comm *comm);

#endif
