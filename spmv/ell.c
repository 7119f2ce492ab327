/* Host layouts of "ell" (ELL-T) and "ellr" (ELLR-T): conversion from CSR
 * with refusal of matrices whose padding would dominate, the float64
 * reference apply (same lanes and reduction order as the kernels of
 * ell_cuda.cu), bytes per apply, and the way back to CSR. The layout itself
 * is described in ell_family.h. */
#include "ell_family.h"

#include <limits.h>
#include <math.h>
#include <string.h>

ks_error ks_ell_family_check_csr(const ks_csr *A, const char *name)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", name);
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr ||
        (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: malformed CSR (%d x %d, nnz %d)", name,
                         (int)A->nrows, (int)A->ncols, (int)A->nnz);
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG,
                         "%s: rowptr[0] = %d and rowptr[nrows] = %d, expected 0 and nnz = %d",
                         name, (int)A->rowptr[0], (int)A->rowptr[A->nrows], (int)A->nnz);
    for (ks_int i = 0; i < A->nrows; i++)
        if (A->rowptr[i + 1] < A->rowptr[i])
            return ks_seterr(KS_ERR_ARG, "%s: rowptr decreases at row %d", name, (int)i);
    return KS_OK;
}

ks_error ks_ell_family_max_fill(const ks_spmv_params *prm, const char *name, double dflt,
                                double *max_fill)
{
    double f = prm ? prm->max_fill : 0.0;
    if (isnan(f) || f < 0.0)
        return ks_seterr(KS_ERR_ARG, "%s: max_fill = %g; use 0 (default %g) or a positive "
                         "ratio of stored slots to nonzeros", name, f, dflt);
    *max_fill = f == 0.0 ? dflt : f;
    return KS_OK;
}

int ks_ell_auto_threads_per_row(ks_int width)
{
    int t = 1;
    while (t < 32 && width > 32 * t)
        t *= 2;
    return t;
}

/* Padding column of row i (see ell_family.h): its last stored column, or
 * min(i, ncols - 1) when it has none. Only called when ncols > 0. */
static ks_int pad_column(const ks_csr *A, ks_int i)
{
    if (A->rowptr[i + 1] > A->rowptr[i])
        return A->colind[A->rowptr[i + 1] - 1];
    return i < A->ncols ? i : A->ncols - 1;
}

static ks_error ell_build(const ks_csr *A, const ks_spmv_params *prm, const char *name,
                          int stop_at_row_end, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "%s: NULL layout pointer", name);
    *layout = NULL;
    KS_TRY(ks_ell_family_check_csr(A, name));
    int tpr = prm ? prm->threads_per_row : 0;
    if (tpr < 0 || (tpr > 0 && (tpr > 32 || 32 % tpr != 0)))
        return ks_seterr(KS_ERR_ARG,
                         "%s: threads_per_row = %d; use 0 (automatic) or a divisor of 32 "
                         "(1, 2, 4, 8, 16, 32)",
                         name, tpr);
    double max_fill;
    KS_TRY(ks_ell_family_max_fill(prm, name, KS_ELL_DEFAULT_MAX_FILL, &max_fill));

    ks_int width = 0, widest = 0;
    for (ks_int i = 0; i < A->nrows; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        if (len > width) {
            width = len;
            widest = i;
        }
    }
    const int T = tpr > 0 ? tpr : ks_ell_auto_threads_per_row(width);
    const int64_t wpad = ((int64_t)width + T - 1) / T * T;
    const int64_t ld = ((int64_t)A->nrows + 31) / 32 * 32;
    /* The fill ratio counts the real rows only: rounding ld up to 32 rows
     * is alignment, not a property of the matrix (a 1x1 must not refuse). */
    const double slots = (double)A->nrows * (double)wpad;
    const double stored_bytes = (double)ld * (double)wpad * 12.0 +
                                (stop_at_row_end ? 4.0 * A->nrows : 0.0);
    const double csr_bytes = 12.0 * A->nnz + 4.0 * ((double)A->nrows + 1.0);
    if (slots > max_fill * (double)A->nnz)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "%s: row %d has %d entries, mean %.1f: padded size %.1f MB = %.1fx "
                         "CSR (stored slots / nnz = %.1f > max_fill %g); sliced_ell or sell "
                         "suit uneven rows",
                         name, (int)widest, (int)width,
                         A->nrows > 0 ? (double)A->nnz / A->nrows : 0.0, stored_bytes / 1e6,
                         stored_bytes / csr_bytes, A->nnz > 0 ? slots / A->nnz : INFINITY,
                         max_fill);
    if (ld > INT_MAX || wpad > INT_MAX)
        return ks_seterr(KS_ERR_SIZE, "%s: %d rows padded to %lld exceed the 32-bit index range",
                         name, (int)A->nrows, (long long)ld);

    ks_ell_layout *L = ks_calloc(1, sizeof *L, "ell layout");
    if (!L)
        return KS_ERR_MEMORY;
    L->name = name;
    L->nrows = A->nrows;
    L->ncols = A->ncols;
    L->nnz = A->nnz;
    L->width = width;
    L->wpad = (ks_int)wpad;
    L->ld = (ks_int)ld;
    L->threads_per_row = T;
    L->stop_at_row_end = stop_at_row_end;
    const size_t nslots = (size_t)ld * (size_t)wpad;
    L->rowlen = ks_malloc(sizeof(ks_int) * (size_t)A->nrows, "ell row lengths");
    L->colind = ks_malloc(sizeof(ks_int) * nslots, "ell column indices");
    L->val = ks_malloc(sizeof(double) * nslots, "ell values");
    if (!L->rowlen || !L->colind || !L->val) {
        ks_ell_layout_free(L);
        return KS_ERR_MEMORY;
    }
    /* One pass over every slot, rows in parallel (each row owns its
     * slots, so the layout does not depend on the thread count). Rows past
     * nrows (alignment) are never read: column 0, value 0. A padding
     * column is only needed when wpad > 0, which implies ncols > 0. */
    const size_t step = (size_t)ld * (size_t)T;
    const ks_int nblocks = (ks_int)(wpad / T), nrows = A->nrows;
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < (ks_int)ld; i++) {
        const ks_int j0 = i < nrows ? A->rowptr[i] : 0;
        const ks_int len = i < nrows ? A->rowptr[i + 1] - j0 : 0;
        const ks_int pc = i < nrows && nblocks > 0 ? pad_column(A, i) : 0;
        if (i < nrows)
            L->rowlen[i] = len;
        size_t base = (size_t)i * (size_t)T;
        ks_int k = 0;
        for (ks_int b = 0; b < nblocks; b++, base += step)
            for (int t = 0; t < T; t++, k++) {
                const int stored = k < len;
                L->colind[base + t] = stored ? A->colind[j0 + k] : pc;
                L->val[base + t] = stored ? A->val[j0 + k] : 0.0;
            }
    }
    *layout = L;
    return KS_OK;
}

