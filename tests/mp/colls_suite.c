/*
 * Running one collectives suite (colls_suite.h; the suites are the table of colls.c): every
 * collective checked element by element against a reference computed here, over real rank
 * processes and the public API.
 *
 * For each rank count the parent makes one ncclUniqueId and forks the ranks; each rank inits
 * one communicator and runs every case of the suite on it, in the same order on every rank.
 *
 * Independence of the reference: the narrow float formats (half, bfloat16, fp8 e4m3 and e5m2)
 * are decoded and encoded by the small generic codec below, written from the format
 * definitions (sign, exponent bits, bias, fraction bits); nothing comes from src/. Every
 * rank's input is a pure function of (case seed, rank, index), so a rank computes the inputs
 * of every other rank and reduces them in double (floats) or in wrapping 64-bit arithmetic
 * truncated to the type's width (integers).
 *
 * Inputs are chosen so that most results are exact, and exact results are checked exactly:
 *   - integers: any bit pattern; sum, prod, premulsum wrap (the reference wraps the same
 *     way: arithmetic mod 2^64 truncated to the width is arithmetic mod 2^width); avg is the
 *     wrapped sum divided by nranks with C division (truncation toward zero).
 *   - floats, sum/avg/premulsum: small multiples of a power of two sized per type so that
 *     every partial sum of up to 8 ranks is representable (e5m2: {-1,0,1}; e4m3: -2..2;
 *     half, bf16: k/4 with |k| <= 32; float: k/64, |k| <= 2^16; double: k/1024,
 *     |k| <= 2^20). PreMulSum scalars are powers of two (2 host-immediate, 0.5 through the
 *     pointer), so those stay exact too.
 *   - floats, prod: values in {+-0.5, +-1, +-2}: products of 8 stay within every format.
 *   - floats, max/min: random finite bit patterns (subnormals and -0 included; compared as
 *     values, so -0 == +0).
 *   - avg on float types with nranks not a power of two is the one inexact case: the library
 *     multiplies each input by 1/n (rounded to float, or double for float64) and reduces in
 *     float, rounding the partial result to the type at every hop (ring or tree: at most n
 *     roundings, each <= 0.5 ulp of the largest partial). The bound used is
 *     (n + 1) ulp_T(M) + M * 2^-22 (2^-50 for double), M = sum |x_r| / n bounding every
 *     partial sum.
 * Data-movement collectives (AllGather, Broadcast, AlltoAll, Gather, Scatter, Send/Recv) take
 * any bit pattern, NaNs included, and must copy it bit for bit.
 *
 * Besides the values, each case checks that out-of-place inputs are not modified, that the
 * parts of an in-place buffer that are not output keep the input, that non-root ranks of
 * Reduce/Gather may pass NULL for the buffer they do not use (and Broadcast/Scatter the
 * input), count 0 with NULL buffers, and guard bytes on both sides of every buffer; and,
 * for the suites about one path (colls_suite.h, enum ct_path), that the case ran through it:
 * batonCommGetStats read before and after the call.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton.h"
#include "colls_dtype.h"
#include "colls_suite.h"
#include "harness.h"
#include "nccl.h"

/* ---- the collectives and ops the suite enumerates ------------------------------------- */

static const char *const ct_coll_name[CT_NCOLLS] = {
    "AllReduce", "AllGather", "ReduceScatter", "Broadcast",    "Reduce",
    "AlltoAll",  "Gather",    "Scatter",       "SendRecvRing", "SendRecvPairs"};

static int ct_coll_reduces(int coll)
{
    return coll == CT_ALLREDUCE || coll == CT_REDUCESCATTER || coll == CT_REDUCE;
}

static int ct_coll_has_inplace(int coll)
{
    return coll != CT_ALLTOALL && coll != CT_SENDRECV_RING && coll != CT_SENDRECV_PAIRS;
}

static int ct_coll_has_root(int coll)
{
    return coll == CT_BROADCAST || coll == CT_REDUCE || coll == CT_GATHER || coll == CT_SCATTER;
}

static const char *const ct_op_name[CT_NOPS] = {"sum", "prod",          "max",          "min",
                                                "avg", "premulsum-imm", "premulsum-dev"};

#define CT_LL_PAYLOAD 8192
#define CT_LARGE_BYTES (3u << 20)

/* ---- inputs ------------------------------------------------------------------------- */

static double ct_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline uint64_t ct_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* How a case draws its inputs (see the file comment). */
enum ct_gen_kind {
    CT_GEN_BITS,     /* any pattern of the width */
    CT_GEN_BITS_ODD, /* integer prod: mostly odd, so products are not all 0 mod 2^width */
    CT_GEN_FINITE,   /* float max/min: any finite pattern */
    CT_GEN_PROD,     /* float prod: +-0.5, +-1, +-2 */
    CT_GEN_K_TAB,    /* float sum-like, narrow: k * kscale from a table */
    CT_GEN_K_F32,    /* float sum-like: k / 64 */
    CT_GEN_K_F64     /* double sum-like: k / 1024 */
};

struct ct_case {
    int coll, dt, op, inplace, root, size_class;
    size_t count;
    uint64_t seed;
    uint64_t scalar_bits; /* PreMulSum: the scalar the collective must use */
    uint64_t decoy_bits;  /* PreMulSum: the other value the scalar variable holds */
    int reducing;
    int gen;
    uint64_t nonfinite_mask, nonfinite_bits; /* b & mask == bits: inf or NaN */
    uint64_t finite_flip;                    /* ... then flip this (top exponent bit) */
    uint64_t ptab[6];                        /* CT_GEN_PROD values */
    int64_t kmax;                            /* k uniform in [-kmax, kmax] */
    double kscale;
    uint64_t ktab[65]; /* encoded k * kscale for k = -kmax..kmax, narrow types */
};

