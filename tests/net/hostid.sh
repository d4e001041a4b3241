#!/bin/bash
# Hosts on one machine: processes with different NCCL_HOSTID are different hosts (no shared
# memory between them: the network), processes with the same one share a host; and
# BATON_TEST_HOSTS=N makes N hosts of consecutive ranks without per-process settings. Each
# case runs baton-perf AllReduce and AllGather over baton-run, checks every element and the
# channel lines: SHM within a host, NET across.
#   usage: hostid.sh <bin dir>
set -u
bin=$(cd "$1" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
# check NAME NRANKS HOSTS: the log's channel lines against hosts of NRANKS/HOSTS ranks
check() {
    local name=$1 n=$2 hosts=$3 log=$out/$1
    local per=$((n / hosts)) bad=0 lines=0
    grep -q "Out of bounds values : 0 OK" "$log" || { echo "hostid: $name: wrong elements or no run: FAILED"; tail "$log" >&2; failed=1; return; }
    # "Channel 00/0 : 0[0] -> 2[2] [send] via NET/Socket/0 (ring)"
    while read -r a b via; do
        lines=$((lines + 1))
        local want=SHM
        [ $((a / per)) -ne $((b / per)) ] && want=NET
        case $via in $want*) ;; *) echo "hostid: $name: $a-$b via $via, expected $want"; bad=1 ;; esac
    done < <(sed -n 's/.*Channel [0-9]*\/0 : \([0-9]*\)\[[0-9]*\] [<>-]* \([0-9]*\)\[[0-9]*\] \[[a-z]*\] via \([A-Z]*\).*/\1 \2 \3/p' "$log")
    if [ $bad -ne 0 ] || [ $lines -eq 0 ]; then
        echo "hostid: $name: FAILED ($lines channel lines)"
        failed=1
    else
        echo "hostid: $name: ok ($lines connectors, SHM within a host, NET across)"
    fi
}
# run NAME NRANKS HOSTS [how]: how=hostid sets NCCL_HOSTID per process, else TEST_HOSTS
run() {
    local name=$1 n=$2 hosts=$3 how=${4:-}
    for coll in allreduce allgather; do
        local cmd=("$bin/baton-perf" $coll -b 4K -e 1M -f 16 -n 2 -w 1)
        if [ "$how" = hostid ]; then
            env BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=INIT,NET BATON_TIMEOUT=30 \
                "$bin/baton-run" -n "$n" --timeout 60 sh -c \
                "NCCL_HOSTID=host\$((BATON_RANK / $((n / hosts)))) exec $(printf '%q ' "${cmd[@]}")"
        else
            env BATON_DEBUG=INFO BATON_DEBUG_SUBSYS=INIT,NET BATON_TIMEOUT=30 \
                BATON_TEST_HOSTS=$hosts "$bin/baton-run" -n "$n" --timeout 60 "${cmd[@]}"
        fi >"$out/$name.$coll" 2>&1
        check "$name.$coll" "$n" "$hosts"
    done
}
run hostid_2x2 4 2 hostid
run hostid_4x1 4 4 hostid
run test_hosts_2x2 4 2
run test_hosts_2x3 6 2
[ $failed -eq 0 ] || { echo "hostid: FAILED"; exit 1; }
echo "hostid: every case ok"
