# The table the side-by-side comparisons print (bench/compare_libs_host.sh,
# tests/gpu/lab/sweep_libs.sh): input lines "LIB SIZE TIME [ROUND]", one per library, size and
# round; output, per size, each library's median time and lib0's median over it (ratio >= 1:
# as fast as lib0). With rounds given, also "paired": the median over the rounds of lib0's time
# over this library's in the same round, which a slow stretch of the machine moves less when
# the libraries' runs of a round follow each other closely (sweep_libs.sh PER_SIZE=1).
# -v agg=min: each library's fastest time over the rounds instead of the median (for times
# that are already each run's best round: sweep_libs.sh STAT=best).
{
    t[$2 " " $1] = t[$2 " " $1] " " $3
    size[$2] = 1
    lib[$1] = 1
    if (NF >= 4) {
        paired = 1
        r[$2 " " $1 " " $4] = $3
        round[$4] = 1
    }
}
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
    if (n == 0)
        return 0
    sort_n(a, n)
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function stat(list,    a, n, i, m) {
    if (agg != "min")
        return median(list)
    n = split(list, a, " ")
    m = 0
    for (i = 1; i <= n; i++)
        if (i == 1 || a[i] + 0 < m + 0)
            m = a[i]
    return m
}
function paired_ratio(s, l,    q, list, k0, k1) {
    list = ""
    for (q in round) {
        k0 = s " 0 " q
        k1 = s " " l " " q
        if ((k0 in r) && (k1 in r) && r[k1] > 0)
            list = list " " r[k0] / r[k1]
    }
    return median(list)
}
END {
    printf "%12s", "bytes"
    for (l = 0; l in lib; l++)
        printf " %10s %7s%s", "lib" l " us", "ratio", (paired && l > 0 ? "  paired" : "")
    printf "\n"
    n = 0
    for (s in size)
        sizes[++n] = s + 0
    sort_n(sizes, n)
    for (k = 1; k <= n; k++) {
        s = sizes[k]
        printf "%12d", s
        ref = stat(t[s " 0"])
        for (l = 0; l in lib; l++) {
            m = stat(t[s " " l])
            printf " %10.2f %7.3f", m, (m > 0 ? ref / m : 0)
            if (paired && l > 0)
                printf " %7.3f", paired_ratio(s, l)
        }
        printf "\n"
    }
}
