#include "graph/ring_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- ring order ---------------------------------------------------------------------- */

struct ring_search {
    int n;
    const double *bw;
    int *cur, *used, *best;
    double best_min, best_sum;
};

/* Depth-first over rings starting at member 0; `mn`/`sum` of the links so far. */
static void ring_dfs(struct ring_search *s, int depth, double mn, double sum)
{
    if (mn < s->best_min)
        return; /* cannot beat the best bottleneck any more */
    if (depth == s->n) {
        double last = s->bw[s->cur[s->n - 1] * s->n + s->cur[0]];
        double m = last < mn ? last : mn, total = sum + last;
        if (m > s->best_min || (m == s->best_min && total > s->best_sum)) {
            s->best_min = m;
            s->best_sum = total;
            memcpy(s->best, s->cur, sizeof(int) * (size_t)s->n);
        }
        return;
    }
    for (int g = 1; g < s->n; g++) {
        if (s->used[g])
            continue;
        double l = s->bw[s->cur[depth - 1] * s->n + g];
        s->used[g] = 1;
        s->cur[depth] = g;
        ring_dfs(s, depth + 1, l < mn ? l : mn, sum + l);
        s->used[g] = 0;
    }
}

double bt_ring_search(int n, const double *bw, int *order)
{
    if (n <= 0)
        return 0;
    order[0] = 0;
    if (n == 1)
        return 0;
    int *mem = calloc((size_t)n * 3, sizeof(int));
    if (!mem) { /* no memory for the search: member order */
        for (int i = 0; i < n; i++)
            order[i] = i;
        return 0;
    }
    struct ring_search s = {.n = n, .bw = bw, .cur = mem, .used = mem + n, .best = mem + 2 * n};
    s.cur[0] = 0;
    s.used[0] = 1;
    s.best_min = -1;
    if (n <= 8) {
        ring_dfs(&s, 1, 1e300, 0);
    } else { /* greedy: the widest next link */
        for (int d = 1; d < n; d++) {
            int pick = -1;
            for (int g = 1; g < n; g++)
                if (!s.used[g] &&
                    (pick < 0 || bw[s.cur[d - 1] * n + g] > bw[s.cur[d - 1] * n + pick]))
                    pick = g;
            s.used[pick] = 1;
            s.cur[d] = pick;
        }
        memcpy(s.best, s.cur, sizeof(int) * (size_t)n);
    }
    memcpy(order, s.best, sizeof(int) * (size_t)n);
    double mn = 1e300;
    for (int i = 0; i < n; i++) {
        double l = bw[order[i] * n + order[(i + 1) % n]];
        mn = l < mn ? l : mn;
    }
    free(mem);
    return mn;
}

void bt_ring_channel_order(const int *best, int n, int c, int *order)
{
    for (int i = 0; i < n; i++)
        order[i] = c % 2 == 0 ? best[i] : best[(n - i) % n];
}

/* ---- block split --------------------------------------------------------------------- */

#define SPLIT_GRID 256 /* values of b[0] tried per covering */

/*
 * Is there a split (blocks b[p] >= 0 by ring position, adding up to 1) under which every
 * link p (bandwidth c[p]) moves its 2 - b[p] - b[p+1] in time T? That needs
 * b[p] + b[p+1] >= L[p] = 2 - T c[p] around the cycle with sum(b) <= 1 (what is left over
 * goes to any block, which only lowers loads). For each b[0] on a grid the cheapest covering
 * follows greedily (b[p+1] = max(0, L[p] - b[p]), then b[0] raised to close the cycle).
 */
