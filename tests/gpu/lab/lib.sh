# Sourced by the GPU machine's lab scripts (devapi_v2.sh, rma_gpu.sh): the build's library on
# the path, the machine's settings, MPS, and run(): one run, its log under $OUT, one line in
# $OUT/summary.txt.
B=${BUILD:-build-gpu}
T=$B/tests
export LD_LIBRARY_PATH=$(realpath "$B")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -d "$B/fabric" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(realpath "$B")/fabric"
export NCCL_NVLS_ENABLE=0 BATON_TIMEOUT=${BATON_TIMEOUT:-60} BATON_DEBUG=${BATON_DEBUG:-WARN} # a refusal says why
. tests/gpu/lab/mps.sh
mkdir -p "$OUT"
run() { # NAME ENV... CMD...
    local name=$1 start=$SECONDS
    shift
    env "$@" >"$OUT/$name.log" 2>&1
    echo "== $name: rc=$? in $((SECONDS - start)) s: $(grep -E 'exact|ok$|ok \(|wrong|fail|rror' "$OUT/$name.log" | tail -n 2 | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
}
nvidia-smi -L | tee -a "$OUT/summary.txt"
