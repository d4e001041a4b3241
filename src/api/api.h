/*
 * Shared by the files of src/api/, the exported entry points of libnccl.so.2.
 */
#ifndef BT_API_API_H
#define BT_API_API_H

/*
 * The library is built with -fvisibility=hidden so that only the public API is exported;
 * every nccl* and baton* definition carries BT_API.
 */
#define BT_API __attribute__((visibility("default")))

/*
 * NCCL also exports every entry point as pnccl<Name>, the alias profilers interpose on.
 * Placed after the definition: BT_PNCCL(ncclAllReduce) exports pncclAllReduce.
 */
#define BT_PNCCL(name)                                                                             \
    extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")))

/* Run a collective job (core/group.h: an init, split, shrink, window or device communicator)
 * in the caller's group, deferred to its ncclGroupEnd, or in a group of its own. */
struct bt_init_job;
int bt_api_group_job(struct bt_init_job *job);

#endif
