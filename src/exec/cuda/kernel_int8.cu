/*
 * A kernel unit: the int8 kernels, alone: a 1-byte type's packs hold 16 elements, and its
 * kernels take about as long to compile as a mixed unit's four or six dtypes
 * (kernel_i32_f16_bf16_e4m3.cu says why grouping matters).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(int8, int8_t)
