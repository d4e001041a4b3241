/*
 * Helper threads of the host executor: a process-wide set of at most BT_HOST_MAX_HELPERS
 * threads, made on first need, that take shares of a launch's lanes (lanes.c) and drive them
 * while they move (bt_host_exec_while_moving). Launches of several application threads share
 * the set: each reserves the helpers that are idle and runs with fewer when some are busy. An
 * idle helper polls for its next share for the last launch's spin window, then sleeps on a
 * condition variable: no CPU while the application computes. A helper runs on the CPUs of the
 * thread whose share it drives (a launcher pinned somewhere keeps its helpers there), with its
 * scheduling, asynchronous signals blocked; its name is "baton Helper N". When a helper
 * cannot be made, the process makes no more. They live while a
 * host communicator does (retain, release): none is left once the last is destroyed. Forked
 * children start with none.
 */
#ifndef BT_EXEC_HOST_HELPERS_H
#define BT_EXEC_HOST_HELPERS_H

#include <stdint.h>

#define BT_HOST_MAX_HELPERS 7

struct bt_lane;

/* A helper's share of a launch. */
struct bt_host_job {
    struct bt_lane *const *lanes;
    int nlanes;
    int helper; /* which one (bt_host_helpers_reserve) */
};

/* A host communicator made (retain: a token for its release) and destroyed (release): the
 * last release ends the helpers' threads. A communicator a forked child inherited releases
 * nothing there (its token is the parent's). */
unsigned bt_host_helpers_retain(void);
void bt_host_helpers_release(unsigned token);

/* CPUs the calling thread may run on (read now, with its scheduling; bt_host_helpers_start
 * hands both on to the helpers it starts from this thread). */
int bt_host_helpers_cpus(void);

/* Take up to n idle helpers (their threads made as needed): returns how many, jobs[0..that)
 * naming them. */
int bt_host_helpers_reserve(int n, struct bt_host_job *jobs);

/* Hand each reserved helper its share; it drives it with bt_host_exec_while_moving. */
void bt_host_helpers_start(const struct bt_host_job *jobs, int n, uint64_t spin, uint64_t yields);

/* 1 when each has stopped (its share is done, or stalled), without waiting. */
int bt_host_helpers_stopped(const struct bt_host_job *jobs, int n);

/* Wait until each has stopped (its lanes are the caller's again: polling `spin` times, then
 * yielding the CPU) and give the helpers back. */
void bt_host_helpers_join(const struct bt_host_job *jobs, int n, uint64_t spin);

#endif