ks_error ks_ell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    return ell_build(A, prm, "ell", 0, layout);
}

ks_error ks_ellr_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    return ell_build(A, prm, "ellr", 1, layout);
}

/* Lane j of row i sums entries j, j + T, ... (ell: all wpad / T slots;
 * ellr: up to the row's length), then the lanes combine as the shuffle tree
 * does: for off = T/2 .. 1, lane l += lane l + off. */
void ks_ell_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_ell_layout *L = layout;
    const int T = L->threads_per_row;
    const size_t step = (size_t)L->ld * (size_t)T;
    for (ks_int i = 0; i < L->nrows; i++) {
        double part[32];
        const ks_int end = L->stop_at_row_end ? L->rowlen[i] : L->wpad;
        for (int j = 0; j < T; j++) {
            double s = 0.0;
            size_t off = (size_t)i * T + (size_t)j;
            for (ks_int k = j; k < end; k += T, off += step)
                s += L->val[off] * x[L->colind[off]];
            part[j] = s;
        }
        for (int off = T / 2; off > 0; off /= 2)
            for (int l = 0; l < off; l++)
                part[l] += part[l + off];
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[i] = beta == 0.0 ? alpha * part[0] : alpha * part[0] + beta * y[i];
    }
}

/* Bytes per apply (beta = 0), counting what the kernel reads:
 *   ell:  every slot of the real rows, padding included: value 8 + index 4
 *         + the x gather 8 (padding reads x too, at a column its row
 *         already touched, so mostly a cache hit: the count is an upper
 *         bound, like the once-per-entry x convention of every format);
 *   ellr: the row lengths 4*nrows + the stored entries only, 20*nnz (the
 *         lanes stop at the row's end; sectors shared with longer rows of
 *         the same warp still move, so this is a lower bound when row
 *         lengths vary within a warp);
 * plus y written 8*nrows. */
double ks_ell_layout_bytes(const void *layout)
{
    const ks_ell_layout *L = layout;
    const double y = 8.0 * L->nrows;
    if (L->stop_at_row_end)
        return 20.0 * L->nnz + 4.0 * L->nrows + y;
    return 20.0 * (double)L->nrows * (double)L->wpad + y;
}

void ks_ell_layout_free(void *layout)
{
    ks_ell_layout *L = layout;
    if (!L)
        return;
    free(L->rowlen);
    free(L->colind);
    free(L->val);
    free(L);
}

ks_error ks_ell_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_ell_layout *L = layout;
    if (!L || !A)
        return ks_seterr(KS_ERR_ARG, "ell layout to CSR: NULL argument");
    KS_TRY(ks_csr_alloc(A, L->nrows, L->ncols, L->nnz));
    ks_int pos = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < L->nrows; i++) {
        for (ks_int k = 0; k < L->rowlen[i]; k++) {
            size_t s = ks_ell_slot(L, i, k);
            A->colind[pos] = L->colind[s];
            A->val[pos] = L->val[s];
            pos++;
        }
        A->rowptr[i + 1] = pos;
    }
    return KS_OK;
}
