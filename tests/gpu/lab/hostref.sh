#!/bin/bash
# On the GPU machine: host-memory AllReduce, Baton vs Open MPI vs Gloo at 2, 4, 8 ranks
# (bench/host_vs_mpi_gloo.sh), with the references staged by stage_hostref.sh. The packages'
# files go into / without replacing any file already there (cp -n).
#   BUILD=build-gpu OUT=/some/dir tests/gpu/lab/hostref.sh   -> $OUT/host-allreduce-np*.md
set -u
B=${BUILD:-build-gpu}
cp -an "$B/hostref/root/." / && ldconfig
export LD_LIBRARY_PATH=$(realpath "$B")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT"
mpirun --version 2>&1 | head -1
for np in ${NPS:-2 4 8}; do
    NP=$np ROUNDS=${ROUNDS:-2} BUILD=$B SKIP_INSTALL=1 SKIP_BATON_BUILD=1 SKIP_ANCHORS_BUILD=1 \
        bench/host_vs_mpi_gloo.sh >"$OUT/host-np$np.log" 2>&1
    echo "np $np: rc $?"
    # the results file the run wrote (its name is in the log's last line)
    res=$(sed -n 's/^host_vs_mpi_gloo: wrote //p' "$OUT/host-np$np.log")
    [ -n "$res" ] && cp "$res" "$OUT/host-allreduce-np$np.md"
    sed -n '/^| bytes/,/^status/p' "$OUT/host-np$np.log"
done
