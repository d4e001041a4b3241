#!/bin/bash
# The figures the tuner's shared-GPU fit needs (issue 37; src/tune/tuner.c, shared_gpu, and
# tests/unit/test_tuner.c's measured tables): one library's COLLS (allreduce) MIN (64K)..MAX
# (64M) at each of RANKS_LIST (8 4 2) ranks of one process on GPU 0, ROUNDS (2) rounds, each
# configuration in turn: the LL128 ring, the Simple ring, the LL ring, the one-shot LL128 and
# LL, and the tuner's own choice. FIFO: LL128_BUFFSIZE for every run (unset: the library's
# default). LIB: the library folder (default the build's).
#   OUT=$OUT LIB=build-libs/ll128-v3 FIFO=4194304 tests/gpu/lab/ll128_fit.sh
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
LIB=$(realpath "${LIB:-$B/lib}")
OUT=${OUT:-/tmp/baton-ll128-fit}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1 LD_LIBRARY_PATH=$LIB BATON_TIMEOUT=60
[ -n "${FIFO:-}" ] && export BATON_LL128_BUFFSIZE=$FIFO
configs=("ll128:BATON_ALGO=Ring BATON_PROTO=LL128" "simple:BATON_ALGO=Ring BATON_PROTO=Simple"
    "ll:BATON_ALGO=Ring BATON_PROTO=LL" "d128:BATON_ALGO=Direct BATON_PROTO=LL128"
    "dll:BATON_ALGO=Direct BATON_PROTO=LL" "tuner:")
for r in $(seq "${ROUNDS:-2}"); do
    for n in ${RANKS_LIST:-8 4 2}; do
        for c in ${COLLS:-allreduce}; do
            for cfg in ${CONFIGS:-ll128 simple ll d128 dll tuner}; do
                vars=
                for k in "${configs[@]}"; do [ "${k%%:*}" = "$cfg" ] && vars=${k#*:}; done
                # shellcheck disable=SC2086 # the configuration's variables, word-split
                env $vars timeout 300 "$B/bin/baton-one-process" --same-gpu --ranks "$n" \
                    "$c" "${MIN:-65536}" "${MAX:-67108864}" "${ITERS:-20}" "${REPS:-3}" \
                    >"$OUT/$c-$n-$cfg-r$r.txt" 2>&1
                echo "== round $r, $n ranks, $c, $cfg: rc=$?"
                grep -E '^ +[0-9]' "$OUT/$c-$n-$cfg-r$r.txt"
            done
        done
    done
done
