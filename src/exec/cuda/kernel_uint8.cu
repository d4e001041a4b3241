/*
 * A kernel unit: the uint8 kernels, which also move the bytes of send/recv works: a 1-byte type's
 * packs hold 16 elements, its kernels are a unit's worth of compile. The units split the dtypes so
 * that a parallel build compiles them at once (kernel.cu says how the kernels are laid out;
 * device/kernels.cuh holds them).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(uint8, uint8_t)
