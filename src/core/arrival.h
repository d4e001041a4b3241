/*
 * The arrival board of a communicator whose ranks share one host: one 128-byte line per
 * rank in a shared-memory segment, holding the number of the last collective the rank
 * started and finished, and which dead rank made it fail. A hang report reads it to name
 * the ranks that have not arrived at the collective this rank is stuck in; a rank that
 * fails because its neighbour failed reads the neighbour's cause, so every survivor names
 * the rank that died, not only the first link of the chain. Without a shared host (ranks
 * on several hosts, or IPC namespaces apart) there is no board: a hang report asks the other
 * ranks in bootstrap messages (bt_arrival_ask), and the cause of a failure travels in
 * bootstrap messages too.
 */
#ifndef BT_CORE_ARRIVAL_H
#define BT_CORE_ARRIVAL_H

#include <stdint.h>

#include "util/status.h"

struct bt_comm;

/* Collective over the comm's ranks, at init; no board (and BT_OK) when shared memory
 * cannot join every rank. */
bt_status_t bt_arrival_init(struct bt_comm *comm);
void bt_arrival_free(struct bt_comm *comm);

/* This rank began / finished the communicator's collective number `seq` (collectives only:
 * every rank calls the same sequence of them, unlike send/recv). */
void bt_arrival_start(struct bt_comm *comm, uint64_t seq);
void bt_arrival_done(struct bt_comm *comm, uint64_t seq);

/* Print (WARN) the ranks that have not started operation `seq` yet; returns how many. From
 * the board only (any thread: the GPU watcher calls it); 0 without one. */
int bt_arrival_report(struct bt_comm *comm, uint64_t seq);

/*
 * Without a board (ranks on several hosts): ask every other rank, in bootstrap messages,
 * which collective it has called. bt_arrival_serve answers the others' questions, takes the
 * answers in and prints the report (ranks behind, ranks that did not answer) once every rank
 * has answered or a second has passed; called every ~50 ms while a host collective waits
 * (executor stall checks) and every 100 ms by the GPU watcher for GPU communicators (so a
 * GPU rank answers even while it is outside the library). Thread-safe; nothing with a board.
 */
bt_status_t bt_arrival_ask(struct bt_comm *comm, uint64_t seq);
void bt_arrival_serve(struct bt_comm *comm);

/* A hang report's second half, for collective `seq`: from the board, or else by asking. */
void bt_arrival_hang(struct bt_comm *comm, uint64_t seq);

/*
 * This rank fails because rank `gone_rank` died (the first cause sticks): on the board, and
 * without a board (ranks on several hosts) in a bootstrap message, once, to the ranks this
 * one has network connections with (host connectors), so that a rank whose connection with
 * this one fails next can name the rank that died.
 * bt_arrival_cause: the cause rank `rank` recorded, or -1 (none known). Without a board it
 * waits up to `wait_ms` for `rank`'s message (a rank that died sends none).
 */
void bt_arrival_failed(struct bt_comm *comm, int gone_rank);
int bt_arrival_cause(struct bt_comm *comm, int rank, int wait_ms);

/* Without a board: 1 when rank `rank`'s message saying that it failed has come (it is left
 * for bt_arrival_cause); 0 otherwise, and always with a board. Any thread. */
int bt_arrival_told(struct bt_comm *comm, int rank);

/* The rank whose death made rank `rank` fail, from the board alone (-1: none, or no board).
 * Cheap; any thread (core/liveness.c asks it). */
int bt_arrival_board_cause(const struct bt_comm *comm, int rank);

#endif
