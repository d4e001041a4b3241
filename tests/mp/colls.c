/*
 * The collectives suites: one executable, one table entry per suite, one ctest test per entry
 * (mp/<name>, tests/CMakeLists.txt). `mp_colls NAME` runs suite NAME; no argument or an
 * unknown name prints the suites and exits 2.
 *
 * Every suite crosses collectives x dtypes x ops x size classes x in/out-of-place on real rank
 * processes and checks every element against an independent reference (colls_suite.c says
 * how, and with which bounds); the entries differ in the environment that forces a path, the
 * rank counts and how much of the cross product they run. The full product at 3 MiB is far
 * too slow on 2 cores, so a suite runs its small sizes in full and a representative subset
 * (`big`) at the larger ones.
 *
 * The soaks are entries too: the same ranks, reference and checks over random cases instead
 * of the matrix (the soak fields of struct colls_suite); a separate executable would only
 * build the same runner twice.
 */
#include <stdio.h>
#include <string.h>

#include "colls_suite.h"

#define CT_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SIMPLE_SLOT ((1u << 20) / 8) /* BUFFSIZE 1 MiB, the default */
#define RING_SIZES ((1u << CT_SZ_1) | (1u << CT_SZ_7) | (1u << CT_SZ_LL1) | (1u << CT_SZ_SIMPLE1))
#define SOAK_SIZES (CT_SMALL_SIZES | (1u << CT_SZ_SIMPLE1))

/* Default choices: every collective at least once, every dtype and every op at least once
 * across the list, 1-, 2-, 4- and 8-byte elements on the reducing collectives. */
static const struct ct_big_case big_colls[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},
    {CT_ALLREDUCE, CT_INT8, CT_PROD},
    {CT_ALLREDUCE, CT_HALF, CT_AVG},
    {CT_ALLREDUCE, CT_BF16, CT_MAX},
    {CT_ALLREDUCE, CT_E4M3, CT_PREMUL_IMM},
    {CT_ALLREDUCE, CT_E5M2, CT_PREMUL_DEV},
    {CT_ALLREDUCE, CT_UINT64, CT_MIN},
    {CT_ALLREDUCE, CT_INT32, CT_AVG},
    {CT_REDUCESCATTER, CT_FLOAT, CT_SUM},
    {CT_REDUCESCATTER, CT_BF16, CT_AVG},
    {CT_REDUCESCATTER, CT_UINT8, CT_PROD},
    {CT_REDUCE, CT_DOUBLE, CT_SUM},
    {CT_REDUCE, CT_E4M3, CT_MAX},
    {CT_REDUCE, CT_INT64, CT_PREMUL_DEV},
    {CT_ALLGATHER, CT_UINT8, 0},
    {CT_ALLGATHER, CT_FLOAT, 0},
    {CT_BROADCAST, CT_UINT32, 0},
    {CT_ALLTOALL, CT_HALF, 0},
    {CT_GATHER, CT_INT8, 0},
    {CT_SCATTER, CT_DOUBLE, 0},
    {CT_SENDRECV_RING, CT_UINT8, 0},
    {CT_SENDRECV_PAIRS, CT_BF16, 0},
};

static const struct ct_big_case big_ll[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},    {CT_ALLREDUCE, CT_BF16, CT_PREMUL_DEV},
    {CT_REDUCESCATTER, CT_HALF, CT_AVG}, {CT_ALLGATHER, CT_UINT8, 0},
    {CT_BROADCAST, CT_DOUBLE, 0},        {CT_REDUCE, CT_INT32, CT_MAX},
};

static const struct ct_big_case big_simple[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_AVG},
    {CT_ALLREDUCE, CT_E4M3, CT_SUM},
    {CT_REDUCESCATTER, CT_DOUBLE, CT_PROD},
    {CT_REDUCE, CT_HALF, CT_PREMUL_IMM},
    {CT_ALLGATHER, CT_BF16, 0},
    {CT_BROADCAST, CT_UINT8, 0},
    {CT_ALLTOALL, CT_INT32, 0},
    {CT_SENDRECV_PAIRS, CT_UINT8, 0},
};

