/* The diagonal check and the smoother weights on the device: one thread a
 * row, the loops and expressions of amg/cpu/amg_cpu.c's cpu_check_diagonal
 * and cpu_smoother_weights, so the reports and the weights are the cpu's
 * bit for bit (divisions and the off-diagonal sums in row order round the
 * same on both; nothing here multiplies into a sum, so no FMA can form). */
#include "amg_cuda.h"

#include <math.h>

namespace {

/* The first stored diagonal of each row (the cpu stops at it), zero when
 * none; a zero or non-finite one lowers *bad to the row (atomicMin: the
 * first such row, whatever the schedule). */
__global__ void check_diagonal_kernel(ks_int n, const ks_int *__restrict__ rp,
                                      const ks_int *__restrict__ ci,
                                      const double *__restrict__ val, int *bad)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        double d = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] == i) {
                d = val[k];
                break;
            }
        if (d == 0.0 || !isfinite(d))
            atomicMin(bad, i);
    }
}

/* w[i] from the row's diagonal (the last stored one, as on the cpu) and
 * the sum of |a_ij|, j != i, in row order. */
__global__ void smoother_weights_kernel(ks_int n, const ks_int *__restrict__ rp,
                                        const ks_int *__restrict__ ci,
                                        const double *__restrict__ val, int kind, double omega,
                                        double *__restrict__ w)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        double diag = 0.0, off = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            if (ci[k] == i)
                diag = val[k];
            else
                off += fabs(val[k]);
        }
        switch (kind) {
        case KS_SMOOTHER_JACOBI: w[i] = omega / diag; break;
        case KS_SMOOTHER_JACOBI_L1: w[i] = omega / (diag + copysign(off, diag)); break;
        default: w[i] = 1.0 / diag; break;
        }
    }
}

} // namespace

extern "C" ks_error ks_amg_cuda_check_diagonal(const ks_sparse *A, ks_int *bad, double *value,
                                               int *stored)
{
    *bad = A->nrows;
    *value = 0.0;
    *stored = 0;
    const ks_int n = A->nrows;
    if (n <= 0)
        return KS_OK;
    if (A->nnz > 0 && !A->val)
        return ks_seterr(KS_ERR_ARG, "AMG diagonal check: the matrix has no values");
    ks_backend *be = A->be;
    int *d = NULL;
    KS_TRY(ks_be_alloc(be, sizeof(int), (void **)&d, "diagonal check result"));
    ks_error e = ks_amg_cu_fill_int(be, d, 1, n);
    if (e == KS_OK) {
        check_diagonal_kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            n, A->rowptr, A->colind, A->val, d);
        KS_CU_LAUNCHED(e, "check_diagonal_kernel");
    }
    int h = n;
    if (e == KS_OK)
        e = be->ops->download(be, &h, d, sizeof h);
    be->ops->free(be, d);
    KS_TRY(e);
    if (h < 0 || h >= n)
        return KS_OK; /* every diagonal is fine (h is n) */
    /* Rare: one more small kernel reads the offending row's entry. */
    KS_TRY(ks_amg_cu_row_diagonal(A, h, value, stored));
    *bad = h;
    return KS_OK;
}

extern "C" ks_error ks_amg_cuda_smoother_weights(const ks_sparse *A, ks_amg_smoother_kind kind,
                                                 double omega, double *w)
{
    const ks_int n = A->nrows;
    if (n <= 0)
        return KS_OK;
    if (A->nnz > 0 && !A->val)
        return ks_seterr(KS_ERR_ARG, "AMG smoother weights: the matrix has no values");
    smoother_weights_kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(A->be)>>>(
        n, A->rowptr, A->colind, A->val, (int)kind, omega, w);
    KS_CUDA_LAUNCH_CHECK("smoother_weights_kernel");
    return KS_OK;
}
