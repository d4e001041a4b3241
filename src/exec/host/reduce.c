/*
 * Host reduction kernels.
 *
 * Why the loops look the way they do: the project builds at -O2, where GCC (12+) uses the
 * "very cheap" vectorizer cost model. It vectorizes a loop only when no runtime alias check
 * and no scalar epilogue are needed, i.e. when the pointers cannot alias and the trip count
 * is a known multiple of the vector width. So every hot loop runs over a block of exactly
 * BT_REDUCE_BLK elements (a compile-time constant), and either uses restrict pointers or
 * reads/writes a local accumulator array whose address never escapes. The last partial
 * block goes through the same code with a runtime length and stays scalar.
 *
 * Two shapes per dtype x op:
 *   - fast2: nsrcs == 2, no pre-multiply, no post-divide, native arithmetic type (integers,
 *     float32, float64): d = a OP b straight from memory to memory; in place, d = d OP b or
 *     d = a OP d, so that no two restrict pointers ever name the same buffer.
 *   - general: per block, acc = widen(s0) [* scalar], acc = acc OP widen(sK) [* scalar]
 *     for K = 1..n-1, then dst = narrow(acc [/ divisor]). dst is written only after every
 *     source has been read for the block, so dst == any srcs[K] is safe.
 * Integer sum/product go through the unsigned type (wrapping, no signed-overflow UB); the
 * conversion back to the signed type is modular in GCC and Clang.
 */
#include "exec/host/reduce.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "coll/dtype.h"

#define BT_REDUCE_BLK 256

/* Everything a kernel needs, prepared once per call. */
struct bt_reduce_args {
    void *dst;
    const void *const *srcs;
    int nsrcs;
    unsigned pre; /* bit K: multiply source K by the scalar */
    int post;     /* divide the result by the divisor */
    size_t count;
    float sf;   /* scalar for float32 and narrower */
    double sd;  /* scalar for float64 */
    int64_t si; /* scalar for integers */
    float fdiv; /* divisor, per arithmetic type */
    double ddiv;
    int64_t sdiv;
    uint64_t udiv;
};

typedef void (*bt_reduce_fn)(const struct bt_reduce_args *a);
typedef void (*bt_reduce2_fn)(void *restrict d, const void *restrict a, const void *restrict b,
                              size_t n);
typedef void (*bt_reduce2ip_fn)(void *restrict d, const void *restrict b, size_t n);

struct bt_reduce_fast2 {
    bt_reduce2_fn out;    /* d = a OP b */
    bt_reduce2ip_fn ip_a; /* d = d OP b (d == a) */
    bt_reduce2ip_fn ip_b; /* d = a OP d (d == b) */
};

/* Combining operations, OP(U, x, y) with U the unsigned twin of an integer type. */
#define BT_ISUM(U, x, y) ((U)(x) + (U)(y))
#define BT_IPROD(U, x, y) ((U)(x) * (U)(y))
#define BT_FSUM(U, x, y) ((x) + (y))
#define BT_FPROD(U, x, y) ((x) * (y))
#define BT_MAX(U, x, y) ((x) > (y) ? (x) : (y))
#define BT_MIN(U, x, y) ((x) < (y) ? (x) : (y))
/* x != x is the NaN test; it keeps x when x is NaN, and y is chosen when y is NaN because
 * every comparison with NaN is false. */
#define BT_FMAX(U, x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define BT_FMIN(U, x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* Pre-multiply and post-divide, per arithmetic type. */
#define BT_MUL_I(U, x, c) ((U)(x) * (U)(c)->si)
#define BT_MUL_F(U, x, c) ((x) * (c)->sf)
#define BT_MUL_D(U, x, c) ((x) * (c)->sd)
#define BT_DIV_S(x, c) ((x) / (c)->sdiv)
#define BT_DIV_U(x, c) ((x) / (c)->udiv)
#define BT_DIV_F(x, c) ((x) / (c)->fdiv)
#define BT_DIV_D(x, c) ((x) / (c)->ddiv)

