/*
 * Narrow float conversions (coll/dtype.h) and host reduction kernels (exec/host/reduce.c).
 *
 * Conversions are checked against a reference written independently here: each format is
 * decoded from its field definition with ldexp, the positive finite values are tabulated in
 * pattern order, and float -> narrow is the nearer table neighbour (ties to the even
 * pattern), with IEEE overflow (inf at and beyond max + ulp/2) for half/bfloat16 and
 * saturation for fp8. Narrow -> float -> narrow is checked for every bit pattern; NaN comes
 * back as a NaN of the same sign (half/bfloat16: payload kept, quiet bit set; E4M3: its one
 * NaN; E5M2: 0x7d -> 0x7f, the others unchanged).
 *
 * Reductions are checked element by element against a reference folded in long double
 * (integers: exactly, in uint64_t with wrapping). The float bound: the library folds in
 * float (double for float64), so with u = 2^-24 (2^-53) and the terms t_k = s_k * scalar,
 * the folded value F satisfies |F - R| <= E where
 *   sum:     E = (n + 1) u sum|t_k|       (n-1 additions, one rounding per pre-multiply,
 *                                          one for a post-divide; first order, the +1 covers
 *                                          higher-order terms)
 *   prod:    E = (2n + 2) u |R|           (inputs kept in [1/8, 8]: no underflow)
 *   max/min: E = u max|t_k| with a pre-multiply, else 0 (exact)
 * plus (n + 1) times the smallest float (double) subnormal when a pre-multiply or divide can
 * round in the subnormal range, where the error is absolute. Inputs stay below 2^100 so that
 * no float fold overflows where the long double one does not. The result is round_T(F) (for
 * float32/float64, F itself), and rounding is monotonic, so the check is
 *   round_T(R - E) <= result <= round_T(R + E),
 * i.e. within E plus half an ulp of the type, saturation and overflow to inf included; the
 * exact cases (E = 0) must match exactly. For the narrow types the test also recomputes F in
 * float with dtype.h and requires the result to be exactly round_T(F), bit for bit.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "coll/dtype.h"
#include "coll/redop.h"
#include "exec/host/reduce.h"

/* ---------------------------------------------------------------- reference formats */

struct fmt {
    const char *name;
    int bits, mbits, bias;
    int saturate;    /* 1: fp8 SATFINITE, 0: IEEE overflow to inf */
    int has_inf;     /* exponent all ones = inf/NaN (IEEE-like) */
    uint32_t maxpat; /* largest positive finite pattern */
    uint32_t (*enc)(float);
    float (*dec)(uint32_t);
    double next; /* 2^(emax+1): where the binade after max would start */
    double *tab; /* tab[p] = value of positive pattern p, p <= maxpat */
};

static uint32_t enc_half(float f)
{
    return bt_float_to_half(f);
}
static float dec_half(uint32_t v)
{
    return bt_half_to_float((uint16_t)v);
}
static uint32_t enc_bf16(float f)
{
    return bt_float_to_bf16(f);
}
static float dec_bf16(uint32_t v)
{
    return bt_bf16_to_float((uint16_t)v);
}
static uint32_t enc_e4m3(float f)
{
    return bt_float_to_e4m3(f);
}
static float dec_e4m3(uint32_t v)
{
    return bt_e4m3_to_float((uint8_t)v);
}
static uint32_t enc_e5m2(float f)
{
    return bt_float_to_e5m2(f);
}
static float dec_e5m2(uint32_t v)
{
    return bt_e5m2_to_float((uint8_t)v);
}

static struct fmt fmt_half = {"half", 16, 10, 15, 0, 1, 0x7bff, enc_half, dec_half, 0x1p16, NULL};
static struct fmt fmt_bf16 = {"bf16", 16, 7, 127, 0, 1, 0x7f7f, enc_bf16, dec_bf16, 0x1p128, NULL};
static struct fmt fmt_e4m3 = {"e4m3", 8, 3, 7, 1, 0, 0x7e, enc_e4m3, dec_e4m3, 512.0, NULL};
static struct fmt fmt_e5m2 = {"e5m2", 8, 2, 15, 1, 1, 0x7b, enc_e5m2, dec_e5m2, 0x1p16, NULL};
static struct fmt *const fmts[] = {&fmt_half, &fmt_bf16, &fmt_e4m3, &fmt_e5m2};

