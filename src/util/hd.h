/*
 * BT_HD marks the inline functions of headers shared with the CUDA executor (the coll/ headers,
 * transport/conn.h): compiled by nvcc they run on the host and on the GPU, so the GPU runs
 * the same schedules as the host. Plain C compilers see nothing.
 */
#ifndef BT_UTIL_HD_H
#define BT_UTIL_HD_H

#ifdef __CUDACC__
#define BT_HD __host__ __device__
#else
#define BT_HD
#endif

#endif
