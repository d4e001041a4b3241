/*
 * A kernel unit: the 2-byte floating types' kernels (float16, bfloat16).
 * The units split the dtypes so that a parallel build compiles them at once (kernel.cu says
 * how the kernels are laid out; device/kernels.cuh holds them).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(float16, __half)
BT_CUDA_KERNEL_DTYPE(bfloat16, __nv_bfloat16)
