/*
 * Data check: every rank fills its input with small integers that depend on the rank and
 * the element index, and checks every element of its output against a value computed
 * here, independently of the library, in double.
 *
 * The values are chosen per (dtype, op, nranks) so that every result, and every partial
 * result in whatever order the library adds, is an integer the dtype holds exactly
 * (integers up to 16 in fp8 e4m3, 8 in e5m2, 256 in bfloat16, 2048 in half). So sums,
 * products, max and min are compared bit for bit, as nccl-tests does. Only a floating
 * point Avg is inexact (the library multiplies by 1/n before summing); it gets a bound in
 * ULPs, see perf_element_ok.
 */
#include <math.h>
#include <string.h>

#include "perf.h"

/* value(r, i) = (17 r + 13 i) mod m: 13 and 17 are prime to every m <= 11, so values
 * change with both the rank and the index for every modulus. */
#define PERF_SCHEME_MOD 0
/* value(r, i) = 1 if (r + i) mod m == 0 else 0: for sums over more ranks than the dtype
 * can count (fp8); at most ceil(n/m) ranks contribute a 1 to any element. */
#define PERF_SCHEME_SPARSE 1
/* value(r, i) = 2 if (r + i) mod m == 0 else 1: products are powers of two, at most
 * ceil(n/m) factors of 2. */
#define PERF_SCHEME_PROD 2

#define PERF_MOD_MAX 11u

/* ---- dtype conversions (round to nearest even; written here, not borrowed from the
 * library, so that a conversion bug there cannot hide in the check) ---- */

static uint64_t perf_fp_encode(double x, int eb, int mb, int finite_only)
{
    const uint64_t sign = signbit(x) ? 1 : 0;
    const int bias = (1 << (eb - 1)) - 1;
    const uint64_t expmask = (1u << eb) - 1;
    const uint64_t hidden = (uint64_t)1 << mb;
    const uint64_t maxfield = finite_only ? expmask : expmask - 1;
    const uint64_t maxmant = finite_only ? hidden - 2 : hidden - 1;
    double a = fabs(x);
    uint64_t bits;

    if (isnan(x)) {
        bits = (expmask << mb) | (hidden - 1);
    } else if (isinf(a)) {
        bits = finite_only ? (expmask << mb) | (hidden - 1) : expmask << mb;
    } else if (a == 0) {
        bits = 0;
    } else {
        int e;
        frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): a in [2^(e-1), 2^e) */
        int exp = e - 1;
        if (exp < 1 - bias) {
            exp = 1 - bias; /* subnormal: the scale of the smallest normal */
        }
        double q = nearbyint(ldexp(a, mb - exp)); /* significand with hidden bit */
        if (q >= (double)(hidden << 1)) {
            q /= 2; /* rounding carried into the next binade */
            exp++;
        }
        uint64_t qi = (uint64_t)q;
        if (qi < hidden) {
            bits = qi; /* subnormal (or zero after rounding) */
        } else {
            uint64_t field = (uint64_t)(exp + bias);
            uint64_t mant = qi - hidden;
            if (field > maxfield || (field == maxfield && mant > maxmant)) {
                /* Overflow: infinity, or NaN where the format has no infinity. */
                bits = finite_only ? (expmask << mb) | (hidden - 1) : expmask << mb;
            } else {
                bits = (field << mb) | mant;
            }
        }
    }
    return (sign << (eb + mb)) | bits;
}

static double perf_fp_decode(uint64_t v, int eb, int mb, int finite_only)
{
    const int bias = (1 << (eb - 1)) - 1;
    const uint64_t expmask = (1u << eb) - 1;
    const uint64_t mmask = ((uint64_t)1 << mb) - 1;
    uint64_t sign = (v >> (eb + mb)) & 1;
    uint64_t field = (v >> mb) & expmask;
    uint64_t mant = v & mmask;
    double r;
    if (field == expmask && !finite_only) {
        r = mant ? NAN : INFINITY;
    } else if (field == expmask && finite_only && mant == mmask) {
        r = NAN;
    } else if (field == 0) {
        r = ldexp((double)mant, 1 - bias - mb);
    } else {
        r = ldexp((double)(mant | (mmask + 1)), (int)field - bias - mb);
    }
    return sign ? -r : r;
}

