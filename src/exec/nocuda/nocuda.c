/* A build without CUDA: no device is ever current (device/none.c), so no communicator gets
 * CUDA state and none of these is reached but the ones that accept NULL. */
#include "exec/cuda/cuda.h"

bt_status_t bt_cuda_comm_create(const struct bt_cuda_setup *s, struct bt_cuda_comm **cc_p)
{
    (void)s;
    *cc_p = NULL;
    return BT_ERR_INTERNAL;
}

void bt_cuda_comm_sync(struct bt_cuda_comm *cc)
{
    (void)cc;
}

void bt_cuda_comm_free(struct bt_cuda_comm *cc)
{
    (void)cc;
}

bt_status_t bt_cuda_comm_error(const struct bt_cuda_comm *cc)
{
    (void)cc;
    return BT_OK;
}

void bt_cuda_comm_abort(struct bt_cuda_comm *cc)
{
    (void)cc;
}

void bt_cuda_kargs_init(struct bt_cuda_kargs *a, const struct bt_cuda_comm *cc)
{
    (void)cc;
    a->h.nworks = 0;
}

struct bt_work *bt_cuda_kargs_add(struct bt_cuda_kargs *a, int block)
{
    a->block[a->h.nworks] = (uint16_t)block;
    return &a->works[a->h.nworks++];
}

bt_status_t bt_cuda_kargs_launch(struct bt_cuda_comm *cc, const struct bt_cuda_kargs *a,
                                 void *stream)
{
    (void)cc;
    (void)a;
    (void)stream;
    return BT_ERR_INTERNAL;
}

bt_status_t bt_cuda_window_export(void *buf, struct bt_cuda_win_export *out)
{
    (void)buf;
    (void)out;
    return BT_ERR_INTERNAL;
}

void bt_cuda_window_unexport(struct bt_cuda_win_export *mine)
{
    (void)mine;
}

bt_status_t bt_cuda_window_open(const struct bt_cuda_win_export *peer, int same_process,
                                struct bt_cuda_win_map *map)
{
    (void)peer;
    (void)same_process;
    (void)map;
    return BT_ERR_INTERNAL;
}

void bt_cuda_window_close(struct bt_cuda_win_map *map)
{
    (void)map;
}

bt_status_t bt_cuda_window_launch(struct bt_cuda_comm *cc, struct bt_cuda_wargs *a, int nblocks,
                                  void *stream)
{
    (void)cc;
    (void)a;
    (void)nblocks;
    (void)stream;
    return BT_ERR_INTERNAL;
}
