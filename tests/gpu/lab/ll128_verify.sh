#!/bin/bash
# An LL128 step change checked on the GPU machine (issue 37's done line): gpu_test_gpu_colls
# with the LL128 ring forced at NLIST (2 3 4 8) ranks of one process on GPU 0, then
# compute-sanitizer memcheck and racecheck of the LL128 ring AllReduce at SANITIZE_N (4) ranks,
# 4 x n B..SANITIZE_MAX (256 KB); LIB: the library folder to check (default: the build's).
#   OUT=$OUT LIB=build-libs/ll128-lane tests/gpu/lab/ll128_verify.sh
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
LIB=$(realpath "${LIB:-$B/lib}")
OUT=${OUT:-/tmp/baton-ll128-verify}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1 LD_LIBRARY_PATH=$LIB
for n in ${NLIST:-2 3 4 8}; do
    t0=$(date +%s)
    log=$OUT/colls-$n-ll128.log
    BATON_PROTO=LL128 BATON_TEST_GPUS=$n BATON_TIMEOUT=60 timeout 300 "$B/tests/gpu_test_gpu_colls" >"$log" 2>&1
    echo "== gpu_test_gpu_colls $n ranks, LL128: rc=$? in $(($(date +%s) - t0)) s: $(tail -n 2 "$log" | tr '\n' ' ')"
done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
n=${SANITIZE_N:-4}
for tool in memcheck racecheck; do
    log=$OUT/sanitize-$n-$tool.log
    BATON_ALGO=Ring BATON_PROTO=LL128 BATON_TIMEOUT=120 timeout "${SANITIZE_TIMEOUT:-150}" "$CS" \
        --tool $tool --error-exitcode 9 "$B/bin/baton-one-process" --same-gpu --ranks "$n" \
        allreduce $((4 * n)) "${SANITIZE_MAX:-262144}" 2 1 >"$log" 2>&1
    echo "== $n ranks, compute-sanitizer --tool $tool (ring LL128): rc=$? $(grep -E 'SUMMARY|wrong' "$log" | tr '\n' ' ')"
done
