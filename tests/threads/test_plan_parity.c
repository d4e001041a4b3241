/*
 * The host half of the host/GPU parity cases (parity.h): two host-memory ranks of one process.
 */
#include "parity.h"

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes);
    BT_TEST_CHECK(p != NULL, "out of memory");
    return p;
}

static void host_release(void *p)
{
    free(p);
}

static void host_copy(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

static void *no_stream(int rank)
{
    (void)rank;
    return NULL;
}

static void no_sync(int rank)
{
    (void)rank;
}

static const struct parity_backend host = {
    .name = "host",
    .alloc = host_alloc,
    .release = host_release,
    .put = host_copy,
    .get = host_copy,
    .stream = no_stream,
    .sync = no_sync,
};

int main(void)
{
    struct bt_test_leaks leaks;
    setenv("BATON_DEVICE", "cpu", 1); /* host memory even on a GPU machine */
    bt_test_leaks_begin(&leaks);
    parity_run(&host);
    bt_test_leaks_end(&leaks);
    return 0;
}
