/*
 * CUDA mode, as the rest of the library sees it. A communicator is a GPU communicator when
 * CUDA is built in and a device is current at init (comm->cuda_dev >= 0); its operations on
 * device buffers run as kernels on the caller's stream (exec/cuda), over connectors in GPU
 * memory mapped between the ranks (transport/cuda/p2p.c). Operations on host buffers still
 * run on the host executor. Without CUDA (no nvcc at build time) exec/nocuda provides these
 * functions: no devices, nothing on a device.
 */
#ifndef BT_EXEC_CUDA_CUDA_H
#define BT_EXEC_CUDA_CUDA_H

#include <stddef.h>

#include "util/status.h"

struct bt_comm;
struct bt_op;

/* Devices this process can use (0 without CUDA or a driver); the current one or -1. */
int bt_cuda_device_count(void);
int bt_cuda_current_device(void);

/* The PCI bus id of device `dev` ("0000:3b:00.0"). */
bt_status_t bt_cuda_pci_bus_id(int dev, char *buf, int len);

/* Whether `p` is device (or managed) memory; NULL is not. */
int bt_cuda_is_device_ptr(const void *p);

/* Device memory on the current device (ncclMemAlloc in CUDA mode); free what it gave. */
bt_status_t bt_cuda_mem_alloc(void **ptr_p, size_t bytes);
bt_status_t bt_cuda_mem_free(void *ptr);

/* Run the operations (all of GPU communicators, on device buffers) on their streams. The
 * first one on a communicator sets up its GPU connectors with every rank (collective).
 * Returns once the kernels are queued. */
bt_status_t bt_cuda_launch(struct bt_op *ops, int nops);

/* The first error a kernel of the communicator reported (abort, timeout), or BT_OK. */
bt_status_t bt_cuda_comm_error(struct bt_comm *comm);

/* Raise the kernels' abort flag: a kernel waiting on a peer ends with an error. */
void bt_cuda_comm_abort(struct bt_comm *comm);

/* Wait for the communicator's kernels, then free its GPU resources. Accepts a host comm. */
void bt_cuda_comm_free(struct bt_comm *comm);

#endif