/*
 * Widen / narrow between storage and arithmetic types. bfloat16 uses coll/dtype.h as is: it
 * is shifts, adds and selects, which vectorize. For half and fp8, dtype.h is exact in integer
 * arithmetic but needs a per-element variable shift or loop for subnormals, which SSE2 does
 * not vectorize. The versions below are branch-free and do the subnormal range in the FPU:
 *   widen:  a subnormal is m * 2^-k, an exact product of two floats, never subnormal itself;
 *   narrow: |f| * 2^k + 2^23 rounds |f| * 2^k (exact) to an integer, ties to even, in the
 *           default rounding mode; that integer is the subnormal's fraction, and the carry
 *           into the smallest normal is the right pattern too.
 * All lanes compute every path and a select keeps one; the discarded paths may overflow or
 * wrap, harmlessly. They equal dtype.h bit for bit in round-to-nearest mode, the mode the
 * float folds themselves assume (tests/unit/test_reduce.c checks every pattern).
 */
/* c ? x : y on 32-bit lanes, written as masks so that GCC keeps it branch-free. */
static inline uint32_t bt_sel(int c, uint32_t x, uint32_t y)
{
    return y ^ ((x ^ y) & (0u - (uint32_t)c));
}

static inline float bt_ld_f16(uint16_t h)
{
    uint32_t em = h & 0x7fffu;
    uint32_t nrm = (em << 13) + (112u << 23);
    uint32_t sub = bt_dtype_f32_bits((float)(int32_t)(h & 0x3ffu) * 0x1p-24f);
    uint32_t r = bt_sel(em >= 0x7c00u, nrm + (112u << 23), bt_sel(em < 0x400u, sub, nrm));
    return bt_dtype_f32_from_bits(((uint32_t)(h & 0x8000u) << 16) | r);
}

static inline uint16_t bt_st_f16(float f)
{
    uint32_t x = bt_dtype_f32_bits(f), a = x & 0x7fffffffu;
    uint32_t nrm = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    uint32_t sub = bt_dtype_f32_bits(bt_dtype_f32_from_bits(a) * 0x1p24f + 0x1p23f) - 0x4b000000u;
    uint32_t r = bt_sel(a < 0x38800000u, sub, nrm); /* below 2^-14: subnormal */
    r = bt_sel(a >= 0x477ff000u, 0x7c00u, r);       /* 65520 and up: inf */
    r = bt_sel(a > 0x7f800000u, 0x7e00u | ((a >> 13) & 0x3ffu), r);
    return (uint16_t)(((x >> 16) & 0x8000u) | r);
}

static inline float bt_ld_e4m3(uint8_t v)
{
    uint32_t em = v & 0x7fu;
    uint32_t nrm = (em << 20) + (120u << 23);
    uint32_t sub = bt_dtype_f32_bits((float)(int32_t)(v & 0x7u) * 0x1p-9f);
    uint32_t r = bt_sel(em == 0x7fu, 0x7fc00000u, bt_sel(em < 0x8u, sub, nrm));
    return bt_dtype_f32_from_bits(((uint32_t)(v & 0x80u) << 24) | r);
}

