#!/bin/bash
# The figures the tuner's shared-GPU costs are fitted to, at rank counts other than 8: AllReduce
# MIN..MAX with each algorithm and protocol in VARIANTS forced, at each of RANKS_LIST ranks of
# one process on GPU 0, ROUNDS rounds; first the plan the tuner makes with PROTO=LL128 alone.
#   tests/gpu/lab/fit_oneshot.sh > fit.txt     (BUILD: the staged build, default build-gpu)
set -u
cd "$(dirname "$0")/../../.." || exit 1
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1
B=${BUILD:-build-gpu}
run() { LD_LIBRARY_PATH=$B/lib timeout 60 env "$@"; }
for n in ${RANKS_LIST:-2 4}; do
    echo "== n $n: plans with PROTO=LL128"
    run BATON_PROTO=LL128 BATON_DEBUG=TRACE BATON_DEBUG_SUBSYS=TUNING "$B/bin/baton-one-process" \
        --same-gpu --ranks "$n" allreduce "${MIN:-8192}" "${MAX:-4194304}" 2 1 2>&1 |
        grep -o 'coll [0-9]* count .*' | sort -t' ' -k6,6n | uniq -c
    for r in $(seq "${ROUNDS:-2}"); do
        for v in ${VARIANTS:-Direct/LL128 Ring/LL128 Direct/LL Ring/LL Ring/Simple}; do
            echo "== n $n round $r algo ${v%/*} proto ${v#*/}"
            run BATON_ALGO="${v%/*}" BATON_PROTO="${v#*/}" "$B/bin/baton-one-process" --same-gpu \
                --ranks "$n" allreduce "${MIN:-8192}" "${MAX:-4194304}" 20 3 2>&1 |
                grep -E '^ +[0-9]|wrong'
        done
    done
done
