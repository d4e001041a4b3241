/*
 * The CUDA executor in a build without nvcc: no device is ever current (device/none.c), so no
 * operation is routed here and no state is made; the table says so if asked. The model
 * (baton-topo, unit/test_topo) still answers: exec/cuda/target.c is plain C, built here too.
 */
#include "exec/cuda/cuda.h"

static bt_status_t nocuda_create(const struct bt_exec_comm *ec, void **state_p)
{
    *state_p = NULL;
    BT_WARN("rank %d: this Baton was built without CUDA: no GPU operation can run", ec->rank);
    return BT_ERR_INVALID_USAGE;
}

/* A table whose create fails needs nothing else: core reaches the rest only with a state. */
const struct bt_exec_ops bt_exec_cuda = {
    .name = "CUDA (not built)",
    .collective_setup = 1,
    .create = nocuda_create,
    .model = bt_cuda_model,
};
