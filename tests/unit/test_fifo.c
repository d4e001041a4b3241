/*
 * FIFO credit logic and protocols of one connector (transport/conn.h), driven through
 * bt_host_prim_try with send-only and recv-only primitives on a FIFO in ordinary memory:
 *   - a sender runs at most BT_NSTEPS steps ahead of its receiver: exactly 8 sends succeed,
 *     the 9th fails until the receiver consumes one step, for Simple and LL;
 *   - tail (Simple) and head values after every step, sizes[] set by a Simple send and reset
 *     to -1 by the consume;
 *   - a receiver never accepts a step that was not sent: Simple before tail moves, LL with a
 *     stale line from 8 steps earlier in the slot, with only some lines written, or with
 *     one half of the last line stale;
 *   - a 0-byte step still moves the step (LL: it carries one line with both flags);
 *   - LL steps, then Simple steps, then LL steps on one connector, pipelined, keep data
 *     correct, also across step 2^32 where the 32-bit LL flag wraps;
 *   - a primitive with two connectors runs only when both are ready and then moves both.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "coll/work.h"
#include "exec/host/lanes.h"

#define SIMPLE_SLOT 512
#define LL_SLOT 512 /* 32 lines: 256 bytes of payload */
#define LL_MAX (LL_SLOT / sizeof(union bt_ll_line) * BT_LL_PAYLOAD)

struct fifo {
    void *mem;
    struct bt_conn s, r;
};

static void fifo_init(struct fifo *f, uint64_t start)
{
    struct bt_fifo_sizes sz;
    sz.slot_bytes[BT_PROTO_SIMPLE] = SIMPLE_SLOT;
    sz.slot_bytes[BT_PROTO_LL] = LL_SLOT;
    sz.slot_bytes[BT_PROTO_LL128] = 0;
    size_t bytes = (bt_fifo_bytes(&sz) + BT_CACHELINE - 1) & ~(size_t)(BT_CACHELINE - 1);
    f->mem = aligned_alloc(BT_CACHELINE, bytes);
    BT_TEST_CHECK(f->mem != NULL, "out of memory");
    memset(f->mem, 0, bytes);
    struct bt_fifo_ctrl *ctrl = f->mem;
    atomic_store(&ctrl->tail, start);
    atomic_store(&ctrl->head, start);
    for (int i = 0; i < BT_NSTEPS; i++)
        atomic_store(&ctrl->sizes[i], -1);
    struct bt_conn *c[2] = {&f->s, &f->r};
    for (int k = 0; k < 2; k++) {
        memset(c[k], 0, sizeof(*c[k]));
        c[k]->peer = 1 - k;
        c[k]->is_send = k == 0;
        c[k]->connected = 1;
        c[k]->step = c[k]->cached = start;
        c[k]->ctrl = ctrl;
        c[k]->sizes = sz;
        for (int p = 0; p < BT_NUM_PROTOS; p++)
            c[k]->buf[p] = (char *)f->mem + bt_fifo_proto_offset(&sz, p);
        c[k]->kind = "test";
    }
}

static void fifo_free(struct fifo *f)
{
    free(f->mem);
}

static struct bt_work make_work(int proto)
{
    struct bt_work w;
    memset(&w, 0, sizeof(w));
    w.coll = BT_COLL_SEND;
    w.proto = (uint8_t)proto;
    w.redop.dtype = BT_UINT8;
    w.esize = 1;
    return w;
}

/* One step of `nbytes` (uint8 elements) from `data` into connector c. */
static int try_send(struct bt_conn *c, int proto, const void *data, size_t nbytes)
{
    struct bt_work w = make_work(proto);
    struct bt_prim p;
    memset(&p, 0, sizeof(p));
    p.nsend = 1;
    p.send[0] = c;
    p.src = data;
    p.nelem = nbytes;
    return bt_host_prim_try(&w, &p);
}

static int try_recv(struct bt_conn *c, int proto, void *out, size_t nbytes)
{
    struct bt_work w = make_work(proto);
    struct bt_prim p;
    memset(&p, 0, sizeof(p));
    p.nrecv = 1;
    p.recv[0] = c;
    p.dst = out;
    p.nelem = nbytes;
    return bt_host_prim_try(&w, &p);
}

/* The content of step s: bytes that differ between steps and positions. */
static void pattern(uint64_t s, unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(s * 131 + i * 7 + 1);
}

