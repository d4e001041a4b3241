#!/bin/bash
# The device API for programs of every release (docs/DEVICE_API.md, "Releases"), on the GPU
# machine: the LSA test built against NVIDIA's 2.28.9 headers, Baton's, and NVIDIA's 2.30.7
# (gpu_test_devapi_lsa_v2: a lab build configured with BATON_NVIDIA_DEVAPI_V2_DIR) at 1, 2, 4
# and 8 ranks of one process and 2 and 4 processes under MPS, each also finding its windows
# through the window table; then nccl-tests built against 2.30.7's headers (nccl_tests.sh,
# carried as $BUILD/nt230) with their device-API kernels (-D 1, -D 2; they refuse -D where the
# library reports less than 2.29: Baton reports 2.30.7), and the same built against 2.28.9's
# headers ($BUILD/nt228, where staged). Run from the repository root
# there, after tests/gpu/lab/stage.sh build build-gpu here:
#   OUT=/some/dir tests/gpu/lab/devapi_v2.sh      -> one log per run under $OUT, a summary
set -u
. tests/gpu/lab/lib.sh
for v in "" _baton _v2; do
    [ -x "$T/gpu_test_devapi_lsa$v" ] || { echo "== lsa$v: not built" | tee -a "$OUT/summary.txt"; continue; }
    for n in 1 2 4 8; do
        run "lsa${v}_1p$n" BATON_TEST_GPUS=$n DEVAPI_ROUNDS=200 timeout 60 "$T/gpu_test_devapi_lsa$v"
    done
done
mps_start >>"$OUT/summary.txt" 2>&1 # not in a pipeline: its exports must stay in this shell
for v in "" _v2; do
    for n in 2 4; do
        run "lsa${v}_mps$n" BATON_TEST_MPS=1 BATON_TEST_GPUS=$n DEVAPI_ROUNDS=200 timeout 60 "$T/gpu_test_devapi_lsa$v"
    done
done
mps_stop >>"$OUT/summary.txt" 2>&1
for nt in "$B/nt230" "$B/nt228"; do
    [ -d "$nt" ] || continue
    tag=$(basename "$nt")
    # nccl-tests built against 2.28's headers refuse -D on a library that reports a later
    # release ("The 2.28 Device API is not compatible with later versions"), NVIDIA's 2.30.7
    # as Baton's: REPORT_VERSION=2.28.9 says the release they were built with
    rep=() && [ "$tag" = nt228 ] && rep=(BATON_REPORT_VERSION=2.28.9)
    for t in all_reduce alltoall; do
        run "${tag}_${t}_R2" timeout 60 "$nt/${t}_perf" -b 8 -e 16M -f 8 -g 1 -c 1 -n 5 -w 2 -R 2
        for d in 1 2; do
            run "${tag}_${t}_D$d" "${rep[@]}" timeout 60 "$nt/${t}_perf" -b 8 -e 16M -f 8 -g 1 -c 1 -n 5 -w 2 -R 2 -D $d
        done
    done
    run "${tag}_all_reduce_D1_unset" timeout 60 "$nt/all_reduce_perf" -b 8 -e 1M -f 8 -g 1 -c 1 -R 2 -D 1
done
