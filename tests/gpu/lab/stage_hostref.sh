#!/bin/bash
# Stage the host-memory references (Open MPI 4.1 and Gloo, as Debian packages them, and the
# anchor programs built against them) for a machine that cannot install packages (the GPU
# machine): their files at their own paths under $dst/hostref/root, the anchors under
# $dst/anchors. hostref.sh there copies the files into / without replacing any file that is
# there already, then runs bench/host_vs_mpi_gloo.sh at 2, 4 and 8 ranks.
#   bench/host_vs_mpi_gloo.sh        # once: installs the packages, builds build/anchors
#   tests/gpu/lab/stage.sh build build-gpu && tests/gpu/lab/stage_hostref.sh build build-gpu
set -euo pipefail
src=${1:-build}
dst=${2:-build-gpu}
pkgs=(openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
    libevent-pthreads-2.1-7 libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200)
[ -x "$src/anchors/mpi_allreduce" ] && [ -x "$src/anchors/gloo_allreduce" ] || {
    echo "stage_hostref: no anchors in $src/anchors (bench/host_vs_mpi_gloo.sh builds them)" >&2
    exit 1
}
rm -rf "$dst/hostref" "$dst/anchors"
mkdir -p "$dst/hostref/root" "$dst/anchors"
cp -a "$src"/anchors/mpi_allreduce "$src"/anchors/gloo_allreduce "$dst/anchors/"
for p in "${pkgs[@]}"; do
    dpkg -L "$p" | grep -v -E '^/usr/share/(doc|man|lintian)/' | while read -r f; do
        if [ -L "$f" ] || [ -f "$f" ]; then
            mkdir -p "$dst/hostref/root$(dirname "$f")"
            cp -a "$f" "$dst/hostref/root$f"
        fi
    done
done
# the alternatives' links Debian makes at install time (mpirun -> orterun)
mkdir -p "$dst/hostref/root/usr/bin"
for b in mpirun mpiexec; do
    ln -sf orterun "$dst/hostref/root/usr/bin/$b"
done
find "$dst/hostref" -type f -name '*.so*' -exec strip --strip-debug {} + 2>/dev/null || true
du -sh "$dst/hostref" "$dst/anchors"
