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
# the lab's sampling profiler (open_lines.sh profile): the GPU machine has no perf
gcc -O2 -shared -fPIC -o "$dst/bin/sampler.so" tests/gpu/lab/sampler.c
# the lab's launch-cost probe (open_lines.sh launchcost): host time per launch and pointer query
nvcc -O2 -arch=sm_90 tests/gpu/lab/launch_cost.cu -lcuda -o "$dst/bin/launch_cost"
# nccl-tests built against NCCL headers (nccl_tests.sh: a newer release's, build-nt230; or
# NVIDIA's 2.28.9 of the CUDA toolkit, build-nt228), when there
for nt in "${NT_BUILD:-build-nt230}" build-nt228; do
    [ -d "$nt" ] || continue
    mkdir -p "$dst/${nt#build-}"
    cp -a "$nt"/*_perf "$nt"/verifiable "$dst/${nt#build-}/"
done
# Debian's libfabric and what it links (the GPU machine may lack it: OFI then has no
# devices); run.sh puts this folder last on the library path
fab=$(ldconfig -p | awk '/libfabric\.so\.1 / {print $NF; exit}')
if [ -n "$fab" ]; then
    mkdir -p "$dst/fabric"
    cp -L "$fab" "$dst/fabric/"
    ldd "$fab" | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libpthread|libdl|librt)\./ {print $3}' |
        xargs -r cp -L -t "$dst/fabric/"
fi
# the commit it was built from (open_lines.sh names it): the checkout's, marked when it has
# changes (the build may then hold them)
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo '+changes')" >"$dst/COMMIT"
# no debug sections: a call carries 64 MB at most (the symbols stay, for backtraces)
find "$dst" -type f \( -perm -u+x -o -name '*.so*' \) -exec strip --strip-debug {} + 2>/dev/null
du -sh "$dst"
# PACK="build-libs/3452d54 ...": also one xz archive of the staged folder and those folders,
# build-pack/stage.tar.xz (a library packs to about a third), for a call that carries more
# than 64 MB of them: carry build-pack, and there first `tar xJf build-pack/stage.tar.xz`
if [ -n "${PACK:-}" ]; then
    mkdir -p build-pack
    # shellcheck disable=SC2086 # PACK is a list of folders
    tar cf - "$dst" $PACK | xz -T0 -6 >build-pack/stage.tar.xz
    du -sh build-pack/stage.tar.xz
fi
