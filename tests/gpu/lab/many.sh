#!/bin/bash
# Issue 9: the runs for 4 and 8 GPUs, ready for when such a machine is lent (NVIDIA NCCL
# 2.28.9 beside Baton in the same call, NCCL_NVLS_ENABLE=0 as run.sh sets). One device call per
# rank count, from the repository root, with build-gpu carried:
#   NRANKS=8 BUILD=build-gpu OUT=$OUT tests/gpu/lab/many.sh [part...]
# parts (default all, in this order; split them over calls if one runs past 10 minutes):
#   tests   gpu_test_gpu_colls over N GPUs (N processes, and one process driving all), with the
#           tuner's choices, ALGO=Ring, the LL128 ring and the two-shot (LL, Simple, LL128); the
#           random test over N GPUs and the 2-rank fault tests
#   sanitize compute-sanitizer memcheck and racecheck on N processes: ring, one-shot, two-shot,
#           LL, LL128, Simple
#   perf    every collective 8 B..4 GB with -c 1 (#wrong), Baton and NCCL
#   tune    AllReduce 8 B..1 GB per algorithm x protocol and the tuner's choice, NCCL beside:
#           the tuner against the best measured at each size, and the figures to fit the cost
#           model's hops on (docs/TUNING.md)
#   ddp     torch DDP over N processes, Baton and NCCL (losses within LOSS_RTOL: N > 2 ranks
#           reduce in different orders)
set -uo pipefail
OUT=${OUT:-/tmp/baton-many}
mkdir -p "$OUT"
export OUT=$(realpath "$OUT") BUILD=$(realpath "${BUILD:-build-gpu}") # before the cd
cd "$(dirname "$0")/../../.."
export NRANKS=${NRANKS:-$(nvidia-smi -L | grep -c '^GPU')}
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests sanitize perf tune ddp)
modes=()
for p in "${parts[@]}"; do
    case $p in
    tests) modes+=(tests) ;;
    sanitize) modes+=(sanitize) ;;
    perf) modes+=(perf) ;;
    tune) modes+=(tune) ;;
    ddp) modes+=(torch:ddp) ;;
    *) echo "unknown part $p" >&2; exit 2 ;;
    esac
done
TEST_VARIANTS="BATON_X=1;BATON_ALGO=Ring;BATON_ALGO=Ring BATON_PROTO=LL128;BATON_ALGO=TwoShot BATON_PROTO=LL;BATON_ALGO=TwoShot BATON_PROTO=Simple;BATON_ALGO=TwoShot BATON_PROTO=LL128" \
    SANITIZE_TOOLS="memcheck racecheck" \
    SANITIZE_VARIANTS="BATON_ALGO=Ring BATON_PROTO=LL;BATON_ALGO=Ring BATON_PROTO=Simple;BATON_ALGO=Ring BATON_PROTO=LL128;BATON_ALGO=Direct BATON_PROTO=LL;BATON_ALGO=Direct BATON_PROTO=LL128;BATON_ALGO=Direct BATON_PROTO=Simple;BATON_ALGO=TwoShot BATON_PROTO=LL;BATON_ALGO=TwoShot BATON_PROTO=Simple;BATON_ALGO=TwoShot BATON_PROTO=LL128" \
    PERF_MAX=4G TUNE_MAX=1G TUNE_ROUNDS=1 \
    TUNE_COLLS="allgather reducescatter" NPROC=$NRANKS LOSS_RTOL=${LOSS_RTOL:-1e-5} \
    exec tests/gpu/lab/session.sh "${modes[@]}"
