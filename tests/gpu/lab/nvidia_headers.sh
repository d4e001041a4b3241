#!/bin/bash
# NCCL's public headers of a release Baton does not ship (nccl.h from the tag's
# src/nccl.h.in, the version placeholders filled in; src/include/nccl_device*; the DOCA
# GPUNetIO device headers NCCL installs beside them), for reference clients built here:
#   tests/gpu/lab/nvidia_headers.sh <NVIDIA/nccl git dir> <out dir> [tag, default v2.30.7-1]
# <out>/include gets them; nothing of them is kept in the repository.
set -euo pipefail
git_dir=$1 out=$2 tag=${3:-v2.30.7-1}
ver=${tag#v}
ver=${ver%-*} # 2.30.7
IFS=. read -r major minor patch <<<"$ver"
code=$((major * 10000 + minor * 100 + patch))
mkdir -p "$out/include"
git --git-dir="$git_dir" show "$tag:src/nccl.h.in" |
    sed -e "s/\${nccl:Major}/$major/; s/\${nccl:Minor}/$minor/; s/\${nccl:Patch}/$patch/" \
        -e "s/\${nccl:Suffix}//; s/\${nccl:Version}/$code/" >"$out/include/nccl.h"
for f in $(git --git-dir="$git_dir" ls-tree -r --name-only "$tag" src/include | grep nccl_device); do
    mkdir -p "$(dirname "$out/include/${f#src/include/}")"
    git --git-dir="$git_dir" show "$tag:$f" >"$out/include/${f#src/include/}"
done
doca=src/transport/net_ib/gdaki/doca-gpunetio/include
dst=$out/include/nccl_device/gin/gdaki/doca_gpunetio
for f in $(git --git-dir="$git_dir" ls-tree -r --name-only "$tag" "$doca" | grep -v /host/); do
    mkdir -p "$(dirname "$dst/${f#$doca/}")"
    git --git-dir="$git_dir" show "$tag:$f" >"$dst/${f#$doca/}"
done
