/* Helpers of the cuda setup steps (amg_cuda.h): the structure check of a
 * device CSR / pattern, one row's diagonal, and an int fill. */
#include "amg_cuda.h"

namespace {

/* Rows breaking the rules lower *bad to their index (atomicMin: the result
 * is the first bad row whatever the schedule); broken ends set -1. */
__global__ void first_bad_row_kernel(ks_int n, ks_int ncols, ks_int nnz,
                                     const ks_int *__restrict__ rp,
                                     const ks_int *__restrict__ ci,
                                     const double *__restrict__ val, unsigned flags, int *bad)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && (rp[0] != 0 || rp[n] != nnz))
        atomicMin(bad, -1);
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t, k0 = rp[i], k1 = rp[i + 1];
        /* the row's own bounds first: its columns are read only then */
        int ok = k0 >= 0 && k0 <= k1 && k1 <= nnz;
        for (ks_int k = k0; ok && k < k1; k++) {
            const ks_int c = ci[k];
            ok = c >= 0 && c < ncols;
            if (ok && (flags & KS_CU_ROWS_SORTED) && k > k0)
                ok = c > ci[k - 1];
            if (ok && (flags & KS_CU_ROWS_NO_SELF))
                ok = c != i;
            if (ok && (flags & KS_CU_ROWS_FINITE))
                ok = isfinite(val[k]);
        }
        if (!ok)
            atomicMin(bad, i);
    }
}

/* out[0] = row i's first stored diagonal value (0 when none), out[1] = 1
 * when stored: the cpu's check_diagonal scan (first match). */
__global__ void row_diagonal_kernel(const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                                    const double *__restrict__ val, ks_int i, double *out)
{
    double d = 0.0, found = 0.0;
    for (ks_int k = rp[i]; k < rp[i + 1]; k++)
        if (ci[k] == i) {
            d = val[k];
            found = 1.0;
            break;
        }
    out[0] = d;
    out[1] = found;
}

__global__ void fill_int_kernel(ks_int n, int v, int *p)
{
    KS_CU_FOR(i, n)
    p[i] = v;
}

} // namespace

extern "C" ks_error ks_amg_cu_fill_int(ks_backend *be, int *p, ks_int n, int v)
{
    if (n <= 0)
        return KS_OK;
    fill_int_kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(n, v, p);
    KS_CUDA_LAUNCH_CHECK("fill_int_kernel");
    return KS_OK;
}

extern "C" ks_error ks_amg_cu_first_bad_row(const ks_sparse *A, unsigned flags, ks_int *bad)
{
    ks_backend *be = A->be;
    if (!A->val)
        flags &= ~(unsigned)KS_CU_ROWS_FINITE; /* a pattern has no values to check */
    if (A->valid && (flags & ~(unsigned)KS_CU_ROWS_SORTED) == 0) {
        *bad = A->nrows; /* a structure the library made or checked */
        return KS_OK;
    }
    int *d = NULL;
    KS_TRY(ks_be_alloc(be, sizeof(int), (void **)&d, "row check result"));
    ks_error e = ks_amg_cu_fill_int(be, d, 1, A->nrows);
    if (e == KS_OK) {
        first_bad_row_kernel<<<ks_cu_blocks(A->nrows), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            A->nrows, A->ncols, A->nnz, A->rowptr, A->colind, A->val, flags, d);
        KS_CU_LAUNCHED(e, "first_bad_row_kernel");
    }
    int h = A->nrows;
    if (e == KS_OK)
        e = be->ops->download(be, &h, d, sizeof h);
    be->ops->free(be, d);
    *bad = h;
    return e;
}

extern "C" ks_error ks_amg_cu_row_diagonal(const ks_sparse *A, ks_int i, double *value,
                                           int *stored)
{
    ks_backend *be = A->be;
    double *d = NULL, h[2] = {0.0, 0.0};
    KS_TRY(ks_be_alloc(be, sizeof h, (void **)&d, "diagonal query"));
    ks_error e = KS_OK;
    row_diagonal_kernel<<<1, 1, 0, ks_cu_stream(be)>>>(A->rowptr, A->colind, A->val, i, d);
    KS_CU_LAUNCHED(e, "row_diagonal_kernel");
    if (e == KS_OK)
        e = be->ops->download(be, h, d, sizeof h);
    be->ops->free(be, d);
    *value = h[0];
    *stored = h[1] != 0.0;
    return e;
}
