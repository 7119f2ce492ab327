/* Preconditioned BiCGStab (van der Vorst), right preconditioned: solves
 * A M^{-1} y = b, x = M^{-1} y, so the recurrence residual is b - A x up to
 * rounding and the convergence test sees the true residual. A vanishing
 * Krylov scalar ends the solve with KS_SOLVE_BREAKDOWN naming it; there is
 * no silent restart, so the caller knows the method failed. */
#include "many.h"
#include "../vec/vec_fused.h"

#include <math.h>

enum { R, RHAT, P, V, PHAT, SHAT, T, NWORK };

static ks_error bicgstab_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    ks_vec *r = s->work[R], *rhat = s->work[RHAT], *p = s->work[P], *v = s->work[V],
           *t = s->work[T];
    int ident = ks_krylov_pc_is_identity(s);
    ks_vec *phat = ident ? p : s->work[PHAT];
    /* s = r - alpha v overwrites r; shat = M^{-1} s. */
    ks_vec *sv = r;
    ks_vec *shat = ident ? sv : s->work[SHAT];
    double rnorm, snorm, rho = 1.0, rho_old = 1.0, alpha = 1.0, omega = 1.0;
    int stop;

    KS_TRY(ks_krylov_residual(s, b, x, r));
    KS_TRY(ks_krylov_start(s, b, x, r, &rnorm, &stop));
    if (stop)
        return KS_OK;
    KS_TRY(ks_vec_copy(r, rhat));

    for (int it = 1;; it++) {
        KS_TRY(ks_vec_dot(rhat, r, &rho));
        if (ks_bicgstab_rho(s, it, rho))
            return KS_OK;
        if (it == 1) {
            KS_TRY(ks_vec_copy(r, p));
        } else {
            /* p = r + beta (p - omega v) in one pass */
            double beta = (rho / rho_old) * (alpha / omega);
            KS_TRY(ks_vec_axpbypcz(1.0, r, -beta * omega, v, beta, p));
        }
        if (!ident)
            KS_TRY(s->pc->ops->apply(s->pc, p, phat));
        KS_TRY(ks_matrix_apply(s->A, 1.0, phat, 0.0, v));
        double rv;
        KS_TRY(ks_vec_dot(rhat, v, &rv));
        if (ks_bicgstab_alpha(s, it, rho, rv, &alpha))
            return KS_OK;

        /* Half step: s = r - alpha v; stop here when s is already small. */
        KS_TRY(ks_krylov_axpy_norm(s, -alpha, v, sv, &snorm));
        if (isfinite(snorm) && ks_krylov_converged(s, snorm)) {
            KS_TRY(ks_vec_axpy(alpha, phat, x));
            return ks_krylov_check(s, it, snorm, &stop);
        }

        if (!ident)
            KS_TRY(s->pc->ops->apply(s->pc, sv, shat));
        KS_TRY(ks_matrix_apply(s->A, 1.0, shat, 0.0, t));
        double ts_tt[2];
        KS_TRY(ks_vec_dot2(t, sv, t, t, ts_tt));
        int stopped;
        KS_TRY(ks_bicgstab_omega(s, it, ts_tt, alpha, phat, snorm, x, &omega, &stopped));
        if (stopped)
            return KS_OK;

        /* x += alpha phat + omega shat; r = s - omega t */
        KS_TRY(ks_vec_axpbypcz(alpha, phat, omega, shat, 1.0, x));
        KS_TRY(ks_krylov_axpy_norm(s, -omega, t, r, &rnorm));
        KS_TRY(ks_krylov_check(s, it, rnorm, &stop));
        if (stop)
            return KS_OK;
        rho_old = rho;
    }
}

const ks_krylov_ops ks_krylov_bicgstab_ops = {
    .name = "PBICGSTAB",
    .preconditioned = 1,
    .work_vectors = NWORK,
    .solve = bicgstab_solve,
    .solve_block = ks_krylov_bicgstab_many,
};
