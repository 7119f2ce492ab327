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

/* One pass over the rows, on all threads: lengths (mean, max, spread) and
 * the occupied diagonals in a bitmap over the nrows + ncols - 1 offsets
 * col - row, counted afterwards. The sums are integer sums, exact, so the
 * statistics do not depend on the thread count. */
static void compute_stats(const ks_csr *A, auto_stats *s)
{
    memset(s, 0, sizeof *s);
    s->nrows = A->nrows;
    s->nnz = A->nnz;
    if (A->nrows <= 0)
        return;
    int64_t noff = (int64_t)A->nrows + A->ncols - 1;
    size_t words = noff > 0 ? (size_t)((noff + 63) / 64) : 0;
    uint64_t *occupied = words ? calloc(words, sizeof *occupied) : NULL;
    /* 64-bit integers: sum2 can pass 2^53, where doubles would round */
    uint64_t sum = 0, sum2 = 0;
    ks_int max_row = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum, sum2) reduction(max : max_row) \
    if (A->nnz > 200000)
    for (ks_int i = 0; i < A->nrows; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        sum += (uint64_t)len;
        sum2 += (uint64_t)len * (uint64_t)len;
        if (len > max_row)
            max_row = len;
        if (!occupied)
            continue;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int64_t off = (int64_t)A->colind[k] - i + (A->nrows - 1);
            uint64_t bit = (uint64_t)1 << (off & 63), word;
#pragma omp atomic read
            word = occupied[off >> 6];
            if (!(word & bit)) {
#pragma omp atomic update
                occupied[off >> 6] |= bit;
            }
        }
    }
    int64_t ndiag = 0;
    for (size_t w = 0; occupied && w < words; w++)
        ndiag += __builtin_popcountll(occupied[w]);
    free(occupied);
    s->max_row = max_row;
    s->mean_row = (double)sum / A->nrows;
    double var = (double)sum2 / A->nrows - s->mean_row * s->mean_row;
    s->row_cv = s->mean_row > 0.0 ? sqrt(var > 0.0 ? var : 0.0) / s->mean_row : 0.0;
    s->ndiag = occupied ? ndiag : -1;
    s->dia_fill = occupied && A->nnz > 0 ? (double)ndiag * A->nrows / A->nnz : INFINITY;
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

const char *ks_spmv_format_auto_reason(const ks_csr *A, ks_backend_kind backend, char *reason,
                                       size_t len)
{
    say(reason, len, "%s", "");
    if (backend == KS_BACKEND_CPU) {
        say(reason, len, "the cpu backend's format");
        return have("csr", backend) ? "csr" : NULL;
    }
    if (backend != KS_BACKEND_CUDA || !A)
        return NULL;

    auto_stats s;
    compute_stats(A, &s);
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

const char *ks_spmv_format_auto(const ks_csr *A, ks_backend_kind backend)
{
    return ks_spmv_format_auto_reason(A, backend, NULL, 0);
}
