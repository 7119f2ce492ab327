/* Host layouts of "sliced_ell" and "sell" (SELL-C-sigma, Kreutzer et al.
 * 2014): row sorting within windows, slicing, refusal when the padding
 * would dominate, the float64 reference apply (the kernel's loop, one row at
 * a time), bytes per apply and the way back to CSR. The layout is described
 * in ell_family.h. */
#include "ell_family.h"

#include <limits.h>
#include <math.h>
#include <string.h>

typedef struct {
    ks_int len, row;
} len_row;

/* Longest first; ties keep the original order, so the permutation does not
 * depend on qsort's (unstable) algorithm. */
static int cmp_len_desc(const void *a, const void *b)
{
    const len_row *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? 1 : -1;
    return (x->row > y->row) - (x->row < y->row);
}

int ks_sell_sort_rows(const ks_csr *A, int sigma, ks_int *perm, ks_int *rowlen)
{
    const ks_int n = A->nrows;
    len_row *order = ks_malloc(sizeof *order * ((size_t)n + 1), "sell row order");
    if (!order)
        return -1;
    for (ks_int i = 0; i < n; i++) {
        order[i].len = A->rowptr[i + 1] - A->rowptr[i];
        order[i].row = i;
    }
    if (sigma > 1) {
        const ks_int nwin = (ks_int)(((int64_t)n + sigma - 1) / sigma);
#pragma omp parallel for schedule(dynamic, 16)
        for (ks_int w = 0; w < nwin; w++) {
            const int64_t w0 = (int64_t)w * sigma, w1 = w0 + sigma < n ? w0 + sigma : n;
            qsort(order + w0, (size_t)(w1 - w0), sizeof *order, cmp_len_desc);
        }
    }
    int permuted = 0;
    for (ks_int p = 0; p < n; p++) {
        perm[p] = order[p].row;
        rowlen[p] = order[p].len;
        permuted |= order[p].row != p;
    }
    free(order);
    return permuted;
}

static ks_error check_shape(const char *name, int C, int sigma)
{
    if (C < 1 || C > KS_SELL_MAX_SLICE_HEIGHT || (C & (C - 1)) != 0)
        return ks_seterr(KS_ERR_ARG,
                         "%s: slice_height = %d; use 0 (default %d) or a power of two from 1 "
                         "to %d",
                         name, C, KS_SELL_DEFAULT_SLICE_HEIGHT, KS_SELL_MAX_SLICE_HEIGHT);
    if (sigma < 1 || (sigma != 1 && sigma % C != 0))
        return ks_seterr(KS_ERR_ARG,
                         "%s: sort_window (sigma) = %d; use 0 (default %d C), 1 (no sorting) "
                         "or a multiple of slice_height %d",
                         name, sigma, KS_SELL_DEFAULT_SIGMA_SLICES, C);
    return KS_OK;
}

/* Padding column of the row at sorted position p, original row `row`: its
 * last stored column, or min(row, ncols - 1) when empty (ncols > 0). */
static ks_int pad_column(const ks_csr *A, ks_int row)
{
    if (A->rowptr[row + 1] > A->rowptr[row])
        return A->colind[A->rowptr[row + 1] - 1];
    return row < A->ncols ? row : A->ncols - 1;
}

