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

/* One poll of a spin-wait: tells the core this thread is waiting (its sibling hyperthread runs,
 * the loop's exit is not mispredicted). */
static inline void bt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The deadline BATON_TIMEOUT seconds from now, in bt_time_ns units. */
uint64_t bt_deadline_from_now(void);

#endif
