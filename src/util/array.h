#ifndef BT_UTIL_ARRAY_H
#define BT_UTIL_ARRAY_H

#include <stddef.h>

/* Grow *arr (of *cap elements of `elem` bytes) to hold at least `need`, doubling from 16.
 * Returns 0, or -1 when out of memory (the array is unchanged). */
int bt_array_grow(void **arr, int *cap, int need, size_t elem);

#endif
