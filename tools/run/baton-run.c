/*
 * baton-run: start N ranks of a command on this host, with what Baton (or NCCL) needs to
 * find each other.
 *
 *   baton-run -n N [--timeout S] [--] cmd args...
 *
 * Each rank is a child process with BATON_RANK, BATON_NRANKS, BATON_LOCAL_RANK and
 * BATON_LOCAL_NRANKS set, plus BATON_COMM_ID=127.0.0.1:<port>: a port that was free when
 * we looked; the library of rank 0 starts the rendezvous root there. (A port picked this
 * way can in principle be taken by someone else before rank 0 binds it; init then fails
 * with a clear bind error and a rerun picks another.)
 *
 * Supervision, the way mpirun does it:
 *   - every rank runs in its own process group, so that a signal reaches the whole rank
 *     (a shell and what it started) and a terminal's Ctrl-C reaches baton-run only;
 *   - SIGINT, SIGTERM and SIGHUP received by baton-run are forwarded to every rank; a
 *     second one of them sends SIGKILL;
 *   - when a rank fails (non-zero exit or killed by a signal), the others get SIGTERM,
 *     then SIGKILL 2 s later, and baton-run exits with the failed rank's status
 *     (128 + signal number for a signal);
 *   - --timeout S: after S seconds every rank is killed the same way and the exit status
 *     is 124 (as timeout(1));
 *   - if baton-run itself dies, the kernel sends SIGTERM to each rank (PR_SET_PDEATHSIG).
 * Output is passed through unchanged. Rank 0 inherits stdin when it is not a terminal
 * (a terminal would stop a background process group that reads it); every other rank reads
 * /dev/null.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BR_MAX_RANKS 4096
#define BR_KILL_GRACE_S 2.0

struct br_rank {
    pid_t pid; /* 0 once reaped */
    int status;
};

struct br_opts {
    int nranks;
    double timeout_s; /* 0: none */
    char **argv;      /* command and its arguments, NULL-terminated */
};

static void br_usage(FILE *f)
{
    fprintf(f,
            "usage: baton-run -n N [--timeout S] [--] cmd [args...]\n"
            "  -n, --np N        number of ranks to start (1..%d)\n"
            "  -t, --timeout S   kill every rank after S seconds (exit status 124)\n"
            "  -h, --help        this text\n"
            "Each rank gets BATON_RANK, BATON_NRANKS, BATON_LOCAL_RANK, BATON_LOCAL_NRANKS\n"
            "and BATON_COMM_ID=127.0.0.1:<free port>.\n",
            BR_MAX_RANKS);
}

static double br_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Returns 0 on success, 1 after printing why the command line is wrong. */
static int br_parse(int argc, char **argv, struct br_opts *o)
{
    int i = 1;
    o->nranks = 0;
    o->timeout_s = 0;
    o->argv = NULL;
    while (i < argc) {
        const char *a = argv[i];
        const char *val = NULL;
        int is_n = 0, is_t = 0;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-') {
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            br_usage(stdout);
            exit(0);
        }
        if (strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0 || strcmp(a, "--np") == 0) {
            is_n = 1;
        } else if (strncmp(a, "--np=", 5) == 0) {
            is_n = 1;
            val = a + 5;
        } else if (strncmp(a, "-n", 2) == 0 && a[2] >= '0' && a[2] <= '9') {
            is_n = 1;
            val = a + 2;
        } else if (strcmp(a, "-t") == 0 || strcmp(a, "--timeout") == 0) {
            is_t = 1;
        } else if (strncmp(a, "--timeout=", 10) == 0) {
            is_t = 1;
            val = a + 10;
        } else {
            fprintf(stderr, "baton-run: unknown option '%s'\n", a);
            br_usage(stderr);
            return 1;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "baton-run: option '%s' needs a value\n", a);
                return 1;
            }
            val = argv[++i];
        }
        i++;
        char *end = NULL;
        errno = 0;
        if (is_n) {
            long n = strtol(val, &end, 10);
            if (errno != 0 || end == val || *end != '\0' || n < 1 || n > BR_MAX_RANKS) {
                fprintf(stderr, "baton-run: invalid rank count '%s' (1..%d)\n", val, BR_MAX_RANKS);
                return 1;
            }
            o->nranks = (int)n;
        } else if (is_t) {
            double t = strtod(val, &end);
            if (errno != 0 || end == val || *end != '\0' || !(t >= 0) || t > 1e9) {
                fprintf(stderr, "baton-run: invalid timeout '%s' (seconds, >= 0)\n", val);
                return 1;
            }
            o->timeout_s = t;
        }
    }
    if (o->nranks == 0) {
        fprintf(stderr, "baton-run: -n N is required\n");
        br_usage(stderr);
        return 1;
    }
    if (i >= argc) {
        fprintf(stderr, "baton-run: no command given\n");
        br_usage(stderr);
        return 1;
    }
    o->argv = argv + i;
    return 0;
}

