#include "util/time.h"

#include "util/param.h"

uint64_t bt_deadline_from_now(void)
{
    int64_t s = bt_param_timeout();
    if (s <= 0)
        return UINT64_MAX;
    return bt_time_ns() + (uint64_t)s * 1000000000ull;
}