static void ct_case_prepare(struct ct_case *c)
{
    const struct ct_dtype *t = &ct_dt[c->dt];
    int isf = t->kind == CT_K_FLOAT;
    c->reducing = ct_coll_reduces(c->coll);
    switch (c->dt) {
    case CT_HALF:
    case CT_BF16:
        c->kmax = 32, c->kscale = 0.25;
        break;
    case CT_FLOAT:
        c->kmax = 65536, c->kscale = 1.0 / 64;
        break;
    case CT_DOUBLE:
        c->kmax = 1 << 20, c->kscale = 1.0 / 1024;
        break;
    case CT_E4M3:
        c->kmax = 2, c->kscale = 1.0;
        break;
    case CT_E5M2:
        c->kmax = 1, c->kscale = 1.0;
        break;
    default:
        c->kmax = 0, c->kscale = 0;
    }
    if (!c->reducing)
        c->gen = CT_GEN_BITS;
    else if (!isf)
        c->gen = c->op == CT_PROD ? CT_GEN_BITS_ODD : CT_GEN_BITS;
    else if (c->op == CT_MAX || c->op == CT_MIN)
        c->gen = CT_GEN_FINITE;
    else if (c->op == CT_PROD)
        c->gen = CT_GEN_PROD;
    else
        c->gen = c->dt == CT_FLOAT    ? CT_GEN_K_F32
                 : c->dt == CT_DOUBLE ? CT_GEN_K_F64
                                      : CT_GEN_K_TAB;
    if (isf) {
        uint64_t emask = ((1ull << t->ebits) - 1) << t->mbits;
        c->nonfinite_mask = c->nonfinite_bits = t->has_inf ? emask : 0x7f;
        c->finite_flip = 1ull << (t->size * 8 - 2);
        static const double pv[6] = {-2, -1, -0.5, 0.5, 1, 2};
        for (int k = 0; k < 6; k++)
            c->ptab[k] = ct_encode(c->dt, pv[k]);
    }
    if (c->kmax > 0 && c->kmax <= 32)
        for (int64_t k = -c->kmax; k <= c->kmax; k++)
            c->ktab[k + c->kmax] = ct_encode(c->dt, (double)k * c->kscale);
    if (isf) {
        c->scalar_bits = ct_encode(c->dt, c->op == CT_PREMUL_IMM ? 2.0 : 0.5);
        c->decoy_bits = ct_encode(c->dt, 4.0);
    } else {
        c->scalar_bits = ct_trunc(c->dt, c->op == CT_PREMUL_IMM ? 3 : (uint64_t)-2);
        c->decoy_bits = 5;
    }
}

/* ---- inputs and reference, a block of elements at a time ------------------------------ */

/* Inputs are generated, loaded, stored and reduced CT_BLK elements at a time, every loop with
 * its case's choices (generator, dtype, op) made once outside it: checking the large cases is
 * most of what a suite costs (before blocks: 87% of mp/colls's CPU time, the library under
 * 10%). */
#define CT_BLK 512

/* The loops over a block touch only the suite's own arenas and arrays, at indices their
 * sizes bound, in unsigned or double arithmetic; in the sanitized build the sanitizers' checks
 * of them were most of a suite's time (the suite itself 82% of mp/colls_twoshot's CPU) and
 * could find nothing of the library's, whose own code stays checked and whose writes past a
 * buffer the guard bytes catch. */
#define CT_HOT __attribute__((no_sanitize("address", "undefined")))

#define CT_GOLDEN 0x9e3779b97f4a7c15ull

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ct_gen_block reads a hash's fields as the bytes of a little-endian word"
#endif
/* narrower views of any storage (ct_gen_block's hash words are uint64_t) */
typedef uint16_t ct_u16_alias __attribute__((may_alias));
typedef uint32_t ct_u32_alias __attribute__((may_alias));

/* Elements i .. i + m - 1 of a buffer of `size`-byte elements, as 64-bit patterns (any
 * storage: the hash words of ct_gen_block too). */
static CT_HOT void ct_ld_block(const void *buf, size_t size, size_t i, size_t m, uint64_t *v)
{
    switch (size) {
    case 1:
        for (size_t k = 0; k < m; k++)
            v[k] = ((const uint8_t *)buf)[i + k];
        break;
    case 2:
        for (size_t k = 0; k < m; k++)
            v[k] = ((const ct_u16_alias *)buf)[i + k];
        break;
    case 4:
        for (size_t k = 0; k < m; k++)
            v[k] = ((const ct_u32_alias *)buf)[i + k];
        break;
    default:
        memcpy(v, (const uint64_t *)buf + i, m * 8);
    }
}

/* Rank r's input elements idx .. idx + m - 1 (m <= CT_BLK) into v. Each splitmix64 hash of a
 * counter ((rank, word) -> a distinct counter value per case) gives 8 / B elements their
 * B-byte fields, low field first: B is the element's size for bit patterns (a byte type's 8
 * elements cost one hash), 4 for the values drawn from a range. */
static CT_HOT void ct_gen_block(const struct ct_case *c, int r, size_t idx, size_t m, uint64_t *v)
{
    const int bit_patterns =
        c->gen == CT_GEN_BITS || c->gen == CT_GEN_BITS_ODD || c->gen == CT_GEN_FINITE;
    const size_t fb = bit_patterns ? (size_t)ct_dt[c->dt].size : 4, per = 8 / fb;
    const size_t skip = idx % per, nwords = (skip + m + per - 1) / per;
    uint64_t w[CT_BLK + 1];
    uint64_t ctr = c->seed + (((uint64_t)r << 40) + (uint64_t)(idx / per)) * CT_GOLDEN;
    for (size_t i = 0; i < nwords; i++, ctr += CT_GOLDEN)
        w[i] = ct_mix(ctr);
    ct_ld_block(w, fb, skip, m, v); /* the fields: the words' bytes in order */
    const unsigned top = (unsigned)fb * 8 - 2;
    switch (c->gen) {
    case CT_GEN_BITS:
        return;
    case CT_GEN_BITS_ODD: /* integer prod: the low bit set when either top bit is */
        for (size_t k = 0; k < m; k++)
            v[k] |= (v[k] >> top) != 0;
        return;
    case CT_GEN_FINITE:
        for (size_t k = 0; k < m; k++)
            if ((v[k] & c->nonfinite_mask) == c->nonfinite_bits)
                v[k] ^= c->finite_flip;
        return;
    case CT_GEN_PROD:
        for (size_t k = 0; k < m; k++)
            v[k] = c->ptab[(v[k] * 6) >> 32];
        return;
    default:
        break;
    }
    /* k uniform in [-kmax, kmax]: the 32-bit field scaled to the range */
    const uint64_t span = (uint64_t)(2 * c->kmax + 1);
    const int64_t kmax = c->kmax;
    const double kscale = c->kscale;
    switch (c->gen) {
    case CT_GEN_K_TAB:
        for (size_t k = 0; k < m; k++)
            v[k] = c->ktab[(v[k] * span) >> 32];
        break;
    case CT_GEN_K_F32:
        for (size_t k = 0; k < m; k++) {
            float f = (float)((double)((int64_t)((v[k] * span) >> 32) - kmax) * kscale);
            uint32_t u;
            memcpy(&u, &f, 4);
            v[k] = u;
        }
        break;
    default:
        for (size_t k = 0; k < m; k++) {
            double d = (double)((int64_t)((v[k] * span) >> 32) - kmax) * kscale;
            memcpy(&v[k], &d, 8);
        }
    }
}

