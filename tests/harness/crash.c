/*
 * A test that crashes says where: the stack to stderr (on its own stack, so an overflow is
 * reported too), then the signal's default action (a core, the status its parent expects).
 * Linked into every test as an object (nothing calls it: a static library would drop it);
 * not under the sanitizers, whose reports say more.
 */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
static void crash_report(int sig)
{
    void *frames[64];
    int n = backtrace(frames, 64);
    char line[96];
    int len = snprintf(line, sizeof(line), "test pid %d: signal %d; stack:\n", (int)getpid(), sig);
    if (write(2, line, (size_t)len) < 0)
        n = 0;
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void crash_report_install(void)
{
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt)};
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc now, not inside the handler */
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_handler = crash_report, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}
#endif