/* AllReduce alone (the tree and the two-shot) */
static const struct ct_big_case big_allreduce[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},       {CT_ALLREDUCE, CT_HALF, CT_AVG},
    {CT_ALLREDUCE, CT_BF16, CT_PREMUL_IMM}, {CT_ALLREDUCE, CT_E5M2, CT_MAX},
    {CT_ALLREDUCE, CT_INT64, CT_PROD},      {CT_ALLREDUCE, CT_UINT32, CT_AVG},
};

static const struct ct_big_case big_windows[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},      {CT_ALLREDUCE, CT_INT32, CT_MAX},
    {CT_REDUCESCATTER, CT_DOUBLE, CT_SUM}, {CT_ALLGATHER, CT_BF16, 0},
    {CT_BROADCAST, CT_UINT8, 0},           {CT_ALLTOALL, CT_INT32, 0},
};

/* AllGather and ReduceScatter alone (PAT) */
static const struct ct_big_case big_pat[] = {
    {CT_REDUCESCATTER, CT_FLOAT, CT_SUM},  {CT_REDUCESCATTER, CT_BF16, CT_AVG},
    {CT_REDUCESCATTER, CT_UINT8, CT_PROD}, {CT_REDUCESCATTER, CT_E4M3, CT_PREMUL_DEV},
    {CT_REDUCESCATTER, CT_INT64, CT_MAX},  {CT_ALLGATHER, CT_UINT8, 0},
    {CT_ALLGATHER, CT_DOUBLE, 0},
};

static const struct ct_big_case big_planned[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},       {CT_ALLREDUCE, CT_HALF, CT_AVG},
    {CT_ALLREDUCE, CT_BF16, CT_PREMUL_IMM}, {CT_ALLREDUCE, CT_INT64, CT_PROD},
    {CT_REDUCESCATTER, CT_FLOAT, CT_SUM},   {CT_ALLGATHER, CT_UINT8, 0},
    {CT_BROADCAST, CT_DOUBLE, 0},           {CT_REDUCE, CT_INT32, CT_MAX},
};

static const struct ct_big_case big_net[] = {
    {CT_ALLREDUCE, CT_FLOAT, CT_SUM},     {CT_ALLREDUCE, CT_BF16, CT_AVG},
    {CT_REDUCESCATTER, CT_INT32, CT_MAX}, {CT_ALLGATHER, CT_UINT8, 0},
    {CT_BROADCAST, CT_DOUBLE, 0},         {CT_REDUCE, CT_HALF, CT_PREMUL_IMM},
    {CT_ALLTOALL, CT_INT32, 0},           {CT_SENDRECV_PAIRS, CT_UINT8, 0},
};

/*
 * The NET suites: shared memory and P2P off, so the CPU proxy and a network backend carry
 * every byte over loopback; 2, 3 and 4 ranks; every collective and op at 0, 7 and one Simple
 * slot + 1 elements, big_net at 3 MiB. They differ in the network and its configuration.
 */
#define NET_ONLY "BATON_SHM_DISABLE=1", "BATON_P2P_DISABLE=1"
#define NET_SUITE                                                                                  \
    .ranks = {2, 3, 4}, .colls = CT_ALL_COLLS, .ops = CT_ALL_OPS,                                  \
    .sizes = (1u << CT_SZ_0) | (1u << CT_SZ_7) | (1u << CT_SZ_SIMPLE1), .big = big_net,            \
    .nbig = CT_LEN(big_net), .big_sizes = 1u << CT_SZ_LARGE, .simple_slot = SIMPLE_SLOT,           \
    .timeout_s = 100
/* float, int32, half, bfloat16: the socket configurations' set (every dtype crosses the same
 * sockets as these, byte for byte) */
#define NET_DTYPES ((1u << CT_FLOAT) | (1u << CT_INT32) | (1u << CT_HALF) | (1u << CT_BF16))
/* AllReduce forced onto trees across hosts (BATON_ALGO=Tree with BATON_TEST_HOSTS): the tree
 * suites' shared fields, the tree's path checked */
#define TREE_NET_SUITE                                                                             \
    .colls = 1u << CT_ALLREDUCE, .dtypes = NET_DTYPES, .ops = CT_ALL_OPS,                          \
    .sizes = (1u << CT_SZ_0) | (1u << CT_SZ_7) | (1u << CT_SZ_SIMPLE1), .big = big_allreduce,      \
    .nbig = CT_LEN(big_allreduce), .big_sizes = 1u << CT_SZ_LARGE, .simple_slot = SIMPLE_SLOT,     \
    .timeout_s = 100, .path = CT_PATH_TREE
