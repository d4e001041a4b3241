/*
 * A kernel unit: the int8 kernels: a 1-byte type's packs hold 16 elements, and its kernels alone
 * are about a quarter of the compile. The units split the dtypes so that a parallel build compiles
 * them at once (kernel.cu says how the kernels are laid out; device/kernels.cuh holds them).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(int8, int8_t)
