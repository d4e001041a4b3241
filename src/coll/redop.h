/*
 * Data types and reduction operators as the executors see them. The values of
 * enum bt_dtype equal ncclDataType_t's; the API layer maps ncclRedOp_t (including Avg and
 * PreMulSum) to a struct bt_redop, so executors only know four combining operations plus
 * an optional multiply of the inputs and an optional final division:
 *   Sum/Prod/Max/Min -> op, no pre, no post
 *   Avg (float types) -> Sum, pre-multiply own input by 1/n
 *   Avg (integers)    -> Sum, post-divide the final result by n
 *   PreMulSum(s)      -> Sum, pre-multiply own input by s
 * Shared by the host and CUDA executors: plain C, no system headers beyond stdint.
 */
#ifndef BT_COLL_REDOP_H
#define BT_COLL_REDOP_H

#include <stddef.h>
#include <stdint.h>

#include "util/hd.h"

enum bt_dtype {
    BT_INT8 = 0,
    BT_UINT8 = 1,
    BT_INT32 = 2,
    BT_UINT32 = 3,
    BT_INT64 = 4,
    BT_UINT64 = 5,
    BT_FLOAT16 = 6,
    BT_FLOAT32 = 7,
    BT_FLOAT64 = 8,
    BT_BFLOAT16 = 9,
    BT_FP8E4M3 = 10,
    BT_FP8E5M2 = 11,
    BT_NUM_DTYPES = 12,
};

enum bt_red_kind {
    BT_OP_SUM = 0,
    BT_OP_PROD = 1,
    BT_OP_MAX = 2,
    BT_OP_MIN = 3,
    BT_NUM_BASE_OPS = 4,
};

struct bt_redop {
    uint8_t dtype;    /* enum bt_dtype */
    uint8_t op;       /* enum bt_red_kind */
    uint8_t pre_mul;  /* 1: sources marked in pre_mask are multiplied by the scalar first */
    uint8_t post_div; /* 1: the final result is divided by `divisor` (integer Avg) */
    /* The pre-multiplier: floating types use scalar_f (float32 and narrower multiply in
     * float precision), integer types use scalar_i (wrapping arithmetic). */
    double scalar_f;
    int64_t scalar_i;
    uint64_t divisor;
};

static inline BT_HD size_t bt_dtype_size(int dtype)
{
    /* a switch, not a table: device code has no function-scope static data */
    switch (dtype) {
    case BT_INT8:
    case BT_UINT8:
    case BT_FP8E4M3:
    case BT_FP8E5M2:
        return 1;
    case BT_FLOAT16:
    case BT_BFLOAT16:
        return 2;
    case BT_INT32:
    case BT_UINT32:
    case BT_FLOAT32:
        return 4;
    case BT_INT64:
    case BT_UINT64:
    case BT_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

static inline BT_HD int bt_dtype_is_float(int dtype)
{
    return dtype == BT_FLOAT16 || dtype == BT_FLOAT32 || dtype == BT_FLOAT64 ||
           dtype == BT_BFLOAT16 || dtype == BT_FP8E4M3 || dtype == BT_FP8E5M2;
}

#endif
