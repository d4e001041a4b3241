#!/bin/bash
# Tree AllReduce between GPUs on different hosts, on one GPU machine (issue 35): trees over
# hosts (graph/channel.h: chains inside a host, binary trees between hosts) through host
# connectors (exec/cuda/host_conns.c). gpu_test_gpu_colls (every collective, dtype, op) with
# ALGO=Tree (AllReduce on trees, BATON_TEST_EXPECT=tree checks that they ran) as ranks of one
# process cut into hosts (BATON_TEST_HOSTS) at LAYOUTS (hosts x ranks, or hosts:ranks for
# uneven hosts), over sockets and OFI, then as processes under MPS; the tuner's own choice at
# 4 x 2; then baton-perf AllReduce at 4 hosts x 2 ranks as 8 MPS processes, Tree against Ring,
# checked.
#   BUILD=build-gpu OUT=/some/dir tests/gpu/lab/tree_hosts.sh      -> $OUT/tree.tgz, console
set -u
B=${BUILD:-build-gpu}
export LD_LIBRARY_PATH=$(realpath "$B")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -d "$B/fabric" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(realpath "$B")/fabric"
# GPU_TREES=1: trees over hosts for GPU communicators (an opt-in while experimental)
export NCCL_NVLS_ENABLE=0 BATON_TIMEOUT=${BATON_TIMEOUT:-60} BATON_SOCKET_IFNAME=lo BATON_GPU_TREES=1
R=$OUT/tree
mkdir -p "$R"
. tests/gpu/lab/mps.sh
# run NAME ENV... : gpu_test_gpu_colls with ENV, one line of summary (and the tree counts)
run() {
    local name=$1 start=$SECONDS
    shift
    env "$@" timeout "${TEST_TIMEOUT:-150}" "$B/tests/gpu_test_gpu_colls" >"$R/$name.log" 2>&1
    echo "== $name ($*): rc=$? in $((SECONDS - start)) s: $(tail -n 1 "$R/$name.log")"
    grep -m 2 -E 'collectives: ring' "$R/$name.log" | sed 's/^/     /'
}
for l in ${LAYOUTS:-2x2 4x2 3:7 4x1}; do
    if [[ $l == *:* ]]; then h=${l%:*} n=${l#*:}; else h=${l%x*} n=$((h * ${l#*x})); fi
    run "onepro-$l-sock" BATON_ALGO=Tree BATON_TEST_EXPECT=tree BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$n
done
run "onepro-4x2-sock-default" BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=4 BATON_TEST_GPUS=8
run "onepro-2x2-ofi" BATON_NET=OFI FI_PROVIDER=tcp BATON_ALGO=Tree BATON_TEST_EXPECT=tree BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=2 BATON_TEST_GPUS=4
mps_start
for l in ${MPS_LAYOUTS:-2x2}; do
    h=${l%x*} n=$((h * ${l#*x}))
    run "mps-$l-sock" BATON_ALGO=Tree BATON_TEST_EXPECT=tree BATON_TEST_MPS=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$n
done
for a in Tree Ring; do
    env BATON_ALGO=$a timeout 150 "$B/bin/baton-run" -n 8 sh -c \
        "NCCL_HOSTID=host\$((BATON_RANK / 2)) CUDA_VISIBLE_DEVICES=0 exec $B/bin/baton-perf allreduce -b 8 -e ${PERF_MAX:-16M} -f 4 -c 1 -n 20 -w 3" \
        >"$R/perf-allreduce-$a.txt" 2>&1
    echo "== 4 hosts x 2, allreduce, ALGO=$a: rc=$?"
    grep -E '^ +[0-9]+ ' "$R/perf-allreduce-$a.txt" | awk '{print "   ", $0}'
done
mps_stop
tar -C "$OUT" -czf "$OUT/tree.tgz" tree && rm -rf "$R"
