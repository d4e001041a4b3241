/* A build without CUDA: no devices, so every communicator works on host memory. */
#include "exec/cuda/cuda.h"

int bt_cuda_device_count(void)
{
    return 0;
}

int bt_cuda_current_device(void)
{
    return -1;
}

bt_status_t bt_cuda_pci_bus_id(int dev, char *buf, int len)
{
    (void)dev;
    (void)buf;
    (void)len;
    return BT_ERR_INTERNAL;
}

int bt_cuda_is_device_ptr(const void *p)
{
    (void)p;
    return 0;
}

bt_status_t bt_cuda_mem_alloc(void **ptr_p, size_t bytes)
{
    (void)ptr_p;
    (void)bytes;
    return BT_ERR_INTERNAL; /* unreachable: no device is ever current */
}

bt_status_t bt_cuda_mem_free(void *ptr)
{
    (void)ptr;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_cuda_launch(struct bt_op *ops, int nops)
{
    (void)ops;
    (void)nops;
    return BT_ERR_INTERNAL; /* unreachable: no communicator has a device */
}

bt_status_t bt_cuda_comm_error(struct bt_comm *comm)
{
    (void)comm;
    return BT_OK;
}

void bt_cuda_comm_abort(struct bt_comm *comm)
{
    (void)comm;
}

void bt_cuda_comm_free(struct bt_comm *comm)
{
    (void)comm;
}
