/* Pipelined BiCGStab (Cools and Vanroose 2017), right preconditioned as
 * PBICGSTAB is: BiCGStab on B = A M^-1 with x = M^-1 y, so every hatted
 * vector below is M^-1 of its plain one, kept by the same recurrence.
 *
 * Beside BiCGStab's p, s = B p, q = r - alpha s and y = B q, it carries
 * w = B r, t = B w, z = B s and v = B z, so that the scalars of a whole
 * iteration come from two fused dot groups (ks_vec_mdot), where PBICGSTAB
 * makes five reductions:
 *   group 1: (q,y), (y,y), (t,t), (z,z), (q,q)        beside v = A M^-1 z
 *   group 2: (r0,r), (r0,w), (r0,s), (r0,z), (r,r), (w,w), (v,v)
 *                                                     beside t = A M^-1 w
 * Neither group reads what the preconditioner and SpMV beside it write, so
 * over MPI ranks its sums travel (ks_vec_mdot_begin / _end) while those
 * run. Each iteration applies M twice and A twice, as PBICGSTAB does.
 *
 * Residual replacement (reliable updating, as in PIPECG): each time the
 * recurrence's residual has fallen below KS_PIPE_RR_DROP times the largest
 * one since the last replacement, and when it meets the criterion while
 * b - A x does not, r is replaced by b - A x and every carried product is
 * recomputed from x and p (5 SpMVs, 4 preconditioner applications), the
 * scalars kept. The half step's claim is checked the same way (x + alpha p
 * tried, taken back when its true residual misses). So CONVERGED always
 * means the true residual met the criterion.
 *
 * The pipelined scalars come from sums (alpha's denominator is r0'w +
 * beta r0's - beta omega r0'z) that cancel when r0'r is tiny beside
 * ||r0|| ||r||, and the extra recurrences amplify that: below
 * KS_PIPE_SHADOW_TOL the method restarts with the shadow residual r0 = r
 * (on watt_2 + Jacobi it then converges in 8 iterations, where it stalled;
 * PBICGSTAB takes 35). Breakdowns are BiCGStab's and stop with the same
 * messages.
 *
 * Where A M^-1 is large, no replacement helps: z and t hold B^2 times the
 * residual's scale and v B^3, so one iteration's rounding, relative to the
 * residual, is about eps nu^2 to eps nu^3 with nu = ||B||, and r and w drift
 * off by more than the tolerance within an iteration or two (watt_2 + AMG:
 * nu = 1.5e9; replacing every recurrence every iteration still took 471
 * iterations against PBICGSTAB's 22). (t,t)/(w,w) and (v,v)/(z,z) in the
 * dot groups give nu from below at no extra reduction (t = B w and v = B z
 * are computed, not recurred); above KS_PIPE_NU_MAX the solve goes on from
 * b - A x with the unpipelined iteration (pipebicgstab_plain.c: B p and
 * B q computed, three reductions per iteration) to its end. On the other
 * tests' problems nu stays below 40, so they stay pipelined. */
#include "pipebicgstab.h"
#include "../vec/vec_fused.h"

#include <math.h>

enum { R, RH, W, WH, T, PH, S, SH, Z, ZH, V, Q, QH, Y, YH, R0, TR, NWORK };

/* Largest ||A M^-1|| estimate the pipelined recurrences are trusted with.
 * v carries B^3 p, so its rounding relative to the residual's scale is
 * about eps nu^3: 1e-10 at nu = 100, two digits below the default
 * tolerance. Measured nu: 1 to 7 on the tests' Poisson,
 * convection-diffusion, fv1 and poisson3Da problems and on raefsky2, cage11
 * (AMG, Jacobi, none), 35 on watt_2 + Jacobi (which the pipelined method
 * solves in 8); 1.5e9 on watt_2 + AMG. On test_krylov's Poisson with a
 * well + AMG, nu grows as the flow rows' scale shrinks, and so does the
 * pipelined method's lag (b = A 1): 24 at 1e-1 on 32^2 (6 iterations, as
 * PBICGSTAB), 200 at 1e-2 (8 against 7), 470 at 1e-2 on 48^2 (11 against
 * 8), 1.9e3 at 1e-3 on 32^2 (8 against 6 with the test's b), 2e7 at 1e-7
 * (diverged). */
#define KS_PIPE_NU_MAX 100.0

/* nu^2 >= num/den (squared norms) exceeds KS_PIPE_NU_MAX^2. */
static int too_large(double num, double den)
{
    return den > 0.0 && num > KS_PIPE_NU_MAX * KS_PIPE_NU_MAX * den;
}

