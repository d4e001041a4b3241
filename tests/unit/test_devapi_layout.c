/*
 * The device API's layouts (include/nccl_device/layout.h) against NVIDIA's nccl_device.h
 * (2.28.9): every field's offset and size, every struct's size and every constant of
 * devapi/fields.h, as Baton's C, Baton's C++ and NVIDIA's header (C++) lay them out; and a
 * GIN proxy descriptor written by NVIDIA's bitfields equals the one layout.h documents.
 * NVIDIA's side is built where its header is installed (BT_HAVE_NVIDIA_DEVAPI; CI has it);
 * without it the test says so and checks Baton's C against its C++ only. NCCL 2.30.7's layouts
 * (devapi/fields_v2.h: what Baton writes for programs built against 2.29-2.30 headers) are
 * compared with NVIDIA's 2.30.7 headers where a lab build points at them.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "core/devcomm_abi.h"
#include "nccl_device/layout.h"
#include "transport/gin_proxy.h"

#include "devapi/fields.h"
#include "devapi/fields_v2.h"

BT_DEVAPI_TABLE(bt_devapi_baton_c);
extern const struct bt_devapi_row bt_devapi_baton_cxx[];
#ifdef BT_HAVE_NVIDIA_DEVAPI
extern const struct bt_devapi_row bt_devapi_nvidia[];
void bt_devapi_nvidia_gfd(int inline_data, uint64_t out[8]);
#endif

/* NCCL 2.30.7's layouts as Baton writes and reads them (core/devcomm_abi.h). */
BT_DEVAPI_V2_TABLE(bt_devapi_baton_v2, struct bt_devapi_devcomm_v23000, struct bt_devapi_reqs_v2,
                   struct bt_devapi_segment_window, struct bt_devapi_window);
#ifdef BT_HAVE_NVIDIA_DEVAPI_V2
extern const struct bt_devapi_row bt_devapi_nvidia_v2[];
extern const long long bt_devapi_nvidia_v2_ctx[];
void bt_devapi_nvidia_v2_gfd(int kind, uint64_t out[16]);

/* 2.30.7's GIN proxy context and descriptors (NVIDIA's bitfields) against
 * transport/gin_proxy.h: the context's offsets, and every field of each kind of descriptor
 * as the proxy decodes it. Returns how many differ. */
