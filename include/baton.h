/*
 * Baton extensions to the NCCL interface. Everything here is Baton's own; a program that
 * uses it runs only on Baton's libnccl.so.2 (look the symbols up with dlsym to stay portable).
 */
#ifndef BATON_H_
#define BATON_H_

#include <stdio.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The library's identity, e.g. "Baton 0.1.0, NCCL 2.30.7 interface". Use it to check which
 * libnccl.so.2 a process actually loaded. The string is static: do not free it.
 */
const char *batonVersionString(void);

/*
 * Create one rank of an nranks communicator whose buffers are in host memory: collectives
 * on it take host pointers, ignore the stream argument and complete before they return (or,
 * inside a group, before ncclGroupEnd returns). No GPU is needed. Otherwise it behaves as
 * ncclCommInitRank: collective over the ranks holding commId, rank in [0, nranks).
 */
ncclResult_t batonCommInitRankHost(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);

/* 1 when comm is a host-memory communicator, 0 otherwise (and for NULL). */
int batonCommIsHost(ncclComm_t comm);

/*
 * What a communicator's collectives ran as on this rank, counted since init: which algorithm
 * each collective of more than one rank and more than zero elements took, how many ring
 * AllReduces cut their blocks in proportion to the links (TOPO_PROBE), and how many read the
 * peers' windows directly. For tests and for programs that want to see the paths their calls
 * take. Fields are only ever appended: pass sizeof(batonCommStats_t), and fields past `size`
 * are left alone. Read from the thread that launches on the communicator (or after it).
 */
typedef struct {
    unsigned long long colls;      /* collectives planned (nranks > 1, count > 0) */
    unsigned long long ring;       /* ... of them on rings */
    unsigned long long tree;       /* ... on trees */
    unsigned long long oneshot;    /* ... one-shot AllReduce through FIFOs to every peer */
    unsigned long long twoshot;    /* ... two-shot AllReduce through FIFOs */
    unsigned long long window;     /* ... AllReduce read straight from the peers' windows */
    unsigned long long ring_split; /* ring AllReduces whose blocks follow the links' speeds */
    unsigned long long pat;        /* AllGather / ReduceScatter in log2 rounds (PAT) */
} batonCommStats_t;
ncclResult_t batonCommGetStats(ncclComm_t comm, batonCommStats_t *stats, size_t size);

/*
 * Print every Baton parameter to out: its environment name, current value, default and a
 * one-line description.
 */
void batonParamsPrint(FILE *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BATON_H_ */
