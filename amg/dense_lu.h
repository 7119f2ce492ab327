/* Dense LU of the coarsest level, on the host (the coarsest level is small:
 * at most a few thousand rows), for any backend: the driver downloads the
 * level, factors it here and uploads the explicit inverse. Not installed. */
#ifndef KS_DENSE_LU_H
#define KS_DENSE_LU_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Dense LU with partial pivoting of a small CSR matrix (n <= a few
 * thousand). Singular -> KS_ERR_NUMERIC naming the pivot. */
typedef struct ks_dense_lu {
    ks_int n;
    double *lu;   /* n*n row-major */
    ks_int *piv;
} ks_dense_lu;
ks_error ks_dense_lu_factor(const ks_csr *A, ks_dense_lu *F);
void ks_dense_lu_solve(const ks_dense_lu *F, double *x); /* in place */
/* Explicit inverse as a dense CSR (n*n entries), for the coarse solve on
 * any backend as one SpMV. */
ks_error ks_dense_lu_inverse_csr(const ks_dense_lu *F, ks_csr *Ainv);
void ks_dense_lu_free(ks_dense_lu *F);

#ifdef __cplusplus
}
#endif
#endif
