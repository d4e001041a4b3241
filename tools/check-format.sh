#!/bin/sh
# Fails (and lists the files) when a source file differs from what clang-format makes of it.
# usage: check-format.sh [clang-format binary]
cf=${1:-clang-format}
bad=0
for f in $(git ls-files 'src/*.c' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'include/*.h' 'tools/*.c' \
           'tests/*.c' 'tests/*.h' 2>/dev/null); do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
        echo "not formatted: $f (run: $cf -i --style=file $f)"
        bad=1
    fi
done
exit $bad
