/*
 * baton-perf's pure parts: command line, size arithmetic, busbw factors, the dtype
 * conversions of its checker, and the claim its data check rests on: for every dtype, op
 * and rank count, each input and each expected result is exactly representable, so a
 * correct library produces bit-identical output.
 *
 * The tool's sources are compiled into this test directly; the NCCL calls they reference
 * (never made here) resolve against the internal library.
 */
#include <math.h>
#include <string.h>

#include "harness.h"

#include "../../tools/perf/perf_args.c"
#include "../../tools/perf/perf_check.c"
#include "../../tools/perf/perf_colls.c"
#include "../../tools/perf/perf_report.c"

static int parse(struct perf_args *a, const char *line)
{
    char buf[512];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof(buf), "%s", line);
    for (char *tok = strtok(buf, " "); tok != NULL && argc < 63; tok = strtok(NULL, " ")) {
        argv[argc++] = tok;
    }
    argv[argc] = NULL;
    return perf_args_parse(argc, argv, a);
}

static void test_sizes(void)
{
    size_t s = 0;
    BT_TEST_OK(perf_parse_size("8", &s));
    BT_TEST_CHECK(s == 8, "%zu", s);
    BT_TEST_OK(perf_parse_size("64K", &s));
    BT_TEST_CHECK(s == 65536, "%zu", s);
    BT_TEST_OK(perf_parse_size("128M", &s));
    BT_TEST_CHECK(s == 128u << 20, "%zu", s);
    BT_TEST_OK(perf_parse_size("2G", &s));
    BT_TEST_CHECK(s == (size_t)2 << 30, "%zu", s);
    BT_TEST_OK(perf_parse_size("1.5k", &s));
    BT_TEST_CHECK(s == 1536, "%zu", s);
    BT_TEST_CHECK(perf_parse_size("1X", &s) != 0, "1X accepted");
    BT_TEST_CHECK(perf_parse_size("-1", &s) != 0, "-1 accepted");
    BT_TEST_CHECK(perf_parse_size("", &s) != 0, "empty accepted");
}

static void test_args(void)
{
    struct perf_args a;
    BT_TEST_OK(parse(&a, "baton-perf all_reduce_perf -b 8 -e 128M -f 2 -g 1 -c 1 -d half -o avg"));
    BT_TEST_CHECK(a.coll == PERF_ALLREDUCE, "%d", a.coll);
    BT_TEST_CHECK(a.min_bytes == 8 && a.max_bytes == 128u << 20, "%zu %zu", a.min_bytes,
                  a.max_bytes);
    BT_TEST_CHECK(a.step_factor == 2 && a.check == 1 && a.op == PERF_OP_AVG, "factor/check/op");
    BT_TEST_CHECK(a.dtype->nccl == ncclFloat16 && a.dtype->size == 2, "dtype");
    BT_TEST_CHECK(a.iters == 20 && a.warmup == 5 && a.root == 0, "defaults");

    BT_TEST_OK(parse(&a, "baton-perf -d bf16 -o mulsum reducescatter -p -J out.json -n 7 -w 0"));
    BT_TEST_CHECK(a.coll == PERF_REDUCESCATTER && a.op == PERF_OP_MULSUM, "rs mulsum");
    BT_TEST_CHECK(a.dtype->nccl == ncclBfloat16, "bf16 alias");
    BT_TEST_CHECK(a.percentiles && strcmp(a.json_path, "out.json") == 0, "-p -J");
    BT_TEST_CHECK(a.iters == 7 && a.warmup == 0, "-n -w");

    /* A binary named after an nccl-tests program needs no collective argument. */
    BT_TEST_OK(parse(&a, "/opt/bin/sendrecv_perf -b 1K -e 1K"));
    BT_TEST_CHECK(a.coll == PERF_SENDRECV, "argv[0] name");

    BT_TEST_OK(parse(&a, "baton-perf AllGather --host --params -r 3 -z 1 -d fp8e5m2"));
    BT_TEST_CHECK(a.coll == PERF_ALLGATHER && a.force_host && a.print_params, "long options");
    BT_TEST_CHECK(a.root == 3 && a.blocking == 1 && a.dtype->nccl == ncclFloat8e5m2, "r z d");
    BT_TEST_OK(parse(&a, "baton-perf --params"));
    BT_TEST_CHECK(a.coll == PERF_NCOLLS, "--params alone");

    BT_TEST_CHECK(parse(&a, "baton-perf") == 1, "no collective");
    BT_TEST_CHECK(parse(&a, "baton-perf allreduce -o xor") == 1, "bad op");
    BT_TEST_CHECK(parse(&a, "baton-perf allreduce -d float128") == 1, "bad dtype");
    BT_TEST_CHECK(parse(&a, "baton-perf allreduce -b 2K -e 1K") == 1, "min > max");
    BT_TEST_CHECK(parse(&a, "baton-perf allreduce -t 2") == 1, "two threads");
    BT_TEST_CHECK(parse(&a, "baton-perf allreduce -n") == 1, "missing value");
    BT_TEST_CHECK(parse(&a, "baton-perf gather") == 1, "unknown collective");
}

