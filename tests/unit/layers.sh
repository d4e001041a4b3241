#!/bin/sh
# unit/layers: src/ keeps the layering of src/LAYERS (tools/check-layers.sh), and the check
# itself catches planted upward includes (each in its own copy of src/), so a check that
# passes everything cannot go unnoticed.
# usage: layers.sh <repository root>
root=${1:?usage: layers.sh <repository root>}
check="$root/tools/check-layers.sh"
"$check" "$root/src" || { echo "FAIL: src/ breaks its layering (above)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# plant FILE HEADER: a copy of src/ where FILE (relative to src/) also includes HEADER, from a
# layer below HEADER's; the check must fail on it, naming the file, the header and "above it".
plant() {
    rm -rf "$tmp/src"
    cp -r "$root/src" "$tmp/src"
    printf '#include "%s"\n' "$2" >> "$tmp/src/$1"
    if out=$("$check" "$tmp/src"); then
        echo "FAIL: a planted include of $2 in $1 was not caught"
        exit 1
    fi
    echo "$out" | grep -q "^$1:.*\"$2\".*above it" || {
        echo "FAIL: the planted include of $2 in $1 was reported as: $out"
        exit 1
    }
    echo "layers ok; the planted upward include was caught: $out"
}
plant transport/shm.c core/comm.h
# A network backend sits below transport (it also builds alone, as a net plugin).
plant net/socket/socket.c transport/transport.h