static int gin_v2(void)
{
    const long long mine[] = {(long long)sizeof(struct bt_gin_ctx_v2),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.nranks),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.queueSize),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.queues),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.pis),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.cis),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.counters),
                              (long long)offsetof(struct bt_gin_ctx_v2, v1.signals),
                              (long long)offsetof(struct bt_gin_ctx_v2, signalOffsets),
                              (long long)offsetof(struct bt_gin_ctx_v2, lastIssuedGet),
                              (long long)offsetof(struct bt_gin_ctx_v2, lastVisibleGet),
                              (long long)(BT_GIN_V2_QWORDS * sizeof(uint64_t)),
                              -1};
    int bad = 0;
    for (int i = 0; mine[i] >= 0 || bt_devapi_nvidia_v2_ctx[i] >= 0; i++) {
        if (mine[i] != bt_devapi_nvidia_v2_ctx[i]) {
            fprintf(stderr, "2.30.7 GIN proxy context, item %d: Baton %lld, NVIDIA %lld\n", i,
                    mine[i], bt_devapi_nvidia_v2_ctx[i]);
            bad++;
        }
    }
    const unsigned ops[BT_DEVAPI_GFD2_KINDS] = {
        ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd,
        ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithSignalInc,
        BT_GIN_OP_VA_SIGNAL | ncclGinProxyOpWithSignalAdd, BT_GIN_OP_GET, BT_GIN_OP_FLUSH};
    for (int k = 0; k < BT_DEVAPI_GFD2_KINDS; k++) {
        uint64_t q[BT_GIN_V2_QWORDS];
        struct bt_gin_gfd f;
        bt_devapi_nvidia_v2_gfd(k, q);
        int ok = bt_gin_gfd_decode(BT_GIN_V2, q, &f) == BT_OK && f.op == ops[k];
        if (k == BT_DEVAPI_GFD2_FLUSH) {
            ok = ok && f.size == 0;
        } else {
            ok = ok && f.dst_off == BT_DEVAPI_GFD_DST_OFF &&
                 f.dst_handle == BT_DEVAPI_GFD_DST_HANDLE && f.counter == BT_DEVAPI_GFD2_COUNTER &&
                 f.signal == BT_DEVAPI_GFD2_SIGNAL && f.signal_val == BT_DEVAPI_GFD_SIGNAL_VALUE &&
                 f.strong == (k == BT_DEVAPI_GFD2_PUT);
            if (k == BT_DEVAPI_GFD2_INLINE)
                ok = ok && f.size == 8 && f.inline_val == BT_DEVAPI_GFD_INLINE;
            else
                ok = ok && f.size == BT_DEVAPI_GFD_SIZE && f.src_off == BT_DEVAPI_GFD_SRC_OFF &&
                     f.src_handle == BT_DEVAPI_GFD_SRC_HANDLE;
        }
        if (!ok) {
            fprintf(stderr,
                    "2.30.7 GIN descriptor kind %d as the proxy decodes it: op %#x, size %#llx, "
                    "src %#llx+%#llx, dst %#llx+%#llx, counter %#x, signal %#x (+%#llx, strong "
                    "%d), inline %#llx\n",
                    k, f.op, (unsigned long long)f.size, (unsigned long long)f.src_handle,
                    (unsigned long long)f.src_off, (unsigned long long)f.dst_handle,
                    (unsigned long long)f.dst_off, f.counter, f.signal,
                    (unsigned long long)f.signal_val, f.strong, (unsigned long long)f.inline_val);
            bad++;
        }
    }
    /* a descriptor of another version is refused, not misread */
    uint64_t q[BT_GIN_V2_QWORDS];
    struct bt_gin_gfd f;
    bt_devapi_nvidia_v2_gfd(BT_DEVAPI_GFD2_PUT, q);
    q[BT_GIN_V2_HEADER] &= ~(0xfull << 1);
    q[BT_GIN_V2_HEADER] |= 1ull << 1;
    if (bt_gin_gfd_decode(BT_GIN_V2, q, &f) != BT_ERR_INVALID_USAGE) {
        fprintf(stderr, "a version-1 descriptor was decoded as version 2\n");
        bad++;
    }
    printf("NCCL 2.30.7's GIN proxy context (72 bytes) and its 5 kinds of descriptor (NVIDIA's "
           "bitfields) as Baton's GIN proxy reads them: checked\n");
    return bad;
}
#endif

#ifdef BT_HAVE_NVIDIA_DEVAPI_V229
extern const long long bt_devapi_nvidia_v229_ctx;
void bt_devapi_nvidia_v229_gfd(int kind, uint64_t out[8]);

/* 2.29.5-2.29.7's GIN proxy descriptors (NVIDIA's bitfields) as the proxy decodes them
 * (BT_GIN_V1_WIDE), and their context's size; returns how many differ. */
