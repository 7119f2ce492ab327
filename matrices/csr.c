/* Host CSR utilities: allocation, copy, validation, the COO -> CSR builder
 * (shared with the Matrix Market reader) and the float64 reference SpMV. */
#include "mmio_internal.h"
#include "csr_check.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

ks_error ks_csr_alloc(ks_csr *A, ks_int nrows, ks_int ncols, ks_int nnz)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "ks_csr_alloc: NULL matrix");
    memset(A, 0, sizeof *A);
    if (nrows < 0 || ncols < 0 || nnz < 0)
        return ks_seterr(KS_ERR_ARG, "ks_csr_alloc: negative size (%" PRId32 " x %" PRId32
                         ", nnz %" PRId32 ")", nrows, ncols, nnz);
    ks_int *rowptr = ks_calloc((size_t)nrows + 1, sizeof *rowptr, "CSR row pointers");
    ks_int *colind = ks_malloc((size_t)nnz * sizeof *colind, "CSR column indices");
    double *val = ks_malloc((size_t)nnz * sizeof *val, "CSR values");
    if (!rowptr || !colind || !val) {
        free(rowptr);
        free(colind);
        free(val);
        return KS_ERR_MEMORY;
    }
    A->nrows = nrows;
    A->ncols = ncols;
    A->nnz = nnz;
    A->rowptr = rowptr;
    A->colind = colind;
    A->val = val;
    return KS_OK;
}

void ks_csr_free(ks_csr *A)
{
    if (!A)
        return;
    free(A->rowptr);
    free(A->colind);
    free(A->val);
    memset(A, 0, sizeof *A);
}

ks_error ks_csr_copy(const ks_csr *src, ks_csr *dst)
{
    if (!src || !dst || src == dst)
        return ks_seterr(KS_ERR_ARG, "ks_csr_copy: %s", src == dst && src ? "source and destination are the same matrix"
                                                                          : "NULL matrix");
    if (src->nrows < 0 || src->ncols < 0 || src->nnz < 0 || !src->rowptr ||
        (src->nnz > 0 && (!src->colind || !src->val)))
        return ks_seterr(KS_ERR_ARG, "ks_csr_copy: source matrix is not allocated or has a negative size");
    ks_csr t;
    KS_TRY(ks_csr_alloc(&t, src->nrows, src->ncols, src->nnz));
    ks_memcpy_par(t.rowptr, src->rowptr, ((size_t)src->nrows + 1) * sizeof *t.rowptr);
    if (src->nnz > 0) {
        ks_memcpy_par(t.colind, src->colind, (size_t)src->nnz * sizeof *t.colind);
        ks_memcpy_par(t.val, src->val, (size_t)src->nnz * sizeof *t.val);
    }
    *dst = t;
    return KS_OK;
}

/* 1 when row i's columns are in range and, when full, sorted and unique
 * with finite values. */
static int row_entries_ok(const ks_csr *A, ks_int i, int full)
{
    const ks_int *rp = A->rowptr;
    for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
        ks_int c = A->colind[k];
        if (c < 0 || c >= A->ncols)
            return 0;
        if (full && ((k > rp[i] && c <= A->colind[k - 1]) || !isfinite(A->val[k])))
            return 0;
    }
    return 1;
}

/* The error for a row that row_entries_ok rejected. */
static ks_error describe_bad_row(const ks_csr *A, ks_int i, const char *who)
{
    const ks_int *rp = A->rowptr;
    for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
        ks_int c = A->colind[k];
        if (c < 0 || c >= A->ncols)
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": column index %" PRId32
                             " out of range [0, %" PRId32 ")", who, i, c, A->ncols);
        if (k > rp[i] && c <= A->colind[k - 1])
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": column %" PRId32
                             " after column %" PRId32 " (columns must be sorted and unique)",
                             who, i, c, A->colind[k - 1]);
        if (A->val && !isfinite(A->val[k])) /* a pattern (full = 0) has no values */
            return ks_seterr(KS_ERR_NUMERIC, "%s: row %" PRId32 ", column %" PRId32
                             ": value %g is not finite", who, i, c, A->val[k]);
    }
    return KS_OK;
}

