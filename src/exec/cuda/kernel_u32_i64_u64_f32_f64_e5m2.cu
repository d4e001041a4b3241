/*
 * A kernel unit: the uint32, int64, uint64, float32, float64 and fp8 e5m2 kernels, in that
 * order; kernel_i32_f16_bf16_e4m3.cu says why the order matters. uint32 leads: the kernels
 * after it compile to becffa2's PTX, but its own W=4 pair (bt_cuda_kernel<uint32_t, 4> and
 * bt_cuda_direct_kernel<uint32_t, 4>) does not: ptxas gives them 480/500 and 136/448 bytes
 * of spill stores/loads, where becffa2's gave 344/340 and 76/188 (becffa2's int32 W=4 pair had
 * exactly those worse figures, as the first 4-byte integer kernels of its unit, and in the
 * other unit still does). No other leader tried (int64, uint64, float32, float64, float16,
 * bfloat16, fp8) kept the kernels after it as they were.
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(uint32, uint32_t)
BT_CUDA_KERNEL_DTYPE(int64, int64_t)
BT_CUDA_KERNEL_DTYPE(uint64, uint64_t)
BT_CUDA_KERNEL_DTYPE(float32, float)
BT_CUDA_KERNEL_DTYPE(float64, double)
BT_CUDA_KERNEL_DTYPE(fp8e5m2, fp8e5m2)