static int gin_v229(void)
{
    int bad = bt_devapi_nvidia_v229_ctx != (long long)sizeof(ncclGinProxyGpuCtx_t);
    if (bad)
        fprintf(stderr, "2.29's GIN proxy context: %lld bytes, Baton's %zu\n",
                bt_devapi_nvidia_v229_ctx, sizeof(ncclGinProxyGpuCtx_t));
    const int kinds[] = {BT_DEVAPI_GFD2_PUT, BT_DEVAPI_GFD2_INLINE, BT_DEVAPI_GFD2_VA_SIGNAL};
    const unsigned ops[] = {
        ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd,
        ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithSignalInc,
        BT_GIN_OP_VA_SIGNAL | ncclGinProxyOpWithSignalAdd};
    for (int i = 0; i < 3; i++) {
        uint64_t q[ncclGinProxyGfdQwords];
        struct bt_gin_gfd f;
        bt_devapi_nvidia_v229_gfd(kinds[i], q);
        int ok = bt_gin_gfd_decode(BT_GIN_V1_WIDE, q, &f) == BT_OK && f.op == ops[i] &&
                 f.dst_off == BT_DEVAPI_GFD_DST_OFF && f.dst_handle == BT_DEVAPI_GFD_DST_HANDLE &&
                 f.counter == BT_DEVAPI_GFD2_COUNTER && f.signal == BT_DEVAPI_GFD2_SIGNAL &&
                 f.signal_val == BT_DEVAPI_GFD_SIGNAL_VALUE;
        if (kinds[i] == BT_DEVAPI_GFD2_INLINE)
            ok = ok && f.size == 8 && f.inline_val == BT_DEVAPI_GFD_INLINE;
        else
            ok = ok && f.src_off == BT_DEVAPI_GFD_SRC_OFF &&
                 f.src_handle == BT_DEVAPI_GFD_SRC_HANDLE &&
                 f.size == (kinds[i] == BT_DEVAPI_GFD2_PUT ? BT_DEVAPI_GFD_SIZE : 0);
        for (int k = 0; k < ncclGinProxyGfdQwords; k++)
            ok = ok && (q[k] & 1); /* the proxy waits for every flag */
        if (!ok) {
            fprintf(stderr,
                    "2.29's GIN descriptor kind %d as the proxy decodes it: op %#x, size %#llx, "
                    "src %#llx+%#llx, dst %#llx+%#llx, counter %#x, signal %#x (+%#llx)\n",
                    kinds[i], f.op, (unsigned long long)f.size, (unsigned long long)f.src_handle,
                    (unsigned long long)f.src_off, (unsigned long long)f.dst_handle,
                    (unsigned long long)f.dst_off, f.counter, f.signal,
                    (unsigned long long)f.signal_val);
            bad++;
        }
    }
    printf("NCCL 2.29's GIN proxy context (%lld bytes) and its 3 kinds of descriptor (NVIDIA's "
           "bitfields) as Baton's GIN proxy reads them: checked\n",
           bt_devapi_nvidia_v229_ctx);
    return bad;
}
#endif

/* The rows of `other` against Baton's rows `mine`; returns how many differ. */
static int compare_rows(const struct bt_devapi_row *mine, const char *what,
                        const struct bt_devapi_row *other)
{
    int n = 0, bad = 0;
    for (; mine[n].name; n++) {
        const struct bt_devapi_row *a = &mine[n], *b = &other[n];
        BT_TEST_CHECK(b->name && strcmp(a->name, b->name) == 0, "row %d: %s against %s", n, a->name,
                      b->name ? b->name : "(end)");
        if (a->a != b->a || a->b != b->b) {
            fprintf(stderr, "%s: Baton's C has %lld/%lld, %s %lld/%lld\n", a->name, a->a, a->b,
                    what, b->a, b->b);
            bad++;
        }
    }
    BT_TEST_CHECK(other[n].name == NULL, "%s has more rows than Baton's C", what);
    printf("%d rows against %s: %d differ\n", n, what, bad);
    return bad;
}

static int compare(const char *what, const struct bt_devapi_row *other)
{
    return compare_rows(bt_devapi_baton_c, what, other);
}

/* The descriptor of fields.h, written as layout.h's comment says the words are laid out. */
static void baton_gfd(int inline_data, uint64_t q[8])
{
    uint64_t op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd;
    if (inline_data)
        op |= ncclGinProxyOpWithInline;
    const uint64_t v = BT_DEVAPI_GFD_SIGNAL_VALUE, d = BT_DEVAPI_GFD_INLINE;
    q[ncclGinProxyGfdHeader] = 1 | op << 1 | BT_DEVAPI_GFD_SIZE << 7;
    if (inline_data) {
        q[ncclGinProxyGfdInlineLow] = 1 | (d & 0xffffffffull) << 8 | ((d >> 32) & 0xffff) << 40;
        q[ncclGinProxyGfdInlineHigh] = 1 | (d >> 48) << 8;
    } else {
        q[ncclGinProxyGfdSrcOff] = 1 | BT_DEVAPI_GFD_SRC_OFF << 1;
        q[ncclGinProxyGfdSrcHandle] = 1 | BT_DEVAPI_GFD_SRC_HANDLE << 1;
    }
    q[ncclGinProxyGfdDstOff] = 1 | BT_DEVAPI_GFD_DST_OFF << 1;
    q[ncclGinProxyGfdDstHandle] = 1 | BT_DEVAPI_GFD_DST_HANDLE << 1;
    q[ncclGinProxyGfdCompletion] = 1 | (uint64_t)BT_DEVAPI_GFD_COUNTER << 8 |
                                   (uint64_t)BT_DEVAPI_GFD_SIGNAL << 24 | (v & 0xffff) << 40;
    q[ncclGinProxyGfdSignalVal] = 1 | ((v >> 16) & 0xffff) << 8 | (v >> 32) << 24;
    q[ncclGinProxyGfdReserved] = 1;
}

