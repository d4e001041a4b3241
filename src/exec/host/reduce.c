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
 * Three shapes:
 *   - fast2 (integers, float32, float64; nsrcs == 2, no pre-multiply, no post-divide):
 *     d = a OP b straight from memory to memory; in place, d = d OP b or d = a OP d, so
 *     that no two restrict pointers ever name the same buffer.
 *   - general (the same types, any other case): per block, acc = s0 [* scalar],
 *     acc = acc OP sK [* scalar] for K = 1..n-1, then dst = acc [/ divisor].
 *   - narrow (half, bfloat16, fp8): the same with every source widened into a float block
 *     first and the result narrowed once, by per-type block converters that come in
 *     baseline, AVX2 and F16C builds chosen at run time.
 * In the block shapes dst is written only after every source has been read for the block,
 * so dst == any srcs[K] is safe.
 * Integer sum/product go through the unsigned type (wrapping, no signed-overflow UB); the
 * conversion back to the signed type is modular in GCC and Clang.
 */
#include "exec/host/reduce.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "coll/dtype.h"

/* x86-64 with GCC or Clang: AVX2 and F16C copies of the narrow-type converters, chosen at
 * run time; everything else builds for the baseline ISA only. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BT_REDUCE_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define BT_REDUCE_X86 0
#endif

#define BT_REDUCE_BLK 256

/* Block converters of one narrow type: widen n elements into floats, narrow them back. */
struct bt_cvt {
    void (*in)(float *restrict out, const void *restrict in, size_t n);
    void (*out)(void *restrict out, const float *restrict in, size_t n);
    size_t size;
};

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
    const struct bt_cvt *cvt; /* narrow types */
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
#define BT_MUL_I(U, x, c) ((U)(x) * (U)(c).si)
#define BT_MUL_F(U, x, c) ((x) * (c).sf)
#define BT_MUL_D(U, x, c) ((x) * (c).sd)
#define BT_DIV_S(x, c) ((x) / (c).sdiv)
#define BT_DIV_U(x, c) ((x) / (c).udiv)
#define BT_DIV_F(x, c) ((x) / (c).fdiv)
#define BT_DIV_D(x, c) ((x) / (c).ddiv)

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

/* The loop `for (i = 0; i < n; i++) body`, with a copy for n == BT_REDUCE_BLK that the
 * vectorizer accepts at -O2 (see the top of this file). */
