/*
 * NCCL 2.30's parameter API over Baton's parameter table (util/param_list.h). A handle is a
 * row of the table. Integer parameters are 64-bit signed; a typed getter of a narrower or
 * unsigned type succeeds when the value fits it, and fails (naming the parameter) when it
 * does not. Strings come back in per-thread buffers, valid until the same thread's next call
 * of the same function, as NCCL's are.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "nccl.h"
#include "util/log.h"
#include "util/param.h"

static const struct bt_param_info *row(ncclParamHandle_t h)
{
    return (const struct bt_param_info *)h;
}

BT_API ncclResult_t ncclParamBind(ncclParamHandle_t *out, const char *key)
{
    if (!out || !key) {
        BT_WARN("ncclParamBind: %s is NULL", out ? "key" : "out");
        return ncclInvalidArgument;
    }
    const struct bt_param_info *p = bt_param_find(key);
    if (!p) {
        BT_INFO(BT_LOG_ENV, "ncclParamBind: no parameter \"%s\" (baton-perf --params lists them)",
                key);
        return ncclInvalidArgument;
    }
    *out = (ncclParamHandle_t)p;
    return ncclSuccess;
}

/* An integer parameter's value for a getter of range [lo, hi] (hi as unsigned when the
 * getter's type is). */
static ncclResult_t get_int(ncclParamHandle_t h, const char *fn, int64_t lo, uint64_t hi,
                            int64_t *v)
{
    if (!h) {
        BT_WARN("%s: the handle is NULL (ncclParamBind gives one)", fn);
        return ncclInvalidArgument;
    }
    const struct bt_param_info *p = row(h);
    if (!p->get_int) {
        BT_WARN("%s: %s is a string parameter: read it with ncclParamGetStr", fn, p->key);
        return ncclInvalidArgument;
    }
    *v = p->get_int();
    if (*v < lo || (*v >= 0 && (uint64_t)*v > hi)) {
        BT_WARN("%s: %s is %" PRId64 ", which this type cannot hold", fn, p->key, *v);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

#define TYPED_GETTER(suffix, ctype, lo, hi)                                                        \
    BT_API ncclResult_t ncclParamGet##suffix(ncclParamHandle_t h, ctype *out)                      \
    {                                                                                              \
        int64_t v;                                                                                 \
        if (!out) {                                                                                \
            BT_WARN("ncclParamGet" #suffix ": out is NULL");                                       \
            return ncclInvalidArgument;                                                            \
        }                                                                                          \
        ncclResult_t r = get_int(h, "ncclParamGet" #suffix, (lo), (hi), &v);                       \
        if (r == ncclSuccess)                                                                      \
            *out = (ctype)v;                                                                       \
        return r;                                                                                  \
    }
TYPED_GETTER(I8, int8_t, INT8_MIN, INT8_MAX)
TYPED_GETTER(I16, int16_t, INT16_MIN, INT16_MAX)
TYPED_GETTER(I32, int32_t, INT32_MIN, INT32_MAX)
TYPED_GETTER(I64, int64_t, INT64_MIN, INT64_MAX)
TYPED_GETTER(U8, uint8_t, 0, UINT8_MAX)
TYPED_GETTER(U16, uint16_t, 0, UINT16_MAX)
TYPED_GETTER(U32, uint32_t, 0, UINT32_MAX)
TYPED_GETTER(U64, uint64_t, 0, UINT64_MAX)
#undef TYPED_GETTER

/* The value as text into buf: an integer in decimal, a string as is, unset as "". */
static const char *as_text(const struct bt_param_info *p, char *buf, size_t size)
{
    if (p->get_int)
        snprintf(buf, size, "%" PRId64, p->get_int());
    else
        snprintf(buf, size, "%s", p->get_str() ? p->get_str() : "");
    return buf;
}

BT_API ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char **out)
{
    static __thread char buf[4096];
    if (!h || !out) {
        BT_WARN("ncclParamGetStr: %s is NULL", h ? "out" : "the handle");
        return ncclInvalidArgument;
    }
    *out = as_text(row(h), buf, sizeof(buf));
    return ncclSuccess;
}

BT_API ncclResult_t ncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len)
{
    if (!h || !out || !len) {
        BT_WARN("ncclParamGet: %s is NULL", !h ? "the handle" : !out ? "out" : "len");
        return ncclInvalidArgument;
    }
    const struct bt_param_info *p = row(h);
    int64_t v = 0;
    const char *s = NULL;
    size_t n;
    if (p->get_int) {
        v = p->get_int();
        n = sizeof(v);
    } else {
        s = p->get_str();
        n = s ? strlen(s) + 1 : 0;
    }
    if (maxLen < 0 || (size_t)maxLen < n) {
        BT_WARN("ncclParamGet: %s needs %zu bytes, maxLen is %d", p->key, n, maxLen);
        return ncclInvalidArgument;
    }
    memcpy(out, p->get_int ? (const void *)&v : (const void *)s, n);
    *len = (int)n;
    return ncclSuccess;
}

BT_API ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen)
{
    static __thread char buf[4096];
    if (!key || !value || !valueLen) {
        BT_WARN("ncclParamGetParameter: %s is NULL", !key ? "key" : !value ? "value" : "valueLen");
        return ncclInvalidArgument;
    }
    const struct bt_param_info *p = bt_param_find(key);
    if (!p) {
        *value = NULL;
        *valueLen = 0;
        BT_INFO(BT_LOG_ENV, "ncclParamGetParameter: no parameter \"%s\"", key);
        return ncclInvalidArgument;
    }
    *value = as_text(p, buf, sizeof(buf));
    *valueLen = (int)strlen(buf);
    return ncclSuccess;
}

BT_API ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen)
{
    /* The keys are the table's own strings, which live as long as the library. */
    static __thread const char *keys[256];
    if (!table || !tableLen) {
        BT_WARN("ncclParamGetAllParameterKeys: %s is NULL", table ? "tableLen" : "table");
        return ncclInvalidArgument;
    }
    int n;
    const struct bt_param_info *all = bt_param_table(&n);
    if (n > (int)(sizeof(keys) / sizeof(keys[0]))) {
        BT_WARN("ncclParamGetAllParameterKeys: %d parameters outgrew the table of %zu", n,
                sizeof(keys) / sizeof(keys[0]));
        return ncclInternalError;
    }
    for (int i = 0; i < n; i++)
        keys[i] = all[i].key;
    *table = keys;
    *tableLen = n;
    return ncclSuccess;
}

BT_API void ncclParamDumpAll(void)
{
    bt_param_print_all(stdout);
}

/* Profiling aliases (see api.h). */
BT_PNCCL(ncclParamBind);
BT_PNCCL(ncclParamGetI8);
BT_PNCCL(ncclParamGetI16);
BT_PNCCL(ncclParamGetI32);
BT_PNCCL(ncclParamGetI64);
BT_PNCCL(ncclParamGetU8);
BT_PNCCL(ncclParamGetU16);
BT_PNCCL(ncclParamGetU32);
BT_PNCCL(ncclParamGetU64);
BT_PNCCL(ncclParamGetStr);
BT_PNCCL(ncclParamGet);
BT_PNCCL(ncclParamGetParameter);
BT_PNCCL(ncclParamGetAllParameterKeys);
BT_PNCCL(ncclParamDumpAll);
