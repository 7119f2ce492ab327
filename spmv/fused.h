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
 * xo != x, and r, xo do not alias x or b.
 * With xw != NULL the iterate is not stored but made from zero by a Jacobi
 * step: x_j = (xs xw_j) x_j, the x array holding b (ks_smooth_value's
 * expression for 0 + xs xw_j b_j). Two smoothing steps from x = 0 are then
 * one pass; xprev must be NULL (the iterate before the first step is 0).
 * x1 != NULL (only with xw) also stores that iterate, x1_i = x_i, for a
 * Chebyshev step after the two that needs it as its x_old. */
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
    const double *xw; /* NULL: x as stored */
    double xs;
    double *x1;
} ks_fused_step;

enum { KS_W_VECTOR = 0, KS_W_DIAG = 1, KS_W_L1 = 2 };

/* w_i from the row's diagonal and off-diagonal absolute sum (wkind != 0). */
KS_SMOOTH_FN double ks_fused_w(const ks_fused_step *f, double diag, double offabs)
{
    return f->wkind == KS_W_L1 ? f->wscale / (diag + copysign(offabs, diag)) : f->wscale / diag;
}

/* Entry j of the iterate (x_j, or the scaled b_j when xw is set). */
KS_SMOOTH_FN double ks_fused_x(const ks_fused_step *f, ks_int j)
{
    return f->xw ? f->xs * f->xw[j] * f->x[j] : f->x[j];
}

/* Row i's operands besides (A x)_i; w_i only when with_w (formats that
 * rebuild it from the diagonal pass 0). Loading them before the row sum,
 * to overlap their latency with the matrix loads, made the cuda kernels
 * slower (more registers, fewer warps in flight), so kernels load them
 * after it. */
typedef struct ks_fused_in {
    double b, x, xprev, w;
} ks_fused_in;

KS_SMOOTH_FN ks_fused_in ks_fused_load(const ks_fused_step *f, ks_int i, int with_w)
{
    ks_fused_in in = {f->b[i], 0.0, 0.0, 0.0};
    if (f->xo) {
        in.x = ks_fused_x(f, i);
        if (f->a != 0.0 && f->xprev)
            in.xprev = f->xprev[i];
        if (with_w)
            in.w = f->w[i];
    }
    return in;
}

/* The row's epilogue every fused kernel ends with: ax = (A x)_i, wi the
 * smoother weight (in->w, or ks_fused_w). */
KS_SMOOTH_FN void ks_fused_store(const ks_fused_step *f, ks_int i, const ks_fused_in *in,
                                 double ax, double wi)
{
    const double t = in->b - ax;
    if (f->r)
        f->r[i] = t;
    if (f->xo)
        f->xo[i] = ks_smooth_value_v(f->a, f->c, wi, in->x, in->xprev, t);
    if (f->x1)
        f->x1[i] = in->x;
}

/* The ghost block's share of row i (format op fused_ghost): g = (A_ghost
 * xg)_i taken from t, which the local block's pass made without it. */
KS_SMOOTH_FN void ks_fused_ghost_store(const ks_fused_step *f, ks_int i, double g)
{
    if (f->r)
        f->r[i] = f->r[i] - g;
    if (f->xo)
        f->xo[i] = f->xo[i] - f->c * f->w[i] * g;
}

/* The same pass on k row-interleaved columns (the format op fused_block,
 * ks_matrix_fused_block): entry (i, j) of every block at e = i*k + j, the
 * row's w_i (and xw) shared by its k entries; wkind is not used (w is
 * read). Row i's operands for column j: */
KS_SMOOTH_FN ks_fused_in ks_fused_bload(const ks_fused_step *f, ks_int i, int k, int j)
{
    const size_t e = (size_t)i * (size_t)k + (size_t)j;
    ks_fused_in in = {f->b[e], 0.0, 0.0, 0.0};
    if (f->xo) {
        in.x = f->xw ? f->xs * f->xw[i] * f->x[e] : f->x[e];
        if (f->a != 0.0 && f->xprev)
            in.xprev = f->xprev[e];
        in.w = f->w[i];
    }
    return in;
}

/* Entry (c, j) of the gathered iterate (column c of the matrix). */
KS_SMOOTH_FN double ks_fused_bx(const ks_fused_step *f, ks_int c, int k, int j)
{
    const double x = f->x[(size_t)c * (size_t)k + (size_t)j];
    return f->xw ? f->xs * f->xw[c] * x : x;
}

#ifdef __cplusplus
}
#endif
#endif
