/*
 * A kernel unit: the int32, float16, bfloat16 and fp8 e4m3 kernels, in that order.
 *
 * The units split the dtypes so that a parallel build compiles them at once (kernel.cu says
 * how the kernels are laid out; device/kernels.cuh holds them). What goes together, and in
 * which order, is measured, not free: cicc's code for a dtype's kernels depends on what the
 * unit instantiated before them. With int32 first, every kernel of a unit compiles to the
 * PTX the single kernel.cu before the split (becffa2) gave it; with int64, uint64, float32,
 * float64, float16, bfloat16 or an fp8 type first, every kernel of the unit came out different
 * (10-50% larger PTX), and fp8 or float16 after only int8 or uint8 did too. int8 and uint8 alone
 * are as in becffa2. So int32 leads this unit, and uint32 the other mixed one (there only uint32's
 * own W=4 kernels differ from becffa2's, see kernel_u32_i64_u64_f32_f64_e5m2.cu). Check a new
 * grouping the same way: nvcc -ptx of the unit against becffa2's kernel.cu, kernel by kernel.
 */
#include "exec/cuda/device/kernels.cuh"
#include "exec/cuda/kernel.h"

BT_CUDA_KERNEL_DTYPE(int32, int32_t)
BT_CUDA_KERNEL_DTYPE(float16, __half)
BT_CUDA_KERNEL_DTYPE(bfloat16, __nv_bfloat16)
BT_CUDA_KERNEL_DTYPE(fp8e4m3, fp8e4m3)
