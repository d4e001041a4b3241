/*
 * A kernel unit: the uint8 kernels, alone; they also move the bytes of send/recv works, so
 * they alone have the size classes of many works (device/kernels.cuh). A 1-byte type's packs
 * hold 16 elements: 162 s of nvcc whole-program on the 2-core machine (45 s relocatable at
 * fewer entries; src/CMakeLists.txt). kernel_i32_f16_bf16_e4m3.cu says why grouping matters.
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(uint8, uint8_t)
