# Shared by the tests/net scripts (sourced): "hosts" as network namespaces. Each host h$i has
# its own network namespace joined by a veth pair to a bridge in a switch namespace
# (addresses $net.1..$net.N), and its ranks run with their own IPC namespace, so shared
# memory cannot join them: NET really crosses an interface. Needs root (CI runs as root);
# without the rights a script fails loudly instead of passing.
#   netns_setup NHOSTS     creates the hosts; sets tag, sw, net, out; cleanup on EXIT
#   netns_rail2 NHOSTS     adds a second interface per host on a second bridge ($rail2.*)
#   netns_kill_tree PID    kill a started rank and its children (run on exit for all)
#   fail MESSAGE           prints and exits 1

tag=bt$$
sw=${tag}sw
NETNS_NHOSTS=0
fail() { echo "$(basename "$0" .sh): FAIL: $*" >&2; exit 1; }

# kill a tracked process and its children (unshare --fork puts the rank under it)
netns_kill_tree() {
    pkill -9 -P "$1" 2>/dev/null
    kill -9 "$1" 2>/dev/null
}

netns_cleanup() {
    for p in $(jobs -p); do netns_kill_tree "$p"; done # ranks still running (a failure)
    for i in $(seq 0 $((NETNS_NHOSTS - 1))); do ip netns del ${tag}h$i 2>/dev/null; done
    ip netns del $sw 2>/dev/null # the veths go with their namespaces
    [ -n "${NETNS_KEEP:-}" ] && echo "logs kept in $out" || rm -rf "$out"
}

# netns_link HOST IFACE PEER BRIDGE ADDR: a veth pair from host HOST (interface IFACE, address
# ADDR/24) to the switch (PEER, a port of BRIDGE)
netns_link() {
    ip link add $2 type veth peer name $3 || fail "cannot create veth pairs"
    ip link set $2 netns ${tag}h$1
    ip link set $3 netns $sw
    ip -n $sw link set $3 master $4
    ip -n $sw link set $3 up
    ip -n ${tag}h$1 addr add $5/24 dev $2
    ip -n ${tag}h$1 link set $2 up
}

netns_setup() {
    [ "$(id -u)" -eq 0 ] || fail "needs root to create network namespaces (run as root, as CI does)"
    command -v ip >/dev/null || fail "needs iproute2 (ip)"
    command -v unshare >/dev/null || fail "needs util-linux (unshare)"
    NETNS_NHOSTS=$1
    out=$(mktemp -d)
    trap netns_cleanup EXIT
    net=10.77.$(($$ % 200))
    ip netns add $sw || fail "ip netns add failed (no CAP_SYS_ADMIN?)"
    ip -n $sw link add br0 type bridge || fail "cannot create a bridge"
    ip -n $sw link set br0 up
    for i in $(seq 0 $((NETNS_NHOSTS - 1))); do
        ip netns add ${tag}h$i
        netns_link $i ${tag}v$i ${tag}s$i br0 $net.$((i + 1))
        ip -n ${tag}h$i link set lo up
    done
    # no wait for the bridge to forward: Baton's connects retry until TIMEOUT
}

netns_rail2() {
    ip -n $sw link add br1 type bridge && ip -n $sw link set br1 up || fail "cannot create a bridge"
    rail2=10.78.$(($$ % 200))
    for i in $(seq 0 $(($1 - 1))); do
        netns_link $i ${tag}w$i ${tag}t$i br1 $rail2.$((i + 1))
    done
}
