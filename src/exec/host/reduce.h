/*
 * Host reduction kernels: the arithmetic of every host collective. Memory-bound loops over
 * all dtypes x ops of coll/redop.h; see reduce.c for how they are kept vectorized.
 */
#ifndef BT_EXEC_HOST_REDUCE_H
#define BT_EXEC_HOST_REDUCE_H

#include <stddef.h>

#include "coll/redop.h"

/*
 * For i in [0, count):
 *   dst[i] = post'(fold(op->op, s0', s1', ..., s{nsrcs-1}'))
 * where sK' = srcs[K][i] * scalar when op->pre_mul and bit K of pre_mask are set, and post'
 * divides by op->divisor when op->post_div and `post` are set.
 *   - nsrcs in 1..8; with 1 the fold is the (pre-multiplied) source itself.
 *   - dst may equal any srcs[K] exactly (in place); partial overlap is not allowed.
 *   - Integers wrap (two's complement); the average truncates toward zero, unsigned types
 *     divide unsigned. op->divisor must be in 1..INT64_MAX.
 *   - float16, bfloat16, fp8: every source is widened to float, folded in float and rounded
 *     once (coll/dtype.h: round to nearest even; fp8 saturates). float32 folds in float,
 *     float64 in double. The scalar is applied in float for float32 and narrower types
 *     ((float)op->scalar_f), in double for float64, and as op->scalar_i, wrapping, for
 *     integers.
 *   - Max/Min on floating types: a NaN in any input gives NaN; between +0 and -0 the later
 *     source's zero is kept.
 * Thread-safe: the only state is the converter level below, probed once.
 */
void bt_host_reduce(const struct bt_redop *op, void *dst, const void *const *srcs, int nsrcs,
                    unsigned pre_mask, int post, size_t count);

/*
 * Which converters the narrow types (half, bfloat16, fp8) use: 1 baseline, 2 AVX2, 3 AVX2
 * and F16C (x86-64 only; elsewhere always 1). All levels give the same bits. `level` > 0
 * caps the level from now on, for tests that cover every level; 0 changes nothing. Returns
 * the level now in use. Thread-safe.
 */
int bt_host_reduce_isa(int level);

/* Copy `bytes` bytes between non-overlapping buffers (dst == src is allowed: no-op). */
void bt_host_copy(void *dst, const void *src, size_t bytes);

#endif
