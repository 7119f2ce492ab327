/* The unpipelined BiCGStab that PIPEBICGSTAB falls back to when A M^-1 is
 * too large for its recurrences (see pipebicgstab.c). The same method as
 * PBICGSTAB (bicgstab.c), B p and B q computed each iteration, but with
 * PIPEBICGSTAB's safeguards: a convergence claim is checked against
 * b - A x (so CONVERGED means the true residual met the criterion) and the
 * shadow residual is renewed where r0'r would come from cancellation.
 * Its dots are grouped: three reductions per iteration against
 * PBICGSTAB's five. */
#include "pipebicgstab.h"
#include "../vec/vec_fused.h"

#include <math.h>

/* dst = M^-1 src, then out = A dst (dst is src without a preconditioner). */
static ks_error apply_both(ks_solver *s, int ident, const ks_vec *src, ks_vec *dst, ks_vec *out)
{
    if (!ident)
        KS_TRY(s->pc->ops->apply(s->pc, src, dst));
    return ks_matrix_apply(s->A, 1.0, dst, 0.0, out);
}

/* ||b - A x|| into v->tr; the solve's decision on it for iteration it. */
static ks_error decide_true(ks_solver *s, const ks_vec *b, const ks_vec *x,
                            const ks_pbs_plain_vecs *v, int it, int *stop)
{
    double tn;
    KS_TRY(ks_krylov_residual(s, b, x, v->tr));
    KS_TRY(ks_krylov_norm(s, v->tr, &tn));
    ks_krylov_amend(s, it, tn);
    return ks_krylov_decide(s, it, tn, stop);
}

ks_error ks_pipebicgstab_plain(ks_solver *s, const ks_vec *b, ks_vec *x,
                               const ks_pbs_plain_vecs *v, int it)
{
    int ident = ks_krylov_pc_is_identity(s);
    int l2 = s->prm.norm == KS_NORM_L2;
    double rho, rr, alpha = 0.0, omega = 1.0, beta = 0.0, r0n;
    int stop, fresh = 1;

    KS_TRY(ks_vec_copy(v->r, v->r0));
    KS_TRY(ks_vec_dot(v->r, v->r, &rr));
    rho = rr;
    r0n = sqrt(rr);

    for (;; it++) {
        if (ks_bicgstab_rho(s, it, rho))
            return KS_OK;
        if (fresh)
            KS_TRY(ks_vec_copy(v->r, v->p));
        else /* p = r + beta (p - omega B p) */
            KS_TRY(ks_vec_axpbypcz(1.0, v->r, -beta * omega, v->bp, beta, v->p));
        fresh = 0;
        KS_TRY(apply_both(s, ident, v->p, v->ph, v->bp));
        double rv;
        KS_TRY(ks_vec_dot(v->r0, v->bp, &rv));
        if (ks_bicgstab_alpha(s, it, rho, rv, &alpha))
            return KS_OK;

        /* q = r - alpha B p, y = B q, then (q,y), (y,y), (q,q) in one group.
         * q and r below are copies and axpys, as PBICGSTAB makes them in place:
         * a x + b y with a = 1 may round otherwise (a compiler contracting
         * it to x + round(b y), where the axpy is fma(a, x, y)), and where
         * this fallback runs (||A M^-1|| up to 1e9) such rounding alone
         * moved it off PBICGSTAB's path (11 against 8 iterations on cuda). */
        KS_TRY(ks_vec_copy(v->r, v->q));
        KS_TRY(ks_vec_axpy(-alpha, v->bp, v->q));
        KS_TRY(apply_both(s, ident, v->q, v->qh, v->y));
        const ks_vec *x1[3] = {v->q, v->y, v->q}, *y1[3] = {v->y, v->y, v->q};
        double d1[3];
        KS_TRY(ks_vec_mdot(l2 ? 3 : 2, x1, y1, d1));
        double qnorm;
        if (l2)
            qnorm = sqrt(d1[2]);
        else
            KS_TRY(ks_krylov_norm(s, v->q, &qnorm));

        /* The half step, kept only when b - A x confirms it. */
        if (isfinite(qnorm) && ks_krylov_converged(s, qnorm)) {
            KS_TRY(ks_vec_axpy(alpha, v->ph, x));
            KS_TRY(ks_krylov_record(s, it, qnorm));
            double tn;
            KS_TRY(ks_krylov_residual(s, b, x, v->tr));
            KS_TRY(ks_krylov_norm(s, v->tr, &tn));
            if (ks_krylov_converged(s, tn) || !isfinite(tn)) {
                ks_krylov_amend(s, it, tn);
                return ks_krylov_decide(s, it, tn, &stop);
            }
            KS_TRY(ks_vec_axpy(-alpha, v->ph, x));
        }
        int stopped;
        KS_TRY(ks_bicgstab_omega(s, it, d1, alpha, v->ph, qnorm, x, &omega, &stopped));
        if (stopped)
            return KS_OK;

        /* x += alpha p^ + omega q^; r = q - omega y */
        KS_TRY(ks_vec_axpbypcz(alpha, v->ph, omega, v->qh, 1.0, x));
        KS_TRY(ks_vec_copy(v->q, v->r));
        KS_TRY(ks_vec_axpy(-omega, v->y, v->r));
        const ks_vec *x2[2] = {v->r0, v->r}, *y2[2] = {v->r, v->r};
        double d2[2];
        KS_TRY(ks_vec_mdot(2, x2, y2, d2));
        double rnorm;
        if (l2)
            rnorm = sqrt(d2[1]);
        else
            KS_TRY(ks_krylov_norm(s, v->r, &rnorm));
        KS_TRY(ks_krylov_record(s, it, rnorm));
        if (isfinite(rnorm) && ks_krylov_converged(s, rnorm)) {
            KS_TRY(decide_true(s, b, x, v, it, &stop));
            if (stop)
                return KS_OK;
            /* not yet: go on from the true residual */
            KS_TRY(ks_vec_copy(v->tr, v->r));
            KS_TRY(ks_vec_mdot(2, x2, y2, d2));
        } else {
            KS_TRY(ks_krylov_decide(s, it, rnorm, &stop));
            if (stop)
                return KS_OK;
        }
        if (isfinite(d2[0]) && fabs(d2[0]) < KS_PIPE_SHADOW_TOL * r0n * sqrt(d2[1])) {
            KS_TRY(ks_vec_copy(v->r, v->r0));
            r0n = sqrt(d2[1]);
            rho = d2[1];
            fresh = 1;
            continue;
        }
        beta = (alpha / omega) * (d2[0] / rho);
        rho = d2[0];
    }
}
