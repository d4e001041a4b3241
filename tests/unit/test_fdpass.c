/*
 * util/fdpass: a descriptor handed to other processes. A memfd holding a known text is served
 * to 3 child processes, each of which fetches it and reads the text through it (the same
 * file, not a reopened path); a fetch from a name nobody serves fails at once; a server whose
 * peers never come stops when told.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "util/fdpass.h"
#include "util/time.h"

static const char kText[] = "baton fd pass";

int main(void)
{
    int fd = memfd_create("baton-fdpass-test", MFD_CLOEXEC);
    BT_TEST_CHECK(fd >= 0, "memfd_create");
    BT_TEST_CHECK(write(fd, kText, sizeof(kText)) == (ssize_t)sizeof(kText), "write");
    char name[BT_FD_NAME_BYTES];
    struct bt_fd_server *s = NULL;
    enum { N = 3 };
    BT_TEST_OK(bt_fd_serve(fd, N, name, &s));
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        BT_TEST_CHECK(kids[i] >= 0, "fork");
        if (kids[i] == 0) {
            int got = -1;
            char buf[sizeof(kText)] = {0};
            if (bt_fd_fetch(name, 5000, &got) != BT_OK || got < 0)
                _exit(2);
            if (pread(got, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
                memcmp(buf, kText, sizeof(buf)) != 0)
                _exit(3);
            _exit(0);
        }
    }
    for (int i = 0; i < N; i++) {
        int st = 0;
        BT_TEST_CHECK(waitpid(kids[i], &st, 0) == kids[i], "waitpid");
        BT_TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status 0x%x", i, st);
    }
    bt_fd_serve_stop(s);

    int none = -1;
    BT_TEST_CHECK(bt_fd_fetch("baton-fd-nobody-serves-this", 1000, &none) != BT_OK && none < 0,
                  "a fetch from a name nobody serves succeeded");

    /* nobody comes: stop returns at once */
    BT_TEST_OK(bt_fd_serve(fd, 4, name, &s));
    uint64_t t0 = bt_time_ns();
    bt_fd_serve_stop(s);
    double ms = (double)(bt_time_ns() - t0) / 1e6;
    BT_TEST_CHECK(ms < 1000.0 * bt_test_slow(), "stopping an idle server took %.0f ms", ms);
    close(fd);
    printf("test_fdpass: ok (a descriptor to %d processes; stop in %.1f ms)\n", N, ms);
    return 0;
}