static int split_feasible(int n, const double *c, double T, double *tmp)
{
    double lmax = 0;
    for (int p = 0; p < n; p++) {
        double l = 2 - T * c[p];
        lmax = l > lmax ? l : lmax;
    }
    for (int g = 0; g <= SPLIT_GRID; g++) {
        tmp[0] = lmax * g / SPLIT_GRID;
        for (int p = 0; p + 1 < n; p++) {
            double need = 2 - T * c[p] - tmp[p];
            tmp[p + 1] = need > 0 ? need : 0;
        }
        double close = 2 - T * c[n - 1] - tmp[n - 1];
        if (close > tmp[0])
            tmp[0] = close;
        double sum = 0;
        for (int p = 0; p < n; p++)
            sum += tmp[p];
        if (sum <= 1 + 1e-12)
            return 1;
    }
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Euclidean projection of b onto {b >= 0, sum(b) = 1} (sort-based); tmp: n doubles. */
static void project_simplex(int n, double *b, double *tmp)
{
    memcpy(tmp, b, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_desc);
    double run = 0, theta = 0;
    for (int j = 0; j < n; j++) {
        run += tmp[j];
        double t = (run - 1) / (j + 1);
        if (tmp[j] - t > 0)
            theta = t;
    }
    for (int p = 0; p < n; p++)
        b[p] = b[p] - theta > 0 ? b[p] - theta : 0;
}

/* A split meeting time T, found from equal blocks by alternating projections onto each
 * link's constraint and the simplex: near equal blocks, so no rank gets everything when
 * several splits are as fast (one huge block pipelines worse than the model says). */
static void nearest_split(int n, const double *c, double T, double *b, double *tmp)
{
    for (int p = 0; p < n; p++)
        b[p] = 1.0 / n;
    for (int it = 0; it < 20000; it++) {
        double worst = 0;
        for (int p = 0; p < n; p++) {
            int q = (p + 1) % n;
            double d = 2 - T * c[p] - b[p] - b[q];
            if (d > 0) {
                b[p] += d / 2;
                b[q] += d / 2;
                worst = d > worst ? d : worst;
            }
        }
        project_simplex(n, b, tmp);
        if (worst < 1e-9)
            break;
    }
}

int bt_ring_split(int n, const int *order, const double *bw, uint32_t *share)
{
    for (int m = 0; m < n; m++) /* the equal split, also the answer when links are equal */
        share[m] = BT_RING_SPLIT_TOTAL / (uint32_t)n +
                   ((uint32_t)m < BT_RING_SPLIT_TOTAL % (uint32_t)n ? 1u : 0u);
    if (n < 3) /* two ranks: both links carry everything whatever the split */
        return 0;
    double *c = calloc((size_t)n * 3, sizeof(double));
    if (!c)
        return 0;
    double *b = c + n, *tmp = c + 2 * n, cmin = 1e300, cmax = 0;
    for (int p = 0; p < n; p++) {
        c[p] = bw[order[p] * n + order[(p + 1) % n]];
        cmin = c[p] < cmin ? c[p] : cmin;
        cmax = c[p] > cmax ? c[p] : cmax;
    }
    if (!(cmin > 0) || cmin >= 0.85 * cmax) {
        free(c);
        return 0;
    }
    /* Bisect on the slowest link's time T: from 0 to the equal split's. */
    double lo = 0, hi = 0;
    for (int p = 0; p < n; p++) {
        double t = (2.0 - 2.0 / n) / c[p];
        hi = t > hi ? t : hi;
    }
    for (int it = 0; it < 60; it++) {
        double mid = (lo + hi) / 2;
        if (split_feasible(n, c, mid, tmp))
            hi = mid;
        else
            lo = mid;
    }
    /* 2% above the optimum leaves room to stay nearer equal blocks */
    nearest_split(n, c, hi * 1.02, b, tmp);
    uint32_t sum = 0;
    int big = 0;
    for (int p = 0; p < n; p++) {
        double v = floor(b[p] * BT_RING_SPLIT_TOTAL + 0.5);
        share[order[p]] = v < 0 ? 0 : (uint32_t)v;
        sum += share[order[p]];
        if (share[order[p]] > share[order[big]])
            big = p;
    }
    /* rounding: the largest block absorbs the difference, so the shares add up exactly */
    share[order[big]] += BT_RING_SPLIT_TOTAL - sum;
    free(c);
    return 1;
}

double bt_ring_split_cost(int n, const int *order, const double *bw, const uint32_t *share)
{
    double worst = 0;
    for (int p = 0; p < n && n > 1; p++) {
        int a = order[p], z = order[(p + 1) % n];
        double load =
            2.0 - (double)share[a] / BT_RING_SPLIT_TOTAL - (double)share[z] / BT_RING_SPLIT_TOTAL;
        double t = bw[a * n + z] > 0 ? load / bw[a * n + z] : 1e300;
        worst = t > worst ? t : worst;
    }
    return worst;
}
