/* Pipelined preconditioned CG (Ghysels and Vanroose 2014). The recurrences
 * for u = M^-1 r, w = A u, and for s = A p, q = M^-1 s, z = A q let each
 * iteration's scalars come from one fused dot group, (r,u), (w,u) and (r,r),
 * reduced once (ks_vec_mdot), where PCG needs two reductions that wait for
 * the SpMV and the preconditioner in between. The group has no operand the
 * iteration's M^-1 w and A m produce: over MPI ranks its sums travel
 * (ks_vec_mdot_begin / _end, a split-phase sum) while those are computed,
 * and it is the iteration's only reduction (PCG makes three: p'Ap, ||r||
 * and r'z). With the L1 or LMAX norm the residual's norm is a second,
 * blocking one.
 *
 * The extra recurrences let rounding errors drift r away from b - A x
 * faster than in PCG. Residual replacement keeps the attainable accuracy
 * (Sleijpen and van der Vorst's reliable updating): r, u, w, s, q, z are
 * recomputed from x and p (2 preconditioner applications, 3 SpMVs) each
 * time the recurrence's residual has fallen below KS_PIPE_RR_DROP times the
 * largest one since the last replacement, so the drift never grows on a
 * residual much larger than today's; and when the recurrence's residual
 * meets the criterion, the true residual is computed and, if it does not
 * meet it, replaces r the same way, so CONVERGED always means the true
 * residual met the criterion. Breakdowns are PCG's: (r,u) = r'M^-1 r and
 * the p'Ap it implies must stay positive. */
#include "krylov.h"
#include "../vec/vec_fused.h"

#include <math.h>

enum { R, U, W, MV, NV, Z, Q, S, P, T, NWORK };


/* m = M^-1 w, n = A m. */
static ks_error products_of_w(ks_solver *s, ks_vec *const *v, int ident)
{
    if (!ident)
        KS_TRY(s->pc->ops->apply(s->pc, v[W], v[MV]));
    return ks_matrix_apply(s->A, 1.0, v[MV], 0.0, v[NV]);
}

/* Recompute every recurrence from x and p: r = b - A x (already in t),
 * u = M^-1 r, w = A u, s = A p, q = M^-1 s, z = A q. */
static ks_error replace(ks_solver *s, ks_vec *const *v, int ident)
{
    KS_TRY(ks_vec_copy(v[T], v[R]));
    if (!ident)
        KS_TRY(s->pc->ops->apply(s->pc, v[R], v[U]));
    KS_TRY(ks_matrix_apply(s->A, 1.0, v[U], 0.0, v[W]));
    KS_TRY(ks_matrix_apply(s->A, 1.0, v[P], 0.0, v[S]));
    if (!ident)
        KS_TRY(s->pc->ops->apply(s->pc, v[S], v[Q]));
    return ks_matrix_apply(s->A, 1.0, v[Q], 0.0, v[Z]);
}