/* Elements i .. i + m - 1 of a buffer of dtype dt from 64-bit patterns (ct_ld_block back). */
static CT_HOT void ct_st_block(void *buf, int dt, size_t i, size_t m, const uint64_t *v)
{
    switch (ct_dt[dt].size) {
    case 1:
        for (size_t k = 0; k < m; k++)
            ((uint8_t *)buf)[i + k] = (uint8_t)v[k];
        break;
    case 2:
        for (size_t k = 0; k < m; k++)
            ((uint16_t *)buf)[i + k] = (uint16_t)v[k];
        break;
    case 4:
        for (size_t k = 0; k < m; k++)
            ((uint32_t *)buf)[i + k] = (uint32_t)v[k];
        break;
    default:
        memcpy((uint64_t *)buf + i, v, m * 8);
    }
}

/* Store rank r's input elements 0 .. len - 1 at buf's elements at .. at + len - 1. */
static void ct_fill(const struct ct_case *c, int r, void *buf, size_t at, size_t len)
{
    uint64_t v[CT_BLK];
    for (size_t j = 0; j < len; j += CT_BLK) {
        size_t m = len - j < CT_BLK ? len - j : CT_BLK;
        ct_gen_block(c, r, j, m, v);
        ct_st_block(buf, c->dt, at + j, m, v);
    }
}

/* The values of m patterns of float type dt (ct_decode, its switch made once). */
static CT_HOT void ct_decode_block(int dt, const uint64_t *bits, size_t m, double *v)
{
    switch (dt) {
    case CT_FLOAT:
        for (size_t k = 0; k < m; k++) {
            uint32_t u = (uint32_t)bits[k];
            float f;
            memcpy(&f, &u, 4);
            v[k] = f;
        }
        break;
    case CT_DOUBLE:
        memcpy(v, bits, m * 8);
        break;
    default: { /* the narrow types: a table of every pattern's value */
        const double *tab = dt == CT_HALF   ? ct_tab16[0]
                            : dt == CT_BF16 ? ct_tab16[1]
                            : dt == CT_E4M3 ? ct_tab8[0]
                                            : ct_tab8[1];
        const uint64_t mask = ct_dt[dt].size == 2 ? 0xffff : 0xff;
        for (size_t k = 0; k < m; k++)
            v[k] = tab[bits[k] & mask];
    }
    }
}

/* What elements of a checked region must hold. */
struct ct_refs {
    uint64_t bits[CT_BLK]; /* an input's patterns, or an integer reduction's exact result */
    double val[CT_BLK];    /* a float reduction's value */
    double tol[CT_BLK];    /* ... and the allowed |got - val| */
};

/* The integer reduction at global indices idx .. idx + m - 1: wrapping 64-bit arithmetic on
 * the elements as ct_int_val gives them, truncated to the width. */
static CT_HOT void ct_ref_int(const struct ct_case *c, int n, size_t idx, size_t m,
                              struct ct_refs *o)
{
    int dt = c->dt, op = c->op, sgn = ct_dt[dt].kind == CT_K_SINT;
    int premul = op == CT_PREMUL_IMM || op == CT_PREMUL_DEV;
    int shift = 64 - ct_dt[dt].size * 8; /* sign extension of a signed element */
    uint64_t s = ct_int_val(dt, c->scalar_bits), v[CT_BLK], *acc = o->bits;
    for (int r = 0; r < n; r++) {
        ct_gen_block(c, r, idx, m, v);
        if (sgn)
            for (size_t k = 0; k < m; k++)
                v[k] = (uint64_t)((int64_t)(v[k] << shift) >> shift);
        if (premul)
            for (size_t k = 0; k < m; k++)
                v[k] *= s;
        if (r == 0) {
            memcpy(acc, v, m * sizeof(v[0]));
            continue;
        }
        switch (op) {
        case CT_PROD:
            for (size_t k = 0; k < m; k++)
                acc[k] *= v[k];
            break;
        case CT_MAX:
            for (size_t k = 0; k < m; k++)
                acc[k] = (sgn ? (int64_t)v[k] > (int64_t)acc[k] : v[k] > acc[k]) ? v[k] : acc[k];
            break;
        case CT_MIN:
            for (size_t k = 0; k < m; k++)
                acc[k] = (sgn ? (int64_t)v[k] < (int64_t)acc[k] : v[k] < acc[k]) ? v[k] : acc[k];
            break;
        default:
            for (size_t k = 0; k < m; k++)
                acc[k] += v[k];
        }
    }
    for (size_t k = 0; k < m; k++) {
        acc[k] = ct_trunc(dt, acc[k]);
        if (op == CT_AVG)
            acc[k] = ct_trunc(dt, sgn ? (uint64_t)(ct_sext(dt, acc[k]) / n) : acc[k] / (uint64_t)n);
        o->val[k] = 0;
        o->tol[k] = 0;
    }
}

