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

/* The raw value of BATON_<name>, else NCCL_<name>, else NULL. */
const char *bt_param_env(const char *name);

/* Print every parameter with its value, default and doc. */
void bt_param_print_all(FILE *out);

#endif
