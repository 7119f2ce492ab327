/* CSR transpose by counting sort, O(nnz + nrows + ncols).
 *
 * Rows of A are cut into nb contiguous blocks; each block counts its column
 * histogram, the per-(column, block) offsets are laid out column-major, and
 * each block then scatters its entries. Since blocks are in row order and a
 * block scatters its rows in order, every row of A^T lists A's rows in
 * ascending order: the result is sorted and identical for any nb or thread
 * count (a stable counting sort). */
#include "csr_kernels.h"
#include "../../matrices/csr_check.h"

#include <inttypes.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many entries one block (serial) is faster than the extra
 * histogram pass and fork/join. */
#define KS_TRANSPOSE_PAR_NNZ 32768

ks_error ks_csr_transpose(const ks_csr *A, ks_csr *AT)
{
    /* a bad index would write out of bounds (val may be NULL: a pattern) */
    KS_TRY(ks_csr_check(A, "ks_csr_transpose", 0));
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
    if (!va) { /* a pattern: no values to carry */
        free(T.val);
        T.val = NULL;
    }

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
                if (va)
                    T.val[pos] = va[k];
            }
    }
    free(hist);
    *AT = T;
    return KS_OK;
}
