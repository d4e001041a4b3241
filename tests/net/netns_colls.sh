#!/bin/bash
# Every collective across "hosts": each rank runs in its own network namespace (and its own
# IPC namespace, so shared memory cannot connect it to the others), joined by veth pairs to
# a bridge in a switch namespace. The NET transport then really crosses an interface.
# Needs root (CI runs as root); without the rights it fails loudly instead of passing.
#   usage: netns_colls.sh <baton-perf> [<baton-run>]
set -u
perf=$1
tag=bt$$
sw=${tag}sw
fail() { echo "netns_colls: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "needs root to create network namespaces (run as root, as CI does)"
command -v ip >/dev/null || fail "needs iproute2 (ip)"
command -v unshare >/dev/null || fail "needs util-linux (unshare)"

out=$(mktemp -d)
cleanup() {
    for i in 0 1 2 3; do ip netns del ${tag}h$i 2>/dev/null; done # their veths go too
    ip netns del $sw 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT

ip netns add $sw || fail "ip netns add failed (no CAP_SYS_ADMIN?)"
ip -n $sw link add br0 type bridge || fail "cannot create a bridge"
ip -n $sw link set br0 up
for i in 0 1 2 3; do
    ip netns add ${tag}h$i
    ip link add ${tag}v$i type veth peer name ${tag}s$i || fail "cannot create veth pairs"
    ip link set ${tag}v$i netns ${tag}h$i
    ip link set ${tag}s$i netns $sw
    ip -n $sw link set ${tag}s$i master br0
    ip -n $sw link set ${tag}s$i up
    ip -n ${tag}h$i addr add 10.77.$(($$ % 200)).$((i + 1))/24 dev ${tag}v$i
    ip -n ${tag}h$i link set ${tag}v$i up
    ip -n ${tag}h$i link set lo up
done
net=10.77.$(($$ % 200))
# the bridge may take a moment to forward
for try in $(seq 1 50); do
    ip netns exec ${tag}h1 ping -c1 -W1 $net.1 >/dev/null 2>&1 && break
    sleep 0.1
done

# below the ephemeral range (32768-60999 by default): an outgoing connection of an earlier
# run must not be holding the root's port
port=$((20000 + $$ % 10000))
failed=0
for n in 2 3 4; do
    for coll in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
        port=$((port + 1))
        pids=()
        for r in $(seq 0 $((n - 1))); do
            ip netns exec ${tag}h$r unshare --ipc env BATON_RANK=$r BATON_NRANKS=$n \
                BATON_COMM_ID=$net.1:$port BATON_SOCKET_IFNAME=${tag}v$r BATON_TIMEOUT=60 \
                BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET \
                "$perf" $coll -b 8 -e 4M -f 32 -c 1 -n 2 -w 1 >"$out/$n.$coll.$r" 2>&1 &
            pids+=($!)
        done
        ok=1
        for p in "${pids[@]}"; do wait $p || ok=0; done
        # every rank exited 0, rank 0 found no wrong element, and the bytes went via NET
        if [ $ok -eq 1 ] && grep -q "Out of bounds values : 0 OK" "$out/$n.$coll.0" &&
            grep -q "via NET/Socket" "$out/$n.$coll.0"; then
            echo "netns_colls: $n ranks $coll: ok"
        else
            echo "netns_colls: $n ranks $coll: FAILED"
            tail -n 5 "$out/$n.$coll".* >&2
            failed=1
        fi
    done
done
# Two rails: a second interface per host on a second bridge and subnet. SOCKET_IFNAME names
# both, so NET has two devices; channel c listens on device c mod 2 on every rank (a ring's
# channel stays on one rail), and both rails must carry a channel.
ip -n $sw link add br1 type bridge && ip -n $sw link set br1 up || fail "cannot create a bridge"
rail2=10.78.$(($$ % 200))
for i in 0 1 2; do
    ip link add ${tag}w$i type veth peer name ${tag}t$i || fail "cannot create veth pairs"
    ip link set ${tag}w$i netns ${tag}h$i
    ip link set ${tag}t$i netns $sw
    ip -n $sw link set ${tag}t$i master br1
    ip -n $sw link set ${tag}t$i up
    ip -n ${tag}h$i addr add $rail2.$((i + 1))/24 dev ${tag}w$i
    ip -n ${tag}h$i link set ${tag}w$i up
done
for try in $(seq 1 50); do
    ip netns exec ${tag}h1 ping -c1 -W1 $rail2.1 >/dev/null 2>&1 && break
    sleep 0.1
done
for coll in allreduce sendrecv; do
    port=$((port + 1))
    pids=()
    for r in 0 1 2; do
        ip netns exec ${tag}h$r unshare --ipc env BATON_RANK=$r BATON_NRANKS=3 \
            BATON_COMM_ID=$net.1:$port BATON_SOCKET_IFNAME=${tag}v$r,${tag}w$r BATON_TIMEOUT=60 \
            BATON_MIN_NCHANNELS=2 BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=NET \
            "$perf" $coll -b 8 -e 4M -f 32 -c 1 -n 2 -w 1 >"$out/rails.$coll.$r" 2>&1 &
        pids+=($!)
    done
    ok=1
    for p in "${pids[@]}"; do wait $p || ok=0; done
    if [ $ok -eq 1 ] && grep -q "Out of bounds values : 0 OK" "$out/rails.$coll.0" &&
        grep -q "on device 0 (${tag}v" "$out/rails.$coll.0" &&
        grep -q "on device 1 (${tag}w" "$out/rails.$coll.0"; then
        echo "netns_colls: 3 ranks $coll on two rails: ok"
    else
        echo "netns_colls: 3 ranks $coll on two rails: FAILED"
        tail -n 8 "$out/rails.$coll".* >&2
        failed=1
    fi
done

[ $failed -eq 0 ] || fail "some collectives failed across namespaces"
echo "netns_colls: all collectives ok across network namespaces"
