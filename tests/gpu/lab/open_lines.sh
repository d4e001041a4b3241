#!/bin/bash
# What the open issues still need from the GPU machine, as named phases run in order, each
# bounded by PHASE_S seconds (default 280; NAME:SECONDS bounds one phase so), its output under
# $OUT/<phase>/, all of it in one
# tarball at the end ($OUT/open_lines.tgz: a call returns few files). Carry build-pack (from
#   NT_BUILD=build-nt230 PACK="build-libs/3452d54 ... build-libs/2f3a788" \
#       tests/gpu/lab/stage.sh build build-gpu
# here); on the GPU machine, from the repository root:
#   tar xJf build-pack/stage.tar.xz && OUT=$OUT tests/gpu/lab/open_lines.sh tests rma1 sweep32
# Phases (the issue each serves):
#   tests     (32) the gpu tests with the default build: gpu_test_gpu_colls at TESTS_N (2 8)
#             ranks, TESTS_VARIANTS (default and LL128 forced); parity, random, nonblocking,
#             lazy, suspend, fault, rma (2 ranks), the device API's (4 ranks; gin as 4 hosts)
#   rma1      (34) gpu_test_gpu_rma as 2 ranks of one process, traced (rma_diag.sh)
#   mps       (33) run.sh mps: the gpu tests as 2 and 8 MPS processes, random, faults, perf
#   initmem   (33) run.sh initmem at 1, 2, 8 processes (MPS): default, and the large stage first
#   sweep32   (32) AllReduce and AllGather 8 B..64 MB against 3452d54 at SWEEP_RANKS (2 8)
#             ranks, SWEEP_ROUNDS (3) rounds
#   bisect    (32) 2-rank AllReduce 1..64 MB over the libraries between 3452d54 and e407cc3
#             that build-libs holds, this build's, then EXTRA_LIBS (folders: variants)
#   small8    (32) 8 ranks, AllReduce and AllGather 32 B..512 KB, SMALL8_ROUNDS (3) rounds:
#             3452d54, 665e831, this build's, EXTRA_LIBS
#   launchcost (32) launch_cost.cu: host time per launch by parameter size (and with the
#             order event), per pointer query (runtime, driver)
#   ll128     (37) ll128_stages.sh: the LL128 ring (4 MB FIFOs) at 8 ranks, 16-64 MB, this
#             build's library then each of EXTRA_LIBS (lab variants), and the Simple ring
#   ll128prof (37) ll128_prof.sh: where an 8-rank ring step's time goes, Simple and LL128,
#             AllGather, ReduceScatter, AllReduce at 16 and 64 MB (a measuring build,
#             PROF_LIB: build-libs/prof, built with -DBATON_LL128_PROFILE)
#   ll128verify (37) ll128_verify.sh on LL128_LIB (default this build's): gpu_test_gpu_colls
#             with LL128 forced at 2, 3, 4, 8 ranks, compute-sanitizer memcheck and racecheck
#   sass      (37) cuobjdump -sass of the float kernels of SASS_LIBS (library folders, default
#             this build's): per function its instructions, local loads and stores (LDL,
#             STL: spills and the call's saves) and calls; the listings xz-compressed
#   profile   (32) where the host's time per call goes at small sizes: baton-one-process
#             AllReduce of 32 B at 8 and 2 ranks, 3452d54's library and this build's (or
#             PROF_LIBS), timed, then under the sampler (sampler.c, staged as
#             $B/bin/sampler.so); name the stacks here:
#             tests/gpu/lab/sampler_report.py prof-*.txt LIBDIR
#   order     (32, 33) the order event recorded by the launch itself (a programmatic event;
#             branch wip-order-launch-event, built into build-libs/launchev): the gpu tests on
#             that library (gpu_test_gpu_colls's streams case: one communicator on three
#             streams; suspend: new streams every round; nonblocking: CUDA graphs), then
#             AllReduce of 32 B at 8 and 2 ranks beside 3452d54, this build and noev (profile,
#             ORDER_ROUNDS rounds, no sampled round); ORDER_LIB: another library folder to
#             test and time so (build-libs/proto: branch wip-proto-entries); ORDER_TESTS=0 or
#             ORDER_PROFILE=0 leave out one half; ORDER_VARIANTS8: the 8-rank test's variants;
#             ORDER_PROF_LIBS: the libraries timed
#   gin       (34, 36) devapi_gin.sh: GIN across hosts, 2.28's and 2.30.7's headers
#   devapi    (36) devapi_v2.sh: LSA of every release, nccl-tests of 2.30.7's headers
#   rma       (34) rma_gpu.sh: one-sided calls, processes and hosts
#   sweep35   (35) 2- and 8-rank sweeps against 2f3a788
#   noregress (32, 33, 35, 37) the no-regression lines at once: AllReduce and AllGather at
#             NOREG_RANKS (2 8) ranks, 8 B (32 B at 8 ranks)..NOREG_MAX (64M), against the
#             commits before each issue that build-libs holds (3452d54: 32, b09d2a3: 33,
#             2f3a788: 35 and 37; NOREG_LIBS: others), STAT=best (each run's fastest of NOREG_REPS (9)
#             rounds, each library's fastest of NOREG_ROUNDS (5) runs), the libraries
#             alternating
#   event     (32, 33) where the host's enqueue bounds the call: AllReduce and AllGather at 8
#             and 2 ranks, 32 B..512 KB, best rounds, 3452d54 (no order event), this build
#             with LAUNCH_EVENT=0 (cudaEventRecord after each launch) and this build (the
#             launch records it), EVENT_ROUNDS (4) rounds
#   protos8   (32, 37) the Simple and LL128 rings against the tuner's pick among rings: 8
#             ranks, AllReduce, AllGather, ReduceScatter 1-16 MB, best rounds, PROTOS8_ROUNDS (3)
#   ll128x    (32, 37) the LL128 ring forced, 8 ranks, AllReduce, AllGather, ReduceScatter
#             1-16 MB, best rounds, LL128X_ROUNDS (3): the libraries LL128X_LIBS (build-libs
#             folders, default 5b873ae) and this build's, alternating
#   gdr       (35) gdr.sh: GPUDirect RDMA's contract over the FakeCuda fixture plugin
#   tree      (35) tree_hosts.sh: tree AllReduce between GPUs on different hosts
#   membw     (37) this host's memory bandwidth and Baton's 2-rank host AllReduce at 1 MB: why
#             the 16-core VM's 1 MB takes 2.5x the 2-core one's
#   host32    (32) host AllReduce at 2 processes, 4 KB..16 MB, against 3452d54 on the GPU
#             machine's cores (bench/compare_libs_host.sh, STAT=best, HOST32_ROUNDS (15)
#             rounds, the libraries alternating; HOST32_REFS: the build-libs folders compared,
#             default 3452d54): the 2-core machine's runs vary by more than the line's 3% from
#             one minute to the next
#   helpers   (37) host AllReduce with the host executor's helper threads: build-host (CUDA
#             off, the references staged in it: tests/gpu/lab/stage_hostref.sh build build-host)
#             carried as build-pack/host.tar.xz; Baton (helpers by default) vs Open MPI vs
#             Gloo at 2, 4, 8 ranks, then Baton with HOST_THREADS=1, the default, and 4
#             threads over 4 channels alternating, 3 rounds
#   helpers2  (37) the same at 2 ranks, two rounds
#   helpers1  (37) the same, Baton alone: one round at 2 and 4 ranks (~30 s)
set -uo pipefail
OUT=${OUT:-/tmp/baton-open}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")/../../.." || exit 1
export BUILD=${BUILD:-build-gpu}
B=$(realpath "$BUILD")
L=$(realpath build-libs 2>/dev/null || echo build-libs)
export NCCL_NVLS_ENABLE=0
echo "open_lines: $(cat "$B/COMMIT" 2>/dev/null || echo '?'), $(nvidia-smi -L | head -1), $(nproc) cores" |
    tee "$OUT/summary.txt"
