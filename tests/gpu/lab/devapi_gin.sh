#!/bin/bash
# GIN across hosts on one GPU machine (bench/results/devapi-gin-*.md): the device API's GIN
# all-to-all (gpu_test_devapi_gin, built against NVIDIA's headers; _baton: against Baton's;
# _v2: against NVIDIA's 2.30.7, in a lab build with BATON_NVIDIA_DEVAPI_V2_DIR: 2.30's
# descriptors, two contexts, gets and VA signals; _v229: against a 2.29 release's, with
# BATON_NVIDIA_DEVAPI_V229_DIR: 2.29.7's two contexts, VA signals and world barrier) at
# several ranks x hosts layouts, as ranks of one process and as processes under MPS, over
# sockets and OFI, then GIN's latency beside send/recv. Run from the repository root on the
# GPU machine, after tests/gpu/lab/stage.sh build build-gpu here:
#   OUT=/some/dir tests/gpu/lab/devapi_gin.sh      -> $OUT/r.tgz (a log per run, summary.txt)
set -u
B=${BUILD:-build-gpu}
export LD_LIBRARY_PATH=$(realpath "$B")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -d "$B/fabric" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(realpath "$B")/fabric"
export NCCL_NVLS_ENABLE=0 BATON_TIMEOUT=${BATON_TIMEOUT:-60}
. tests/gpu/lab/mps.sh
R=$OUT/r
mkdir -p "$R"
S=$R/summary.txt
T=$B/tests
OFI=(BATON_NET=OFI FI_PROVIDER=tcp)
run() { # name, then env assignments and the command
    local name=$1
    shift
    echo "== $name: $*" >>"$S"
    local t0 t1 rc
    t0=$(date +%s.%N)
    env "$@" >"$R/$name.txt" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "   rc=$rc $(python3 -c "print(round($t1 - $t0, 1))") s | $(grep -E 'exact|ok$|wrong|fail' "$R/$name.txt" | tail -3 | tr '\n' ' ')" >>"$S"
}
nvidia-smi -L >>"$S"
V2=_v2
[ -x "$T/gpu_test_devapi_gin_v2" ] || { echo "== gin_v2: not built" >>"$S"; V2=; }
V229=_v229
[ -x "$T/gpu_test_devapi_gin_v229" ] || { echo "== gin_v229: not built" >>"$S"; V229=; }
for v in "" $V2 $V229; do
    run gin${v}_1p_4h_sock BATON_TEST_GPUS=4 BATON_TEST_HOSTS=4 DEVAPI_ROUNDS=200 timeout 90 "$T/gpu_test_devapi_gin$v"
    run gin${v}_1p_4h_ofi "${OFI[@]}" BATON_TEST_GPUS=4 BATON_TEST_HOSTS=4 timeout 100 "$T/gpu_test_devapi_gin$v"
done
[ -n "$V2" ] && run gin_v2_1p_4x2_sock BATON_TEST_GPUS=8 BATON_TEST_HOSTS=4 DEVAPI_ROUNDS=200 timeout 120 "$T/gpu_test_devapi_gin_v2"
run gin_baton_1p_4h BATON_TEST_GPUS=4 BATON_TEST_HOSTS=4 DEVAPI_ROUNDS=200 timeout 90 "$T/gpu_test_devapi_gin_baton"
mps_start >>"$S" 2>&1
for h in 4 2; do
    run "gin_mps4_${h}h_sock" BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=$h timeout 150 "$T/gpu_test_devapi_gin"
    run "gin_mps4_${h}h_ofi" "${OFI[@]}" BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=$h timeout 150 "$T/gpu_test_devapi_gin"
done
for v in $V2; do
    run "gin${v}_mps4_2h_sock" BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=2 timeout 150 "$T/gpu_test_devapi_gin$v"
    run "gin${v}_mps4_4h_ofi" "${OFI[@]}" BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=4 timeout 150 "$T/gpu_test_devapi_gin$v"
done
run gin_mps8_2h_sock BATON_TEST_MPS=1 BATON_TEST_GPUS=8 BATON_TEST_HOSTS=2 DEVAPI_ROUNDS=300 timeout 150 "$T/gpu_test_devapi_gin"
run gin_baton_mps4_2h BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=2 timeout 150 "$T/gpu_test_devapi_gin_baton"
run lsa_baton_mps4 BATON_TEST_MPS=1 BATON_TEST_GPUS=4 timeout 150 "$T/gpu_test_devapi_lsa_baton"
run lat_mps2_2h_sock BATON_TEST_MPS=1 BATON_TEST_GPUS=2 BATON_TEST_HOSTS=2 DEVAPI_GIN_LAT=1 timeout 120 "$T/gpu_test_devapi_gin"
run lat_mps2_2h_ofi "${OFI[@]}" BATON_TEST_MPS=1 BATON_TEST_GPUS=2 BATON_TEST_HOSTS=2 DEVAPI_GIN_LAT=1 timeout 120 "$T/gpu_test_devapi_gin"
mps_stop >>"$S" 2>&1
run lsa_baton_1p4 BATON_TEST_GPUS=4 timeout 120 "$T/gpu_test_devapi_lsa_baton"
cat "$S"
cd "$OUT" && tar czf r.tgz r && rm -rf r
