#!/bin/bash
# Regression hunting on the GPU machine: baton-perf over 2 ranks with several builds of the
# library side by side (alternating, ROUNDS rounds), NVIDIA's NCCL beside. Each build is a
# folder with libnccl.so.2 (build-libs/<commit>, made on the development machine from a
# worktree of that commit: tests/gpu/lab/build_lib_at.sh); the binaries are this build's (the API is NCCL's, the kernels
# live in the library). From the repository root, build-gpu and build-libs carried:
#   OUT=$OUT tests/gpu/lab/compare_libs.sh [COLL:SIZE ...]   (default allreduce:128M allgather:128M sendrecv:128M)
# On a one-GPU machine, SAME_GPU=1 runs baton-one-process --same-gpu instead (two ranks of one process on GPU 0,
# allreduce and allgather only; NVIDIA's NCCL refuses that, so it is left out): what it compares
# is the kernels' own work, not the link.
set -uo pipefail
OUT=${OUT:-/tmp/baton-compare}
mkdir -p "$OUT"
OUT=$(realpath "$OUT") # before the cd: relative to where the script was started
cd "$(dirname "$0")/../../.."
B=$(realpath "${BUILD:-build-gpu}")
shopt -s nullglob
export NCCL_NVLS_ENABLE=0
NCCL_LIB=${NCCL_LIB:-$(python3 -c "import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],'lib'))" 2>/dev/null)}
SAME_GPU=${SAME_GPU:-0}
cases=("$@")
[ ${#cases[@]} -eq 0 ] && [ "$SAME_GPU" = 1 ] && cases=(allreduce:128M allgather:128M allreduce:1M)
[ ${#cases[@]} -eq 0 ] && cases=(allreduce:128M allgather:128M sendrecv:128M)
libs=("$B/lib")
for d in build-libs/*/; do libs+=("$(realpath "$d")"); done
[ -n "$NCCL_LIB" ] && [ "$SAME_GPU" != 1 ] && libs+=("$NCCL_LIB")
one() { # LIB COLL SIZE: one result line
    if [ "$SAME_GPU" = 1 ]; then
        BATON_TEST_SAME_GPU=1 LD_LIBRARY_PATH="$1" timeout 120 "$B/bin/baton-one-process" \
            --same-gpu "$2" "$(numfmt --from=iec "$3")" "$(numfmt --from=iec "$3")" "${ITERS:-20}" \
            2>&1 | tee -a "$OUT/compare.log" | grep -E '^ +[0-9]+ ' | tail -n 1
    else
        LD_LIBRARY_PATH="$1" timeout 120 "$B/bin/baton-run" -n 2 "$B/bin/baton-perf" \
            "$2" -b "$3" -e "$3" -c 0 -n 20 -w 5 2>&1 | tee -a "$OUT/compare.log" |
            grep -E '^ +[0-9]+ ' | tail -n 1
    fi
}
for r in $(seq "${ROUNDS:-2}"); do
    for l in "${libs[@]}"; do
        for c in "${cases[@]}"; do
            coll=${c%%:*} size=${c#*:}
            line=$(one "$l" "$coll" "$size")
            [ -n "$line" ] || line="(no result: see compare.log)"
            printf 'round %s %-28s %-14s %s\n' "$r" "$(basename "$(dirname "$l")")/$(basename "$l")" \
                "$coll" "$line"
        done
    done
done | tee "$OUT/compare.txt"
