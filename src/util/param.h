/*
 * Parameters: one getter per tunable in param_list.h. Integer values are read from the
 * environment on first use and cached for the life of the process; string getters read
 * the environment on each call (callers on a hot path parse them once, as the tuner does).
 */
#ifndef BT_UTIL_PARAM_H
#define BT_UTIL_PARAM_H

#include <stdint.h>
#include <stdio.h>

#define BT_PARAM_INT(fn, name, def, doc) int64_t bt_param_##fn(void);
#define BT_PARAM_STR(fn, name, def, doc) const char *bt_param_str_##fn(void);
#include "util/param_list.h"
#undef BT_PARAM_INT
#undef BT_PARAM_STR

/* One parameter as a table row, for callers that look parameters up by name (ncclParam*). */
struct bt_param_info {
    const char *name;             /* without prefix: "TIMEOUT" */
    const char *key;              /* as NCCL names it: "NCCL_TIMEOUT" */
    int64_t (*get_int)(void);     /* an integer parameter's getter, else NULL */
    const char *(*get_str)(void); /* a string parameter's getter, else NULL */
};

/* The table, every parameter of param_list.h in its order; *n its length. */
const struct bt_param_info *bt_param_table(int *n);

/* The parameter `key` names: "NCCL_<NAME>", "BATON_<NAME>" or "<NAME>"; NULL if none. */
const struct bt_param_info *bt_param_find(const char *key);

/* The raw value of BATON_<name>, else NCCL_<name>, else NULL. */
const char *bt_param_env(const char *name);

/* Print every parameter with its value, default and doc. */
void bt_param_print_all(FILE *out);

#endif