static inline uint8_t bt_st_e4m3(float f)
{
    uint32_t x = bt_dtype_f32_bits(f), a = x & 0x7fffffffu;
    uint32_t nrm = (a - (120u << 23) + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
    uint32_t sub = bt_dtype_f32_bits(bt_dtype_f32_from_bits(a) * 0x1p9f + 0x1p23f) - 0x4b000000u;
    uint32_t r = bt_sel(a < 0x3c800000u, sub, nrm); /* below 2^-6: subnormal */
    r = bt_sel(a >= 0x43e00000u, 0x7eu, r);         /* 448 and up, inf: saturate */
    r = bt_sel(a > 0x7f800000u, 0x7fu, r);
    return (uint8_t)(((x >> 24) & 0x80u) | r);
}

static inline float bt_ld_e5m2(uint8_t v)
{
    uint32_t em = v & 0x7fu;
    uint32_t nrm = (em << 21) + (112u << 23);
    uint32_t sub = bt_dtype_f32_bits((float)(int32_t)(v & 0x3u) * 0x1p-16f);
    uint32_t r = bt_sel(em >= 0x7cu, nrm + (112u << 23), bt_sel(em < 0x4u, sub, nrm));
    return bt_dtype_f32_from_bits(((uint32_t)(v & 0x80u) << 24) | r);
}

static inline uint8_t bt_st_e5m2(float f)
{
    uint32_t x = bt_dtype_f32_bits(f), a = x & 0x7fffffffu;
    uint32_t nrm = (a - (112u << 23) + 0xfffffu + ((a >> 21) & 1u)) >> 21;
    uint32_t sub = bt_dtype_f32_bits(bt_dtype_f32_from_bits(a) * 0x1p16f + 0x1p23f) - 0x4b000000u;
    uint32_t r = bt_sel(a < 0x38800000u, sub, nrm); /* below 2^-14: subnormal */
    r = bt_sel(a >= 0x47600000u, 0x7bu, r);         /* 57344 and up, inf: saturate */
    r = bt_sel(a > 0x7f800000u, 0x7eu | ((a >> 21) & 1u), r);
    return (uint8_t)(((x >> 24) & 0x80u) | r);
}

#define BT_ID(x) (x)
#define BT_LD_F16(x) bt_ld_f16(x)
#define BT_ST_F16(x) bt_st_f16(x)
#define BT_LD_BF16(x) bt_bf16_to_float(x)
#define BT_ST_BF16(x) bt_float_to_bf16(x)
#define BT_LD_E4M3(x) bt_ld_e4m3(x)
#define BT_ST_E4M3(x) bt_st_e4m3(x)
#define BT_LD_E5M2(x) bt_ld_e5m2(x)
#define BT_ST_E5M2(x) bt_st_e5m2(x)

/*
 * General kernel NAME for storage type T, arithmetic type A. NAME##_blk handles one block of
 * n elements starting at element b; it is always inlined so that the full-block call sees
 * n == BT_REDUCE_BLK as a constant.
 */
#define BT_REDUCE_GENERAL(NAME, T, A, U, LD, ST, OP, MUL, DIV)                                     \
    static inline __attribute__((always_inline)) void NAME##_blk(                                  \
        const struct bt_reduce_args *c, A *restrict acc, size_t b, size_t n)                       \
    {                                                                                              \
        const T *s0 = (const T *)c->srcs[0] + b;                                                   \
        T *d = (T *)c->dst + b;                                                                    \
        size_t i;                                                                                  \
        int k;                                                                                     \
                                                                                                   \
        if (c->pre & 1u) {                                                                         \
            for (i = 0; i < n; i++)                                                                \
                acc[i] = (A)MUL(U, LD(s0[i]), c);                                                  \
        } else {                                                                                   \
            for (i = 0; i < n; i++)                                                                \
                acc[i] = LD(s0[i]);                                                                \
        }                                                                                          \
        for (k = 1; k < c->nsrcs; k++) {                                                           \
            const T *s = (const T *)c->srcs[k] + b;                                                \
            if (c->pre & (1u << k)) {                                                              \
                for (i = 0; i < n; i++)                                                            \
                    acc[i] = OP(U, acc[i], (A)MUL(U, LD(s[i]), c));                                \
            } else {                                                                               \
                for (i = 0; i < n; i++)                                                            \
                    acc[i] = OP(U, acc[i], LD(s[i]));                                              \
            }                                                                                      \
        }                                                                                          \
        if (c->post) {                                                                             \
            for (i = 0; i < n; i++)                                                                \
                d[i] = ST((A)DIV(acc[i], c));                                                      \
        } else {                                                                                   \
            for (i = 0; i < n; i++)                                                                \
                d[i] = ST(acc[i]);                                                                 \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void NAME(const struct bt_reduce_args *c)                                               \
    {                                                                                              \
        A acc[BT_REDUCE_BLK];                                                                      \
        size_t b;                                                                                  \
                                                                                                   \
        for (b = 0; c->count - b >= BT_REDUCE_BLK; b += BT_REDUCE_BLK)                             \
            NAME##_blk(c, acc, b, BT_REDUCE_BLK);                                                  \
        if (b < c->count)                                                                          \
            NAME##_blk(c, acc, b, c->count - b);                                                   \
    }

/* Two-source kernels for native types: full blocks vectorized, then a scalar tail. */
#define BT_REDUCE_FAST2(NAME, T, U, OP)                                                            \
    static void NAME##_out(void *restrict dv, const void *restrict av, const void *restrict bv,    \
                           size_t n)                                                               \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        const T *restrict b = bv;                                                                  \
        size_t i = 0, j;                                                                           \
                                                                                                   \
        for (; n - i >= BT_REDUCE_BLK; i += BT_REDUCE_BLK)                                         \
            for (j = 0; j < BT_REDUCE_BLK; j++)                                                    \
                d[i + j] = OP(U, a[i + j], b[i + j]);                                              \
        for (; i < n; i++)                                                                         \
            d[i] = OP(U, a[i], b[i]);                                                              \
    }                                                                                              \
    static void NAME##_ip_a(void *restrict dv, const void *restrict bv, size_t n)                  \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict b = bv;                                                                  \
        size_t i = 0, j;                                                                           \
                                                                                                   \
        for (; n - i >= BT_REDUCE_BLK; i += BT_REDUCE_BLK)                                         \
            for (j = 0; j < BT_REDUCE_BLK; j++)                                                    \
                d[i + j] = OP(U, d[i + j], b[i + j]);                                              \
        for (; i < n; i++)                                                                         \
            d[i] = OP(U, d[i], b[i]);                                                              \
    }                                                                                              \
    static void NAME##_ip_b(void *restrict dv, const void *restrict av, size_t n)                  \
    {                                                                                              \
        T *restrict d = dv;                                                                        \
        const T *restrict a = av;                                                                  \
        size_t i = 0, j;                                                                           \
                                                                                                   \
        for (; n - i >= BT_REDUCE_BLK; i += BT_REDUCE_BLK)                                         \
            for (j = 0; j < BT_REDUCE_BLK; j++)                                                    \
                d[i + j] = OP(U, a[i + j], d[i + j]);                                              \
        for (; i < n; i++)                                                                         \
            d[i] = OP(U, a[i], d[i]);                                                              \
    }

