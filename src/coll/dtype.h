/*
 * Conversions between float and the narrow floating types Baton reduces: IEEE binary16
 * (half), bfloat16, and the two OCP 8-bit formats, E4M3FN and E5M2. Header-only and
 * integer-only, so that the results do not depend on the FPU's rounding mode or on
 * flush-to-zero / denormals-are-zero settings, and so that the same code can be compiled
 * for the host and, with __host__ __device__, by nvcc.
 *
 * Narrow -> float is exact for every bit pattern.
 * Float -> narrow rounds to nearest, ties to even, subnormal results included. Then:
 *   half, bfloat16: overflow goes to +-inf, as IEEE 754 says.
 *   E4M3, E5M2:     saturating, like CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...):
 *                   every value whose rounding would exceed the largest finite value, and
 *                   +-inf itself, becomes +-max finite (448 for E4M3, 57344 for E5M2). So
 *                   an E5M2 inf read in, summed and written back comes out as 57344: that
 *                   is what the GPU path does, and the two executors must agree.
 *   NaN stays NaN with its sign. half and bfloat16 keep the top payload bits and set the
 *   quiet bit (so a signalling NaN comes back quiet, as hardware converters do); E4M3 has
 *   one NaN per sign (S.1111.111); E5M2 gives S.11111.1x with x the second payload bit,
 *   again CUDA's choice, so only the signalling 0x7d/0xfd come back changed (as 0x7f/0xff).
 */
#ifndef BT_COLL_DTYPE_H
#define BT_COLL_DTYPE_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define BT_DTYPE_FN static inline __host__ __device__
#else
#define BT_DTYPE_FN static inline
#endif

#define BT_E4M3_MAX 448.0f
#define BT_E5M2_MAX 57344.0f

BT_DTYPE_FN uint32_t bt_dtype_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

BT_DTYPE_FN float bt_dtype_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* y >> shift rounded to nearest, ties to even; 1 <= shift <= 24 and y < 2^31. Adding
 * half-1 carries exactly when the dropped bits exceed half; the extra +lsb makes an exact
 * half carry only when the kept part is odd. */
BT_DTYPE_FN uint32_t bt_dtype_rne_shr_(uint32_t y, unsigned shift)
{
    return (y + ((1u << (shift - 1)) - 1) + ((y >> shift) & 1)) >> shift;
}

/*
 * |f| given as float bits (sign clear, finite) rounded into a binary format with `mbits`
 * fraction bits and exponent bias `bias` (< 127, mbits <= 10). Returns the format's
 * exponent|fraction bits. A normal result is the float pattern re-biased and shifted, so a
 * rounding carry walks into the exponent field by itself; a result past the largest finite
 * value comes back as a larger pattern and the caller clamps it.
 */
BT_DTYPE_FN uint32_t bt_dtype_round_(uint32_t a, unsigned mbits, unsigned bias)
{
    uint32_t rebias = (127u - bias) << 23;
    uint32_t e, m, shift;

    if (a >= rebias + (1u << 23)) /* |f| >= 2^(1-bias): normal result */
        return bt_dtype_rne_shr_(a - rebias, 23 - mbits);
    /* Subnormal result: |f| = m * 2^(e-150) counted in units of 2^(1-bias-mbits). Here
     * e <= 127-bias, so shift >= 24-mbits >= 1. Past 24 the value is below half a unit. */
    e = a >> 23;
    m = (a & 0x7fffffu) | (e ? 0x800000u : 0);
    shift = 151 - (e ? e : 1) - bias - mbits;
    return shift > 24 ? 0 : bt_dtype_rne_shr_(m, shift);
}

/* Fraction/exponent fields of a finite narrow value -> float bits of its magnitude. A
 * subnormal's value m * 2^(1-bias-mbits) is computed in float: m is a small integer and
 * the scale a power of two, so the product is exact and normal (no FTZ/DAZ effect). */
