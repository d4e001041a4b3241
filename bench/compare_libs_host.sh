#!/bin/bash
# Builds of the library side by side on host memory (regression checks: a commit against an
# earlier one): baton-perf over NRANKS ranks (baton-run), each library in turn, ROUNDS rounds
# alternating, so that whatever else the machine does falls on both alike. The binaries are
# this build's (baton-perf uses the public API only; LD_LIBRARY_PATH picks the library); the
# libraries' order turns every other round. Per size: each library's median out-of-place time
# over the rounds, and the reference's median over it (ratio >= 1: as fast as the reference),
# and the paired ratio (bench/median_table.awk).
#   bench/compare_libs_host.sh REF_LIB_DIR LIB_DIR...
# BUILD (build), COLL (allreduce), NRANKS (2), MIN (4K), MAX (16M), ITERS (20), ROUNDS (7),
# OUT (a folder for the raw runs and the table, default /tmp/baton-compare-host). STAT=best:
# each library's fastest run over the rounds instead of the median (on a busy 2-core machine
# a slow stretch only adds time; the paired ratio stays the median of same-round ratios).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=$(realpath "${BUILD:-build}")
OUT=${OUT:-/tmp/baton-compare-host}
mkdir -p "$OUT"
libs=()
for l in "$@"; do libs+=("$(realpath "$l")"); done
[ ${#libs[@]} -ge 1 ] || { echo "usage: compare_libs_host.sh REF_LIB_DIR LIB_DIR..."; exit 2; }
COLL=${COLL:-allreduce}
for r in $(seq "${ROUNDS:-7}"); do
    # the order turns every other round, so that no library always runs first
    order=("${!libs[@]}")
    if [ $((r % 2)) = 0 ]; then
        order=()
        for ((i = ${#libs[@]} - 1; i >= 0; i--)); do order+=("$i"); done
    fi
    for i in "${order[@]}"; do
        f="$OUT/$COLL-lib$i-round$r.txt"
        LD_LIBRARY_PATH="${libs[$i]}" timeout 300 "$B/bin/baton-run" -n "${NRANKS:-2}" \
            "$B/bin/baton-perf" "$COLL" --host -b "${MIN:-4K}" -e "${MAX:-16M}" -f 2 -c 0 \
            -n "${ITERS:-20}" -w 5 >"$f" 2>&1
        echo "round $r lib$i: rc=$? $(grep -c '^ *[0-9]' "$f") sizes"
    done
done
{
    agg=median
    [ "${STAT:-median}" = best ] && agg=min
    echo "# $COLL, ${NRANKS:-2} ranks, host memory: $agg out-of-place us over ${ROUNDS:-7} rounds"
    echo "# (ratio: lib0's time / this one's; >= 1 is as fast)"
    for i in "${!libs[@]}"; do echo "# lib$i = ${libs[$i]}"; done
    for i in "${!libs[@]}"; do
        for r in $(seq "${ROUNDS:-7}"); do
            awk -v l="$i" -v r="$r" '/^ +[0-9]+ +[0-9]+ / {print l, $1, $6, r}' \
                "$OUT/$COLL-lib$i-round$r.txt"
        done
    done | awk -v agg="$agg" -f bench/median_table.awk
} | tee "$OUT/summary.txt"
