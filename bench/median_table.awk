# The table the side-by-side comparisons print (bench/compare_libs_host.sh,
# tests/gpu/lab/sweep_libs.sh): input lines "LIB SIZE TIME", one per library, size and round;
# output, per size, each library's median time and lib0's median over it (ratio >= 1: as fast
# as lib0).
{ t[$2 " " $1] = t[$2 " " $1] " " $3; size[$2] = 1; lib[$1] = 1 }
function sort_n(a, n,    i, j, x) {
    for (i = 2; i <= n; i++) {
        x = a[i]
        for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--)
            a[j + 1] = a[j]
        a[j + 1] = x
    }
}
function median(list,    a, n) {
    n = split(list, a, " ")
    sort_n(a, n)
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
    printf "%12s", "bytes"
    for (l = 0; l in lib; l++)
        printf " %10s %7s", "lib" l " us", "ratio"
    printf "\n"
    n = 0
    for (s in size)
        sizes[++n] = s + 0
    sort_n(sizes, n)
    for (k = 1; k <= n; k++) {
        s = sizes[k]
        printf "%12d", s
        ref = median(t[s " 0"])
        for (l = 0; l in lib; l++) {
            m = median(t[s " " l])
            printf " %10.2f %7.3f", m, (m > 0 ? ref / m : 0)
        }
        printf "\n"
    }
}
