#!/bin/bash
# Host-memory AllReduce, side by side: Baton vs Open MPI vs Gloo, float sum, 2 ranks on this
# machine, 4 KB .. 16 MB (x4). The three programs make the same measurement (median of
# per-call times; see bench/baton_allreduce.c and bench/anchors/), and run in one invocation,
# alternating, so that the ratios compare like with like on a shared, noisy machine.
#
#   bench/host_vs_mpi_gloo.sh          # as root or with sudo (installs MPI and Gloo)
#
# Steps: install openmpi-bin libopenmpi-dev libgloo-dev (apt-get, skipped when installed);
# build the anchors into $BUILD/anchors; build Baton (make build); run ROUNDS rounds of
# Baton, Open MPI, Gloo; print the table and write it, with date, machine, commit and the
# exact commands, to bench/results/host-allreduce-<date>.md.
#
# Environment (all optional):
#   BUILD=build          Baton build folder (as in the Makefile)
#   NP=2                 ranks
#   MAXBYTES=16777216    largest message
#   ROUNDS=2             rounds; each cell is the lowest median over the rounds
#   TIMEOUT=300          seconds one program may run
#   SKIP_INSTALL=1       do not call apt-get     SKIP_BATON_BUILD=1   do not run make build
#   SKIP_ANCHORS_BUILD=1 run the anchors already in $BUILD/anchors (a machine without mpicc)
#   ONLY="mpi gloo"      run only these columns (baton mpi gloo); the results file is written
#                        only when all three ran and passed their checks
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NP=${NP:-2}
MAXBYTES=${MAXBYTES:-16777216}
ROUNDS=${ROUNDS:-2}
TIMEOUT=${TIMEOUT:-300}
ONLY=${ONLY:-baton mpi gloo}
anchors_out=$BUILD/anchors

log() { echo "host_vs_mpi_gloo: $*" >&2; }
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- 1. packages (Debian 12 names; Gloo: headers in /usr/include/gloo, /usr/lib/libgloo.so)
pkgs=(openmpi-bin libopenmpi-dev libgloo-dev)
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
    missing=()
    for p in "${pkgs[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo=sudo
        log "installing ${missing[*]}"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            "${missing[@]}"
    fi
fi

# ---- 2. build the anchors and Baton
mkdir -p "$anchors_out"
build_mpi="mpicc -O2 -o $anchors_out/mpi_allreduce bench/anchors/mpi_allreduce.c"
build_gloo="g++ -std=c++17 -O2 -o $anchors_out/gloo_allreduce bench/anchors/gloo_allreduce.cc -lgloo -pthread"
build_baton="make build BUILD=$BUILD"
if want mpi && [ "${SKIP_ANCHORS_BUILD:-0}" != 1 ]; then
    log "$build_mpi"
    $build_mpi
fi
if want gloo && [ "${SKIP_ANCHORS_BUILD:-0}" != 1 ]; then
    log "$build_gloo"
    $build_gloo
fi
if want baton && [ "${SKIP_BATON_BUILD:-0}" != 1 ]; then
    log "$build_baton"
    $build_baton
fi

# ---- 3. run, alternating
run_baton="$BUILD/bin/baton-run -n $NP $BUILD/bin/baton-allreduce-bench $MAXBYTES"
run_mpi="mpirun --allow-run-as-root --oversubscribe -np $NP --mca btl self,vader $anchors_out/mpi_allreduce $MAXBYTES"
run_gloo="d=\$(mktemp -d); for r in \$(seq 1 $((NP - 1))); do $anchors_out/gloo_allreduce \$r $NP \$d $MAXBYTES >/dev/null & done; $anchors_out/gloo_allreduce 0 $NP \$d $MAXBYTES; wait; rm -r \$d"

gloo_run() {
    local dir pids=() r rc=0
    dir=$(mktemp -d "${TMPDIR:-/tmp}/gloo-store.XXXXXX")
    for ((r = NP - 1; r >= 1; r--)); do
        timeout "$TIMEOUT" "$anchors_out/gloo_allreduce" "$r" "$NP" "$dir" "$MAXBYTES" \
            >/dev/null &
        pids+=($!)
    done
    timeout "$TIMEOUT" "$anchors_out/gloo_allreduce" 0 "$NP" "$dir" "$MAXBYTES" || rc=$?
    for p in "${pids[@]}"; do
        wait "$p" || rc=$?
    done
    rm -rf "$dir"
    return $rc
}

