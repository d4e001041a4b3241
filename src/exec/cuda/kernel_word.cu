/*
 * A kernel unit: the kernels of the 4- and 8-byte types (int32, uint32, int64, uint64, float32,
 * float64): the cheapest to compile (4 or 2 elements a pack), together about as much as one 1-byte
 * type. The units split the dtypes so that a parallel build compiles them at once (kernel.cu says
 * how the kernels are laid out; device/kernels.cuh holds them).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(int32, int32_t)
BT_CUDA_KERNEL_DTYPE(uint32, uint32_t)
BT_CUDA_KERNEL_DTYPE(int64, int64_t)
BT_CUDA_KERNEL_DTYPE(uint64, uint64_t)
BT_CUDA_KERNEL_DTYPE(float32, float)
BT_CUDA_KERNEL_DTYPE(float64, double)
