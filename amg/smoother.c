/* AMG smoothers on any backend, through ks_matrix / ks_vec:
 *   JACOBI     x += omega D^-1 (b - A x)        omega = relaxation_factor
 *                                              (0 = unset -> 2/3)
 *   JACOBI_L1  x += omega D_l1^-1 (b - A x)     d_i = a_ii + sign(a_ii) sum_{j!=i} |a_ij|
 *              (omega = relaxation_factor, 0 = unset -> 1). D_l1 - A is
 *              diagonally dominant, hence D_l1 >= A for symmetric A with
 *              positive diagonal, so the smoother converges in the A-norm
 *              for every SPD A without tuning (Baker, Falgout, Kolev, Yang,
 *              "Multigrid smoothers for ultraparallel computing", 2011).
 *              hypre's relax_type 18 adds only the off-process part; adding
 *              the whole row is the variant with that guarantee on one
 *              process too.
 *   CHEBYSHEV  chebyshev.c
 *   GS / SGS   hybrid Gauss-Seidel through the SpMV format's gs_sweep (cpu).
 * Jacobi and Chebyshev steps are one fused pass of the level's matrix
 * (ks_matrix_fused_step: residual and update of x together) that writes
 * the new x into the level's spare vector (x is gathered, so it cannot be
 * updated in place); with x = 0 on entry the residual is b itself and no
 * SpMV is needed. */
#include "hierarchy.h"
#include "../vec/vec_fused.h"

#include <math.h>
#include <string.h>

static int is_gs(ks_amg_smoother_kind k)
{
    return k == KS_SMOOTHER_GS || k == KS_SMOOTHER_SGS;
}

ks_error ks_amg_smoother_setup(ks_amg *amg, int l)
{
    ks_amg_level *L = &amg->levels[l];
    const ks_sparse *A = &L->A;
    ks_amg_smoother_kind kind = amg->smoother;
    const char *name = ks_name_of(ks_amg_smoother_names, kind);

    if (is_gs(kind)) {
        /* Every level's matrix is on the same backend as level 0, which
         * setup already checked; the format must also offer the sweep. */
        if (!ks_matrix_has_gs_sweep(L->Am))
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "smoother %s: SpMV format '%s' on level %d has no Gauss-Seidel "
                             "sweep; use the csr format, JACOBI_L1 or CHEBYSHEV",
                             name, L->Am ? ks_matrix_format(L->Am) : "?", l);
    }
    double omega = amg->prm.smoother.relaxation_factor;
    if (!(omega > 0.0))
        omega = kind == KS_SMOOTHER_JACOBI ? 2.0 / 3.0 : 1.0;
    /* The diagonal was checked when the level's operator was made or got
     * its values (every caller's level loop: ks_amg_build, re-setup, the
     * distributed setups), and nothing has written them since. */
    ks_error e = KS_OK;
    if (kind == KS_SMOOTHER_CHEBYSHEV) {
        /* Upper bound: the power/Lanczos estimate of rho(D^-1 A) enlarged by
         * 10%, since an underestimate lets the polynomial amplify the top of
         * the spectrum; the lower bound only chooses which part is damped. */
        double rho = L->rho;
        if (!L->rho_valid)
            e = ks_amg_level_spectral(amg, &amg->exec, l, A, &rho);
        if (e != KS_OK)
            ks_adderr(e, "AMG level %d: Chebyshev eigenvalue estimate", l);
        else if (!(rho > 0.0) || !isfinite(rho))
            e = ks_seterr(KS_ERR_NUMERIC,
                          "AMG level %d: Chebyshev smoother: spectral radius estimate of "
                          "D^-1 A is %g",
                          l, rho);
        L->rho = rho;
        L->rho_valid = e == KS_OK;
        L->lmax = 1.1 * rho;
        L->lmin = amg->prm.smoother.chebyshev_lower * L->lmax;
    }
    if (e == KS_OK && !is_gs(kind)) {
        if (!L->dinv)
            e = ks_vec_create(amg->be, A->nrows, &L->dinv);
        if (e == KS_OK)
            e = ks_amgk_smoother_weights(&amg->exec, A, kind, omega, L->dinv->data);
    }
    /* The same expressions as the weights, for formats that rebuild dinv
     * from the rows they read (spmv/fused.h). */
    L->wkind = kind == KS_SMOOTHER_JACOBI_L1 ? KS_W_L1 : is_gs(kind) ? KS_W_VECTOR : KS_W_DIAG;
    L->wscale = kind == KS_SMOOTHER_CHEBYSHEV ? 1.0 : omega;
    return e;
}

void ks_amg_smoother_free(ks_amg_level *L)
{
    ks_vec_destroy(&L->dinv);
    L->dinv = NULL;
}

