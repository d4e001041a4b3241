/* Collectives over NET on the libfabric backend (NET=OFI, provider tcp;ofi_rxm over loopback),
 * every dtype. NET names the network, so a machine where OFI has no device fails here rather
 * than falling back to sockets. See net_suite.h. */
#include "net_suite.h"

int main(void)
{
    static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1", "BATON_NET=OFI",
                                      "FI_PROVIDER=tcp;ofi_rxm", NULL};
    return net_suite_main("colls-ofi", env, CT_ALL_DTYPES);
}
