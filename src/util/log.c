#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/param.h"

int bt_log_level_cached = -1;
unsigned bt_log_subsys_cached = BT_LOG_INIT | BT_LOG_ENV;

static pthread_mutex_t bt_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char bt_last_error[1024];
static __thread int bt_log_rank = -1;
static __thread char bt_log_name[64];
static char bt_hostname[64];

static unsigned parse_subsys(const char *s)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"INIT", BT_LOG_INIT},     {"COLL", BT_LOG_COLL},
        {"P2P", BT_LOG_P2P},       {"SHM", BT_LOG_SHM},
        {"NET", BT_LOG_NET},       {"PROXY", BT_LOG_PROXY},
        {"TUNING", BT_LOG_TUNING}, {"BOOTSTRAP", BT_LOG_BOOTSTRAP},
        {"ENV", BT_LOG_ENV},       {"ALLOC", BT_LOG_ALLOC},
        {"ALL", BT_LOG_ALL},
    };
    unsigned mask = 0;
    int invert = 0;
    if (*s == '^') {
        invert = 1;
        s++;
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strcasecmp(tok, names[i].name) == 0)
                mask |= names[i].bit;
    }
    return invert ? ~mask : mask;
}

int bt_log_init(void)
{
    pthread_mutex_lock(&bt_log_lock);
    if (bt_log_level_cached < 0) {
        int level = BT_LEVEL_NONE;
        const char *lv = bt_param_str_debug();
        if (lv) {
            if (strcasecmp(lv, "VERSION") == 0)
                level = BT_LEVEL_VERSION;
            else if (strcasecmp(lv, "WARN") == 0)
                level = BT_LEVEL_WARN;
            else if (strcasecmp(lv, "INFO") == 0)
                level = BT_LEVEL_INFO;
            else if (strcasecmp(lv, "TRACE") == 0)
                level = BT_LEVEL_TRACE;
        }
        const char *ss = bt_param_str_debug_subsys();
        if (ss)
            bt_log_subsys_cached = parse_subsys(ss);
        gethostname(bt_hostname, sizeof(bt_hostname) - 1);
        char *dot = strchr(bt_hostname, '.');
        if (dot)
            *dot = '\0';
        __atomic_store_n(&bt_log_level_cached, level, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&bt_log_lock);
    return bt_log_level_cached;
}

void bt_log_set_comm(int rank, const char *name)
{
    bt_log_rank = rank;
    if (!name || !name[0])
        bt_log_name[0] = '\0';
    else if (strcmp(bt_log_name, name) != 0) /* the hot path sets the same name again */
        snprintf(bt_log_name, sizeof(bt_log_name), "%s", name);
}

const char *bt_log_last_error(void)
{
    return bt_last_error;
}

void bt_log(int level, unsigned subsys, const char *file, int line, const char *fmt, ...)
{
    int lvl = bt_log_level_cached >= 0 ? bt_log_level_cached : bt_log_init();
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    if (level == BT_LEVEL_WARN) {
        pthread_mutex_lock(&bt_log_lock);
        snprintf(bt_last_error, sizeof(bt_last_error), "%s", msg);
        pthread_mutex_unlock(&bt_log_lock);
    }
    if (lvl < level && level != BT_LEVEL_REPORT)
        return;

    char rankbuf[80] = "";
    if (bt_log_rank >= 0 && bt_log_name[0])
        snprintf(rankbuf, sizeof(rankbuf), " [%d %s]", bt_log_rank, bt_log_name);
    else if (bt_log_rank >= 0)
        snprintf(rankbuf, sizeof(rankbuf), " [%d]", bt_log_rank);
    const char *what = level == BT_LEVEL_WARN     ? "WARN"
                       : level == BT_LEVEL_TRACE  ? "TRACE"
                       : level == BT_LEVEL_REPORT ? "REPORT"
                                                  : "INFO";
    /* One fprintf per line so lines of concurrent threads do not interleave. */
    if (level == BT_LEVEL_TRACE) {
        const char *base = strrchr(file, '/');
        fprintf(stderr, "%s:%d:%ld%s BATON %s %s:%d %s\n", bt_hostname, (int)getpid(),
                (long)syscall(SYS_gettid), rankbuf, what, base ? base + 1 : file, line, msg);
    } else {
        fprintf(stderr, "%s:%d:%ld%s BATON %s %s\n", bt_hostname, (int)getpid(),
                (long)syscall(SYS_gettid), rankbuf, what, msg);
    }
}
