#!/bin/bash
# The LL128 ring against the Simple ring on one GPU (issue 37): every rank of one process on
# GPU 0, gpu_test_gpu_colls with the LL128 ring forced at TEST_N ranks for each ring slot size
# in TEST_BUFS, then baton-one-process at SWEEP_N ranks, AllReduce / AllGather / ReduceScatter
# MIN..MAX, the Simple ring and the LL128 ring at each LL128_BUFFSIZE in BUFS (the same run),
# and both at each channel count in CHS.
#   BUILD=build-gpu OUT=/some/dir tests/gpu/lab/ll128.sh      -> $OUT/ll128[-TAG].tgz, console
set -u
B=${BUILD:-build-gpu}
# LIB: another library folder to run (a variant's build), TAG: a word in the output's names
export LD_LIBRARY_PATH=$(realpath "${LIB:-$B/lib}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 BATON_TIMEOUT=${BATON_TIMEOUT:-30} BATON_TEST_SAME_GPU=1
R=$OUT/ll128${TAG:+-$TAG}
mkdir -p "$R"
ring="BATON_ALGO=Ring BATON_PROTO"
for n in ${TEST_N:-8}; do
    for b in ${TEST_BUFS:-524288}; do
        log="$R/test-$n-$b.log"
        start=$SECONDS
        env $ring=LL128 BATON_LL128_BUFFSIZE=$b BATON_TEST_GPUS=$n timeout "${TEST_TIMEOUT:-150}" \
            "$B/tests/gpu_test_gpu_colls" >"$log" 2>&1
        echo "== $n ranks, LL128 ring, LL128_BUFFSIZE=$b: rc=$? in $((SECONDS - start)) s: $(tail -n 2 "$log" | tr '\n' ' ')"
    done
done
variants=("$ring=Simple")
for b in ${BUFS:-524288 1048576 2097152 4194304}; do
    variants+=("$ring=LL128 BATON_LL128_BUFFSIZE=$b")
done
# CHS="8 16 32": also both rings at each channel count (the LL128 one with the last of BUFS)
for c in ${CHS:-}; do
    ch="BATON_MIN_NCHANNELS=$c BATON_MAX_NCHANNELS=$c"
    variants+=("$ring=Simple $ch" "$ring=LL128 BATON_LL128_BUFFSIZE=${b:-4194304} $ch")
done
for coll in ${COLLS:-allreduce allgather reducescatter}; do
    for v in "${variants[@]}"; do
        log="$R/sweep-$coll-$(echo "$v" | tr ' =' '_-').txt"
        env $v timeout 120 "$B/bin/baton-one-process" --same-gpu --ranks "${SWEEP_N:-8}" "$coll" \
            "${MIN:-16777216}" "${MAX:-67108864}" 20 5 >"$log" 2>&1
        echo "== $coll ($v): rc=$? $(grep '^# wrong' "$log")"
        grep -E '^ *[0-9]+ ' "$log" | awk '{print "   ", $0}'
    done
done
tar -C "$OUT" -czf "$OUT/ll128${TAG:+-$TAG}.tgz" "ll128${TAG:+-$TAG}" && rm -rf "$R"
