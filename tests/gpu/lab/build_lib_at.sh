#!/bin/bash
# Build libnccl.so.2 of an older commit into build-libs/<commit>/ (for tests/gpu/lab/compare_libs.sh),
# from a git worktree under /tmp; the kernels compile for a few minutes per commit:
#   tests/gpu/lab/build_lib_at.sh 0487fdb ddca903 c06c716 913c5ee
# Commits from before TEST_SAME_GPU get one line changed so that ranks of one process may share
# a GPU (as TEST_SAME_GPU=1 allows now): baton-same-gpu then compares builds on a one-GPU
# machine (compare_libs.sh SAME_GPU=1). Nothing else differs from the commit.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$(pwd)
for c in "$@"; do
    d=/tmp/baton-at-$c
    [ -d "$d" ] || git worktree add -q "$d" "$c"
    if ! grep -q test_same_gpu "$d/src/util/param_list.h"; then
        sed -i 's/\(strcmp(all\[r\].bus, mine->bus) == 0 && all\[r\].host_hash == mine->host_hash\)) {/\1 \&\& all[r].pid != mine->pid) {/' \
            "$d/src/transport/cuda/p2p.c"
        grep -q 'all\[r\].pid != mine->pid) {' "$d/src/transport/cuda/p2p.c" ||
            { echo "$c: the same-GPU line was not found in p2p.c"; exit 1; }
    fi
    cmake -S "$d" -B "$d/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$d/build" -j "$(nproc)" --target nccl >"$d/build.log" 2>&1 ||
        { echo "build of $c failed: $d/build.log"; exit 1; }
    mkdir -p "$root/build-libs/$c"
    cp -a "$d/build/lib/." "$root/build-libs/$c/"
    echo "build-libs/$c"
done
