/*
 * The nccl_net.h an NCCL network plugin of the v5/v6 era (google/nccl-fastsocket) expects,
 * made from Baton's own copy of the plugin interface (src/net/abi.h) and NCCL's public
 * header: what the plugin needs to build out of NCCL's tree. Binary-interface facts only.
 */
#ifndef BT_TEST_FASTSOCKET_NCCL_NET_H
#define BT_TEST_FASTSOCKET_NCCL_NET_H

#include <errno.h> /* NCCL's headers brought these to the plugin's files */
#include <stdlib.h>
#include <string.h>

#include "nccl.h" /* NCCL_MAJOR, NCCL_MINOR, ncclResult_t */
#include "net/abi.h"

/* the subsystem names of ncclDebugLogSubSys */
#define NCCL_INIT 0x1
#define NCCL_NET 0x10
#define NCCL_ENV 0x80
#define NCCL_ALL (~0)

/* v5 (2.12): v6 without regMrDmaBuf, the same properties */
typedef ncclNetProperties_v6_t ncclNetProperties_v5_t;
typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v5_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm);
    ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
    ncclResult_t (*deregMr)(void *comm, void *mhandle);
    ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
                          void **request);
    ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
                          void **mhandles, void **request);
    ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                           void **request);
    ncclResult_t (*test)(void *request, int *done, int *sizes);
    ncclResult_t (*closeSend)(void *sendComm);
    ncclResult_t (*closeRecv)(void *recvComm);
    ncclResult_t (*closeListen)(void *listenComm);
} ncclNet_v5_t;

#endif
