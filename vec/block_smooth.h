/* The smoother update on block vectors (the AMG block cycle's Jacobi and
 * Chebyshev steps, amg/cycle_block.c): the backends' kernels for their ops
 * tables and the checked call. Not installed. */
#ifndef KS_BLOCK_SMOOTH_H
#define KS_BLOCK_SMOOTH_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For every entry e = i*k + j: xout[e] = ks_smooth_value(a, c, w[i], xin,
 * xprev, e, b[e] - t[e]) (vec/smooth_value.h: the single cycle's fused
 * passes' expression, so a column rounds as the single cycle does). t NULL:
 * t = 0 (a step from x = 0); xin, xprev NULL: zero; xprev may be xout
 * (read before written). */
ks_error ks_cpu_bsmooth(ks_backend *be, ks_int n, int k, double a, double c, const double *w,
                        const double *b, const double *t, const double *xin,
                        const double *xprev, double *xout);
#ifdef KS_HAVE_CUDA
ks_error ks_cuda_bsmooth(ks_backend *be, ks_int n, int k, double a, double c, const double *w,
                         const double *b, const double *t, const double *xin,
                         const double *xprev, double *xout);
#endif

/* The same on blocks: Xo = Xin + c w.*(B - T) + a (Xin - Xprev), with the
 * checks of the block operations (T, Xin, Xprev may be NULL). */
ks_error ks_block_smooth_update(double a, double c, const ks_vec *w, const ks_block *B,
                                const ks_block *T, const ks_block *Xin, const ks_block *Xprev,
                                ks_block *Xo);

#ifdef __cplusplus
}
#endif
#endif
