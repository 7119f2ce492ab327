/* Preconditioned conjugate gradients (Hestenes-Stiefel with M^{-1}).
 * Requires A and M symmetric positive definite; the two quantities that
 * must stay positive, p'Ap and r'z, are checked every iteration so a
 * non-SPD input ends in KS_SOLVE_BREAKDOWN naming the culprit instead of
 * silently iterating. */
#include "many.h"

#include <math.h>

enum { R, Z, P, AP, NWORK };

static ks_error cg_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    ks_vec *r = s->work[R], *p = s->work[P], *ap = s->work[AP];
    /* With the identity preconditioner z is r itself: no copy, and r'z is
     * ||r||^2 which the L2 norm already gives. */
    int ident = ks_krylov_pc_is_identity(s);
    ks_vec *z = ident ? r : s->work[Z];
    int l2 = s->prm.norm == KS_NORM_L2;
    double rnorm, rz, pap;
    int stop;

    KS_TRY(ks_krylov_residual(s, b, x, r));
    KS_TRY(ks_krylov_start(s, b, x, r, &rnorm, &stop));
    if (stop)
        return KS_OK;

    if (!ident)
        KS_TRY(s->pc->ops->apply(s->pc, r, z));
    if (ident && l2)
        rz = rnorm * rnorm;
    else
        KS_TRY(ks_vec_dot(r, z, &rz));
    KS_TRY(ks_vec_copy(z, p));

    for (int it = 1;; it++) {
        /* rz of the current r, z; checked here so the first one is too. */
        if (!isfinite(rz)) {
            ks_krylov_stop(s, KS_SOLVE_NAN, "r'z = %g at iteration %d", rz, it);
            return KS_OK;
        }
        if (rz < 0.0) {
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                           "r'z = %.3g < 0: preconditioner is not positive definite", rz);
            return KS_OK;
        }
        if (rz == 0.0) {
            /* r != 0 here (else converged), so M^{-1} r = 0 or r is M-orthogonal
             * to itself: M is singular or indefinite. */
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                           "r'z = 0 with r != 0: preconditioner is singular or indefinite");
            return KS_OK;
        }

        KS_TRY(ks_matrix_apply(s->A, 1.0, p, 0.0, ap));
        KS_TRY(ks_vec_dot(p, ap, &pap));
        if (!isfinite(pap)) {
            ks_krylov_stop(s, KS_SOLVE_NAN, "p'Ap = %g at iteration %d", pap, it);
            return KS_OK;
        }
        if (pap <= 0.0) {
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                           "p'Ap = %.3g <= 0: matrix is not positive definite", pap);
            return KS_OK;
        }
        double alpha = rz / pap;
        KS_TRY(ks_vec_axpy(alpha, p, x));
        KS_TRY(ks_krylov_axpy_norm(s, -alpha, ap, r, &rnorm));
        KS_TRY(ks_krylov_check(s, it, rnorm, &stop));
        if (stop)
            return KS_OK;

        double rz_old = rz;
        if (ident) {
            if (l2)
                rz = rnorm * rnorm;
            else
                KS_TRY(ks_vec_dot(r, r, &rz));
        } else {
            KS_TRY(s->pc->ops->apply(s->pc, r, z));
            KS_TRY(ks_vec_dot(r, z, &rz));
        }
        /* p = z + beta p */
        KS_TRY(ks_vec_axpby(1.0, z, rz / rz_old, p));
    }
}

const ks_krylov_ops ks_krylov_cg_ops = {
    .name = "PCG",
    .preconditioned = 1,
    .work_vectors = NWORK,
    .solve = cg_solve,
    .solve_block = ks_krylov_cg_many,
};