/* The float reduction at global indices idx .. idx + m - 1, in double, ranks in order. */
static CT_HOT void ct_ref_float(const struct ct_case *c, int n, size_t idx, size_t m,
                                struct ct_refs *o)
{
    int dt = c->dt, op = c->op;
    int premul = op == CT_PREMUL_IMM || op == CT_PREMUL_DEV;
    /* prod, max, min start from rank 0's value; sums from 0 (0 + -0 is +0) */
    int from_first = op == CT_PROD || op == CT_MAX || op == CT_MIN;
    double s = premul ? ct_decode(dt, c->scalar_bits) : 1.0, *acc = o->val, mag[CT_BLK];
    uint64_t bits[CT_BLK];
    double v[CT_BLK];
    for (size_t k = 0; k < m; k++)
        acc[k] = 0, mag[k] = 0;
    for (int r = 0; r < n; r++) {
        ct_gen_block(c, r, idx, m, bits);
        ct_decode_block(dt, bits, m, v);
        for (size_t k = 0; k < m; k++)
            v[k] *= s;
        if (r == 0 && from_first) {
            memcpy(acc, v, m * sizeof(v[0]));
            continue;
        }
        switch (op) {
        case CT_PROD:
            for (size_t k = 0; k < m; k++)
                acc[k] *= v[k];
            break;
        case CT_MAX:
            for (size_t k = 0; k < m; k++)
                acc[k] = v[k] > acc[k] ? v[k] : acc[k];
            break;
        case CT_MIN:
            for (size_t k = 0; k < m; k++)
                acc[k] = v[k] < acc[k] ? v[k] : acc[k];
            break;
        default:
            for (size_t k = 0; k < m; k++) {
                acc[k] += v[k];
                mag[k] += fabs(v[k]);
            }
        }
    }
    for (size_t k = 0; k < m; k++) {
        o->tol[k] = 0;
        o->bits[k] = 0;
        if (op == CT_AVG) {
            acc[k] /= n;
            mag[k] /= n;
            if ((n & (n - 1)) != 0)
                o->tol[k] =
                    (n + 1) * ct_ulp(dt, mag[k]) + mag[k] * (dt == CT_DOUBLE ? 0x1p-50 : 0x1p-22);
        }
    }
}
/* ---- one rank ----------------------------------------------------------------------- */

#define CT_GUARD 64
#define CT_GUARD_BYTE 0xa5
#define CT_MAX_REPORTS 40

struct ct_arg {
    const struct colls_suite *suite;
    ncclUniqueId id;
};

struct ct_rank {
    const struct colls_suite *s;
    ncclComm_t comm;
    int rank, n;
    char *a, *b; /* arenas: CT_GUARD front guard, then the buffer */
    size_t cap;  /* bytes usable in each arena after the front guard */
    long ncases, nfailed, nchecked;
    uint64_t seq;
    char rep[8192]; /* one case's failure report, printed in one piece */
    size_t replen;
};

__attribute__((format(printf, 2, 3))) static void ct_say(struct ct_rank *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (x->replen < sizeof(x->rep) - 1) {
        int k = vsnprintf(x->rep + x->replen, sizeof(x->rep) - x->replen, fmt, ap);
        if (k > 0)
            x->replen += (size_t)k;
        if (x->replen > sizeof(x->rep) - 1)
            x->replen = sizeof(x->rep) - 1;
    }
    va_end(ap);
}

static void ct_say_flush(struct ct_rank *x)
{
    if (x->replen)
        fputs(x->rep, stderr);
    x->replen = 0;
}

static size_t ct_count_of(const struct colls_suite *s, int size_class, int dt)
{
    size_t es = (size_t)ct_dt[dt].size;
    switch (size_class) {
    case CT_SZ_0:
        return 0;
    case CT_SZ_1:
        return 1;
    case CT_SZ_7:
        return 7;
    case CT_SZ_LL1:
        return CT_LL_PAYLOAD / es + 1;
    case CT_SZ_SIMPLE1:
        return s->simple_slot / es + 1;
    default:
        return CT_LARGE_BYTES / es + 5;
    }
}

/* What element j of a checked region must hold: input element (rank, idx), or the reduction
 * at global index idx (rank -1). */
struct ct_src {
    int rank;
    size_t idx;
};

/* Layout of one case on this rank. Region B is the output (and, in place, the input);
 * region A the out-of-place input. */
struct ct_layout {
    void *sendp, *recvp;
    size_t a_len, b_len; /* elements checked in A (input kept) and B */
    int b_is_input;      /* B is filled with this rank's input before the call */
    size_t b_in_off;     /* ... starting at this element (in-place AllGather/Gather slices) */
    size_t b_in_len;
};

static void ct_layout(const struct ct_rank *x, const struct ct_case *c, struct ct_layout *L)
{
    int r = x->rank, n = x->n, root = c->root, ip = c->inplace;
    size_t cnt = c->count, es = (size_t)ct_dt[c->dt].size;
    char *A = x->a + CT_GUARD, *B = x->b + CT_GUARD;
    memset(L, 0, sizeof(*L));
    size_t in_len, out_len;
    switch (c->coll) {
    case CT_ALLREDUCE:
    case CT_REDUCE:
    case CT_BROADCAST:
    case CT_SENDRECV_RING:
        in_len = cnt, out_len = cnt;
        break;
    case CT_ALLGATHER:
    case CT_GATHER:
        in_len = cnt, out_len = cnt * (size_t)n;
        break;
    case CT_REDUCESCATTER:
    case CT_SCATTER:
        in_len = cnt * (size_t)n, out_len = cnt;
        break;
    default: /* AlltoAll, SendRecvPairs */
        in_len = cnt * (size_t)n, out_len = cnt * (size_t)n;
    }
    int uses_in = !((c->coll == CT_BROADCAST || c->coll == CT_SCATTER) && r != root);
    int uses_out = !((c->coll == CT_REDUCE || c->coll == CT_GATHER) && r != root);
    if (!ip) {
        /* Buffers a rank does not use are NULL, and so is everything when count is 0. */
        L->sendp = uses_in && cnt ? A : NULL;
        L->recvp = uses_out && cnt ? B : NULL;
        L->a_len = uses_in ? in_len : 0;
        L->b_len = uses_out ? out_len : 0;
        return;
    }
    switch (c->coll) {
    case CT_ALLREDUCE:
    case CT_REDUCE: /* non-root Reduce: the buffer must keep its input */
        L->sendp = L->recvp = B;
        L->b_len = cnt, L->b_is_input = 1, L->b_in_len = cnt;
        break;
    case CT_ALLGATHER:
        L->recvp = B, L->sendp = B + (size_t)r * cnt * es;
        L->b_len = out_len, L->b_is_input = 1, L->b_in_off = (size_t)r * cnt, L->b_in_len = cnt;
        break;
    case CT_REDUCESCATTER:
        L->sendp = B, L->recvp = B + (size_t)r * cnt * es;
        L->b_len = in_len, L->b_is_input = 1, L->b_in_len = in_len;
        break;
    case CT_BROADCAST: /* ncclBcast(B) */
        L->sendp = L->recvp = B;
        L->b_len = cnt, L->b_is_input = r == root, L->b_in_len = cnt;
        break;
    case CT_GATHER:
        if (r == root) {
            L->recvp = B, L->sendp = B + (size_t)r * cnt * es;
            L->b_len = out_len, L->b_is_input = 1, L->b_in_off = (size_t)r * cnt;
            L->b_in_len = cnt;
        } else {
            L->sendp = B, L->recvp = NULL;
            L->b_len = cnt, L->b_is_input = 1, L->b_in_len = cnt;
        }
        break;
    case CT_SCATTER:
        if (r == root) {
            L->sendp = B, L->recvp = B + (size_t)r * cnt * es;
            L->b_len = in_len, L->b_is_input = 1, L->b_in_len = in_len;
        } else {
            L->sendp = NULL, L->recvp = B;
            L->b_len = cnt;
        }
        break;
    }
}

