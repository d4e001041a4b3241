/*
 * A kernel unit: the uint32, int64, uint64, float32, float64 and fp8 e5m2 kernels, in that
 * order; kernel_i32_f16_bf16_e4m3.cu says why the order matters. uint32 leads: measured when
 * every entry inlined its body, the kernels after it compiled to becffa2's PTX, only its own
 * W=4 pair did not (a little more spill, as becffa2's int32 W=4 pair had), and no other leader
 * tried (int64, uint64, float32, float64, float16, bfloat16, fp8) kept the kernels after it
 * as they were.
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(uint32, uint32_t)
BT_CUDA_KERNEL_DTYPE(int64, int64_t)
BT_CUDA_KERNEL_DTYPE(uint64, uint64_t)
BT_CUDA_KERNEL_DTYPE(float32, float)
BT_CUDA_KERNEL_DTYPE(float64, double)
BT_CUDA_KERNEL_DTYPE(fp8e5m2, fp8e5m2)
