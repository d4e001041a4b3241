/*
 * POSIX shared-memory segments. The creator names and sizes a segment, the peer opens it
 * by name; the name is unlinked as soon as both have mapped it, so a crash leaks nothing.
 */
#ifndef BT_UTIL_SHM_H
#define BT_UTIL_SHM_H

#include <stddef.h>

#include "util/status.h"

#define BT_SHM_NAME_MAX 64

struct bt_shm_seg {
    char name[BT_SHM_NAME_MAX]; /* "" once unlinked */
    void *ptr;
    size_t size;
};

/* Create, reserve (posix_fallocate: a full /dev/shm fails here, not with SIGBUS later) and
 * map a zero-filled segment. */
bt_status_t bt_shm_create(size_t size, struct bt_shm_seg *seg);

/* Map a segment another process created. */
bt_status_t bt_shm_open(const char *name, size_t size, struct bt_shm_seg *seg);

/* Remove the name; the mapping stays valid. Idempotent. */
void bt_shm_unlink(struct bt_shm_seg *seg);

/* Unmap (and unlink if still named). Accepts a zeroed segment. */
void bt_shm_close(struct bt_shm_seg *seg);

#endif
