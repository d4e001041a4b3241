/*
 * A kernel unit: the int32, float16, bfloat16 and fp8 e4m3 kernels, in that order.
 *
 * The units split the dtypes so that a parallel build compiles them at once (kernel.cu says
 * how the kernels are laid out; device/kernels.cuh holds them). What goes together, and in
 * which order, is measured, not free: cicc's code for a dtype's kernels depends on what the
 * unit instantiated before them. Measured when every entry inlined its body: with int32 first,
 * every kernel of a unit compiled to the PTX the single kernel.cu before the split (becffa2)
 * gave it; with int64, uint64, float32, float64, float16, bfloat16 or an fp8 type first, every
 * kernel of the unit came out different (10-50% larger PTX), and fp8 or float16 after only
 * int8 or uint8 did too. int8 and uint8 alone were as in becffa2. So int32 leads this unit, and
 * uint32 the other mixed one. The general kernels now share one noinline body per dtype
 * (device/kernels.cuh), whose PTX is its own; the one-shot's entries still inline theirs.
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(int32, int32_t)
BT_CUDA_KERNEL_DTYPE(float16, __half)
BT_CUDA_KERNEL_DTYPE(bfloat16, __nv_bfloat16)
BT_CUDA_KERNEL_DTYPE(fp8e4m3, fp8e4m3)
