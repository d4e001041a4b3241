/*
 * A kernel unit: the fp8 e4m3 kernels: 16 elements a pack, each converted to float and back.
 * The units split the dtypes so that a parallel build compiles them at once (kernel.cu says
 * how the kernels are laid out; device/kernels.cuh holds them).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(fp8e4m3, fp8e4m3)
