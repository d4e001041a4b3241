/* File descriptors to other processes of this host (fdpass.h). */
#define _GNU_SOURCE
#include "util/fdpass.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/log.h"
#include "util/random.h"
#include "util/time.h"

struct bt_fd_server {
    int listener, fd, count;
    atomic_int stop;
    pthread_t thread;
};

/* The abstract address of `name` (a leading NUL, then the name without its own). */
static socklen_t address(const char *name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    size_t n = strnlen(name, BT_FD_NAME_BYTES - 1);
    memcpy(a->sun_path + 1, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* One connection: a peer of this user gets the descriptor (1), anyone else nothing (0). */
static int serve_one(struct bt_fd_server *s, int c)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        BT_WARN("fd server: a connection from uid %d refused (not this user)",
                len == sizeof(cred) ? (int)cred.uid : -1);
        return 0;
    }
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = sizeof(ctl.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &s->fd, sizeof(int));
    if (sendmsg(c, &m, MSG_NOSIGNAL) != 1) {
        BT_WARN("fd server: sendmsg failed: %s", strerror(errno));
        return 0;
    }
    return 1;
}

static void *serve_main(void *arg)
{
    struct bt_fd_server *s = arg;
    for (int served = 0; served < s->count && !atomic_load(&s->stop);) {
        struct pollfd p = {s->listener, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        served += serve_one(s, c);
        close(c);
    }
    return NULL;
}

bt_status_t bt_fd_serve(int fd, int count, char name[BT_FD_NAME_BYTES], struct bt_fd_server **out)
{
    *out = NULL;
    struct bt_fd_server *s = calloc(1, sizeof(*s));
    if (!s)
        return BT_ERR_SYSTEM;
    s->fd = fd;
    s->count = count;
    snprintf(name, BT_FD_NAME_BYTES, "baton-fd-%d-%016llx", (int)getpid(),
             (unsigned long long)bt_random_u64());
    struct sockaddr_un a;
    socklen_t alen = address(name, &a);
    s->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listener < 0 || bind(s->listener, (struct sockaddr *)&a, alen) != 0 ||
        listen(s->listener, count > 0 ? count : 1) != 0 ||
        pthread_create(&s->thread, NULL, serve_main, s) != 0) {
        BT_WARN("fd server %s: %s", name, strerror(errno));
        if (s->listener >= 0)
            close(s->listener);
        free(s);
        return BT_ERR_SYSTEM;
    }
    *out = s;
    return BT_OK;
}

void bt_fd_serve_stop(struct bt_fd_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->listener);
    free(s);
}

bt_status_t bt_fd_fetch(const char *name, int timeout_ms, int *fd_out)
{
    *fd_out = -1;
    struct sockaddr_un a;
    socklen_t alen = address(name, &a);
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0)
        return BT_ERR_SYSTEM;
    if (connect(c, (struct sockaddr *)&a, alen) != 0) {
        BT_WARN("fd fetch from %s: connect: %s", name, strerror(errno));
        close(c);
        return BT_ERR_SYSTEM;
    }
    struct pollfd p = {c, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) {
        BT_WARN("fd fetch from %s: nothing within %d ms", name, timeout_ms);
        close(c);
        return BT_ERR_REMOTE;
    }
    char byte = 0;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = sizeof(ctl.buf)};
    ssize_t n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
    close(c);
    struct cmsghdr *cm = n == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
        BT_WARN("fd fetch from %s: no descriptor came", name);
        return BT_ERR_SYSTEM;
    }
    memcpy(fd_out, CMSG_DATA(cm), sizeof(int));
    return BT_OK;
}
