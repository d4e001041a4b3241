#!/bin/bash
# GPUDirect RDMA's contract on the GPU machine (docs/NETWORK.md): gpu_test_gpu_colls across
# hosts on one GPU (BATON_TEST_HOSTS: 2 x 2 and 4 x 2 hosts x ranks, ranks of one process)
# over the FakeCuda fixture plugin (tests/plugins/fake_net.c: its devices report
# NCCL_PTR_CUDA and forceFlush; it stages GPU buffers by cudaMemcpy and checks every buffer's
# kind), with GDR_ENABLE=1 and NET_GDR_LEVEL=SYS (both sides' Simple slots in GPU memory),
# NET_GDR_READ=0 (the receiving side's only), LOC (none) and SYS without GDR_ENABLE (none);
# at 2 x 2 also devices that report NCCL_PTR_DMABUF alone (FAKE_NET_PTR=dmabuf: registered by
# dma-buf where the GPU exports them, else host memory) and both kinds (dma-buf, else CUDA).
# Each run's summary line says ok when its collectives passed and the plugin's counts are
# what the mode promises (check(), below). From the repository root, after tests/gpu/lab/stage.sh:
#   OUT=/some/dir tests/gpu/lab/gdr.sh      -> one log per run under $OUT, a summary
set -u
. tests/gpu/lab/lib.sh
P=$(realpath "$B")/lib/libnccl-net-fakecuda.so
[ -f "$P" ] || { echo "gdr: no $P (a build without CUDA?)" | tee -a "$OUT/summary.txt"; exit 1; }
# shellcheck disable=SC2054 # NET,INIT is one value
NET=(NCCL_NET_PLUGIN="$P" NCCL_NET=FakeCuda BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET,INIT)
# check NAME MODE: the run's exit, and the plugin's counts (its last finalize line) for MODE:
# SYS both sides' slots in GPU memory, every GPU receive flushed; READ0 the receiving side's
# only; LOC and OFF (GDR_ENABLE unset) none; DMABUF, where the GPU exports dma-bufs (the
# library says so: "exports dma-bufs: yes"), SYS's counts with every GPU registration by
# dma-buf, else none in GPU memory; BOTH SYS's counts, by dma-buf where the GPU exports them,
# else as CUDA pointers; never a buffer of another kind
check() {
    local name=$1 mode=$2 line
    line=$(grep -h 'FakeCuda: [0-9]' "$OUT/$name.log" | tail -n 1 | sed 's/.*FakeCuda/FakeCuda/')
    read -r greg _ gsend grecv gflush bad < <(echo "$line" | sed -E 's/FakeCuda: ([0-9]+) GPU and ([0-9]+) host registrations; ([0-9]+) sends from GPU memory, ([0-9]+) receives into it, ([0-9]+) of them flushed; .*; ([0-9]+) buffers.*/\1 \2 \3 \4 \5 \6/')
    local db ok=1 gpu_ok=1 exports
    db=$(echo "$line" | sed -nE 's/.*; ([0-9]+) of the GPU registrations by dma-buf.*/\1/p')
    exports=$(grep -m 1 -oE 'exports dma-bufs: (yes|no)' "$OUT/$name.log" | awk '{print $3}')
    [ -n "$bad" ] && [ "$bad" = 0 ] || ok=0
    [ "${gsend:-0}" -gt 0 ] && [ "${grecv:-0}" -gt 0 ] && [ "$gflush" = "$grecv" ] || gpu_ok=0
    case $mode in
    SYS) [ $gpu_ok = 1 ] || ok=0 ;;
    DMABUF)
        if [ "$exports" = yes ]; then
            [ $gpu_ok = 1 ] && [ "${db:-0}" = "$greg" ] || ok=0
        else
            [ "$exports" = no ] && [ "${greg:-1}" = 0 ] || ok=0
        fi
        ;;
    BOTH)
        [ $gpu_ok = 1 ] || ok=0
        if [ "$exports" = yes ]; then [ "${db:-0}" = "$greg" ] || ok=0; else [ "${db:-1}" = 0 ] || ok=0; fi
        ;;
    READ0) [ "${gsend:-1}" = 0 ] && [ "${grecv:-0}" -gt 0 ] || ok=0 ;;
    *) [ "${greg:-1}" = 0 ] || ok=0 ;;
    esac
    grep -q "rc=0" <(tail -n 1 "$OUT/summary.txt") || ok=0
    echo "   $mode: $([ $ok = 1 ] && echo ok || echo FAILED): $(grep -c 'Simple slots in GPU memory' "$OUT/$name.log") connectors with GPU slots; dma-bufs: ${exports:-not said}; ${line:-no FakeCuda line}" |
        tee -a "$OUT/summary.txt"
}
# GDR_RUNS: the runs, RANKS/HOSTS/MODE each (default: every mode at 2 x 2, the first four at 4 x 2)
runs=${GDR_RUNS:-}
if [ -z "$runs" ]; then
    for mode in SYS READ0 LOC OFF DMABUF BOTH; do runs="$runs 4/2/$mode"; done
    for mode in SYS READ0 LOC OFF; do runs="$runs 8/4/$mode"; done
fi
for r in $runs; do
    IFS=/ read -r n h mode <<<"$r"
    name=gdr_${n}r_${h}h_$mode
    case $mode in
    SYS) set -- BATON_GDR_ENABLE=1 BATON_NET_GDR_LEVEL=SYS ;;
    READ0) set -- BATON_GDR_ENABLE=1 BATON_NET_GDR_LEVEL=SYS BATON_NET_GDR_READ=0 ;;
    LOC) set -- BATON_GDR_ENABLE=1 ;;
    OFF) set -- BATON_NET_GDR_LEVEL=SYS ;;
    DMABUF) set -- BATON_GDR_ENABLE=1 BATON_NET_GDR_LEVEL=SYS FAKE_NET_PTR=dmabuf ;;
    BOTH) set -- BATON_GDR_ENABLE=1 BATON_NET_GDR_LEVEL=SYS FAKE_NET_PTR=both ;;
    esac
    run "$name" "${NET[@]}" "$@" BATON_TEST_SAME_GPU=1 BATON_TEST_GPUS="$n" BATON_TEST_HOSTS="$h" \
        timeout 300 "$T/gpu_test_gpu_colls"
    check "$name" "$mode"
done