/* Every collective, dtype, op and size, the big set at one Simple slot + 1 and 3 MiB: the
 * default suite's fields, shared by the suites that run it under another setting */
#define ALL_COLLS_SUITE                                                                            \
    .colls = CT_ALL_COLLS, .dtypes = CT_ALL_DTYPES, .ops = CT_ALL_OPS, .sizes = CT_SMALL_SIZES,    \
    .big = big_colls, .nbig = CT_LEN(big_colls),                                                   \
    .big_sizes = (1u << CT_SZ_SIMPLE1) | (1u << CT_SZ_LARGE), .simple_slot = SIMPLE_SLOT,          \
    .timeout_s = 100
/* AllReduce forced onto the double binary tree on two channels, every dtype and op: the tree
 * suites' fields (one host) */
#define TREE_ENV "BATON_ALGO=Tree", "BATON_MIN_NCHANNELS=2"
#define TREE_SUITE                                                                                 \
    .colls = 1u << CT_ALLREDUCE, .dtypes = CT_ALL_DTYPES, .ops = CT_ALL_OPS, .sizes = RING_SIZES,  \
    .big = big_allreduce, .nbig = CT_LEN(big_allreduce), .big_sizes = 1u << CT_SZ_LARGE,           \
    .simple_slot = SIMPLE_SLOT, .timeout_s = 100
/* The host executor's helper threads on every launch of two lanes or more, at every size */
#define HELPERS_FORCED "BATON_HOST_THREADS=3", "BATON_HOST_THREADS_MIN_BYTES=0"
/* Socket helpers NxM: BATON_SOCKET_NTHREADS=N helper threads per connection, each driving
 * BATON_NSOCKS_PERTHREAD=M sockets, so a connection is max(1, N) x M TCP sockets and a message
 * of 64 KiB or more is cut into one piece per socket (docs/ENV.md). */
#define SOCKETS(n, m) "BATON_SOCKET_NTHREADS=" #n, "BATON_NSOCKS_PERTHREAD=" #m

