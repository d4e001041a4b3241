/*
 * Logging. Levels and subsystems follow NCCL_DEBUG / NCCL_DEBUG_SUBSYS (BATON_ wins):
 *   BATON_DEBUG=WARN|INFO|TRACE   BATON_DEBUG_SUBSYS=INIT,COLL,P2P,SHM,NET,PROXY,TUNING,ALL
 * Line prefix: "host:pid:tid [rank] BATON INFO ...". Every WARN is also kept as
 * the process's last error text for ncclGetLastError.
 */
#ifndef BT_UTIL_LOG_H
#define BT_UTIL_LOG_H

#include <stdio.h>

enum bt_log_level {
    BT_LEVEL_NONE = 0,
    BT_LEVEL_VERSION = 1,
    BT_LEVEL_WARN = 2,
    BT_LEVEL_INFO = 3,
    BT_LEVEL_TRACE = 4,
    BT_LEVEL_REPORT = 5, /* not a threshold: always printed (BT_REPORT) */
};

enum bt_log_subsys {
    BT_LOG_INIT = 1u << 0,
    BT_LOG_COLL = 1u << 1,
    BT_LOG_P2P = 1u << 2,
    BT_LOG_SHM = 1u << 3,
    BT_LOG_NET = 1u << 4,
    BT_LOG_PROXY = 1u << 5,
    BT_LOG_TUNING = 1u << 6,
    BT_LOG_BOOTSTRAP = 1u << 7,
    BT_LOG_ENV = 1u << 8,
    BT_LOG_ALLOC = 1u << 9,
    BT_LOG_ALL = ~0u,
};

/* Read once from the environment on first use; -1 until then. */
extern int bt_log_level_cached;
extern unsigned bt_log_subsys_cached;
int bt_log_init(void);

void bt_log(int level, unsigned subsys, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The text of the most recent WARN in this process (ncclGetLastError). */
const char *bt_log_last_error(void);

/* The rank printed in this thread's log prefix and the communicator's name (config.commName;
 * NULL or "": none), as "[rank name]". */
void bt_log_set_comm(int rank, const char *name);

static inline int bt_log_enabled(int level, unsigned subsys)
{
    int lvl = bt_log_level_cached >= 0 ? bt_log_level_cached : bt_log_init();
    return lvl >= level && (level <= BT_LEVEL_WARN || (bt_log_subsys_cached & subsys));
}

/* WARN is always recorded (for ncclGetLastError) even when not printed. */
#define BT_WARN(...) bt_log(BT_LEVEL_WARN, BT_LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
/* A report the user asked for by its own knob (HANG_REPORT): printed whatever DEBUG says,
 * tagged REPORT, and not recorded as the last error. */
#define BT_REPORT(...) bt_log(BT_LEVEL_REPORT, BT_LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define BT_INFO(subsys, ...)                                                                       \
    do {                                                                                           \
        if (bt_log_enabled(BT_LEVEL_INFO, (subsys)))                                               \
            bt_log(BT_LEVEL_INFO, (subsys), __FILE__, __LINE__, __VA_ARGS__);                      \
    } while (0)
#define BT_TRACE(subsys, ...)                                                                      \
    do {                                                                                           \
        if (bt_log_enabled(BT_LEVEL_TRACE, (subsys)))                                              \
            bt_log(BT_LEVEL_TRACE, (subsys), __FILE__, __LINE__, __VA_ARGS__);                     \
    } while (0)

#endif
