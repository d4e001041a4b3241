#!/bin/bash
# Build nccl-tests against the headers of an NCCL release Baton does not ship (here: 2.30.7),
# linked to Baton's libnccl.so.2, for the GPU machine (built here: nvcc is the same).
#   tests/gpu/lab/nccl_tests.sh <NVIDIA/nccl git dir> <nccl-tests source dir> <Baton build> <out>
#       [tag, default v2.30.7-1]
# The headers come from the tag's src/nccl.h.in (the version placeholders filled in),
# src/include/nccl_device* and the DOCA GPUNetIO device headers NCCL installs beside them;
# nothing of them is kept in the repository. <out> gets the *_perf binaries and
# libverifiable.so (DSO=1: 17 MB instead of 66), sm_90 only; stage.sh carries them.
set -euo pipefail
git_dir=$1 src=$2 build=$(realpath "$3") out=$4 tag=${5:-v2.30.7-1}
hdr=$(mktemp -d)
trap 'rm -rf "$hdr"' EXIT
ver=${tag#v}
ver=${ver%-*} # 2.30.7
IFS=. read -r major minor patch <<<"$ver"
code=$((major * 10000 + minor * 100 + patch))
mkdir -p "$hdr/include" "$hdr/lib" "$hdr/cudalib"
git --git-dir="$git_dir" show "$tag:src/nccl.h.in" |
    sed -e "s/\${nccl:Major}/$major/; s/\${nccl:Minor}/$minor/; s/\${nccl:Patch}/$patch/" \
        -e "s/\${nccl:Suffix}//; s/\${nccl:Version}/$code/" >"$hdr/include/nccl.h"
for f in $(git --git-dir="$git_dir" ls-tree -r --name-only "$tag" src/include | grep nccl_device); do
    mkdir -p "$(dirname "$hdr/include/${f#src/include/}")"
    git --git-dir="$git_dir" show "$tag:$f" >"$hdr/include/${f#src/include/}"
done
doca=src/transport/net_ib/gdaki/doca-gpunetio/include
dst=$hdr/include/nccl_device/gin/gdaki/doca_gpunetio
for f in $(git --git-dir="$git_dir" ls-tree -r --name-only "$tag" "$doca" | grep -v /host/); do
    mkdir -p "$(dirname "$dst/${f#$doca/}")"
    git --git-dir="$git_dir" show "$tag:$f" >"$dst/${f#$doca/}"
done
# Baton's library to link with; CUDA's runtime alone from its directory (NVIDIA's libnccl
# there would be found first otherwise)
ln -s "$build/lib/libnccl.so.2" "$hdr/lib/libnccl.so"
ln -s /usr/local/cuda/lib64/libcudart* "$hdr/cudalib/"
rm -rf "$out"
make -C "$src/src" -j "$(nproc)" DSO=1 BUILDDIR="$(realpath -m "$out")" NCCL_HOME="$hdr" \
    CUDA_LIB="$hdr/cudalib" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >/dev/null
find "$out" -name '*.o' -delete
du -sh "$out"
