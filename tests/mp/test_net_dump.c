/*
 * PROXY_DUMP_SIGNAL through the public API: rank 0 sends 32 MB to rank 1 over NET while
 * rank 1 waits 1 s before receiving, so rank 0's proxy op waits in flight; a SIGUSR1 to
 * rank 0 then prints the op with its counters and stage, and the transfer still completes
 * correctly.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "nccl.h"

#define COUNT (8u << 20) /* int32 elements: 32 MB */

static char dump_path[64];

static int rank_main(int rank, int nranks, void *arg)
{
    const ncclUniqueId *id = arg;
    ncclComm_t comm;
    BT_TEST_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    int32_t *buf = malloc(COUNT * sizeof(int32_t));
    int32_t one = 1, got = 0;
    /* connect first, so the big transfer below is all that is in flight */
    if (rank == 0)
        BT_TEST_OK(ncclSend(&one, 1, ncclInt32, 1, comm, NULL));
    else
        BT_TEST_OK(ncclRecv(&got, 1, ncclInt32, 0, comm, NULL));
    if (rank == 0) {
        for (uint32_t i = 0; i < COUNT; i++)
            buf[i] = (int32_t)(i * 7u);
        int fd = open(dump_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        BT_TEST_CHECK(fd >= 0, "open %s", dump_path);
        dup2(fd, 2);
        close(fd);
        /* a helper process signals us while the send waits for the late receiver */
        pid_t me = getpid(), child = fork();
        if (child == 0) {
            usleep(500000);
            kill(me, SIGUSR1);
            _exit(0);
        }
        BT_TEST_OK(ncclSend(buf, COUNT, ncclInt32, 1, comm, NULL));
    } else {
        sleep(1);
        BT_TEST_OK(ncclRecv(buf, COUNT, ncclInt32, 0, comm, NULL));
        for (uint32_t i = 0; i < COUNT; i++)
            BT_TEST_CHECK(buf[i] == (int32_t)(i * 7u), "element %u: %d", i, buf[i]);
    }
    free(buf);
    BT_TEST_OK(ncclCommDestroy(comm));
    return 0;
}

int main(void)
{
    setenv("BATON_SHM_DISABLE", "1", 1);
    setenv("BATON_PROXY_DUMP_SIGNAL", "10", 1); /* SIGUSR1 */
    snprintf(dump_path, sizeof(dump_path), "/tmp/baton-dump-%d.txt", (int)getpid());
    ncclUniqueId id;
    BT_TEST_OK(ncclGetUniqueId(&id));
    BT_TEST_CHECK(bt_test_run_ranks(2, rank_main, &id, 60) == 0, "ranks failed");

    char text[8192] = "";
    FILE *f = fopen(dump_path, "r");
    BT_TEST_CHECK(f != NULL, "no dump file");
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    unlink(dump_path);
    BT_TEST_CHECK(strstr(text, "BATON proxy") && strstr(text, "peer 1 send") &&
                      strstr(text, "transmitted") && strstr(text, "stage \""),
                  "the dump does not show the send op in flight:\n%s", text);
    printf("%s", text);
    printf("net dump: ok\n");
    return 0;
}
