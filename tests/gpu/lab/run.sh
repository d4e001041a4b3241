#!/bin/bash
# The GPU machine's run, in one call (device time is scarce): the gpu-labelled tests, then
# baton-perf for every collective with Baton and with NVIDIA's NCCL side by side, alternating.
# Built elsewhere (make build with nvcc), run here from the repository root:
#   BUILD=build OUT=/some/dir tests/gpu/lab/run.sh [tests|more|sanitize|tune|small|onepro|graph|net|quick|shm|variants|perf|done|all|onegpu|windows|nranks|mps|hosts|nccltests|initmem|suspend]
# Writes logs and tables under $OUT (the device tool returns at most 8 files: tar them). NCCL_NVLS_ENABLE=0 stays set (multicast is off on
# these machines for everyone).
set -uo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/baton-gpu}
# ranks (one GPU each) for baton-perf and gpu_test_gpu_colls (BATON_TEST_GPUS); the random
# and fault tests are 2-rank tests
NRANKS=${NRANKS:-2}
export BATON_TEST_GPUS=$NRANKS
what=${1:-all}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export BATON_TIMEOUT=${BATON_TIMEOUT:-60}
# Baton's library from this build (binaries carried from another machine keep that one's
# absolute RUNPATH); NCCL runs put NVIDIA's directory first instead.
export LD_LIBRARY_PATH="$(realpath "$BUILD")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# libfabric carried by stage.sh, last: the machine's own wins where it has one
[ -d "$BUILD/fabric" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(realpath "$BUILD")/fabric"
NCCL_LIB=${NCCL_LIB:-$(python3 -c "import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],'lib'))" 2>/dev/null)}

{
    echo "date: $(date -u '+%F %H:%M UTC')"
    echo "commit: ${BATON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    nvidia-smi topo -m
    echo "NVIDIA NCCL: $NCCL_LIB"
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

if [ "$what" = tests ] || [ "$what" = all ]; then
    # every test over P2P with the tuner's choices, then each protocol and algorithm forced,
    # then with the connectors in host shared memory, then through the network (sockets)
    # (TEST_VARIANTS="A=1 B=2;C=3" runs only those)
    variants=("BATON_X=1" "BATON_PROTO=LL" "BATON_PROTO=Simple" "BATON_ALGO=Ring"
        "BATON_ALGO=Ring BATON_PROTO=LL128"
        "BATON_ALGO=Direct BATON_PROTO=Simple" "BATON_ALGO=Direct BATON_PROTO=LL128"
        "BATON_P2P_DISABLE=1"
        "BATON_P2P_DISABLE=1 BATON_SHM_DISABLE=1")
    [ -n "${TEST_VARIANTS:-}" ] && IFS=';' read -r -a variants <<<"$TEST_VARIANTS"
    for v in "${variants[@]}"; do
        for t in "$BUILD"/tests/gpu_test_gpu_colls; do
            log="$OUT/tests-$(echo "$v" | tr ' =' '_-').log"
            echo "== $t ($v)"
            start=$SECONDS
            env $v timeout "${TEST_TIMEOUT:-900}" "$t" >"$log" 2>&1
            echo "rc=$? in $((SECONDS - start)) s: $(tail -n 3 "$log" | tr '\n' ' ')"
        done
    done
fi

if [ "$what" = tests ] || [ "$what" = all ] || [ "$what" = more ]; then
    # the other gpu tests: 10^4 random AllReduces, a rank killed mid-AllReduce; with the
    # tuner's choices, then every AllReduce one-shot LL128
    for v in "BATON_X=1" "BATON_ALGO=Direct BATON_PROTO=LL128"; do
        for t in "$BUILD"/tests/gpu_test_*; do
            [ "$(basename "$t")" = gpu_test_gpu_colls ] && continue
            log="$OUT/$(basename "$t")-$(echo "$v" | tr ' =' '_-').log"
            echo "== $t ($v)"
            start=$SECONDS
            env $v timeout "${TEST_TIMEOUT:-900}" "$t" >"$log" 2>&1
            echo "rc=$? in $((SECONDS - start)) s: $(tail -n 4 "$log" | tr '\n' ' ')"
        done
    done
    # the faults with the connectors in host shared memory, then through the network
    for v in "BATON_P2P_DISABLE=1" "BATON_P2P_DISABLE=1 BATON_SHM_DISABLE=1"; do
        log="$OUT/gpu_test_gpu_fault-$(echo "$v" | tr ' =' '_-').log"
        echo "== gpu_test_gpu_fault ($v)"
        start=$SECONDS
        env $v timeout "${TEST_TIMEOUT:-900}" "$BUILD/tests/gpu_test_gpu_fault" absent absent_noboard absent_first absent_first_noboard kill >"$log" 2>&1
        echo "rc=$? in $((SECONDS - start)) s: $(grep -E '^(absent|count|test_gpu)' "$log" | tr '\n' ' ')"
    done
fi

if [ "$what" = onegpu ]; then
    # a one-GPU machine: two ranks of one process share GPU 0 (TEST_SAME_GPU): gpu_test_gpu_colls
    # (ONEGPU_VARIANTS="A=1;B=2", default the tuner's choices), the parity and random tests,
    # the one-GPU fault cases, then
    # the kernels of this build and of build-libs/* side by side (compare_libs.sh SAME_GPU=1)
    IFS=';' read -r -a variants <<<"${ONEGPU_VARIANTS:-BATON_X=1}"
    for v in "${variants[@]}"; do
        log="$OUT/onegpu-colls-$(echo "$v" | tr ' =' '_-').log"
        echo "== gpu_test_gpu_colls, one GPU ($v)"
        start=$SECONDS
        env $v BATON_TEST_SAME_GPU=1 timeout "${TEST_TIMEOUT:-900}" "$BUILD/tests/gpu_test_gpu_colls" \
            >"$log" 2>&1
        echo "rc=$? in $((SECONDS - start)) s: $(tail -n 3 "$log" | tr '\n' ' ')"
    done
    for t in gpu_test_gpu_parity gpu_test_gpu_random; do
        log="$OUT/onegpu-$t.log"
        echo "== $t, one GPU"
        start=$SECONDS
        BATON_TEST_SAME_GPU=1 timeout "${TEST_TIMEOUT:-900}" "$BUILD/tests/$t" >"$log" 2>&1
        echo "rc=$? in $((SECONDS - start)) s: $(tail -n 3 "$log" | tr '\n' ' ')"
    done
    log="$OUT/onegpu-fault.log"
    echo "== gpu_test_gpu_fault, one GPU"
    start=$SECONDS
    timeout "${TEST_TIMEOUT:-900}" "$BUILD/tests/gpu_test_gpu_fault" same_gpu absent_one_gpu \
        absent_one_gpu_noboard >"$log" 2>&1
    echo "rc=$? in $((SECONDS - start)) s: $(grep -E '^(absent|same|test_gpu)|check failed' "$log" | tr '\n' ' ')"
    SAME_GPU=1 BUILD="$BUILD" OUT="$OUT" tests/gpu/lab/compare_libs.sh
    # this build against build-libs/* over 8 B..64 MB (tests/gpu/lab/sweep_libs.sh), when asked
    if [ -n "${SWEEP:-}" ]; then
        BUILD="$BUILD" OUT="$OUT" tests/gpu/lab/sweep_libs.sh build-libs/*/ "$BUILD/lib"
    fi
fi

if [ "$what" = windows ]; then
    # one GPU, two ranks of one process: every collective with buffers in symmetric windows,
    # the non-blocking/revoke/shrink test, the usual one-GPU tests, then AllReduce 8 B..4 MB
    # with windows and without, alternating (WIN_ROUNDS pairs), and baton-perf -R 2 (one rank:
    # two processes cannot share a GPU)
    # (WIN_TESTS="ENV=1 test;ENV=2 test" runs only those)
    IFS=';' read -r -a wtests <<<"${WIN_TESTS:-BATON_TEST_WINDOWS=1 gpu_test_gpu_colls;BATON_X=1 gpu_test_gpu_colls;BATON_X=1 gpu_test_gpu_nonblocking;BATON_X=1 gpu_test_gpu_parity;BATON_X=1 gpu_test_gpu_random}"
    for t in "${wtests[@]}"; do
        v=${t% *} bin=${t##* }
        log="$OUT/win-$bin-$(echo "$v" | tr ' =' '_-').log"
        echo "== $bin ($v)"
        start=$SECONDS
        env $v BATON_TEST_SAME_GPU=1 timeout "${TEST_TIMEOUT:-600}" "$BUILD/tests/$bin" >"$log" 2>&1
        echo "rc=$? in $((SECONDS - start)) s: $(tail -n 3 "$log" | tr '\n' ' ')"
    done
    for k in $(seq 1 "${WIN_ROUNDS:-3}"); do
        for w in "" --windows; do
            log="$OUT/win-onepro-${w:-plain}-$k.txt"
            BATON_TEST_SAME_GPU=1 timeout "${ONEPRO_TIMEOUT:-120}" "$BUILD/bin/baton-one-process" \
                --same-gpu $w allreduce 8 4194304 20 5 >"$log" 2>&1
            echo "== one-process ${w:-without windows} round $k: rc=$? $(grep '# wrong' "$log")"
        done
    done
    "$BUILD/bin/baton-perf" allreduce -b 8 -e 4M -f 4 -R 2 -c 1 >"$OUT/win-perf-R2.txt" 2>&1
    echo "== baton-perf -R 2, one rank: rc=$? $(grep -E 'R 2|wrong' "$OUT/win-perf-R2.txt" | tr '\n' ' ')"
fi

if [ "$what" = nranks ]; then
    # N ranks of one process on GPU 0 (TEST_SAME_GPU, a one-GPU machine): gpu_test_gpu_colls
    # at each N of NLIST under each of NRANK_VARIANTS (every collective, dtype and op; the
    # variants force AllReduce's algorithm and protocol), the random test at RANDOM_N ranks,
    # the N-rank fault cases at FAULT_N, then AllReduce (or ONEPRO_COLLS) at ONEPRO_N ranks per
    # algorithm (ONEPRO_VARIANTS) with baton-one-process, every output checked
    IFS=';' read -r -a variants <<<"${NRANK_VARIANTS:-BATON_X=1;BATON_ALGO=Ring BATON_PROTO=LL;BATON_ALGO=Ring BATON_PROTO=Simple;BATON_ALGO=Ring BATON_PROTO=LL128;BATON_ALGO=TwoShot BATON_PROTO=LL;BATON_ALGO=TwoShot BATON_PROTO=Simple;BATON_ALGO=TwoShot BATON_PROTO=LL128;BATON_ALGO=Direct BATON_PROTO=LL;BATON_ALGO=Direct BATON_PROTO=Simple;BATON_ALGO=Direct BATON_PROTO=LL128}"
    for n in ${NLIST:-2 3 4 8}; do
        for v in "${variants[@]}"; do
            log="$OUT/nranks-$n-colls-$(echo "$v" | tr ' =' '_-').log"
            start=$SECONDS
            env $v BATON_TEST_GPUS=$n BATON_TEST_SAME_GPU=1 timeout "${TEST_TIMEOUT:-600}" \
                "$BUILD/tests/gpu_test_gpu_colls" >"$log" 2>&1
            echo "== $n ranks, gpu_test_gpu_colls ($v): rc=$? in $((SECONDS - start)) s: $(tail -n 2 "$log" | tr '\n' ' ')"
        done
    done
    for n in ${RANDOM_N:-}; do
        log="$OUT/nranks-$n-random.log"
        start=$SECONDS
        BATON_TEST_GPUS=$n BATON_TEST_SAME_GPU=1 timeout "${TEST_TIMEOUT:-600}" \
            "$BUILD/tests/gpu_test_gpu_random" >"$log" 2>&1
        echo "== $n ranks, gpu_test_gpu_random: rc=$? in $((SECONDS - start)) s: $(tail -n 2 "$log" | tr '\n' ' ')"
    done
    for n in ${FAULT_N:-}; do
        log="$OUT/nranks-$n-fault.log"
        start=$SECONDS
        BATON_TEST_GPUS=$n timeout "${TEST_TIMEOUT:-600}" "$BUILD/tests/gpu_test_gpu_fault" \
            absent_ranks spin_ranks >"$log" 2>&1
        echo "== $n ranks, gpu_test_gpu_fault: rc=$? in $((SECONDS - start)) s: $(grep -E 'callers failed|test_gpu|check failed' "$log" | tr '\n' ' ')"
    done
    IFS=';' read -r -a ovariants <<<"${ONEPRO_VARIANTS:-BATON_X=1;BATON_ALGO=Ring;BATON_ALGO=TwoShot;BATON_ALGO=Direct}"
    for n in ${ONEPRO_N:-}; do
        for coll in ${ONEPRO_COLLS:-allreduce}; do
            for v in "${ovariants[@]}"; do
                log="$OUT/nranks-$n-onepro-$coll-$(echo "$v" | tr ' =' '_-').txt"
                [ "$coll" = allreduce ] && log="$OUT/nranks-$n-onepro-$(echo "$v" | tr ' =' '_-').txt"
                env $v BATON_TEST_SAME_GPU=1 timeout "${ONEPRO_TIMEOUT:-120}" "$BUILD/bin/baton-one-process" \
                    --same-gpu --ranks "$n" $coll "${ONEPRO_MIN:-65536}" "${ONEPRO_MAX:-67108864}" 20 5 >"$log" 2>&1
                echo "== $n ranks, one-process $coll ($v): rc=$? $(grep -c '' "$log") lines, $(grep '^# wrong' "$log")"
            done
        done
    done
    for n in ${SANITIZE_N:-}; do
        CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        IFS=';' read -r -a svariants <<<"${SANITIZE_VARIANTS:-BATON_ALGO=Ring BATON_PROTO=LL;BATON_ALGO=Ring BATON_PROTO=Simple;BATON_ALGO=Ring BATON_PROTO=LL128;BATON_ALGO=Direct BATON_PROTO=LL;BATON_ALGO=Direct BATON_PROTO=LL128;BATON_ALGO=Direct BATON_PROTO=Simple;BATON_ALGO=TwoShot BATON_PROTO=LL;BATON_ALGO=TwoShot BATON_PROTO=Simple;BATON_ALGO=TwoShot BATON_PROTO=LL128}"
        for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
            for v in "${svariants[@]}"; do
                log="$OUT/nranks-$n-sanitize-$tool-$(echo "$v" | tr ' =' '_-').log"
                env $v BATON_TEST_SAME_GPU=1 BATON_TIMEOUT=120 timeout "${SANITIZE_TIMEOUT:-300}" "$CS" --tool $tool \
                    --error-exitcode 9 "$BUILD/bin/baton-one-process" --same-gpu --ranks "$n" \
                    allreduce $((4 * n)) "${SANITIZE_MAX:-262144}" 2 1 >"$log" 2>&1
                echo "== $n ranks, compute-sanitizer --tool $tool ($v): rc=$? $(grep -E 'SUMMARY|baton-one-process:' "$log" | tr '\n' ' ')"
            done
        done
    done
fi

if [ "$what" = mps ]; then
    # processes sharing GPU 0 under CUDA MPS (tests/gpu/lab/mps.sh; started here if no daemon
    # runs, and then stopped): gpu_test_gpu_colls as MPS_N processes (every collective, dtype,
    # op), gpu_test_gpu_random at MPS_RANDOM_N, the fault cases as processes (kill -9,
    # absent, same_gpu), baton-perf through baton-run -n N for every collective (checked),
    # and windows between processes (baton-perf -R 2)
    . tests/gpu/lab/mps.sh
    mps_start || exit 1
    # mps_test TEST N...: the gpu test TEST as each N processes on GPU 0
    mps_test() {
        local t=$1 n
        shift
        for n in "$@"; do
            local log="$OUT/mps-$n-$t.log" start=$SECONDS
            BATON_TEST_MPS=1 BATON_TEST_GPUS=$n timeout "${TEST_TIMEOUT:-900}" \
                "$BUILD/tests/gpu_test_gpu_$t" >"$log" 2>&1
            echo "== $n processes, gpu_test_gpu_$t: rc=$? in $((SECONDS - start)) s: $(tail -n 2 "$log" | tr '\n' ' ')"
        done
    }
    mps_test colls ${MPS_N:-2 4 8}
    mps_test random ${MPS_RANDOM_N:-4}
    log="$OUT/mps-fault.log"
    start=$SECONDS
    BATON_TEST_MPS=1 timeout "${TEST_TIMEOUT:-900}" "$BUILD/tests/gpu_test_gpu_fault" same_gpu kill \
        absent absent_noboard absent_first >"$log" 2>&1
    echo "== 2 processes, gpu_test_gpu_fault: rc=$? in $((SECONDS - start)) s: $(grep -E '^(kill|absent|same|test_gpu)|check failed' "$log" | tr '\n' ' ')"
    for n in ${MPS_PERF_N:-2 4 8}; do
        for coll in allreduce allgather reducescatter broadcast reduce sendrecv alltoall; do
            log="$OUT/mps-$n-perf-$coll.txt"
            timeout 300 "$BUILD/bin/baton-run" -n "$n" env CUDA_VISIBLE_DEVICES=0 \
                "$BUILD/bin/baton-perf" $coll -b 8 -e "${MPS_PERF_MAX:-64M}" -f 8 -c 1 -n 5 -w 2 >"$log" 2>&1
            echo "== $n processes, baton-perf $coll: rc=$? $(grep -E 'Out of bounds|Avg bus' "$log" | tr '\n' ' ')"
        done
    done
    log="$OUT/mps-2-perf-windows.txt"
    timeout 300 "$BUILD/bin/baton-run" -n 2 env CUDA_VISIBLE_DEVICES=0 "$BUILD/bin/baton-perf" \
        allreduce -b 8 -e 16M -f 4 -c 1 -n 5 -w 2 -R 2 >"$log" 2>&1
    echo "== 2 processes, baton-perf -R 2 (windows): rc=$? $(grep -E 'Out of bounds|R 2|window' "$log" | head -n 3 | tr '\n' ' ')"
    [ "${MPS_STARTED:-0}" = 1 ] && mps_stop
fi

if [ "$what" = hosts ]; then
    # hosts on one machine, GPU collectives across them: HOSTS_LAYOUTS (hosts x ranks) as
    # processes with NCCL_HOSTID under MPS (baton-perf every collective, checked), and as ranks
    # of one process split by BATON_TEST_HOSTS (gpu_test_gpu_colls), over each network of
    # HOSTS_NETS (sockets, OFI over tcp, the Baton plugin)
    . tests/gpu/lab/mps.sh
    mps_start || exit 1
    IFS=';' read -r -a nets <<<"${HOSTS_NETS:-BATON_NET=Socket;BATON_NET=OFI FI_PROVIDER=tcp;NCCL_NET_PLUGIN=$(realpath "$BUILD")/lib/libnccl-net-baton.so NCCL_NET=BatonSocket}"
    for layout in ${HOSTS_LAYOUTS:-2x2 2x4 4x2 8x1}; do
        h=${layout%x*} per=${layout#*x} n=$((${layout%x*} * ${layout#*x}))
        for v in "${nets[@]}"; do
            tag=$(echo "$layout-$v" | sed 's/[ =;/]/_/g' | cut -c1-60)
            for coll in allreduce allgather reducescatter broadcast sendrecv; do
                log="$OUT/hosts-proc-$tag-$coll.txt"
                env $v BATON_SOCKET_IFNAME=lo timeout 300 "$BUILD/bin/baton-run" -n "$n" sh -c \
                    "NCCL_HOSTID=host\$((BATON_RANK / $per)) CUDA_VISIBLE_DEVICES=0 exec $BUILD/bin/baton-perf $coll -b 8 -e ${HOSTS_MAX:-16M} -f 16 -c 1 -n 3 -w 1" \
                    >"$log" 2>&1
                echo "== $layout processes ($v) $coll: rc=$? $(grep -E 'Out of bounds' "$log" | tr '\n' ' ')"
            done
            # (HOSTS_ONEPRO_LAYOUTS: the layouts whose ranks-of-one-process test runs; default all)
            case " ${HOSTS_ONEPRO_LAYOUTS:-$layout} " in *" $layout "*) ;; *) continue ;; esac
            log="$OUT/hosts-onepro-$tag.log"
            start=$SECONDS
            env $v BATON_SOCKET_IFNAME=lo BATON_TEST_SAME_GPU=1 BATON_TEST_HOSTS=$h BATON_TEST_GPUS=$n \
                timeout "${TEST_TIMEOUT:-900}" "$BUILD/tests/gpu_test_gpu_colls" >"$log" 2>&1
            echo "== $layout ranks of one process ($v), gpu_test_gpu_colls: rc=$? in $((SECONDS - start)) s: $(tail -n 1 "$log")"
        done
    done
    # faults across hosts: two processes on GPU 0 as two hosts (TEST_HOSTS=2), over each
    # network: kill -9 of one mid-AllReduce, one absent (no shared arrival board across hosts)
    for v in "${nets[@]}"; do
        tag=$(echo "$v" | sed 's/[ =;/]/_/g' | cut -c1-60)
        log="$OUT/hosts-fault-$tag.log"
        start=$SECONDS
        env $v BATON_SOCKET_IFNAME=lo BATON_TEST_MPS=1 BATON_TEST_HOSTS=2 timeout "${TEST_TIMEOUT:-300}" \
            "$BUILD/tests/gpu_test_gpu_fault" kill absent_noboard absent_first_noboard >"$log" 2>&1
        echo "== 2 processes as 2 hosts ($v), gpu_test_gpu_fault: rc=$? in $((SECONDS - start)) s: $(grep -E '^(kill|absent|count|test_gpu)|check failed' "$log" | tr '\n' ' ')"
    done
    [ "${MPS_STARTED:-0}" = 1 ] && mps_stop
fi

if [ "$what" = initmem ]; then
    # a communicator's init time and GPU memory, stage by stage (baton-gpu-memory), Baton and
    # NVIDIA's NCCL, at each process count of INITMEM_N on GPU 0 (more than one: under MPS):
    # as it runs by default, with the stack reserved up front (the first kernel's local
    # memory apart), with every module loaded at context creation (the module code apart),
    # and (variant large) with the 64 MB AllReduce first: a ring's needs alone, before any
    # send/recv FIFOs (connected per peer at first use).
    # NVIDIA's NCCL refuses two ranks on one GPU of one host: its processes are hosts
    # (NCCL_HOSTID per rank, sockets between them), and Baton's are measured that way too.
    for n in ${INITMEM_N:-1}; do
        for lib in baton nccl; do
            lp="$LD_LIBRARY_PATH"
            [ "$lib" = nccl ] && lp="$NCCL_LIB"
            hostsets=("one" "hosts")
            [ "$n" = 1 ] && hostsets=("one")
            [ "$lib" = nccl ] && [ "$n" != 1 ] && hostsets=("hosts")
            for hs in "${hostsets[@]}"; do
                for v in ${INITMEM_VARIANTS:-default stack eager}; do
                    log="$OUT/initmem-$n-$lib-$hs-$v.txt"
                    pre="CUDA_VISIBLE_DEVICES=0"
                    [ "$hs" = hosts ] && pre="$pre NCCL_HOSTID=host\$BATON_RANK BATON_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=lo"
                    [ "$v" = eager ] && pre="$pre CUDA_MODULE_LOADING=EAGER"
                    args=
                    [ "$v" = stack ] && args="--stack 2048"
                    [ "$v" = large ] && args="--large-first"
                    LD_LIBRARY_PATH="$lp" timeout 120 "$BUILD/bin/baton-run" -n "$n" sh -c \
                        "$pre exec $BUILD/bin/baton-gpu-memory $args" >"$log" 2>&1
                    echo "== $n process(es), $lib ($hs, $v): rc=$?"
                    grep -E '^#|^  ' "$log"
                done
            done
        done
    done
fi

if [ "$what" = suspend ]; then
    # ncclCommSuspend releases the communicators' GPU memory (two ranks of one process on GPU 0)
    log="$OUT/suspend.log"
    BATON_TEST_SAME_GPU=1 timeout "${TEST_TIMEOUT:-300}" "$BUILD/tests/gpu_test_gpu_suspend" >"$log" 2>&1
    echo "== gpu_test_gpu_suspend, one GPU: rc=$? $(grep -E 'suspend|test_gpu|check failed' "$log" | tr '\n' ' ')"
fi

if [ "$what" = sanitize ] || [ "$what" = all ]; then
    # compute-sanitizer on small AllReduces (direct LL, ring LL, Simple, one-shot LL128) in both
    # processes
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    # (SANITIZE_TOOLS / SANITIZE_VARIANTS="A=1;B=2" narrow it: racecheck takes minutes a run)
    IFS=';' read -r -a variants <<<"${SANITIZE_VARIANTS:-BATON_X=1;BATON_ALGO=Ring;BATON_PROTO=Simple;BATON_PROTO=LL128}"
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        for v in "${variants[@]}"; do
            echo "== compute-sanitizer --tool $tool ($v)"
            log="$OUT/sanitize-$tool-$(echo "$v" | tr ' =' '_-').log"
            env $v BATON_TIMEOUT=120 timeout 300 "$CS" --tool $tool --target-processes all \
                --error-exitcode 9 "$BUILD/bin/baton-run" -n "$NRANKS" "$BUILD/bin/baton-perf" allreduce \
                -b 8 -e 256K -f 32 -c 1 -n 2 -w 1 >"$log" 2>&1
            echo "rc=$?: $(grep -E 'ERROR SUMMARY|Out of bounds' "$log" | tr '\n' ' ')"
        done
    done
fi

# perf LIB COLL ARGS...: one baton-perf run over 2 ranks; LIB = baton | nccl
perf()
{
    local lib=$1 coll=$2
    shift 2
    local env=()
    [ "$lib" = nccl ] && env=(LD_LIBRARY_PATH="$NCCL_LIB")
    env "${env[@]}" timeout 300 "$BUILD/bin/baton-run" -n "$NRANKS" "$BUILD/bin/baton-perf" "$coll" "$@" 2>&1
}

# variant V COLL ARGS...: baton-perf over 2 ranks, Baton under the environment words V
# ("BATON_X=1" for none), or NVIDIA's NCCL when V is nccl
variant()
{
    local v=$1
    shift
    if [ "$v" = nccl ]; then
        perf nccl "$@"
    else
        env $v "$BUILD/bin/baton-run" -n "$NRANKS" "$BUILD/bin/baton-perf" "$@" 2>&1
    fi
}

if [ "$what" = quick ]; then
    for lib in baton nccl; do
        perf $lib allreduce -b 8 -e 1G -f 8 -c 1 -n 20 -w 5 >"$OUT/perf-allreduce-$lib.txt"
        echo "== allreduce $lib"
        grep -E '^ +[0-9]+ |Out of bounds|Avg bus' "$OUT/perf-allreduce-$lib.txt" | cut -c1-120
    done
fi

if [ "$what" = tune ] || [ "$what" = all ]; then
    # small and middle sizes: the tuner's choice against each algorithm x protocol (and more
    # channels), NCCL beside; then the other collectives with and without LL
    for r in $(seq "${TUNE_ROUNDS:-2}"); do
        for v in "BATON_X=1" "BATON_ALGO=Direct BATON_PROTO=LL" "BATON_ALGO=Direct BATON_PROTO=LL128" \
            "BATON_ALGO=Ring BATON_PROTO=LL" "BATON_ALGO=Ring BATON_PROTO=LL128" \
            "BATON_ALGO=Direct BATON_PROTO=Simple" "BATON_ALGO=Ring BATON_PROTO=Simple" \
            "BATON_ALGO=TwoShot BATON_PROTO=LL" "BATON_ALGO=TwoShot BATON_PROTO=Simple" \
            "BATON_ALGO=TwoShot BATON_PROTO=LL128" \
            "BATON_ALGO=Direct BATON_PROTO=LL BATON_MIN_NCHANNELS=16" \
            "BATON_ALGO=Ring BATON_PROTO=LL BATON_MIN_NCHANNELS=16" \
            "BATON_ALGO=Direct BATON_PROTO=Simple BATON_MIN_NCHANNELS=16" \
            "BATON_ALGO=Ring BATON_PROTO=Simple BATON_MIN_NCHANNELS=16" nccl; do
            echo "#### round $r allreduce $v" >>"$OUT/tune.txt"
            variant "$v" allreduce -b 8 -e "${TUNE_MAX:-32M}" -f 2 -c 0 -n 50 -w 10 >>"$OUT/tune.txt"
        done
    done
    for coll in ${TUNE_COLLS:-allgather reducescatter broadcast sendrecv}; do
        for v in "BATON_X=1" "BATON_PROTO=Simple" "BATON_PROTO=LL128" "BATON_MIN_NCHANNELS=16" \
            "BATON_PROTO=Simple BATON_MIN_NCHANNELS=16" nccl; do
            echo "#### $coll $v" >>"$OUT/tune.txt"
            variant "$v" $coll -b 8 -e 32M -f 4 -c 1 -n 50 -w 10 >>"$OUT/tune.txt"
        done
    done
    grep -E '^####|^ +[0-9]+ |rror' "$OUT/tune.txt" | cut -c1-110
fi

if [ "$what" = small ] || [ "$what" = all ]; then
    # issue 5's eager sizes: AllReduce 8 B..8 MB, the tuner's choice, one-shot LL, ring LL and
    # NCCL alternating (SMALL_VARIANTS replaces the Baton variants), SMALL_ROUNDS rounds
    variants=("BATON_X=1" "BATON_ALGO=Direct BATON_PROTO=LL" "BATON_ALGO=Direct BATON_PROTO=LL128"
        "BATON_ALGO=Ring BATON_PROTO=LL")
    [ -n "${SMALL_VARIANTS:-}" ] && IFS=';' read -r -a variants <<<"$SMALL_VARIANTS"
    for r in $(seq "${SMALL_ROUNDS:-3}"); do
        for v in "${variants[@]}" nccl; do
            echo "#### small round $r allreduce $v" >>"$OUT/perf-small.txt"
            variant "$v" allreduce -b 8 -e 8M -f 2 -c 0 -n 100 -w 20 >>"$OUT/perf-small.txt"
        done
    done
    grep -E '^####|^ +[0-9]+ |rror' "$OUT/perf-small.txt" | cut -c1-110
fi

if [ "$what" = onepro ] || [ "$what" = all ]; then
    # issue 5's eager sizes as the anchor measured NCCL (nccl-tests -g 2): one process, one
    # thread, both GPUs in one group (baton-one-process), Baton and NCCL alternating;
    # ONEPRO_VARIANTS="A=1 B=2;C=3" runs Baton under each environment (default: none)
    IFS=';' read -r -a variants <<<"${ONEPRO_VARIANTS:-BATON_X=1}"
    for r in $(seq "${SMALL_ROUNDS:-3}"); do
        for v in "${variants[@]}" nccl; do
            echo "#### onepro round $r allreduce $v" >>"$OUT/perf-onepro.txt"
            env $([ "$v" = nccl ] && echo LD_LIBRARY_PATH="$NCCL_LIB" || echo "$v") timeout 120 \
                "$BUILD/bin/baton-one-process" allreduce 8 "${ONEPRO_MAX:-8388608}" 20 5 \
                >>"$OUT/perf-onepro.txt" 2>&1
        done
    done
    grep -E '^####|^ +[0-9]+ |wrong:|library|rror' "$OUT/perf-onepro.txt" | cut -c1-110
fi

if [ "$what" = graph ] || [ "$what" = all ]; then
    # AllReduce inside CUDA graphs (-G 20: 20 calls per graph), Baton and NCCL alternating;
    # NCCL also with symmetric windows (-R 2: the anchor's fastest NCCL, docs/ANCHORS.md)
    for r in 1 2; do
        for lib in baton nccl "nccl -R 2"; do
            echo "#### graph round $r allreduce $lib" >>"$OUT/perf-graph.txt"
            perf $lib allreduce -b 8 -e 1M -f 4 -c 1 -n 20 -w 5 -G 20 >>"$OUT/perf-graph.txt"
        done
    done
    grep -E '^####|^ +[0-9]+ |Out of|rror|Registration' "$OUT/perf-graph.txt" | cut -c1-110
fi

if [ "$what" = net ] || [ "$what" = all ]; then
    # forced NET (P2P and SHM off: sockets over loopback), default helpers and 2 x 2
    for h in "1" "2"; do
        for r in $(seq "${NET_ROUNDS:-2}"); do
            for lib in baton nccl; do
                echo "#### net helpers $h round $r allreduce $lib" >>"$OUT/perf-net.txt"
                (
                    export BATON_P2P_DISABLE=1 BATON_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 \
                        NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
                        BATON_SOCKET_IFNAME=lo NCCL_SOCKET_NTHREADS=$h NCCL_NSOCKS_PERTHREAD=$h \
                        BATON_SOCKET_NTHREADS=$h BATON_NSOCKS_PERTHREAD=$h
                    perf $lib allreduce -b 1M -e 64M -f 4 -c 1 -n 10 -w 3
                ) >>"$OUT/perf-net.txt"
            done
        done
    done
    grep -E '^####|^ +[0-9]+ |Out of|rror' "$OUT/perf-net.txt" | cut -c1-110
fi

if [ "$what" = shm ]; then
    # forced SHM (P2P off): AllReduce, Baton vs NCCL, alternating
    # (1 MB..128 MB: issue 4's line is at 128 MB)
    for r in $(seq "${SHM_ROUNDS:-2}"); do
        for lib in baton nccl; do
            echo "#### shm round $r allreduce $lib" >>"$OUT/perf-shm.txt"
            BATON_P2P_DISABLE=1 NCCL_P2P_DISABLE=1 perf $lib allreduce -b 1M -e 128M -f 2 -c 1 \
                -n 10 -w 3 >>"$OUT/perf-shm.txt"
        done
    done
    grep -E '^####|^ +[0-9]+ |Out of' "$OUT/perf-shm.txt" | cut -c1-110
fi

if [ "$what" = variants ]; then
    # AllReduce with tuning variants (env), for the next change's evidence
    for v in "X=1" "BATON_MAX_NCHANNELS=48" "BATON_MAX_NCHANNELS=64" "BATON_BUFFSIZE=8388608" \
        "BATON_MAX_NCHANNELS=64 BATON_BUFFSIZE=8388608"; do
        echo "#### baton $v" >>"$OUT/variants.txt"
        variant "$v" allreduce -b 256K -e 1G -f 8 -c 0 -n 20 -w 5 >>"$OUT/variants.txt"
    done
    grep -E '^####|^ +[0-9]+ |rror' "$OUT/variants.txt" | cut -c1-110
fi

if [ "$what" = perf ] || [ "$what" = all ]; then
    # every collective, 8 B..512 MB, checked (-c 1); one file with a header per run
    for coll in allreduce allgather reducescatter broadcast reduce sendrecv alltoall; do
        for lib in baton nccl; do
            echo "#### $coll $lib" >>"$OUT/perf-sweep.txt"
            perf $lib $coll -b 8 -e "${PERF_MAX:-512M}" -f 4 -c 1 -n 20 -w 5 >>"$OUT/perf-sweep.txt"
        done
    done
    grep -E '^####|Out of bounds|Avg bus' "$OUT/perf-sweep.txt"
fi

if [ "$what" = perf ] || [ "$what" = all ] || [ "$what" = done ]; then
    # the done-means sizes, three alternating rounds each
    for r in $(seq "${DONE_ROUNDS:-3}"); do
        for lib in baton nccl; do
            echo "#### round $r allreduce $lib" >>"$OUT/perf-done.txt"
            perf $lib allreduce -b 256M -e 1G -f 4 -c 0 -n 20 -w 5 >>"$OUT/perf-done.txt"
            for coll in allgather reducescatter sendrecv; do
                echo "#### round $r $coll $lib" >>"$OUT/perf-done.txt"
                perf $lib $coll -b 128M -e 128M -c 0 -n 20 -w 5 >>"$OUT/perf-done.txt"
            done
        done
    done
    grep -E '^####|^ +[0-9]+ ' "$OUT/perf-done.txt" | cut -c1-120
fi

if [ "$what" = nccltests ]; then
    # nccl-tests built against NCCL 2.30.7's headers (nccl_tests.sh; stage.sh carries them to
    # $BUILD/nt230), on Baton: every collective on one GPU, checked; the AllReduce and
    # AlltoAll through symmetric windows (-R 2) and their device-API kernels (-D 1: they refuse
    # where the library reports less than 2.29; Baton reports 2.30.7)
    nt=$BUILD/nt230
    for t in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
        echo "#### $t -g 1 -c 1" >>"$OUT/nccltests.txt"
        "$nt/${t}_perf" -b 8 -e 64M -f 8 -g 1 -c 1 -n 5 -w 2 >>"$OUT/nccltests.txt" 2>&1
        echo "rc=$?" >>"$OUT/nccltests.txt"
    done
    for t in all_reduce alltoall; do
        for extra in "-R 2" "-R 2 -D 1"; do
            echo "#### $t -g 1 -c 1 $extra" >>"$OUT/nccltests.txt"
            "$nt/${t}_perf" -b 8 -e 16M -f 8 -g 1 -c 1 -n 5 -w 2 $extra >>"$OUT/nccltests.txt" 2>&1
            echo "rc=$?" >>"$OUT/nccltests.txt"
        done
    done
    grep -E '^####|rc=|Out of bounds|Avg bus|NCCL version|Baton|rror' "$OUT/nccltests.txt" | cut -c1-140
fi