#define BT_LOOP(n, i, body)                                                                        \
    do {                                                                                           \
        if ((n) == BT_REDUCE_BLK) {                                                                \
            for ((i) = 0; (i) < BT_REDUCE_BLK; (i)++) {                                            \
                body;                                                                              \
            }                                                                                      \
        } else {                                                                                   \
            for ((i) = 0; (i) < (n); (i)++) {                                                      \
                body;                                                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define BT_CVT_FUNCS(DT, SUFFIX, ATTR, T, LD, ST)                                                  \
    ATTR static void bt_cvt_##DT##_in##SUFFIX(float *restrict o, const void *restrict iv,          \
                                              size_t n)                                            \
    {                                                                                              \
        const T *restrict in = iv;                                                                 \
        size_t i;                                                                                  \
        BT_LOOP(n, i, o[i] = LD(in[i]));                                                           \
    }                                                                                              \
    ATTR static void bt_cvt_##DT##_out##SUFFIX(void *restrict ov, const float *restrict in,        \
                                               size_t n)                                           \
    {                                                                                              \
        T *restrict o = ov;                                                                        \
        size_t i;                                                                                  \
        BT_LOOP(n, i, o[i] = ST(in[i]));                                                           \
    }

#define BT_CVT_ALL(SUFFIX, ATTR)                                                                   \
    BT_CVT_FUNCS(f16, SUFFIX, ATTR, uint16_t, bt_ld_f16, bt_st_f16)                                \
    BT_CVT_FUNCS(bf16, SUFFIX, ATTR, uint16_t, bt_bf16_to_float, bt_float_to_bf16)                 \
    BT_CVT_FUNCS(e4m3, SUFFIX, ATTR, uint8_t, bt_ld_e4m3, bt_st_e4m3)                              \
    BT_CVT_FUNCS(e5m2, SUFFIX, ATTR, uint8_t, bt_ld_e5m2, bt_st_e5m2)

#define BT_CVT_TABLE(NAME, SUFFIX)                                                                 \
    static const struct bt_cvt NAME[BT_NUM_DTYPES] = {                                             \
        [BT_FLOAT16] = {bt_cvt_f16_in##SUFFIX, bt_cvt_f16_out##SUFFIX, 2},                         \
        [BT_BFLOAT16] = {bt_cvt_bf16_in##SUFFIX, bt_cvt_bf16_out##SUFFIX, 2},                      \
        [BT_FP8E4M3] = {bt_cvt_e4m3_in##SUFFIX, bt_cvt_e4m3_out##SUFFIX, 1},                       \
        [BT_FP8E5M2] = {bt_cvt_e5m2_in##SUFFIX, bt_cvt_e5m2_out##SUFFIX, 1},                       \
    };

BT_CVT_ALL(, )
BT_CVT_TABLE(bt_cvt_base, )

#if BT_REDUCE_X86
/* The same loops compiled for AVX2: twice the lanes, and variable shifts, for about 2x on
 * the conversion-bound narrow types. */
BT_CVT_ALL(_avx2, __attribute__((target("avx2"))))
BT_CVT_TABLE(bt_cvt_avx2, _avx2)

/*
 * F16C: hardware half <-> float, 8 lanes. vcvtps2ph with an immediate round-to-nearest-even
 * rounds like bt_float_to_half, overflow to inf included, and produces subnormal halves
 * whatever MXCSR.FTZ says; NaNs come out quiet with the top payload bits, as in dtype.h.
 * The tail uses dtype.h.
 */
__attribute__((target("avx2,f16c"))) static void
bt_cvt_f16_in_f16c(float *restrict o, const void *restrict iv, size_t n)
{
    const uint16_t *restrict in = iv;
    size_t i = 0;

    for (; n - i >= 8; i += 8)
        _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
    for (; i < n; i++)
        o[i] = bt_half_to_float(in[i]);
}

__attribute__((target("avx2,f16c"))) static void
bt_cvt_f16_out_f16c(void *restrict ov, const float *restrict in, size_t n)
{
    uint16_t *restrict o = ov;
    size_t i = 0;

    for (; n - i >= 8; i += 8)
        _mm_storeu_si128((__m128i *)(o + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        o[i] = bt_float_to_half(in[i]);
}

static const struct bt_cvt bt_cvt_f16c = {bt_cvt_f16_in_f16c, bt_cvt_f16_out_f16c, 2};

/* 0: not probed yet, 1: baseline, 2: AVX2, 3: AVX2 and F16C. Threads racing on the first
 * call compute the same value, so relaxed atomics suffice. */
static atomic_int bt_reduce_isa_hw;

static int bt_reduce_isa_probe(void)
{
    int isa = atomic_load_explicit(&bt_reduce_isa_hw, memory_order_relaxed);
    unsigned eax, ebx, ecx, edx;

    if (isa)
        return isa;
    isa = 1;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) { /* checks the OS saves ymm state too */
        isa = 2;
        if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C))
            isa = 3;
    }
    atomic_store_explicit(&bt_reduce_isa_hw, isa, memory_order_relaxed);
    return isa;
}
#endif

/* Upper bound on the level used, lowered by tests through bt_host_reduce_isa(). */
static atomic_int bt_reduce_isa_cap = 3;

int bt_host_reduce_isa(int level)
{
    int hw = 1, cap;

#if BT_REDUCE_X86
    hw = bt_reduce_isa_probe();
#endif
    if (level > 0)
        atomic_store_explicit(&bt_reduce_isa_cap, level, memory_order_relaxed);
    cap = atomic_load_explicit(&bt_reduce_isa_cap, memory_order_relaxed);
    return hw < cap ? hw : cap;
}

/* Converters for a narrow dtype on this CPU. */
static const struct bt_cvt *bt_reduce_cvt(int dtype)
{
#if BT_REDUCE_X86
    int isa = bt_host_reduce_isa(0);
    if (isa == 3 && dtype == BT_FLOAT16)
        return &bt_cvt_f16c;
    if (isa >= 2)
        return &bt_cvt_avx2[dtype];
#endif
    return &bt_cvt_base[dtype];
}

/*
 * General kernel NAME for a native type T (U: its unsigned twin for integers). The
 * arguments are copied to a local whose address never escapes, so that no store to acc or
 * dst can alias the scalar or the divisor, and the block loops need no runtime alias check.
 */
#define BT_REDUCE_GENERAL(NAME, T, U, OP, MUL, DIV)                                                \
    static void NAME(const struct bt_reduce_args *cp)                                              \
    {                                                                                              \
        const struct bt_reduce_args c = *cp;                                                       \
        T acc[BT_REDUCE_BLK];                                                                      \
        size_t b, n, i;                                                                            \
        int k;                                                                                     \
                                                                                                   \
        for (b = 0; b < c.count; b += n) {                                                         \
            const T *s0 = (const T *)c.srcs[0] + b;                                                \
            T *d = (T *)c.dst + b;                                                                 \
            n = c.count - b < BT_REDUCE_BLK ? c.count - b : BT_REDUCE_BLK;                         \
            if (c.pre & 1u)                                                                        \
                BT_LOOP(n, i, acc[i] = (T)MUL(U, s0[i], c));                                       \
            else                                                                                   \
                BT_LOOP(n, i, acc[i] = s0[i]);                                                     \
            for (k = 1; k < c.nsrcs; k++) {                                                        \
                const T *s = (const T *)c.srcs[k] + b;                                             \
                if (c.pre & (1u << k))                                                             \
                    BT_LOOP(n, i, acc[i] = (T)OP(U, acc[i], (T)MUL(U, s[i], c)));                  \
                else                                                                               \
                    BT_LOOP(n, i, acc[i] = (T)OP(U, acc[i], s[i]));                                \
            }                                                                                      \
            if (c.post)                                                                            \
                BT_LOOP(n, i, d[i] = (T)DIV(acc[i], c));                                           \
            else                                                                                   \
                BT_LOOP(n, i, d[i] = acc[i]);                                                      \
        }                                                                                          \
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
    BT_REDUCE_GENERAL(bt_reduce_##DT##_sum, T, U, SUM, MUL, DIV)                                   \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_prod, T, U, PROD, MUL, DIV)                                 \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_max, T, U, MAX, MUL, DIV)                                   \
    BT_REDUCE_GENERAL(bt_reduce_##DT##_min, T, U, MIN, MUL, DIV)                                   \
    BT_REDUCE_FAST2(bt_reduce_##DT##_sum, T, U, SUM)                                               \
    BT_REDUCE_FAST2(bt_reduce_##DT##_prod, T, U, PROD)                                             \
    BT_REDUCE_FAST2(bt_reduce_##DT##_max, T, U, MAX)                                               \
    BT_REDUCE_FAST2(bt_reduce_##DT##_min, T, U, MIN)

/*
 * Narrow types, one kernel per op for all four: per block, widen each source into a float
 * array, fold in float, narrow once. A pre-multiplied source is rounded to its type before
 * it is folded, as the copy a peer receives is: a one-shot AllReduce folds its own input
 * on its own rank and the others' copies on theirs, and all ranks must get the same bits. The
 * scalars are copied to locals because acc and t escape to the converters, and a float store there
 * could otherwise alias c->sf.
 */
#define BT_REDUCE_NARROW(NAME, OP)                                                                 \
    static void NAME(const struct bt_reduce_args *c)                                               \
    {                                                                                              \
        float acc[BT_REDUCE_BLK], t[BT_REDUCE_BLK];                                                \
        char rt[BT_REDUCE_BLK * 2]; /* a pre-multiplied source, narrowed and widened again */      \
        const struct bt_cvt *cv = c->cvt;                                                          \
        const float sf = c->sf, fdiv = c->fdiv;                                                    \
        size_t b, n, i;                                                                            \
        int k;                                                                                     \
                                                                                                   \
        for (b = 0; b < c->count; b += n) {                                                        \
            n = c->count - b < BT_REDUCE_BLK ? c->count - b : BT_REDUCE_BLK;                       \
            cv->in(acc, (const char *)c->srcs[0] + b * cv->size, n);                               \
            if (c->pre & 1u) {                                                                     \
                BT_LOOP(n, i, acc[i] *= sf);                                                       \
                cv->out(rt, acc, n);                                                               \
                cv->in(acc, rt, n);                                                                \
            }                                                                                      \
            for (k = 1; k < c->nsrcs; k++) {                                                       \
                cv->in(t, (const char *)c->srcs[k] + b * cv->size, n);                             \
                if (c->pre & (1u << k)) {                                                          \
                    BT_LOOP(n, i, t[i] *= sf);                                                     \
                    cv->out(rt, t, n);                                                             \
                    cv->in(t, rt, n);                                                              \
                }                                                                                  \
                BT_LOOP(n, i, acc[i] = OP(float, acc[i], t[i]));                                   \
            }                                                                                      \
            if (c->post)                                                                           \
                BT_LOOP(n, i, acc[i] /= fdiv);                                                     \
            cv->out((char *)c->dst + b * cv->size, acc, n);                                        \
        }                                                                                          \
    }

BT_REDUCE_NARROW(bt_reduce_narrow_sum, BT_FSUM)
BT_REDUCE_NARROW(bt_reduce_narrow_prod, BT_FPROD)
BT_REDUCE_NARROW(bt_reduce_narrow_max, BT_FMAX)
BT_REDUCE_NARROW(bt_reduce_narrow_min, BT_FMIN)

BT_REDUCE_NATIVE(i8, int8_t, uint8_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_S)
BT_REDUCE_NATIVE(u8, uint8_t, uint8_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_U)
BT_REDUCE_NATIVE(i32, int32_t, uint32_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_S)
BT_REDUCE_NATIVE(u32, uint32_t, uint32_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_U)
BT_REDUCE_NATIVE(i64, int64_t, uint64_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_S)
BT_REDUCE_NATIVE(u64, uint64_t, uint64_t, BT_ISUM, BT_IPROD, BT_MAX, BT_MIN, BT_MUL_I, BT_DIV_U)
BT_REDUCE_NATIVE(f32, float, float, BT_FSUM, BT_FPROD, BT_FMAX, BT_FMIN, BT_MUL_F, BT_DIV_F)
BT_REDUCE_NATIVE(f64, double, double, BT_FSUM, BT_FPROD, BT_FMAX, BT_FMIN, BT_MUL_D, BT_DIV_D)

#define BT_REDUCE_ROW_NARROW                                                                       \
    {                                                                                              \
        [BT_OP_SUM] = bt_reduce_narrow_sum, [BT_OP_PROD] = bt_reduce_narrow_prod,                  \
        [BT_OP_MAX] = bt_reduce_narrow_max, [BT_OP_MIN] = bt_reduce_narrow_min,                    \
    }

#define BT_REDUCE_ROW(DT)                                                                          \
    {                                                                                              \
        [BT_OP_SUM] = bt_reduce_##DT##_sum, [BT_OP_PROD] = bt_reduce_##DT##_prod,                  \
        [BT_OP_MAX] = bt_reduce_##DT##_max, [BT_OP_MIN] = bt_reduce_##DT##_min,                    \
    }

static const bt_reduce_fn bt_reduce_general[BT_NUM_DTYPES][BT_NUM_BASE_OPS] = {
    [BT_INT8] = BT_REDUCE_ROW(i8),       [BT_UINT8] = BT_REDUCE_ROW(u8),
    [BT_INT32] = BT_REDUCE_ROW(i32),     [BT_UINT32] = BT_REDUCE_ROW(u32),
    [BT_INT64] = BT_REDUCE_ROW(i64),     [BT_UINT64] = BT_REDUCE_ROW(u64),
    [BT_FLOAT16] = BT_REDUCE_ROW_NARROW, [BT_FLOAT32] = BT_REDUCE_ROW(f32),
    [BT_FLOAT64] = BT_REDUCE_ROW(f64),   [BT_BFLOAT16] = BT_REDUCE_ROW_NARROW,
    [BT_FP8E4M3] = BT_REDUCE_ROW_NARROW, [BT_FP8E5M2] = BT_REDUCE_ROW_NARROW,
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
    a.cvt = bt_cvt_base[op->dtype].in ? bt_reduce_cvt(op->dtype) : NULL; /* narrow types */
    bt_reduce_general[op->dtype][op->op](&a);
}

void bt_host_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes)
        memcpy(dst, src, bytes);
}