static int ref_is_nan(const struct fmt *f, uint32_t p)
{
    uint32_t e = (p >> f->mbits) & ((1u << (f->bits - 1 - f->mbits)) - 1);
    uint32_t emax = (1u << (f->bits - 1 - f->mbits)) - 1;
    uint32_t m = p & ((1u << f->mbits) - 1);
    if (f->has_inf)
        return e == emax && m != 0;
    return e == emax && m == (1u << f->mbits) - 1;
}

static int ref_is_inf(const struct fmt *f, uint32_t p)
{
    uint32_t emax = (1u << (f->bits - 1 - f->mbits)) - 1;
    return f->has_inf && (p & ~(1u << (f->bits - 1))) == emax << f->mbits;
}

/* Value of a pattern from the field definition alone. */
static double ref_decode(const struct fmt *f, uint32_t p)
{
    int ebits = f->bits - 1 - f->mbits;
    uint32_t e = (p >> f->mbits) & ((1u << ebits) - 1);
    uint32_t m = p & ((1u << f->mbits) - 1);
    double s = (p >> (f->bits - 1)) & 1 ? -1.0 : 1.0;

    if (ref_is_nan(f, p))
        return NAN;
    if (ref_is_inf(f, p))
        return s * INFINITY;
    if (e == 0)
        return s * ldexp((double)m, 1 - f->bias - f->mbits);
    return s * ldexp((double)((1u << f->mbits) + m), (int)e - f->bias - f->mbits);
}

static void ref_build(struct fmt *f)
{
    f->tab = malloc((f->maxpat + 1) * sizeof(double));
    BT_TEST_CHECK(f->tab != NULL, "malloc");
    for (uint32_t p = 0; p <= f->maxpat; p++) {
        f->tab[p] = ref_decode(f, p);
        BT_TEST_CHECK(p == 0 || f->tab[p] > f->tab[p - 1], "%s table not increasing at %#x",
                      f->name, p);
    }
}