void perf_encode(const struct perf_dtype *t, double v, void *dst)
{
    switch (t->nccl) {
    case ncclInt8: {
        int8_t x = (int8_t)v;
        memcpy(dst, &x, 1);
        break;
    }
    case ncclUint8: {
        uint8_t x = (uint8_t)v;
        memcpy(dst, &x, 1);
        break;
    }
    case ncclInt32: {
        int32_t x = (int32_t)v;
        memcpy(dst, &x, 4);
        break;
    }
    case ncclUint32: {
        uint32_t x = (uint32_t)v;
        memcpy(dst, &x, 4);
        break;
    }
    case ncclInt64: {
        int64_t x = (int64_t)v;
        memcpy(dst, &x, 8);
        break;
    }
    case ncclUint64: {
        uint64_t x = (uint64_t)v;
        memcpy(dst, &x, 8);
        break;
    }
    case ncclFloat32: {
        float x = (float)v;
        memcpy(dst, &x, 4);
        break;
    }
    case ncclFloat64:
        memcpy(dst, &v, 8);
        break;
    default: {
        /* half, bfloat16, fp8: little-endian, like the hosts we run on */
        uint64_t bits = perf_fp_encode(v, t->ebits, t->mbits, t->finite_only);
        if (t->size == 2) {
            uint16_t x = (uint16_t)bits;
            memcpy(dst, &x, 2);
        } else {
            uint8_t x = (uint8_t)bits;
            memcpy(dst, &x, 1);
        }
        break;
    }
    }
}

double perf_decode(const struct perf_dtype *t, const void *src)
{
    switch (t->nccl) {
    case ncclInt8: {
        int8_t x;
        memcpy(&x, src, 1);
        return x;
    }
    case ncclUint8: {
        uint8_t x;
        memcpy(&x, src, 1);
        return x;
    }
    case ncclInt32: {
        int32_t x;
        memcpy(&x, src, 4);
        return x;
    }
    case ncclUint32: {
        uint32_t x;
        memcpy(&x, src, 4);
        return x;
    }
    case ncclInt64: {
        int64_t x;
        memcpy(&x, src, 8);
        return (double)x;
    }
    case ncclUint64: {
        uint64_t x;
        memcpy(&x, src, 8);
        return (double)x;
    }
    case ncclFloat32: {
        float x;
        memcpy(&x, src, 4);
        return x;
    }
    case ncclFloat64: {
        double x;
        memcpy(&x, src, 8);
        return x;
    }
    default: {
        uint64_t bits;
        if (t->size == 2) {
            uint16_t x;
            memcpy(&x, src, 2);
            bits = x;
        } else {
            uint8_t x;
            memcpy(&x, src, 1);
            bits = x;
        }
        return perf_fp_decode(bits, t->ebits, t->mbits, t->finite_only);
    }
    }
}

/* ---- values ---- */

static unsigned perf_ceil_div(unsigned a, unsigned b)
{
    return (a + b - 1) / b;
}

void perf_plan_init(struct perf_data_plan *p, const struct perf_dtype *t, enum perf_op_id op,
                    int nranks)
{
    const double max = t->max_exact;
    const unsigned n = (unsigned)nranks;
    p->nranks = nranks;
    p->op = op;
    p->dtype = t;
    switch (op) {
    case PERF_OP_PROD: {
        /* At most k factors of 2 per element, with 2^k exact (and <= 64). */
        unsigned k = 0;
        while (k < 6 && ldexp(1.0, (int)k + 1) <= max) {
            k++;
        }
        p->scheme = PERF_SCHEME_PROD;
        p->m = perf_ceil_div(n, k);
        if (p->m < 2) {
            p->m = 2;
        }
        break;
    }
    case PERF_OP_MAX:
    case PERF_OP_MIN:
        p->scheme = PERF_SCHEME_MOD;
        p->m = max + 1 < PERF_MOD_MAX ? (unsigned)max + 1 : PERF_MOD_MAX;
        break;
    default: {
        /* Sums: n values of at most (m-1) * scale must add up to at most max. */
        double scale = op == PERF_OP_MULSUM ? 2.0 : 1.0;
        double limit = floor(max / scale / n);
        if (limit >= 1) {
            p->scheme = PERF_SCHEME_MOD;
            p->m = limit + 1 < PERF_MOD_MAX ? (unsigned)limit + 1 : PERF_MOD_MAX;
        } else {
            /* At most ceil(n/m) <= floor(max/scale) ranks add a 1 to any element. */
            p->scheme = PERF_SCHEME_SPARSE;
            p->m = perf_ceil_div(n, (unsigned)floor(max / scale));
        }
        break;
    }
    }
}

