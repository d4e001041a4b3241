#!/bin/sh
# unit/layers: src/ keeps the layering of src/LAYERS (tools/check-layers.sh), and the check
# itself catches a planted upward include (a copy of src/ with one added), so a check that
# passes everything cannot go unnoticed.
# usage: check-layers-test.sh <repository root>
root=${1:?usage: check-layers-test.sh <repository root>}
check="$root/tools/check-layers.sh"
"$check" "$root/src" || { echo "FAIL: src/ breaks its layering (above)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/src" "$tmp/src"
printf '#include "core/comm.h"\n' >> "$tmp/src/transport/shm.c"
if out=$("$check" "$tmp/src"); then
    echo "FAIL: a planted include of core/ in transport/shm.c was not caught"
    exit 1
fi
echo "$out" | grep -q 'transport/shm.c:.*"core/comm.h".*above it' || {
    echo "FAIL: the planted include was reported as: $out"
    exit 1
}
echo "layers ok; the planted upward include was caught: $out"
