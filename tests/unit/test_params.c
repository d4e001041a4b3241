/*
 * Parameters (util/param.h, util/param_list.h): BATON_<NAME> beats NCCL_<NAME>; NCCL_<NAME>
 * is used when BATON_<NAME> is unset (or empty); the default otherwise; a value that is not
 * an integer (junk, trailing characters, out of range) falls back to the default with a WARN
 * naming the parameter; integer getters cache their first value; string getters follow the
 * same precedence; bt_param_print_all lists every parameter of param_list.h.
 * Getters cache on first call, so every case uses its own parameter and sets the environment
 * before that parameter's first read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "util/log.h"
#include "util/param.h"

/* Every parameter name of param_list.h, from the list itself. */
static const char *const names[] = {
#define BT_PARAM_INT(fn, name, def, doc) name,
#define BT_PARAM_STR(fn, name, def, doc) name,
#include "util/param_list.h"
#undef BT_PARAM_INT
#undef BT_PARAM_STR
};
#define NNAMES ((int)(sizeof(names) / sizeof(names[0])))

static void set(const char *prefix, const char *name, const char *value)
{
    char key[128];
    snprintf(key, sizeof(key), "%s_%s", prefix, name);
    if (value)
        BT_TEST_OK(setenv(key, value, 1));
    else
        BT_TEST_OK(unsetenv(key));
}

static void check_int(const char *what, int64_t got, int64_t want)
{
    BT_TEST_CHECK(got == want, "%s: got %lld, expected %lld", what, (long long)got,
                  (long long)want);
}

