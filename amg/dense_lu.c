/* Dense LU with partial pivoting for the coarsest AMG level (n up to a few
 * thousand): PA = LU stored in place, row-major, unit lower L.
 *
 * Singularity: an exactly singular matrix gives, after rounding, a pivot of
 * the order of n * eps * max|a_ij| rather than zero, so a pivot
 * |u_kk| <= max(1e-14, n * eps) * max|a_ij| is reported as singular
 * (KS_ERR_NUMERIC naming the pivot). Such a coarse solve would amplify
 * rounding by > 1e13 anyway.
 *
 * The elimination updates rows independently (parallel over rows for large
 * trailing updates) and the inverse solves independent column blocks, so
 * results do not depend on the thread count. */
#include "dense_lu.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

/* A trailing update with fewer multiply-adds than this runs serially: one
 * fork/join per pivot must stay small next to the work it shares (after a
 * GPU setup the team sleeps, and waking it hundreds of times cost more
 * than a 300-row factor serially). */
#define KS_LU_PAR_WORK ((int64_t)1 << 20)
/* Columns of the inverse per task: a block of n x 32 right-hand sides
 * reuses each factor entry 32 times, and a few hundred rows still make
 * enough tasks for the cores (128 columns a task left 287 rows to three
 * threads: 6.2 ms). */
#define KS_LU_INV_BLOCK 32

ks_error ks_dense_lu_factor(const ks_csr *A, ks_dense_lu *F)
{
    static const char fn[] = "ks_dense_lu_factor";
    if (!F)
        return ks_seterr(KS_ERR_ARG, "%s: NULL factor", fn);
    memset(F, 0, sizeof *F);
    if (!A || A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr ||
        (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is NULL, not allocated or of negative size", fn);
    if (A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", not square", fn,
                         A->nrows, A->ncols);
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG, "%s: rowptr[0] = %" PRId32 ", rowptr[n] = %" PRId32
                         " (expected 0 and nnz = %" PRId32 ")",
                         fn, A->rowptr[0], A->rowptr[A->nrows], A->nnz);
    const ks_int n = A->nrows;
    const size_t nn = (size_t)n * (size_t)n;
    double *lu = ks_calloc(nn, sizeof *lu, "dense LU");
    ks_int *piv = ks_malloc((size_t)n * sizeof *piv, "dense LU pivots");
    if (!lu || !piv) {
        free(lu);
        free(piv);
        return KS_ERR_MEMORY;
    }

    /* Dense copy (duplicates, if any, summed) and max|a_ij|. */
    double amax = 0.0;
    ks_error e = KS_OK;
    for (ks_int i = 0; i < n && e == KS_OK; i++) {
        if (A->rowptr[i + 1] < A->rowptr[i]) {
            e = ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": rowptr decreases", fn, i);
            break;
        }
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            ks_int j = A->colind[k];
            double v = A->val[k];
            if (j < 0 || j >= n) {
                e = ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": column %" PRId32
                              " outside [0, %" PRId32 ")", fn, i, j, n);
                break;
            }
            if (!isfinite(v)) {
                e = ks_seterr(KS_ERR_NUMERIC, "%s: entry (%" PRId32 ", %" PRId32 ") is %g",
                              fn, i, j, v);
                break;
            }
            lu[(size_t)i * n + j] += v;
        }
    }
    for (size_t q = 0; q < nn && e == KS_OK; q++)
        if (fabs(lu[q]) > amax)
            amax = fabs(lu[q]);
    const double rel = fmax(1e-14, (double)n * DBL_EPSILON);
    const double tol = rel * amax;

    for (ks_int k = 0; k < n && e == KS_OK; k++) {
        /* First row of maximal |a_ik| (deterministic tie-break). */
        ks_int p = k;
        double best = fabs(lu[(size_t)k * n + k]);
        for (ks_int i = k + 1; i < n; i++) {
            double a = fabs(lu[(size_t)i * n + k]);
            if (a > best) {
                best = a;
                p = i;
            }
        }
        piv[k] = p;
        if (!(best > tol)) {
            e = ks_seterr(KS_ERR_NUMERIC, "%s: coarse matrix is singular (pivot %" PRId32
                          "): |u_kk| = %.3g <= %.3g * max|a_ij| = %.3g (n = %" PRId32 ")",
                          fn, k, best, rel, tol, n);
            break;
        }
        if (p != k) {
            double *rk = lu + (size_t)k * n, *rp = lu + (size_t)p * n;
            for (ks_int j = 0; j < n; j++) {
                double t = rk[j];
                rk[j] = rp[j];
                rp[j] = t;
            }
        }
        const double *rk = lu + (size_t)k * n;
        const double ukk = rk[k];
        const int64_t m = n - k - 1; /* rows below k (also the update's row length) */
        /* Multipliers first (serial, O(m)); coarse AMG matrices are sparse
         * enough that many are zero, and those rows need no update. */
        int64_t nz = 0;
        for (ks_int i = k + 1; i < n; i++) {
            double *l = lu + (size_t)i * n + k;
            if (*l != 0.0) {
                *l /= ukk;
                nz++;
            }
        }
        (void)m; /* read only by the pragma */
#pragma omp parallel for schedule(static) if (nz * m > KS_LU_PAR_WORK)
        for (ks_int i = k + 1; i < n; i++) {
            double *ri = lu + (size_t)i * n;
            const double l = ri[k];
            if (l != 0.0)
                for (ks_int j = k + 1; j < n; j++)
                    ri[j] -= l * rk[j];
        }
    }
    if (e != KS_OK) {
        free(lu);
        free(piv);
        return e;
    }
    F->n = n;
    F->lu = lu;
    F->piv = piv;
    return KS_OK;
}

