/* Fused residual / smoother pass of the SpMV formats: the AMG cycle's
 * residuals and Jacobi / Chebyshev steps as one pass over the matrix, where
 * separately they would be a copy of b, the SpMV and a vector update (three
 * kernels, about 40 % more memory traffic on a stencil level). Not
 * installed. */
#ifndef KS_FUSED_H
#define KS_FUSED_H

#include "../vec/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For every row i, with t = b_i - (A x)_i:
 *   r_i = t                          when r != NULL
 *   d_i = a d_i + c w_i t            when d != NULL (old d not read when a == 0)
 *   xo_i = x_i + d_i                 when d != NULL (xo required then)
 * x is gathered, so it is only read: xo != x, and r, d, xo do not alias x
 * or b. */
typedef struct ks_fused_step {
    const double *b, *x;
    double *r;
    double a, c;
    const double *w;
    double *d;
    double *xo;
} ks_fused_step;

#if defined(__CUDACC__)
#define KS_FUSED_FN static __host__ __device__ __forceinline__
#else
#define KS_FUSED_FN static inline
#endif

/* The per-row epilogue every fused kernel ends with, ax = (A x)_i. */
KS_FUSED_FN void ks_fused_row(const ks_fused_step *f, ks_int i, double ax)
{
    const double t = f->b[i] - ax;
    if (f->r)
        f->r[i] = t;
    if (f->d) {
        double di = f->c * f->w[i] * t;
        if (f->a != 0.0)
            di += f->a * f->d[i];
        f->d[i] = di;
        f->xo[i] = f->x[i] + di;
    }
}

#ifdef __cplusplus
}
#endif
#endif
