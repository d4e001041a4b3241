#!/bin/bash
# GPUDirect RDMA's contract on the GPU machine (docs/NETWORK.md): gpu_test_gpu_colls across
# hosts on one GPU (BATON_TEST_HOSTS: 2 x 2 and 4 x 2 hosts x ranks, ranks of one process)
# over the FakeCuda fixture plugin (tests/plugins/fake_net.c: its devices report
# NCCL_PTR_CUDA and forceFlush; it stages GPU buffers by cudaMemcpy and checks every buffer's
# kind), with NET_GDR_LEVEL=SYS (both sides' Simple slots in GPU memory), NET_GDR_READ=0 (the
# receiving side's only) and the default (LOC: host memory, the baseline). Each run's log
# keeps the plugin's counts (FakeCuda: ... registrations, sends from GPU memory, receives into
# it, flushed, buffers of another kind) and Baton's "Simple slots in GPU memory" lines; the
# summary has their totals. From the repository root, after tests/gpu/lab/stage.sh:
#   OUT=/some/dir tests/gpu/lab/gdr.sh      -> one log per run under $OUT, a summary
set -u
. tests/gpu/lab/lib.sh
P=$(realpath "$B")/lib/libnccl-net-fakecuda.so
[ -f "$P" ] || { echo "gdr: no $P (a build without CUDA?)" | tee -a "$OUT/summary.txt"; exit 1; }
# shellcheck disable=SC2054 # NET,INIT is one value
NET=(NCCL_NET_PLUGIN="$P" NCCL_NET=FakeCuda BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET,INIT)
counts() { # NAME: the plugin's and Baton's lines of a run
    echo "   $(grep -c 'Simple slots in GPU memory' "$OUT/$1.log") connectors with GPU slots; $(grep -h 'FakeCuda: [0-9]' "$OUT/$1.log" | head -n 1 | sed 's/.*FakeCuda/FakeCuda/')" |
        tee -a "$OUT/summary.txt"
}
for layout in "4 2" "8 4"; do
    read -r n h <<<"$layout"
    for mode in SYS READ0 LOC; do
        name=gdr_${n}r_${h}h_$mode
        case $mode in
        SYS) set -- BATON_NET_GDR_LEVEL=SYS ;;
        READ0) set -- BATON_NET_GDR_LEVEL=SYS BATON_NET_GDR_READ=0 ;;
        LOC) set -- ;;
        esac
        run "$name" "${NET[@]}" "$@" BATON_TEST_SAME_GPU=1 BATON_TEST_GPUS="$n" BATON_TEST_HOSTS="$h" \
            timeout 300 "$T/gpu_test_gpu_colls"
        counts "$name"
    done
done