static void check_recv(struct bt_conn *c, int proto, uint64_t s, size_t nbytes, const char *ctx)
{
    unsigned char want[SIMPLE_SLOT], got[SIMPLE_SLOT + 16];
    pattern(s, want, nbytes);
    memset(got, 0xEE, sizeof(got));
    BT_TEST_CHECK(try_recv(c, proto, got, nbytes) == 1,
                  "%s: receive of step %llu (%zu bytes) "
                  "not ready",
                  ctx, (unsigned long long)s, nbytes);
    BT_TEST_CHECK(memcmp(got, want, nbytes) == 0, "%s: step %llu (%zu bytes, %s) data differs", ctx,
                  (unsigned long long)s, nbytes, proto == BT_PROTO_LL ? "LL" : "Simple");
    for (size_t i = nbytes; i < sizeof(got); i++)
        BT_TEST_CHECK(got[i] == 0xEE, "%s: step %llu wrote %zu bytes past its %zu", ctx,
                      (unsigned long long)s, i - nbytes + 1, nbytes);
}

static void do_send(struct bt_conn *c, int proto, uint64_t s, size_t nbytes, const char *ctx)
{
    unsigned char buf[SIMPLE_SLOT];
    pattern(s, buf, nbytes);
    BT_TEST_CHECK(try_send(c, proto, buf, nbytes) == 1, "%s: send of step %llu not ready", ctx,
                  (unsigned long long)s);
}

/* ---------------------------------------------------------------- credits */

static void test_credits(int proto)
{
    const char *name = proto == BT_PROTO_LL ? "LL" : "Simple";
    size_t maxb = proto == BT_PROTO_LL ? LL_MAX : SIMPLE_SLOT;
    struct fifo f;
    fifo_init(&f, 0);
    struct bt_fifo_ctrl *ctrl = f.s.ctrl;
    unsigned char buf[SIMPLE_SLOT] = {0};

    /* Nothing sent: the receiver is not ready (LL: a zeroed slot has flag 0, never valid). */
    BT_TEST_CHECK(try_recv(&f.r, proto, buf, 16) == 0,
                  "%s: receiver accepted step 0 before "
                  "anything was sent",
                  name);
    BT_TEST_CHECK(f.r.step == 0 && atomic_load(&ctrl->head) == 0,
                  "%s: failed receive moved the "
                  "step",
                  name);

    for (uint64_t s = 0; s < BT_NSTEPS; s++) {
        size_t nb = (size_t)(s * 37 % maxb) + 1;
        do_send(&f.s, proto, s, nb, name);
        BT_TEST_CHECK(f.s.step == s + 1, "%s: send step %llu after %llu sends", name,
                      (unsigned long long)f.s.step, (unsigned long long)s + 1);
        if (proto == BT_PROTO_SIMPLE) {
            BT_TEST_CHECK(atomic_load(&ctrl->tail) == s + 1, "Simple: tail %llu after %llu sends",
                          (unsigned long long)atomic_load(&ctrl->tail), (unsigned long long)s + 1);
            BT_TEST_CHECK(atomic_load(&ctrl->sizes[s]) == (int32_t)nb,
                          "Simple: sizes[%llu] = %d after a send of %zu bytes",
                          (unsigned long long)s, (int)atomic_load(&ctrl->sizes[s]), nb);
        }
        BT_TEST_CHECK(atomic_load(&ctrl->head) == 0, "%s: head moved without a receive", name);
    }
    /* The 9th send has no credit, however often it is tried. */
    for (int k = 0; k < 100; k++)
        BT_TEST_CHECK(try_send(&f.s, proto, buf, 8) == 0,
                      "%s: send %d ran %d steps ahead of the receiver (credit is %d)", name,
                      BT_NSTEPS + 1, BT_NSTEPS + 1, BT_NSTEPS);
    BT_TEST_CHECK(f.s.step == BT_NSTEPS, "%s: refused send moved the step to %llu", name,
                  (unsigned long long)f.s.step);
    if (proto == BT_PROTO_SIMPLE)
        BT_TEST_CHECK(atomic_load(&ctrl->tail) == BT_NSTEPS, "Simple: refused send moved tail");

    /* The receiver consumes step 0: the slot is freed, one more send fits, then none. */
    check_recv(&f.r, proto, 0, 1, name);
    BT_TEST_CHECK(f.r.step == 1 && atomic_load(&ctrl->head) == 1,
                  "%s: head %llu after one "
                  "receive",
                  name, (unsigned long long)atomic_load(&ctrl->head));
    BT_TEST_CHECK(atomic_load(&ctrl->sizes[0]) == -1,
                  "%s: sizes[0] = %d after the receive, "
                  "expected -1",
                  name, (int)atomic_load(&ctrl->sizes[0]));
    do_send(&f.s, proto, BT_NSTEPS, 5, name);
    if (proto == BT_PROTO_SIMPLE)
        BT_TEST_CHECK(atomic_load(&ctrl->sizes[0]) == 5, "Simple: reused slot 0 has size %d",
                      (int)atomic_load(&ctrl->sizes[0]));
    BT_TEST_CHECK(try_send(&f.s, proto, buf, 8) == 0, "%s: a second send fit after one receive",
                  name);

    /* Drain: every step's data intact, sizes reset, head following. */
    for (uint64_t s = 1; s <= BT_NSTEPS; s++) {
        size_t nb = s == BT_NSTEPS ? 5 : (size_t)(s * 37 % maxb) + 1;
        check_recv(&f.r, proto, s, nb, name);
        BT_TEST_CHECK(atomic_load(&ctrl->head) == s + 1, "%s: head %llu after %llu receives", name,
                      (unsigned long long)atomic_load(&ctrl->head), (unsigned long long)s + 1);
        BT_TEST_CHECK(atomic_load(&ctrl->sizes[s % BT_NSTEPS]) == -1,
                      "%s: sizes[%llu] = %d after its receive", name,
                      (unsigned long long)(s % BT_NSTEPS),
                      (int)atomic_load(&ctrl->sizes[s % BT_NSTEPS]));
    }
    BT_TEST_CHECK(try_recv(&f.r, proto, buf, 5) == 0, "%s: receiver ran ahead of the sender", name);
    fifo_free(&f);
}

