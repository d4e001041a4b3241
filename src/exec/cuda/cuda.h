/*
 * The CUDA executor's parts, as its table (cuda_exec.c, exec/exec.h's bt_exec_cuda) puts them
 * together. A GPU communicator's CUDA state (struct bt_cuda_comm, cuda_comm.h) is made at its
 * first GPU operation (cuda_comm.c): connectors between the ranks' GPUs (fifos.c, or through
 * the host's network connectors: host_conns.c) and the host-mapped words its kernels report
 * through. A launch is a struct bt_cuda_kargs of planned works (plan/plan.h), queued as one
 * kernel on the caller's stream (enqueue.c). Without CUDA (no nvcc at build time)
 * exec/nocuda provides these functions: nothing is ever created.
 */
#ifndef BT_EXEC_CUDA_CUDA_H
#define BT_EXEC_CUDA_CUDA_H

#include <stddef.h>

#include "exec/cuda/kargs.h"
#include "exec/exec.h"
#include "util/status.h"

struct bt_cuda_comm;

/* Make the CUDA state (collective: every rank calls it at its first GPU operation, with the
 * device current). */
bt_status_t bt_cuda_comm_create(const struct bt_exec_comm *ec, struct bt_cuda_comm **cc_p);

/* Wait for the communicator's kernels (they use the FIFOs). NULL ok. */
void bt_cuda_comm_sync(struct bt_cuda_comm *cc);
/* After sync, while the transport's proxy still runs: wait for what it moves for the
 * kernels (through the network). */
void bt_cuda_comm_drain(struct bt_cuda_comm *cc);
/* Free the CUDA state, after drain and after the proxy has ended. Accepts NULL. */
void bt_cuda_comm_free(struct bt_cuda_comm *cc);

/* The first error a kernel of the communicator reported (abort, timeout), or BT_OK. NULL ok. */
bt_status_t bt_cuda_comm_error(const struct bt_cuda_comm *cc);

/* Raise the kernels' abort flag: a kernel waiting on a peer ends with an error. NULL ok. */
void bt_cuda_comm_abort(struct bt_cuda_comm *cc);

/* The kernels' report (host-mapped). */
volatile struct bt_exec_report *bt_cuda_comm_report(struct bt_cuda_comm *cc);

/* A launch: empty, then a work for `block` (and the blocks after it, for a work standing for
 * several channels), then queued on `stream` (cudaStream_t) after the communicator's kernels
 * before it, whatever their streams. A full one (BT_CUDA_MAX_WORKS) must be launched before
 * more are added. */
void bt_cuda_kargs_init(struct bt_cuda_kargs *a, const struct bt_cuda_comm *cc);
struct bt_work *bt_cuda_kargs_add(struct bt_cuda_kargs *a, int block);
bt_status_t bt_cuda_kargs_launch(struct bt_cuda_comm *cc, const struct bt_cuda_kargs *a,
                                 void *stream);

/* Queue a window AllReduce (a's h is filled here) on `stream`, in the communicator's kernel
 * order. */
bt_status_t bt_cuda_window_launch(struct bt_cuda_comm *cc, struct bt_cuda_wargs *a, int nblocks,
                                  void *stream);

/* Windows on GPU memory (win_map.c): exec/exec.h's win_* of the CUDA executor. */
int bt_cuda_win_export(const struct bt_exec_comm *ec, void *buf, size_t size,
                       struct bt_win_map *mine, void *blob);
bt_status_t bt_cuda_win_open(const struct bt_exec_comm *ec, int peer, int same_process,
                             const struct bt_win_map *mine, const void *blob,
                             struct bt_win_map *map);
void bt_cuda_win_close(struct bt_win_map *map);
void bt_cuda_win_unexport(struct bt_win_map *mine);
bt_status_t bt_cuda_win_publish(const struct bt_exec_comm *ec, const void *vid, size_t bytes,
                                void **handle);
bt_status_t bt_cuda_win_update(void *handle, size_t off, const void *src, size_t bytes);
void bt_cuda_win_unpublish(void *handle);

/* The CUDA executor as a planner's target (target.c, built with or without CUDA): a
 * communicator's state (`owner`: what its works carry back), or the default geometry of
 * `nranks` ranks (exec/exec.h's model). */
void bt_cuda_target(const struct bt_cuda_comm *cc, const struct bt_tune_settings *set,
                    float net_gbps, float net_latency_us, void *owner, struct bt_plan_target *tg);
void bt_cuda_model(int nranks, int nvlink_all, const struct bt_tune_settings *set,
                   struct bt_plan_target *tg);

#endif
