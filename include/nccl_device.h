/*
 * Baton's NCCL device API: what kernels include to reach peers from the GPU, with NCCL's
 * names and semantics (NCCL 2.28's nccl_device.h), written for Baton: teams and cooperative
 * groups, pointers into symmetric windows of the LSA team (load/store access: one host's
 * GPUs), LSA barriers, GIN (GPU-initiated networking: puts, signals, counters, flush, GIN
 * barriers; in proxy mode, served by Baton's GIN proxy) and the world barrier. The memory
 * it reads is laid out as NCCL's headers lay it out (nccl_device/layout.h), so kernels built
 * against NVIDIA's nccl_device.h run on Baton too. Not here (yet): the LSA low-latency
 * all-to-all, ncclSymPtr, GIN descriptors in shared memory, multimem (never offered).
 * docs/DEVICE_API.md says what is proven where. CUDA C++.
 */
#ifndef NCCL_DEVICE_H_
#define NCCL_DEVICE_H_

#include "nccl.h"
#include "nccl_device/layout.h"
#include "nccl_device/baton_core.h"
#include "nccl_device/baton_lsa_barrier.h"
#include "nccl_device/baton_gin.h"
#include "nccl_device/baton_barrier.h"

#endif