/* Leave the pipelined iteration: r = b - A x (unless r_true says r holds
 * it already), then the plain iteration from iteration it. */
static ks_error fall_back(ks_solver *s, const ks_vec *b, ks_vec *x, ks_vec *const *v, int ident,
                          int r_true, int it)
{
    if (!r_true)
        KS_TRY(ks_krylov_residual(s, b, x, v[R]));
    ks_pbs_plain_vecs pv = {
        .r = v[R],  .r0 = v[R0], .p = ident ? v[PH] : v[W], .ph = v[PH], .bp = v[S],
        .q = v[Q],  .qh = v[QH], .y = v[Y],                 .tr = v[TR],
    };
    return ks_pipebicgstab_plain(s, b, x, &pv, it);
}

/* dst = M^-1 src (nothing without a preconditioner: dst is src then). */
static ks_error precond(ks_solver *s, int ident, const ks_vec *src, ks_vec *dst)
{
    return ident ? KS_OK : s->pc->ops->apply(s->pc, src, dst);
}

/* hat = M^-1 src, out = A hat: the work beside a dot group. */
static ks_error apply_both(ks_solver *s, int ident, const ks_vec *src, ks_vec *hat, ks_vec *out)
{
    KS_TRY(precond(s, ident, src, hat));
    return ks_matrix_apply(s->A, 1.0, hat, 0.0, out);
}

/* The dot group of k pairs in flight over the ranks while hat = M^-1 src
 * and out = A hat are computed. */
static ks_error group_beside(ks_solver *s, int ident, int k, const ks_vec *const *x,
                             const ks_vec *const *y, double *d, const ks_vec *src, ks_vec *hat,
                             ks_vec *out)
{
    ks_vec_pending pend;
    KS_TRY(ks_vec_mdot_begin(k, x, y, d, &pend));
    ks_error e = apply_both(s, ident, src, hat, out);
    KS_TRY(ks_vec_mdot_end(&pend));
    return e;
}

/* From r (already b - A x): r^ = M^-1 r, w = A r^, w^ = M^-1 w, t = A w^. */
static ks_error products_of_r(ks_solver *s, ks_vec *const *v, int ident)
{
    KS_TRY(precond(s, ident, v[R], v[RH]));
    KS_TRY(ks_matrix_apply(s->A, 1.0, v[RH], 0.0, v[W]));
    KS_TRY(precond(s, ident, v[W], v[WH]));
    return ks_matrix_apply(s->A, 1.0, v[WH], 0.0, v[T]);
}

/* products_of_r, and the first step's (r0,r), (r0,w), (w,w). */
static ks_error start_from_r(ks_solver *s, ks_vec *const *v, int ident, double *rho,
                             double *r0w, double *ww)
{
    KS_TRY(products_of_r(s, v, ident));
    const ks_vec *xl[3] = {v[R0], v[R0], v[W]}, *yl[3] = {v[R], v[W], v[W]};
    double d[3];
    KS_TRY(ks_vec_mdot(3, xl, yl, d));
    *rho = d[0];
    *r0w = d[1];
    *ww = d[2];
    return KS_OK;
}

/* Everything carried, recomputed from x (r already b - A x) and p:
 * r^, w = A r^, w^, t = A w^, s = A p^, s^, z = A s^, z^, v = A z^. */
static ks_error replace_state(ks_solver *s, ks_vec *const *v, int ident)
{
    KS_TRY(products_of_r(s, v, ident));
    KS_TRY(ks_matrix_apply(s->A, 1.0, v[PH], 0.0, v[S]));
    KS_TRY(precond(s, ident, v[S], v[SH]));
    KS_TRY(ks_matrix_apply(s->A, 1.0, v[SH], 0.0, v[Z]));
    KS_TRY(precond(s, ident, v[Z], v[ZH]));
    return ks_matrix_apply(s->A, 1.0, v[ZH], 0.0, v[V]);
}

/* The recurrence's residual met the criterion at iteration it: check
 * b - A x. *stop when the solve ends; otherwise r holds the true residual
 * and the caller restarts from it. */
static ks_error check_true(ks_solver *s, const ks_vec *b, ks_vec *x, ks_vec *const *v, int it,
                           int *stop)
{
    double tn;
    KS_TRY(ks_krylov_residual(s, b, x, v[TR]));
    KS_TRY(ks_krylov_norm(s, v[TR], &tn));
    ks_krylov_amend(s, it, tn);
    KS_TRY(ks_krylov_decide(s, it, tn, stop));
    if (!*stop)
        KS_TRY(ks_vec_copy(v[TR], v[R]));
    return KS_OK;
}

