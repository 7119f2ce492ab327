/* The choice behind "spmv_format": "auto": statistics of the CSR in one
 * O(nnz) pass, then a few rules, each backed by measurements.
 *
 * cpu: "csr" always (the cpu backend's only format).
 *
 * cuda, median apply-time ratio vs cuSPARSE on an H100 (bigger is better):
 *   matrix                          csr_vector csr_adaptive  ell        dia
 *   3D 7-pt 256^3                   1.31       1.25          1.31       1.87
 *   3D 27-pt 256^3                  1.25       1.20          1.24       1.83
 *   small FE/CFD (ani4, fv1, cage11,
 *     bcsstk, cavity26, raefsky2,
 *     poisson3Da, watt_2)           1.37-2.01  1.27-1.96     0.9-1.9 or refused
 *                                                                       refused (fv1 1.68)
 *   hangGlider_2/memplus/rajat01
 *     (few very long rows)          0.42/0.51/0.26  1.89/1.66/1.83  refused  refused
 *   fv1                             1.93       1.77          1.89       1.68
 * Hence:
 *   1. nrows >= 100000 and DIA fill (ndiag * nrows / nnz) <= 1.3 -> dia.
 *      DIA reads no column indices, which pays once the matrix is large
 *      enough for bandwidth to dominate; on small matrices (fv1) csr_vector
 *      still wins, and more fill than 1.3 wastes what the indices saved.
 *   2. max row length > 16 * mean and > 256 -> csr_adaptive: csr_vector
 *      serializes a long row on one warp (0.26-0.51 of cuSPARSE), adaptive
 *      splits it over a block.
 *   3. otherwise csr_vector: the best or near best on everything else, and
 *      it never refuses a matrix (ell does).
 * A rule whose format is not registered in this build falls through to the
 * next one. */
#include "format.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTO_DIA_MIN_ROWS 100000
#define AUTO_DIA_MAX_FILL 1.3
#define AUTO_LONG_ROW_RATIO 16.0
#define AUTO_LONG_ROW_MIN 256

typedef struct {
    ks_int nrows, nnz;
    double mean_row, row_cv;
    ks_int max_row;
    int64_t ndiag;   /* occupied diagonals; -1 when not counted (no memory) */
    double dia_fill; /* ndiag * nrows / nnz */
} auto_stats;

/* The derived statistics the rules read, from the integer counts. */
static void derive(const ks_sparse_stats *c, auto_stats *s)
{
    memset(s, 0, sizeof *s);
    s->nrows = c->nrows;
    s->nnz = c->nnz;
    s->max_row = c->max_row;
    s->ndiag = c->ndiag;
    if (c->nrows <= 0) {
        s->dia_fill = INFINITY;
        return;
    }
    s->mean_row = (double)c->sum / c->nrows;
    double var = (double)c->sum2 / c->nrows - s->mean_row * s->mean_row;
    s->row_cv = s->mean_row > 0.0 ? sqrt(var > 0.0 ? var : 0.0) / s->mean_row : 0.0;
    s->dia_fill = c->ndiag >= 0 && c->nnz > 0 ? (double)c->ndiag * c->nrows / c->nnz : INFINITY;
}

static int have(const char *name, ks_backend_kind backend)
{
    return ks_spmv_format_find(name, backend) != NULL;
}

static void say(char *reason, size_t len, const char *fmt, ...) KS_PRINTF(3, 4);
static void say(char *reason, size_t len, const char *fmt, ...)
{
    if (!reason || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, len, fmt, ap);
    va_end(ap);
}

const char *ks_spmv_format_auto_stats(const ks_sparse_stats *c, ks_backend_kind backend,
                                      char *reason, size_t len)
{
    say(reason, len, "%s", "");
    if (backend == KS_BACKEND_CPU) {
        say(reason, len, "the cpu backend's format");
        return have("csr", backend) ? "csr" : NULL;
    }
    if (backend != KS_BACKEND_CUDA || !c)
        return NULL;

    auto_stats s;
    derive(c, &s);
    if (s.nrows >= AUTO_DIA_MIN_ROWS && s.ndiag > 0 && s.dia_fill <= AUTO_DIA_MAX_FILL &&
        have("dia", backend)) {
        say(reason, len, "banded: %lld occupied diagonals, fill %.2f, %ld rows",
            (long long)s.ndiag, s.dia_fill, (long)s.nrows);
        return "dia";
    }
    if (s.max_row > AUTO_LONG_ROW_RATIO * s.mean_row && s.max_row > AUTO_LONG_ROW_MIN &&
        have("csr_adaptive", backend)) {
        say(reason, len, "few long rows: max %ld vs mean %.1f (cv %.2f)", (long)s.max_row,
            s.mean_row, s.row_cv);
        return "csr_adaptive";
    }
    if (!have("csr_vector", backend))
        return NULL;
    say(reason, len, "regular rows: mean %.1f, max %ld (cv %.2f)", s.mean_row, (long)s.max_row,
        s.row_cv);
    return "csr_vector";
}

int ks_spmv_format_auto_reads_stats(ks_backend_kind k) { return k != KS_BACKEND_CPU; }

double ks_spmv_format_auto_dia_fill(ks_backend_kind k, ks_int nrows)
{
    /* rule 1's other conditions, known before any counting */
    return k == KS_BACKEND_CUDA && nrows >= AUTO_DIA_MIN_ROWS && have("dia", k) ? AUTO_DIA_MAX_FILL
                                                                               : 0.0;
}

const char *ks_spmv_format_auto_reason(const ks_csr *A, ks_backend_kind backend, char *reason,
                                       size_t len)
{
    if (!A)
        return ks_spmv_format_auto_stats(NULL, backend, reason, len);
    ks_sparse_stats c;
    const int reads = ks_spmv_format_auto_reads_stats(backend);
    if (reads)
        ks_csr_row_stats(A, ks_spmv_format_auto_dia_fill(backend, A->nrows), &c);
    return ks_spmv_format_auto_stats(reads ? &c : NULL, backend, reason, len);
}

const char *ks_spmv_format_auto(const ks_csr *A, ks_backend_kind backend)
{
    return ks_spmv_format_auto_reason(A, backend, NULL, 0);
}
