/* "coo" host layout: row-sorted coordinates (the CSR order, so column
 * indices and values are borrowed from the CSR, which outlives the layout)
 * plus the list of empty rows; and the helpers the other formats of
 * other_formats.h share (validation, max_fill, sizes in words). */
#include "other_formats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */
ks_error ks_ofmt_check_csr(const ks_csr *A, const char *fmt)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s layout: NULL matrix", fmt);
    ks_error e = ks_csr_validate(A);
    if (e != KS_OK)
        return ks_adderr(e, "%s layout", fmt);
    return KS_OK;
}

ks_error ks_ofmt_max_fill(const ks_spmv_params *prm, const char *fmt, double *max_fill)
{
    double m = prm ? prm->max_fill : 0.0;
    if (m == 0.0) {
        *max_fill = KS_OFMT_DEFAULT_MAX_FILL;
        return KS_OK;
    }
    if (!isfinite(m) || m < 1.0)
        return ks_seterr(KS_ERR_ARG,
                         "%s: max_fill = %g; use 0 (default %g) or a finite value >= 1 "
                         "(stored entries per nonzero)",
                         fmt, m, KS_OFMT_DEFAULT_MAX_FILL);
    *max_fill = m;
    return KS_OK;
}

const char *ks_ofmt_human_bytes(double bytes, char *buf)
{
    if (bytes >= 1e9)
        snprintf(buf, 32, "%.1f GB", bytes / 1e9);
    else if (bytes >= 1e6)
        snprintf(buf, 32, "%.1f MB", bytes / 1e6);
    else if (bytes >= 1e3)
        snprintf(buf, 32, "%.1f KB", bytes / 1e3);
    else
        snprintf(buf, 32, "%.0f B", bytes);
    return buf;
}

/* ---------------------------------------------------------------- coo */
void ks_coo_layout_clear(ks_coo_layout *L)
{
    if (!L)
        return;
    free(L->row);
    if (L->owns_colval) {
        free(L->col);
        free(L->val);
    }
    free(L->empty);
    L->row = L->col = L->empty = NULL;
    L->val = NULL;
}

void ks_coo_layout_free(void *layout)
{
    ks_coo_layout_clear(layout);
    free(layout);
}

ks_error ks_coo_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    (void)prm; /* no parameters apply to coo */
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "coo layout: NULL output pointer");
    *layout = NULL;
    KS_TRY(ks_ofmt_check_csr(A, "coo"));
    ks_coo_layout *L = ks_calloc(1, sizeof *L, "coo layout");
    if (!L)
        return KS_ERR_MEMORY;
    L->nrows = A->nrows;
    L->ncols = A->ncols;
    L->nnz = A->nnz;
    L->col = A->colind;
    L->val = A->val;
    L->owns_colval = 0;
    for (ks_int i = 0; i < A->nrows; i++)
        L->nempty += A->rowptr[i + 1] == A->rowptr[i];
    L->nused = A->nrows - L->nempty;
    L->row = ks_malloc(sizeof(ks_int) * (size_t)A->nnz + 1, "coo row indices");
    L->empty = ks_malloc(sizeof(ks_int) * (size_t)L->nempty + 1, "coo empty rows");
    if (!L->row || !L->empty) {
        ks_coo_layout_free(L);
        return KS_ERR_MEMORY;
    }
    ks_int ne = 0;
    for (ks_int i = 0; i < A->nrows; i++) {
        if (A->rowptr[i + 1] == A->rowptr[i])
            L->empty[ne++] = i;
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            L->row[j] = i;
    }
    *layout = L;
    return KS_OK;
}

ks_error ks_coo_fill_overflow(const ks_csr *A, ks_int skip, ks_coo_layout *L)
{
    int64_t n = 0;
    ks_int used = 0;
    for (ks_int i = 0; i < A->nrows; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        if (len > skip) {
            n += len - skip;
            used++;
        }
    }
    L->nrows = A->nrows;
    L->ncols = A->ncols;
    L->nnz = (ks_int)n;
    L->nused = used;
    L->nempty = 0;
    L->owns_colval = 1;
    L->row = ks_malloc(sizeof(ks_int) * (size_t)n + 1, "coo overflow rows");
    L->col = ks_malloc(sizeof(ks_int) * (size_t)n + 1, "coo overflow columns");
    L->val = ks_malloc(sizeof(double) * (size_t)n + 1, "coo overflow values");
    if (!L->row || !L->col || !L->val) {
        ks_coo_layout_clear(L);
        return KS_ERR_MEMORY;
    }
    ks_int k = 0;
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int j = A->rowptr[i] + skip; j < A->rowptr[i + 1]; j++) {
            L->row[k] = i;
            L->col[k] = A->colind[j];
            L->val[k] = A->val[j];
            k++;
        }
    return KS_OK;
}

/* One row's sum at a time, entries in order; beta == 0 never reads y. */
void ks_coo_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_coo_layout *L = layout;
    for (ks_int e = 0; e < L->nempty; e++) {
        ks_int r = L->empty[e];
        y[r] = beta == 0.0 ? 0.0 : beta * y[r];
    }
    ks_int k = 0;
    while (k < L->nnz) {
        ks_int r = L->row[k];
        double s = 0.0;
        for (; k < L->nnz && L->row[k] == r; k++)
            s += L->val[k] * x[L->col[k]];
        y[r] = beta == 0.0 ? alpha * s : alpha * s + beta * y[r];
    }
}

double ks_coo_bytes(const ks_coo_layout *L, int accumulate)
{
    double ntiles = ceil((double)L->nnz / KS_COO_TILE);
    /* row + col + val (16) and x (8) per entry; per tile the first and last
     * row read by both kernels (16) and two partial sums written then read
     * (32); y as documented in other_formats.h. */
    double b = 24.0 * L->nnz + 48.0 * ntiles;
    if (accumulate)
        b += 16.0 * L->nused;
    else
        b += 8.0 * L->nused + 12.0 * L->nempty;
    return b;
}

double ks_coo_layout_bytes(const void *layout)
{
    return ks_coo_bytes(layout, 0);
}

ks_error ks_coo_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_coo_layout *L = layout;
    KS_TRY(ks_csr_alloc(A, L->nrows, L->ncols, L->nnz));
    for (ks_int i = 0; i <= L->nrows; i++)
        A->rowptr[i] = 0;
    for (ks_int k = 0; k < L->nnz; k++)
        A->rowptr[L->row[k] + 1]++;
    for (ks_int i = 0; i < L->nrows; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    /* Entries are row-sorted and, within a row, in CSR order already. */
    if (L->nnz > 0) {
        memcpy(A->colind, L->col, sizeof(ks_int) * (size_t)L->nnz);
        memcpy(A->val, L->val, sizeof(double) * (size_t)L->nnz);
    }
    return KS_OK;
}
