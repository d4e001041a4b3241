/* A sampling profiler for the lab machine, which has no perf: LD_PRELOAD it into a program
 * and every SAMPLER_US microseconds of wall time (default 200) the stack of the program's
 * main thread is kept, running or waiting (a POSIX timer's real-time signal aimed at that
 * thread: ITIMER_PROF's SIGPROF took no sample there once CUDA was loaded) (backtrace(): the
 * unwinder walks .eh_frame, no frame pointers needed). At exit each stack is written to SAMPLER_OUT
 * (default sampler.<pid>.txt) as one line, the thread's id then its frames, innermost first, each
 * "module+0xoffset"; tests/gpu/lab/sampler_report.py names them here with addr2line against the
 * same binaries and sums what each function's calls cost (inclusive) per library. gcc -O2 -shared
 * -fPIC -o sampler.so tests/gpu/lab/sampler.c LD_PRELOAD=$PWD/sampler.so SAMPLER_OUT=/tmp/s.txt
 * build/bin/baton-one-process ... A lab tool: not built by CMake, not part of the library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 48
#define MAX_SAMPLES 200000

struct sample {
    int tid, depth;
    void *pc[DEPTH];
};

static struct sample *samples;
static atomic_int nsamples;
static atomic_int lost;
static timer_t timer;
static int armed;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    int i = atomic_fetch_add(&nsamples, 1);
    if (i >= MAX_SAMPLES) {
        atomic_fetch_add(&lost, 1);
        return;
    }
    samples[i].tid = gettid();
    samples[i].depth = backtrace(samples[i].pc, DEPTH);
}

static void write_frame(FILE *f, void *pc)
{
    Dl_info di;
    if (dladdr(pc, &di) && di.dli_fname) {
        const char *name = strrchr(di.dli_fname, '/');
        /* a return address points after the call: one byte back names the call's line */
        fprintf(f, " %s+0x%lx", name ? name + 1 : di.dli_fname,
                (unsigned long)((char *)pc - (char *)di.dli_fbase) - 1);
    } else {
        fprintf(f, " ?+%p", pc);
    }
}

static void __attribute__((destructor)) sampler_fini(void)
{
    if (armed)
        timer_delete(timer);
    armed = 0;
    if (!samples)
        return;
    char def[64];
    const char *out = getenv("SAMPLER_OUT");
    if (!out) {
        snprintf(def, sizeof(def), "sampler.%d.txt", (int)getpid());
        out = def;
    }
    FILE *f = fopen(out, "w");
    if (!f)
        return;
    int n = atomic_load(&nsamples);
    if (n > MAX_SAMPLES)
        n = MAX_SAMPLES;
    fprintf(f, "# samples %d lost %d every %s us of the main thread's wall time\n", n,
            atomic_load(&lost), getenv("SAMPLER_US") ? getenv("SAMPLER_US") : "200");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%d", samples[i].tid);
        /* frame 0 and 1 are the handler and the signal trampoline */
        for (int d = 2; d < samples[i].depth; d++)
            write_frame(f, samples[i].pc[d]);
        fputc('\n', f);
    }
    fclose(f);
}

static void __attribute__((constructor)) sampler_init(void)
{
    samples = calloc(MAX_SAMPLES, sizeof(*samples));
    if (!samples)
        return;
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder now, not inside the first signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int sig = SIGRTMIN + 5;
    sigaction(sig, &sa, NULL);
    struct sigevent ev;
    memset(&ev, 0, sizeof(ev));
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
    ev._sigev_un._tid = gettid(); /* the constructor runs on the main thread */
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
        return;
    long us = getenv("SAMPLER_US") ? atol(getenv("SAMPLER_US")) : 200;
    struct itimerspec it = {{us / 1000000, us % 1000000 * 1000},
                            {us / 1000000, us % 1000000 * 1000}};
    armed = timer_settime(timer, 0, &it, NULL) == 0;
}
