#!/bin/bash
# One call of the GPU machine (device time is scarce, a call returns few files): run.sh's
# modes, or "torch:MODE" for tests/gpu/lab/torch/run_torch.sh, in order, each with its output
# under $OUT/<mode>/ and the console in $OUT/<mode>.txt, then everything in one tarball:
#   BUILD=build-gpu OUT=$OUT tests/gpu/lab/session.sh tests done small torch:abort ...
# Environment for the modes (TEST_VARIANTS, SMALL_ROUNDS, ...) passes through; MPS=1 runs
# them all under CUDA MPS (tests/gpu/lab/mps.sh).
set -uo pipefail
OUT=${OUT:-/tmp/baton-session}
mkdir -p "$OUT/logs"
OUT=$(realpath "$OUT")                   # both relative to where it was started
BUILD=$(realpath "${BUILD:-build-gpu}") # (the repository root, as a rule)
cd "$(dirname "$0")/../../.."
export BATON_COMMIT=${BATON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# MPS=1: every mode under CUDA MPS (processes sharing GPU 0), the daemon stopped at the end
if [ "${MPS:-0}" = 1 ]; then
    . tests/gpu/lab/mps.sh
    mps_start || exit 1
    trap mps_stop EXIT
fi
for m in "$@"; do
    name=${m/:/-}
    start=$SECONDS
    echo "==== $m ($(date -u +%T))"
    if [ "${m%%:*}" = torch ]; then
        BUILD=$BUILD OUT="$OUT/logs/$name" tests/gpu/lab/torch/run_torch.sh "${m#torch:}" 2>&1 |
            tee "$OUT/logs/$name.txt"
    else
        BUILD=$BUILD OUT="$OUT/logs/$name" tests/gpu/lab/run.sh "$m" 2>&1 | tee "$OUT/logs/$name.txt"
    fi
    echo "==== $m took $((SECONDS - start)) s"
done
tar -C "$OUT" -czf "$OUT/session.tgz" logs && rm -rf "$OUT/logs"
