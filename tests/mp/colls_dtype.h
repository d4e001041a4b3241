/*
 * The data types of the collectives suites (colls_suite.c), written from the format definitions
 * (sign bit, exponent bits, bias, fraction bits) and independent of src/coll/dtype.h, so that
 * the reference the library is checked against shares no code with it: decode and encode
 * (round to nearest even) of half, bfloat16, fp8 e4m3 (no infinities, one NaN per sign,
 * saturating) and e5m2 (saturating, as CUDA's satfinite conversions), the spacing of values
 * for error bounds, integer width helpers, and a self-test against known patterns.
 */
#ifndef BT_TEST_COLLS_DTYPE_H
#define BT_TEST_COLLS_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "colls_suite.h" /* enum ct_dtype_id */
#include "harness.h"

/* ---- data types: an independent codec ------------------------------------------------- */

enum { CT_K_SINT, CT_K_UINT, CT_K_FLOAT };

struct ct_dtype {
    const char *name;
    int size, kind;
    int mbits, ebits, bias, has_inf; /* floats only */
};

static const struct ct_dtype ct_dt[CT_NDTYPES] = {
    {"int8", 1, CT_K_SINT, 0, 0, 0, 0},         {"uint8", 1, CT_K_UINT, 0, 0, 0, 0},
    {"int32", 4, CT_K_SINT, 0, 0, 0, 0},        {"uint32", 4, CT_K_UINT, 0, 0, 0, 0},
    {"int64", 8, CT_K_SINT, 0, 0, 0, 0},        {"uint64", 8, CT_K_UINT, 0, 0, 0, 0},
    {"half", 2, CT_K_FLOAT, 10, 5, 15, 1},      {"float", 4, CT_K_FLOAT, 23, 8, 127, 1},
    {"double", 8, CT_K_FLOAT, 52, 11, 1023, 1}, {"bfloat16", 2, CT_K_FLOAT, 7, 8, 127, 1},
    {"e4m3", 1, CT_K_FLOAT, 3, 4, 7, 0},        {"e5m2", 1, CT_K_FLOAT, 2, 5, 15, 1},
};

static uint64_t ct_trunc(int dt, uint64_t v)
{
    int nb = ct_dt[dt].size * 8;
    return nb == 64 ? v : v & ((1ull << nb) - 1);
}

static int64_t ct_sext(int dt, uint64_t v)
{
    int shift = 64 - ct_dt[dt].size * 8;
    return (int64_t)(v << shift) >> shift;
}

/* An integer element as a 64-bit value whose low `width` bits are the element and whose
 * ordering (signed or unsigned, per kind) is the element's. */
static uint64_t ct_int_val(int dt, uint64_t bits)
{
    return ct_dt[dt].kind == CT_K_SINT ? (uint64_t)ct_sext(dt, bits) : bits;
}

/* Decode a narrow binary float from its definition: 1 sign bit, ebits exponent, mbits
 * fraction, bias; e4m3 has no infinities and one NaN per sign (all ones). */
static double ct_fp_decode_slow(int dt, uint64_t bits)
{
    const struct ct_dtype *t = &ct_dt[dt];
    int nb = t->size * 8;
    int sign = (int)((bits >> (nb - 1)) & 1);
    uint64_t emax = (1u << t->ebits) - 1, mmax = (1ull << t->mbits) - 1;
    uint64_t e = (bits >> t->mbits) & emax, m = bits & mmax;
    double v;
    if (e == emax && (t->has_inf || m == mmax))
        v = t->has_inf && m == 0 ? INFINITY : NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - t->bias - t->mbits);
    else
        v = ldexp((double)(m | (1ull << t->mbits)), (int)e - t->bias - t->mbits);
    return sign ? -v : v;
}

static double ct_tab16[2][65536]; /* half, bfloat16 */
static double ct_tab8[2][256];    /* e4m3, e5m2 */

static void ct_tables_init(void)
{
    for (unsigned b = 0; b < 65536; b++) {
        ct_tab16[0][b] = ct_fp_decode_slow(CT_HALF, b);
        ct_tab16[1][b] = ct_fp_decode_slow(CT_BF16, b);
    }
    for (unsigned b = 0; b < 256; b++) {
        ct_tab8[0][b] = ct_fp_decode_slow(CT_E4M3, b);
        ct_tab8[1][b] = ct_fp_decode_slow(CT_E5M2, b);
    }
}

