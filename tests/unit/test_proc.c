/*
 * util/proc: whether a process has ended. This process and a child that waits have not; a
 * child that exited and is not reaped yet (a zombie: kill(pid, 0) still answers) has, and
 * so has one reaped; a child killed with SIGKILL is ended before its parent reaps it, as the
 * liveness checks need (core/liveness.c: a rank whose launcher has not reaped it is gone).
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "util/proc.h"
#include "util/time.h"

/* Until bt_pid_ended(pid) says `want`, or 5 s (x BT_TEST_SLOW). */
static int ended_within(pid_t pid, int want)
{
    uint64_t deadline = bt_time_ns() + 5000000000ull * (uint64_t)bt_test_slow();
    while (bt_pid_ended(pid) != want) {
        if (bt_time_ns() > deadline)
            return 0;
        usleep(1000);
    }
    return 1;
}

int main(void)
{
    BT_TEST_CHECK(!bt_pid_ended(getpid()), "this process counts as ended");

    int gate[2];
    BT_TEST_CHECK(pipe(gate) == 0, "pipe");
    pid_t kid = fork();
    BT_TEST_CHECK(kid >= 0, "fork");
    if (kid == 0) {
        char c;
        close(gate[1]);
        _exit(read(gate[0], &c, 1) == 1 ? 0 : 1); /* waits for the parent's word */
    }
    close(gate[0]);
    BT_TEST_CHECK(!bt_pid_ended(kid), "a child that waits counts as ended");
    BT_TEST_CHECK(write(gate[1], "x", 1) == 1, "write");
    BT_TEST_CHECK(ended_within(kid, 1), "a child that exited (a zombie) never counted as ended");
    BT_TEST_CHECK(kill(kid, 0) == 0, "the zombie no longer answers kill(pid, 0): reaped early?");
    int st = 0;
    BT_TEST_CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "child status 0x%x", st);
    BT_TEST_CHECK(bt_pid_ended(kid), "a reaped child counts as running");
    close(gate[1]);

    pid_t victim = fork();
    BT_TEST_CHECK(victim >= 0, "fork");
    if (victim == 0)
        for (;;)
            pause();
    BT_TEST_CHECK(!bt_pid_ended(victim), "a sleeping child counts as ended");
    BT_TEST_CHECK(kill(victim, SIGKILL) == 0, "kill");
    BT_TEST_CHECK(ended_within(victim, 1), "a killed child never counted as ended before reaping");
    BT_TEST_CHECK(waitpid(victim, &st, 0) == victim && WIFSIGNALED(st), "victim status 0x%x", st);
    printf("test_proc: ok (zombies and reaped children ended, running ones not)\n");
    return 0;
}
