/* Fused residual / smoother pass of the SpMV formats: the AMG cycle's
 * residuals and Jacobi / Chebyshev steps as one pass over the matrix, where
 * separately they would be a copy of b, the SpMV and a vector update (three
 * kernels, about 40 % more memory traffic on a stencil level). Not
 * installed. */
#ifndef KS_FUSED_H
#define KS_FUSED_H

#include "../vec/smooth_value.h"

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* For every row i, with t = b_i - (A x)_i:
 *   r_i = t                                        when r != NULL
 *   xo_i = x_i + c w_i t + a (x_i - xprev_i)       when xo != NULL
 * The second is a Jacobi step (a = 0) or a Chebyshev step in three-term
 * form (xprev the iterate before x, so no update vector is stored):
 * xprev NULL means xprev = 0, and it is not read when a == 0. xprev may be
 * xo (read before written, same row). x is gathered, so it is only read:
 * xo != x, and r, xo do not alias x or b. */
typedef struct ks_fused_step {
    const double *b, *x;
    double *r;
    double a, c;
    const double *w, *xprev;
    double *xo;
    /* How w was made, for formats that read the diagonal anyway and can
     * skip reading w (the same expression, so the same value): 0 unknown;
     * KS_W_DIAG: w_i = wscale / a_ii; KS_W_L1: w_i = wscale / (a_ii +
     * copysign(sum_{j != i} |a_ij|, a_ii)). */
    int wkind;
    double wscale;
} ks_fused_step;

enum { KS_W_VECTOR = 0, KS_W_DIAG = 1, KS_W_L1 = 2 };

/* w_i from the row's diagonal and off-diagonal absolute sum (wkind != 0). */
KS_SMOOTH_FN double ks_fused_w(const ks_fused_step *f, double diag, double offabs)
{
    return f->wkind == KS_W_L1 ? f->wscale / (diag + copysign(offabs, diag)) : f->wscale / diag;
}

/* The per-row epilogue every fused kernel ends with, ax = (A x)_i, wi the
 * smoother weight (f->w[i], or ks_fused_w). */
KS_SMOOTH_FN void ks_fused_row_w(const ks_fused_step *f, ks_int i, double ax, double wi)
{
    const double t = f->b[i] - ax;
    if (f->r)
        f->r[i] = t;
    if (f->xo)
        f->xo[i] = ks_smooth_value(f->a, f->c, wi, f->x, f->xprev, i, t);
}

KS_SMOOTH_FN void ks_fused_row(const ks_fused_step *f, ks_int i, double ax)
{
    ks_fused_row_w(f, i, ax, f->xo ? f->w[i] : 0.0);
}

#ifdef __cplusplus
}
#endif
#endif
