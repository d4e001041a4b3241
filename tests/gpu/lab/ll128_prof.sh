#!/bin/bash
# Where an 8-rank ring step's time goes, Simple against LL128 (issue 37): a measuring build
# of the library (-DBATON_LL128_PROFILE: thread 0 of each rank's block 0 counts clock64 cycles
# in the step's credit wait, its own warp's step work, the barrier and post after it, and its
# warp's waits for lines not there at the first look; kernels.cuh prints them per call of 16
# MB or more) runs AllGather, ReduceScatter and AllReduce at SIZES (16M 64M), RANKS (8) ranks
# of one process on GPU 0, the Simple ring and the LL128 ring (4 MB FIFOs).
#   tests/gpu/lab/build_variant.sh prof -DBATON_LL128_PROFILE   (here, then carried)
#   OUT=$OUT PROF_LIB=build-libs/prof tests/gpu/lab/ll128_prof.sh
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
lib=$(realpath "${PROF_LIB:-build-libs/prof}")
OUT=${OUT:-/tmp/baton-ll128-prof}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1 BATON_TIMEOUT=${BATON_TIMEOUT:-30}
for s in ${SIZES:-16M 64M}; do
    n=$(numfmt --from=iec "$s")
    for c in allgather reducescatter allreduce; do
        for p in Simple LL128; do
            echo "== $c $s BATON_PROTO=$p"
            env BATON_ALGO=Ring BATON_PROTO=$p BATON_LL128_BUFFSIZE=4194304 \
                LD_LIBRARY_PATH="$lib" timeout 120 "$B/bin/baton-one-process" --same-gpu \
                --ranks "${RANKS:-8}" "$c" "$n" "$n" 3 1 2>&1 | grep -v '^#' | sort
        done
    done
done | tee "$OUT/ll128_prof.txt"
