#!/bin/bash
# The net-plugin loader against separately built libraries (plugins/CMakeLists.txt): two ranks
# of baton-perf AllReduce over NET (shared memory and P2P off), one case per NCCL_NET_PLUGIN /
# NCCL_NET setting. Each case checks the exit status, the network that carried the bytes
# ("via NET/<name>" in the channel lines), that no element was wrong, and the WARN lines: a
# plugin that cannot be used gets exactly one WARN per process naming it, then the built-in
# networks; NCCL_NET naming an absent network is an error naming it.
#   usage: loader.sh <bin dir> <lib dir>
set -u
bin=$(cd "$1" && pwd)
lib=$(cd "$2" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

# run NAME [VAR=VALUE...]: 2 ranks, log in $out/NAME; returns baton-run's status
run() {
    local name=$1
    shift
    env BATON_SHM_DISABLE=1 BATON_P2P_DISABLE=1 BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET,INIT \
        BATON_TIMEOUT=30 "$@" \
        "$bin/baton-run" -n 2 --timeout 60 \
        "$bin/baton-perf" allreduce -b 8 -e 1M -f 16 -n 2 -w 1 >"$out/$name" 2>&1
}

bad() {
    echo "loader: $1: FAILED ($2)"
    tail -n 12 "$out/$1" >&2
    failed=1
}

# expect_ok NAME NETWORK WARN_COUNT [WARN_TEXT] -- VAR=VALUE...: the run succeeds over
# NET/NETWORK with 0 wrong, and WARN_TEXT occurs on exactly WARN_COUNT WARN lines
expect_ok() {
    local name=$1 network=$2 nwarn=$3 text=${4:-}
    shift 4
    [ "${1:-}" = "--" ] && shift
    if ! run "$name" "$@"; then
        bad "$name" "exit status"
        return
    fi
    grep -q "Out of bounds values : 0 OK" "$out/$name" || { bad "$name" "wrong elements"; return; }
    grep -q "via NET/$network/" "$out/$name" || { bad "$name" "not via NET/$network"; return; }
    # WARN lines: WARN_COUNT with the text, none about anything else (but the plugin's own
    # log calls: FakeFail says why it refuses)
    grep " WARN " "$out/$name" | grep -v "FakeFail: " >"$out/$name.warn"
    local with=0 other
    [ -n "$text" ] && with=$(grep -c -F -- "$text" "$out/$name.warn")
    other=$(($(wc -l <"$out/$name.warn") - with))
    [ "$with" -eq "$nwarn" ] || { bad "$name" "$with WARN lines with '$text', expected $nwarn"; return; }
    [ "$other" -eq 0 ] || { bad "$name" "$other unexpected WARN lines"; return; }
    echo "loader: $name: ok"
}

# expect_fail NAME TEXT -- VAR=VALUE...: every rank fails, none hangs, and TEXT is said
expect_fail() {
    local name=$1 text=$2
    shift 2
    [ "${1:-}" = "--" ] && shift
    if run "$name" "$@"; then
        bad "$name" "succeeded; expected an error"
        return
    fi
    grep -q "terminated after .* s" "$out/$name" && { bad "$name" "timed out"; return; }
    grep -q -F -- "$text" "$out/$name" || { bad "$name" "no '$text'"; return; }
    echo "loader: $name: ok"
}

# a directory with libnccl-net.so (the default name) and libnccl-net-<name>.so links
dir=$out/libs
mkdir -p "$dir"
ln -s "$lib/libnccl-net-baton.so" "$dir/libnccl-net.so"

expect_ok path BatonSocket 0 "" -- NCCL_NET_PLUGIN="$lib/libnccl-net-baton.so"
expect_ok path-named BatonSocket 0 "" -- NCCL_NET_PLUGIN="$lib/libnccl-net-baton.so" \
    NCCL_NET=batonsocket
expect_ok short-name BatonSocket 0 "" -- NCCL_NET_PLUGIN=baton LD_LIBRARY_PATH="$lib"
expect_ok default-name BatonSocket 0 "" -- LD_LIBRARY_PATH="$dir"
expect_ok none Socket 0 "" -- NCCL_NET_PLUGIN=none LD_LIBRARY_PATH="$dir"
expect_ok v6-shim FakeV6 0 "" -- NCCL_NET_PLUGIN="$lib/libnccl-net-fakev6.so"
grep -q "table ncclNetPlugin_v6 (FakeV6)" "$out/v6-shim" || bad v6-shim "v6 table not named"
# libnccl-net-baton.so brings Baton's extensions (blocking on its sockets, zero-copy); the
# fixtures do not
grep -q "Baton's extensions (batonNetExtensions_v1)" "$out/path" || bad path "extensions not found"
grep -q "Baton's extensions" "$out/v6-shim" && bad v6-shim "extensions where none are"
expect_ok list BatonSocket 2 "nosuch" -- NCCL_NET_PLUGIN="nosuch,$lib/libnccl-net-baton.so"
expect_ok missing Socket 2 "does not load" -- NCCL_NET_PLUGIN="$lib/libnccl-net-nosuch.so"
expect_ok init-fails Socket 2 "FakeFail from $lib/libnccl-net-fakefail.so init failed" -- \
    NCCL_NET_PLUGIN="$lib/libnccl-net-fakefail.so"
expect_ok no-device Socket 2 "FakeEmpty from $lib/libnccl-net-fakeempty.so has no device" -- \
    NCCL_NET_PLUGIN="$lib/libnccl-net-fakeempty.so"
expect_ok no-table Socket 2 "exports no ncclNetPlugin_v11..v6 table" -- \
    NCCL_NET_PLUGIN="$lib/libnccl-net-fakenone.so"
# a device that asks for iflush (forceFlush): every flush names a receive that landed, its
# size and its registration, through the FIFO and (NET_ZERO_COPY=1) user buffers
for zc in 0 1; do
    expect_ok flush.$zc FakeFlush 0 "" -- NCCL_NET_PLUGIN="$lib/libnccl-net-fakeflush.so" \
        BATON_NET_ZERO_COPY=$zc
    line=$(grep -h "FakeFlush: [0-9]* flushes" "$out/flush.$zc" | head -n 1)
    if ! echo "$line" | grep -qE "FakeFlush: [1-9][0-9]* flushes, 0 not matching a landed receive, 0 "; then
        bad flush.$zc "flushes: '${line:-none logged}'"
    fi
done
# rails: 4 devices, 4 channels (and send/recv) across two hosts; each connector listens on
# the rail of its channel (c mod 4) and its peer connects on the same rail, CROSS_NIC=0 and
# the default alike (no topology names a NIC for host ranks)
for cn in 0 2; do
    expect_ok rails.$cn FakeRails 0 "" -- NCCL_NET_PLUGIN="$lib/libnccl-net-fakerails.so" \
        BATON_CROSS_NIC=$cn BATON_MIN_NCHANNELS=4 BATON_MAX_NCHANNELS=4
    lines=$(grep -h "FakeRails: listens" "$out/rails.$cn")
    if [ "$(echo "$lines" | grep -c .)" -ne 2 ] ||
        echo "$lines" | grep -qvE "rails 0-3: [1-9][0-9]* [1-9][0-9]* [1-9][0-9]* [1-9][0-9]*; [1-9][0-9]* connects, 0 on another"; then
        bad rails.$cn "rails: '${lines:-none logged}'"
    fi
    for c in 0 1 2 3; do
        grep -qE "Channel 0$c/.*via NET/FakeRails/$c" "$out/rails.$cn" ||
            bad rails.$cn "channel $c not on rail $c"
    done
done
# GPUDirect RDMA's fixture (built where CUDA is) on host memory: its devices report
# NCCL_PTR_CUDA, yet host communicators register and move host memory only (GPU memory is
# for GPU connectors: docs/NETWORK.md), every buffer of its registration's kind; GPUDirect
# RDMA asked everywhere (GDR_ENABLE=1, NET_GDR_LEVEL=SYS) changes nothing for them
if [ -f "$lib/libnccl-net-fakecuda.so" ]; then
    expect_ok cuda-host FakeCuda 0 "" -- NCCL_NET_PLUGIN="$lib/libnccl-net-fakecuda.so" BATON_GDR_ENABLE=1 \
        BATON_NET_GDR_LEVEL=SYS
    line=$(grep -h "FakeCuda: [0-9]* GPU" "$out/cuda-host" | head -n 1)
    if ! echo "$line" | grep -qE "FakeCuda: 0 GPU and [1-9][0-9]* host registrations; 0 sends from GPU memory, 0 receives into it, 0 of them flushed; [1-9][0-9]* sends and [1-9][0-9]* receives of host memory, [1-9][0-9]* flushed; 0 buffers"; then
        bad cuda-host "counts: '${line:-none logged}'"
    fi
else
    echo "loader: cuda-host: skipped (no libnccl-net-fakecuda.so: a build without CUDA)"
fi
expect_fail asked-absent "asks for network 'Bogus', which is not available" -- NCCL_NET=Bogus
expect_fail asked-failing "asks for network 'FakeFail', which is not available" -- \
    NCCL_NET_PLUGIN="$lib/libnccl-net-fakefail.so" NCCL_NET=FakeFail

[ $failed -eq 0 ] || { echo "loader: FAIL"; exit 1; }
echo "loader: every case ok"
