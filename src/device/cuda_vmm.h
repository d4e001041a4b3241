/*
 * CUDA's virtual memory management (VMM) calls, from the driver through the runtime's entry
 * points (the library links no libcuda): allocations with a handle other processes can
 * import (a POSIX file descriptor), mapped where the caller chooses. ncclMemAlloc's memory
 * (device/cuda.c) and the flat window mappings (exec/cuda/win_map.c) use them.
 */
#ifndef BT_DEVICE_CUDA_VMM_H
#define BT_DEVICE_CUDA_VMM_H

#include <cuda.h>

#include "util/status.h"

struct bt_vmm {
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*addr_free)(CUdeviceptr, size_t);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *,
                            CUmemAllocationGranularity_flags);
    CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
    CUresult (*range)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*export_fd)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                          unsigned long long);
    CUresult (*import_fd)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
};

/* The driver's VMM calls, or NULL when it lacks one of them. Thread-safe. */
const struct bt_vmm *bt_vmm(void);

/* Map allocation `h` (`bytes`, a multiple of its granularity) at `va` and let device `dev`
 * read and write it there. */
bt_status_t bt_vmm_map(const struct bt_vmm *v, CUdeviceptr va, size_t bytes,
                       CUmemGenericAllocationHandle h, int dev);

#endif
