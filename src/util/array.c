#include "util/array.h"

#include <stdlib.h>

int bt_array_grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}
