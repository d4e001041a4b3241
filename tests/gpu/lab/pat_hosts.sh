#!/bin/bash
# PAT AllGather and ReduceScatter between GPUs on different hosts, on one GPU machine (issue
# 35): gpu_test_gpu_colls (every collective, dtype, op) with ALGO=PAT as ranks of one process
# cut into hosts (BATON_TEST_HOSTS) at LAYOUTS (hosts x ranks), over sockets and OFI, then as
# processes under MPS (NCCL_HOSTID per process); then baton-perf AllGather and ReduceScatter at
# PERF_HOSTS hosts of one process each, PAT against the ring, checked.
#   BUILD=build-gpu OUT=/some/dir tests/gpu/lab/pat_hosts.sh      -> $OUT/pat.tgz, console
set -u
B=${BUILD:-build-gpu}
export LD_LIBRARY_PATH=$(realpath "$B")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -d "$B/fabric" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(realpath "$B")/fabric"
export NCCL_NVLS_ENABLE=0 BATON_TIMEOUT=${BATON_TIMEOUT:-60} BATON_SOCKET_IFNAME=lo
R=$OUT/pat
mkdir -p "$R"
. tests/gpu/lab/mps.sh
# run NAME ENV... : gpu_test_gpu_colls with ENV, one line of summary
run() {
    local name=$1 start=$SECONDS
    shift
    env "$@" timeout "${TEST_TIMEOUT:-200}" "$B/tests/gpu_test_gpu_colls" >"$R/$name.log" 2>&1
    echo "== $name ($*): rc=$? in $((SECONDS - start)) s: $(tail -n 1 "$R/$name.log")"
}
for l in ${LAYOUTS:-8x1 5x1 3x1 4x2}; do
    h=${l%x*} per=${l#*x}
    run "onepro-$l-sock" BATON_ALGO=PAT BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$((h * per))
done
run "onepro-8x1-sock-default" BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=8 BATON_TEST_GPUS=8
run "onepro-5x1-ofi" BATON_NET=OFI FI_PROVIDER=tcp BATON_ALGO=PAT BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=5 BATON_TEST_GPUS=5
mps_start
for h in ${MPS_HOSTS:-4 6}; do
    run "mps-${h}x1-sock" BATON_ALGO=PAT BATON_TEST_MPS=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$h
done
for coll in allgather reducescatter; do
    for a in PAT Ring; do
        n=${PERF_HOSTS:-8}
        env BATON_ALGO=$a timeout 200 "$B/bin/baton-run" -n "$n" sh -c \
            "NCCL_HOSTID=host\$BATON_RANK CUDA_VISIBLE_DEVICES=0 exec $B/bin/baton-perf $coll -b 8 -e ${PERF_MAX:-16M} -f 4 -c 1 -n 20 -w 3" \
            >"$R/perf-$coll-$a.txt" 2>&1
        echo "== $n hosts, $coll, ALGO=$a: rc=$?"
        grep -E '^ +[0-9]+ ' "$R/perf-$coll-$a.txt" | awk '{print "   ", $0}'
    done
done
mps_stop
tar -C "$OUT" -czf "$OUT/pat.tgz" pat && rm -rf "$R"
