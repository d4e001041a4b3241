/*
 * The window AllReduce's shared layout (both executors run it: exec/cuda/kernel_window.cu on
 * GPUs, exec/host/win_allreduce.c on host memory). Every rank's input and output lie in windows
 * every rank has mapped; rank r owns part r of the elements, reduces it from every rank's
 * input and writes it into every rank's output, between an entry and an exit barrier. The
 * barriers go through each rank's flags: flag[b][r] is written by rank r's block (GPU) or
 * work (host, b = 0) b, count[b] is this rank's own count of window AllReduces run by b.
 */
#ifndef BT_COLL_WINDOW_H
#define BT_COLL_WINDOW_H

#include <stdint.h>

#define BT_WIN_MAX_RANKS 16
#define BT_WIN_MAX_BLOCKS 32

struct bt_win_flags {
    uint64_t flag[BT_WIN_MAX_BLOCKS][BT_WIN_MAX_RANKS]; /* [b][r]: rank r's block b reached */
    uint64_t count[BT_WIN_MAX_BLOCKS];                  /* this rank's block b: collectives run */
};

#endif