static struct ct_src ct_expect_b(const struct ct_rank *x, const struct ct_case *c, size_t j)
{
    int r = x->rank, n = x->n, root = c->root;
    size_t cnt = c->count;
    struct ct_src s = {-1, j};
    switch (c->coll) {
    case CT_ALLREDUCE:
        return s;
    case CT_REDUCE:
        if (r != root)
            s.rank = r; /* in place on a non-root rank: unchanged */
        return s;
    case CT_REDUCESCATTER:
        if (!c->inplace)
            s.idx = (size_t)r * cnt + j;
        else if (j / cnt != (size_t)r)
            s.rank = r; /* the other ranks' blocks of an in-place send buffer: unchanged */
        return s;
    case CT_ALLGATHER:
        s.rank = (int)(j / cnt), s.idx = j % cnt;
        return s;
    case CT_GATHER:
        if (r == root)
            s.rank = (int)(j / cnt), s.idx = j % cnt;
        else
            s.rank = r; /* in place on a non-root rank: its input, unchanged */
        return s;
    case CT_BROADCAST:
        s.rank = root;
        return s;
    case CT_SCATTER:
        s.rank = root;
        if (!(c->inplace && r == root))
            s.idx = (size_t)r * cnt + j;
        return s;
    case CT_SENDRECV_RING:
        s.rank = (r + n - 1) % n;
        return s;
    default: /* AlltoAll, SendRecvPairs: block p came from rank p, its block r */
        s.rank = (int)(j / cnt), s.idx = (size_t)r * cnt + j % cnt;
        return s;
    }
}

static void ct_fail_head(struct ct_rank *x, const struct ct_case *c, int *nrep)
{
    if ((*nrep)++ == 0 && x->nfailed < CT_MAX_REPORTS)
        ct_say(x, "FAIL [%s] %s %s op=%s count=%zu (%s) %s root=%d nranks=%d rank=%d case#%llu\n",
               x->s->name, ct_coll_name[c->coll], ct_dt[c->dt].name,
               c->reducing ? ct_op_name[c->op] : "-", c->count,
               (const char *[]){"0", "1", "7", "LL+1", "Simple+1", "3MiB+5"}[c->size_class],
               c->inplace ? "in-place" : "out-of-place", c->root, x->n, x->rank,
               (unsigned long long)x->seq);
}

static int ct_check_guard(struct ct_rank *x, const struct ct_case *c, const char *arena, size_t end,
                          const char *name, int *nrep)
{
    int bad = 0;
    for (size_t k = 0; k < CT_GUARD; k++) {
        if ((unsigned char)arena[k] != CT_GUARD_BYTE ||
            (unsigned char)arena[CT_GUARD + end + k] != CT_GUARD_BYTE)
            bad = 1;
    }
    if (bad) {
        ct_fail_head(x, c, nrep);
        if (x->nfailed < CT_MAX_REPORTS)
            ct_say(x, "  guard bytes around buffer %s (%zu bytes) were overwritten\n", name, end);
    }
    return bad;
}

/* Compare region `buf` (len elements) with its expectation; returns the mismatch count. A
 * run of elements within one block of `count` has one source rank and consecutive indices
 * (ct_expect_b), so each run is checked a CT_BLK block at a time. */
static CT_HOT long ct_check_region(struct ct_rank *x, const struct ct_case *c, const char *buf,
                                   size_t len, int is_a, int *nrep)
{
    long bad = 0;
    int dt = c->dt, isf = ct_dt[dt].kind == CT_K_FLOAT;
    uint64_t got[CT_BLK];
    double gotv[CT_BLK];
    struct ct_refs ref;
    for (size_t j0 = 0; j0 < len;) {
        struct ct_src s = is_a ? (struct ct_src){x->rank, j0} : ct_expect_b(x, c, j0);
        size_t end = is_a ? len : (j0 / c->count + 1) * c->count;
        size_t m = (end < len ? end : len) - j0;
        if (m > CT_BLK)
            m = CT_BLK;
        ct_ld_block(buf, (size_t)ct_dt[dt].size, j0, m, got);
        if (s.rank >= 0)
            ct_gen_block(c, s.rank, s.idx, m, ref.bits);
        else if (!isf)
            ct_ref_int(c, x->n, s.idx, m, &ref);
        else {
            ct_ref_float(c, x->n, s.idx, m, &ref);
            ct_decode_block(dt, got, m, gotv);
        }
        x->nchecked += (long)m;
        for (size_t k = 0; k < m; k++) {
            int ok;
            if (s.rank >= 0 || !isf) {
                ok = got[k] == ref.bits[k];
            } else {
                double g = gotv[k];
                ok = ref.tol[k] == 0 ? g == ref.val[k] : fabs(g - ref.val[k]) <= ref.tol[k];
            }
            if (ok || bad++ >= 4)
                continue;
            ct_fail_head(x, c, nrep);
            if (x->nfailed >= CT_MAX_REPORTS)
                continue;
            size_t j = j0 + k, idx = s.idx + k;
            if (s.rank >= 0)
                ct_say(x, "  %s[%zu] = 0x%llx, want 0x%llx (input %zu of rank %d)%s\n",
                       is_a ? "input" : "output", j, (unsigned long long)got[k],
                       (unsigned long long)ref.bits[k], idx, s.rank,
                       is_a ? " -- the input buffer was modified" : "");
            else if (!isf)
                ct_say(x, "  output[%zu] = 0x%llx, want 0x%llx (reduction at %zu)\n", j,
                       (unsigned long long)got[k], (unsigned long long)ref.bits[k], idx);
            else
                ct_say(x, "  output[%zu] = %.9g (0x%llx), want %.9g +- %.3g (reduction at %zu)\n",
                       j, ct_decode(dt, got[k]), (unsigned long long)got[k], ref.val[k], ref.tol[k],
                       idx);
        }
        j0 += m;
    }
    if (bad > 4 && x->nfailed < CT_MAX_REPORTS)
        ct_say(x, "  ... %ld mismatches in %s (%zu elements)\n", bad, is_a ? "input" : "output",
               len);
    return bad;
}

