/*
 * A kernel unit: the uint8 kernels, alone; they also move the bytes of send/recv works. A
 * 1-byte type's packs hold 16 elements: 45 s of nvcc alone, relocatable (123 s whole-program;
 * src/CMakeLists.txt). kernel_i32_f16_bf16_e4m3.cu says why grouping matters.
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(uint8, uint8_t)
