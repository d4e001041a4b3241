#!/bin/bash
# One-sided calls on GPU memory (core/rma_gpu.h) on the GPU machine: gpu_test_gpu_rma as 3 and
# 8 ranks of one process, as 4 and 8 processes under MPS, as 2 x 2 and 4 x 1 hosts (processes
# under MPS, BATON_TEST_HOSTS) over sockets and OFI. Ranks of one process need hardware
# queues for their streams (the test sets CUDA_DEVICE_MAX_CONNECTIONS=32; at 8 queues, or
# one, 8 ranks of one thread hang by design: docs/DEVICE_API.md).
# Run from the repository root there, after
# tests/gpu/lab/stage.sh build build-gpu here:
#   OUT=/some/dir tests/gpu/lab/rma_gpu.sh      -> one log per run under $OUT, a summary
set -u
. tests/gpu/lab/lib.sh
export BATON_TEST_SAME_GPU=1 # ranks of one process share GPU 0
OFI=(BATON_NET=OFI FI_PROVIDER=tcp)
run rma_1p2 BATON_TEST_GPUS=2 timeout 60 "$T/gpu_test_gpu_rma"
run rma_1p3 BATON_TEST_GPUS=3 timeout 60 "$T/gpu_test_gpu_rma"
run rma_1p8 BATON_TEST_GPUS=8 RMA_ROUNDS=20 timeout 60 "$T/gpu_test_gpu_rma"
mps_start >>"$OUT/summary.txt" 2>&1 # not in a pipeline: its exports must stay in this shell
run rma_mps4 BATON_TEST_MPS=1 BATON_TEST_GPUS=4 timeout 60 "$T/gpu_test_gpu_rma"
run rma_mps8 BATON_TEST_MPS=1 BATON_TEST_GPUS=8 RMA_ROUNDS=20 timeout 60 "$T/gpu_test_gpu_rma"
run rma_mps4_2h BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=2 timeout 60 "$T/gpu_test_gpu_rma"
run rma_mps4_4h_ofi "${OFI[@]}" BATON_TEST_MPS=1 BATON_TEST_GPUS=4 BATON_TEST_HOSTS=4 timeout 60 "$T/gpu_test_gpu_rma"
mps_stop >>"$OUT/summary.txt" 2>&1