ks_matrix *ks_amg_cycle_matrix(const ks_amg *amg, int l)
{
    return l == 0 && amg->A0f ? amg->A0f : amg->levels[l].Am;
}

ks_error ks_amg_residual(ks_amg *amg, int l, const ks_vec *b, const ks_vec *x, ks_vec *r)
{
    return ks_matrix_fused_step(ks_amg_cycle_matrix(amg, l), b, x, r, 0.0, 0.0, NULL, 0, 0.0,
                                NULL, NULL);
}

ks_error ks_amg_jacobi_step(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, double a,
                            double c, int x_zero, int prev_zero)
{
    ks_amg_level *L = &amg->levels[l];
    if (x_zero) /* x = 0: the residual is b; the result goes where x is */
        return ks_vec_smooth_update(0.0, c, L->dinv, b, NULL, NULL, xb->cur);
    /* spare holds the iterate before cur (Chebyshev) and receives the next.
     * The residual is not wanted: r goes only to a format without a fused
     * pass (its scratch); a fused pass would store it, 8 bytes a row. */
    ks_matrix *M = ks_amg_cycle_matrix(amg, l);
    KS_TRY(ks_matrix_fused_step(M, b, xb->cur, ks_matrix_has_fused_step(M) ? NULL : L->r, a, c,
                                L->dinv, L->wkind, L->wscale,
                                a != 0.0 && !prev_zero ? xb->spare : NULL, xb->spare));
    ks_vec *t = xb->cur;
    xb->cur = xb->spare;
    xb->spare = t;
    return KS_OK;
}

ks_error ks_amg_jacobi_two_from_zero(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb,
                                     double c0, double a, double c, int keep_x1)
{
    ks_amg_level *L = &amg->levels[l];
    /* x1 goes to cur, x2 to spare; after the swap x_old = x1 is in spare */
    KS_TRY(ks_matrix_fused_step_from_zero(ks_amg_cycle_matrix(amg, l), b, c0, a, c, L->dinv,
                                          L->wkind, L->wscale, xb->cur, keep_x1, L->r,
                                          xb->spare));
    ks_vec *t = xb->cur;
    xb->cur = xb->spare;
    xb->spare = t;
    return KS_OK;
}

static ks_error gs_step(ks_amg *amg, int l, const ks_vec *b, ks_vec *x, int reverse)
{
    ks_error e = ks_matrix_gs_sweep(amg->levels[l].Am, b, x, reverse);
    if (e != KS_OK)
        return ks_adderr(e, "AMG level %d", l);
    return KS_OK;
}

int ks_amg_smooth_steps(const ks_amg *amg, int l, int sweeps)
{
    if (sweeps <= 0)
        return 0;
    switch (amg->smoother) {
    case KS_SMOOTHER_JACOBI:
    case KS_SMOOTHER_JACOBI_L1: return sweeps;
    case KS_SMOOTHER_CHEBYSHEV: return sweeps * ks_amg_chebyshev_steps(amg, l);
    case KS_SMOOTHER_GS:
    case KS_SMOOTHER_SGS: return 0; /* in place */
    }
    return 0;
}

ks_error ks_amg_smooth(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, int sweeps,
                       int post, int x_zero)
{
    if (sweeps <= 0)
        return x_zero ? ks_vec_fill(xb->cur, 0.0) : KS_OK;
    for (int s = 0; s < sweeps; s++, x_zero = 0) {
        switch (amg->smoother) {
        case KS_SMOOTHER_JACOBI:
        case KS_SMOOTHER_JACOBI_L1:
            /* x += dinv .* (b - A x), dinv holding omega */
            KS_TRY(ks_amg_jacobi_step(amg, l, b, xb, 0.0, 1.0, x_zero, 0));
            break;
        case KS_SMOOTHER_CHEBYSHEV: KS_TRY(ks_amg_chebyshev(amg, l, b, xb, x_zero)); break;
        case KS_SMOOTHER_GS:
            /* Forward before the coarse correction, backward after: the
             * post-smoother is the adjoint of the pre-smoother, so the cycle
             * is a symmetric preconditioner (PCG). */
            if (x_zero)
                KS_TRY(ks_vec_fill(xb->cur, 0.0));
            KS_TRY(gs_step(amg, l, b, xb->cur, post));
            break;
        case KS_SMOOTHER_SGS:
            /* Forward then backward both before and after: the symmetric
             * sweep's error propagator is self-adjoint in the A inner
             * product, so pre and post use the same order. */
            if (x_zero)
                KS_TRY(ks_vec_fill(xb->cur, 0.0));
            KS_TRY(gs_step(amg, l, b, xb->cur, 0));
            KS_TRY(gs_step(amg, l, b, xb->cur, 1));
            break;
        }
    }
    return KS_OK;
}
