/* Processes of this host (proc.h). */
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int bt_pid_ended(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[32], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* no /proc here: kill's answer stands */
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* "pid (command) state ...": the command may hold spaces and parentheses */
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}