static const struct colls_suite suites[] = {
    {
        /* the tuner's algorithm and protocol choices */
        .name = "colls",
        .what = "every collective x dtype x op x size, 1-8 ranks, the library's own choices",
        .ranks = {1, 2, 3, 4, 8},
        ALL_COLLS_SUITE,
    },
    {
        /* Send/Recv (and AlltoAll, Gather, Scatter built on it) always run Simple, so only the
         * ring collectives; one Simple slot + 1 is 17 LL steps */
        .name = "colls_ll",
        .what = "the ring collectives forced onto LL, also where the tuner would pick Simple",
        .env = {"BATON_PROTO=LL"},
        .ranks = {2, 3, 4, 8},
        .colls = CT_RING_COLLS,
        .dtypes = CT_ALL_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = RING_SIZES,
        .big = big_ll,
        .nbig = CT_LEN(big_ll),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 100,
    },
    {
        /* 8 KB slots and 8 KB P2P chunks: small collectives take many steps, 7 elements over 4
         * channels leave channels empty, the FIFOs wrap many times at 3 MiB */
        .name = "colls_simple",
        .what = "every collective forced onto Simple over 4 channels with small buffers",
        .env = {"BATON_PROTO=Simple", "BATON_MIN_NCHANNELS=4", "BATON_MAX_NCHANNELS=4",
                "BATON_BUFFSIZE=65536", "BATON_P2P_CHUNKSIZE=8192"},
        .ranks = {2, 3, 4, 8},
        .colls = CT_ALL_COLLS,
        .dtypes = CT_ALL_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = RING_SIZES,
        .big = big_simple,
        .nbig = CT_LEN(big_simple),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = 65536 / 8,
        .timeout_s = 100,
    },
    {
        /* the host executor's helper threads on every launch of two lanes or more (Simple
         * rings over 4 channels, send/recv groups; LL and the one-shot run one lane): each
         * takes a share while they move (exec/host/helpers.h); with ranks outnumbering CPUs
         * they stall and hand back often */
        .name = "colls_threads",
        .what = "every collective with helper threads driving shares of 4 channels, 2-4 ranks",
        .env = {HELPERS_FORCED, "BATON_MIN_NCHANNELS=4", "BATON_MAX_NCHANNELS=4"},
        .ranks = {2, 3, 4},
        ALL_COLLS_SUITE,
    },
    {
        /* the tree's two halves on two lanes per channel, shared among helper threads */
        .name = "colls_tree_threads",
        .what = "AllReduce on the double binary tree, 2 channels, with helper threads",
        .env = {TREE_ENV, HELPERS_FORCED},
        .ranks = {3, 5},
        TREE_SUITE,
    },
    {
        /* both trees in use at every size; 5 and 7 ranks make unbalanced trees */
        .name = "colls_tree",
        .what = "AllReduce forced onto the double binary tree on two channels, 2-8 ranks",
        .env = {TREE_ENV},
        .ranks = {2, 3, 4, 5, 7, 8},
        TREE_SUITE,
    },
    {
        /* reduce-scatter then all-gather by direct sends to every peer (coll/twoshot.h, the
         * GPU kernel's schedule too); 3 and 5 ranks: parts of unequal size; 7 elements: fewer
         * than ranks, empty parts */
        .name = "colls_twoshot",
        .what = "AllReduce forced onto the two-shot, 2-8 ranks",
        .env = {"BATON_ALGO=TwoShot"},
        .ranks = {2, 3, 4, 5, 8},
        .colls = 1u << CT_ALLREDUCE,
        .dtypes = CT_ALL_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = RING_SIZES,
        .big = big_allreduce,
        .nbig = CT_LEN(big_allreduce),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 100,
    },
    {
        /* Both arenas from ncclMemAlloc, registered as symmetric windows on every rank
         * (registration is collective, every rank maps every peer's windows; deregistration is
         * clean and a second one refused). WIN_MIN_BYTES=0: every AllReduce of count > 0,
         * small ones too, must run the window AllReduce (asserted per case and rank through
         * batonCommGetStats: a fall-back to the FIFOs would give the same results), the other
         * collectives run as on any buffer; the results are those of the FIFO paths.
         * On GPU memory the same matrix is tests/gpu/test_gpu_colls' window variant. */
        .name = "colls_windows",
        .what = "every collective on buffers in symmetric windows; every AllReduce through them",
        .env = {"BATON_WIN_MIN_BYTES=0"},
        .ranks = {2, 3},
        .colls = CT_ALL_COLLS,
        .dtypes = CT_ALL_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = CT_SMALL_SIZES,
        .big = big_windows,
        .nbig = CT_LEN(big_windows),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 100,
        .windows = 1,
        .path = CT_PATH_WINDOW,
    },
    {
        /* Rings planned from a measured link matrix (TOPO_PROBE) whose links differ: every
         * link of rank 0 at an eighth of the others' rate (INJECT_LINK_BW), which no ring
         * avoids (an eighth, not a quarter: the probe measures, and on a loaded 2-core CI
         * machine a 2000 MB/s link once measured under 1/0.85 of a 500 MB/s one, so the planner
         * rightly cut equal blocks), so the rings follow the search's order (reversed on odd
         * channels) and the ring AllReduce cuts its loops into unequal blocks (graph/ring_plan.h):
         * asserted per AllReduce case and rank through batonCommGetStats (equal blocks give the
         * same results). The other ring collectives keep equal blocks (only the AllReduce schedule,
         * coll/ring.h, reads the split). ALGO=Ring keeps AllReduce on the ring at every size;
         * MIN_NCHANNELS=2 uses both ring directions. The measured matrix and the rings are
         * logged (TUNING) for a failure's output to show. */
        .name = "colls_planned",
        .what = "the ring collectives on probed unequal links; every AllReduce splits its blocks",
        .env = {"BATON_TOPO_PROBE=1", "BATON_INJECT_LINK_BW=*>*:2000,0>*:250,*>0:250",
                "BATON_ALGO=Ring", "BATON_MIN_NCHANNELS=2", "BATON_DEBUG=INFO",
                "BATON_DEBUG_SUBSYS=TUNING"},
        .ranks = {3, 4, 5},
        .colls = CT_RING_COLLS,
        .dtypes = CT_ALL_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = RING_SIZES,
        .big = big_planned,
        .nbig = CT_LEN(big_planned),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 120,
        .path = CT_PATH_RING_SPLIT,
    },
    {
        /* AllGather and ReduceScatter in log2 rounds (coll/pat.h), forced, on shared memory:
         * 3 and 5 ranks make partial last rounds (5: the second of three rounds too); 7
         * elements, fewer than some rank counts' blocks; one Simple slot + 1 elements, several
         * loops */
        .name = "colls_pat",
        .what = "AllGather and ReduceScatter forced onto PAT, 2-8 ranks",
        .env = {"BATON_ALGO=PAT"},
        .ranks = {2, 3, 5, 8},
        .colls = (1u << CT_ALLGATHER) | (1u << CT_REDUCESCATTER),
        .dtypes = CT_ALL_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = RING_SIZES,
        .big = big_pat,
        .nbig = CT_LEN(big_pat),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 100,
        .path = CT_PATH_PAT,
    },
    {
        /* one rank per host (TEST_HOSTS at least the rank count): the tuner's own choice is
         * PAT for AllGather and ReduceScatter from 4 ranks (at 2 and 3 its rounds are as many
         * as the ring's hops), over the network; 5: a partial last round */
        .name = "colls_pat_hosts",
        .what = "AllGather and ReduceScatter, one rank per host: PAT by default, over NET",
        .env = {"BATON_TEST_HOSTS=8"},
        .ranks = {4, 5},
        .colls = (1u << CT_ALLGATHER) | (1u << CT_REDUCESCATTER),
        .dtypes = NET_DTYPES,
        .ops = CT_ALL_OPS,
        .sizes = (1u << CT_SZ_0) | (1u << CT_SZ_7) | (1u << CT_SZ_SIMPLE1),
        .big = big_pat,
        .nbig = CT_LEN(big_pat),
        .big_sizes = 1u << CT_SZ_LARGE,
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 100,
        .path = CT_PATH_PAT,
    },
    {
        /* the tree across hosts: one rank per host over NET; 3, 5 and 6 ranks make unbalanced
         * trees (the tuner's own choice there from 4 ranks at small sizes: unit/test_tuner) */
        .name = "colls_tree_hosts",
        .what = "AllReduce forced onto the tree, one rank per host, over NET, 2-6 ranks",
        .env = {"BATON_TEST_HOSTS=8", "BATON_ALGO=Tree"},
        .ranks = {2, 3, 5, 6},
        TREE_NET_SUITE,
    },
    {
        /* trees over hosts of several ranks (graph/channel.h): chains through shared memory
         * inside a host, NET between hosts; 2 hosts of 2 + 2 and 3 + 2 ranks, 3 hosts of
         * 3 + 2 + 2, 4 hosts of 2 */
        .name = "colls_tree_chains",
        .what = "AllReduce forced onto trees over hosts of several ranks, 4-7 ranks",
        .env = {"BATON_TEST_HOSTS=2", "BATON_ALGO=Tree"},
        .ranks = {4, 5},
        TREE_NET_SUITE,
    },
    {
        .name = "colls_tree_chains3",
        .what = "AllReduce forced onto trees over 3 hosts of 2-3 ranks",
        .env = {"BATON_TEST_HOSTS=3", "BATON_ALGO=Tree"},
        .ranks = {7},
        TREE_NET_SUITE,
    },
    {
        .name = "colls_tree_chains4",
        .what = "AllReduce forced onto trees over 4 hosts of 2 ranks",
        .env = {"BATON_TEST_HOSTS=4", "BATON_ALGO=Tree"},
        .ranks = {8},
        TREE_NET_SUITE,
    },
    {
        .name = "colls_net",
        .what = "every collective over NET, default sockets (0x1: the proxy thread drives one)",
        .env = {NET_ONLY},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        .name = "colls_net_1x1",
        .what = "every collective over NET, 1 socket helper thread x 1 socket",
        .env = {NET_ONLY, SOCKETS(1, 1)},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        .name = "colls_net_1x2",
        .what = "every collective over NET, 1 socket helper thread x 2 sockets",
        .env = {NET_ONLY, SOCKETS(1, 2)},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        .name = "colls_net_2x1",
        .what = "every collective over NET, 2 socket helper threads x 1 socket each",
        .env = {NET_ONLY, SOCKETS(2, 1)},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        .name = "colls_net_2x2",
        .what = "every collective over NET, 2 socket helper threads x 2 sockets each",
        .env = {NET_ONLY, SOCKETS(2, 2)},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        .name = "colls_net_4x4",
        .what = "every collective over NET, 4 socket helper threads x 4 sockets each",
        .env = {NET_ONLY, SOCKETS(4, 4)},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        /* two hosts on one machine (TEST_HOSTS): shared memory within each, sockets across */
        .name = "colls_hosts",
        .what = "every collective on two hosts of one machine (BATON_TEST_HOSTS=2): SHM and NET",
        .env = {"BATON_TEST_HOSTS=2"},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        /* NET names the network, so a machine where OFI has no device fails here rather than
         * falling back to sockets */
        .name = "colls_ofi",
        .what = "every collective and dtype over NET on libfabric (tcp;ofi_rxm over loopback)",
        .env = {NET_ONLY, "BATON_NET=OFI", "FI_PROVIDER=tcp;ofi_rxm"},
        .dtypes = CT_ALL_DTYPES,
        NET_SUITE,
    },
    {
        /* Baton's socket backend built as a separate library (ncclNetPlugin_v11), named by
         * NCCL_NET so that nothing else can carry the bytes */
        .name = "colls_plugin",
        .what = "every collective and dtype over NET through libnccl-net-baton.so, loaded by path",
        .env = {NET_ONLY, "NCCL_NET_PLUGIN=" BT_PLUGIN_DIR "/libnccl-net-baton.so",
                "NCCL_NET=BatonSocket"},
        .dtypes = CT_ALL_DTYPES,
        NET_SUITE,
    },
    {
        /* tests/plugins/fake_net.c's FakeV6: the socket backend behind an ncclNet_v6_t whose
         * test() never writes the size, so the v6 shim and the distrust of old plugins'
         * fields carry every collective */
        .name = "colls_plugin_v6",
        .what = "every collective over NET through a v6-only plugin (the v6 shim)",
        .env = {NET_ONLY, "NCCL_NET_PLUGIN=" BT_PLUGIN_DIR "/libnccl-net-fakev6.so",
                "NCCL_NET=FakeV6"},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        /* tests/plugins/fake_net.c's FakeLate: a send comm works only once the receiver's
         * accept has returned (google/nccl-fastsocket's habit); a send posted before that
         * fails the case */
        .name = "colls_plugin_late",
        .what = "every collective over NET through a plugin that finishes connecting late",
        .env = {NET_ONLY, "NCCL_NET_PLUGIN=" BT_PLUGIN_DIR "/libnccl-net-fakelate.so",
                "NCCL_NET=FakeLate"},
        .dtypes = NET_DTYPES,
        NET_SUITE,
    },
    {
        /* two minutes in all; BT_SOAK_CASES=N runs N cases per rank count instead
         * (bench/soak.sh: 10^5), BT_SOAK_S=S S seconds (the sanitized build: 15) */
        .name = "soak",
        .what = "random collectives, dtypes, ops, sizes, in/out of place: 40 s (BT_SOAK_S) on 2, "
                "3, 4 ranks",
        .ranks = {2, 3, 4},
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 400,
        .soak_s = 40,
        .soak_sizes = SOAK_SIZES,
    },
    {
        .name = "soak_ofi",
        .what = "the soak over libfabric (NET=OFI): 3,400 random cases on each of 2, 3, 4 ranks",
        .env = {NET_ONLY, "BATON_NET=OFI", "FI_PROVIDER=tcp;ofi_rxm"},
        .ranks = {2, 3, 4},
        .simple_slot = SIMPLE_SLOT,
        .timeout_s = 400,
        .soak_cases = 3400,
        .soak_sizes = SOAK_SIZES,
    },
};

int main(int argc, char **argv)
{
    for (int k = 0; argc == 2 && k < CT_LEN(suites); k++)
        if (strcmp(argv[1], suites[k].name) == 0)
            return colls_suite_run(&suites[k]);
    if (argc == 2)
        fprintf(stderr, "%s: no suite '%s'\n", argv[0], argv[1]);
    fprintf(stderr, "usage: %s SUITE (ctest mp/SUITE runs it); suites:\n", argv[0]);
    for (int k = 0; k < CT_LEN(suites); k++)
        fprintf(stderr, "  %-16s %s\n", suites[k].name, suites[k].what);
    return 2;
}
