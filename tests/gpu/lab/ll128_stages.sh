#!/bin/bash
# Where an LL128 ring step's time goes (issue 37), by lab builds that leave a stage out
# (src/exec/cuda/device/ll128.cuh, LL128_LAB_*; their results are wrong, so no tests here):
# the LL128 ring forced at RANKS (8) ranks of one process on GPU 0, 4 MB FIFOs (512 KB slots,
# the default at 16 channels), AllReduce, AllGather and ReduceScatter MIN..MAX (16M..64M), the
# default library first and each of the variant folders after it, ROUNDS (3) alternating
# (sweep_libs.sh: ratio = the default's time over the variant's); then the Simple ring on the
# default library for scale.
#   OUT=$OUT tests/gpu/lab/ll128_stages.sh build-libs/ll128-nowait build-libs/ll128-nosend ...
# (variants built here: tests/gpu/lab/build_variant.sh ll128-nowait -DLL128_LAB_NOWAIT; a
# folder:VAR=VAL runs that library with VAR=VAL set, e.g. build-gpu/lib:BATON_LL128_BUFFSIZE=8388608)
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
OUT=${OUT:-/tmp/baton-ll128-stages}
export BATON_TIMEOUT=${BATON_TIMEOUT:-30} # a variant that stalls fails in 30 s, not hangs
common=(RANKS="${RANKS:-8}" ROUNDS="${ROUNDS:-3}" MIN="${MIN:-16M}" MAX="${MAX:-64M}"
    COLLS="${COLLS:-allreduce allgather reducescatter}" BUILD="$B")
env "${common[@]}" BATON_ALGO=Ring BATON_PROTO=LL128 BATON_LL128_BUFFSIZE=4194304 TAG=ll128 \
    OUT="$OUT/ll128" tests/gpu/lab/sweep_libs.sh "$B/lib" "$@" | grep -v '^round'
env "${common[@]}" ROUNDS=1 BATON_ALGO=Ring BATON_PROTO=Simple TAG=simple OUT="$OUT/simple" \
    tests/gpu/lab/sweep_libs.sh "$B/lib" | grep -v '^round'
