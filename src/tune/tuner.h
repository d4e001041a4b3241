/*
 * The tuner: for one collective, which algorithm, protocol, number of channels and chunk
 * size. Every rank must decide the same from the same inputs (count, type, nranks,
 * parameters), since the schedules of all ranks must match step for step.
 */
#ifndef BT_TUNE_TUNER_H
#define BT_TUNE_TUNER_H

#include <stddef.h>
#include <stdint.h>

#include "coll/work.h"

/* What the environment says about choices (PROTO, ALGO, thresholds). Read by each rank at
 * init; every rank then uses rank 0's, so a stray difference cannot split a schedule. */
struct bt_tune_settings {
    int64_t ll_threshold, tree_threshold, direct_threshold; /* bytes; -1: the default */
    int32_t min_nchannels;
    uint8_t ll_ok, simple_ok, ring_ok, tree_ok, direct_ok;
    uint8_t pad[3];
};

void bt_tune_settings_from_env(struct bt_tune_settings *set);

struct bt_tune_in {
    const struct bt_tune_settings *set;
    int coll;
    int nranks;
    size_t bytes; /* the collective's size as nccl-tests counts it (per-rank buffer) */
    size_t esize;
    int max_channels;
    size_t simple_slot, ll_payload; /* bytes one step carries per protocol */
    size_t direct_slot;             /* Simple bytes per step of the one-shot connectors */
    int direct_ok;                  /* every rank on this host and reachable through shm */
    int shm_all;                    /* 0: some peer is behind the network (Simple only) */
};

struct bt_tune_out {
    int algo;
    int proto;
    int nchannels;
    size_t chunk; /* elements per step */
};

void bt_tune_coll(const struct bt_tune_in *in, struct bt_tune_out *out);

#endif