static void test_colls(void)
{
    struct perf_sizes s;
    /* 4 ranks, 1 MiB of floats: counts as nccl-tests derives them. */
    perf_colls[PERF_ALLGATHER].sizes(1 << 20, 4, 4, &s);
    BT_TEST_CHECK(s.count == 65536 && s.send_count == 65536 && s.recv_count == 262144 &&
                      s.send_inplace_off == 65536,
                  "allgather %zu %zu %zu", s.count, s.send_count, s.recv_count);
    perf_colls[PERF_REDUCESCATTER].sizes(1 << 20, 4, 4, &s);
    BT_TEST_CHECK(s.count == 65536 && s.send_count == 262144 && s.recv_count == 65536 &&
                      s.recv_inplace_off == 65536,
                  "reducescatter");
    perf_colls[PERF_ALLTOALL].sizes(1 << 20, 4, 4, &s);
    BT_TEST_CHECK(s.count == 65536 && s.send_count == 262144 && s.recv_count == 262144, "alltoall");
    perf_colls[PERF_ALLREDUCE].sizes(1 << 20, 4, 4, &s);
    BT_TEST_CHECK(s.count == 262144 && s.recv_count == 262144, "allreduce");

    BT_TEST_CHECK(perf_colls[PERF_ALLREDUCE].bus_factor(4) == 1.5, "allreduce factor");
    BT_TEST_CHECK(perf_colls[PERF_ALLGATHER].bus_factor(4) == 0.75, "allgather factor");
    BT_TEST_CHECK(perf_colls[PERF_REDUCESCATTER].bus_factor(4) == 0.75, "rs factor");
    BT_TEST_CHECK(perf_colls[PERF_ALLTOALL].bus_factor(4) == 0.75, "alltoall factor");
    BT_TEST_CHECK(perf_colls[PERF_BROADCAST].bus_factor(4) == 1.0, "broadcast factor");
    BT_TEST_CHECK(perf_colls[PERF_REDUCE].bus_factor(4) == 1.0, "reduce factor");
    BT_TEST_CHECK(perf_colls[PERF_SENDRECV].bus_factor(4) == 1.0, "sendrecv factor");
    BT_TEST_CHECK(perf_colls[PERF_ALLREDUCE].bus_factor(1) == 0.0, "one rank");

    double sorted[1000];
    for (int i = 0; i < 1000; i++) {
        sorted[i] = i + 1;
    }
    BT_TEST_CHECK(perf_percentile(sorted, 1000, 50) == 500, "p50");
    BT_TEST_CHECK(perf_percentile(sorted, 1000, 99) == 990, "p99");
    BT_TEST_CHECK(perf_percentile(sorted, 1000, 99.9) == 999, "p99.9");
    BT_TEST_CHECK(perf_percentile(sorted, 20, 99.9) == 20, "p99.9 of 20");
}

static unsigned bits_of(const char *type, double v)
{
    unsigned char b[8] = {0};
    const struct perf_dtype *t = perf_dtype_lookup(type);
    perf_encode(t, v, b);
    return t->size == 1 ? b[0] : (unsigned)(b[0] | b[1] << 8);
}

