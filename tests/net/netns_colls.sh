#!/bin/bash
# Every collective across "hosts" (network namespaces, tests/net/netns_lib.sh), then two
# collectives over two rails (two interfaces per host). Every network: the socket backend,
# the libfabric one (NET=OFI, tcp;ofi_rxm) and, given the plugins' directory, the socket
# backend as libnccl-net-baton.so.
#   usage: netns_colls.sh <baton-perf> [<plugin dir>]
set -u
perf=$1
plugin_dir=${2:-}
. "$(dirname "$0")/netns_lib.sh"
netns_setup 4

# below the ephemeral range (32768-60999 by default): an outgoing connection of an earlier
# run must not be holding the root's port
port=$((20000 + $$ % 10000))
failed=0

one_if() { echo ${tag}v$1; }
two_ifs() { echo ${tag}v$1,${tag}w$1; }

# run_ranks N COLL LOG IFS_FN [VAR=VALUE...]: baton-perf COLL on N "hosts", SOCKET_IFNAME from
# IFS_FN RANK, logs in $out/LOG.RANK; 0 when every rank exited 0. Each namespace is a host of
# its own to Baton too (NCCL_HOSTID): one rank per host, so AllGather and ReduceScatter on 4
# take PAT (coll/pat.h), as the tuner picks it there.
run_ranks() {
    local n=$1 coll=$2 log=$3 ifs_fn=$4 pids=() r p rc=0
    shift 4
    port=$((port + 1))
    for r in $(seq 0 $((n - 1))); do
        ip netns exec ${tag}h$r unshare --ipc env BATON_RANK=$r BATON_NRANKS=$n \
            BATON_COMM_ID=$net.1:$port BATON_SOCKET_IFNAME=$($ifs_fn $r) BATON_TIMEOUT=60 \
            NCCL_HOSTID=${tag}h$r \
            BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET "$@" \
            "$perf" $coll -b 8 -e 4M -f 32 -c 1 -n 2 -w 1 >"$out/$log.$r" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait $p || rc=1; done
    return $rc
}

# check N "COLL [ARGS]" LOG NETWORK WHAT [VAR=VALUE...]: one run on N "hosts"; ok when every
# rank exited 0, rank 0 found no wrong element, and the bytes went via NET/NETWORK
check() {
    local n=$1 coll=$2 log=$3 network=$4 what=$5
    shift 5
    if run_ranks $n "$coll" $log one_if "$@" &&
        grep -q "Out of bounds values : 0 OK" "$out/$log.0" &&
        grep -q "via NET/$network/" "$out/$log.0"; then
        echo "netns_colls: $what: ok"
    else
        echo "netns_colls: $what: FAILED"
        tail -n 5 "$out/$log".* >&2
        failed=1
    fi
}

# all_colls LABEL NETWORK NS [VAR=VALUE...]: every collective on each count of "hosts" in NS
all_colls() {
    local label=$1 network=$2 ns=$3 n coll
    shift 3
    for n in $ns; do
        for coll in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
            check $n $coll $label.$n.$coll $network "$label: $n ranks $coll" "$@"
        done
    done
}

# all_dtypes LABEL NETWORK [VAR=VALUE...]: AllReduce (sum) in every dtype on 3 "hosts" (the
# collectives that only move bytes do not look at the type)
all_dtypes() {
    local label=$1 network=$2 dt
    shift 2
    for dt in int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2; do
        check 3 "allreduce -d $dt" $label.dt.$dt $network "$label: 3 ranks allreduce $dt" "$@"
    done
}

all_colls socket Socket "2 3 4"
# the libfabric backend on its tcp provider, over the same interfaces
all_colls ofi OFI "2 3 4" BATON_NET=OFI "FI_PROVIDER=tcp;ofi_rxm"
all_dtypes ofi OFI BATON_NET=OFI "FI_PROVIDER=tcp;ofi_rxm"
# the socket backend as a separately built plugin, through the loader: that the loaded table
# carries every collective across the interfaces (its dtypes and rank counts: the socket
# backend's above, byte for byte, and mp/colls_plugin)
if [ -n "$plugin_dir" ]; then
    all_colls plugin BatonSocket 3 NCCL_NET_PLUGIN="$plugin_dir/libnccl-net-baton.so" \
        NCCL_NET=BatonSocket
fi

# Two rails: a second interface per host on a second bridge and subnet. SOCKET_IFNAME names
# both, so NET has two devices; channel c listens on device c mod 2 on every rank (a ring's
# channel stays on one rail), and both rails must carry a channel.
netns_rail2 3
for coll in allreduce sendrecv; do
    if run_ranks 3 $coll rails.$coll two_ifs BATON_MIN_NCHANNELS=2 &&
        grep -q "Out of bounds values : 0 OK" "$out/rails.$coll.0" &&
        grep -q "device 0 (${tag}v" "$out/rails.$coll.0" &&
        grep -q "device 1 (${tag}w" "$out/rails.$coll.0"; then
        echo "netns_colls: 3 ranks $coll on two rails: ok"
    else
        echo "netns_colls: 3 ranks $coll on two rails: FAILED"
        tail -n 8 "$out/rails.$coll".* >&2
        failed=1
    fi
done

[ $failed -eq 0 ] || fail "some collectives failed across namespaces"
echo "netns_colls: all collectives ok across network namespaces"
