/* Collectives over NET with helper threads: 2 helpers x 2 sockets each, so large messages
 * are split over 4 sockets. See net_suite.h. */
#include "net_suite.h"

int main(void)
{
    static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1",
                                      "BATON_SOCKET_NTHREADS=2", "BATON_NSOCKS_PERTHREAD=2", NULL};
    return net_suite_main("colls-net-2x2", env, NET_SUITE_DTYPES);
}
