#!/bin/sh
# Fails (naming the file, the include and the two layers) when a source file of src/ includes
# a header of a layer above its own, or of another folder of its own layer, unless src/LAYERS
# lists that pair as an exception; also when a file's folder or an included header's folder
# is not in src/LAYERS, or when a file outside the API layer includes a public header.
# usage: check-layers.sh [src dir]   (default: src, from the repository's root)
src=${1:-src}
layers="$src/LAYERS"
[ -r "$layers" ] || { echo "check-layers: no $layers"; exit 2; }
find "$src" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort |
    while read -r f; do
        rel=${f#"$src"/}
        # "x/y.h" as QUOTE x/y.h, <x/y.h> as ANGLE x/y.h (only src's own headers count then)
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$f" |
            sed -e 's/^\([0-9]*\):.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1 QUOTE \2/' \
                -e 's/^\([0-9]*\):.*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\1 ANGLE \2/' |
            while read -r line kind inc; do
                # <x/y.h> is src's only when src has it: <net/if.h> is the system's
                [ "$kind" = ANGLE ] && [ ! -e "$src/$inc" ] && continue
                echo "$rel $line $kind $inc"
            done
    done | awk -v layers="$layers" '
# the longest folder of LAYERS that `path` is in; "" when none
function module(path,    d, best) {
    best = ""
    for (d in level)
        if (index(path, d "/") == 1 && length(d) > length(best))
            best = d
    return best
}
BEGIN {
    n = 0
    while ((getline l < layers) > 0) {
        sub(/#.*/, "", l)
        if (l ~ /^[ \t]*$/)
            continue
        k = split(l, w, " ")
        if (w[1] == "exception") { # exception FROM -> TO: why
            to = w[4]
            sub(/:$/, "", to)
            allowed[w[2] " -> " to] = 1
            continue
        }
        for (i = 1; i <= k; i++)
            level[w[i]] = n
        n++
    }
    bad = 0
}
{
    file = $1
    line = $2
    inc = $4
    gsub(/(^|\/)\.\//, "", inc) # ./ parts; a .. part leaves the tree: its folder is unknown
    from = module(file)
    if (from == "") {
        printf "%s: its folder is not in %s\n", file, layers
        bad = 1
        next
    }
    if (inc !~ /\// || inc ~ /^nccl_device\//) { # a public header (include/): the API layer only,
        # but for the device API layouts (data every layer that fills them may need)
        if (level[from] != level["api"] && inc != "nccl_device/layout.h") {
            printf "%s:%s: includes \"%s\" (the public API) from %s\n", file, line, inc, from
            bad = 1
        }
        next
    }
    to = module(inc)
    if (to == "") {
        printf "%s:%s: includes \"%s\", whose folder is not in %s\n", file, line, inc, layers
        bad = 1
        next
    }
    if (to == from || level[to] < level[from] || ((from " -> " to) in allowed))
        next
    printf "%s:%s: includes \"%s\": %s (layer %d) may not include %s (layer %d, %s)\n", file,
           line, inc, from, level[from], to, level[to],
           level[to] == level[from] ? "its own layer" : "above it"
    bad = 1
}
END {
    exit bad
}'
