/* "jds" host layout: jagged diagonal storage (see other_formats.h). Rows
 * are ordered by decreasing length with a stable counting sort, so the
 * layout, and therefore the result, does not depend on anything but A. */
#include "other_formats.h"

#include <limits.h>

void ks_jds_layout_free(void *layout)
{
    ks_jds_layout *L = layout;
    if (!L)
        return;
    free(L->perm);
    free(L->jd_ptr);
    free(L->col);
    free(L->val);
    free(L);
}

ks_error ks_jds_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    (void)prm; /* no parameters apply to jds */
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "jds layout: NULL output pointer");
    *layout = NULL;
    KS_TRY(ks_ofmt_check_csr(A, "jds"));
    /* The kernel forms jd_ptr[j] + k for k < nrows. */
    if ((int64_t)A->nnz + A->nrows > INT_MAX)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "jds: nnz + nrows = %lld exceeds the 32-bit index range",
                         (long long)A->nnz + A->nrows);
    ks_int n = A->nrows, maxlen = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        if (len > maxlen)
            maxlen = len;
    }
    ks_jds_layout *L = ks_calloc(1, sizeof *L, "jds layout");
    if (!L)
        return KS_ERR_MEMORY;
    L->nrows = n;
    L->ncols = A->ncols;
    L->nnz = A->nnz;
    L->njd = maxlen;
    L->perm = ks_malloc(sizeof(ks_int) * (size_t)n, "jds permutation");
    L->jd_ptr = ks_calloc((size_t)maxlen + 1, sizeof(ks_int), "jds diagonal pointers");
    L->col = ks_malloc(sizeof(ks_int) * (size_t)A->nnz, "jds column indices");
    L->val = ks_malloc(sizeof(double) * (size_t)A->nnz, "jds values");
    /* cnt[len]: rows of each length, then the first position of that length. */
    ks_int *cnt = ks_calloc((size_t)maxlen + 2, sizeof(ks_int), "jds length counts");
    if (!L->perm || !L->jd_ptr || !L->col || !L->val || !cnt) {
        free(cnt);
        ks_jds_layout_free(L);
        return KS_ERR_MEMORY;
    }
    for (ks_int i = 0; i < n; i++)
        cnt[A->rowptr[i + 1] - A->rowptr[i]]++;
    /* Diagonal j holds one entry of every row longer than j. */
    ks_int longer = n; /* rows with length > j, for j = 0, 1, ... */
    for (ks_int j = 0; j < maxlen; j++) {
        longer -= cnt[j];
        L->jd_ptr[j + 1] = L->jd_ptr[j] + longer;
    }
    /* Positions: longest rows first, ties in row order. */
    ks_int pos = 0;
    for (ks_int len = maxlen; len >= 0; len--) {
        ks_int c = cnt[len];
        cnt[len] = pos;
        pos += c;
    }
    for (ks_int i = 0; i < n; i++)
        L->perm[cnt[A->rowptr[i + 1] - A->rowptr[i]]++] = i;
    free(cnt);
    for (ks_int k = 0; k < n; k++) {
        ks_int r = L->perm[k];
        ks_int len = A->rowptr[r + 1] - A->rowptr[r];
        for (ks_int j = 0; j < len; j++) {
            ks_int idx = L->jd_ptr[j] + k;
            L->col[idx] = A->colind[A->rowptr[r] + j];
            L->val[idx] = A->val[A->rowptr[r] + j];
        }
    }
    *layout = L;
    return KS_OK;
}

/* The kernel's walk: position k takes entry j from diagonal j while the
 * diagonal is longer than k; y is written through the permutation. */
void ks_jds_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_jds_layout *L = layout;
    for (ks_int k = 0; k < L->nrows; k++) {
        double s = 0.0;
        for (ks_int j = 0; j < L->njd; j++) {
            ks_int idx = L->jd_ptr[j] + k;
            if (idx >= L->jd_ptr[j + 1])
                break;
            s += L->val[idx] * x[L->col[idx]];
        }
        ks_int r = L->perm[k];
        y[r] = beta == 0.0 ? alpha * s : alpha * s + beta * y[r];
    }
}

/* values 8 + column indices 4 + x 8 per entry; permutation 4 and y 8 per
 * row; the diagonal pointers 4 * (njd + 1) once (every thread reads the
 * same ones, so caches serve them). */
double ks_jds_layout_bytes(const void *layout)
{
    const ks_jds_layout *L = layout;
    return 20.0 * L->nnz + 12.0 * L->nrows + 4.0 * ((double)L->njd + 1.0);
}

ks_error ks_jds_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_jds_layout *L = layout;
    KS_TRY(ks_csr_alloc(A, L->nrows, L->ncols, L->nnz));
    /* Length of position k: the diagonals longer than k. */
    for (ks_int i = 0; i <= L->nrows; i++)
        A->rowptr[i] = 0;
    for (ks_int j = 0; j < L->njd; j++)
        for (ks_int k = 0; k < L->jd_ptr[j + 1] - L->jd_ptr[j]; k++)
            A->rowptr[L->perm[k] + 1]++;
    for (ks_int i = 0; i < L->nrows; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    /* Entry j of a row is its j-th CSR entry, so columns stay sorted. */
    for (ks_int j = 0; j < L->njd; j++)
        for (ks_int k = 0; k < L->jd_ptr[j + 1] - L->jd_ptr[j]; k++) {
            ks_int r = L->perm[k];
            A->colind[A->rowptr[r] + j] = L->col[L->jd_ptr[j] + k];
            A->val[A->rowptr[r] + j] = L->val[L->jd_ptr[j] + k];
        }
    return KS_OK;
}
