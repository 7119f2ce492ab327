/* The CSR host layout: shared by every CSR-based format, whose host
 * reference apply is therefore one serial float64 loop. */
#include "csr_layout.h"

#include <string.h>

ks_error ks_csr_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    (void)prm;
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
    *layout = L;
    return KS_OK;
}

void ks_csr_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_csr *A = &((const ks_csr_layout *)layout)->A;
    for (ks_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            s += A->val[j] * x[A->colind[j]];
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}

double ks_csr_bytes_per_apply(ks_int nrows, ks_int nnz)
{
    return 8.0 * nnz + 4.0 * nnz + 4.0 * ((double)nrows + 1.0) + 8.0 * nnz + 8.0 * nrows;
}

double ks_csr_layout_bytes(const void *layout)
{
    const ks_csr *A = &((const ks_csr_layout *)layout)->A;
    return ks_csr_bytes_per_apply(A->nrows, A->nnz);
}

void ks_csr_layout_free(void *layout)
{
    free(layout);
}

ks_error ks_csr_layout_to_csr(const void *layout, ks_csr *A)
{
    return ks_csr_copy(&((const ks_csr_layout *)layout)->A, A);
}
