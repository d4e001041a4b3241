/* Collectives over NET with the default socket configuration: 0 helper threads x 1 socket
 * (the proxy's progress thread drives the socket). See net_suite.h. */
#include "net_suite.h"

int main(void)
{
    static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1", NULL};
    return net_suite_main("colls-net-0x1", env, NET_SUITE_DTYPES);
}
