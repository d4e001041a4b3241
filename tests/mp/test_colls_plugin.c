/* Collectives over NET through the plugin loader: Baton's socket backend built as a separate
 * library (libnccl-net-baton.so, ncclNetPlugin_v11), named by NCCL_NET so that nothing else
 * can carry the bytes; every dtype. See net_suite.h. */
#include "net_suite.h"

int main(void)
{
    static const char *const env[] = {"BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1",
                                      "NCCL_NET_PLUGIN=" BT_PLUGIN_DIR "/libnccl-net-baton.so",
                                      "NCCL_NET=BatonSocket", NULL};
    return net_suite_main("colls-plugin", env, CT_ALL_DTYPES);
}
