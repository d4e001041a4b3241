/*
 * The rendezvous root: one thread per unique id. It accepts connections, reads each one's
 * hello without ever blocking on it (a stranger that sends half a header and stalls costs
 * nothing but a slot until BT_BS_HELLO_TIMEOUT_S), keeps the connections of valid ranks,
 * and when all nranks have arrived sends each of them the table of listen addresses.
 */
#define _GNU_SOURCE /* accept4, pthread_setname_np */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/wire.h"
#include "util/param.h"
#include "util/time.h"

/* Connections that have not finished their hello yet; more are refused until one goes. */
#define ROOT_MAX_PENDING 256

struct root_pending {
    int fd;
    size_t got;
    uint64_t deadline;
    union bt_sockaddr from;
    struct bt_bs_root_hello hello;
};

struct bt_bs_root {
    uint64_t magic;
    int listen_fd;
    pid_t pid; /* a forked child inherits the list but not the thread */
    pthread_t thread;
    int done;    /* set (atomically) by the thread as it exits: joining will not block */
    int started; /* set (atomically) once the thread's own setup is over */
    int cancel;  /* set (atomically) by bt_bootstrap_root_cancel: give up now */
    struct bt_bs_root *next;
};

/* Roots started by this process and not joined yet. */
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bt_bs_root *roots;

struct root_state {
    struct bt_bs_root *root;
    int nranks; /* -1 until the first valid hello */
    int arrived;
    int *rank_fds;
    union bt_sockaddr *addrs;
    struct root_pending pending[ROOT_MAX_PENDING];
    int npending;
};

static void root_pending_drop(struct root_state *rs, int i)
{
    bt_socket_close(&rs->pending[i].fd);
    rs->pending[i] = rs->pending[--rs->npending];
}

/* Validate a complete hello; on success the connection becomes rank's. Returns 1 if kept. */
static int root_hello_take(struct root_state *rs, struct root_pending *p)
{
    char s[BT_SOCKADDR_STRLEN];
    const struct bt_bs_root_hello *h = &p->hello;
    bt_socket_addr_to_str(&p->from, s, sizeof(s));
    if (h->magic != rs->root->magic) {
        BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP,
                "Bootstrap root: dropping connection from %s: magic 0x%llx is not ours", s,
                (unsigned long long)h->magic);
        return 0;
    }
    if (h->kind != BT_BS_KIND_ROOT || h->nranks <= 0 || h->nranks > BT_BS_MAX_NRANKS ||
        h->rank < 0 || h->rank >= h->nranks || !bt_socket_addr_valid(&h->addr)) {
        BT_WARN("Bootstrap root: dropping connection from %s: bad hello (kind 0x%x rank %d "
                "nranks %d family %d)",
                s, (unsigned)h->kind, (int)h->rank, (int)h->nranks, (int)h->addr.sa.sa_family);
        return 0;
    }
    if (rs->nranks < 0) {
        rs->rank_fds = malloc(sizeof(int) * (size_t)h->nranks);
        rs->addrs = calloc((size_t)h->nranks, sizeof(union bt_sockaddr));
        if (rs->rank_fds == NULL || rs->addrs == NULL) {
            BT_WARN("Bootstrap root: out of memory for %d ranks", (int)h->nranks);
            free(rs->rank_fds);
            free(rs->addrs);
            rs->rank_fds = NULL;
            rs->addrs = NULL;
            return 0;
        }
        for (int r = 0; r < h->nranks; r++)
            rs->rank_fds[r] = -1;
        rs->nranks = h->nranks;
    } else if (h->nranks != rs->nranks) {
        BT_WARN("Bootstrap root: dropping rank %d from %s: it says nranks %d, rank(s) before "
                "it said %d",
                (int)h->rank, s, (int)h->nranks, rs->nranks);
        return 0;
    }
    if (rs->rank_fds[h->rank] >= 0) {
        BT_WARN("Bootstrap root: dropping a second rank %d (from %s): rank %d already arrived",
                (int)h->rank, s, (int)h->rank);
        return 0;
    }
    rs->rank_fds[h->rank] = p->fd;
    p->fd = -1; /* rank_fds owns it */
    rs->addrs[h->rank] = h->addr;
    rs->arrived++;
    BT_TRACE(BT_LOG_BOOTSTRAP, "Bootstrap root: rank %d/%d arrived from %s (%d so far)",
             (int)h->rank, rs->nranks, s, rs->arrived);
    return 1;
}