phase() { # NAME CMD...: one phase, bounded, its console kept
    local name=$1 start=$SECONDS
    shift
    mkdir -p "$OUT/$name"
    OUT="$OUT/$name" timeout -k 10 "${limit:-${PHASE_S:-280}}" "$@" >"$OUT/$name/console.txt" 2>&1
    echo "==== $name: rc=$? in $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
    tail -n 40 "$OUT/$name/console.txt" >>"$OUT/summary.txt"
}
rings8() { # NAME ROUNDS LIB[:VAR=VAL]...: 8-rank rings, AllReduce/AllGather/ReduceScatter 1-16 MB
    local name=$1 rounds=$2
    shift 2
    phase "$name" env BATON_ALGO=Ring RANKS=8 TAG=r8 STAT=best REPS=9 ROUNDS="$rounds" \
        COLLS="allreduce allgather reducescatter" MIN=1M MAX=16M BUILD="$B" \
        tests/gpu/lab/sweep_libs.sh "$@"
}
membw() {
    python3 - <<'EOF'
import time
for mb in (1, 4, 64):
    a = bytearray(b"x" * (mb << 20))
    b = bytearray(mb << 20)
    best = 1e9
    for _ in range(20 if mb < 64 else 5):
        t = time.perf_counter()
        b[:] = a  # a memcpy
        best = min(best, time.perf_counter() - t)
    print(f"one core, copy of {mb} MB: {mb / 1024 / best:.1f} GB/s (best of runs)")
EOF
    lscpu | grep -E 'Model name|L2|L3|NUMA node\(s\)|Socket'
    for _ in 1 2 3; do
        "$B/bin/baton-run" -n 2 "$B/bin/baton-allreduce-bench" 4194304 2>&1
    done
}
helpers() {
    tests/gpu/lab/hostref.sh
    helpers_baton
}
helpers_baton() {
    cat build-host/COMMIT 2>/dev/null
    # 1: no helpers; 0: the default; 4c: four threads over four channels
    for r in $(seq "${ROUNDS_B:-3}"); do
        for t in 1 0 4c; do
            for np in ${NPS:-2 4 8}; do
                echo "== HOST_THREADS=$t np $np round $r"
                ch=() && [ "$t" = 4c ] && ch=(BATON_MIN_NCHANNELS=4 BATON_MAX_NCHANNELS=4)
                env "${ch[@]}" BATON_HOST_THREADS=${t%c} build-host/bin/baton-run -n $np \
                    build-host/bin/baton-allreduce-bench 4194304
            done
        done
    done
}
profile() {
    # unsampled timings (PROF_ROUNDS rounds, the libraries alternating), then one sampled run
    # of each; PROF_LIBS: library folders (default 3452d54's and this build's)
    local libs=${PROF_LIBS:-"$L/3452d54 $B/lib"}
    for r in ${PROF_RANKS:-8 2}; do
        for round in $(seq "${PROF_ROUNDS:-2}") ${PROF_SAMPLED-sampled}; do
            for l in $libs; do
                [ -d "$l" ] || continue
                tag=$([ "$l" = "$B/lib" ] && echo this || basename "$l")
                pre=() && [ "$round" = sampled ] &&
                    pre=(SAMPLER_OUT="$OUT/prof-r$r-$tag.txt" LD_PRELOAD="$B/bin/sampler.so")
                # the sampler in the program, not in timeout (whose file would overwrite its)
                echo "== $r ranks, $tag, round $round: $(timeout 120 env "${pre[@]}" \
                    LD_LIBRARY_PATH="$l" BATON_TEST_SAME_GPU=1 "$B/bin/baton-one-process" \
                    --same-gpu --ranks "$r" allreduce 32 32 "${PROF_ITERS:-4000}" 5 | grep '^ ')"
            done
        done
    done
}
order() {
    local ev=${ORDER_LIB:-$L/launchev}
    [ -d "$ev" ] || { echo "order: no $ev"; return 1; }
    if [ "${ORDER_TESTS:-1}" = 1 ]; then
        for n in 2 8; do
            vs="BATON_X=1 BATON_PROTO=LL128"
            [ $n = 8 ] && vs=${ORDER_VARIANTS8:-$vs}
            for v in $vs; do
                echo "== gpu_test_gpu_colls $n ranks $v: $(env $v LD_LIBRARY_PATH="$ev" \
                    BATON_TEST_SAME_GPU=1 BATON_TEST_GPUS=$n timeout 300 \
                    "$B/tests/gpu_test_gpu_colls" 2>&1 | tail -n 2 | tr '\n' ' ')"
            done
        done
        for t in gpu_test_gpu_suspend gpu_test_gpu_nonblocking gpu_test_gpu_random; do
            echo "== $t: $(LD_LIBRARY_PATH="$ev" BATON_TEST_SAME_GPU=1 timeout 300 "$B/tests/$t" \
                2>&1 | tail -n 2 | tr '\n' ' ')"
        done
    fi
    if [ "${ORDER_PROFILE:-1}" = 1 ]; then
        PROF_LIBS=${ORDER_PROF_LIBS:-"$L/3452d54 $B/lib $ev $L/noev"} \
            PROF_ROUNDS=${ORDER_ROUNDS:-3} PROF_SAMPLED= profile
    fi
}
export B L
sass() {
    # the float kernels of each library: cuobjdump lists a function's SASS after a
    # "Function : NAME" line; the noinline calls' bodies sit inside their kernel's listing
    for l in ${SASS_LIBS:-$B/lib}; do
        tag=$(basename "$(dirname "$l")")-$(basename "$l")
        cuobjdump -sass "$l/libnccl.so.2" >"$OUT/sass-$tag.txt" 2>&1 || continue
        echo "== $l"
        awk '/Function :/ { if (f ~ /IfL|If[E_]/) printf "%7d instr %5d LDL %5d STL %4d CALL  %s\n", n, ldl, stl, call, f;
                             f = $3; n = ldl = stl = call = 0; next }
             /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]+\*\// { n++; if (/LDL/) ldl++; if (/STL/) stl++; if (/CALL/) call++ }
             END { if (f ~ /IfL|If[E_]/) printf "%7d instr %5d LDL %5d STL %4d CALL  %s\n", n, ldl, stl, call, f }' \
            "$OUT/sass-$tag.txt"
        xz -T0 "$OUT/sass-$tag.txt"
    done
}
export -f membw profile helpers helpers_baton order sass # phase runs them under timeout, in a shell of their own
for arg in "$@"; do
    p=${arg%%:*} limit=
    [ "$p" != "$arg" ] && limit=${arg#*:}
    case $p in
    tests)
        phase tests env TESTS=1 NLIST="${TESTS_N:-2 8}" \
            VARIANTS="${TESTS_VARIANTS:-BATON_X=1;BATON_PROTO=LL128}" tests/gpu/lab/kernels_build.sh
        ;;
    rma1) phase rma1 tests/gpu/lab/rma_diag.sh ;;
    mps) # processes on GPU 0 under MPS: the gpu tests, random, faults, baton-perf, windows
        phase mps env MPS_N="${MPS_N:-2 8}" MPS_PERF_N="${MPS_PERF_N:-8}" MPS_PERF_MAX=4M \
            TEST_TIMEOUT=200 tests/gpu/lab/run.sh mps
        ;;
    initmem) # init time and GPU memory at 1, 2 and 8 processes, Baton and NVIDIA's NCCL
        phase initmem bash -c '. tests/gpu/lab/mps.sh && mps_start && INITMEM_N="1 2 8" \
            INITMEM_VARIANTS="${INITMEM_VARIANTS:-default large}" tests/gpu/lab/run.sh initmem; mps_stop'
        ;;
    sweep32)
        phase sweep32 env TESTS=0 RANKS_LIST="${SWEEP_RANKS:-2 8}" ROUNDS="${SWEEP_ROUNDS:-3}" \
            tests/gpu/lab/kernels_build.sh "$L/3452d54"
        ;;
    bisect) # the libraries of those commits that were built (build_lib_at.sh), in order
        libs=()
        for c in 3452d54 4c52e59 e7fb9a6 873264c 94e2952 665e831 31d9d7f e407cc3; do
            [ -d "$L/$c" ] && libs+=("$L/$c")
        done
        # shellcheck disable=SC2086 # EXTRA_LIBS: a list of library folders
        phase bisect env RANKS=2 ROUNDS=3 COLLS=allreduce MIN=1M tests/gpu/lab/sweep_libs.sh \
            "${libs[@]}" "$B/lib" ${EXTRA_LIBS:-}
        ;;
    small8) # 8 ranks, AllReduce and AllGather 32 B..512 KB: the host's enqueue per launch
        libs=()
        for c in 3452d54 665e831; do
            [ -d "$L/$c" ] && libs+=("$L/$c")
        done
        # shellcheck disable=SC2086
        phase small8 env RANKS=8 ROUNDS="${SMALL8_ROUNDS:-3}" MIN=32 MAX=512K TAG=small8 \
            tests/gpu/lab/sweep_libs.sh "${libs[@]}" "$B/lib" ${EXTRA_LIBS:-}
        ;;
    launchcost) phase launchcost "$B/bin/launch_cost" ;;
    ll128) # the LL128 ring against the Simple ring, and EXTRA_LIBS (lab variants) beside it
        # shellcheck disable=SC2086
        phase ll128 env BUILD="$BUILD" tests/gpu/lab/ll128_stages.sh ${EXTRA_LIBS:-}
        ;;
    ll128prof) # a measuring build's breakdown of a ring step, Simple and LL128
        phase ll128prof env BUILD="$BUILD" tests/gpu/lab/ll128_prof.sh
        ;;
    ll128verify) # the LL128 ring's tests and sanitizers on LL128_LIB (default: this build's)
        phase ll128verify env BUILD="$BUILD" LIB="${LL128_LIB:-$B/lib}" tests/gpu/lab/ll128_verify.sh
        ;;
    profile) phase profile bash -c profile ;;
    sass) phase sass bash -c sass ;;
    order) phase order bash -c order ;;
    gin) phase gin tests/gpu/lab/devapi_gin.sh ;;
    devapi) phase devapi tests/gpu/lab/devapi_v2.sh ;;
    rma) phase rma tests/gpu/lab/rma_gpu.sh ;;
    sweep35)
        phase sweep35 env TESTS=0 RANKS_LIST="2 8" ROUNDS=3 tests/gpu/lab/kernels_build.sh \
            "$L/2f3a788"
        ;;
    noregress)
        libs=()
        for c in ${NOREG_LIBS:-3452d54 b09d2a3 2f3a788}; do
            [ -d "$L/$c" ] && libs+=("$L/$c")
        done
        phase noregress env TESTS=0 STAT=best RANKS_LIST="${NOREG_RANKS:-2 8}" \
            MAX="${NOREG_MAX:-64M}" REPS="${NOREG_REPS:-9}" ROUNDS="${NOREG_ROUNDS:-5}" \
            tests/gpu/lab/kernels_build.sh "${libs[@]}"
        ;;
    event)
        phase event env TESTS=0 STAT=best RANKS_LIST="8 2" MAX=512K REPS=9 \
            ROUNDS="${EVENT_ROUNDS:-4}" tests/gpu/lab/kernels_build.sh "$L/3452d54" \
            "$B/lib:BATON_LAUNCH_EVENT=0"
        ;;
    protos8)
        rings8 protos8 "${PROTOS8_ROUNDS:-3}" "$B/lib:BATON_PROTO=Simple" \
            "$B/lib:BATON_PROTO=LL128" "$B/lib"
        ;;
    ll128x)
        specs=()
        for l in ${LL128X_LIBS:-5b873ae}; do specs+=("$L/$l:BATON_PROTO=LL128"); done
        rings8 ll128x "${LL128X_ROUNDS:-3}" "${specs[@]}" "$B/lib:BATON_PROTO=LL128"
        ;;
    gdr) phase gdr tests/gpu/lab/gdr.sh ;;
    tree) phase tree env BUILD="$BUILD" tests/gpu/lab/tree_hosts.sh ;;
    membw) phase membw bash -c membw ;;
    host32) # host AllReduce, 2 processes, 4 KB-16 MB against 3452d54 on this machine's cores
        refs=()
        for r in ${HOST32_REFS:-3452d54}; do refs+=("$L/$r"); done
        phase host32 env BUILD="$B" STAT=best ROUNDS="${HOST32_ROUNDS:-15}" ITERS=200 \
            bench/compare_libs_host.sh "${refs[@]}" "$B/lib"
        ;;
    helpers)
        [ -d build-host/bin ] || tar xJf build-pack/host.tar.xz
        phase helpers env BUILD=build-host NPS="2 4 8" ROUNDS=2 bash -c helpers
        ;;
    helpers2) # the same at 2 ranks only, two rounds each
        [ -d build-host/bin ] || tar xJf build-pack/host.tar.xz
        phase helpers2 env BUILD=build-host NPS=2 ROUNDS=2 ROUNDS_B=2 bash -c helpers
        ;;
    helpers1) # the same without the references: Baton alone, one round, 2 and 4 ranks
        [ -d build-host/bin ] || tar xJf build-pack/host.tar.xz
        phase helpers1 env ROUNDS_B=1 NPS="2 4" bash -c helpers_baton
        ;;
    *) echo "open_lines: no phase '$p'" | tee -a "$OUT/summary.txt" ;;
    esac
done
# a phase cut at its bound may leave MPS running (the machine must be left as found)
echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
tar -C "$OUT" -czf "$OUT/open_lines.tgz" --exclude=open_lines.tgz . && echo "open_lines: $OUT/open_lines.tgz"
