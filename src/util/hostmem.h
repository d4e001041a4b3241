/*
 * Host memory other processes can map: ncclMemAlloc's memory on host communicators. Each
 * allocation is a memfd (no name, so nothing is left in /dev/shm by a crash) mapped shared;
 * a peer process of the same user maps it through /proc/<pid>/fd/<fd> (windows, core/window.c).
 */
#ifndef BT_UTIL_HOSTMEM_H
#define BT_UTIL_HOSTMEM_H

#include <stddef.h>

#include "util/status.h"

/* Page-aligned, zeroed, `bytes` (> 0) of shareable memory. */
bt_status_t bt_hostmem_alloc(size_t bytes, void **ptr_p);

/* Free what bt_hostmem_alloc gave: 1 when `ptr` was one of its allocations, else 0. */
int bt_hostmem_free(void *ptr);

/* The allocation holding `p` (fd, p's offset in it, its length): 1 when there is one. */
int bt_hostmem_find(const void *p, int *fd_p, size_t *off_p, size_t *len_p);

/* Map allocation `fd` of process `pid` (`len` bytes) here / unmap it. */
bt_status_t bt_hostmem_map(int pid, int fd, size_t len, void **ptr_p);
void bt_hostmem_unmap(void *ptr, size_t len);

#endif
