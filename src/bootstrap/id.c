/*
 * Making a unique id (ncclGetUniqueId): a new root on a free port of the chosen interface,
 * or the address BATON_COMM_ID / NCCL_COMM_ID names; and waiting for or cancelling the root
 * thread an id started. The 128-byte layout itself is unique_id.c's, the root thread
 * root.c's.
 */
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "util/hash.h"
#include "util/param.h"
#include "util/random.h"

bt_status_t bt_bootstrap_unique_id(void *id_p)
{
    /* As NCCL: with COMM_ID the id only names that address; rank 0's init starts the root. */
    if (bt_param_str_comm_id())
        return bt_bootstrap_unique_id_from_env(-1, id_p);
    return bt_bootstrap_unique_id_new(id_p);
}

bt_status_t bt_bootstrap_unique_id_new(void *id_p)
{
    union bt_sockaddr addr;
    char ifname[64];
    uint64_t magic;
    int fd = -1;
    bt_status_t st;

    BT_CHECK(bt_socket_find_interface(&addr, ifname, sizeof(ifname)));
    magic = bt_random_u64();
    BT_CHECK(bt_socket_listen(&addr, &fd, &addr));
    st = bt_bootstrap_id_pack(magic, &addr, id_p);
    if (st != BT_OK)
        goto err_close;
    st = bt_bootstrap_root_start(magic, fd); /* the root owns fd, even on failure */
    if (st != BT_OK)
        return st;
    char s[BT_SOCKADDR_STRLEN];
    BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap root listening on %s (%s) magic 0x%llx",
            bt_socket_addr_to_str(&addr, s, sizeof(s)), ifname, (unsigned long long)magic);
    return BT_OK;

err_close:
    close(fd);
    return st;
}

/*
 * With COMM_ID no id travels between ranks, so every rank derives the same magic from the
 * string itself (FNV-1a 64). Two jobs that use the same COMM_ID at once are not told apart.
 */
static uint64_t comm_id_magic(const char *s)
{
    return bt_fnv1a_str(BT_FNV1A_INIT, s);
}

bt_status_t bt_bootstrap_unique_id_from_env(int rank, void *id_p)
{
    union bt_sockaddr addr;
    const char *env = bt_param_str_comm_id();
    if (env == NULL)
        return BT_ERR_INVALID_USAGE;
    BT_CHECK(bt_socket_addr_parse(env, &addr));
    uint64_t magic = comm_id_magic(env);
    BT_CHECK(bt_bootstrap_id_pack(magic, &addr, id_p));
    if (rank == 0) {
        int fd = -1;
        BT_CHECK(bt_socket_listen(&addr, &fd, NULL));
        BT_CHECK(bt_bootstrap_root_start(magic, fd)); /* the root owns fd */
        BT_INFO(BT_LOG_INIT | BT_LOG_BOOTSTRAP, "Bootstrap root listening on COMM_ID %s", env);
    }
    return BT_OK;
}

void bt_bootstrap_root_wait(const void *id)
{
    uint64_t magic;
    union bt_sockaddr addr;
    if (bt_bootstrap_id_unpack(id, &magic, &addr) == BT_OK)
        bt_bootstrap_root_join(magic);
}

void bt_bootstrap_root_cancel(const void *id)
{
    uint64_t magic;
    union bt_sockaddr addr;
    if (bt_bootstrap_id_unpack(id, &magic, &addr) == BT_OK)
        bt_bootstrap_root_cancel_magic(magic);
}
