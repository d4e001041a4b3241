#!/bin/bash
# The long soak (issue 8): 10^5 random collectives (collective, dtype, op, size, in/out of
# place) per rank count (2, 3 and 4 ranks), every result checked element by element by
# tests/mp/colls_suite.c's reference: the soak suite of tests/mp/colls.c, which CI runs for
# two minutes (mp/soak).
#   BUILD=build CASES=100000 bench/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CASES=${CASES:-100000}
start=$SECONDS
BT_SOAK_CASES=$CASES "$BUILD/tests/mp_colls" soak
echo "soak: $CASES cases per rank count in $((SECONDS - start)) s"
