#!/bin/sh
# Fails (and lists the files) when a source file differs from what clang-format makes of it.
# usage: check-format.sh [clang-format binary]
# One clang-format process checks every file (--dry-run -Werror: one process per file took
# 40-50 s of CI's 2 cores, this takes about 2).
cf=${1:-clang-format}
files=$(git ls-files 'src/*.c' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'include/*.h' 'tools/*.c' \
    'tests/*.c' 'tests/*.h' 2>/dev/null)
# shellcheck disable=SC2086 # the file list: git's paths have no spaces
out=$("$cf" --style=file --dry-run -Werror $files 2>&1) && exit 0
bad=$(echo "$out" | sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' |
    sort -u)
if [ -z "$bad" ]; then # not a format finding: clang-format itself failed
    echo "$out"
    exit 1
fi
for f in $bad; do
    echo "not formatted: $f (run: $cf -i --style=file $f)"
done
exit 1