ks_error ks_sell_build(const ks_csr *A, const char *name, int C, int sigma, double max_fill,
                       ks_sell_layout **out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "%s: NULL layout pointer", name);
    *out = NULL;
    KS_TRY(ks_ell_family_check_csr(A, name));
    KS_TRY(check_shape(name, C, sigma));
    if (isnan(max_fill))
        return ks_seterr(KS_ERR_ARG, "%s: max_fill is NaN", name);
    if (max_fill <= 0.0)
        max_fill = KS_SELL_DEFAULT_MAX_FILL;

    const ks_int n = A->nrows;
    const int64_t nslices = ((int64_t)n + C - 1) / C;
    ks_sell_layout *L = ks_calloc(1, sizeof *L, "sell layout");
    if (!L)
        return KS_ERR_MEMORY;
    L->name = name;
    L->nrows = n;
    L->ncols = A->ncols;
    L->nnz = A->nnz;
    L->C = C;
    L->sigma = sigma;
    L->nslices = (ks_int)nslices;
    L->slice_ptr = ks_malloc(sizeof(ks_int) * ((size_t)nslices + 1), "sell slice pointers");
    L->slice_width = ks_malloc(sizeof(ks_int) * ((size_t)nslices + 1), "sell slice widths");
    L->perm = ks_malloc(sizeof(ks_int) * (size_t)n, "sell permutation");
    L->rowlen = ks_malloc(sizeof(ks_int) * (size_t)n, "sell row lengths");
    ks_error e = KS_ERR_MEMORY;
    if (!L->slice_ptr || !L->slice_width || !L->perm || !L->rowlen)
        goto fail;

    int permuted = ks_sell_sort_rows(A, sigma, L->perm, L->rowlen);
    if (permuted < 0)
        goto fail;
    L->permuted = permuted;

    /* Slice widths, offsets, and the slots of real rows (the fill ratio
     * leaves out the empty rows that complete the last slice: a 1x1 must
     * not refuse). */
    int64_t total = 0;
    double real_slots = 0.0, worst_pad = -1.0;
    ks_int worst = 0;
    for (int64_t s = 0; s < nslices; s++) {
        const int64_t p0 = s * C, p1 = p0 + C < n ? p0 + C : n;
        ks_int w = 0;
        int64_t nz = 0;
        for (int64_t p = p0; p < p1; p++) {
            nz += L->rowlen[p];
            if (L->rowlen[p] > w)
                w = L->rowlen[p];
        }
        L->slice_width[s] = w;
        L->slice_ptr[s] = (ks_int)total; /* checked below before use */
        total += (int64_t)w * C;
        real_slots += (double)w * (double)(p1 - p0);
        double pad = (double)w * (double)(p1 - p0) - (double)nz;
        if (pad > worst_pad) {
            worst_pad = pad;
            worst = (ks_int)s;
        }
        if (total > INT_MAX - KS_SELL_MAX_SLICE_HEIGHT) {
            e = ks_seterr(KS_ERR_UNSUPPORTED,
                          "%s: more than %d stored slots exceed the 32-bit index range", name,
                          INT_MAX - KS_SELL_MAX_SLICE_HEIGHT);
            goto fail;
        }
    }
    L->slice_ptr[nslices] = (ks_int)total;
    L->slice_width[nslices] = 0;
    if (real_slots > max_fill * (double)A->nnz) {
        const double bytes = 12.0 * (double)total + 4.0 * ((double)nslices + 1.0) +
                             (L->permuted ? 4.0 * n : 0.0);
        const double csr_bytes = 12.0 * A->nnz + 4.0 * ((double)n + 1.0);
        ks_int longest = worst * C; /* the slice's longest row (first when sorted) */
        for (ks_int p = longest; p < n && p < (worst + 1) * C; p++)
            if (L->rowlen[p] > L->rowlen[longest])
                longest = p;
        e = ks_seterr(KS_ERR_UNSUPPORTED,
                      "%s: slice %d pads to its row of %d entries (original row %d), mean %.1f: "
                      "padded size %.1f MB = %.1fx CSR (stored slots / nnz = %.1f > max_fill "
                      "%g)",
                      name, (int)worst, (int)L->slice_width[worst], (int)L->perm[longest],
                      n > 0 ? (double)A->nnz / n : 0.0, bytes / 1e6, bytes / csr_bytes,
                      A->nnz > 0 ? real_slots / A->nnz : INFINITY, max_fill);
        goto fail;
    }

    L->colind = ks_malloc(sizeof(ks_int) * (size_t)total, "sell column indices");
    L->val = ks_malloc(sizeof(double) * (size_t)total, "sell values");
    if (!L->colind || !L->val) {
        e = KS_ERR_MEMORY;
        goto fail;
    }
    /* Slice by slice in parallel (each owns its slots: the layout does not
     * depend on the thread count). Rows completing the last slice are never
     * read: column 0, value 0. A padding column is only needed in a slice
     * of width > 0, which implies ncols > 0. */
#pragma omp parallel for schedule(dynamic, 32)
    for (ks_int s = 0; s < (ks_int)nslices; s++) {
        const ks_int w = L->slice_width[s];
        for (ks_int r = 0; r < C; r++) {
            const int64_t p = (int64_t)s * C + r;
            ks_int off = L->slice_ptr[s] + r;
            if (p >= n) {
                for (ks_int k = 0; k < w; k++, off += C) {
                    L->colind[off] = 0;
                    L->val[off] = 0.0;
                }
                continue;
            }
            const ks_int row = L->perm[p], j0 = A->rowptr[row], len = L->rowlen[p];
            const ks_int pc = len < w ? pad_column(A, row) : 0;
            for (ks_int k = 0; k < w; k++, off += C) {
                const int stored = k < len;
                L->colind[off] = stored ? A->colind[j0 + k] : pc;
                L->val[off] = stored ? A->val[j0 + k] : 0.0;
            }
        }
    }
    *out = L;
    return KS_OK;