/* A TCP port on 127.0.0.1 that nobody listens on right now; 0 on failure. */
static int br_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "baton-run: socket() failed: %s\n", strerror(errno));
        return 0;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        fprintf(stderr, "baton-run: cannot bind a port on 127.0.0.1: %s\n", strerror(errno));
        close(fd);
        return 0;
    }
    close(fd);
    return ntohs(sa.sin_port);
}

static void br_setenv_int(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", v);
    setenv(name, buf, 1);
}

/* caller: the child, between fork and exec; never returns. */
static void br_child_exec(const struct br_opts *o, int rank, const char *comm_id,
                          const sigset_t *orig_mask, pid_t parent)
{
    setpgid(0, 0);
    /* If baton-run dies without cleaning up (SIGKILL), do not leave the rank running. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) {
        _exit(128 + SIGTERM); /* the parent died before prctl took effect */
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, orig_mask, NULL);

    if (rank != 0 || isatty(STDIN_FILENO)) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, STDIN_FILENO);
            if (fd != STDIN_FILENO) {
                close(fd);
            }
        }
    }
    br_setenv_int("BATON_RANK", rank);
    br_setenv_int("BATON_NRANKS", o->nranks);
    br_setenv_int("BATON_LOCAL_RANK", rank);
    br_setenv_int("BATON_LOCAL_NRANKS", o->nranks);
    setenv("BATON_COMM_ID", comm_id, 1);
    execvp(o->argv[0], o->argv);
    fprintf(stderr, "baton-run: rank %d: cannot execute '%s': %s\n", rank, o->argv[0],
            strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

/* Send `sig` to every rank still running (to its whole process group). */
static void br_signal_all(struct br_rank *ranks, int n, int sig)
{
    for (int r = 0; r < n; r++) {
        if (ranks[r].pid > 0) {
            /* The group may not exist yet if the child has not run setpgid: signal the pid. */
            if (kill(-ranks[r].pid, sig) != 0) {
                kill(ranks[r].pid, sig);
            }
        }
    }
}

static int br_status_code(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return 1;
}

/* The job as br_run supervises it. */
struct br_job {
    const struct br_opts *o;
    struct br_rank *ranks;
    sigset_t mask; /* the signals taken with sigtimedwait */
    int running;   /* ranks started and not reaped yet */
    int exit_code;
    int failed;      /* a rank failed or the timeout fired: the rest is being killed */
    double kill_at;  /* when to send SIGKILL; 0: not scheduled */
    int forwarded;   /* how many terminating signals we forwarded */
    double deadline; /* when --timeout fires; 0: none */
};

/* Stop the job with exit status `code`: every rank gets SIGTERM now and SIGKILL after
 * BR_KILL_GRACE_S. */
static void br_fail(struct br_job *j, int code)
{
    j->exit_code = code;
    j->failed = 1;
    br_signal_all(j->ranks, j->o->nranks, SIGTERM);
    j->kill_at = br_now() + BR_KILL_GRACE_S;
}

/* Fork every rank; a fork that fails stops the job (the ranks started get SIGTERM).
 * caller: br_run, with the signals of j->mask blocked. */
static void br_spawn(struct br_job *j, const char *comm_id, const sigset_t *orig_mask)
{
    fflush(NULL);
    for (int r = 0; r < j->o->nranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "baton-run: fork for rank %d failed: %s\n", r, strerror(errno));
            br_fail(j, 1);
            break;
        }
        if (pid == 0) {
            br_child_exec(j->o, r, comm_id, orig_mask, getppid());
        }
        /* Also from the parent, so that br_signal_all can use the group at once. */
        setpgid(pid, pid);
        j->ranks[r].pid = pid;
        j->running++;
    }
}

/* Reap every rank that has ended. The first failure, unless a signal we forwarded caused
 * it, is reported and stops the job; after a forwarded signal, the first failure's status
 * becomes the exit status. */
