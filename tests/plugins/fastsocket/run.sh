#!/bin/bash
# google/nccl-fastsocket, a network plugin nobody here wrote (an ncclNet_v6_t over TCP), built
# from its source against nccl_net.h (made from Baton's own plugin interface), then every
# collective over it on host memory, shared memory and P2P off: mp_colls's colls_net suite
# (2, 3 and 4 ranks, every collective, op and size class) RUNS times. Its connect returns at
# once and finishes in a thread of its own (docs/NETWORK.md: the order Baton keeps).
#   usage: run.sh <nccl-fastsocket source dir> <baton build dir> [runs (20)]
#   e.g.   run.sh ~/src/nccl-fastsocket build 20
set -u
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
runs=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lib=$out/libnccl-net-fastsocket.so
# the plugin's own files, with our nccl_net.h first on the path
g++ -O2 -fPIC -shared -std=c++17 -Wno-deprecated-declarations -I"$here" -I"$root/include" \
    -I"$root/src" "$src/net_fastsocket.cc" "$src/utilities.cc" -o "$lib" -lpthread ||
    { echo "fastsocket: the plugin did not build"; exit 1; }
nm -D "$lib" | grep -q " D ncclNetPlugin_v6" || { echo "fastsocket: no ncclNetPlugin_v6"; exit 1; }
export NCCL_NET_PLUGIN=$lib NCCL_NET=FastSocket NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
# once with the channel lines: the bytes went through the plugin
BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET "$build/tests/mp_colls" colls_net >"$out/via" 2>&1
grep -q "via NET/FastSocket/" "$out/via" || { echo "fastsocket: not via NET/FastSocket"; tail "$out/via"; exit 1; }
pass=0
for i in $(seq "$runs"); do
    if "$build/tests/mp_colls" colls_net >"$out/run" 2>&1; then
        pass=$((pass + 1))
    else
        echo "fastsocket: run $i failed:"
        grep -m 5 "FAIL\|WARN\|failed" "$out/run"
    fi
    grep "nranks=[0-9]*: " "$out/run" | sed "s/^/run $i: /"
done
echo "fastsocket: $pass of $runs runs passed (every collective at 2, 3 and 4 ranks each)"
[ "$pass" -eq "$runs" ]
