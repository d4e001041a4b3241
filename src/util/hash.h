/*
 * FNV-1a, 64-bit: the one hash of the library (host identity, the magic a COMM_ID string
 * stands for, the unique id's checksum). Not for anything an adversary chooses.
 */
#ifndef BT_UTIL_HASH_H
#define BT_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define BT_FNV1A_INIT 0xcbf29ce484222325ull

/* Fold `n` bytes into `h` (start from BT_FNV1A_INIT). */
static inline uint64_t bt_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Fold a NUL-terminated string into `h`. */
static inline uint64_t bt_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

#endif
