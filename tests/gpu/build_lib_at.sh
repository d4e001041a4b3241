#!/bin/bash
# Build libnccl.so.2 of an older commit into build-libs/<commit>/ (for tests/gpu/compare_libs.sh),
# from a git worktree under /tmp; the kernels compile for a few minutes per commit:
#   tests/gpu/build_lib_at.sh 0487fdb ddca903 c06c716 913c5ee
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
for c in "$@"; do
    d=/tmp/baton-at-$c
    [ -d "$d" ] || git worktree add -q "$d" "$c"
    cmake -S "$d" -B "$d/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$d/build" -j "$(nproc)" --target nccl >"$d/build.log" 2>&1 ||
        { echo "build of $c failed: $d/build.log"; exit 1; }
    mkdir -p "$root/build-libs/$c"
    cp -a "$d/build/lib/." "$root/build-libs/$c/"
    echo "build-libs/$c"
done
