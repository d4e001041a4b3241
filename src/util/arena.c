/* An arena of stable addresses (arena.h). */
#include "util/arena.h"

#include <stdlib.h>

#define BLOCK_BYTES (64 * 1024)
#define ALIGN 64

struct bt_arena_block {
    struct bt_arena_block *next;
    size_t size; /* bytes of data[] */
    _Alignas(ALIGN) unsigned char data[];
};

static size_t round_up(size_t b)
{
    return (b + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

void *bt_arena_take(struct bt_arena *a, size_t bytes)
{
    bytes = round_up(bytes ? bytes : 1);
    /* the current block, else the next kept one that is large enough, else a new one at the
     * end of the list (a kept block too small for this piece waits for smaller ones) */
    while (a->cur && a->used + bytes > a->cur->size) {
        a->cur = a->cur->next;
        a->used = 0;
    }
    if (!a->cur) {
        size_t size = bytes > BLOCK_BYTES ? bytes : BLOCK_BYTES;
        struct bt_arena_block *b = aligned_alloc(ALIGN, round_up(sizeof(*b) + size));
        if (!b)
            return NULL;
        b->next = NULL;
        b->size = size;
        struct bt_arena_block **tail = &a->head;
        while (*tail)
            tail = &(*tail)->next;
        *tail = b;
        a->cur = b;
        a->used = 0;
    }
    void *p = a->cur->data + a->used;
    a->used += bytes;
    return p;
}

void bt_arena_reset(struct bt_arena *a)
{
    a->cur = a->head;
    a->used = 0;
}

void bt_arena_free(struct bt_arena *a)
{
    struct bt_arena_block *b = a->head;
    while (b) {
        struct bt_arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = a->cur = NULL;
    a->used = 0;
}