static void root_accept_all(struct root_state *rs)
{
    for (;;) {
        union bt_sockaddr from;
        socklen_t flen = sizeof(from);
        memset(&from, 0, sizeof(from));
        int fd = accept4(rs->root->listen_fd, &from.sa, &flen, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                BT_WARN("Bootstrap root: accept failed: %s", strerror(errno));
            return;
        }
        if (rs->npending == ROOT_MAX_PENDING) {
            char s[BT_SOCKADDR_STRLEN];
            BT_WARN("Bootstrap root: %d connections have not sent their hello yet; refusing %s",
                    ROOT_MAX_PENDING, bt_socket_addr_to_str(&from, s, sizeof(s)));
            close(fd);
            continue;
        }
        struct root_pending *p = &rs->pending[rs->npending++];
        memset(p, 0, sizeof(*p));
        p->fd = fd;
        p->from = from;
        p->deadline = bt_time_ns() + BT_BS_HELLO_TIMEOUT_S * 1000000000ull;
    }
}

/* Read what pending connection i has sent. Returns 1 if it was removed from pending. */
static int root_pending_read(struct root_state *rs, int i)
{
    struct root_pending *p = &rs->pending[i];
    size_t got = 0;
    bt_status_t st =
        bt_socket_recv_some(p->fd, (char *)&p->hello + p->got, sizeof(p->hello) - p->got, &got);
    if (st != BT_OK) {
        char s[BT_SOCKADDR_STRLEN];
        BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP,
                "Bootstrap root: dropping connection from %s: closed after %zu of %zu bytes",
                bt_socket_addr_to_str(&p->from, s, sizeof(s)), p->got, sizeof(p->hello));
        root_pending_drop(rs, i);
        return 1;
    }
    p->got += got;
    if (p->got < sizeof(p->hello))
        return 0;
    root_hello_take(rs, p); /* kept or not, it is no longer pending */
    root_pending_drop(rs, i);
    return 1;
}

static void root_send_tables(struct root_state *rs)
{
    size_t bytes = sizeof(uint64_t) + (size_t)rs->nranks * sizeof(union bt_sockaddr);
    char *msg = malloc(bytes);
    if (msg == NULL) {
        BT_WARN("Bootstrap root: out of memory for a %zu-byte address table", bytes);
        return;
    }
    memcpy(msg, &rs->root->magic, sizeof(uint64_t));
    memcpy(msg + sizeof(uint64_t), rs->addrs, (size_t)rs->nranks * sizeof(union bt_sockaddr));
    struct bt_socket_wait w = {.deadline = bt_deadline_from_now()};
    for (int r = 0; r < rs->nranks; r++) {
        if (bt_socket_send_all(rs->rank_fds[r], msg, bytes, &w) != BT_OK)
            BT_WARN("Bootstrap root: could not send the address table to rank %d", r);
    }
    free(msg);
}

static void *root_main(void *arg)
{
    struct root_state *rs = calloc(1, sizeof(*rs));
    struct bt_bs_root *root = arg;
    if (rs == NULL) {
        BT_WARN("Bootstrap root: out of memory");
        bt_socket_close(&root->listen_fd);
        __atomic_store_n(&root->done, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    rs->root = root;
    rs->nranks = -1;
    int64_t tmo = bt_param_bootstrap_timeout();
    /* From here the thread allocates only when a rank talks to it. */
    __atomic_store_n(&root->started, 1, __ATOMIC_RELEASE);
    uint64_t deadline = tmo > 0 ? bt_time_ns() + (uint64_t)tmo * 1000000000ull : UINT64_MAX;
    struct pollfd pfd[1 + ROOT_MAX_PENDING];

    while (rs->nranks < 0 || rs->arrived < rs->nranks) {
        uint64_t now = bt_time_ns();
        if (__atomic_load_n(&root->cancel, __ATOMIC_ACQUIRE)) {
            BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP,
                    "Bootstrap root: cancelled with %d of %d ranks arrived (its init was "
                    "aborted)",
                    rs->arrived, rs->nranks);
            goto cleanup;
        }
        if (now >= deadline) {
            char missing[256] = "";
            size_t off = 0;
            for (int r = 0; r < rs->nranks && off + 16 < sizeof(missing); r++)
                if (rs->rank_fds[r] < 0)
                    off += (size_t)snprintf(missing + off, sizeof(missing) - off, " %d", r);
            BT_WARN("Bootstrap root: timed out after %lld s (BOOTSTRAP_TIMEOUT) with %d of %d "
                    "ranks arrived; missing:%s",
                    (long long)tmo, rs->arrived, rs->nranks, rs->nranks < 0 ? " all" : missing);
            goto cleanup;
        }
        for (int i = 0; i < rs->npending;) {
            if (now >= rs->pending[i].deadline) {
                char s[BT_SOCKADDR_STRLEN];
                BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP,
                        "Bootstrap root: dropping connection from %s: %zu of %zu hello bytes "
                        "after %d s",
                        bt_socket_addr_to_str(&rs->pending[i].from, s, sizeof(s)),
                        rs->pending[i].got, sizeof(rs->pending[i].hello), BT_BS_HELLO_TIMEOUT_S);
                root_pending_drop(rs, i);
            } else {
                i++;
            }
        }
        int np = 0;
        pfd[np++] = (struct pollfd){.fd = root->listen_fd, .events = POLLIN};
        for (int i = 0; i < rs->npending; i++)
            pfd[np++] = (struct pollfd){.fd = rs->pending[i].fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)np, BT_SOCKET_POLL_SLICE_MS) < 0 && errno != EINTR) {
            BT_WARN("Bootstrap root: poll failed: %s", strerror(errno));
            goto cleanup;
        }
        /* Walk pending backwards: dropping i moves the last entry into slot i. */
        for (int i = rs->npending - 1; i >= 0; i--)
            if (pfd[1 + i].revents)
                root_pending_read(rs, i);
        if (pfd[0].revents)
            root_accept_all(rs);
    }
    BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap root: all %d ranks arrived", rs->nranks);
    root_send_tables(rs);