outdir=$(mktemp -d "${TMPDIR:-/tmp}/host-allreduce.XXXXXX")
declare -A status
for col in baton mpi gloo; do
    status[$col]=skipped
done
for ((round = 1; round <= ROUNDS; round++)); do
    for col in baton mpi gloo; do
        want "$col" || continue
        out="$outdir/$col.$round"
        log "round $round/$ROUNDS: $col"
        rc=0
        case $col in
        baton) timeout "$TIMEOUT" $run_baton >"$out" 2>"$out.err" || rc=$? ;;
        mpi) timeout "$TIMEOUT" $run_mpi >"$out" 2>"$out.err" || rc=$? ;;
        gloo) gloo_run >"$out" 2>"$out.err" || rc=$? ;;
        esac
        if [ $rc -ne 0 ]; then
            log "$col failed (rc=$rc):"
            tail -n 5 "$out.err" >&2 || true
            status[$col]="failed rc=$rc"
        elif grep -q ' False$' "$out"; then
            log "$col: result check failed"
            status[$col]="wrong results"
        elif [ "${status[$col]}" = skipped ]; then
            status[$col]=ok
        fi
        cat "$out"
    done
done

# ---- 4. table: per size, the lowest median over the rounds
# best COL BYTES: the lowest median_us of COL at BYTES over the rounds, or "-".
best() {
    { cat "$outdir/$1".[0-9]* 2>/dev/null || true; } |
        awk -v b="$2" '$1 == b && NF >= 4 { if (m == "" || $2 + 0 < m + 0) m = $2 }
                       END { print (m == "" ? "-" : m) }'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-";
                                     else printf "%.2f", a / b }'
}
table="| bytes | Baton us | Open MPI us | Gloo us | MPI/Baton | Gloo/Baton |
| ---: | ---: | ---: | ---: | ---: | ---: |"
for ((b = 4096; b <= MAXBYTES; b *= 4)); do
    tb=$(best baton $b)
    tm=$(best mpi $b)
    tg=$(best gloo $b)
    table+=$'\n'"| $b | $tb | $tm | $tg | $(ratio "$tm" "$tb") | $(ratio "$tg" "$tb") |"
done
echo
echo "$table"
echo "(median us per call, lowest over $ROUNDS rounds; ratio > 1: Baton is faster)"
echo "status: baton ${status[baton]}, mpi ${status[mpi]}, gloo ${status[gloo]}"

# ---- 5. results file
if [ "${status[baton]}" != ok ] || [ "${status[mpi]}" != ok ] || [ "${status[gloo]}" != ok ]; then
    log "results file not written: every column must run and pass its check (raw output in $outdir)"
    exit 1
fi
day=$(date -u +%Y-%m-%d)
res=bench/results/host-allreduce-$day.md
[ -e "$res" ] && res=bench/results/host-allreduce-$day-$(date -u +%H%M%S).md
mkdir -p bench/results
commit=$(git rev-parse HEAD 2>/dev/null || echo "none (no commit yet)")
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit (with uncommitted changes)"
{
    echo "# Host-memory AllReduce: Baton vs Open MPI vs Gloo, $NP ranks"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1), $(nproc) cores ($(hostname))"
    echo "- commit: $commit"
    echo "- Open MPI: $(mpirun --version 2>/dev/null | head -n 1); Gloo: libgloo-dev $(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null)"
    echo "- float sum, out-of-place; median of per-call times (200 calls up to 1 MB, 20 above);"
    echo "  each cell is the lowest median over $ROUNDS alternating rounds. Ratio > 1: Baton is faster."
    echo
    echo "$table"
    echo
    echo "Commands:"
    echo
    echo '```'
    echo "$build_mpi"
    echo "$build_gloo"
    echo "$build_baton"
    echo "# then $ROUNDS rounds of:"
    echo "$run_baton"
    echo "$run_mpi"
    echo "$run_gloo"
    echo '```'
    echo
    echo "Raw output:"
    for ((round = 1; round <= ROUNDS; round++)); do
        for col in baton mpi gloo; do
            echo
            echo "$col, round $round:"
            echo '```'
            cat "$outdir/$col.$round"
            echo '```'
        done
    done
} >"$res"
log "wrote $res"
rm -rf "$outdir"
