/*
 * A kernel unit: the uint8 kernels, alone; they also move the bytes of send/recv works. A
 * 1-byte type's packs hold 16 elements: 104 s of nvcc, measured alone. Alone in a unit they
 * compile to the PTX the single kernel.cu before the split (becffa2) gave them
 * (kernel_i32_f16_bf16_e4m3.cu says why grouping matters).
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(uint8, uint8_t)
