#!/bin/bash
# kill -9 of one rank across "hosts": 4 ranks, each in its own network namespace
# (tests/net/netns_lib.sh) and its own IPC, UTS and PID namespaces, so nothing of the
# one-host machinery (shared memory, the arrival board, a pid check) can see the victim:
# only the network tells. A stream of 16 MB collectives (NET, 2 channels; each round the
# next of AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, a Send/Recv ring) runs; a
# random rank is killed at a random moment (in connection setup or in the stream); every
# survivor must fail (not hang) within TIMEOUT + 2 s of its death (the process gone, not only
# signalled) and name the victim: the ranks whose connections with it close, or whose
# listener probe finds it gone, name it directly; the others learn it from the neighbour
# that failed before them (a bootstrap message: across hosts there is no shared board to
# carry the first cause). Each host has its own
# /dev/shm (a directory of the test bound there), which must be empty once its rank is gone.
# VAR=VALUE arguments go to every rank: the network (BATON_NET=OFI, a plugin) under test.
#   usage: netns_kill.sh <baton-perf> [rounds] [VAR=VALUE...]
set -u
perf=$1
rounds=${2:-6}
shift $(($# < 2 ? $# : 2))
extra=""
[ $# -gt 0 ] && extra=$(printf '%q ' "$@") # quoted for the rank's sh -c
colls=(allreduce allgather reducescatter broadcast reduce sendrecv)
. "$(dirname "$0")/netns_lib.sh"
n=4
netns_setup $n
timeout_s=10
port=$((20000 + $$ % 10000 + 500))
failed=0
for round in $(seq "$rounds"); do
    port=$((port + 1))
    victim=$((RANDOM % n))
    coll=${colls[$(((round - 1) % ${#colls[@]}))]}
    pids=()
    for r in $(seq 0 $((n - 1))); do
        mkdir -p "$out/shm.$round.$r"
        ip netns exec ${tag}h$r unshare --ipc --uts --pid --fork --mount-proc sh -c \
            "hostname ${tag}h$r; mount --bind $out/shm.$round.$r /dev/shm || exit 1; \
            exec env $extra BATON_RANK=$r BATON_NRANKS=$n BATON_COMM_ID=$net.1:$port \
            BATON_SOCKET_IFNAME=${tag}v$r BATON_TIMEOUT=$timeout_s BATON_MIN_NCHANNELS=2 \
            BATON_DEBUG=${NETNS_DEBUG:-WARN} BATON_DEBUG_SUBSYS=${NETNS_SUBSYS:-INIT} \
            $perf $coll -b 16M -e 16M -c 0 -n 1000000 -w 1" >"$out/$round.$r" 2>&1 &
        pids+=($!)
    done
    # kill once the ranks run the collectives (rank 0 prints its table header after the
    # collective init; sanitizer builds init slowly), at a random moment of the stream
    for try in $(seq 1 600); do
        grep -q "^# *size" "$out/$round.0" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "^# *size" "$out/$round.0" || fail "round $round: the ranks did not start in 60 s"
    # rank 0's header comes before the warm-up, whose first collective connects: an odd
    # round kills within the first second (in connection setup, for a slow build, or just
    # after it), an even round in the second (the stream); a random moment of either
    sleep $(((round + 1) % 2)).$((RANDOM % 10))$((RANDOM % 10))
    inner=$(pgrep -P "${pids[$victim]}" | head -n 1)
    [ -n "$inner" ] || fail "round $round: rank $victim is not running (did init fail?)"
    kill -9 "$inner"
    # the clock starts once the victim is dead: a process ends (closing its sockets) only
    # after the kernel has torn its memory down, which for a sanitizer build's huge mappings
    # takes seconds; until then its listener still takes connections and nothing can tell
    for wait in $(seq 1 400); do
        grep -qs '^State:[[:space:]]*[^Z]' "/proc/$inner/status" || break
        sleep 0.05
    done
    t0=$(date +%s.%N)
    for r in $(seq 0 $((n - 1))); do
        [ $r -eq $victim ] && continue
        # each survivor: gone within TIMEOUT + 2 s of the kill, with an error
        left=$(awk -v t0="$t0" -v now="$(date +%s.%N)" -v lim=$((timeout_s + 2)) \
            'BEGIN {l = lim - (now - t0); print (l > 0 ? l : 0)}')
        if timeout "$left" tail -s 0.05 --pid="${pids[$r]}" -f /dev/null; then
            wait "${pids[$r]}"
            rc=$?
            took=$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN {printf "%.2f", now - t0}')
            named=$(grep -o "rank [0-9]*" "$out/$round.$r" | grep -v "rank $r\$" | sort -u | tr '\n' ' ')
            if [ $rc -ne 0 ] && grep -qE "because rank $victim is gone|rank $victim is gone \(exited|connection with rank $victim failed \(closed" \
                "$out/$round.$r"; then
                echo "netns_kill: round $round $coll victim $victim: rank $r failed after $took s naming: $named"
            else
                echo "netns_kill: round $round $coll victim $victim: rank $r exit $rc after $took s, named '$named': FAILED"
                tail -n 6 "$out/$round.$r" >&2
                failed=1
            fi
        else
            echo "netns_kill: round $round $coll victim $victim: rank $r still running $((timeout_s + 2)) s after the kill: FAILED"
            tail -n 6 "$out/$round.$r" >&2
            netns_kill_tree "${pids[$r]}"
            failed=1
        fi
    done
    wait 2>/dev/null
    for r in $(seq 0 $((n - 1))); do
        left=$(ls -A "$out/shm.$round.$r")
        if [ -n "$left" ]; then
            echo "netns_kill: round $round: host $r left in /dev/shm: $left: FAILED"
            failed=1
        fi
    done
done
[ $failed -eq 0 ] || fail "a survivor hung, did not name the victim, or left shared memory"
echo "netns_kill: every survivor failed in time and named the victim, /dev/shm clean ($rounds rounds${extra:+, $extra})"
