/* Unique id pack/unpack and socket address text: round trips, and garbage rejected. */
#include <arpa/inet.h>
#include <string.h>

#include "bootstrap/unique_id.h"
#include "harness.h"

static void check_round_trip(const char *text, uint64_t magic)
{
    union bt_sockaddr a, b;
    unsigned char id[BT_UNIQUE_ID_BYTES];
    uint64_t m = 0;
    char s[BT_SOCKADDR_STRLEN];

    BT_TEST_OK(bt_socket_addr_parse(text, &a));
    BT_TEST_OK(bt_bootstrap_id_pack(magic, &a, id));
    BT_TEST_OK(bt_bootstrap_id_unpack(id, &m, &b));
    BT_TEST_CHECK(m == magic, "magic 0x%llx became 0x%llx", (unsigned long long)magic,
                  (unsigned long long)m);
    BT_TEST_CHECK(bt_socket_addr_len(&a) == bt_socket_addr_len(&b) &&
                      memcmp(&a, &b, bt_socket_addr_len(&a)) == 0,
                  "%s did not survive pack/unpack", text);
    bt_socket_addr_to_str(&b, s, sizeof(s));
    BT_TEST_CHECK(strcmp(s, text) == 0, "'%s' printed as '%s'", text, s);
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);

    check_round_trip("10.0.0.2:40123", 0x0123456789abcdefull);
    check_round_trip("127.0.0.1:1", 0);
    check_round_trip("[::1]:65535", ~0ull);
    check_round_trip("[fd00::2]:29500", 0x8000000000000001ull);

    /* Link-local IPv6 keeps its scope id (use the loopback's index, which always exists). */
    {
        union bt_sockaddr a, b;
        unsigned char id[BT_UNIQUE_ID_BYTES];
        uint64_t m;
        memset(&a, 0, sizeof(a));
        a.sin6.sin6_family = AF_INET6;
        a.sin6.sin6_port = htons(1234);
        inet_pton(AF_INET6, "fe80::1", &a.sin6.sin6_addr);
        a.sin6.sin6_scope_id = 1;
        BT_TEST_OK(bt_bootstrap_id_pack(42, &a, id));
        BT_TEST_OK(bt_bootstrap_id_unpack(id, &m, &b));
        BT_TEST_CHECK(b.sin6.sin6_scope_id == 1 && m == 42, "scope id %u lost",
                      (unsigned)b.sin6.sin6_scope_id);
        char s[BT_SOCKADDR_STRLEN];
        bt_socket_addr_to_str(&b, s, sizeof(s));
        BT_TEST_CHECK(strchr(s, '%') != NULL, "link-local address printed without scope: %s", s);
    }

    /* Garbage is rejected: zeros, random bytes, any flipped bit of a valid id. */
    {
        unsigned char id[BT_UNIQUE_ID_BYTES], bad[BT_UNIQUE_ID_BYTES];
        union bt_sockaddr a, b;
        uint64_t m;
        memset(bad, 0, sizeof(bad));
        BT_TEST_CHECK(bt_bootstrap_id_unpack(bad, &m, &b) == BT_ERR_INVALID_ARG, "zero id");
        srand(7);
        for (int t = 0; t < 100; t++) {
            for (int i = 0; i < BT_UNIQUE_ID_BYTES; i++)
                bad[i] = (unsigned char)rand();
            BT_TEST_CHECK(bt_bootstrap_id_unpack(bad, &m, &b) == BT_ERR_INVALID_ARG,
                          "random id %d accepted", t);
        }
        BT_TEST_OK(bt_socket_addr_parse("192.168.1.7:5000", &a));
        BT_TEST_OK(bt_bootstrap_id_pack(99, &a, id));
        for (int i = 0; i < BT_UNIQUE_ID_BYTES; i++) {
            for (int bit = 0; bit < 8; bit++) {
                memcpy(bad, id, sizeof(id));
                bad[i] ^= (unsigned char)(1u << bit);
                BT_TEST_CHECK(bt_bootstrap_id_unpack(bad, &m, &b) == BT_ERR_INVALID_ARG,
                              "id with byte %d bit %d flipped accepted", i, bit);
            }
        }
    }

    /* Address parsing rejects malformed text. */
    {
        union bt_sockaddr a;
        const char *bad[] = {"",        "10.0.0.1", "10.0.0.1:",   "10.0.0.1:70000",
                             "[::1:80", "::1:80",   "10.0.0.1:12x"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            BT_TEST_CHECK(bt_socket_addr_parse(bad[i], &a) != BT_OK, "'%s' parsed", bad[i]);
        BT_TEST_OK(bt_socket_addr_parse("localhost:80", &a));
        BT_TEST_CHECK(bt_socket_addr_port(&a) == 80, "port %u", bt_socket_addr_port(&a));
    }

    /* Interface choice returns something usable (loopback at worst). */
    {
        union bt_sockaddr a;
        char ifname[64];
        BT_TEST_OK(bt_socket_find_interface(&a, ifname, sizeof(ifname)));
        BT_TEST_CHECK(bt_socket_addr_valid(&a) && ifname[0] != '\0', "no interface");
    }

    bt_test_leaks_end(&leaks);
    printf("test_unique_id: ok\n");
    return 0;
}
