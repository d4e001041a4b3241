#!/bin/bash
# Builds of the library side by side on one GPU, over a whole size range: baton-one-process
# --same-gpu (two ranks of one process on GPU 0: the kernels' own work, and the host's
# enqueue) for each collective, each build in turn, ROUNDS rounds alternating. The first
# library is the reference: the summary gives, per size, each build's median time over the
# rounds and its ratio of the reference's speed (reference time / its time: >= 1 is as fast).
# From the repository root, with the builds' lib folders as arguments:
#   OUT=$OUT tests/gpu/lab/sweep_libs.sh REF_LIB_DIR LIB_DIR...   (binaries: $BUILD/bin, default build-gpu)
# COLLS (default "allreduce allgather"), MIN (8) and MAX (64M) bytes, ITERS (20) calls timed
# together REPS (3) times inside one run (the run's figure is their median), ROUNDS (3),
# RANKS (2: the ranks of one process sharing GPU 0), TAG (a word in the files' names).
# PER_SIZE=1: a run per size, the libraries alternating at each size of a round (their runs
# then follow each other within a second, so the summary's "paired" ratio, the median over
# rounds of the two runs' ratio in the same round, is less moved by a slow stretch of a noisy
# machine). PIN: CPUs to run the program on (taskset -c PIN). STAT=best: each run's figure is
# its fastest of the REPS rounds, and the summary takes each library's fastest run (a busy
# machine only adds time: where one thread's enqueue bounds the call, as at 8 ranks on one GPU
# at small sizes, the best of many rounds is what the code costs; the medians swing by more
# than the libraries differ).
set -uo pipefail
OUT=${OUT:-/tmp/baton-sweep}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1
# LIB_DIR:VAR=VAL runs that library with VAR=VAL set (the same library twice, one setting
# apart: build-gpu/lib build-gpu/lib:BATON_LAUNCH_EVENT=0)
libs=() envs=()
for l in "$@"; do
    e=
    [[ $l == *:*=* ]] && e=${l#*:} && l=${l%%:*}
    libs+=("$(realpath "$l")") envs+=("$e")
done
[ ${#libs[@]} -ge 1 ] || { echo "usage: sweep_libs.sh REF_LIB_DIR LIB_DIR..."; exit 2; }
MIN=$(numfmt --from=iec "${MIN:-8}")
MAX=$(numfmt --from=iec "${MAX:-64M}")
pin=() && [ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
col=2 agg=median what=median
[ "${STAT:-median}" = best ] && col=9 agg=min what="best (fastest round of the fastest run)"
one_run() { # LIB_INDEX COLL MIN MAX FILE: append the run's table to FILE
    # shellcheck disable=SC2086 # the library's VAR=VAL, if any
    env ${envs[$1]} LD_LIBRARY_PATH="${libs[$1]}" timeout 300 "${pin[@]}" "$B/bin/baton-one-process" \
        --same-gpu --ranks "${RANKS:-2}" "$2" "$3" "$4" "${ITERS:-20}" "${REPS:-3}" >>"$5" 2>&1
}
sizes=("$MIN")
if [ "${PER_SIZE:-0}" = 1 ]; then
    sizes=()
    for ((s = MIN; s <= MAX; s *= 2)); do sizes+=("$s"); done
fi
for r in $(seq "${ROUNDS:-3}"); do
    for c in ${COLLS:-allreduce allgather}; do
        for i in "${!libs[@]}"; do
            : >"$OUT/sweep${TAG:+-$TAG}-$c-lib$i-round$r.txt"
        done
        for s in "${sizes[@]}"; do
            for i in "${!libs[@]}"; do
                f="$OUT/sweep${TAG:+-$TAG}-$c-lib$i-round$r.txt"
                if [ "${PER_SIZE:-0}" = 1 ]; then
                    one_run "$i" "$c" "$s" "$s" "$f"
                else
                    one_run "$i" "$c" "$MIN" "$MAX" "$f"
                fi
            done
        done
        for i in "${!libs[@]}"; do
            f="$OUT/sweep${TAG:+-$TAG}-$c-lib$i-round$r.txt"
            echo "round $r lib$i (${libs[$i]}) $c: $(grep -c '^ ' "$f") sizes," \
                "$(grep -c '^# wrong: 0' "$f") runs with 0 wrong"
        done
    done
done
# per collective and size: each library's median (over rounds) out-of-place time, and the
# reference's time over it
for c in ${COLLS:-allreduce allgather}; do
    echo "== $c, ${RANKS:-2} ranks: $what out-of-place us over ${ROUNDS:-3} rounds (ratio: lib0's time / this one's)"
    for i in "${!libs[@]}"; do echo "lib$i = ${libs[$i]}${envs[$i]:+ (${envs[$i]})}"; done
    for i in "${!libs[@]}"; do
        for r in $(seq "${ROUNDS:-3}"); do
            awk -v l="$i" -v r="$r" -v col="$col" '/^ +[0-9]/ {print l, $1, $col, r}' \
                "$OUT/sweep${TAG:+-$TAG}-$c-lib$i-round$r.txt"
        done
    done | awk -v agg="$agg" -f bench/median_table.awk
done | tee "$OUT/sweep${TAG:+-$TAG}-summary.txt"
