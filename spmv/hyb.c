/* "hyb" host layout: an ELL part of width K (its own small ELL, independent
 * of the "ell" format) plus the entries beyond K as row-sorted COO, which
 * the cuda side runs with the coo kernels. K comes from params.ell_width or,
 * when that is 0, from the row-length distribution (ks_hyb_auto_width). */
#include "other_formats.h"

/* Rows must be plentiful enough at width K to keep a GPU busy (4096) and a
 * third of all rows, so the ELL padding stays below 3x its entries. */
#define KS_HYB_MIN_ROWS 4096

ks_int ks_hyb_auto_width(const ks_csr *A)
{
    if (!A || A->nrows <= 0)
        return 0;
    ks_int n = A->nrows, maxlen = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        if (len > maxlen)
            maxlen = len;
    }
    ks_int *hist = calloc((size_t)maxlen + 1, sizeof *hist);
    if (!hist)
        return 0; /* no memory for the histogram: pure COO is still correct */
    for (ks_int i = 0; i < n; i++)
        hist[A->rowptr[i + 1] - A->rowptr[i]]++;
    /* atleast = rows with length >= K, for K = 1, 2, ... */
    int64_t atleast = n - hist[0];
    ks_int K = 0;
    for (ks_int k = 1; k <= maxlen; k++) {
        if (atleast < KS_HYB_MIN_ROWS || 3 * atleast < (int64_t)n)
            break;
        K = k;
        atleast -= hist[k];
    }
    free(hist);
    return K;
}

void ks_hyb_layout_free(void *layout)
{
    ks_hyb_layout *L = layout;
    if (!L)
        return;
    free(L->ell_col);
    free(L->ell_val);
    ks_coo_layout_clear(&L->coo);
    free(L);
}

/* Entries stored at width K: the K * nrows ELL slots plus the overflow. */
static double stored_at(const ks_csr *A, ks_int K)
{
    double over = 0.0;
    for (ks_int i = 0; i < A->nrows; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        if (len > K)
            over += len - K;
    }
    return (double)K * A->nrows + over;
}

ks_error ks_hyb_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "hyb layout: NULL output pointer");
    *layout = NULL;
    int want = prm ? prm->ell_width : 0;
    if (want < 0)
        return ks_seterr(KS_ERR_ARG,
                         "hyb: ell_width = %d; use 0 (from the row lengths) or a positive width",
                         want);
    double max_fill;
    KS_TRY(ks_ofmt_max_fill(prm, "hyb", &max_fill));
    KS_TRY(ks_ofmt_check_csr(A, "hyb"));
    ks_int n = A->nrows, K;
    if (want > 0) {
        K = want;
        double stored = stored_at(A, K);
        if (stored > max_fill * A->nnz) {
            char h[32];
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "hyb: ell_width %d pads %d rows to %.0f stored entries (%s) for "
                             "%d nonzeros = %.1fx; max_fill %g",
                             K, (int)n, stored, ks_ofmt_human_bytes(12.0 * stored, h),
                             (int)A->nnz, A->nnz ? stored / A->nnz : stored, max_fill);
        }
    } else {
        /* The rule keeps the ELL padding within 3x its entries; a smaller
         * max_fill narrows K until the whole layout fits. */
        K = ks_hyb_auto_width(A);
        while (K > 0 && stored_at(A, K) > max_fill * A->nnz)
            K--;
    }

    ks_hyb_layout *L = ks_calloc(1, sizeof *L, "hyb layout");
    if (!L)
        return KS_ERR_MEMORY;
    L->nrows = n;
    L->ncols = A->ncols;
    L->nnz = A->nnz;
    L->width = K;
    size_t slots = (size_t)K * (size_t)n;
    L->ell_col = ks_malloc(sizeof(ks_int) * slots, "hyb ELL column indices");
    L->ell_val = ks_malloc(sizeof(double) * slots, "hyb ELL values");
    if (!L->ell_col || !L->ell_val) {
        ks_hyb_layout_free(L);
        return KS_ERR_MEMORY;
    }
    ks_error e = ks_coo_fill_overflow(A, K, &L->coo);
    if (e != KS_OK) {
        ks_hyb_layout_free(L);
        return e;
    }
    int64_t ell_nnz = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int start = A->rowptr[i], len = A->rowptr[i + 1] - start;
        ks_int m = len < K ? len : K;
        for (ks_int j = 0; j < K; j++) {
            size_t s = (size_t)j * (size_t)n + (size_t)i;
            L->ell_col[s] = j < m ? A->colind[start + j] : -1;
            L->ell_val[s] = j < m ? A->val[start + j] : 0.0;
        }
        ell_nnz += m;
    }
    L->ell_nnz = (ks_int)ell_nnz;
    *layout = L;
    return KS_OK;
}

/* The ELL pass writes every row (alpha, beta), stopping at the first
 * padding slot; the COO pass then adds alpha * overflow (beta 1). */
void ks_hyb_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_hyb_layout *L = layout;
    ks_int n = L->nrows;
    for (ks_int i = 0; i < n; i++) {
        double s = 0.0;
        for (ks_int j = 0; j < L->width; j++) {
            size_t slot = (size_t)j * (size_t)n + (size_t)i;
            ks_int c = L->ell_col[slot];
            if (c < 0)
                break;
            s += L->ell_val[slot] * x[c];
        }
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
    if (L->coo.nnz > 0)
        ks_coo_layout_apply(&L->coo, alpha, x, 1.0, y);
}

/* ELL: values and indices of all K * nrows slots (12), x per entry (8;
 * padding gathers nothing), y written (8 per row); then the COO pass over
 * the overflow, which reads and writes y of the rows it touches. */
double ks_hyb_layout_bytes(const void *layout)
{
    const ks_hyb_layout *L = layout;
    double b = 12.0 * (double)L->width * L->nrows + 8.0 * L->ell_nnz + 8.0 * L->nrows;
    if (L->coo.nnz > 0)
        b += ks_coo_bytes(&L->coo, 1);
    return b;
}

ks_error ks_hyb_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_hyb_layout *L = layout;
    ks_int n = L->nrows;
    KS_TRY(ks_csr_alloc(A, n, L->ncols, L->nnz));
    for (ks_int i = 0; i <= n; i++)
        A->rowptr[i] = 0;
    for (ks_int i = 0; i < n; i++)
        for (ks_int j = 0; j < L->width && L->ell_col[(size_t)j * n + i] >= 0; j++)
            A->rowptr[i + 1]++;
    for (ks_int k = 0; k < L->coo.nnz; k++)
        A->rowptr[L->coo.row[k] + 1]++;
    for (ks_int i = 0; i < n; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    /* A row's ELL slots are its first entries, its overflow the rest. */
    ks_int k = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int p = A->rowptr[i];
        for (ks_int j = 0; j < L->width; j++) {
            size_t slot = (size_t)j * (size_t)n + (size_t)i;
            if (L->ell_col[slot] < 0)
                break;
            A->colind[p] = L->ell_col[slot];
            A->val[p++] = L->ell_val[slot];
        }
        for (; k < L->coo.nnz && L->coo.row[k] == i; k++) {
            A->colind[p] = L->coo.col[k];
            A->val[p++] = L->coo.val[k];
        }
    }
    return KS_OK;
}
