#!/bin/bash
# Proportional ring blocks against equal blocks on a ring with one link at half speed
# (issue 7). Host memory, 3 ranks (every ring of 3 uses the slow link, so the ring order
# cannot avoid it); INJECT_LINK_BW caps every link at CAP MB/s and the 0 <-> 1 link (both
# directions) at CAP/2; TOPO_PROBE=1 measures the links at init and plans the rings; the
# runs alternate RING_SPLIT=1 (blocks in proportion to the links) and RING_SPLIT=0 (equal).
#   bench/ring_split.sh [build dir] [rounds] [CAP MB/s]
# Prints each run's out-of-place time per size, then the medians and their ratio.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
CAP=${3:-1000}
export BATON_TOPO_PROBE=1 BATON_ALGO=Ring
export BATON_INJECT_LINK_BW="*>*:$CAP,0>1:$((CAP / 2)),1>0:$((CAP / 2))"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)," \
    "$(nproc) CPUs, INJECT_LINK_BW=$BATON_INJECT_LINK_BW"
for r in $(seq "$ROUNDS"); do
    for split in 1 0; do
        BATON_RING_SPLIT=$split "$BUILD/bin/baton-run" -n 3 "$BUILD/bin/baton-perf" allreduce \
            -b 4M -e 64M -f 4 -c 1 -n 3 -w 1 >"$out/$r.$split" 2>&1 ||
            { cat "$out/$r.$split"; exit 1; }
        grep -q "Out of bounds values : 0 OK" "$out/$r.$split" ||
            { cat "$out/$r.$split"; echo "wrong results"; exit 1; }
        echo "round $r RING_SPLIT=$split: $(awk '/^ +[0-9]+ /{printf "%s B %s us; ", $1, $6}' "$out/$r.$split")"
    done
done
echo
echo "| bytes | proportional (median us) | equal (median us) | proportional / equal |"
echo "| ---: | ---: | ---: | ---: |"
for size in $(awk '/^ +[0-9]+ /{print $1}' "$out/1.1"); do
    med() { for r in $(seq "$ROUNDS"); do awk -v s="$size" '$1 == s {print $6}' "$out/$r.$1"; done |
        sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
    p=$(med 1)
    e=$(med 0)
    echo "| $size | $p | $e | $(awk -v p="$p" -v e="$e" 'BEGIN {printf "%.2f", p / e}') |"
done
