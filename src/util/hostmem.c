#define _GNU_SOURCE /* memfd_create */
#include "util/hostmem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct hostmem {
    char *base;
    size_t len;
    int fd;
    struct hostmem *next;
};

static pthread_mutex_t hm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hostmem *hm_list;

bt_status_t bt_hostmem_alloc(size_t bytes, void **ptr_p)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (bytes + page - 1) / page * page;
    struct hostmem *h = calloc(1, sizeof(*h));
    int fd = memfd_create("baton-mem", MFD_CLOEXEC);
    if (!h || fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        BT_WARN("cannot allocate %zu bytes of shareable host memory: %s", bytes, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(h);
        return BT_ERR_SYSTEM;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        BT_WARN("cannot map %zu bytes of shareable host memory: %s", bytes, strerror(errno));
        close(fd);
        free(h);
        return BT_ERR_SYSTEM;
    }
    h->base = p;
    h->len = len;
    h->fd = fd;
    pthread_mutex_lock(&hm_lock);
    h->next = hm_list;
    hm_list = h;
    pthread_mutex_unlock(&hm_lock);
    *ptr_p = p;
    return BT_OK;
}

int bt_hostmem_free(void *ptr)
{
    struct hostmem *found = NULL;
    pthread_mutex_lock(&hm_lock);
    for (struct hostmem **pp = &hm_list; *pp; pp = &(*pp)->next)
        if ((*pp)->base == ptr) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&hm_lock);
    if (!found)
        return 0;
    munmap(found->base, found->len);
    close(found->fd);
    free(found);
    return 1;
}

int bt_hostmem_find(const void *p, int *fd_p, size_t *off_p, size_t *len_p)
{
    const char *c = p;
    int ok = 0;
    pthread_mutex_lock(&hm_lock);
    for (struct hostmem *h = hm_list; h && !ok; h = h->next)
        if (c >= h->base && c < h->base + h->len) {
            *fd_p = h->fd;
            *off_p = (size_t)(c - h->base);
            *len_p = h->len;
            ok = 1;
        }
    pthread_mutex_unlock(&hm_lock);
    return ok;
}

bt_status_t bt_hostmem_map(int pid, int fd, size_t len, void **ptr_p)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0) {
        BT_INFO(BT_LOG_ALLOC, "cannot open %s (a peer's window): %s", path, strerror(errno));
        return BT_ERR_SYSTEM;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    close(f);
    if (p == MAP_FAILED) {
        BT_INFO(BT_LOG_ALLOC, "cannot map %s (a peer's window): %s", path, strerror(errno));
        return BT_ERR_SYSTEM;
    }
    *ptr_p = p;
    return BT_OK;
}

void bt_hostmem_unmap(void *ptr, size_t len)
{
    if (ptr)
        munmap(ptr, len);
}