/* The path the case took, for the suites about one path (enum ct_path): the counters of
 * batonCommGetStats the call moved. Returns 1 when the case did not take the suite's path. */
static int ct_check_path(struct ct_rank *x, const struct ct_case *c, const batonCommStats_t *before,
                         const batonCommStats_t *after, int *nrep)
{
    /* The AllReduces the paths are about: one rank and count 0 plan nothing. */
    int ar = c->coll == CT_ALLREDUCE && c->count > 0 && x->n > 1;
    unsigned long long window = after->window - before->window;
    unsigned long long split = after->ring_split - before->ring_split;
    unsigned long long want_window = x->s->path == CT_PATH_WINDOW && ar ? 1 : 0;
    int bad = 0;
    if (window != want_window) {
        ct_fail_head(x, c, nrep);
        if (x->nfailed < CT_MAX_REPORTS)
            ct_say(
                x,
                "  ran through the windows %llu time(s) (batonCommStats_t.window), want %llu%s\n",
                window, want_window,
                window < want_window ? ": an AllReduce on registered windows fell back to the FIFOs"
                                     : "");
        bad = 1;
    }
    /* only the ring AllReduce cuts blocks by the links; no other suite has unequal links */
    unsigned long long want_split = x->s->path == CT_PATH_RING_SPLIT && ar ? 1 : 0;
    if (split != want_split) {
        ct_fail_head(x, c, nrep);
        if (x->nfailed < CT_MAX_REPORTS)
            ct_say(
                x,
                "  split its ring blocks %llu time(s) (batonCommStats_t.ring_split), want %llu%s\n",
                split, want_split,
                split < want_split ? ": a ring AllReduce over unequal links cut equal blocks" : "");
        bad = 1;
    }
    unsigned long long tree = after->tree - before->tree;
    unsigned long long want_tree = x->s->path == CT_PATH_TREE && ar ? 1 : 0;
    if (x->s->path == CT_PATH_TREE && tree != want_tree) { /* other suites: the tuner's choice */
        ct_fail_head(x, c, nrep);
        if (x->nfailed < CT_MAX_REPORTS)
            ct_say(x, "  ran on the tree %llu time(s) (batonCommStats_t.tree), want %llu\n", tree,
                   want_tree);
        bad = 1;
    }
    int ag_rs =
        (c->coll == CT_ALLGATHER || c->coll == CT_REDUCESCATTER) && c->count > 0 && x->n > 1;
    unsigned long long pat = after->pat - before->pat;
    unsigned long long want_pat = x->s->path == CT_PATH_PAT && ag_rs ? 1 : 0;
    if (pat != want_pat) {
        ct_fail_head(x, c, nrep);
        if (x->nfailed < CT_MAX_REPORTS)
            ct_say(x, "  ran as PAT %llu time(s) (batonCommStats_t.pat), want %llu\n", pat,
                   want_pat);
        bad = 1;
    }
    return bad;
}

static void ct_call_ok(struct ct_rank *x, const struct ct_case *c, ncclResult_t res,
                       const char *what)
{
    if (res == ncclSuccess)
        return;
    int nrep = 0;
    x->nfailed = 0; /* always print this one: the rank stops here */
    ct_fail_head(x, c, &nrep);
    ct_say(x, "  %s returned %d (%s): %s\n", what, (int)res, ncclGetErrorString(res),
           ncclGetLastError(x->comm));
    ct_say_flush(x);
    exit(1); /* the other ranks would wait for this one: the launcher kills them */
}