cleanup:
    for (int i = rs->npending - 1; i >= 0; i--)
        root_pending_drop(rs, i);
    for (int r = 0; r < rs->nranks; r++)
        bt_socket_close(&rs->rank_fds[r]);
    free(rs->rank_fds);
    free(rs->addrs);
    free(rs);
    bt_socket_close(&root->listen_fd);
    __atomic_store_n(&root->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Join the roots of this process that have finished and that no rank will join. */
static void root_reap_finished(void)
{
    pid_t me = getpid();
    for (;;) {
        struct bt_bs_root *found = NULL;
        pthread_mutex_lock(&roots_lock);
        for (struct bt_bs_root **pp = &roots; *pp; pp = &(*pp)->next) {
            if ((*pp)->pid == me && __atomic_load_n(&(*pp)->done, __ATOMIC_ACQUIRE)) {
                found = *pp;
                *pp = found->next;
                break;
            }
        }
        pthread_mutex_unlock(&roots_lock);
        if (found == NULL)
            return;
        pthread_join(found->thread, NULL);
        free(found);
    }
}

bt_status_t bt_bootstrap_root_start(uint64_t magic, int listen_fd)
{
    root_reap_finished(); /* a launcher that makes many ids keeps no dead threads */
    struct bt_bs_root *root = calloc(1, sizeof(*root));
    if (root == NULL) {
        BT_WARN("Bootstrap root: out of memory");
        close(listen_fd);
        return BT_ERR_SYSTEM;
    }
    root->magic = magic;
    root->listen_fd = listen_fd; /* the thread owns it */
    root->pid = getpid();
    int rc = pthread_create(&root->thread, NULL, root_main, root);
    if (rc != 0) {
        BT_WARN("Bootstrap root: pthread_create failed: %s", strerror(rc));
        goto err_close;
    }
    if (bt_param_set_thread_name())
        pthread_setname_np(root->thread, "baton Bootstrap");
    /* Return only once the thread is past its start-up (thread registration, allocation):
     * a caller that forks next (launchers, tests) then never forks it mid-allocation. */
    while (!__atomic_load_n(&root->started, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&root->done, __ATOMIC_ACQUIRE))
        sched_yield();
    pthread_mutex_lock(&roots_lock);
    root->next = roots;
    roots = root;
    pthread_mutex_unlock(&roots_lock);
    return BT_OK;

err_close:
    close(listen_fd);
    free(root);
    return BT_ERR_SYSTEM;
}

static void root_join(uint64_t magic, int cancel)
{
    struct bt_bs_root *found = NULL;
    pid_t me = getpid();
    pthread_mutex_lock(&roots_lock);
    for (struct bt_bs_root **pp = &roots; *pp; pp = &(*pp)->next) {
        if ((*pp)->magic == magic && (*pp)->pid == me) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&roots_lock);
    if (found) {
        if (cancel)
            __atomic_store_n(&found->cancel, 1, __ATOMIC_RELEASE);
        pthread_join(found->thread, NULL);
        free(found);
    }
}

void bt_bootstrap_root_join(uint64_t magic)
{
    root_join(magic, 0);
}

void bt_bootstrap_root_cancel_magic(uint64_t magic)
{
    root_join(magic, 1);
}