/* An invalid value: the default, and a WARN naming the parameter. */
static void check_invalid(const char *name, const char *value, int64_t (*getter)(void), int64_t def)
{
    set("NCCL", name, NULL);
    set("BATON", name, value);
    const char *before = bt_log_last_error();
    BT_TEST_CHECK(!before || !strstr(before, name), "last error names %s before it was read", name);
    int64_t v = getter();
    BT_TEST_CHECK(v == def, "BATON_%s='%s' gave %lld, expected the default %lld", name, value,
                  (long long)v, (long long)def);
    const char *err = bt_log_last_error();
    BT_TEST_CHECK(err && strstr(err, name), "BATON_%s='%s': no WARN naming it (last error: '%s')",
                  name, value, err ? err : "(null)");
    BT_TEST_CHECK(strstr(err, value) != NULL,
                  "BATON_%s='%s': the WARN does not quote the value: %s", name, value, err);
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);

    /* Hermetic: none of the parameters below comes from the caller's environment. */
    for (int i = 0; i < NNAMES; i++)
        if (strcmp(names[i], "DEBUG") != 0 && strcmp(names[i], "DEBUG_SUBSYS") != 0) {
            set("BATON", names[i], NULL);
            set("NCCL", names[i], NULL);
        }

    /* BATON_ beats NCCL_. */
    set("BATON", "SPIN_COUNT", "111");
    set("NCCL", "SPIN_COUNT", "222");
    check_int("BATON_SPIN_COUNT=111 with NCCL_SPIN_COUNT=222", bt_param_spin_count(), 111);
    /* Cached: later changes are not seen. */
    set("BATON", "SPIN_COUNT", "999");
    check_int("SPIN_COUNT changed after the first read", bt_param_spin_count(), 111);

    /* NCCL_ when BATON_ is unset, or set but empty. */
    set("NCCL", "YIELD_COUNT", "333");
    check_int("NCCL_YIELD_COUNT=333 alone", bt_param_yield_count(), 333);
    set("BATON", "MIN_NCHANNELS", "");
    set("NCCL", "MIN_NCHANNELS", "3");
    check_int("BATON_MIN_NCHANNELS='' with NCCL_MIN_NCHANNELS=3", bt_param_min_nchannels(), 3);

    /* Defaults. */
    check_int("BUFFSIZE unset", bt_param_buffsize(), 1 << 20);
    check_int("LL_BUFFSIZE unset", bt_param_ll_buffsize(), 1 << 17);
    check_int("CHECK_POINTERS unset", bt_param_check_pointers(), 0);
    check_int("SET_THREAD_NAME unset", bt_param_set_thread_name(), 1);

    /* Integer syntax: strtoll base 0 (hex, negative). */
    set("BATON", "MAX_NCHANNELS", "0x10");
    check_int("BATON_MAX_NCHANNELS=0x10", bt_param_max_nchannels(), 16);
    set("BATON", "BOOTSTRAP_TIMEOUT", "-5");
    check_int("BATON_BOOTSTRAP_TIMEOUT=-5", bt_param_bootstrap_timeout(), -5);

    /* Invalid values: default and WARN. */
    check_invalid("LL_THRESHOLD", "12abc", bt_param_ll_threshold, -1);
    check_invalid("P2P_CHUNKSIZE", "99999999999999999999", bt_param_p2p_chunksize, 1 << 17);
    check_invalid("SHM_DISABLE", "1 ", bt_param_shm_disable, 0);
    check_invalid("P2P_DISABLE", "yes", bt_param_p2p_disable, 0);
    /* An invalid BATON_ value is not replaced by a valid NCCL_ one: BATON_ decides. */
    set("BATON", "TREE_THRESHOLD", "abc");
    set("NCCL", "TREE_THRESHOLD", "7");
    check_int("BATON_TREE_THRESHOLD=abc with NCCL_TREE_THRESHOLD=7", bt_param_tree_threshold(), -1);
    BT_TEST_CHECK(strstr(bt_log_last_error(), "TREE_THRESHOLD") != NULL,
                  "BATON_TREE_THRESHOLD=abc: no WARN naming it (last error: '%s')",
                  bt_log_last_error());

    /* Strings: same precedence and defaults. */
    set("BATON", "PROTO", "LL");
    set("NCCL", "PROTO", "Simple");
    BT_TEST_CHECK(bt_param_str_proto() && strcmp(bt_param_str_proto(), "LL") == 0,
                  "BATON_PROTO=LL with NCCL_PROTO=Simple gave '%s'", bt_param_str_proto());
    set("NCCL", "ALGO", "Tree");
    BT_TEST_CHECK(bt_param_str_algo() && strcmp(bt_param_str_algo(), "Tree") == 0,
                  "NCCL_ALGO=Tree alone gave '%s'", bt_param_str_algo());
    BT_TEST_CHECK(strcmp(bt_param_str_shm_dir(), "/dev/shm") == 0, "SHM_DIR default is '%s'",
                  bt_param_str_shm_dir());
    BT_TEST_CHECK(bt_param_str_comm_id() == NULL, "COMM_ID unset gave '%s'",
                  bt_param_str_comm_id());
    BT_TEST_CHECK(bt_param_env("SOCKET_IFNAME") == NULL, "bt_param_env of an unset name");
    set("NCCL", "SOCKET_IFNAME", "eth");
    BT_TEST_CHECK(bt_param_env("SOCKET_IFNAME") &&
                      strcmp(bt_param_env("SOCKET_IFNAME"), "eth") == 0,
                  "bt_param_env: NCCL_SOCKET_IFNAME not seen");
    set("BATON", "SOCKET_IFNAME", "lo");
    BT_TEST_CHECK(strcmp(bt_param_env("SOCKET_IFNAME"), "lo") == 0,
                  "bt_param_env: BATON_SOCKET_IFNAME did not win");

    /* bt_param_print_all: one line per parameter, name first, with its current value. */
    FILE *f = tmpfile();
    BT_TEST_CHECK(f != NULL, "tmpfile failed");
    bt_param_print_all(f);
    long len = ftell(f);
    BT_TEST_CHECK(len > 0, "bt_param_print_all wrote nothing");
    char *text = malloc((size_t)len + 1);
    BT_TEST_CHECK(text != NULL, "out of memory");
    rewind(f);
    BT_TEST_CHECK(fread(text, 1, (size_t)len, f) == (size_t)len, "short read of the table");
    text[len] = '\0';
    fclose(f);
    for (int i = 0; i < NNAMES; i++) {
        char key[64];
        snprintf(key, sizeof(key), "\n%s ", names[i]);
        BT_TEST_CHECK(strstr(text, key) != NULL,
                      "bt_param_print_all has no line for %s (param_list.h)", names[i]);
    }
    const char *spin = strstr(text, "\nSPIN_COUNT ");
    BT_TEST_CHECK(spin && strstr(spin, "111") && strstr(spin, "111") < strchr(spin + 1, '\n'),
                  "SPIN_COUNT line does not show its value 111");
    const char *proto = strstr(text, "\nPROTO ");
    BT_TEST_CHECK(proto && strstr(proto, "LL") && strstr(proto, "LL") < strchr(proto + 1, '\n'),
                  "PROTO line does not show its value LL");
    free(text);
    printf("params: %d parameters, all checks passed\n", NNAMES);

    bt_test_leaks_end(&leaks);
    return 0;
}