/* Nearest pattern to x, ties to even, with the format's overflow rule. */
static uint32_t ref_round(const struct fmt *f, long double x)
{
    uint32_t sign = signbit(x) ? 1u << (f->bits - 1) : 0;
    long double a = fabsl(x), max = f->tab[f->maxpat];
    uint32_t lo = 0, hi = f->maxpat;

    if (isnan(x))
        return sign | ((1u << (f->bits - 1)) - 1);
    if (a > max) {
        /* IEEE: inf from max + ulp/2 up (the tie goes to inf: max's fraction is odd). */
        if (f->saturate)
            return sign | f->maxpat;
        return sign | (2 * a >= max + f->next ? f->maxpat + 1 : f->maxpat);
    }
    while (lo < hi) { /* largest p with tab[p] <= a */
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (f->tab[mid] <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (f->tab[lo] == a || lo == f->maxpat)
        return sign | lo;
    {
        long double two_a = 2 * a, sum = (long double)f->tab[lo] + f->tab[lo + 1];
        if (two_a < sum)
            return sign | lo;
        if (two_a > sum)
            return sign | (lo + 1);
        return sign | ((lo & 1) ? lo + 1 : lo);
    }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void check_enc(const struct fmt *f, float x)
{
    uint32_t got = f->enc(x), want = ref_round(f, x);
    if (isnan(x)) {
        BT_TEST_CHECK(ref_is_nan(f, got) && (got >> (f->bits - 1)) == (bits_of(x) >> 31),
                      "%s(NaN %#x) = %#x, not a NaN of the same sign", f->name, bits_of(x), got);
        return;
    }
    BT_TEST_CHECK(got == want, "%s(%a = %#x) = %#x, want %#x", f->name, (double)x, bits_of(x), got,
                  want);
}

static void test_format(struct fmt *f)
{
    uint32_t npat = 1u << f->bits, signbit_ = 1u << (f->bits - 1);
    long n = 0;

    ref_build(f);
    /* Every pattern: decode matches the reference, and encodes back to itself. */
    for (uint32_t p = 0; p < npat; p++) {
        float v = f->dec(p);
        double r = ref_decode(f, p);
        uint32_t back = f->enc(v);
        if (ref_is_nan(f, p)) {
            BT_TEST_CHECK(isnan(v) && !!signbit(v) == !!(p & signbit_), "%s dec(%#x) = %a", f->name,
                          p, (double)v);
            BT_TEST_CHECK(ref_is_nan(f, back) && (back & signbit_) == (p & signbit_),
                          "%s NaN %#x -> %#x", f->name, p, back);
            if (f->bits == 16) /* quiet bit set, payload kept */
                BT_TEST_CHECK(back == (p | (1u << (f->mbits - 1))), "%s NaN %#x -> %#x", f->name, p,
                              back);
            continue;
        }
        BT_TEST_CHECK((double)v == r && !!signbit(v) == !!signbit(r), "%s dec(%#x) = %a want %a",
                      f->name, p, (double)v, r);
        if (ref_is_inf(f, p) && f->saturate) /* fp8 SATFINITE: inf -> max finite */
            BT_TEST_CHECK(back == ((p & signbit_) | f->maxpat), "%s inf %#x -> %#x", f->name, p,
                          back);
        else
            BT_TEST_CHECK(back == p, "%s %#x -> %a -> %#x", f->name, p, (double)v, back);
        n++;
    }
    /* Every halfway point between neighbours (and one float ulp either side), both signs,
     * including the point between max and the next binade. */
    for (uint32_t p = 0; p <= f->maxpat; p++) {
        double next = p < f->maxpat ? f->tab[p + 1] : f->next;
        double mid = (f->tab[p] + next) / 2;
        float m = (float)mid;
        if (isinf(m))
            continue;
        BT_TEST_CHECK((double)m == mid, "%s midpoint %a not a float", f->name, mid);
        for (int s = 0; s < 2; s++) {
            float x = s ? -m : m;
            check_enc(f, x);
            check_enc(f, nextafterf(x, INFINITY));
            check_enc(f, nextafterf(x, -INFINITY));
            check_enc(f, s ? -(float)f->tab[p] : (float)f->tab[p]);
        }
    }
    /* Edge values. */
    {
        const float edges[] = {0.0f,        -0.0f,           INFINITY,     -INFINITY, NAN,
                               -NAN,        FLT_MAX,         -FLT_MAX,     FLT_MIN,   -FLT_MIN,
                               1e-45f,      -1e-45f,         1e-40f,       65504.0f,  65519.0f,
                               65520.0f,    65536.0f,        448.0f,       464.0f,    465.0f,
                               480.0f,      57344.0f,        61439.0f,     61440.0f,  0x1p-24f,
                               0x1p-25f,    0x1.000002p-25f, 0x1p-9f,      0x1p-10f,  0x1.8p-10f,
                               0x1p-16f,    0x1p-17f,        0x1.8p-17f,   0x1p-133f, 0x1p-134f,
                               0x1.8p-134f, 3.3895314e38f,   3.3961775e38f};
        for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
            check_enc(f, edges[i]);
            check_enc(f, -edges[i]);
        }
        check_enc(f, f32_of(0x7f800001u)); /* signalling NaN */
        check_enc(f, f32_of(0xffc12345u));
    }
    /* Random floats: uniform bit patterns, and patterns in the format's exponent range. */
    for (int i = 0; i < 2000000; i++) {
        uint64_t r = rng();
        check_enc(f, f32_of((uint32_t)r));
        int e = (int)((r >> 32) % (uint64_t)(2 * f->bias + 8)) - f->bias - f->mbits - 2;
        check_enc(f, ldexpf(f32_of(0x3f800000u | ((uint32_t)(r >> 40) & 0x7fffffu)), e) *
                         ((r >> 63) ? -1.0f : 1.0f));
    }
    /* A stride through all 2^32 float patterns. */
    for (uint64_t u = 0; u < (1ull << 32); u += 977)
        check_enc(f, f32_of((uint32_t)u));
    printf("%s: %ld patterns round-trip, conversions match the reference\n", f->name, n);
}

/* ---------------------------------------------------------------- reductions */

enum variant { V_SUM, V_PROD, V_MAX, V_MIN, V_AVG_PRE, V_AVG_POST, V_PREMUL, V_NUM };
static const char *const variant_names[V_NUM] = {"sum",        "prod",        "max",      "min",
                                                 "avg-premul", "avg-postdiv", "premulsum"};
static const char *const dtype_names[BT_NUM_DTYPES] = {"int8",    "uint8",    "int32",   "uint32",
                                                       "int64",   "uint64",   "float16", "float32",
                                                       "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};

static const struct fmt *narrow_fmt(int dt)
{
    switch (dt) {
    case BT_FLOAT16:
        return &fmt_half;
    case BT_BFLOAT16:
        return &fmt_bf16;
    case BT_FP8E4M3:
        return &fmt_e4m3;
    case BT_FP8E5M2:
        return &fmt_e5m2;
    default:
        return NULL;
    }
}

static int is_signed_int(int dt)
{
    return dt == BT_INT8 || dt == BT_INT32 || dt == BT_INT64;
}

/* Element i of a buffer of dtype dt as raw integer bits (integers) or a value (floats). */
static uint64_t get_bits(int dt, const void *p, size_t i)
{
    switch (bt_dtype_size(dt)) {
    case 1:
        return ((const uint8_t *)p)[i];
    case 2:
        return ((const uint16_t *)p)[i];
    case 4:
        return ((const uint32_t *)p)[i];
    default:
        return ((const uint64_t *)p)[i];
    }
}

static void set_bits(int dt, void *p, size_t i, uint64_t v)
{
    switch (bt_dtype_size(dt)) {
    case 1:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[i] = v;
        break;
    }
}

static long double get_val(int dt, const void *p, size_t i)
{
    const struct fmt *f = narrow_fmt(dt);
    if (f)
        return ref_decode(f, (uint32_t)get_bits(dt, p, i));
    if (dt == BT_FLOAT32)
        return ((const float *)p)[i];
    return ((const double *)p)[i];
}

/* Integer value sign-extended (signed types) to 64 bits. */
static int64_t get_int(int dt, const void *p, size_t i)
{
    uint64_t b = get_bits(dt, p, i);
    int w = 8 * (int)bt_dtype_size(dt);
    if (is_signed_int(dt) && w < 64 && (b >> (w - 1)) & 1)
        b |= ~0ull << w;
    return (int64_t)b;
}

/* A random element; prod keeps floats within [1/8, 8] so that nothing under/overflows. */
static void gen(int dt, int var, void *p, size_t i)
{
    const struct fmt *f = narrow_fmt(dt);
    for (;;) {
        uint64_t r = rng();
        long double v;
        if (!bt_dtype_is_float(dt)) {
            set_bits(dt, p, i, r);
            return;
        }
        if (f) {
            set_bits(dt, p, i, r);
        } else {
            int e = (int)((r >> 24) % 24) - 12;
            double m = 1.0 + (double)(r >> 40) / (double)(1ull << 24);
            double x = ldexp((r & 1) ? -m : m, e);
            if (dt == BT_FLOAT32)
                ((float *)p)[i] = (float)x;
            else
                ((double *)p)[i] = x * (1.0 + (double)(r & 0xffffff) * 0x1p-48);
        }
        v = get_val(dt, p, i);
        if (isnan(v) || isinf(v))
            continue;
        if (var == V_PROD && (fabsl(v) < 0.125L || fabsl(v) > 8.0L))
            continue;
        if (fabsl(v) > 0x1p100L) /* bfloat16: a float fold of 8 must not overflow */
            continue;
        return;
    }
}

struct ref_case {
    struct bt_redop op;
    unsigned pre_mask;
    int post;
};

static struct ref_case make_case(int dt, int var, int nsrcs)
{
    struct ref_case c;
    memset(&c, 0, sizeof(c));
    c.op.dtype = (uint8_t)dt;
    c.op.op = BT_OP_SUM;
    c.op.scalar_f = 1.0;
    c.op.scalar_i = 1;
    c.op.divisor = 1;
    switch (var) {
    case V_PROD:
        c.op.op = BT_OP_PROD;
        break;
    case V_MAX:
        c.op.op = BT_OP_MAX;
        break;
    case V_MIN:
        c.op.op = BT_OP_MIN;
        break;
    case V_AVG_PRE:
        c.op.pre_mul = 1;
        c.op.scalar_f = 1.0 / nsrcs;
        c.pre_mask = 0xffu;
        break;
    case V_AVG_POST:
        c.op.post_div = 1;
        c.op.divisor = (uint64_t)nsrcs;
        c.post = 1;
        break;
    case V_PREMUL:
        c.op.pre_mul = 1;
        c.op.scalar_f = -1.3;
        c.op.scalar_i = -5;
        c.pre_mask = 0xa5u; /* some sources only */
        break;
    default:
        break;
    }
    return c;
}

static void check_int(const struct ref_case *c, const void *const *srcs, int nsrcs, const void *dst,
                      size_t i, const char *what)
{
    int dt = c->op.dtype, w = 8 * (int)bt_dtype_size(dt);
    uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
    int64_t acc = 0;

    for (int k = 0; k < nsrcs; k++) {
        uint64_t t = (uint64_t)get_int(dt, srcs[k], i);
        int64_t tv;
        if (c->op.pre_mul && (c->pre_mask >> k) & 1)
            t *= (uint64_t)c->op.scalar_i;
        t &= mask; /* the term, truncated to the type */
        if (is_signed_int(dt) && w < 64 && (t >> (w - 1)) & 1)
            t |= ~mask;
        tv = (int64_t)t;
        if (k == 0) {
            acc = tv;
            continue;
        }
        switch (c->op.op) {
        case BT_OP_SUM:
            acc = (int64_t)((uint64_t)acc + (uint64_t)tv);
            break;
        case BT_OP_PROD:
            acc = (int64_t)((uint64_t)acc * (uint64_t)tv);
            break;
        case BT_OP_MAX:
            if (is_signed_int(dt) ? tv > acc : (uint64_t)tv > (uint64_t)acc)
                acc = tv;
            break;
        default:
            if (is_signed_int(dt) ? tv < acc : (uint64_t)tv < (uint64_t)acc)
                acc = tv;
            break;
        }
        /* Keep acc as the type's value, sign-extended. */
        acc = (int64_t)((uint64_t)acc & mask);
        if (is_signed_int(dt) && w < 64 && ((uint64_t)acc >> (w - 1)) & 1)
            acc = (int64_t)((uint64_t)acc | ~mask);
    }
    if (c->post && c->op.post_div) {
        if (is_signed_int(dt))
            acc = acc / (int64_t)c->op.divisor;
        else
            acc = (int64_t)(((uint64_t)acc & mask) / c->op.divisor);
    }
    BT_TEST_CHECK((get_bits(dt, dst, i) & mask) == ((uint64_t)acc & mask),
                  "%s elem %zu: got %#llx want %#llx", what, i,
                  (unsigned long long)get_bits(dt, dst, i),
                  (unsigned long long)((uint64_t)acc & mask));
}

static long double round_to(int dt, long double x)
{
    const struct fmt *f = narrow_fmt(dt);
    if (f)
        return ref_decode(f, ref_round(f, x));
    if (dt == BT_FLOAT32)
        return (float)x;
    return (double)x;
}

static void check_float(const struct ref_case *c, const void *const *srcs, int nsrcs,
                        const void *dst, size_t i, const char *what)
{
    int dt = c->op.dtype;
    const struct fmt *f = narrow_fmt(dt);
    long double u = dt == BT_FLOAT64 ? 0x1p-53L : 0x1p-24L;
    long double sc =
        dt == BT_FLOAT64 ? (long double)c->op.scalar_f : (long double)(float)c->op.scalar_f;
    long double r = 0, s_abs = 0, m_abs = 0, e, y, lo, hi;
    int npre = 0;

    for (int k = 0; k < nsrcs; k++) {
        long double t = get_val(dt, srcs[k], i);
        if (c->op.pre_mul && (c->pre_mask >> k) & 1) {
            t *= sc;
            if (f) /* narrow types: the float product, rounded to the type */
                t = round_to(dt, (float)t);
            npre++;
        }
        s_abs += fabsl(t);
        m_abs = fabsl(t) > m_abs ? fabsl(t) : m_abs;
        if (k == 0)
            r = t;
        else if (c->op.op == BT_OP_SUM)
            r += t;
        else if (c->op.op == BT_OP_PROD)
            r *= t;
        else if (c->op.op == BT_OP_MAX)
            r = t > r ? t : r;
        else
            r = t < r ? t : r;
    }
    if (c->post && c->op.post_div)
        r /= (long double)c->op.divisor;
    if (c->op.op == BT_OP_SUM)
        e = (nsrcs + 1) * u * s_abs;
    else if (c->op.op == BT_OP_PROD)
        e = (2 * nsrcs + 2) * u * fabsl(r);
    else
        e = npre ? u * m_abs : 0;
    if (npre || c->post) /* results in the float subnormal range: absolute error */
        e += (nsrcs + 1) * (dt == BT_FLOAT64 ? 0x1p-1074L : 0x1p-149L);
    y = get_val(dt, dst, i);
    if (f) { /* narrow: exactly the float fold of dtype.h's conversions, rounded once (and a
                pre-multiplied source rounded to its type first, as a peer's copy is) */
        float acc = 0;
        for (int k = 0; k < nsrcs; k++) {
            float t = f->dec((uint32_t)get_bits(dt, srcs[k], i));
            if (c->op.pre_mul && (c->pre_mask >> k) & 1)
                t = f->dec(f->enc(t * (float)c->op.scalar_f));
            if (k == 0)
                acc = t;
            else if (c->op.op == BT_OP_SUM)
                acc += t;
            else if (c->op.op == BT_OP_PROD)
                acc *= t;
            else if (c->op.op == BT_OP_MAX) /* a tie (+0 vs -0) keeps the later source */
                acc = acc > t ? acc : t;
            else
                acc = acc < t ? acc : t;
        }
        if (c->post && c->op.post_div)
            acc /= (float)c->op.divisor;
        BT_TEST_CHECK(get_bits(dt, dst, i) == f->enc(acc),
                      "%s elem %zu: got %#llx, float fold %a -> %#x", what, i,
                      (unsigned long long)get_bits(dt, dst, i), (double)acc, f->enc(acc));
    }
    if (isinf(r) || isnan(r)) { /* a pre-multiplied narrow source may round to infinity */
        BT_TEST_CHECK(isnan(r) ? isnan(y) : y == r, "%s elem %zu: got %La want %La", what, i, y, r);
        return;
    }
    lo = round_to(dt, r - e);
    hi = round_to(dt, r + e);
    BT_TEST_CHECK(y >= lo && y <= hi, "%s elem %zu: got %La want %La (in [%La, %La])", what, i, y,
                  r, lo, hi);
}

static void test_reduce_case(int dt, int var, int nsrcs, size_t count, int where)
{
    size_t sz = bt_dtype_size(dt);
    struct ref_case c = make_case(dt, var, nsrcs);
    void *bufs[8], *copies[8], *dst;
    const void *srcs[8], *ref_srcs[8];
    char what[128];

    snprintf(what, sizeof(what), "%s %s nsrcs=%d count=%zu dst=%s", dtype_names[dt],
             variant_names[var], nsrcs, count,
             where == 0   ? "separate"
             : where == 1 ? "srcs[0]"
                          : "srcs[last]");
    for (int k = 0; k < nsrcs; k++) {
        bufs[k] = malloc(count * sz + 1);
        copies[k] = malloc(count * sz + 1);
        BT_TEST_CHECK(bufs[k] && copies[k], "malloc");
        for (size_t i = 0; i < count; i++)
            gen(dt, var, bufs[k], i);
        memcpy(copies[k], bufs[k], count * sz);
        srcs[k] = bufs[k];
        ref_srcs[k] = copies[k];
    }
    dst = where == 0 ? malloc(count * sz + 1) : where == 1 ? bufs[0] : bufs[nsrcs - 1];
    BT_TEST_CHECK(dst != NULL, "malloc");

    bt_host_reduce(&c.op, dst, srcs, nsrcs, c.pre_mask, c.post, count);

    for (size_t i = 0; i < count; i++) {
        if (bt_dtype_is_float(dt))
            check_float(&c, ref_srcs, nsrcs, dst, i, what);
        else
            check_int(&c, ref_srcs, nsrcs, dst, i, what);
    }
    /* Sources other than dst are untouched. */
    for (int k = 0; k < nsrcs; k++)
        if (bufs[k] != dst)
            BT_TEST_CHECK(memcmp(bufs[k], copies[k], count * sz) == 0, "%s: source %d changed",
                          what, k);
    for (int k = 0; k < nsrcs; k++) {
        free(bufs[k]);
        free(copies[k]);
    }
    if (where == 0)
        free(dst);
}

static void test_reduce_all(int narrow_only)
{
    static const int nsrcs_list[] = {1, 2, 3, 8};
    static const size_t counts[] = {0, 1, 7, 1003, 256 * 3 + 5};
    long ncases = 0;

    for (int dt = 0; dt < BT_NUM_DTYPES; dt++)
        for (int var = 0; var < V_NUM; var++) {
            if (narrow_only && !narrow_fmt(dt))
                continue;
            if (var == V_AVG_PRE && !bt_dtype_is_float(dt))
                continue; /* the API maps integer Avg to the post-divide */
            for (size_t ni = 0; ni < sizeof(nsrcs_list) / sizeof(nsrcs_list[0]); ni++)
                for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
                    for (int where = 0; where < 3; where++) {
                        test_reduce_case(dt, var, nsrcs_list[ni], counts[ci], where);
                        ncases++;
                    }
        }
    printf("reduce: %ld cases (dtype x op x nsrcs x count x in-place) match the reference\n",
           ncases);
}

/* The same buffer passed twice, and NaN propagation through max/min/sum. */
static void test_reduce_special(void)
{
    for (int dt = 0; dt < BT_NUM_DTYPES; dt++) {
        size_t sz = bt_dtype_size(dt), n = 300;
        unsigned char *a = malloc(n * sz), *b = malloc(n * sz), *d = malloc(n * sz);
        struct ref_case c = make_case(dt, V_SUM, 2);
        const void *srcs[3] = {a, a, b};

        BT_TEST_CHECK(a && b && d, "malloc");
        for (size_t i = 0; i < n; i++) {
            gen(dt, V_SUM, a, i);
            gen(dt, V_SUM, b, i);
        }
        memcpy(d, a, n * sz);
        {
            const void *ref[2] = {d, d};
            unsigned char *out = malloc(n * sz);
            BT_TEST_CHECK(out != NULL, "malloc");
            bt_host_reduce(&c.op, out, srcs, 2, 0, 0, n);
            for (size_t i = 0; i < n; i++) {
                if (bt_dtype_is_float(dt))
                    check_float(&c, ref, 2, out, i, "a+a");
                else
                    check_int(&c, ref, 2, out, i, "a+a");
            }
            bt_host_reduce(&c.op, a, srcs, 2, 0, 0, n); /* a = a + a, all three the same */
            for (size_t i = 0; i < n; i++)
                BT_TEST_CHECK(get_bits(dt, a, i) == get_bits(dt, out, i), "%s a+a in place",
                              dtype_names[dt]);
            free(out);
        }
        if (bt_dtype_is_float(dt)) {
            /* A NaN in either position, at odd and block-crossing indices. */
            static const size_t where[] = {0, 5, 255, 256, 299};
            const struct fmt *f = narrow_fmt(dt);
            for (int op = 0; op < BT_NUM_BASE_OPS; op++)
                for (int pos = 0; pos < 3; pos++) {
                    struct bt_redop o = c.op;
                    const void *s3[3] = {a, b, d};
                    unsigned char *bufs3[3] = {a, b, d};
                    o.op = (uint8_t)op;
                    for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
                        size_t i = where[w];
                        if (f)
                            set_bits(dt, bufs3[pos], i, f->enc(NAN));
                        else if (dt == BT_FLOAT32)
                            ((float *)bufs3[pos])[i] = NAN;
                        else
                            ((double *)bufs3[pos])[i] = NAN;
                    }
                    for (int ns = 2; ns <= 3; ns++) {
                        unsigned char *out = malloc(n * sz);
                        BT_TEST_CHECK(out != NULL, "malloc");
                        bt_host_reduce(&o, out, s3, ns, 0, 0, n);
                        if (pos < ns)
                            for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++)
                                BT_TEST_CHECK(isnan(get_val(dt, out, where[w])),
                                              "%s op %d: NaN in src %d elem %zu lost",
                                              dtype_names[dt], op, pos, where[w]);
                        free(out);
                    }
                    for (size_t i = 0; i < n; i++) { /* fresh finite data */
                        gen(dt, V_SUM, a, i);
                        gen(dt, V_SUM, b, i);
                        gen(dt, V_SUM, d, i);
                    }
                }
        }
        free(a);
        free(b);
        free(d);
    }
    printf("reduce: aliased sources and NaN propagation ok\n");
}

/*
 * The reduce kernels carry their own branch-free converters for half and fp8 (reduce.c).
 * Every pattern goes through them as y = narrow(widen(p) * s) for many scalars s: powers of
 * two and 1.5 times powers of two (exact ties, subnormal and overflowing results) and random
 * ones. The result must equal dtype.h's, bit for bit (NaN: a NaN of the same sign).
 */
static void test_kernel_converters(void)
{
    for (int dt = 0; dt < BT_NUM_DTYPES; dt++) {
        const struct fmt *f = narrow_fmt(dt);
        size_t n, sz = bt_dtype_size(dt);
        unsigned char *in, *out;
        long nchecked = 0;

        if (!f)
            continue;
        n = (size_t)1 << f->bits;
        in = malloc(n * sz);
        out = malloc(n * sz);
        BT_TEST_CHECK(in && out, "malloc");
        for (size_t p = 0; p < n; p++)
            set_bits(dt, in, p, p);
        for (int si = 0; si < 400; si++) {
            struct bt_redop op = {.dtype = (uint8_t)dt, .op = BT_OP_SUM, .pre_mul = 1};
            const void *srcs[1] = {in};
            float sc;
            if (si < 160)
                sc = ldexpf(1.0f, si - 80);
            else if (si < 320)
                sc = ldexpf(1.5f, si - 240);
            else
                sc = ldexpf(1.0f + (float)(rng() >> 41) * 0x1p-23f, (int)(rng() % 120) - 60);
            op.scalar_f = (si & 1) ? -sc : sc;
            bt_host_reduce(&op, out, srcs, 1, 1u, 0, n);
            for (size_t p = 0; p < n; p++) {
                float x = f->dec((uint32_t)p) * (float)op.scalar_f;
                uint32_t want = f->enc(x), got = (uint32_t)get_bits(dt, out, p);
                if (isnan(x))
                    BT_TEST_CHECK(ref_is_nan(f, got) &&
                                      (got >> (f->bits - 1)) == (want >> (f->bits - 1)),
                                  "%s NaN %#zx * %a -> %#x", f->name, p, op.scalar_f, got);
                else
                    BT_TEST_CHECK(got == want, "%s %#zx * %a = %a: kernel %#x, dtype.h %#x",
                                  f->name, p, op.scalar_f, (double)x, got, want);
                nchecked++;
            }
        }
        free(in);
        free(out);
        printf("%s: kernel converters equal dtype.h on %ld values\n", f->name, nchecked);
    }
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);

    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
        test_format(fmts[i]);
    /* Every converter level this CPU has, the best one last (and left in place). */
    for (int level = 1; level <= 3; level++) {
        int got = bt_host_reduce_isa(level);
        if (got != level)
            continue;
        printf("narrow-type converters, level %d\n", level);
        test_kernel_converters();
        test_reduce_all(1);
    }
    test_reduce_all(0);
    test_reduce_special();

    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
        free(fmts[i]->tab);
    bt_test_leaks_end(&leaks);
    printf("test_reduce: ok\n");
    return 0;
}
