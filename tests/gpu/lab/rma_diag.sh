#!/bin/bash
# Why gpu_test_gpu_rma stops as ranks of one process (it passes as MPS processes): 2 ranks,
# one round, every one-sided step traced (rma_gpu.c's TRACE lines: a put reached by its
# stream, sent, landed, a stream's wait), with the default 8 hardware queues and with 32; under
# gdb when the machine has it (it had none on 2026-12-05), else the test's own watchdog prints
# the main thread's stack at 15 s (RMA_WATCHDOG, tests/harness/crash.c).
#   OUT=/some/dir tests/gpu/lab/rma_diag.sh      -> one log per run under $OUT, a summary
set -u
. tests/gpu/lab/lib.sh
export BATON_TEST_SAME_GPU=1 BATON_RMA_GPU=1 BATON_TIMEOUT=15 RMA_WATCHDOG=15 BATON_DEBUG=TRACE BATON_DEBUG_SUBSYS=P2P
echo "gdb: $(command -v gdb || echo none)" | tee -a "$OUT/summary.txt"
dbg() { # NAME ENV...: the test under gdb (backtraces of every thread at a crash or after 20 s)
    local name=$1
    shift
    if command -v gdb >/dev/null; then
        run "$name" "$@" timeout -s INT 20 gdb -q -batch -ex run -ex "thread apply all bt 12" \
            --args "$T/gpu_test_gpu_rma"
    else
        run "$name" "$@" timeout 20 "$T/gpu_test_gpu_rma"
    fi
}
dbg rma_p2 BATON_TEST_GPUS=2 RMA_ROUNDS=1
dbg rma_p2_conn32 CUDA_DEVICE_MAX_CONNECTIONS=32 BATON_TEST_GPUS=2 RMA_ROUNDS=2