static ks_error pipebicgstab_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    ks_vec *v[NWORK];
    int ident = ks_krylov_pc_is_identity(s);
    for (int i = 0; i < NWORK; i++)
        v[i] = s->work[i];
    if (ident) { /* the hatted vectors are the plain ones */
        v[RH] = v[R];
        v[WH] = v[W];
        v[SH] = v[S];
        v[ZH] = v[Z];
        v[QH] = v[Q];
        v[YH] = v[Y];
    }
    int l2 = s->prm.norm == KS_NORM_L2;
    double rnorm, rho, r0w, alpha = 0.0, beta = 0.0, omega = 1.0;
    int stop, fresh = 1; /* fresh: the first step, beta = 0 */
    double rmax, r0n, ww; /* ww: (w,w) of the current w, for nu */

    KS_TRY(ks_krylov_residual(s, b, x, v[R]));
    KS_TRY(ks_krylov_start(s, b, x, v[R], &rnorm, &stop));
    if (stop)
        return KS_OK;
    rmax = rnorm;
    KS_TRY(ks_vec_copy(v[R], v[R0]));
    KS_TRY(ks_vec_norm2(v[R0], &r0n));
    KS_TRY(start_from_r(s, v, ident, &rho, &r0w, &ww));

    for (int it = 1;; it++) {
        if (fresh) {
            if (ks_krylov_not_finite(s, "rho = r0'r", rho, it) || ks_krylov_not_finite(s, "r0'w", r0w, it))
                return KS_OK;
            if (rho == 0.0) {
                ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                               "rho = r0'r = 0: residual orthogonal to the shadow residual");
                return KS_OK;
            }
            if (r0w == 0.0) {
                ks_krylov_stop(s, KS_SOLVE_BREAKDOWN, "r0'v = 0: alpha = rho / r0'v undefined");
                return KS_OK;
            }
            alpha = rho / r0w;
            /* p = r, s = w, z = t */
            KS_TRY(ks_vec_copy(v[RH], v[PH]));
            KS_TRY(ks_vec_copy(v[W], v[S]));
            KS_TRY(ks_vec_copy(v[T], v[Z]));
            if (!ident)
                KS_TRY(ks_vec_copy(v[WH], v[SH]));
            fresh = 0;
        } else {
            /* p = r + beta (p - omega s), s = w + beta (s - omega z),
             * z = t + beta (z - omega v): each reads the old next one */
            KS_TRY(ks_vec_axpbypcz(1.0, v[RH], -beta * omega, v[SH], beta, v[PH]));
            if (!ident)
                KS_TRY(ks_vec_axpbypcz(1.0, v[WH], -beta * omega, v[ZH], beta, v[SH]));
            KS_TRY(ks_vec_axpbypcz(1.0, v[W], -beta * omega, v[Z], beta, v[S]));
            KS_TRY(ks_vec_axpbypcz(1.0, v[T], -beta * omega, v[V], beta, v[Z]));
        }
        /* q = r - alpha s, y = w - alpha z (= B q) */
        KS_TRY(ks_vec_axpbypcz(1.0, v[R], -alpha, v[S], 0.0, v[Q]));
        KS_TRY(ks_vec_axpbypcz(1.0, v[W], -alpha, v[Z], 0.0, v[Y]));

        /* group 1: (q,y), (y,y), (t,t), (z,z), (q,q) */
        const ks_vec *x1[5] = {v[Q], v[Y], v[T], v[Z], v[Q]},
                     *y1[5] = {v[Y], v[Y], v[T], v[Z], v[Q]};
        double d1[5];
        /* beside it: z^ = M^-1 z, v = A z^ */
        KS_TRY(group_beside(s, ident, l2 ? 5 : 4, x1, y1, d1, v[Z], v[ZH], v[V]));
        if (too_large(d1[2], ww)) /* ||t|| / ||w||: nothing of this step taken yet */
            return fall_back(s, b, x, v, ident, 0, it);
        if (!ident) {
            KS_TRY(ks_vec_axpbypcz(1.0, v[RH], -alpha, v[SH], 0.0, v[QH]));
            KS_TRY(ks_vec_axpbypcz(1.0, v[WH], -alpha, v[ZH], 0.0, v[YH]));
        }

        /* The half step: stop when q is already small enough. */
        double qnorm = NAN;
        if (l2)
            qnorm = sqrt(d1[4]);
        else
            KS_TRY(ks_krylov_norm(s, v[Q], &qnorm));
        if (isfinite(qnorm) && ks_krylov_converged(s, qnorm)) {
            KS_TRY(ks_vec_axpy(alpha, v[PH], x));
            KS_TRY(ks_krylov_record(s, it, qnorm));
            double tn;
            KS_TRY(ks_krylov_residual(s, b, x, v[TR]));
            KS_TRY(ks_krylov_norm(s, v[TR], &tn));
            if (ks_krylov_converged(s, tn) || !isfinite(tn)) {
                ks_krylov_amend(s, it, tn);
                return ks_krylov_decide(s, it, tn, &stop);
            }
            KS_TRY(ks_vec_axpy(-alpha, v[PH], x)); /* not yet: the full step */
        }
        int stopped;
        KS_TRY(ks_bicgstab_omega(s, it, d1, alpha, v[PH], qnorm, x, &omega, &stopped));
        if (stopped)
            return KS_OK;

        /* x += alpha p^ + omega q^; r = q - omega y; r^ likewise;
         * w = y - omega (t - alpha v) */
        KS_TRY(ks_vec_axpbypcz(alpha, v[PH], omega, v[QH], 1.0, x));
        KS_TRY(ks_vec_axpbypcz(1.0, v[Q], -omega, v[Y], 0.0, v[R]));
        if (!ident)
            KS_TRY(ks_vec_axpbypcz(1.0, v[QH], -omega, v[YH], 0.0, v[RH]));
        KS_TRY(ks_vec_axpbypcz(1.0, v[Y], -omega, v[T], 0.0, v[W]));
        KS_TRY(ks_vec_axpy(omega * alpha, v[V], v[W]));

        /* group 2: (r0,r), (r0,w), (r0,s), (r0,z), (r,r), (w,w), (v,v) */
        const ks_vec *x2[7] = {v[R0], v[R0], v[R0], v[R0], v[R], v[W], v[V]},
                     *y2[7] = {v[R], v[W], v[S], v[Z], v[R], v[W], v[V]};
        double d2[7];
        /* beside it: w^ = M^-1 w, t = A w^ */
        KS_TRY(group_beside(s, ident, 7, x2, y2, d2, v[W], v[WH], v[T]));

        if (l2)
            rnorm = sqrt(d2[4]);
        else
            KS_TRY(ks_krylov_norm(s, v[R], &rnorm));
        KS_TRY(ks_krylov_record(s, it, rnorm));
        int rr = 0;
        if (isfinite(rnorm) && ks_krylov_converged(s, rnorm)) {
            KS_TRY(check_true(s, b, x, v, it, &stop));
            if (stop)
                return KS_OK;
            rr = 1;
        } else {
            KS_TRY(ks_krylov_decide(s, it, rnorm, &stop));
            if (stop)
                return KS_OK;
            if (rnorm > rmax)
                rmax = rnorm;
            else if (rnorm < KS_PIPE_RR_DROP * rmax) {
                KS_TRY(ks_krylov_residual(s, b, x, v[R]));
                rr = 1;
            }
        }
        if (too_large(d2[6], d1[3])) /* ||v|| / ||z|| */
            return fall_back(s, b, x, v, ident, rr, it + 1);
        if (rr) {
            KS_TRY(replace_state(s, v, ident));
            KS_TRY(ks_vec_mdot(7, x2, y2, d2));
            rmax = rnorm;
        }
        ww = d2[5];
        if (isfinite(d2[0]) && fabs(d2[0]) < KS_PIPE_SHADOW_TOL * r0n * sqrt(d2[4])) {
            KS_TRY(ks_vec_copy(v[R], v[R0]));
            r0n = sqrt(d2[4]);
            KS_TRY(ks_vec_mdot(2, x2, y2, d2));
            rho = d2[0];
            r0w = d2[1];
            fresh = 1;
            continue;
        }

        double rho_new = d2[0];
        if (ks_bicgstab_rho(s, it + 1, rho_new))
            return KS_OK;
        beta = (alpha / omega) * (rho_new / rho);
        /* r0'(B p_new) = r0'w + beta r0's - beta omega r0'z */
        double den = d2[1] + beta * d2[2] - beta * omega * d2[3];
        if (ks_krylov_not_finite(s, "r0'v", den, it + 1))
            return KS_OK;
        if (den == 0.0) {
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN, "r0'v = 0: alpha = rho / r0'v undefined");
            return KS_OK;
        }
        alpha = rho_new / den;
        rho = rho_new;
    }
}

const ks_krylov_ops ks_krylov_pipebicgstab_ops = {
    .name = "PIPEBICGSTAB",
    .preconditioned = 1,
    .work_vectors = NWORK,
    .solve = pipebicgstab_solve,
};
