/*
 * unit/test_devapi_layout: Baton's layout header compiled as C++ (a program building its
 * kernels against Baton's headers reads the structs in C++; the library writes them in C).
 */
#include <cstddef>
#include <cstdint>

#include "nccl_device/layout.h"

#include "fields.h"

extern "C" const struct bt_devapi_row bt_devapi_baton_cxx[];
BT_DEVAPI_TABLE(bt_devapi_baton_cxx);