static void test_conversions(void)
{
    /* Known encodings, including subnormals, the largest finite values and ties to even. */
    BT_TEST_CHECK(bits_of("half", 1.0) == 0x3c00, "half 1");
    BT_TEST_CHECK(bits_of("half", 65504) == 0x7bff, "half max");
    BT_TEST_CHECK(bits_of("half", ldexp(1, -24)) == 0x0001, "half min subnormal");
    BT_TEST_CHECK(bits_of("half", 1 + ldexp(1, -11)) == 0x3c00, "half tie to even (down)");
    BT_TEST_CHECK(bits_of("half", 1 + 3 * ldexp(1, -11)) == 0x3c02, "half tie to even (up)");
    BT_TEST_CHECK(bits_of("half", -2.0) == 0xc000, "half -2");
    BT_TEST_CHECK(bits_of("bfloat16", 1.0) == 0x3f80, "bf16 1");
    BT_TEST_CHECK(bits_of("bfloat16", 256) == 0x4380, "bf16 256");
    BT_TEST_CHECK(bits_of("f8e4m3", 1.0) == 0x38, "e4m3 1");
    BT_TEST_CHECK(bits_of("f8e4m3", 16.0) == 0x58, "e4m3 16");
    BT_TEST_CHECK(bits_of("f8e4m3", 448.0) == 0x7e, "e4m3 max");
    BT_TEST_CHECK(bits_of("f8e4m3", ldexp(1, -9)) == 0x01, "e4m3 min subnormal");
    BT_TEST_CHECK(bits_of("f8e5m2", 1.0) == 0x3c, "e5m2 1");
    BT_TEST_CHECK(bits_of("f8e5m2", 57344.0) == 0x7b, "e5m2 max");
    BT_TEST_CHECK(bits_of("f8e5m2", ldexp(1, -16)) == 0x01, "e5m2 min subnormal");

    /* Every code of the small formats decodes and encodes back to itself (NaNs aside). */
    const char *small[] = {"half", "bfloat16", "f8e4m3", "f8e5m2"};
    for (int k = 0; k < 4; k++) {
        const struct perf_dtype *t = perf_dtype_lookup(small[k]);
        unsigned ncodes = t->size == 1 ? 256 : 65536;
        for (unsigned c = 0; c < ncodes; c++) {
            unsigned char in[2] = {(unsigned char)c, (unsigned char)(c >> 8)};
            double v = perf_decode(t, in);
            if (isnan(v) || (v == 0 && c != 0 && c != (1u << (8 * t->size - 1)))) {
                continue;
            }
            BT_TEST_CHECK(bits_of(small[k], v) == c, "%s code 0x%x (%g)", small[k], c, v);
        }
    }
}

/* The inputs and the exact results of every op are representable in every dtype. */
static void test_data_exact(void)
{
    static const char *types[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                  "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
    static const int ranks[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 128};
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        const struct perf_dtype *t = perf_dtype_lookup(types[ti]);
        for (int op = 0; op < PERF_NOPS; op++) {
            for (size_t ri = 0; ri < sizeof(ranks) / sizeof(ranks[0]); ri++) {
                struct perf_data_plan p;
                unsigned char b[8];
                int n = ranks[ri];
                int varied = 0;
                perf_plan_init(&p, t, (enum perf_op_id)op, n);
                for (size_t i = 0; i < 97; i++) {
                    for (int r = 0; r < n; r++) {
                        double v = perf_value(&p, r, i);
                        perf_encode(t, v, b);
                        BT_TEST_CHECK(perf_decode(t, b) == v, "%s input %g", t->name, v);
                        varied |= v != perf_value(&p, 0, 0);
                    }
                    double e = perf_reduce_expected(&p, i);
                    if (op == PERF_OP_AVG && t->kind == PERF_KIND_FLOAT) {
                        continue; /* checked with a tolerance instead */
                    }
                    perf_encode(t, e, b);
                    BT_TEST_CHECK(perf_decode(t, b) == e, "%s op %d n %d idx %zu: %g not exact",
                                  t->name, op, n, i, e);
                    BT_TEST_CHECK(perf_element_ok(&p, b, e), "element_ok");
                    perf_encode(t, e + 1, b);
                    BT_TEST_CHECK(!perf_element_ok(&p, b, e) || e + 1 > t->max_exact,
                                  "%s: off by one accepted", t->name);
                }
                BT_TEST_CHECK(varied, "%s op %d n %d: constant data", t->name, op, n);
            }
        }
    }
}

int main(void)
{
    test_sizes();
    test_args();
    test_colls();
    test_conversions();
    test_data_exact();
    printf("ok\n");
    return 0;
}