double perf_value(const struct perf_data_plan *p, int rank, size_t i)
{
    switch (p->scheme) {
    case PERF_SCHEME_MOD:
        return (double)(((size_t)rank * 17 + (i % p->m) * 13) % p->m);
    case PERF_SCHEME_SPARSE:
        return ((size_t)rank + i % p->m) % p->m == 0 ? 1.0 : 0.0;
    default:
        return ((size_t)rank + i % p->m) % p->m == 0 ? 2.0 : 1.0;
    }
}

double perf_mulsum_scalar(int rank)
{
    return rank % 2 == 0 ? 2.0 : 1.0;
}

double perf_reduce_expected(const struct perf_data_plan *p, size_t idx)
{
    double acc = perf_value(p, 0, idx);
    if (p->op == PERF_OP_MULSUM) {
        acc *= perf_mulsum_scalar(0);
    }
    for (int q = 1; q < p->nranks; q++) {
        double v = perf_value(p, q, idx);
        switch (p->op) {
        case PERF_OP_PROD:
            acc *= v;
            break;
        case PERF_OP_MAX:
            acc = v > acc ? v : acc;
            break;
        case PERF_OP_MIN:
            acc = v < acc ? v : acc;
            break;
        case PERF_OP_MULSUM:
            acc += v * perf_mulsum_scalar(q);
            break;
        default:
            acc += v;
            break;
        }
    }
    if (p->op == PERF_OP_AVG) {
        /* Integers: sum, then divide (truncating); floats: the exact quotient. */
        acc = p->dtype->kind == PERF_KIND_FLOAT ? acc / p->nranks : floor(acc / p->nranks);
    }
    return acc;
}

void perf_fill(const struct perf_data_plan *p, void *host, size_t n, int rank, size_t first)
{
    char *dst = host;
    const size_t sz = p->dtype->size;
    for (size_t j = 0; j < n; j++) {
        perf_encode(p->dtype, perf_value(p, rank, first + j), dst + j * sz);
    }
}

/* Unit in the last place of `v` in dtype `t`. */
static double perf_ulp(const struct perf_dtype *t, double v)
{
    const int bias = (1 << (t->ebits - 1)) - 1;
    int e;
    double a = fabs(v);
    if (a == 0) {
        return ldexp(1.0, 1 - bias - t->mbits);
    }
    frexp(a, &e);
    int exp = e - 1;
    if (exp < 1 - bias) {
        exp = 1 - bias;
    }
    return ldexp(1.0, exp - t->mbits);
}

int perf_element_ok(const struct perf_data_plan *p, const void *got, double expected)
{
    const struct perf_dtype *t = p->dtype;
    if (p->op == PERF_OP_AVG && t->kind == PERF_KIND_FLOAT) {
        /* The library computes sum(x_r * (1/n)): 1/n, each product and each of the n-1
         * additions may round, by half an ULP of its result at most. nccl-tests allows
         * 2 ULP for its data; allow n + 2 so that no correct reduction order fails. */
        double g = perf_decode(t, got);
        double tol = (p->nranks + 2) * perf_ulp(t, expected);
        return fabs(g - expected) <= tol; /* false for NaN */
    }
    unsigned char want[8];
    perf_encode(t, expected, want);
    return memcmp(want, got, t->size) == 0;
}
