/* Collectives over NET through a v6-only plugin (tests/plugins/fake_net.c, FakeV6: the socket
 * backend behind an ncclNet_v6_t whose test() never writes the size), so the v6 shim and the
 * distrust of old plugins' fields carry every collective. See net_suite.h. */
#include "net_suite.h"

int main(void)
{
    static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1",
                                      "NCCL_NET_PLUGIN=" BT_PLUGIN_DIR "/libnccl-net-fakev6.so",
                                      "NCCL_NET=FakeV6", NULL};
    return net_suite_main("colls-plugin-v6", env, NET_SUITE_DTYPES);
}