void ks_dense_lu_solve(const ks_dense_lu *F, double *x)
{
    if (!F || F->n <= 0 || !x)
        return;
    const ks_int n = F->n;
    const double *lu = F->lu;
    for (ks_int k = 0; k < n; k++) {
        ks_int p = F->piv[k];
        if (p != k) {
            double t = x[k];
            x[k] = x[p];
            x[p] = t;
        }
    }
    for (ks_int i = 1; i < n; i++) {
        const double *ri = lu + (size_t)i * n;
        double s = x[i];
        for (ks_int j = 0; j < i; j++)
            s -= ri[j] * x[j];
        x[i] = s;
    }
    for (ks_int i = n - 1; i >= 0; i--) {
        const double *ri = lu + (size_t)i * n;
        double s = x[i];
        for (ks_int j = i + 1; j < n; j++)
            s -= ri[j] * x[j];
        x[i] = s / ri[i];
    }
}

ks_error ks_dense_lu_inverse_csr(const ks_dense_lu *F, ks_csr *Ainv)
{
    static const char fn[] = "ks_dense_lu_inverse_csr";
    if (!F || !Ainv || F->n < 0 || (F->n > 0 && (!F->lu || !F->piv)))
        return ks_seterr(KS_ERR_ARG, "%s: NULL or unfactored argument", fn);
    const ks_int n = F->n;
    if ((int64_t)n * n > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "%s: n = %" PRId32 ": n*n entries exceed the 32-bit index "
                         "range", fn, n);
    ks_csr B;
    KS_TRY(ks_csr_alloc(&B, n, n, n * n));
    for (ks_int i = 0; i < n; i++) {
        B.rowptr[i + 1] = (i + 1) * n;
        for (ks_int j = 0; j < n; j++)
            B.colind[(size_t)i * n + j] = j;
    }
    /* A^-1 = U^-1 L^-1 P (PA = LU): W = U^-1 L^-1 by columns of I, then
     * A^-1 = W P, whose column c is W's column pos(c), the row where P I
     * has column c's 1. L^-1 is lower triangular, so a block of columns
     * c0.. of I needs the forward solve from row c0 only (n^3 / 6 of its
     * n^3 / 2 multiply-adds); each column gets the operations
     * ks_dense_lu_solve gives it, but for the zeros it would subtract
     * above the diagonal. Row updates W[i,:] -= l_ij W[j,:] in ascending j,
     * vectorized along the row, by independent column blocks. */
    double *W = B.val;
    ks_int *perm = ks_malloc(2 * (size_t)n * sizeof *perm + 1, "dense inverse permutation");
    double *row = ks_malloc((size_t)n * sizeof *row + 1, "dense inverse row");
    if (!perm || !row) {
        free(perm);
        free(row);
        ks_csr_free(&B);
        return KS_ERR_MEMORY;
    }
    ks_int *pos = perm + n;
    memset(W, 0, (size_t)n * (size_t)n * sizeof *W);
    for (ks_int i = 0; i < n; i++) {
        W[(size_t)i * n + i] = 1.0;
        perm[i] = i; /* row i of P I is row perm[i] of I */
    }
    for (ks_int k = 0; k < n; k++) {
        const ks_int p = F->piv[k], t = perm[k];
        perm[k] = perm[p];
        perm[p] = t;
    }
    for (ks_int i = 0; i < n; i++)
        pos[perm[i]] = i;
    const double *lu = F->lu;
    const ks_int nblk = (n + KS_LU_INV_BLOCK - 1) / KS_LU_INV_BLOCK;
#pragma omp parallel for schedule(dynamic, 1) if ((int64_t)n * n * KS_LU_INV_BLOCK > KS_LU_PAR_WORK)
    for (ks_int b = 0; b < nblk; b++) {
        const ks_int c0 = b * KS_LU_INV_BLOCK;
        const ks_int c1 = c0 + KS_LU_INV_BLOCK < n ? c0 + KS_LU_INV_BLOCK : n;
        for (ks_int i = c0 + 1; i < n; i++) {
            const double *ri = lu + (size_t)i * n;
            double *wi = W + (size_t)i * n;
            for (ks_int j = c0; j < i; j++) {
                const double l = ri[j];
                if (l == 0.0)
                    continue;
                const double *wj = W + (size_t)j * n;
                for (ks_int c = c0; c < c1; c++)
                    wi[c] -= l * wj[c];
            }
        }
        for (ks_int i = n - 1; i >= 0; i--) {
            const double *ri = lu + (size_t)i * n;
            double *wi = W + (size_t)i * n;
            for (ks_int j = i + 1; j < n; j++) {
                const double u = ri[j];
                if (u == 0.0)
                    continue;
                const double *wj = W + (size_t)j * n;
                for (ks_int c = c0; c < c1; c++)
                    wi[c] -= u * wj[c];
            }
            const double d = ri[i];
            for (ks_int c = c0; c < c1; c++)
                wi[c] /= d;
        }
    }
    for (ks_int i = 0; i < n; i++) { /* W P, a row at a time */
        double *wi = W + (size_t)i * n;
        for (ks_int c = 0; c < n; c++)
            row[c] = wi[pos[c]];
        memcpy(wi, row, (size_t)n * sizeof *row);
    }
    free(perm);
    free(row);
    *Ainv = B;
    return KS_OK;
}

void ks_dense_lu_free(ks_dense_lu *F)
{
    if (!F)
        return;
    free(F->lu);
    free(F->piv);
    memset(F, 0, sizeof *F);
}
