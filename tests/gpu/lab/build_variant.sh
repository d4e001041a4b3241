#!/bin/bash
# A lab variant of the working tree's library: the same sources built with extra defines for
# the CUDA code (the lab's switches: STEP_LL128_COPY_BATCH, BATON_LL128_PROFILE,
# LL128_LAB_NOWAIT, ...), into build-libs/NAME for sweep_libs.sh, ll128_stages.sh and
# open_lines.sh's EXTRA_LIBS; the build folder is build-var-NAME (kept: a rebuild after a
# change compiles only what changed). From the repository root:
#   tests/gpu/lab/build_variant.sh v8 -DSTEP_LL128_COPY_BATCH=8
#   tests/gpu/lab/build_variant.sh prof -DBATON_LL128_PROFILE
set -euo pipefail
cd "$(dirname "$0")/../../.."
[ $# -ge 2 ] || { echo "usage: build_variant.sh NAME -DDEFINE..."; exit 2; }
name=$1
shift
b=build-var-$name
cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS="$*" >/dev/null
cmake --build "$b" -j "$(nproc)" --target nccl >"$b/build.log" 2>&1 ||
    { echo "build of $name failed: $b/build.log"; exit 1; }
rm -rf "build-libs/$name"
mkdir -p "build-libs/$name"
cp -a "$b"/lib/libnccl.so* "build-libs/$name/"
# no debug sections: what a call carries is bounded
strip --strip-debug "build-libs/$name"/libnccl.so.2.*
echo "build-libs/$name: $*"
