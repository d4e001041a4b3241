#!/bin/bash
# A change in how the kernels are built (not in what they do), checked on a one-GPU machine:
# the gpu tests with the new library, every protocol and algorithm forced in turn (ranks of one
# process sharing GPU 0), then, when reference builds are given, the new library against them
# over 8 B..64 MB (sweep_libs.sh, at each of RANKS_LIST ranks, default "2 8"). From the
# repository root:
#   BUILD=build-gpu OUT=$OUT tests/gpu/lab/kernels_build.sh [REF_LIB_DIR...]
# TESTS=0 leaves the tests out; NLIST (default "2 8") the rank counts of gpu_test_gpu_colls,
# VARIANTS (';'-separated) the settings forced; every other gpu test runs once (the device
# API's at 4 ranks).
set -uo pipefail
OUT=${OUT:-/tmp/baton-kernels}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1 BATON_TIMEOUT=${BATON_TIMEOUT:-60}
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # NAME ENV... -- CMD...: one test, its log under $OUT, one line on the console
    local name=$1 start=$SECONDS
    shift
    env "$@" >"$OUT/$name.log" 2>&1
    echo "== $name: rc=$? in $((SECONDS - start)) s: $(tail -n 2 "$OUT/$name.log" | tr '\n' ' ')"
}
if [ "${TESTS:-1}" = 1 ]; then
    IFS=';' read -r -a variants <<<"${VARIANTS:-BATON_X=1;BATON_PROTO=LL;BATON_PROTO=LL128;BATON_PROTO=Simple;BATON_ALGO=Ring BATON_PROTO=LL128;BATON_ALGO=TwoShot BATON_PROTO=LL128;BATON_ALGO=Direct BATON_PROTO=LL128}"
    for n in ${NLIST:-2 8}; do
        for v in "${variants[@]}"; do
            run "colls-$n-$(echo "$v" | tr ' =' '_-')" $v BATON_TEST_GPUS="$n" \
                timeout 300 "$B/tests/gpu_test_gpu_colls"
        done
    done
    for t in gpu_test_gpu_parity gpu_test_gpu_random gpu_test_gpu_nonblocking gpu_test_gpu_lazy \
        gpu_test_gpu_suspend; do
        run "$t" BATON_X=1 timeout 300 "$B/tests/$t"
    done
    run gpu_test_gpu_fault -u BATON_TEST_SAME_GPU timeout 300 "$B/tests/gpu_test_gpu_fault" \
        same_gpu absent_one_gpu absent_one_gpu_noboard
    # the rest of the gpu label (ctest -L gpu): one-sided calls, and the device API's kernels
    # (NVIDIA's headers and Baton's; GIN with each rank a host of its own)
    run gpu_test_gpu_rma BATON_TEST_GPUS=2 timeout 120 "$B/tests/gpu_test_gpu_rma"
    for t in lsa lsa_baton gin gin_baton; do
        hosts=() && [ "${t#gin}" != "$t" ] && hosts=(BATON_TEST_HOSTS=4)
        [ -x "$B/tests/gpu_test_devapi_$t" ] &&
            run "gpu_test_devapi_$t" BATON_TEST_GPUS=4 "${hosts[@]}" timeout 120 \
                "$B/tests/gpu_test_devapi_$t"
    done
fi
if [ "$#" -gt 0 ]; then
    for n in ${RANKS_LIST:-2 8}; do
        min=8
        [ "$n" -gt 2 ] && min=32 # a float per rank at least
        RANKS=$n MIN=$min TAG="r$n" BUILD="$B" OUT="$OUT" tests/gpu/lab/sweep_libs.sh "$@" "$B/lib"
    done
fi