static ks_error pipecg_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    ks_vec *v[NWORK];
    int ident = ks_krylov_pc_is_identity(s);
    for (int i = 0; i < NWORK; i++)
        v[i] = s->work[i];
    /* Without a preconditioner u is r, m is w and q is s. */
    if (ident) {
        v[U] = v[R];
        v[MV] = v[W];
        v[Q] = v[S];
    }
    int l2 = s->prm.norm == KS_NORM_L2;
    double rnorm, gamma_old = 0.0, alpha_old = 0.0, rmax;
    int stop;

    KS_TRY(ks_krylov_residual(s, b, x, v[R]));
    KS_TRY(ks_krylov_start(s, b, x, v[R], &rnorm, &stop));
    if (stop)
        return KS_OK;
    rmax = rnorm;
    if (!ident)
        KS_TRY(s->pc->ops->apply(s->pc, v[R], v[U]));
    KS_TRY(ks_matrix_apply(s->A, 1.0, v[U], 0.0, v[W]));

    for (int it = 0;; it++) {
        /* The iteration's one reduction, (r,u), (w,u), (r,r), in flight
         * over the ranks while m = M^-1 w and n = A m are computed. */
        const ks_vec *xl[3] = {v[R], v[W], v[R]}, *yl[3] = {v[U], v[U], v[R]};
        double d[3];
        ks_vec_pending pend;
        KS_TRY(ks_vec_mdot_begin(l2 ? 3 : 2, xl, yl, d, &pend));
        ks_error ew = products_of_w(s, v, ident);
        KS_TRY(ks_vec_mdot_end(&pend));
        KS_TRY(ew);
        if (it > 0) {
            if (l2)
                rnorm = sqrt(d[2]);
            else
                KS_TRY(ks_krylov_norm(s, v[R], &rnorm));
            KS_TRY(ks_krylov_record(s, it, rnorm));
            if (isfinite(rnorm) && ks_krylov_converged(s, rnorm)) {
                /* Believe it only when b - A x agrees. */
                double tnorm;
                KS_TRY(ks_krylov_residual(s, b, x, v[T]));
                KS_TRY(ks_krylov_norm(s, v[T], &tnorm));
                ks_krylov_amend(s, it, tnorm);
                KS_TRY(ks_krylov_decide(s, it, tnorm, &stop));
                if (stop)
                    return KS_OK;
                KS_TRY(replace(s, v, ident));
                KS_TRY(ks_vec_mdot(2, xl, yl, d));
                KS_TRY(products_of_w(s, v, ident));
                rmax = tnorm;
            } else {
                KS_TRY(ks_krylov_decide(s, it, rnorm, &stop));
                if (stop)
                    return KS_OK;
                if (rnorm > rmax) {
                    rmax = rnorm;
                } else if (rnorm < KS_PIPE_RR_DROP * rmax) {
                    KS_TRY(ks_krylov_residual(s, b, x, v[T]));
                    KS_TRY(replace(s, v, ident));
                    KS_TRY(ks_vec_mdot(2, xl, yl, d));
                    KS_TRY(products_of_w(s, v, ident));
                    rmax = rnorm;
                }
            }
        }
        double gamma = d[0], delta = d[1];
        if (!isfinite(gamma) || !isfinite(delta)) {
            ks_krylov_stop(s, KS_SOLVE_NAN, "r'M^-1 r = %g, w'u = %g at iteration %d", gamma,
                           delta, it + 1);
            return KS_OK;
        }
        if (gamma <= 0.0) {
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                           "r'z = %.3g <= 0 with r != 0: preconditioner is not positive "
                           "definite",
                           gamma);
            return KS_OK;
        }

        double beta = 0.0, pap = delta;
        if (it > 0) {
            beta = gamma / gamma_old;
            pap = delta - beta * gamma / alpha_old;
        }
        if (!isfinite(pap)) {
            ks_krylov_stop(s, KS_SOLVE_NAN, "p'Ap = %g at iteration %d", pap, it + 1);
            return KS_OK;
        }
        if (pap <= 0.0) {
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                           "p'Ap = %.3g <= 0: matrix is not positive definite", pap);
            return KS_OK;
        }
        double alpha = gamma / pap;
        /* beta = 0 on the first pass: axpby then does not read the old values. */
        KS_TRY(ks_vec_axpby(1.0, v[NV], beta, v[Z]));
        if (!ident)
            KS_TRY(ks_vec_axpby(1.0, v[MV], beta, v[Q]));
        KS_TRY(ks_vec_axpby(1.0, v[W], beta, v[S]));
        KS_TRY(ks_vec_axpby(1.0, v[U], beta, v[P]));
        KS_TRY(ks_vec_axpy(alpha, v[P], x));
        KS_TRY(ks_vec_axpy(-alpha, v[S], v[R]));
        if (!ident)
            KS_TRY(ks_vec_axpy(-alpha, v[Q], v[U]));
        KS_TRY(ks_vec_axpy(-alpha, v[Z], v[W]));
        gamma_old = gamma;
        alpha_old = alpha;
    }
}

const ks_krylov_ops ks_krylov_pipecg_ops = {
    .name = "PIPECG",
    .preconditioned = 1,
    .work_vectors = NWORK,
    .solve = pipecg_solve,
};