BT_DTYPE_FN uint32_t bt_dtype_widen_(uint32_t e, uint32_t m, unsigned mbits, unsigned bias,
                                     float sub_scale)
{
    if (e == 0)
        return bt_dtype_f32_bits((float)m * sub_scale);
    return ((e + 127 - bias) << 23) | (m << (23 - mbits));
}

/* ---- IEEE binary16: 1.5.10, bias 15 ---- */

BT_DTYPE_FN float bt_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

    if (e == 0x1f) /* inf, NaN: payload moves up unchanged */
        return bt_dtype_f32_from_bits(sign | 0x7f800000u | (m << 13));
    return bt_dtype_f32_from_bits(sign | bt_dtype_widen_(e, m, 10, 15, 0x1p-24f));
}

BT_DTYPE_FN uint16_t bt_float_to_half(float f)
{
    uint32_t x = bt_dtype_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu, r;

    if (a > 0x7f800000u) /* NaN: quiet, top 9 payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 (65504 + half an ulp, tie to even = up), inf */
        return (uint16_t)(sign | 0x7c00u);
    r = bt_dtype_round_(a, 10, 15);
    return (uint16_t)(sign | r);
}

/* ---- bfloat16: 1.8.7, the top half of a float ---- */

BT_DTYPE_FN float bt_bf16_to_float(uint16_t b)
{
    return bt_dtype_f32_from_bits((uint32_t)b << 16);
}

BT_DTYPE_FN uint16_t bt_float_to_bf16(float f)
{
    uint32_t x = bt_dtype_f32_bits(f);

    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, top payload bits kept */
        return (uint16_t)((x >> 16) | 0x40u);
    /* Same exponent range as float, so rounding is a 16-bit round-to-even on the pattern;
     * a carry out of the largest finite value lands exactly on inf. */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ---- OCP E4M3FN: 1.4.3, bias 7, no inf, NaN = S.1111.111, max 448 = S.1111.110 ---- */

BT_DTYPE_FN float bt_e4m3_to_float(uint8_t v)
{
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t e = (v >> 3) & 0xfu, m = v & 0x7u;

    if (e == 0xf && m == 0x7)
        return bt_dtype_f32_from_bits(sign | 0x7fc00000u);
    return bt_dtype_f32_from_bits(sign | bt_dtype_widen_(e, m, 3, 7, 0x1p-9f));
}

BT_DTYPE_FN uint8_t bt_float_to_e4m3(float f)
{
    uint32_t x = bt_dtype_f32_bits(f);
    uint32_t sign = (x >> 24) & 0x80u, a = x & 0x7fffffffu, r;

    if (a > 0x7f800000u)
        return (uint8_t)(sign | 0x7fu);
    if (a >= 0x43e00000u) /* >= 448, inf included: saturate */
        return (uint8_t)(sign | 0x7eu);
    r = bt_dtype_round_(a, 3, 7);
    return (uint8_t)(sign | (r > 0x7eu ? 0x7eu : r));
}

/* ---- OCP E5M2: 1.5.2, bias 15, IEEE-like inf/NaN, max 57344 = S.11110.11 ---- */

BT_DTYPE_FN float bt_e5m2_to_float(uint8_t v)
{
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t e = (v >> 2) & 0x1fu, m = v & 0x3u;

    if (e == 0x1f)
        return bt_dtype_f32_from_bits(sign | 0x7f800000u | (m << 21));
    return bt_dtype_f32_from_bits(sign | bt_dtype_widen_(e, m, 2, 15, 0x1p-16f));
}

BT_DTYPE_FN uint8_t bt_float_to_e5m2(float f)
{
    uint32_t x = bt_dtype_f32_bits(f);
    uint32_t sign = (x >> 24) & 0x80u, a = x & 0x7fffffffu, r;

    if (a > 0x7f800000u)
        return (uint8_t)(sign | 0x7eu | ((a >> 21) & 1u));
    if (a >= 0x47600000u) /* >= 57344, inf included: saturate */
        return (uint8_t)(sign | 0x7bu);
    r = bt_dtype_round_(a, 2, 15);
    return (uint8_t)(sign | (r > 0x7bu ? 0x7bu : r));
}

#endif
