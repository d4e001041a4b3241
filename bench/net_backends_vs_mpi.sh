#!/bin/bash
# AllReduce (float sum) over every network path, 2 ranks on this machine over loopback, one
# run, side by side (issue 21's measurement):
#   baton-ofi     Baton's libfabric backend, tcp;ofi_rxm (NET=OFI)
#   baton-socket  Baton's socket backend (built in)
#   baton-plugin  the socket backend loaded as libnccl-net-baton.so (NCCL_NET_PLUGIN)
#   mpi-ofi       Open MPI over the same libfabric provider (pml cm, mtl ofi)
#   mpi-tcp       Open MPI's TCP transport (btl tcp,self)
# Baton with shared memory and P2P off, so every byte crosses the network backend; Baton runs
# bench/baton_allreduce.c and Open MPI bench/anchors/mpi_allreduce.c, the same measurement
# (median of 200 timed calls, 20 above 1 MB, each after a barrier). The five alternate, in
# an order that rotates, ROUNDS rounds; each cell is the lowest median over the rounds.
# Writes bench/results/net-backends-<date>.md (date, machine, commit, commands).
# Needs openmpi-bin/libopenmpi-dev and libfabric (.ci/install-deps) and `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
MAXBYTES=${MAXBYTES:-67108864}
mkdir -p "$BUILD/anchors"
mpicc -O2 -o "$BUILD/anchors/mpi_allreduce" bench/anchors/mpi_allreduce.c
plugin=$(cd "$BUILD/lib" && pwd)/libnccl-net-baton.so
[ -f "$plugin" ] || { echo "no $plugin: make build first" >&2; exit 1; }

baton="env BATON_SHM_DISABLE=1 BATON_P2P_DISABLE=1"
bench="$BUILD/bin/baton-run -n 2 $BUILD/bin/baton-allreduce-bench $MAXBYTES"
mpi="mpirun --allow-run-as-root --oversubscribe -np 2"
declare -A cmd=(
    [baton-ofi]="$baton BATON_NET=OFI FI_PROVIDER=tcp;ofi_rxm $bench"
    [baton-socket]="$baton BATON_NET=Socket $bench"
    [baton-plugin]="$baton NCCL_NET_PLUGIN=$plugin NCCL_NET=BatonSocket $bench"
    [mpi-ofi]="env FI_PROVIDER=tcp;ofi_rxm $mpi --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp;ofi_rxm $BUILD/anchors/mpi_allreduce $MAXBYTES"
    [mpi-tcp]="$mpi --mca pml ob1 --mca btl tcp,self $BUILD/anchors/mpi_allreduce $MAXBYTES"
)
order=(baton-ofi baton-socket baton-plugin mpi-ofi mpi-tcp)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$ROUNDS"); do
    # the order rotates each round, so no configuration always follows the same one
    n=${#order[@]}
    for i in $(seq 0 $((n - 1))); do
        k=${order[$(((i + r) % n))]}
        # shellcheck disable=SC2086 # the commands are word lists
        ${cmd[$k]} >"$tmp/$k.$r" 2>"$tmp/$k.$r.err" || {
            echo "$k failed in round $r:" >&2
            tail -5 "$tmp/$k.$r.err" >&2
            exit 1
        }
        grep -q False "$tmp/$k.$r" && { echo "$k: wrong result in round $r" >&2; exit 1; }
    done
done
# lowest median per size over the rounds: "bytes us"
best() { cat "$tmp"/$1.[0-9]* | awk '$1 ~ /^[0-9]+$/ { if (!($1 in m) || $2 < m[$1]) m[$1] = $2 } END { for (k in m) print k, m[k] }' | sort -n; }
for k in "${order[@]}"; do best $k >"$tmp/best.$k"; done
table=$(join "$tmp/best.baton-ofi" "$tmp/best.baton-socket" | join - "$tmp/best.baton-plugin" |
    join - "$tmp/best.mpi-ofi" | join - "$tmp/best.mpi-tcp" |
    awk '{ printf "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n", $1, $2, $3, $4, $5, $6, $2 / $5, $4 / $3 }')

out=bench/results/net-backends-$(date -u +%F).md
{
    echo "# AllReduce over every network path: Baton OFI / sockets / plugin vs Open MPI, 2 ranks"
    echo
    echo "- date: $(date -u '+%F %H:%M UTC')"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, loopback"
    echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' (+ uncommitted src changes)')"
    echo "- Open MPI: $(mpirun --version 2>&1 | head -1); libfabric: $(fi_info --version 2>/dev/null | head -1 || echo '?')"
    echo "- command: ROUNDS=$ROUNDS bench/net_backends_vs_mpi.sh"
    for k in "${order[@]}"; do echo "  - $k: \`${cmd[$k]}\`"; done
    echo
    echo "Median us per call (float sum), the lowest of $ROUNDS alternating rounds."
    echo "ofi/mpi-ofi: Baton-OFI's time over Open MPI-ofi's (target <= 1.0 at 64 KB, 1 MB, 64 MB);"
    echo "plugin/socket: the plugin path's time over the built-in socket backend's (target <= 1.10)."
    echo
    echo "| bytes | baton-ofi | baton-socket | baton-plugin | mpi-ofi | mpi-tcp | ofi/mpi-ofi | plugin/socket |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    echo "$table"
} >"$out"
cat "$out"