/* ---------------------------------------------------------------- LL flags */

static void test_ll_stale(void)
{
    struct fifo f;
    fifo_init(&f, 0);
    unsigned char buf[LL_MAX];
    const size_t nb = 100; /* 13 lines */

    for (uint64_t s = 0; s < BT_NSTEPS; s++) {
        do_send(&f.s, BT_PROTO_LL, s, nb, "LL stale");
        check_recv(&f.r, BT_PROTO_LL, s, nb, "LL stale");
    }
    /* Step 8 uses slot 0, which still holds step 0's lines (flag 1; step 8 expects 9). */
    BT_TEST_CHECK(try_recv(&f.r, BT_PROTO_LL, buf, nb) == 0,
                  "LL: receiver accepted step 8 from the stale lines step 0 left in its slot");
    BT_TEST_CHECK(try_recv(&f.r, BT_PROTO_LL, buf, 8) == 0,
                  "LL: receiver accepted a 1-line step 8 from step 0's first line");
    BT_TEST_CHECK(f.r.step == BT_NSTEPS, "LL: refused receive moved the step");

    /* A step whose last line is not written yet, or whose last line has one stale half, is not
     * ready: write step 8's lines by hand. */
    union bt_ll_line *l = (union bt_ll_line *)bt_conn_slot(&f.s, BT_PROTO_LL, BT_NSTEPS);
    uint64_t flag = (uint64_t)(BT_NSTEPS + 1) << 32;
    size_t nl = (nb + BT_LL_PAYLOAD - 1) / BT_LL_PAYLOAD;
    for (size_t i = 0; i + 1 < nl; i++) {
        __atomic_store_n(&l[i].v[0], flag | 0x11, __ATOMIC_RELEASE);
        __atomic_store_n(&l[i].v[1], flag | 0x22, __ATOMIC_RELEASE);
    }
    BT_TEST_CHECK(try_recv(&f.r, BT_PROTO_LL, buf, nb) == 0,
                  "LL: receiver accepted a step whose last line still has the stale flag");
    __atomic_store_n(&l[nl - 1].v[0], flag | 0x33, __ATOMIC_RELEASE);
    BT_TEST_CHECK(try_recv(&f.r, BT_PROTO_LL, buf, nb) == 0,
                  "LL: receiver accepted a step whose last line has a stale second half");
    __atomic_store_n(&l[nl - 1].v[1], flag | 0x44, __ATOMIC_RELEASE);
    memset(buf, 0, sizeof(buf));
    BT_TEST_CHECK(try_recv(&f.r, BT_PROTO_LL, buf, nb) == 1,
                  "LL: receiver refused a step whose lines all carry flag step + 1");
    BT_TEST_CHECK(buf[0] == 0x11 && buf[4] == 0x22 && buf[(nl - 1) * 8] == 0x33,
                  "LL: hand-written lines unpacked wrong (%02x %02x %02x)", buf[0], buf[4],
                  buf[(nl - 1) * 8]);
    fifo_free(&f);
}

