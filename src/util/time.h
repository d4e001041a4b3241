#ifndef BT_UTIL_TIME_H
#define BT_UTIL_TIME_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds. */
static inline uint64_t bt_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The deadline BATON_TIMEOUT seconds from now, in bt_time_ns units. */
uint64_t bt_deadline_from_now(void);

#endif
