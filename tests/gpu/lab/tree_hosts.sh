#!/bin/bash
# Tree AllReduce between GPUs on different hosts, on one GPU machine (issue 35): trees over
# hosts (graph/channel.h: chains inside a host, binary trees between hosts) through host
# connectors (exec/cuda/host_conns.c). gpu_test_gpu_colls (every collective, dtype, op) with
# ALGO=Tree (AllReduce on trees, BATON_TEST_EXPECT=tree checks that they ran) as ranks of one
# process cut into hosts (BATON_TEST_HOSTS) at LAYOUTS (hosts x ranks, or hosts:ranks for
# uneven hosts), over sockets and OFI, then as processes under MPS; the tuner's own choice at
# 4 x 2; then baton-perf AllReduce at 4 hosts x 2 ranks as 8 MPS processes, Tree against Ring,
# checked.
#   BUILD=build-gpu OUT=/some/dir tests/gpu/lab/tree_hosts.sh      -> one log per run under $OUT
set -u
. tests/gpu/lab/lib.sh
# GPU_TREES=1: trees over hosts for GPU communicators (an opt-in while experimental)
export BATON_SOCKET_IFNAME=lo BATON_GPU_TREES=1
# colls NAME ENV...: gpu_test_gpu_colls with ENV (lib.sh's run), and each rank's algorithm counts
colls() {
    local name=$1
    shift
    run "$name" "$@" timeout "${TEST_TIMEOUT:-150}" "$T/gpu_test_gpu_colls"
    grep -m 2 -E 'collectives: ring' "$OUT/$name.log" | sed 's/^/     /' | tee -a "$OUT/summary.txt"
}
for l in ${LAYOUTS:-2x2 4x2 3:7 4x1}; do
    if [[ $l == *:* ]]; then h=${l%:*} n=${l#*:}; else h=${l%x*} n=$((h * ${l#*x})); fi
    colls "onepro-$l-sock" BATON_ALGO=Tree BATON_TEST_EXPECT=tree BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$n
done
colls "onepro-4x2-sock-default" BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=4 BATON_TEST_GPUS=8
colls "onepro-2x2-ofi" BATON_NET=OFI FI_PROVIDER=tcp BATON_ALGO=Tree BATON_TEST_EXPECT=tree BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=2 BATON_TEST_GPUS=4
mps_start
for l in ${MPS_LAYOUTS:-2x2}; do
    h=${l%x*} n=$((h * ${l#*x}))
    colls "mps-$l-sock" BATON_ALGO=Tree BATON_TEST_EXPECT=tree BATON_TEST_MPS=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$n
done
for a in Tree Ring; do
    env BATON_ALGO=$a timeout 150 "$B/bin/baton-run" -n 8 sh -c \
        "NCCL_HOSTID=host\$((BATON_RANK / 2)) CUDA_VISIBLE_DEVICES=0 exec $B/bin/baton-perf allreduce -b 8 -e ${PERF_MAX:-16M} -f 4 -c 1 -n 20 -w 3" \
        >"$OUT/perf-allreduce-$a.txt" 2>&1
    echo "== 4 hosts x 2, allreduce, ALGO=$a: rc=$?" | tee -a "$OUT/summary.txt"
    grep -E '^ +[0-9]+ ' "$OUT/perf-allreduce-$a.txt" | awk '{print "   ", $0}' | tee -a "$OUT/summary.txt"
done
mps_stop
