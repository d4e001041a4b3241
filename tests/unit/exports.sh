#!/bin/sh
# Checks that a built libnccl.so.2 exports every symbol listed in a file (one name a line,
# '#' comments allowed) and that its SONAME is libnccl.so.2. Lists every problem, then
# fails if there was any.
# usage: exports.sh <path to libnccl.so> <symbol list>
lib=$1
list=$2
if [ ! -f "$lib" ] || [ ! -f "$list" ]; then
    echo "usage: $0 <libnccl.so> <symbol list>" >&2
    exit 2
fi

bad=0
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libnccl.so.2" ]; then
    echo "SONAME of $lib is '$soname', expected 'libnccl.so.2'"
    bad=1
fi

# Defined dynamic symbols, names only (strip any @version suffix).
defined=$(mktemp) || exit 2
trap 'rm -f "$defined"' EXIT
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$defined"

missing=0
while IFS= read -r sym || [ -n "$sym" ]; do
    case $sym in '' | '#'*) continue ;; esac
    if ! grep -qx "$sym" "$defined"; then
        echo "not exported: $sym"
        missing=$((missing + 1))
    fi
done < "$list"
if [ $missing -ne 0 ]; then
    echo "$missing symbol(s) of $list missing from $lib"
    bad=1
fi
exit $bad
