/*
 * unit/test_devapi_layout's reference side for NCCL 2.30.7's layouts: NVIDIA's 2.30.7
 * headers alone on this file's include path (tests/gpu/lab/nvidia_headers.sh makes them);
 * built where a lab build sets BATON_NVIDIA_DEVAPI_V2_DIR.
 */
#include <cstddef>
#include <cstdint>

#include <nccl_device.h>

#include "fields.h"
#include "fields_v2.h"

extern "C" const struct bt_devapi_row bt_devapi_nvidia_v2[];
BT_DEVAPI_V2_TABLE(bt_devapi_nvidia_v2, struct ncclDevComm, struct ncclDevCommRequirements,
                   struct ncclSegmentWindow, struct ncclWindow_vidmem);