ks_error ks_csr_check(const ks_csr *A, const char *who, int full)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0)
        return ks_seterr(KS_ERR_ARG, "%s: negative size (%" PRId32 " x %" PRId32
                         ", nnz %" PRId32 ")", who, A->nrows, A->ncols, A->nnz);
    if (!A->rowptr)
        return ks_seterr(KS_ERR_ARG, "%s: rowptr is NULL", who);
    if (A->nnz > 0 && (!A->colind || (full && !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: colind or val is NULL with nnz = %" PRId32, who,
                         A->nnz);
    const ks_int *rp = A->rowptr;
    if (rp[0] != 0)
        return ks_seterr(KS_ERR_ARG, "%s: row 0: rowptr[0] = %" PRId32 " (expected 0)", who,
                         rp[0]);
    /* Whole rowptr first, so entry checks below never index out of bounds. */
    for (ks_int i = 0; i < A->nrows; i++) {
        if (rp[i + 1] < rp[i])
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": rowptr decreases from %" PRId32
                             " to %" PRId32, who, i, rp[i], rp[i + 1]);
        if (rp[i + 1] > A->nnz)
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": rowptr[%" PRId32 "] = %" PRId32
                             " exceeds nnz = %" PRId32, who, i, i + 1, rp[i + 1], A->nnz);
    }
    if (rp[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG, "%s: rowptr[nrows] = %" PRId32 " but nnz = %" PRId32, who,
                         rp[A->nrows], A->nnz);
    /* Entries: find the first bad row in parallel (matrices reach 10^8
     * entries), then describe it serially, so the message names the same row
     * whatever the thread count. */
    ks_int bad = A->nrows;
#pragma omp parallel for schedule(static) reduction(min : bad) if (A->nnz > 32768)
    for (ks_int i = 0; i < A->nrows; i++)
        if (i < bad && !row_entries_ok(A, i, full))
            bad = i;
    if (bad < A->nrows)
        return describe_bad_row(A, bad, who);
    return KS_OK;
}

ks_error ks_csr_validate(const ks_csr *A) { return ks_csr_check(A, "invalid CSR", 1); }

/* Stable merge sort of (column, value) pairs by column; stability keeps the
 * input order of duplicates so their sum is reproducible. tc/tv hold n/2. */
static void sort_pairs(ks_int *c, double *v, int64_t n, ks_int *tc, double *tv)
{
    if (n <= 16) {
        for (int64_t i = 1; i < n; i++) {
            ks_int ci = c[i];
            double vi = v[i];
            int64_t j = i;
            for (; j > 0 && c[j - 1] > ci; j--) {
                c[j] = c[j - 1];
                v[j] = v[j - 1];
            }
            c[j] = ci;
            v[j] = vi;
        }
        return;
    }
    int64_t h = n / 2;
    sort_pairs(c, v, h, tc, tv);
    sort_pairs(c + h, v + h, n - h, tc, tv);
    if (c[h - 1] <= c[h])
        return;
    memcpy(tc, c, (size_t)h * sizeof *tc);
    memcpy(tv, v, (size_t)h * sizeof *tv);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        if (c[j] < tc[i]) {
            c[k] = c[j];
            v[k++] = v[j++];
        } else {
            c[k] = tc[i];
            v[k++] = tv[i++];
        }
    }
    while (i < h) {
        c[k] = tc[i];
        v[k++] = tv[i++];
    }
}

