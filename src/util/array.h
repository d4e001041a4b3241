#ifndef BT_UTIL_ARRAY_H
#define BT_UTIL_ARRAY_H

#include <stddef.h>

/* Grow *arr (of *cap elements of `elem` bytes) to hold at least `need`, doubling from 16.
 * Returns 0, or -1 when out of memory (the array is unchanged). */
int bt_array_grow(void **arr, int *cap, int need, size_t elem);

/* An unordered set of pointers (p[0 .. n - 1]); the caller keeps it under its own lock. */
struct bt_ptrs {
    void **p;
    int n, cap;
};
/* Add x: 0, or -1 when out of memory (the set unchanged). */
int bt_ptrs_add(struct bt_ptrs *s, void *x);
/* Remove x if present; the array is freed when the set empties. */
void bt_ptrs_remove(struct bt_ptrs *s, const void *x);

#endif