fail:
    ks_sell_layout_free(L);
    return e;
}

/* slice_height: 0 -> the default; ks_sell_build checks the rest. */
static int slice_height_param(const ks_spmv_params *prm)
{
    int c = prm ? prm->slice_height : 0;
    return c == 0 ? KS_SELL_DEFAULT_SLICE_HEIGHT : c;
}

ks_error ks_sliced_ell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "sliced_ell: NULL layout pointer");
    *layout = NULL;
    const int C = slice_height_param(prm);
    double max_fill;
    KS_TRY(ks_ell_family_max_fill(prm, "sliced_ell", KS_SELL_DEFAULT_MAX_FILL, &max_fill));
    return ks_sell_build(A, "sliced_ell", C, 1, max_fill, (ks_sell_layout **)layout);
}

ks_error ks_sell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "sell: NULL layout pointer");
    *layout = NULL;
    const int C = slice_height_param(prm);
    double max_fill;
    KS_TRY(ks_ell_family_max_fill(prm, "sell", KS_SELL_DEFAULT_MAX_FILL, &max_fill));
    int sigma = prm ? prm->sort_window : 0;
    if (sigma == 0 && C >= 1 && C <= KS_SELL_MAX_SLICE_HEIGHT)
        sigma = KS_SELL_DEFAULT_SIGMA_SLICES * C;
    return ks_sell_build(A, "sell", C, sigma, max_fill, (ks_sell_layout **)layout);
}

/* One row at a time, as one kernel thread does: the row at sorted position
 * p = s*C + r reads slots slice_ptr[s] + r + k*C for k < width[s] (padding
 * included) and writes y[perm[p]]. */
void ks_sell_layout_apply(const void *layout, double alpha, const double *x, double beta,
                          double *y)
{
    const ks_sell_layout *L = layout;
    const ks_int C = L->C;
    for (ks_int p = 0; p < L->nrows; p++) {
        const ks_int s = p / C, end = L->slice_ptr[s + 1];
        double sum = 0.0;
        for (ks_int off = L->slice_ptr[s] + p % C; off < end; off += C)
            sum += L->val[off] * x[L->colind[off]];
        const ks_int row = L->perm[p];
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
    }
}

/* Bytes per apply (beta = 0), counting what the kernel reads: every slot
 * of the real rows, padding included (value 8 + index 4 + the x gather 8;
 * padding gathers x at a column its row already touched, so mostly a cache
 * hit: an upper bound, like the once-per-entry x convention), the slice
 * pointers 4*(nslices+1), the permutation 4*nrows when rows were reordered,
 * and y written 8*nrows. */
double ks_sell_layout_bytes(const void *layout)
{
    const ks_sell_layout *L = layout;
    double slots = 0.0;
    for (ks_int s = 0; s < L->nslices; s++) {
        ks_int rows = L->nrows - s * L->C < L->C ? L->nrows - s * L->C : L->C;
        slots += (double)L->slice_width[s] * (double)rows;
    }
    return 20.0 * slots + 4.0 * ((double)L->nslices + 1.0) +
           (L->permuted ? 4.0 * L->nrows : 0.0) + 8.0 * L->nrows;
}

void ks_sell_layout_free(void *layout)
{
    ks_sell_layout *L = layout;
    if (!L)
        return;
    free(L->slice_ptr);
    free(L->slice_width);
    free(L->perm);
    free(L->rowlen);
    free(L->colind);
    free(L->val);
    free(L);
}

ks_error ks_sell_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_sell_layout *L = layout;
    if (!L || !A)
        return ks_seterr(KS_ERR_ARG, "sell layout to CSR: NULL argument");
    KS_TRY(ks_csr_alloc(A, L->nrows, L->ncols, L->nnz));
    A->rowptr[0] = 0;
    for (ks_int p = 0; p < L->nrows; p++)
        A->rowptr[L->perm[p] + 1] = L->rowlen[p];
    for (ks_int i = 0; i < L->nrows; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    for (ks_int p = 0; p < L->nrows; p++) {
        const ks_int s = p / L->C;
        ks_int off = L->slice_ptr[s] + p % L->C, pos = A->rowptr[L->perm[p]];
        for (ks_int k = 0; k < L->rowlen[p]; k++, off += L->C, pos++) {
            A->colind[pos] = L->colind[off];
            A->val[pos] = L->val[off];
        }
    }
    return KS_OK;
}
