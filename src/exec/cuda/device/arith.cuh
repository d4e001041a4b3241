/*
 * Element arithmetic, the same for every protocol: the fp8 storage types, Num<T> (the type an
 * element is folded in), fold (the four base operations), Scale (the pre-multiplication and
 * the final division), pre_mul (the rounded pre-multiplied source) and their 8-byte-word forms
 * for the one-shot's lines (word_fold, word_scale). Templates over the element type only.
 */
#ifndef BT_EXEC_CUDA_DEVICE_ARITH_CUH
#define BT_EXEC_CUDA_DEVICE_ARITH_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "coll/redop.h"

struct fp8e4m3 {
    uint8_t v;
};
struct fp8e5m2 {
    uint8_t v;
};

/* T: the stored type; C: what it is folded in (coll/redop.h's bt_host_reduce rules). */
template <typename T> struct Num {
    typedef T C;
    static __device__ __forceinline__ C load(T x)
    {
        return x;
    }
    static __device__ __forceinline__ T store(C x)
    {
        return x;
    }
};
template <> struct Num<__half> {
    typedef float C;
    static __device__ __forceinline__ C load(__half x)
    {
        return __half2float(x);
    }
    static __device__ __forceinline__ __half store(C x)
    {
        return __float2half_rn(x);
    }
};
template <> struct Num<__nv_bfloat16> {
    typedef float C;
    static __device__ __forceinline__ C load(__nv_bfloat16 x)
    {
        return __bfloat162float(x);
    }
    static __device__ __forceinline__ __nv_bfloat16 store(C x)
    {
        return __float2bfloat16_rn(x);
    }
};
template <> struct Num<fp8e4m3> {
    typedef float C;
    static __device__ __forceinline__ C load(fp8e4m3 x)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.v, __NV_E4M3)));
    }
    static __device__ __forceinline__ fp8e4m3 store(C x)
    {
        return fp8e4m3{__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)};
    }
};
template <> struct Num<fp8e5m2> {
    typedef float C;
    static __device__ __forceinline__ C load(fp8e5m2 x)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.v, __NV_E5M2)));
    }
    static __device__ __forceinline__ fp8e5m2 store(C x)
    {
        return fp8e5m2{__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)};
    }
};

template <typename C> static __device__ __forceinline__ bool is_nan(C x)
{
    return x != x; /* false for integers */
}

template <typename C> static __device__ __forceinline__ C fold(C a, C b, int op)
{
    switch (op) {
    case BT_OP_SUM:
        return a + b;
    case BT_OP_PROD:
        return a * b;
    case BT_OP_MAX: /* NaN wins; between equal values the later source's is kept */
        return is_nan(a) ? a : (a > b ? a : b);
    default:
        return is_nan(a) ? a : (a < b ? a : b);
    }
}

/* Integers multiply and wrap (in unsigned arithmetic: no overflow UB); floats multiply by
 * the scalar in their fold type. */
template <typename C> struct Scale {
    static __device__ __forceinline__ C mul(C x, const struct bt_redop &r)
    {
        return (C)((uint64_t)x * (uint64_t)r.scalar_i);
    }
    static __device__ __forceinline__ C div(C x, const struct bt_redop &r)
    {
        return (C)((int64_t)x / (int64_t)r.divisor);
    }
};
template <> struct Scale<float> {
    static __device__ __forceinline__ float mul(float x, const struct bt_redop &r)
    {
        return x * (float)r.scalar_f;
    }
    static __device__ __forceinline__ float div(float x, const struct bt_redop &)
    {
        return x;
    }
};
template <> struct Scale<double> {
    static __device__ __forceinline__ double mul(double x, const struct bt_redop &r)
    {
        return x * r.scalar_f;
    }
    static __device__ __forceinline__ double div(double x, const struct bt_redop &)
    {
        return x;
    }
};
template <> struct Scale<uint8_t> {
    static __device__ __forceinline__ uint8_t mul(uint8_t x, const struct bt_redop &r)
    {
        return (uint8_t)((uint64_t)x * (uint64_t)r.scalar_i);
    }
    static __device__ __forceinline__ uint8_t div(uint8_t x, const struct bt_redop &r)
    {
        return (uint8_t)(x / r.divisor);
    }
};
template <> struct Scale<uint32_t> {
    static __device__ __forceinline__ uint32_t mul(uint32_t x, const struct bt_redop &r)
    {
        return (uint32_t)((uint64_t)x * (uint64_t)r.scalar_i);
    }
    static __device__ __forceinline__ uint32_t div(uint32_t x, const struct bt_redop &r)
    {
        return (uint32_t)(x / r.divisor);
    }
};
template <> struct Scale<uint64_t> {
    static __device__ __forceinline__ uint64_t mul(uint64_t x, const struct bt_redop &r)
    {
        return x * (uint64_t)r.scalar_i;
    }
    static __device__ __forceinline__ uint64_t div(uint64_t x, const struct bt_redop &r)
    {
        return x / r.divisor;
    }
};

/* A pre-multiplied source, rounded to T before it is folded (a no-op where T is its own
 * fold type): the copy a peer receives is rounded, and a one-shot AllReduce folds its own
 * input on its own rank, so every rank must use the rounded value to get the same bits. */
template <typename T>
static __device__ __forceinline__ typename Num<T>::C pre_mul(typename Num<T>::C x,
                                                             const struct bt_redop &r)
{
    return Num<T>::load(Num<T>::store(Scale<typename Num<T>::C>::mul(x, r)));
}

/* One 8-byte word of payload, element by element: fold, pre-multiply, final division. */
template <typename T>
static __device__ __forceinline__ uint64_t word_fold(uint64_t a, uint64_t b, int op)
{
    typedef typename Num<T>::C C;
    const int N = 8 / sizeof(T);
    T t[N], x[N];
    memcpy(t, &a, sizeof(t));
    memcpy(x, &b, sizeof(x));
    for (int e = 0; e < N; e++)
        t[e] = Num<T>::store(fold<C>(Num<T>::load(t[e]), Num<T>::load(x[e]), op));
    memcpy(&a, t, sizeof(t));
    return a;
}
/* The pre-multiplication (POST false) or the final division (POST true) of a word. */
template <typename T, bool POST>
static __device__ __forceinline__ uint64_t word_scale(uint64_t a, const struct bt_redop &r)
{
    typedef typename Num<T>::C C;
    const int N = 8 / sizeof(T);
    T t[N];
    memcpy(t, &a, sizeof(t));
    for (int e = 0; e < N; e++) {
        C x = Num<T>::load(t[e]);
        t[e] = Num<T>::store(POST ? Scale<C>::div(x, r) : Scale<C>::mul(x, r));
    }
    memcpy(&a, t, sizeof(t));
    return a;
}

#endif