static void test_zero_bytes(void)
{
    for (int proto = 0; proto < BT_NUM_HOST_PROTOS; proto++) {
        const char *name = proto == BT_PROTO_LL ? "LL" : "Simple";
        struct fifo f;
        fifo_init(&f, 0);
        unsigned char dummy[8] = {0};
        for (uint64_t s = 0; s < 3; s++) {
            BT_TEST_CHECK(try_send(&f.s, proto, dummy, 0) == 1, "%s: 0-byte send refused", name);
            BT_TEST_CHECK(f.s.step == s + 1, "%s: 0-byte send did not move the step", name);
            if (proto == BT_PROTO_LL) {
                const union bt_ll_line *l =
                    (const union bt_ll_line *)bt_conn_slot(&f.s, BT_PROTO_LL, s);
                BT_TEST_CHECK(l[0].f.flag1 == (uint32_t)(s + 1) &&
                                  l[0].f.flag2 == (uint32_t)(s + 1),
                              "LL: 0-byte step %llu carries flags %u/%u, expected %u",
                              (unsigned long long)s, l[0].f.flag1, l[0].f.flag2, (unsigned)(s + 1));
                BT_TEST_CHECK(l[1].f.flag1 == 0 && l[1].f.flag2 == 0,
                              "LL: 0-byte step wrote more than one line");
            } else {
                BT_TEST_CHECK(atomic_load(&f.s.ctrl->tail) == s + 1 &&
                                  atomic_load(&f.s.ctrl->sizes[s]) == 0,
                              "Simple: 0-byte step %llu: tail %llu, size %d", (unsigned long long)s,
                              (unsigned long long)atomic_load(&f.s.ctrl->tail),
                              (int)atomic_load(&f.s.ctrl->sizes[s]));
            }
        }
        for (uint64_t s = 0; s < 3; s++) {
            unsigned char out[8] = {0x77};
            BT_TEST_CHECK(try_recv(&f.r, proto, out, 0) == 1,
                          "%s: 0-byte receive of step %llu "
                          "not ready",
                          name, (unsigned long long)s);
            BT_TEST_CHECK(out[0] == 0x77, "%s: 0-byte receive wrote its output", name);
            BT_TEST_CHECK(atomic_load(&f.r.ctrl->head) == s + 1, "%s: 0-byte receive: head %llu",
                          name, (unsigned long long)atomic_load(&f.r.ctrl->head));
        }
        BT_TEST_CHECK(try_recv(&f.r, proto, dummy, 0) == 0,
                      "%s: 0-byte receive of a step never "
                      "sent was accepted",
                      name);
        fifo_free(&f);
    }
}

/* ---------------------------------------------------------------- switching protocols */

static uint64_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Steps in runs of one protocol (LL, Simple, LL, ...), random sizes; the sender runs ahead as
 * far as credit allows, the receiver drains a random number of steps, repeatedly. */
static void test_switch(uint64_t start, int nsteps)
{
    struct fifo f;
    fifo_init(&f, start);
    int *proto = malloc(sizeof(int) * (size_t)nsteps);
    size_t *size = malloc(sizeof(size_t) * (size_t)nsteps);
    BT_TEST_CHECK(proto && size, "out of memory");
    int p = BT_PROTO_LL, run = 0;
    for (int i = 0; i < nsteps; i++) {
        if (run == 0) {
            run = 1 + (int)(rnd() % 12);
            p = i == 0 ? BT_PROTO_LL : 1 - p;
        }
        run--;
        proto[i] = p;
        size_t maxb = p == BT_PROTO_LL ? LL_MAX : SIMPLE_SLOT;
        size[i] = rnd() % 5 == 0 ? 0 : 1 + rnd() % maxb;
    }
    char ctx[96];
    snprintf(ctx, sizeof(ctx), "protocol switching from step %llu", (unsigned long long)start);
    int sent = 0, recvd = 0;
    unsigned char buf[SIMPLE_SLOT];
    while (recvd < nsteps) {
        int burst = 1 + (int)(rnd() % 10);
        for (int k = 0; k < burst && sent < nsteps; k++) {
            uint64_t s = start + (uint64_t)sent;
            pattern(s, buf, size[sent]);
            int ok = try_send(&f.s, proto[sent], buf, size[sent]);
            int room = sent - recvd < BT_NSTEPS;
            BT_TEST_CHECK(ok == room, "%s: send of step %llu (%d ahead) returned %d", ctx,
                          (unsigned long long)s, sent - recvd, ok);
            if (!ok)
                break;
            sent++;
        }
        int drain = (int)(rnd() % 10);
        for (int k = 0; k < drain && recvd < sent; k++, recvd++)
            check_recv(&f.r, proto[recvd], start + (uint64_t)recvd, size[recvd], ctx);
        if (recvd == sent && sent < nsteps) /* nothing in flight: a receive must not run */
            BT_TEST_CHECK(try_recv(&f.r, proto[recvd], buf, size[recvd]) == 0,
                          "%s: receive of step %llu ran before its send", ctx,
                          (unsigned long long)(start + (uint64_t)recvd));
    }
    BT_TEST_CHECK(f.s.step == f.r.step && atomic_load(&f.s.ctrl->head) == f.r.step,
                  "%s: sender at %llu, receiver at %llu", ctx, (unsigned long long)f.s.step,
                  (unsigned long long)f.r.step);
    free(proto);
    free(size);
    fifo_free(&f);
}

