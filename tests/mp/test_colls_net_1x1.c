/* Collectives over NET with 1 socket helper thread(s) x 1 socket(s) each. See net_suite.h. */
#include "net_suite.h"

int main(void)
{
    static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1",
                                      "BATON_SOCKET_NTHREADS=1", "BATON_NSOCKS_PERTHREAD=1", NULL};
    return net_suite_main("colls-net-1x1", env, NET_SUITE_DTYPES);
}