ks_error ks_csr_build_coo(ks_int nrows, ks_int ncols, int64_t nent, const ks_int *row,
                          const ks_int *col, const double *val, int mirror, ks_csr *A,
                          int64_t *ndup)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "CSR from COO: NULL output matrix");
    memset(A, 0, sizeof *A);
    if (ndup)
        *ndup = 0;
    if (nrows < 0 || ncols < 0 || nent < 0)
        return ks_seterr(KS_ERR_ARG, "CSR from COO: negative size (%" PRId32 " x %" PRId32
                         ", %" PRId64 " entries)", nrows, ncols, nent);
    if (nent > 0 && (!row || !col))
        return ks_seterr(KS_ERR_ARG, "CSR from COO: NULL row or column array");
    if (mirror && nrows != ncols)
        return ks_seterr(KS_ERR_ARG, "CSR from COO: symmetric expansion needs a square matrix");

    /* Count first: the total decides the offsets' width, and a 32-bit
     * count array that becomes rowptr in place keeps the rows' memory at
     * 4 bytes a row (a 10^9-row file with one entry needs 4 GB, not 12). */
    int64_t total = nent;
    for (int64_t e = 0; e < nent; e++) {
        ks_int r = row[e], c = col[e];
        if (r < 0 || r >= nrows || c < 0 || c >= ncols)
            return ks_seterr(KS_ERR_ARG, "CSR from COO: entry %" PRId64 ": (%" PRId32 ", %" PRId32
                             ") out of range for a %" PRId32 " x %" PRId32 " matrix (0-based)",
                             e, r, c, nrows, ncols);
        total += mirror && r != c;
    }
    if (total > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "matrix has %" PRId64 " entries%s before duplicates are "
                         "summed: more than the %" PRId32 " that 32-bit indices (ks_int) hold",
                         total, mirror ? " (mirrored ones included)" : "", INT32_MAX);
    /* off[r + 2] counts row r; after the prefix sum off[r + 1] is the start
     * of row r, and the scatter's post-increment leaves off[r] = start of
     * row r. The compaction below then overwrites off[r + 1] with the
     * compacted end of row r: off becomes rowptr (one spare entry). */
    ks_int *off = ks_calloc((size_t)nrows + 2, sizeof *off, "CSR row pointers");
    if (!off)
        return KS_ERR_MEMORY;
    for (int64_t e = 0; e < nent; e++) {
        ks_int r = row[e], c = col[e];
        off[r + 2]++;
        if (mirror && r != c)
            off[c + 2]++;
    }
    for (ks_int r = 0; r < nrows; r++)
        off[r + 2] += off[r + 1];

    ks_int *ci = ks_malloc((size_t)total * sizeof *ci, "CSR column indices");
    double *cv = ks_malloc((size_t)total * sizeof *cv, "CSR values");
    ks_int *rp = off;
    ks_int *tc = NULL;
    double *tv = NULL;
    ks_error err = KS_OK;
    if (!ci || !cv) {
        err = KS_ERR_MEMORY;
        goto fail;
    }
    for (int64_t e = 0; e < nent; e++) {
        ks_int r = row[e], c = col[e];
        double x = val ? val[e] : 1.0;
        int64_t p = off[r + 1]++;
        ci[p] = c;
        cv[p] = x;
        if (mirror && r != c) {
            p = off[c + 1]++;
            ci[p] = r;
            cv[p] = mirror > 0 ? x : -x;
        }
    }

    /* Sort the rows that need it, sum duplicates, compact in place. */
    int64_t w = 0, dups = 0, tcap = 0, e = 0;
    for (ks_int r = 0; r < nrows; r++) {
        /* off[r] already holds row r - 1's compacted end: the old start
         * of row r is the previous row's old end. */
        int64_t b = e;
        e = off[r + 1];
        int sorted = 1, unique = 1;
        for (int64_t k = b + 1; k < e; k++) {
            if (ci[k] < ci[k - 1]) {
                sorted = 0;
                break;
            }
            if (ci[k] == ci[k - 1])
                unique = 0;
        }
        if (!sorted) {
            int64_t need = (e - b) / 2 + 1;
            if (need > tcap) {
                free(tc);
                free(tv);
                tc = ks_malloc((size_t)need * sizeof *tc, "row sort scratch");
                tv = ks_malloc((size_t)need * sizeof *tv, "row sort scratch");
                if (!tc || !tv) {
                    err = KS_ERR_MEMORY;
                    goto fail;
                }
                tcap = need;
            }
            sort_pairs(ci + b, cv + b, e - b, tc, tv);
            unique = 0; /* unknown: take the merging path */
        }
        if (unique) {
            if (w != b) {
                memmove(ci + w, ci + b, (size_t)(e - b) * sizeof *ci);
                memmove(cv + w, cv + b, (size_t)(e - b) * sizeof *cv);
            }
            w += e - b;
        } else {
            int64_t start = w;
            for (int64_t k = b; k < e; k++) {
                if (w > start && ci[w - 1] == ci[k]) {
                    cv[w - 1] += cv[k];
                    if (!mirror || ci[k] <= r)
                        dups++;
                } else {
                    ci[w] = ci[k];
                    cv[w++] = cv[k];
                }
            }
        }
        rp[r + 1] = (ks_int)w;
    }
    free(tc);
    free(tv);
    if (w < total && w > 0) { /* give back what duplicates freed; failure keeps the larger block */
        ks_int *ci2 = realloc(ci, (size_t)w * sizeof *ci);
        double *cv2 = realloc(cv, (size_t)w * sizeof *cv);
        if (ci2)
            ci = ci2;
        if (cv2)
            cv = cv2;
    }
    A->nrows = nrows;
    A->ncols = ncols;
    A->nnz = (ks_int)w;
    A->rowptr = rp;
    A->colind = ci;
    A->val = cv;
    if (ndup)
        *ndup = dups;
    return KS_OK;

fail:
    free(off);
    free(ci);
    free(cv);
    free(tc);
    free(tv);
    return err;
}

ks_error ks_csr_from_coo(ks_int nrows, ks_int ncols, int64_t nent, const ks_int *row,
                         const ks_int *col, const double *val, ks_csr *A, int64_t *ndup)
{
    if (nent > 0 && !val) {
        if (A)
            memset(A, 0, sizeof *A);
        return ks_seterr(KS_ERR_ARG, "ks_csr_from_coo: NULL value array");
    }
    return ks_csr_build_coo(nrows, ncols, nent, row, col, val, 0, A, ndup);
}

void ks_csr_spmv_ref(const ks_csr *A, double alpha, const double *x, double beta, double *y)
{
    for (ks_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            s += A->val[k] * x[A->colind[k]];
        /* beta == 0 overwrites y without reading it (y may hold garbage). */
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}
