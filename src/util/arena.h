/*
 * An arena of stable addresses: pieces taken from it never move until it is reset, so callers
 * may link them by pointer (a launch's works, fences and scratch), and a reset keeps the
 * memory for the next use (the launch path allocates nothing once warm). Blocks of 64 KB, or
 * one piece's size when larger. Not thread-safe: one per thread, or per owner.
 */
#ifndef BT_UTIL_ARENA_H
#define BT_UTIL_ARENA_H

#include <stddef.h>

struct bt_arena_block;

struct bt_arena {
    struct bt_arena_block *head; /* every block, in order */
    struct bt_arena_block *cur;  /* the block pieces come from now */
    size_t used;                 /* bytes of cur taken */
};

/* `bytes` bytes aligned to 64, uninitialized; NULL when out of memory. */
void *bt_arena_take(struct bt_arena *a, size_t bytes);

/* Forget every piece (their memory is reused by the next takes). */
void bt_arena_reset(struct bt_arena *a);

/* Free every block. */
void bt_arena_free(struct bt_arena *a);

#endif
