/* The cuda backend's block-vector kernels (vec/block_cuda.cu) for its ops
 * table in vec/cuda.cu, and the reduction scratch cuda.cu lends them. Not
 * installed. */
#ifndef KS_BLOCK_CUDA_H
#define KS_BLOCK_CUDA_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Partial sums scratch: KS_VEC_MULTI_MAX arrays of KS_CU_RED_BLOCKS
 * doubles, array j at partials + j * ks_cuda_red_blocks(). */
double *ks_cuda_partials(ks_backend *be);
int ks_cuda_red_blocks(void);
/* Second stage of a sum reduction: r[j] (j < nres <= KS_VEC_MULTI_MAX) =
 * the fixed-tree sum of partial array j's first nparts entries; waits. */
ks_error ks_cuda_finish_sum(ks_backend *be, int nparts, int nres, double *r);
/* r[j] (j < k) = the fixed-order sum of part[j * nb .. j * nb + nb), a
 * device array of per-block partials a fused kernel wrote; waits. */
ks_error ks_cuda_finish_parts(ks_backend *be, const double *part, long long nb, int k,
                              double *r);

ks_error ks_cuda_baxpby(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                        const double *b, double *y);
ks_error ks_cuda_baxpbypcz(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                           const double *b, const double *y, const double *c, double *z);
ks_error ks_cuda_bpmul(ks_backend *be, ks_int n, int k, const double *w, const double *x,
                       double *y);
ks_error ks_cuda_bdot(ks_backend *be, ks_int n, int k, const double *x, const double *y,
                      double *r);
ks_error ks_cuda_baxpy_dot(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                           double *y, double *r);
ks_error ks_cuda_baxpy_aypx(ks_backend *be, ks_int n, int k, const double *a, double *p,
                            double *y, const double *b, const double *z);
ks_error ks_cuda_bgather(ks_backend *be, ks_int n, int kx, const double *x, int m,
                         const int *cols, double *y);
ks_error ks_cuda_bscatter(ks_backend *be, ks_int n, int m, const double *y, const int *cols,
                          int kx, double *x);

#ifdef __cplusplus
}
#endif
#endif
