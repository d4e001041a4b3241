#!/bin/bash
# Build nccl-tests against the headers of an NCCL release Baton does not ship (here: 2.30.7),
# linked to Baton's libnccl.so.2, for the GPU machine (built here: nvcc is the same).
#   tests/gpu/lab/nccl_tests.sh <NVIDIA/nccl git dir> <nccl-tests source dir> <Baton build> <out>
#       [tag, default v2.30.7-1; "toolkit": the CUDA toolkit's own 2.28.9 headers, which carry
#       the DOCA headers their GIN includes (the v2.28.9-1 tree does not)]
# The headers: nvidia_headers.sh (none kept in the repository). <out> gets the *_perf binaries and
# libverifiable.so (DSO=1: 17 MB instead of 66), sm_90 only; stage.sh carries them.
set -euo pipefail
git_dir=$1 src=$2 build=$(realpath "$3") out=$4 tag=${5:-v2.30.7-1}
hdr=$(mktemp -d)
trap 'rm -rf "$hdr"' EXIT
if [ "$tag" = toolkit ]; then
    mkdir -p "$hdr/include"
    cp -r /usr/local/cuda/include/nccl.h /usr/local/cuda/include/nccl_device.h \
        /usr/local/cuda/include/nccl_device "$hdr/include/"
else
    "$(dirname "$0")/nvidia_headers.sh" "$git_dir" "$hdr" "$tag"
fi
mkdir -p "$hdr/lib" "$hdr/cudalib"
# Baton's library to link with; CUDA's runtime alone from its directory (NVIDIA's libnccl
# there would be found first otherwise)
ln -s "$build/lib/libnccl.so.2" "$hdr/lib/libnccl.so"
ln -s /usr/local/cuda/lib64/libcudart* "$hdr/cudalib/"
rm -rf "$out"
make -C "$src/src" -j "$(nproc)" DSO=1 BUILDDIR="$(realpath -m "$out")" NCCL_HOME="$hdr" \
    CUDA_LIB="$hdr/cudalib" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >/dev/null
find "$out" -name '*.o' -delete
du -sh "$out"