/* One dtype, four ops. */
#define BT_REDUCE_NATIVE(DT, T, U, SUM, PROD, MAX, MIN, MUL, DIV)                                  \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_sum, T, T, U, BT_ID, BT_ID, SUM, MUL, DIV)                  \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_prod, T, T, U, BT_ID, BT_ID, PROD, MUL, DIV)                \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_max, T, T, U, BT_ID, BT_ID, MAX, MUL, DIV)                  \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_min, T, T, U, BT_ID, BT_ID, MIN, MUL, DIV)                  \
    BT_REDUCE_FAST2(bt_reduce_##DT##_sum, T, U, SUM)                                               \
    BT_REDUCE_FAST2(bt_reduce_##DT##_prod, T, U, PROD)                                             \
    BT_REDUCE_FAST2(bt_reduce_##DT##_max, T, U, MAX)                                               \
    BT_REDUCE_FAST2(bt_reduce_##DT##_min, T, U, MIN)

#define BT_REDUCE_NARROW(DT, T, LD, ST)                                                            \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_sum, T, float, float, LD, ST, BT_FSUM, BT_MUL_F, BT_DIV_F)  \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_prod, T, float, float, LD, ST, BT_FPROD, BT_MUL_F,          \
                      BT_DIV_F)                                                                    \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_max, T, float, float, LD, ST, BT_FMAX, BT_MUL_F, BT_DIV_F)  \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_min, T, float, float, LD, ST, BT_FMIN, BT_MUL_F, BT_DIV_F)

BT_REDUCE_NATIVE(i8, int8_t, uint8_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_S)
BT_REDUCE_NATIVE(u8, uint8_t, uint8_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_U)
BT_REDUCE_NATIVE(i32, int32_t, uint32_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_S)
BT_REDUCE_NATIVE(u32, uint32_t, uint32_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_U)
BT_REDUCE_NATIVE(i64, int64_t, uint64_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_S)
BT_REDUCE_NATIVE(u64, uint64_t, uint64_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_U)
BT_REDUCE_NATIVE(f32, float, float, BT_FSUM, BT_FPROD, BT_FMAX, BT_FMIN, BT_MUL_F, BT_DIV_F)
BT_REDUCE_NATIVE(f64, double, double, BT_FSUM, BT_FPROD, BT_FMAX, BT_FMIN, BT_MUL_D, BT_DIV_D)
BT_REDUCE_NARROW(f16, uint16_t, BT_LD_F16, BT_ST_F16)
BT_REDUCE_NARROW(bf16, uint16_t, BT_LD_BF16, BT_ST_BF16)
BT_REDUCE_NARROW(e4m3, uint8_t, BT_LD_E4M3, BT_ST_E4M3)
BT_REDUCE_NARROW(e5m2, uint8_t, BT_LD_E5M2, BT_ST_E5M2)

#define BT_REDUCE_ROW(DT)                                                                          \
    {                                                                                              \
        [BT_OP_SUM] = bt_reduce_##DT##_sum, [BT_OP_PROD] = bt_reduce_##DT##_prod,                  \
        [BT_OP_MAX] = bt_reduce_##DT##_max, [BT_OP_MIN] = bt_reduce_##DT##_min,                    \
    }

static const bt_reduce_fn bt_reduce_general[BT_NUM_DTYPES][BT_NUM_BASE_OPS] = {
    [BT_INT8] = BT_REDUCE_ROW(i8),      [BT_UINT8] = BT_REDUCE_ROW(u8),
    [BT_INT32] = BT_REDUCE_ROW(i32),    [BT_UINT32] = BT_REDUCE_ROW(u32),
    [BT_INT64] = BT_REDUCE_ROW(i64),    [BT_UINT64] = BT_REDUCE_ROW(u64),
    [BT_FLOAT16] = BT_REDUCE_ROW(f16),  [BT_FLOAT32] = BT_REDUCE_ROW(f32),
    [BT_FLOAT64] = BT_REDUCE_ROW(f64),  [BT_BFLOAT16] = BT_REDUCE_ROW(bf16),
    [BT_FP8E4M3] = BT_REDUCE_ROW(e4m3), [BT_FP8E5M2] = BT_REDUCE_ROW(e5m2),
};

#define BT_FAST2_ENTRY(NAME)                                                                       \
    {                                                                                              \
        NAME##_out, NAME##_ip_a, NAME##_ip_b                                                       \
    }
#define BT_FAST2_ROW(DT)                                                                           \
    {                                                                                              \
        [BT_OP_SUM] = BT_FAST2_ENTRY(bt_reduce_##DT##_sum),                                        \
        [BT_OP_PROD] = BT_FAST2_ENTRY(bt_reduce_##DT##_prod),                                      \
        [BT_OP_MAX] = BT_FAST2_ENTRY(bt_reduce_##DT##_max),                                        \
        [BT_OP_MIN] = BT_FAST2_ENTRY(bt_reduce_##DT##_min),                                        \
    }

/* Narrow types have no entry: they always go through float blocks. */
static const struct bt_reduce_fast2 bt_reduce_fast2[BT_NUM_DTYPES][BT_NUM_BASE_OPS] = {
    [BT_INT8] = BT_FAST2_ROW(i8),     [BT_UINT8] = BT_FAST2_ROW(u8),
    [BT_INT32] = BT_FAST2_ROW(i32),   [BT_UINT32] = BT_FAST2_ROW(u32),
    [BT_INT64] = BT_FAST2_ROW(i64),   [BT_UINT64] = BT_FAST2_ROW(u64),
    [BT_FLOAT32] = BT_FAST2_ROW(f32), [BT_FLOAT64] = BT_FAST2_ROW(f64),
};

void bt_host_reduce(const struct bt_redop *op, void *dst, const void *const *srcs, int nsrcs,
                    unsigned pre_mask, int post, size_t count)
{
    struct bt_reduce_args a;
    const struct bt_reduce_fast2 *f2;

    assert(op->dtype < BT_NUM_DTYPES && op->op < BT_NUM_BASE_OPS);
    assert(nsrcs >= 1 && nsrcs <= 8);
    if (count == 0)
        return;

    a.dst = dst;
    a.srcs = srcs;
    a.nsrcs = nsrcs;
    a.pre = op->pre_mul ? pre_mask & ((1u << nsrcs) - 1) : 0;
    a.post = post && op->post_div;
    a.count = count;

    if (!a.pre && !a.post) {
        if (nsrcs == 1) {
            /* A copy keeps every bit, NaN payloads included. */
            bt_host_copy(dst, srcs[0], count * bt_dtype_size(op->dtype));
            return;
        }
        f2 = &bt_reduce_fast2[op->dtype][op->op];
        if (nsrcs == 2 && f2->out && srcs[0] != srcs[1]) {
            if (dst == srcs[0])
                f2->ip_a(dst, srcs[1], count);
            else if (dst == srcs[1])
                f2->ip_b(dst, srcs[0], count);
            else
                f2->out(dst, srcs[0], srcs[1], count);
            return;
        }
    }

    a.sf = (float)op->scalar_f;
    a.sd = op->scalar_f;
    a.si = op->scalar_i;
    if (a.post) {
        assert(op->divisor >= 1 && op->divisor <= (uint64_t)INT64_MAX);
        a.fdiv = (float)op->divisor;
        a.ddiv = (double)op->divisor;
        a.sdiv = (int64_t)op->divisor;
        a.udiv = op->divisor;
    } else {
        a.fdiv = 1.0f;
        a.ddiv = 1.0;
        a.sdiv = 1;
        a.udiv = 1;
    }
    bt_reduce_general[op->dtype][op->op](&a);
}

void bt_host_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes)
        memcpy(dst, src, bytes);
}