/* ---------------------------------------------------------------- two connectors */

static void test_two_conns(void)
{
    for (int proto = 0; proto < BT_NUM_HOST_PROTOS; proto++) {
        const char *name = proto == BT_PROTO_LL ? "LL" : "Simple";
        struct fifo a, b, c;
        fifo_init(&a, 0);
        fifo_init(&b, 0);
        fifo_init(&c, 0);
        unsigned char buf[64];
        for (uint64_t s = 0; s < BT_NSTEPS; s++)
            do_send(&a.s, proto, s, 32, name);

        /* send to a (full) and b: nothing moves on b */
        struct bt_work w = make_work(proto);
        struct bt_prim p;
        memset(&p, 0, sizeof(p));
        pattern(100, buf, 32);
        p.nsend = 2;
        p.send[0] = &b.s;
        p.send[1] = &a.s;
        p.src = (const char *)buf;
        p.nelem = 32;
        BT_TEST_CHECK(bt_host_prim_try(&w, &p) == 0, "%s: a two-send step ran with one full FIFO",
                      name);
        BT_TEST_CHECK(b.s.step == 0 && atomic_load(&b.s.ctrl->tail) == 0,
                      "%s: a refused two-send step moved the ready connector", name);

        /* recv from c (one step sent) and send to a (full): c's step is not consumed */
        do_send(&c.s, proto, 0, 32, name);
        memset(&p, 0, sizeof(p));
        p.nrecv = 1;
        p.recv[0] = &c.r;
        p.nsend = 1;
        p.send[0] = &a.s;
        p.nelem = 32;
        BT_TEST_CHECK(bt_host_prim_try(&w, &p) == 0, "%s: recv+send ran with a full send FIFO",
                      name);
        BT_TEST_CHECK(c.r.step == 0 && atomic_load(&c.r.ctrl->head) == 0,
                      "%s: a refused recv+send step consumed its input", name);

        /* free one slot of a: the recv+send step runs, c's data goes on to a */
        check_recv(&a.r, proto, 0, 32, name);
        BT_TEST_CHECK(bt_host_prim_try(&w, &p) == 1, "%s: recv+send refused when ready", name);
        BT_TEST_CHECK(c.r.step == 1 && a.s.step == BT_NSTEPS + 1, "%s: recv+send steps %llu %llu",
                      name, (unsigned long long)c.r.step, (unsigned long long)a.s.step);
        for (uint64_t s = 1; s < BT_NSTEPS; s++)
            check_recv(&a.r, proto, s, 32, name);
        check_recv(&a.r, proto, 0, 32, name); /* step 8 carries step 0's pattern from c */
        fifo_free(&a);
        fifo_free(&b);
        fifo_free(&c);
    }
}

int main(void)
{
    struct bt_test_leaks leaks;
    bt_test_leaks_begin(&leaks);

    test_credits(BT_PROTO_SIMPLE);
    test_credits(BT_PROTO_LL);
    test_ll_stale();
    test_zero_bytes();
    test_switch(0, 5000);
    test_switch((1ull << 32) - 2000, 5000); /* across the wrap of the 32-bit LL flag */
    test_switch((1ull << 40) + 3, 2000);
    test_two_conns();

    printf("fifo: all checks passed\n");
    bt_test_leaks_end(&leaks);
    return 0;
}
