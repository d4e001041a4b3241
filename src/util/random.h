/*
 * Random 64-bit values for the library's identifiers: the unique id's magic, a socket
 * listener's magic, a network handle's id. They keep strangers and stale connections apart;
 * they are not secrets.
 */
#ifndef BT_UTIL_RANDOM_H
#define BT_UTIL_RANDOM_H

#include <stdint.h>

/* 64 random bits, never 0: getrandom(), else /dev/urandom, else (early boot, no entropy yet,
 * or a sandbox without either) the clock, the pid and a stack address mixed. Thread-safe. */
uint64_t bt_random_u64(void);

#endif