int main(void)
{
    int bad = compare("Baton's C++", bt_devapi_baton_cxx);
#ifdef BT_HAVE_NVIDIA_DEVAPI
    bad += compare("NVIDIA's nccl_device.h", bt_devapi_nvidia);
    for (int inl = 0; inl <= 1; inl++) {
        uint64_t ours[8], theirs[8];
        baton_gfd(inl, ours);
        bt_devapi_nvidia_gfd(inl, theirs);
        for (int i = 0; i < 8; i++) {
            if (ours[i] != theirs[i]) {
                fprintf(stderr,
                        "GIN descriptor (%s), word %d: layout.h gives 0x%016llx, NVIDIA's "
                        "bitfields 0x%016llx\n",
                        inl ? "inline" : "put", i, (unsigned long long)ours[i],
                        (unsigned long long)theirs[i]);
                bad++;
            }
        }
    }
    for (int inl = 0; inl <= 1; inl++) { /* what Baton's GIN proxy reads of NVIDIA's */
        uint64_t theirs[8];
        struct bt_gin_gfd f;
        bt_devapi_nvidia_gfd(inl, theirs);
        bt_gin_gfd_decode(BT_GIN_V1, theirs, &f);
        unsigned op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd |
                      (inl ? ncclGinProxyOpWithInline : 0);
        int ok =
            f.op == op && f.size == BT_DEVAPI_GFD_SIZE && f.dst_off == BT_DEVAPI_GFD_DST_OFF &&
            f.dst_handle == BT_DEVAPI_GFD_DST_HANDLE && f.counter == BT_DEVAPI_GFD_COUNTER &&
            f.signal == BT_DEVAPI_GFD_SIGNAL && f.signal_val == BT_DEVAPI_GFD_SIGNAL_VALUE &&
            (inl ? f.inline_val == BT_DEVAPI_GFD_INLINE
                 : f.src_off == BT_DEVAPI_GFD_SRC_OFF && f.src_handle == BT_DEVAPI_GFD_SRC_HANDLE);
        if (!ok) {
            fprintf(stderr,
                    "GIN descriptor (%s) as the proxy decodes it: op %#x, size %#llx, dst "
                    "%#llx+%#llx, counter %#x, signal %#x (+%#llx), inline %#llx\n",
                    inl ? "inline" : "put", f.op, (unsigned long long)f.size,
                    (unsigned long long)f.dst_handle, (unsigned long long)f.dst_off, f.counter,
                    f.signal, (unsigned long long)f.signal_val, (unsigned long long)f.inline_val);
            bad++;
        }
    }
    printf("GIN proxy descriptors (put, inline put) as NVIDIA's bitfields write them, and as "
           "Baton's GIN proxy decodes them: checked\n");
#else
    printf("NVIDIA's nccl_device.h was not found at configure time: Baton's C against its C++ "
           "only\n");
#endif
#ifdef BT_HAVE_NVIDIA_DEVAPI_V2
    bad += compare_rows(bt_devapi_baton_v2, "NVIDIA's 2.30.7 nccl_device.h", bt_devapi_nvidia_v2);
    bad += gin_v2();
#else
    int nv2 = 0;
    while (bt_devapi_baton_v2[nv2].name)
        nv2++;
    printf("NCCL 2.30.7's layouts (%d rows): pinned by devcomm_abi.c's static assertions; "
           "NVIDIA's 2.30.7 headers not configured (BATON_NVIDIA_DEVAPI_V2_DIR)\n",
           nv2);
#endif
#ifdef BT_HAVE_NVIDIA_DEVAPI_V229
    bad += gin_v229();
#endif
    BT_TEST_CHECK(bad == 0, "%d layout differences (above)", bad);
    printf("test_devapi_layout: ok\n");
    return 0;
}