static void br_reap(struct br_job *j)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        int r;
        for (r = 0; r < j->o->nranks; r++) {
            if (j->ranks[r].pid == pid) {
                break;
            }
        }
        if (r == j->o->nranks) {
            continue; /* not one of ours */
        }
        j->ranks[r].pid = 0;
        j->ranks[r].status = status;
        j->running--;
        int bad = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (bad && !j->failed && j->forwarded == 0) {
            if (WIFSIGNALED(status)) {
                fprintf(stderr, "baton-run: rank %d (pid %d) killed by signal %d (%s)", r, (int)pid,
                        WTERMSIG(status), strsignal(WTERMSIG(status)));
            } else {
                fprintf(stderr, "baton-run: rank %d (pid %d) exited with status %d", r, (int)pid,
                        WEXITSTATUS(status));
            }
            fprintf(stderr, "%s\n", j->running > 0 ? "; terminating the other ranks" : "");
            br_fail(j, br_status_code(status));
        } else if (bad && j->forwarded > 0 && j->exit_code == 0) {
            j->exit_code = br_status_code(status);
        }
    }
}

/* The deadlines: --timeout stops the job; SIGKILL goes to ranks that outlive the grace. */
static void br_check_deadlines(struct br_job *j, double now)
{
    if (j->deadline > 0 && now >= j->deadline && !j->failed) {
        fprintf(stderr, "baton-run: timeout after %g s; killing %d running rank(s)\n",
                j->o->timeout_s, j->running);
        br_fail(j, 124);
    }
    if (j->kill_at > 0 && now >= j->kill_at) {
        fprintf(stderr, "baton-run: %d rank(s) still running after SIGTERM; sending SIGKILL\n",
                j->running);
        br_signal_all(j->ranks, j->o->nranks, SIGKILL);
        j->kill_at = 0;
    }
}

/* Sleep until a signal arrives or the next deadline, at most 1 s. SIGINT, SIGTERM and
 * SIGHUP go on to every rank; a second one sends SIGKILL. */
static void br_wait_signal(struct br_job *j, double now)
{
    double wait_s = 1.0;
    if (j->deadline > 0 && !j->failed && j->deadline - now < wait_s) {
        wait_s = j->deadline - now;
    }
    if (j->kill_at > 0 && j->kill_at - now < wait_s) {
        wait_s = j->kill_at - now;
    }
    if (wait_s < 0.001) {
        wait_s = 0.001;
    }
    struct timespec ts = {.tv_sec = (time_t)wait_s,
                          .tv_nsec = (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
    siginfo_t info;
    int sig = sigtimedwait(&j->mask, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        j->forwarded++;
        if (j->forwarded == 1) {
            br_signal_all(j->ranks, j->o->nranks, sig);
            if (j->exit_code == 0) {
                j->exit_code = 128 + sig;
            }
        } else {
            fprintf(stderr, "baton-run: signal %d again; sending SIGKILL to every rank\n", sig);
            br_signal_all(j->ranks, j->o->nranks, SIGKILL);
        }
    }
}

static int br_run(const struct br_opts *o)
{
    int port = br_free_port();
    char comm_id[64];
    sigset_t orig_mask;
    struct br_job j = {.o = o, .deadline = o->timeout_s > 0 ? br_now() + o->timeout_s : 0};

    if (port == 0) {
        return 1;
    }
    snprintf(comm_id, sizeof(comm_id), "127.0.0.1:%d", port);
    j.ranks = calloc((size_t)o->nranks, sizeof(*j.ranks));
    if (j.ranks == NULL) {
        fprintf(stderr, "baton-run: out of memory\n");
        return 1;
    }

    /* Signals are taken synchronously with sigtimedwait: block them before any fork so
     * that none is lost between a child's death and our wait. */
    sigemptyset(&j.mask);
    sigaddset(&j.mask, SIGCHLD);
    sigaddset(&j.mask, SIGINT);
    sigaddset(&j.mask, SIGTERM);
    sigaddset(&j.mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &j.mask, &orig_mask);

    br_spawn(&j, comm_id, &orig_mask);
    while (j.running > 0) {
        br_reap(&j);
        if (j.running == 0) {
            break;
        }
        double now = br_now();
        br_check_deadlines(&j, now);
        br_wait_signal(&j, now);
    }
    free(j.ranks);
    return j.exit_code;
}

int main(int argc, char **argv)
{
    struct br_opts o;
    if (br_parse(argc, argv, &o) != 0) {
        return 2;
    }
    return br_run(&o);
}