static void ct_run_case(struct ct_rank *x, struct ct_case *c)
{
    int r = x->rank, n = x->n, dt = c->dt;
    size_t es = (size_t)ct_dt[dt].size, cnt = c->count;
    struct ct_layout L;

    x->seq++;
    c->seed = ct_mix(x->seq * 0x100000001b3ull + (uint64_t)c->coll);
    c->root = ct_coll_has_root(c->coll) ? (int)((x->seq * 7 + 3) % (uint64_t)n) : 0;
    ct_case_prepare(c);
    ct_layout(x, c, &L);

    /* Fill: guards everywhere, input in A, sentinel or input in B. */
    memset(x->a, CT_GUARD_BYTE, CT_GUARD);
    memset(x->b, CT_GUARD_BYTE, CT_GUARD);
    char *A = x->a + CT_GUARD, *B = x->b + CT_GUARD;
    ct_fill(c, r, A, 0, L.a_len);
    memset(A + L.a_len * es, CT_GUARD_BYTE, CT_GUARD);
    memset(B, CT_GUARD_BYTE, L.b_len * es + CT_GUARD);
    if (L.b_is_input)
        ct_fill(c, r, B, L.b_in_off, L.b_in_len);

    /* The operator. The PreMulSum scalar variable holds the decoy when it must not be used:
     * after creation for HostImmediate (the value was copied), before the call for Device
     * (the pointer is read when the collective runs). */
    ncclRedOp_t op = ncclSum;
    uint64_t scalar = 0;
    int custom = 0;
    if (c->reducing) {
        switch (c->op) {
        case CT_SUM:
            op = ncclSum;
            break;
        case CT_PROD:
            op = ncclProd;
            break;
        case CT_MAX:
            op = ncclMax;
            break;
        case CT_MIN:
            op = ncclMin;
            break;
        case CT_AVG:
            op = ncclAvg;
            break;
        default: {
            int imm = c->op == CT_PREMUL_IMM;
            ct_st_block(&scalar, dt, 0, 1, imm ? &c->scalar_bits : &c->decoy_bits);
            ct_call_ok(x, c,
                       ncclRedOpCreatePreMulSum(&op, &scalar, (ncclDataType_t)dt,
                                                imm ? ncclScalarHostImmediate : ncclScalarDevice,
                                                x->comm),
                       "ncclRedOpCreatePreMulSum");
            scalar = 0;
            ct_st_block(&scalar, dt, 0, 1, imm ? &c->decoy_bits : &c->scalar_bits);
            custom = 1;
        }
        }
    }

    ncclComm_t comm = x->comm;
    ncclDataType_t d = (ncclDataType_t)dt;
    batonCommStats_t before, after;
    ct_call_ok(x, c, batonCommGetStats(comm, &before, sizeof(before)), "batonCommGetStats");
    const void *sp = L.sendp;
    void *rp = L.recvp;
    ncclResult_t res = ncclSuccess;
    switch (c->coll) {
    case CT_ALLREDUCE:
        res = ncclAllReduce(sp, rp, cnt, d, op, comm, NULL);
        break;
    case CT_ALLGATHER:
        res = ncclAllGather(sp, rp, cnt, d, comm, NULL);
        break;
    case CT_REDUCESCATTER:
        res = ncclReduceScatter(sp, rp, cnt, d, op, comm, NULL);
        break;
    case CT_BROADCAST:
        res = c->inplace ? ncclBcast(rp, cnt, d, c->root, comm, NULL)
                         : ncclBroadcast(sp, rp, cnt, d, c->root, comm, NULL);
        break;
    case CT_REDUCE:
        res = ncclReduce(sp, rp, cnt, d, op, c->root, comm, NULL);
        break;
    case CT_ALLTOALL:
        res = ncclAlltoAll(sp, rp, cnt, d, comm, NULL);
        break;
    case CT_GATHER:
        res = ncclGather(sp, rp, cnt, d, c->root, comm, NULL);
        break;
    case CT_SCATTER:
        res = ncclScatter(sp, rp, cnt, d, c->root, comm, NULL);
        break;
    case CT_SENDRECV_RING: {
        /* Odd ranks post the receive first: the order inside a group must not matter. */
        int next = (r + 1) % n, prev = (r + n - 1) % n;
        ct_call_ok(x, c, ncclGroupStart(), "ncclGroupStart");
        for (int k = 0; k < 2 && res == ncclSuccess; k++)
            res = (k ^ (r & 1)) == 0 ? ncclSend(sp, cnt, d, next, comm, NULL)
                                     : ncclRecv(rp, cnt, d, prev, comm, NULL);
        ct_call_ok(x, c, res, "ncclSend/ncclRecv");
        res = ncclGroupEnd();
        break;
    }
    case CT_SENDRECV_PAIRS: {
        /* Receives first, walking down from this rank; sends walking up, self included. */
        ct_call_ok(x, c, ncclGroupStart(), "ncclGroupStart");
        for (int k = 0; k < n && res == ncclSuccess; k++) {
            int p = (r + n - k) % n;
            res = ncclRecv(cnt ? (char *)rp + (size_t)p * cnt * es : NULL, cnt, d, p, comm, NULL);
        }
        for (int k = 0; k < n && res == ncclSuccess; k++) {
            int q = (r + k) % n;
            res = ncclSend(cnt ? (const char *)sp + (size_t)q * cnt * es : NULL, cnt, d, q, comm,
                           NULL);
        }
        ct_call_ok(x, c, res, "ncclSend/ncclRecv");
        res = ncclGroupEnd();
        break;
    }
    }
    ct_call_ok(x, c, res, ct_coll_name[c->coll]);
    ct_call_ok(x, c, batonCommGetStats(comm, &after, sizeof(after)), "batonCommGetStats");
    if (custom) {
        scalar = 0;
        ct_call_ok(x, c, ncclRedOpDestroy(op, comm), "ncclRedOpDestroy");
    }

    int nrep = 0;
    long bad = 0;
    bad += ct_check_region(x, c, A, L.a_len, 1, &nrep);
    bad += ct_check_region(x, c, B, L.b_len, 0, &nrep);
    bad += ct_check_guard(x, c, x->a, L.a_len * es, "A", &nrep);
    bad += ct_check_guard(x, c, x->b, L.b_len * es, "B", &nrep);
    bad += ct_check_path(x, c, &before, &after, &nrep);
    x->ncases++;
    if (bad)
        x->nfailed++;
    ct_say_flush(x);
}

/* ip_mask: bit 0 out-of-place, bit 1 in-place (where the collective has an in-place form). */
static void ct_run(struct ct_rank *x, int coll, int dt, int op, int size_class, unsigned ip_mask)
{
    if (!ct_coll_has_inplace(coll))
        ip_mask = 1;
    for (int ip = 0; ip < 2; ip++) {
        if (!(ip_mask & (1u << ip)))
            continue;
        struct ct_case c;
        memset(&c, 0, sizeof(c));
        c.coll = coll, c.dt = dt, c.op = op, c.inplace = ip, c.size_class = size_class;
        c.count = ct_count_of(x->s, size_class, dt);
        ct_run_case(x, &c);
    }
}

/* The soak: the same random cases on every rank (the generator is seeded alike), until rank
 * 0's time or case budget runs out. */
static void ct_soak(struct ct_rank *x)
{
    const struct colls_suite *s = x->s;
    const char *env = getenv("BT_SOAK_CASES");
    long budget = env ? atol(env) : s->soak_cases;
    const char *secs = getenv("BT_SOAK_S");
    double limit_s = secs && atoi(secs) > 0 ? atoi(secs) : s->soak_s;
    double t0 = ct_now();
    uint64_t rng = 0x5eed;
    for (long k = 0;; k++) {
        int32_t go = x->rank == 0 ? (budget > 0 ? k < budget : ct_now() - t0 < limit_s) : 0;
        int32_t all = 0;
        BT_TEST_OK(ncclAllReduce(&go, &all, 1, ncclInt32, ncclMax, x->comm, NULL));
        if (!all)
            break;
        rng = ct_mix(rng);
        int coll = (int)(rng % CT_NCOLLS);
        int dt = (int)((rng >> 8) % CT_NDTYPES);
        int op = ct_coll_reduces(coll) ? (int)((rng >> 16) % CT_NOPS) : 0;
        int sz;
        do {
            rng = ct_mix(rng);
            sz = (int)(rng % CT_NSIZES);
        } while (!(s->soak_sizes & (1u << sz)));
        ct_run(x, coll, dt, op, sz, 1u << ((rng >> 24) & 1));
    }
}

