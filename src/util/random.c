/* Random identifiers (random.h). */
#include "util/random.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/hash.h"
#include "util/time.h"

/* /dev/urandom, for kernels or sandboxes without getrandom(); 0 when it cannot be read. */
static uint64_t from_urandom(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
        v = 0;
    close(fd);
    return v;
}

uint64_t bt_random_u64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = from_urandom();
    if (v == 0) { /* distinct per process and call, if not unpredictable */
        uint64_t mix[3] = {bt_time_ns(), (uint64_t)getpid(), (uint64_t)(uintptr_t)&v};
        v = bt_fnv1a(BT_FNV1A_INIT, mix, sizeof(mix));
    }
    return v ? v : 1;
}
