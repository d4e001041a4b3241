/*
 * Output: the nccl-tests table (same columns, widths and number formats, so parsers of
 * all_reduce_perf output read ours), optional percentile columns, and JSON.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* Prefix "# %10s  %12s  %8s  %6s  %6s" and one result block, in characters. */
#define PERF_PREFIX_W 52
#define PERF_BLOCK_W 32
#define PERF_PCT_W 27

double perf_percentile(const double *sorted, size_t n, double pct)
{
    if (n == 0) {
        return 0;
    }
    /* Nearest rank: the smallest sample with at least pct% of the samples at or below. */
    /* The epsilon keeps 99.9% of 1000 at 999 despite 99.9 having no exact binary form. */
    size_t k = (size_t)ceil(pct / 100.0 * (double)n - 1e-9);
    if (k < 1) {
        k = 1;
    }
    if (k > n) {
        k = n;
    }
    return sorted[k - 1];
}

static void perf_center(FILE *f, const char *s, int width)
{
    int len = (int)strlen(s);
    int left = (width - len) / 2;
    fprintf(f, "%*s%s%*s", left, "", s, width - len - left, "");
}

void perf_report_header(FILE *f, const struct perf_args *a, int percentiles)
{
    const int bw = PERF_BLOCK_W + (percentiles ? PERF_PCT_W : 0);
    (void)a;
    fprintf(f, "#%*s", PERF_PREFIX_W - 1, "");
    perf_center(f, "out-of-place", bw);
    perf_center(f, "in-place", bw);
    fprintf(f, "\n");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
    for (int b = 0; b < 2; b++) {
        fprintf(f, "  %7s  %6s  %6s %6s", "time", "algbw", "busbw", "#wrong");
        if (percentiles) {
            fprintf(f, "  %7s  %7s  %7s", "p50", "p99", "p99.9");
        }
    }
    fprintf(f, "\n");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
    for (int b = 0; b < 2; b++) {
        fprintf(f, "  %7s  %6s  %6s  %5s", "(us)", "(GB/s)", "(GB/s)", "");
        if (percentiles) {
            fprintf(f, "  %7s  %7s  %7s", "(us)", "(us)", "(us)");
        }
    }
    fprintf(f, "\n");
}

/* nccl-tests' time format: fewer decimals as the number grows, always 7 wide. */
static void perf_time_str(double us, char *buf, size_t len)
{
    if (us >= 10000.0) {
        snprintf(buf, len, "%7.0f", us);
    } else if (us >= 100.0) {
        snprintf(buf, len, "%7.1f", us);
    } else {
        snprintf(buf, len, "%7.2f", us);
    }
}

static void perf_report_result(FILE *f, const struct perf_result *r, int percentiles)
{
    char t[32];
    perf_time_str(r->time_us, t, sizeof(t));
    if (r->wrong >= 0) {
        fprintf(f, "  %7s  %6.2f  %6.2f  %5g", t, r->algbw, r->busbw, (double)r->wrong);
    } else {
        fprintf(f, "  %7s  %6.2f  %6.2f  %5s", t, r->algbw, r->busbw, "N/A");
    }
    if (percentiles) {
        char p50[32], p99[32], p999[32];
        perf_time_str(r->p50_us, p50, sizeof(p50));
        perf_time_str(r->p99_us, p99, sizeof(p99));
        perf_time_str(r->p999_us, p999, sizeof(p999));
        fprintf(f, "  %7s  %7s  %7s", p50, p99, p999);
    }
}

void perf_report_row(FILE *f, const struct perf_row *row, int percentiles)
{
    fprintf(f, "%12zu  %12zu  %8s  %6s  %6d", row->bytes, row->count, row->type, row->op,
            row->root);
    perf_report_result(f, &row->oop, percentiles);
    perf_report_result(f, &row->ip, percentiles);
    fprintf(f, "\n");
    fflush(f);
}

int perf_json_open(const char *path, FILE **f_p)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return -1;
    }
    fprintf(f, "[\n");
    *f_p = f;
    return 0;
}

/* JSON has no inf or NaN: write null for them. */
static void perf_json_num(FILE *f, const char *key, double v)
{
    if (isfinite(v)) {
        fprintf(f, "\"%s\": %.6g", key, v);
    } else {
        fprintf(f, "\"%s\": null", key);
    }
}

static void perf_json_result(FILE *f, const char *key, const struct perf_result *r, int percentiles)
{
    fprintf(f, "\"%s\": {", key);
    perf_json_num(f, "time_us", r->time_us);
    fprintf(f, ", ");
    perf_json_num(f, "algbw_gbs", r->algbw);
    fprintf(f, ", ");
    perf_json_num(f, "busbw_gbs", r->busbw);
    if (r->wrong >= 0) {
        fprintf(f, ", \"wrong\": %lld", r->wrong);
    } else {
        fprintf(f, ", \"wrong\": null");
    }
    if (percentiles) {
        fprintf(f, ", ");
        perf_json_num(f, "p50_us", r->p50_us);
        fprintf(f, ", ");
        perf_json_num(f, "p99_us", r->p99_us);
        fprintf(f, ", ");
        perf_json_num(f, "p999_us", r->p999_us);
    }
    fprintf(f, "}");
}

void perf_json_row(FILE *f, int first, const char *coll, int nranks, const struct perf_row *row,
                   int percentiles)
{
    fprintf(f,
            "%s{\"collective\": \"%s\", \"nranks\": %d, \"size\": %zu, \"count\": %zu, "
            "\"type\": \"%s\", \"redop\": \"%s\", \"root\": %d, ",
            first ? "" : ",\n", coll, nranks, row->bytes, row->count, row->type, row->op,
            row->root);
    perf_json_result(f, "out_of_place", &row->oop, percentiles);
    fprintf(f, ", ");
    perf_json_result(f, "in_place", &row->ip, percentiles);
    fprintf(f, "}");
    fflush(f);
}

void perf_json_close(FILE *f)
{
    if (f != NULL) {
        fprintf(f, "\n]\n");
        fclose(f);
    }
}
