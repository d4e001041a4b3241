/*
 * The tuner: for one collective, which algorithm, protocol, number of channels and chunk
 * size. Every rank must decide the same from the same inputs (count, type, nranks,
 * parameters), since the schedules of all ranks must match step for step.
 */
#ifndef BT_TUNE_TUNER_H
#define BT_TUNE_TUNER_H

#include <stddef.h>

#include "coll/work.h"

struct bt_tune_in {
    int coll;
    int nranks;
    size_t bytes; /* the collective's size as nccl-tests counts it (per-rank buffer) */
    size_t esize;
    int max_channels;
    size_t simple_slot, ll_payload; /* bytes one step carries per protocol */
    size_t direct_slot;             /* Simple bytes per step of the one-shot connectors */
    int direct_ok;                  /* every rank reachable through shared memory */
};

struct bt_tune_out {
    int algo;
    int proto;
    int nchannels;
    size_t chunk; /* elements per step */
};

void bt_tune_coll(const struct bt_tune_in *in, struct bt_tune_out *out);

#endif
