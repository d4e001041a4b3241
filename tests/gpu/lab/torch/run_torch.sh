#!/bin/bash
# Issue 6 on the GPU machine: PyTorch on Baton (LD_PRELOAD) and on NVIDIA's NCCL, side by side.
#   BUILD=build-gpu OUT=/some/dir tests/gpu/lab/torch/run_torch.sh [collectives|ddp|fsdp2|abort|bench|same_gpu|symm|all]
# (from the repository root). Prints a verdict line per check: "ok" or "FAIL".
# Each script checks /proc/self/maps for the library it should run on (BATON_EXPECT). Writes
# logs and the comparison to $OUT (tar them: the device tool returns few files).
set -uo pipefail
BUILD=$(realpath "${BUILD:-build}") # relative to where it is started (the repository root)
OUT=${OUT:-/tmp/baton-torch}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")"
what=${1:-all}
export OUT NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BATON_LIB=$(realpath "$BUILD/lib/libnccl.so.2")
NCCL_DIR=$(python3 -c "import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],'lib'))")
port=$((29500 + RANDOM % 1000))

# run LIB SCRIPT [ARGS]: torchrun over 2 GPUs with LIB = baton | nccl; prints rc and seconds
run() {
    local lib=$1 script=$2
    shift 2
    local pre
    pre=$([ "$lib" = baton ] && echo "$BATON_LIB" || echo "$NCCL_DIR/libnccl.so.2")
    port=$((port + 1))
    local start=$SECONDS
    env LD_PRELOAD="$pre" BATON_EXPECT=$lib TAG=$lib timeout 300 \
        torchrun --nproc_per_node "${NPROC:-2}" --master_port $port "$script" "$@" \
        >"$OUT/$(basename "$script" .py)-$lib.log" 2>&1
    local rc=$?
    echo "$(basename "$script" .py) $lib: rc=$rc in $((SECONDS - start)) s: $(grep -E '^test_|FAIL' \
        "$OUT/$(basename "$script" .py)-$lib.log" | head -n 3 | tr '\n' ' ')"
    return $rc
}

if [ "$what" = collectives ] || [ "$what" = all ]; then
    run baton test_collectives.py
    run nccl test_collectives.py
fi

# the losses of the two runs, step by step: equal (2 ranks: sums of two are order-free)
compare() {
    local name=$1
    python3 - "$OUT/$name-baton.txt" "$OUT/$name-nccl.txt" <<'PY'
import os, sys
missing = [p for p in sys.argv[1:] if not os.path.exists(p)]
if missing:
    print(f"FAIL compare: no losses from {missing} (a run failed)")
    sys.exit(0)
a = dict(l.split() for l in open(sys.argv[1]))
b = dict(l.split() for l in open(sys.argv[2]))
steps = [k for k in a if k.isdigit()]
# 2 ranks: every sum is of two terms, order-free: exactly equal. More ranks (NPROC > 2): the
# libraries' reduction orders differ, float sums round differently: LOSS_RTOL (relative).
rtol = float(os.environ.get("LOSS_RTOL", "0"))
def same(x, y):
    if y is None:
        return False
    if rtol == 0:
        return x == y
    fx, fy = float(x), float(y)
    return abs(fx - fy) <= rtol * max(abs(fx), abs(fy))
diff = [k for k in steps if not same(a[k], b.get(k))]
print(("FAIL " if diff else "ok ") + f"{sys.argv[1].rsplit('/',1)[-1]}: {len(steps)} steps, {len(diff)} differ"
      + (f" (first: step {diff[0]}: {a[diff[0]]} vs {b.get(diff[0])})" if diff
         else " (equal)" if rtol == 0 else f" (within {rtol:g})")
      + (f"; steps/s baton {a['steps_per_s']} nccl {b['steps_per_s']}" if 'steps_per_s' in a else ""))
PY
}

if [ "$what" = ddp ] || [ "$what" = all ]; then
    # DDP_ROUNDS alternating pairs; then steps/s, the median over the rounds of each
    # library's run (each run's figure is already the median of its timed chunks)
    rounds=${DDP_ROUNDS:-3}
    for r in $(seq "$rounds"); do
        run baton test_ddp.py && cp "$OUT/ddp-baton.txt" "$OUT/ddp-baton-r$r.txt"
        run nccl test_ddp.py && cp "$OUT/ddp-nccl.txt" "$OUT/ddp-nccl-r$r.txt"
        compare ddp
    done
    python3 - "$OUT" "$rounds" <<'PY'
import os, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def rates(lib):
    v = []
    for r in range(1, n + 1):
        p = os.path.join(out, f"ddp-{lib}-r{r}.txt")
        if os.path.exists(p):
            v += [float(l.split()[1]) for l in open(p) if l.startswith("steps_per_s ")]
    return v
b, c = rates("baton"), rates("nccl")
if len(b) < n or len(c) < n:
    print(f"FAIL ddp steps/s: {len(b)} Baton and {len(c)} NCCL runs of {n} finished")
