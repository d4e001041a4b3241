/*
 * The launchers of each dtype's kernels, one per enum bt_dtype: defined by the kernel units
 * (kernel_<dtypes>.cu, with device/kernels.cuh's BT_CUDA_KERNEL_DTYPE), called by
 * bt_cuda_kernel_launch (kernel.cu) for the works' dtype. Each has bt_cuda_kernel_launch's
 * contract (kargs.h): returns the CUDA error code of the launch (0 = cudaSuccess). C++ (the
 * units and kernel.cu are nvcc's), internal to the library (hidden like every symbol).
 */
#ifndef BT_EXEC_CUDA_KERNEL_H
#define BT_EXEC_CUDA_KERNEL_H

#include "exec/cuda/kargs.h"

int bt_cuda_kernel_launch_int8(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                               void *done_event);
int bt_cuda_kernel_launch_uint8(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                void *done_event);
int bt_cuda_kernel_launch_int32(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                void *done_event);
int bt_cuda_kernel_launch_uint32(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                 void *done_event);
int bt_cuda_kernel_launch_int64(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                void *done_event);
int bt_cuda_kernel_launch_uint64(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                 void *done_event);
int bt_cuda_kernel_launch_float16(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                  void *done_event);
int bt_cuda_kernel_launch_float32(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                  void *done_event);
int bt_cuda_kernel_launch_float64(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                  void *done_event);
int bt_cuda_kernel_launch_bfloat16(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                   void *done_event);
int bt_cuda_kernel_launch_fp8e4m3(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                  void *done_event);
int bt_cuda_kernel_launch_fp8e5m2(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                  void *done_event);

#endif
