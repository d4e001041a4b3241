#include "util/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <unistd.h>

static atomic_uint bt_shm_counter;

/* Free bytes of /dev/shm, for error messages. */
static unsigned long long shm_free_bytes(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0)
        return 0;
    return (unsigned long long)sv.f_bavail * sv.f_frsize;
}

bt_status_t bt_shm_create(size_t size, struct bt_shm_seg *seg)
{
    unsigned r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (unsigned)getpid() * 2654435761u;
    memset(seg, 0, sizeof(*seg));
    snprintf(seg->name, sizeof(seg->name), "/baton-%d-%u-%08x", (int)getpid(),
             atomic_fetch_add(&bt_shm_counter, 1), r);

    int fd = shm_open(seg->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        BT_WARN("shm_open(%s) failed: %s", seg->name, strerror(errno));
        seg->name[0] = '\0';
        return BT_ERR_SYSTEM;
    }
    int err = posix_fallocate(fd, 0, (off_t)size);
    if (err != 0) {
        BT_WARN("cannot reserve %zu bytes of shared memory for %s: %s; /dev/shm has %llu bytes "
                "free (enlarge it, e.g. docker --shm-size, or lower BATON_BUFFSIZE)",
                size, seg->name, strerror(err), shm_free_bytes());
        goto err_unlink;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        BT_WARN("mmap of %zu bytes of %s failed: %s", size, seg->name, strerror(errno));
        goto err_unlink;
    }
    close(fd);
    seg->ptr = p;
    seg->size = size;
    return BT_OK;

err_unlink:
    close(fd);
    shm_unlink(seg->name);
    seg->name[0] = '\0';
    return BT_ERR_SYSTEM;
}

bt_status_t bt_shm_open(const char *name, size_t size, struct bt_shm_seg *seg)
{
    memset(seg, 0, sizeof(*seg));
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        BT_WARN("shm_open(%s) of a peer's segment failed: %s (is the peer alive? are both "
                "processes in the same IPC namespace?)",
                name, strerror(errno));
        return BT_ERR_SYSTEM;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        BT_WARN("mmap of %zu bytes of peer segment %s failed: %s", size, name, strerror(errno));
        return BT_ERR_SYSTEM;
    }
    seg->ptr = p;
    seg->size = size;
    return BT_OK; /* the creator owns the name; seg->name stays "" */
}

void bt_shm_unlink(struct bt_shm_seg *seg)
{
    if (seg->name[0]) {
        shm_unlink(seg->name);
        seg->name[0] = '\0';
    }
}

void bt_shm_close(struct bt_shm_seg *seg)
{
    bt_shm_unlink(seg);
    if (seg->ptr)
        munmap(seg->ptr, seg->size);
    seg->ptr = NULL;
    seg->size = 0;
}
