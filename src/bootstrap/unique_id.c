#include "bootstrap/unique_id.h"

#include <arpa/inet.h>
#include <string.h>

#include "util/hash.h"

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The id's checksum: FNV-1a over its first 36 bytes, folded to 32 bits. */
static uint32_t checksum(const unsigned char *b)
{
    uint64_t h = bt_fnv1a(BT_FNV1A_INIT, b, 36);
    return (uint32_t)(h ^ (h >> 32));
}

bt_status_t bt_bootstrap_id_pack(uint64_t magic, const union bt_sockaddr *addr, void *id_p)
{
    unsigned char *b = id_p;
    if (!bt_socket_addr_valid(addr)) {
        BT_WARN("cannot pack a unique id for address family %d", (int)addr->sa.sa_family);
        return BT_ERR_INVALID_ARG;
    }
    memset(b, 0, BT_UNIQUE_ID_BYTES);
    put_u32(b, BT_UNIQUE_ID_TAG);
    b[4] = BT_UNIQUE_ID_VERSION;
    if (addr->sa.sa_family == AF_INET) {
        b[5] = 4;
        memcpy(b + 6, &addr->sin.sin_port, 2);
        memcpy(b + 16, &addr->sin.sin_addr, 4);
    } else {
        b[5] = 6;
        memcpy(b + 6, &addr->sin6.sin6_port, 2);
        memcpy(b + 16, &addr->sin6.sin6_addr, 16);
        put_u32(b + 32, addr->sin6.sin6_scope_id);
    }
    put_u64(b + 8, magic);
    put_u32(b + 36, checksum(b));
    return BT_OK;
}

bt_status_t bt_bootstrap_id_unpack(const void *id, uint64_t *magic_p, union bt_sockaddr *addr_p)
{
    const unsigned char *b = id;
    if (get_u32(b) != BT_UNIQUE_ID_TAG || b[4] != BT_UNIQUE_ID_VERSION) {
        BT_WARN("invalid unique id: tag 0x%08x version %u (expected 0x%08x version %d); was "
                "the id from ncclGetUniqueId passed unchanged to every rank?",
                get_u32(b), (unsigned)b[4], BT_UNIQUE_ID_TAG, BT_UNIQUE_ID_VERSION);
        return BT_ERR_INVALID_ARG;
    }
    uint32_t sum = checksum(b);
    if (get_u32(b + 36) != sum) {
        BT_WARN("invalid unique id: checksum 0x%08x, computed 0x%08x", get_u32(b + 36), sum);
        return BT_ERR_INVALID_ARG;
    }
    for (int i = 40; i < BT_UNIQUE_ID_BYTES; i++) {
        if (b[i] != 0) {
            BT_WARN("invalid unique id: byte %d is 0x%02x, expected 0", i, (unsigned)b[i]);
            return BT_ERR_INVALID_ARG;
        }
    }
    union bt_sockaddr a;
    memset(&a, 0, sizeof(a));
    if (b[5] == 4) {
        a.sin.sin_family = AF_INET;
        memcpy(&a.sin.sin_port, b + 6, 2);
        memcpy(&a.sin.sin_addr, b + 16, 4);
    } else if (b[5] == 6) {
        a.sin6.sin6_family = AF_INET6;
        memcpy(&a.sin6.sin6_port, b + 6, 2);
        memcpy(&a.sin6.sin6_addr, b + 16, 16);
        a.sin6.sin6_scope_id = get_u32(b + 32);
    } else {
        BT_WARN("invalid unique id: address family code %u (expected 4 or 6)", (unsigned)b[5]);
        return BT_ERR_INVALID_ARG;
    }
    *magic_p = get_u64(b + 8);
    *addr_p = a;
    return BT_OK;
}
