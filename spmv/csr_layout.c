/* The CSR host layout: shared by every CSR-based format, whose host
 * reference apply is therefore one serial float64 loop (over the float32
 * copy of the values when the formats keep those). */
#include "csr_layout.h"
#include "float_values.h"

#include <string.h>

ks_error ks_csr_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!A || !layout)
        return ks_seterr(KS_ERR_ARG, "csr layout: NULL argument");
    *layout = NULL;
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr ||
        (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "csr layout: malformed CSR (%d x %d, nnz %d)",
                         (int)A->nrows, (int)A->ncols, (int)A->nnz);
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG, "csr layout: rowptr[0] = %d and rowptr[nrows] = %d, "
                         "expected 0 and nnz = %d",
                         (int)A->rowptr[0], (int)A->rowptr[A->nrows], (int)A->nnz);
    ks_csr_layout *L = ks_calloc(1, sizeof *L, "csr layout");
    if (!L)
        return KS_ERR_MEMORY;
    L->A = *A;
    if (prm && prm->float_values) {
        ks_error e = ks_float_values_new(A->val, (size_t)A->nnz, "csr", &L->valf);
        if (e != KS_OK) {
            free(L);
            return e;
        }
    }
    *layout = L;
    return KS_OK;
}

void ks_csr_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_csr_layout *L = layout;
    const ks_csr *A = &L->A;
    for (ks_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            s += (L->valf ? (double)L->valf[j] : A->val[j]) * x[A->colind[j]];
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}

double ks_csr_bytes_per_apply(ks_int nrows, ks_int nnz)
{
    return 8.0 * nnz + 4.0 * nnz + 4.0 * ((double)nrows + 1.0) + 8.0 * nnz + 8.0 * nrows;
}

double ks_csr_bytes_per_apply_float(ks_int nrows, ks_int nnz)
{
    return ks_csr_bytes_per_apply(nrows, nnz) - 4.0 * nnz;
}

double ks_csr_layout_bytes(const void *layout)
{
    const ks_csr_layout *L = layout;
    return L->valf ? ks_csr_bytes_per_apply_float(L->A.nrows, L->A.nnz)
                   : ks_csr_bytes_per_apply(L->A.nrows, L->A.nnz);
}

void ks_csr_layout_free(void *layout)
{
    if (layout)
        free(((ks_csr_layout *)layout)->valf);
    free(layout);
}

ks_error ks_csr_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_csr_layout *L = layout;
    KS_TRY(ks_csr_copy(&L->A, A));
    if (L->valf) /* what the format stores: the rounded values */
        for (ks_int k = 0; k < A->nnz; k++)
            A->val[k] = L->valf[k];
    return KS_OK;
}
