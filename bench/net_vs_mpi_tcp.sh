#!/bin/bash
# AllReduce over the network path, 2 ranks on this machine over loopback TCP:
#   1. Baton with shared memory off (every byte through the CPU proxy and the socket
#      backend) vs Open MPI's TCP transport (--mca btl tcp,self), same measurement
#      (bench/baton_allreduce.c vs bench/anchors/mpi_allreduce.c), alternating, ROUNDS rounds,
#      each cell the lowest median;
#   2. Baton's socket helper configurations (SOCKET_NTHREADS x NSOCKS_PERTHREAD = 0x1, 1x1,
#      2x2) at 4 KB, 512 KB and 64 MB (baton-perf P50), REPEATS runs each: median and spread.
# Writes bench/results/net-allreduce-<date>.md with date, machine, commit and commands.
# Needs openmpi-bin/libopenmpi-dev (bench/host_vs_mpi_gloo.sh installs them) and `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
REPEATS=${REPEATS:-3}
MAXBYTES=${MAXBYTES:-67108864}
mkdir -p "$BUILD/anchors"
mpicc -O2 -o "$BUILD/anchors/mpi_allreduce" bench/anchors/mpi_allreduce.c
run_baton="env BATON_SHM_DISABLE=1 $BUILD/bin/baton-run -n 2 $BUILD/bin/baton-allreduce-bench $MAXBYTES"
run_mpi="mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self $BUILD/anchors/mpi_allreduce $MAXBYTES"
tmp=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
    $run_baton >"$tmp/baton.$r"
    $run_mpi >"$tmp/mpi.$r"
done
# lowest median per size over the rounds
best() { cat "$tmp"/$1.* | awk '$1 ~ /^[0-9]+$/ { if (!($1 in m) || $2 < m[$1]) m[$1] = $2 } END { for (k in m) print k, m[k] }' | sort -n; }
best baton >"$tmp/b"
best mpi >"$tmp/m"
table=$(join "$tmp/b" "$tmp/m" | awk '{ printf "| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", $1, $2, $3, $1/$2/1e3, $1/$3/1e3, $3/$2 }')

cfgs="0x1 1x1 2x2"
cfgtable=""
for c in $cfgs; do
    t=${c%x*}; k=${c#*x}
    for r in $(seq 1 "$REPEATS"); do
        env BATON_SHM_DISABLE=1 BATON_SOCKET_NTHREADS=$t BATON_NSOCKS_PERTHREAD=$k \
            "$BUILD/bin/baton-run" -n 2 "$BUILD/bin/baton-perf" allreduce -b 4K -e 64M -f 128 \
            -n 20 -w 3 -p | awk '$1 ~ /^[0-9]+$/ { print $1, $10 }' >"$tmp/cfg.$c.$r"
    done
    for size in 4096 524288 67108864; do
        vals=$(cat "$tmp"/cfg.$c.* | awk -v s=$size '$1 == s { print $2 }' | sort -g | tr '\n' ' ')
        set -- $vals
        n=$#
        med=$(echo $vals | awk '{ print $(int((NF + 1) / 2)) }')
        cfgtable+="| $c | $size | $med | ${1} .. ${!n} |"$'\n'
    done
done

out=bench/results/net-allreduce-$(date -u +%F).md
{
    echo "# AllReduce over loopback TCP: Baton NET vs Open MPI tcp, 2 ranks"
    echo
    echo "- date: $(date -u '+%F %H:%M UTC')"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
    echo "- commit: $(git rev-parse --short HEAD)"
    echo "- Open MPI: $(mpirun --version 2>&1 | head -1)"
    echo
    echo "## Baton (SHM off) vs Open MPI (btl tcp,self): median us per call, lowest of $ROUNDS rounds"
    echo
    echo "| bytes | Baton us | Open MPI us | Baton algbw GB/s | MPI algbw GB/s | MPI/Baton |"
    echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
    echo "$table"
    echo
    echo "## Baton socket helper configurations (baton-perf P50 us, $REPEATS runs: median, min .. max)"
    echo
    echo "| threads x sockets | bytes | median us | spread us |"
    echo "| --- | ---: | ---: | --- |"
    echo -n "$cfgtable"
    echo
    echo "Commands: \`$run_baton\`, \`$run_mpi\`, and per configuration"
    echo "\`BATON_SHM_DISABLE=1 BATON_SOCKET_NTHREADS=t BATON_NSOCKS_PERTHREAD=k $BUILD/bin/baton-run -n 2 $BUILD/bin/baton-perf allreduce -b 4K -e 64M -f 128 -n 20 -w 3 -p\`."
} >"$out"
cat "$out"
rm -rf "$tmp"
