#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int count_dir(const char *path, const char *prefix)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        n++;
    }
    closedir(d);
    return n;
}

/* Pids of every rank this process forked: their segments are ours to count, and those of
 * tests running beside us are not. */
static pid_t spawned[4096];
static int nspawned;

static int pid_is_ours(pid_t pid)
{
    if (pid == getpid())
        return 1;
    for (int i = 0; i < nspawned; i++)
        if (spawned[i] == pid)
            return 1;
    return 0;
}

int bt_test_slow(void)
{
    const char *s = getenv("BT_TEST_SLOW");
    return s && atoi(s) > 1 ? atoi(s) : 1;
}

int bt_test_gate_init(struct bt_test_gate *g)
{
    if (pipe(g->fd) != 0) {
        perror("pipe (start gate)");
        return -1;
    }
    return 0;
}

void bt_test_gate_pass(struct bt_test_gate *g)
{
    close(g->fd[1]);
    char c;
    while (read(g->fd[0], &c, 1) > 0)
        ;
    close(g->fd[0]);
}

void bt_test_gate_open(struct bt_test_gate *g)
{
    close(g->fd[0]);
    close(g->fd[1]);
}

int bt_test_shm_count(void)
{
    /* Only segments made since this process's first count: a stale one whose creator's pid
     * one of our ranks happens to reuse (pid_max may be 32768) is not ours. */
    static time_t since;
    if (!since)
        since = time(NULL) - 1;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid = 0;
        struct stat st;
        char path[300];
        snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
        /* names are baton-<creator pid>-<counter>-<random> */
        if (sscanf(e->d_name, "baton-%d-", &pid) == 1 && pid_is_ours((pid_t)pid) &&
            stat(path, &st) == 0 && st.st_mtime >= since)
            n++;
    }
    closedir(d);
    return n;
}

void bt_test_leaks_begin(struct bt_test_leaks *l)
{
    l->nfds = count_dir("/proc/self/fd", NULL) - 1; /* minus the DIR's own fd */
    l->nthreads = count_dir("/proc/self/task", NULL);
}

/* ThreadSanitizer starts a background thread of its own on first use. */
#if defined(__SANITIZE_THREAD__)
#define SANITIZER_THREADS 1
#else
#define SANITIZER_THREADS 0
#endif

void bt_test_leaks_end(const struct bt_test_leaks *l)
{
    int nfds = count_dir("/proc/self/fd", NULL) - 1;
    /* Threads exit asynchronously after join returns in rare cases; give them a moment. */
    int nthreads = count_dir("/proc/self/task", NULL);
    for (int i = 0; i < 100 && nthreads > l->nthreads + SANITIZER_THREADS; i++) {
        usleep(10000);
        nthreads = count_dir("/proc/self/task", NULL);
    }
    BT_TEST_CHECK(nfds <= l->nfds, "fd leak: %d open, %d at start", nfds, l->nfds);
    BT_TEST_CHECK(nthreads <= l->nthreads + SANITIZER_THREADS,
                  "thread leak: %d threads, %d at start", nthreads, l->nthreads);
}

double bt_test_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void bt_test_stderr_to(const char *dir, int rank)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/rank%d.log", dir, rank);
    FILE *f = fopen(path, "w");
    BT_TEST_CHECK(f != NULL, "cannot open %s", path);
    fflush(stderr);
    BT_TEST_CHECK(dup2(fileno(f), 2) == 2, "dup2");
    fclose(f);
}

int bt_test_mps(void)
{
    const char *v = getenv("BATON_TEST_MPS");
    return v && atoi(v) != 0;
}

int bt_test_gpu_of(int rank)
{
    return bt_test_mps() ? 0 : rank;
}

int bt_test_run_ranks(int nranks, bt_test_rank_fn fn, void *arg, int timeout_s)
{
    pid_t pids[1024];
    struct bt_test_gate gate; /* no rank starts before every rank is forked */
    if (nranks > 1024 || bt_test_gate_init(&gate) != 0)
        return -1;
    timeout_s *= bt_test_slow();
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks; r++) {
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            for (int k = 0; k < r; k++)
                kill(pids[k], SIGKILL);
            bt_test_gate_open(&gate);
            return -1;
        }
        if (p == 0) {
            bt_test_gate_pass(&gate);
            int rc = fn(r, nranks, arg);
            fflush(stdout);
            fflush(stderr);
            _exit(rc);
        }
        pids[r] = p;
        if (nspawned < (int)(sizeof(spawned) / sizeof(spawned[0])))
            spawned[nspawned++] = p;
    }
    bt_test_gate_open(&gate); /* every rank forked: let them start */
    int failed = 0, left = nranks;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            int r = -1;
            for (int k = 0; k < nranks; k++)
                if (pids[k] == p)
                    r = k;
            if (r < 0)
                continue;
            pids[r] = -1;
            left--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                if (WIFSIGNALED(status))
                    fprintf(stderr, "rank %d killed by signal %d\n", r, WTERMSIG(status));
                else
                    fprintf(stderr, "rank %d exited with %d\n", r, WEXITSTATUS(status));
                if (!failed)
                    for (int k = 0; k < nranks; k++)
                        if (pids[k] > 0)
                            kill(pids[k], SIGKILL);
                failed = 1;
            }
            continue;
        }
        if (p < 0 && errno != EINTR)
            break;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > timeout_s) {
            fprintf(stderr, "timeout after %d s: killing %d ranks still running\n", timeout_s,
                    left);
            for (int k = 0; k < nranks; k++)
                if (pids[k] > 0) {
                    fprintf(stderr, "  rank %d (pid %d) did not finish\n", k, (int)pids[k]);
                    kill(pids[k], SIGKILL);
                }
            failed = 1;
            t0.tv_sec = t.tv_sec + 3600; /* report once, then reap */
        }
        usleep(1000);
    }
    return failed ? 1 : 0;
}

void bt_test_setenv_list(const char *const *env)
{
    for (const char *const *e = env; *e; e++) {
        char name[128];
        const char *eq = strchr(*e, '=');
        BT_TEST_CHECK(eq && (size_t)(eq - *e) < sizeof(name), "bad env entry %s", *e);
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = '\0';
        setenv(name, eq + 1, 1);
    }
}
