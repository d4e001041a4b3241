/*
 * The 128-byte unique id (ncclUniqueId) of a rendezvous: {magic, root address}.
 *
 * Layout (multi-byte fields little-endian, except the port, which is in network order):
 *   off  size  field
 *     0     4  tag "BTID" (0x44495442 read little-endian): says the bytes are a Baton id
 *     4     1  layout version (BT_UNIQUE_ID_VERSION, 2)
 *     5     1  address family: 4 (IPv4) or 6 (IPv6)
 *     6     2  root port (network order)
 *     8     8  magic: random per id; every bootstrap message carries it
 *    16    16  root address (IPv4 in the first 4 bytes, rest zero)
 *    32     4  IPv6 scope id (link-local addresses), else 0
 *    36     4  checksum of bytes 0..35 (FNV-1a 64 folded to 32 bits)
 *    40    88  zero
 * An id whose tag, version, family, checksum or zero tail is wrong is rejected: it was
 * never made by bt_bootstrap_id_pack (or was corrupted on its way to this rank).
 */
#ifndef BT_BOOTSTRAP_UNIQUE_ID_H
#define BT_BOOTSTRAP_UNIQUE_ID_H

#include <stdint.h>

#include "bootstrap/bootstrap.h"
#include "util/socket.h"

#define BT_UNIQUE_ID_TAG 0x44495442u
#define BT_UNIQUE_ID_VERSION 2 /* 2: the checksum is FNV-1a 64 folded to 32 bits */

/* Write the id of {magic, addr} into id_p (BT_UNIQUE_ID_BYTES). addr must be IPv4/IPv6. */
bt_status_t bt_bootstrap_id_pack(uint64_t magic, const union bt_sockaddr *addr, void *id_p);

/* Read an id; BT_ERR_INVALID_ARG (with a WARN saying why) when it is not a valid id. */
bt_status_t bt_bootstrap_id_unpack(const void *id, uint64_t *magic_p, union bt_sockaddr *addr_p);

#endif
