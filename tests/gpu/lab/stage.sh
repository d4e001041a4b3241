#!/bin/bash
# Copy what the GPU machine runs (binaries, the library, the gpu tests) out of a build into
# a small folder to carry there (the whole build folder may exceed what a call carries):
#   tests/gpu/lab/stage.sh build build-gpu  ->  then on the GPU machine: BUILD=build-gpu tests/gpu/lab/run.sh
set -euo pipefail
src=${1:-build}
dst=${2:-build-gpu}
rm -rf "$dst"
mkdir -p "$dst/bin" "$dst/lib" "$dst/tests"
cp -a "$src"/bin/. "$dst/bin/"
rm -f "$dst/bin/baton-topo" # the kernels again (internal library), and not run there
cp -a "$src"/lib/. "$dst/lib/"
cp -a "$src"/tests/gpu_test_* "$dst/tests/"
# nccl-tests built against a newer NCCL's headers (nccl_tests.sh), when there
if [ -d "${NT_BUILD:-build-nt230}" ]; then
    mkdir -p "$dst/nt230"
    cp -a "${NT_BUILD:-build-nt230}"/*_perf "${NT_BUILD:-build-nt230}"/verifiable "$dst/nt230/"
fi
du -sh "$dst"