else:
    mb, mc = statistics.median(b), statistics.median(c)
    print(("ok" if mb >= mc else "FAIL") + f" ddp steps/s, median of {n} runs: baton {mb:.1f} "
          f"({', '.join(f'{x:.1f}' for x in b)}) nccl {mc:.1f} ({', '.join(f'{x:.1f}' for x in c)})"
          " (want baton >= nccl)")
PY
fi

if [ "$what" = fsdp2 ] || [ "$what" = all ]; then
    run baton test_fsdp2.py
    run nccl test_fsdp2.py
    compare fsdp2
fi

if [ "$what" = abort ] || [ "$what" = all ]; then
    # watchdog: the watchdog's abort releases rank 0 (test_abort.py says ok) and the run ends
    # within the 10 s timeout + 15 s; torch's own waits before a teardown made short (a 60 s
    # sleep by default), no core file. wait: work.wait(timeout) raises in rank 0 and the
    # stream drains.
    for lib in baton nccl; do
        start=$SECONDS
        (ulimit -c 0
            export TORCH_NCCL_ASYNC_ERROR_HANDLING=1 TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=100 \
                TORCH_NCCL_DUMP_ON_TIMEOUT=0 TORCH_NCCL_TRACE_BUFFER_SIZE=0 \
                TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN=0
            run $lib test_abort.py watchdog)
        rc=$?
        took=$((SECONDS - start))
        seen=$(grep -c "Watchdog caught collective operation timeout" "$OUT/test_abort-$lib.log")
        cp "$OUT/test_abort-$lib.log" "$OUT/test_abort-watchdog-$lib.log"
        grep -q "test_abort: ok" "$OUT/test_abort-$lib.log" && [ $took -le 25 ] &&
            [ "$seen" -gt 0 ] && v=ok || v=FAIL
        echo "$v abort watchdog $lib: torchrun ended with rc=$rc after $took s, watchdog timeout lines: $seen (want test_abort ok, <= 25 s, > 0): $(grep -h '^test_abort' "$OUT/test_abort-$lib.log" | head -n 1)"
        start=$SECONDS
        run $lib test_abort.py wait
        rc=$?
        took=$((SECONDS - start))
        cp "$OUT/test_abort-$lib.log" "$OUT/test_abort-wait-$lib.log"
        grep -q "test_abort: ok" "$OUT/test_abort-$lib.log" && [ $took -le 45 ] && v=ok || v=FAIL
        echo "$v abort wait $lib: rc=$rc after $took s (rank 1 sleeps 25 s): $(grep -h '^test_abort' "$OUT/test_abort-$lib.log" | head -n 1)"
    done
fi

if [ "$what" = symm ]; then
    # symmetric memory on the NCCL backend (the device API): world 1 on both libraries, then
    # every rank on cuda:0 (processes under CUDA MPS) at SYMM_WORLDS on Baton
    for lib in baton nccl; do
        NPROC=1 run $lib test_symm_mem.py
        mv "$OUT/test_symm_mem-$lib.log" "$OUT/test_symm_mem-$lib-w1.log"
    done
    for w in ${SYMM_WORLDS:-2 4}; do
        NPROC=$w SAME_GPU=1 run baton test_symm_mem.py
        mv "$OUT/test_symm_mem-baton.log" "$OUT/test_symm_mem-baton-w$w.log"
    done
fi

if [ "$what" = same_gpu ]; then
    # every rank on cuda:0 (SAME_GPU=1), processes sharing the GPU under CUDA MPS (session.sh
    # MPS=1), at each world size of SAME_GPU_WORLDS; Baton alone (NVIDIA's NCCL refuses two
    # ranks on one GPU): every collective exact, DDP against a single-process replica (loss
    # rounding: more than 2 ranks sum in another order), FSDP2, abort
    for w in ${SAME_GPU_WORLDS:-2 4}; do
        export NPROC=$w SAME_GPU=1
        run baton test_collectives.py
        REPLICA=1 run baton test_ddp.py
        run baton test_fsdp2.py
        start=$SECONDS
        (ulimit -c 0
            export TORCH_NCCL_ASYNC_ERROR_HANDLING=1 TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=100 \
                TORCH_NCCL_DUMP_ON_TIMEOUT=0 TORCH_NCCL_TRACE_BUFFER_SIZE=0 \
                TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN=0
            run baton test_abort.py watchdog)
        echo "abort watchdog, world $w on cuda:0: $((SECONDS - start)) s: $(grep -h '^test_abort' "$OUT/test_abort-baton.log" | head -n 1)"
        for f in test_collectives test_ddp test_fsdp2 test_abort; do
            cp "$OUT/$f-baton.log" "$OUT/$f-same-gpu-w$w.log" 2>/dev/null
        done
        unset NPROC SAME_GPU
    done
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
    # all_reduce median time per size, both libraries alternating (bench/anchors/torch_bench.py, the shared anchor program)
    for r in 1 2; do
        for lib in baton nccl; do
            run $lib ../../../../bench/anchors/torch_bench.py nccl || true
            cp "$OUT/torch_bench-$lib.log" "$OUT/torch_bench-$lib-r$r.log"
        done
    done
fi
