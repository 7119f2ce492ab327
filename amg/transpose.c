/* CSR transpose by counting sort, O(nnz + nrows + ncols).
 *
 * Rows of A are cut into nb contiguous blocks; each block counts its column
 * histogram, the per-(column, block) offsets are laid out column-major, and
 * each block then scatters its entries. Since blocks are in row order and a
 * block scatters its rows in order, every row of A^T lists A's rows in
 * ascending order: the result is sorted and identical for any nb or thread
 * count (a stable counting sort). */
#include "amg_impl.h"

#include <inttypes.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many entries one block (serial) is faster than the extra
 * histogram pass and fork/join. */
#define KS_TRANSPOSE_PAR_NNZ 32768

/* Shape, rowptr monotonicity and column ranges (the message names the first
 * bad row): a bad index would otherwise write out of bounds. */
static ks_error check_input(const ks_csr *A)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "ks_csr_transpose: NULL matrix");
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr ||
        (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "ks_csr_transpose: matrix is not allocated or has a "
                         "negative size");
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG, "ks_csr_transpose: rowptr[0] = %" PRId32 ", rowptr[nrows] = %"
                         PRId32 " (expected 0 and nnz = %" PRId32 ")",
                         A->rowptr[0], A->rowptr[A->nrows], A->nnz);
    const ks_int n = A->nrows, m = A->ncols;
    const ks_int *rp = A->rowptr, *ci = A->colind;
    ks_int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad) if (A->nnz > KS_TRANSPOSE_PAR_NNZ)
    for (ks_int i = 0; i < n; i++) {
        if (rp[i + 1] < rp[i]) {
            bad = i < bad ? i : bad;
            continue;
        }
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] < 0 || ci[k] >= m) {
                bad = i < bad ? i : bad;
                break;
            }
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "ks_csr_transpose: row %" PRId32 ": decreasing rowptr or "
                         "column index outside [0, %" PRId32 ")", bad, m);
    return KS_OK;
}

ks_error ks_csr_transpose(const ks_csr *A, ks_csr *AT)
{
    KS_TRY(check_input(A));
    if (!AT || AT == A)
        return ks_seterr(KS_ERR_ARG, "ks_csr_transpose: %s",
                         AT ? "output is the input matrix" : "NULL output");
    const ks_int n = A->nrows, m = A->ncols, nnz = A->nnz;
    const ks_int *rp = A->rowptr, *ci = A->colind;
    const double *va = A->val;

    /* Blocks: up to one per thread, but the histograms (nb * m counters)
     * must stay small next to nnz or the offset pass dominates. */
    int nb = 1;
#ifdef _OPENMP
    if (nnz > KS_TRANSPOSE_PAR_NNZ) {
        int64_t cap = (int64_t)nnz / ((int64_t)m + 1);
        nb = omp_get_max_threads();
        if (cap < nb)
            nb = cap < 1 ? 1 : (int)cap;
    }
#endif

    ks_csr T;
    KS_TRY(ks_csr_alloc(&T, m, n, nnz));
    ks_int *hist = ks_calloc((size_t)nb * ((size_t)m + 1), sizeof *hist, "transpose histograms");
    if (!hist) {
        ks_csr_free(&T);
        return KS_ERR_MEMORY;
    }
    ks_int *trp = T.rowptr;

    /* Pass 1: per-block column counts. */
#pragma omp parallel for schedule(static) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int *h = hist + (size_t)b * ((size_t)m + 1);
        for (ks_int k = rp[lo]; k < rp[hi]; k++)
            h[ci[k]]++;
    }
    /* Pass 2: per column, turn block counts into offsets within the column;
     * column totals go to trp[c + 1]. */
#pragma omp parallel for schedule(static) if (nb > 1)
    for (ks_int c = 0; c < m; c++) {
        ks_int run = 0;
        for (int b = 0; b < nb; b++) {
            ks_int *h = hist + (size_t)b * ((size_t)m + 1) + c;
            ks_int t = *h;
            *h = run;
            run += t;
        }
        trp[c + 1] = run;
    }
    trp[0] = 0;
    for (ks_int c = 0; c < m; c++)
        trp[c + 1] += trp[c];
    /* Pass 3: scatter, rows in ascending order within each block. */
#pragma omp parallel for schedule(static) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int *h = hist + (size_t)b * ((size_t)m + 1);
        for (ks_int i = lo; i < hi; i++)
            for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
                ks_int c = ci[k];
                ks_int pos = trp[c] + h[c]++;
                T.colind[pos] = i;
                T.val[pos] = va[k];
            }
    }
    free(hist);
    *AT = T;
    return KS_OK;
}