static inline double ct_decode(int dt, uint64_t bits)
{
    switch (dt) {
    case CT_FLOAT: {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case CT_DOUBLE: {
        double d;
        memcpy(&d, &bits, 8);
        return d;
    }
    case CT_HALF:
        return ct_tab16[0][bits & 0xffff];
    case CT_BF16:
        return ct_tab16[1][bits & 0xffff];
    case CT_E4M3:
        return ct_tab8[0][bits & 0xff];
    case CT_E5M2:
        return ct_tab8[1][bits & 0xff];
    default:
        return (double)ct_sext(dt, bits);
    }
}

/* Encode a double into a float type, rounding to nearest even. Overflow: half/bf16 -> inf,
 * fp8 -> the largest finite value (saturation, as CUDA's satfinite conversions). */
static uint64_t ct_encode(int dt, double v)
{
    const struct ct_dtype *t = &ct_dt[dt];
    if (dt == CT_FLOAT) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    if (dt == CT_DOUBLE) {
        uint64_t u;
        memcpy(&u, &v, 8);
        return u;
    }
    int nb = t->size * 8;
    uint64_t sbit = (uint64_t)(signbit(v) ? 1 : 0) << (nb - 1);
    uint64_t emax = (1u << t->ebits) - 1, one = 1ull << t->mbits;
    uint64_t maxfin =
        t->has_inf ? ((emax - 1) << t->mbits) | (one - 1) : (emax << t->mbits) | (one - 2);
    if (isnan(v))
        return sbit | (emax << t->mbits) | (one - 1);
    double a = fabs(v);
    if (a == 0)
        return sbit;
    uint64_t out;
    if (isinf(a)) {
        out = dt == CT_HALF || dt == CT_BF16 ? emax << t->mbits : maxfin;
        return sbit | out;
    }
    int ex;
    (void)frexp(a, &ex);
    int E = ex - 1; /* a in [2^E, 2^(E+1)) */
    if (E < 1 - t->bias)
        E = 1 - t->bias;
    double r = nearbyint(ldexp(a, t->mbits - E)); /* units of the ulp at E; ties to even */
    if (r >= ldexp(1.0, t->mbits + 1)) {
        E++;
        r = ldexp(r, -1);
    }
    if (r < (double)one)
        out = (uint64_t)r; /* subnormal (or carry into the smallest normal, same pattern) */
    else
        out = ((uint64_t)(E + t->bias) << t->mbits) | ((uint64_t)r - one);
    if (out > maxfin)
        out = dt == CT_HALF || dt == CT_BF16 ? emax << t->mbits : maxfin;
    return sbit | out;
}

/* The spacing of the type's values at magnitude m (subnormal spacing below the normals). */
static double ct_ulp(int dt, double m)
{
    const struct ct_dtype *t = &ct_dt[dt];
    int E = 1 - t->bias;
    if (m > 0) {
        int ex;
        (void)frexp(m, &ex);
        if (ex - 1 > E)
            E = ex - 1;
    }
    return ldexp(1.0, E - t->mbits);
}

/* Known patterns from the format definitions, and encode(decode(b)) == b for every finite
 * narrow pattern: the codec the reference relies on is checked before anything else. */
static void ct_codec_selftest(void)
{
    static const struct {
        int dt;
        double v;
        uint64_t bits;
    } known[] = {
        {CT_HALF, 1.0, 0x3c00},
        {CT_HALF, -2.0, 0xc000},
        {CT_HALF, 65504.0, 0x7bff},
        {CT_HALF, 0x1p-24, 0x0001},
        {CT_HALF, 0x1p-14, 0x0400},
        {CT_HALF, 0.25, 0x3400},
        {CT_BF16, 1.0, 0x3f80},
        {CT_BF16, -0.5, 0xbf00},
        {CT_BF16, 0x1p-133, 0x0001},
        {CT_E4M3, 1.0, 0x38},
        {CT_E4M3, 448.0, 0x7e},
        {CT_E4M3, 0x1p-9, 0x01},
        {CT_E4M3, -0x1p-6, 0x88},
        {CT_E5M2, 1.0, 0x3c},
        {CT_E5M2, 57344.0, 0x7b},
        {CT_E5M2, 0x1p-16, 0x01},
        {CT_E5M2, -0x1p-14, 0x84},
        {CT_FLOAT, 1.5, 0x3fc00000},
        {CT_DOUBLE, 1.0, 0x3ff0000000000000ull},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        BT_TEST_CHECK(ct_encode(known[i].dt, known[i].v) == known[i].bits,
                      "codec: encode %s %g = 0x%llx, want 0x%llx", ct_dt[known[i].dt].name,
                      known[i].v, (unsigned long long)ct_encode(known[i].dt, known[i].v),
                      (unsigned long long)known[i].bits);
        BT_TEST_CHECK(ct_decode(known[i].dt, known[i].bits) == known[i].v,
                      "codec: decode %s 0x%llx = %g, want %g", ct_dt[known[i].dt].name,
                      (unsigned long long)known[i].bits, ct_decode(known[i].dt, known[i].bits),
                      known[i].v);
    }
    static const int narrow[] = {CT_HALF, CT_BF16, CT_E4M3, CT_E5M2};
    for (int k = 0; k < 4; k++) {
        int dt = narrow[k];
        uint64_t n = 1ull << (8 * ct_dt[dt].size);
        for (uint64_t b = 0; b < n; b++) {
            double v = ct_decode(dt, b);
            if (!isfinite(v))
                continue;
            BT_TEST_CHECK(ct_encode(dt, v) == b, "codec: %s 0x%llx -> %g -> 0x%llx", ct_dt[dt].name,
                          (unsigned long long)b, v, (unsigned long long)ct_encode(dt, v));
        }
    }
    /* Ties go to even: 1 + 2^-11 is halfway between half 1.0 and its successor. */
    BT_TEST_CHECK(ct_encode(CT_HALF, 1.0 + 0x1p-11) == 0x3c00, "codec: half tie");
    BT_TEST_CHECK(ct_encode(CT_HALF, 1.0 + 3 * 0x1p-11) == 0x3c02, "codec: half tie up");
    BT_TEST_CHECK(ct_encode(CT_E4M3, 1000.0) == 0x7e, "codec: e4m3 saturates");
}

#endif
