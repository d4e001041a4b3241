/*
 * Device communicators (NCCL's ncclDevCommCreate): what kernels written against the device
 * API get by value (struct ncclDevComm, include/nccl_device/layout.h). Its resources live in
 * a resource window: one buffer every rank registers symmetrically, holding the LSA barriers
 * and every buffer the requirement list asks for, at 128-byte units (the handles); each LSA
 * team (the ranks of a host) maps its members' flat (core/window.h). A GIN context is given
 * where asked: proxy type, served by a GIN proxy of its own (transport/gin_proxy.h) over the
 * communicator's network, to every rank. Multimem is refused, naming what was asked.
 */
#ifndef BT_CORE_DEVCOMM_H
#define BT_CORE_DEVCOMM_H

#include "core/devcomm_abi.h"
#include "util/status.h"

struct bt_comm;
struct bt_devcomm;

/* Collective over comm's ranks: lay out, allocate and register the resources `reqs` asks
 * for (its requirement lists' out-handles are written) and fill *out, an ncclDevComm in the
 * layout of the program's release (core/devcomm_abi.h). */
bt_status_t bt_devcomm_create(struct bt_comm *comm, const struct bt_devcomm_reqs *reqs, void *out);

/* Local: free what bt_devcomm_create made for the ncclDevComm at dc (any release's layout,
 * found by its resource window); the comm's kernels using it must be done.
 * BT_ERR_INVALID_ARG: not one of comm's. */
bt_status_t bt_devcomm_destroy(struct bt_comm *comm, const void *dc);

/* The comm is aborted: raise its device communicators' abort flag (kernels written against
 * NCCL 2.29.5+'s headers poll it while they wait). Any thread. */
void bt_devcomm_abort(struct bt_comm *comm);

/* At the comm's end: every device communicator it still has, and their abort flag. */
void bt_devcomm_free_all(struct bt_comm *comm);

#endif