static int ct_rank_main(int rank, int nranks, void *argp)
{
    const struct ct_arg *arg = argp;
    const struct colls_suite *s = arg->suite;
    struct bt_test_leaks leaks;
    struct ct_rank x;
    memset(&x, 0, sizeof(x));
    x.s = s, x.rank = rank, x.n = nranks;

    bt_test_leaks_begin(&leaks);
    /* The largest buffer any case needs: 3 MiB + 5 elements per rank, or the Simple size. */
    size_t per = CT_LARGE_BYTES + 5 * 8;
    if (s->simple_slot + 8 > per)
        per = s->simple_slot + 8;
    x.cap = per * (size_t)nranks + CT_GUARD;
    if (s->windows) { /* shareable host memory: the peers map the windows on it */
        BT_TEST_OK(ncclMemAlloc((void **)&x.a, x.cap + CT_GUARD));
        BT_TEST_OK(ncclMemAlloc((void **)&x.b, x.cap + CT_GUARD));
    } else {
        x.a = malloc(x.cap + CT_GUARD);
        x.b = malloc(x.cap + CT_GUARD);
    }
    BT_TEST_CHECK(x.a && x.b, "out of memory");

    BT_TEST_OK(ncclCommInitRank(&x.comm, nranks, arg->id, rank));
    int cnt = -1, me = -1;
    BT_TEST_OK(ncclCommCount(x.comm, &cnt));
    BT_TEST_OK(ncclCommUserRank(x.comm, &me));
    BT_TEST_CHECK(cnt == nranks && me == rank, "count %d rank %d, want %d %d", cnt, me, nranks,
                  rank);

    ncclWindow_t win[2] = {NULL, NULL};
    if (s->windows) {
        BT_TEST_OK(ncclCommWindowRegister(x.comm, x.a, x.cap + CT_GUARD, &win[0],
                                          NCCL_WIN_COLL_SYMMETRIC));
        BT_TEST_OK(ncclCommWindowRegister(x.comm, x.b, x.cap + CT_GUARD, &win[1],
                                          NCCL_WIN_COLL_SYMMETRIC));
        BT_TEST_CHECK(win[0] && win[1], "window registration gave no window");
    }
    const int soak = s->soak_s > 0 || s->soak_cases > 0;
    if (soak)
        ct_soak(&x);
    for (int coll = 0; coll < CT_NCOLLS && !soak; coll++) {
        if (!(s->colls & (1u << coll)))
            continue;
        for (int dt = 0; dt < CT_NDTYPES; dt++) {
            if (!(s->dtypes & (1u << dt)))
                continue;
            for (int op = 0; op < CT_NOPS; op++) {
                if (ct_coll_reduces(coll) ? !(s->ops & (1u << op)) : op > 0)
                    continue;
                for (int sz = 0; sz < CT_NSIZES; sz++)
                    if (s->sizes & (1u << sz))
                        ct_run(&x, coll, dt, op, sz, 3);
            }
        }
    }
    /* The subset: both variants below 3 MiB; at 3 MiB (the slow part to check on 2 cores)
     * one, alternating out-of-place and in-place along the list. */
    for (int k = 0; k < s->nbig && !soak; k++)
        for (int sz = 0; sz < CT_NSIZES; sz++)
            if (s->big_sizes & (1u << sz))
                ct_run(&x, s->big[k].coll, s->big[k].dtype, s->big[k].op, sz,
                       sz == CT_SZ_LARGE ? 1u << (k & 1) : 3u);

    ncclResult_t async = ncclSuccess;
    BT_TEST_OK(ncclCommGetAsyncError(x.comm, &async));
    BT_TEST_CHECK(async == ncclSuccess, "async error %d after the cases", (int)async);
    for (int i = 0; i < 2; i++)
        BT_TEST_OK(ncclCommWindowDeregister(x.comm, win[i]));
    if (s->windows)
        BT_TEST_CHECK(ncclCommWindowDeregister(x.comm, win[0]) == ncclInvalidArgument,
                      "a window deregistered twice was accepted");
    BT_TEST_OK(ncclCommDestroy(x.comm));
    if (s->windows) {
        BT_TEST_OK(ncclMemFree(x.a));
        BT_TEST_OK(ncclMemFree(x.b));
    } else {
        free(x.a);
        free(x.b);
    }
    bt_test_leaks_end(&leaks);
    if (rank == 0 || x.nfailed)
        fprintf(stderr, "[%s] nranks=%d rank=%d: %ld cases, %ld elements checked, %ld failed\n",
                s->name, nranks, rank, x.ncases, x.nchecked, x.nfailed);
    return x.nfailed ? 1 : 0;
}

int colls_suite_run(const struct colls_suite *s)
{
    bt_test_setenv_list(s->env);
    setvbuf(stderr, NULL, _IOLBF, 0);
    ct_tables_init();
    ct_codec_selftest();

    int shm0 = bt_test_shm_count();
    int failed = 0;
    double t_all = ct_now();
    /* BT_CT_MAX_RANKS: a cap on the rank counts (the sanitized build's: tests/CMakeLists.txt) */
    const char *cap = getenv("BT_CT_MAX_RANKS");
    int max_ranks = cap && atoi(cap) > 0 ? atoi(cap) : 0;
    for (int k = 0; k < CT_MAX_RANK_COUNTS && s->ranks[k] > 0; k++) {
        struct ct_arg arg = {.suite = s};
        int n = s->ranks[k];
        if (max_ranks > 0 && n > max_ranks) {
            fprintf(stderr, "[%s] nranks=%d: not run (BT_CT_MAX_RANKS=%d)\n", s->name, n,
                    max_ranks);
            continue;
        }
        BT_TEST_OK(ncclGetUniqueId(&arg.id));
        double t0 = ct_now();
        int rc = bt_test_run_ranks(n, ct_rank_main, &arg, s->timeout_s);
        fprintf(stderr, "[%s] nranks=%d: %s in %.2f s\n", s->name, n, rc ? "FAILED" : "ok",
                ct_now() - t0);
        if (rc)
            failed = 1;
        int shm = bt_test_shm_count();
        if (shm > shm0) {
            fprintf(stderr, "[%s] nranks=%d: %d /dev/shm/baton* entries left behind\n", s->name, n,
                    shm - shm0);
            failed = 1;
        }
    }
    fprintf(stderr, "[%s] %s, %.2f s\n", s->name, failed ? "FAILED" : "passed", ct_now() - t_all);
    return failed;
}
