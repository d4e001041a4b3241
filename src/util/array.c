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

int bt_ptrs_add(struct bt_ptrs *s, void *x)
{
    if (bt_array_grow((void **)&s->p, &s->cap, s->n + 1, sizeof(*s->p)) != 0)
        return -1;
    s->p[s->n++] = x;
    return 0;
}

void bt_ptrs_remove(struct bt_ptrs *s, const void *x)
{
    for (int i = 0; i < s->n; i++)
        if (s->p[i] == x) {
            s->p[i] = s->p[--s->n];
            break;
        }
    if (s->n == 0) {
        free(s->p);
        *s = (struct bt_ptrs){0};
    }
}
