#!/bin/bash
# Where two libraries' times differ over some sizes: the plan each picks there (the TUNING
# trace: algorithm, protocol, channels, chunk), then both timed with each protocol in PROTOS
# forced (sweep_libs.sh, alternating), so a difference of choice and one of kernel separate.
#   OUT=$OUT tests/gpu/lab/plan_diff.sh REF_LIB_DIR LIB_DIR
# RANKS (2), COLL (allreduce), MIN (64K), MAX (2M), PROTOS ("LL LL128"), ROUNDS (3).
set -uo pipefail
OUT=${OUT:-/tmp/baton-plan-diff}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")/../../.." || exit 1
B=$(realpath "${BUILD:-build-gpu}")
export NCCL_NVLS_ENABLE=0 BATON_TEST_SAME_GPU=1
for l in "$@"; do
    echo "== plans of $l (calls: plan)"
    LD_LIBRARY_PATH=$(realpath "$l") BATON_DEBUG=TRACE BATON_DEBUG_SUBSYS=TUNING timeout 60 \
        "$B/bin/baton-one-process" --same-gpu --ranks "${RANKS:-2}" "${COLL:-allreduce}" \
        "$(numfmt --from=iec "${MIN:-64K}")" "$(numfmt --from=iec "${MAX:-2M}")" 2 1 2>&1 |
        grep -o 'coll [0-9]* count .*' | sort -t' ' -k6,6n | uniq -c
done
for p in ${PROTOS:-LL LL128}; do
    BATON_PROTO=$p RANKS=${RANKS:-2} COLLS=${COLL:-allreduce} MIN=${MIN:-64K} MAX=${MAX:-2M} \
        ROUNDS=${ROUNDS:-3} TAG="proto-$p" OUT="$OUT" BUILD="$B" tests/gpu/lab/sweep_libs.sh "$@" |
        grep -v '^round'
done
