/*
 * A test that crashes or stalls says where: at a crash the stack to stderr (on its own stack,
 * so an overflow is reported too), then the signal's default action (a core, the status its
 * parent expects); past a watchdog's time (bt_test_watchdog) the main thread's stack, then
 * exit status 3. Linked into every test as an object (a test need not call it: a static
 * library would drop the constructor); no stacks under the sanitizers, whose reports say more.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define WATCHDOG_GRACE_S 2 /* for the stack to be written before the exit */

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <execinfo.h>

static void stack_to_stderr(const char *what, int n_arg)
{
    void *frames[64];
    int n = backtrace(frames, 64);
    char line[128];
    int len =
        snprintf(line, sizeof(line), "test pid %d: %s %d; stack:\n", (int)getpid(), what, n_arg);
    if (write(2, line, (size_t)len) < 0)
        n = 0;
    backtrace_symbols_fd(frames, n, 2);
}

static void crash_report(int sig)
{
    stack_to_stderr("signal", sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int watch_s;

static void stall_report(int sig)
{
    (void)sig;
    stack_to_stderr("still running after (s)", watch_s);
    for (;;) /* until the watchdog exits: the interrupted call must not go on to a pass */
        pause();
}

/* stall: also the watchdog's signal (only a test that arms one has a handler for it) */
static void handlers_install(int stall)
{
    struct sigaction sa = {.sa_handler = crash_report, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    struct sigaction st = {.sa_handler = stall_report, .sa_flags = SA_ONSTACK};
    sigemptyset(&st.sa_mask);
    if (stall)
        sigaction(SIGUSR2, &st, NULL);
}

__attribute__((constructor)) static void crash_report_install(void)
{
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt)};
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc now, not inside the handler */
    sigaltstack(&ss, NULL);
    handlers_install(0);
}
#else
static int watch_s;
static void handlers_install(int stall)
{
    (void)stall;
}
#endif

static pthread_t watched;

static void *watchdog_main(void *arg)
{
    (void)arg;
    sleep((unsigned)watch_s);
    fprintf(stderr, "test pid %d: still running after %d s: the main thread's stack follows\n",
            (int)getpid(), watch_s);
    pthread_kill(watched, SIGUSR2); /* its handler prints its stack (none when sanitized) */
    sleep(WATCHDOG_GRACE_S);
    _exit(3);
}

void bt_test_watchdog(int seconds)
{
    handlers_install(1); /* again: a library loaded since (the CUDA driver) may have set its own */
    watched = pthread_self();
    watch_s = seconds * bt_test_slow();
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog_main, NULL) == 0)
        pthread_detach(t);
}
