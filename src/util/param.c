#include "util/param.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

const char *bt_param_env(const char *name)
{
    char key[128];
    snprintf(key, sizeof(key), "BATON_%s", name);
    const char *v = getenv(key);
    if (v && *v)
        return v;
    snprintf(key, sizeof(key), "NCCL_%s", name);
    v = getenv(key);
    return v && *v ? v : NULL;
}

static int64_t param_parse_int(const char *name, int64_t def)
{
    const char *v = bt_param_env(name);
    if (!v)
        return def;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 0);
    if (errno || end == v || *end != '\0') {
        BT_WARN("invalid value '%s' for %s: not an integer, using the default %" PRId64, v, name,
                def);
        return def;
    }
    BT_INFO(BT_LOG_ENV, "%s set by environment to %lld", name, x);
    return x;
}

/*
 * Each getter caches its value. The first call may race with another thread's first call;
 * both compute the same value from the same environment, so the race is benign. The
 * atomics keep sanitizers and the compiler honest about it.
 */
#define BT_PARAM_INT(fn, name, def, doc)                                                           \
    int64_t bt_param_##fn(void)                                                                    \
    {                                                                                              \
        static int64_t value;                                                                      \
        static int ready;                                                                          \
        if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {                                          \
            __atomic_store_n(&value, param_parse_int(name, (def)), __ATOMIC_RELAXED);              \
            __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);                                         \
        }                                                                                          \
        return __atomic_load_n(&value, __ATOMIC_RELAXED);                                          \
    }
#define BT_PARAM_STR(fn, name, def, doc)                                                           \
    const char *bt_param_str_##fn(void)                                                            \
    {                                                                                              \
        const char *v = bt_param_env(name);                                                        \
        return v ? v : (def);                                                                      \
    }
#include "util/param_list.h"
#undef BT_PARAM_INT
#undef BT_PARAM_STR

static const struct bt_param_info table[] = {
#define BT_PARAM_INT(fn, name, def, doc) {name, "NCCL_" name, bt_param_##fn, NULL},
#define BT_PARAM_STR(fn, name, def, doc) {name, "NCCL_" name, NULL, bt_param_str_##fn},
#include "util/param_list.h"
#undef BT_PARAM_INT
#undef BT_PARAM_STR
};

const struct bt_param_info *bt_param_table(int *n)
{
    *n = (int)(sizeof(table) / sizeof(table[0]));
    return table;
}

const struct bt_param_info *bt_param_find(const char *key)
{
    if (strncmp(key, "NCCL_", 5) == 0)
        key += 5;
    else if (strncmp(key, "BATON_", 6) == 0)
        key += 6;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].name, key) == 0)
            return &table[i];
    return NULL;
}

void bt_param_print_all(FILE *out)
{
    fprintf(out, "%-22s %-14s %-14s %s\n", "PARAMETER", "VALUE", "DEFAULT", "DESCRIPTION");
#define BT_PARAM_INT(fn, name, def, doc)                                                           \
    {                                                                                              \
        char d[32];                                                                                \
        snprintf(d, sizeof(d), "%lld", (long long)(def));                                          \
        fprintf(out, "%-22s %-14lld %-14s %s\n", name, (long long)bt_param_##fn(), d, doc);        \
    }
#define BT_PARAM_STR(fn, name, def, doc)                                                           \
    {                                                                                              \
        const char *d_ = (def);                                                                    \
        const char *v_ = bt_param_str_##fn();                                                      \
        fprintf(out, "%-22s %-14s %-14s %s\n", name, v_ ? v_ : "(unset)", d_ ? d_ : "(unset)",     \
                doc);                                                                              \
    }
#include "util/param_list.h"
#undef BT_PARAM_INT
#undef BT_PARAM_STR
    fprintf(out, "Each is read from BATON_<PARAMETER>, else NCCL_<PARAMETER>.\n");
}
