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

#endif
