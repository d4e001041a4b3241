/*
 * What a communicator knows about the links between its ranks, and what it does with it:
 *   - TOPO_PROBE=1: once init is done (bt_comm_start), each directed pair's throughput is
 *     measured through the real transport (a send/recv of a few MB per pair, one pair at a
 *     time), gathered on every rank, and the channels' rings follow the widest ring with
 *     AllReduce blocks in proportion to its links (graph/ring_plan.h; RING_SPLIT=0 keeps
 *     blocks equal);
 *   - INJECT_LINK_BW (testing, benchmarks): caps chosen links' send rate, so a slow link
 *     can be made on one machine ("*>*:2000,0>1:1000": every link 2000 MB/s, 0 to 1 half).
 * Host-memory communicators only (the CUDA executor builds its own rings).
 */
#ifndef BT_CORE_LINKS_H
#define BT_CORE_LINKS_H

#include <stdint.h>

#include "transport/conn.h" /* struct bt_link_cap */
#include "util/status.h"

struct bt_comm;

/* During init: the caps of INJECT_LINK_BW (nothing runs). */
bt_status_t bt_links_caps_init(struct bt_comm *comm);

/* After init, on the ready communicator: the probe and the ring plan of TOPO_PROBE (ordinary
 * send/recv launches, before any ring connector exists). Every rank calls it (the probe is
 * collective). */
bt_status_t bt_links_probe(struct bt_comm *comm);

/* Parse INJECT_LINK_BW for `rank`'s sends: rates[peer] in MB/s (0: uncapped). Returns 0, or
 * -1 (logged) when the text is malformed. Exposed for tests. */
int bt_links_parse_caps(const char *spec, int nranks, int rank, double *rates);

#endif
