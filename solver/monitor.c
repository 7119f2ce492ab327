/* Residual bookkeeping shared by every Krylov method: the configured norm,
 * the convergence / divergence / NaN decisions, the residual history and the
 * monitor table. Methods call ks_krylov_start once, then ks_krylov_check
 * after each iteration, so every method stops by the same rules. */
#include "krylov.h"
#include "../vec/vec_fused.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int ks_krylov_pc_is_identity(const ks_solver *s)
{
    return s->pc && s->pc->ops == &ks_precond_identity_ops;
}

ks_error ks_krylov_norm(const ks_solver *s, const ks_vec *v, double *nrm)
{
    switch (s->prm.norm) {
    case KS_NORM_L1: return ks_vec_norm1(v, nrm);
    case KS_NORM_LMAX: return ks_vec_norminf(v, nrm);
    case KS_NORM_L2: break;
    }
    return ks_vec_norm2(v, nrm);
}

ks_error ks_krylov_residual(ks_solver *s, const ks_vec *b, const ks_vec *x, ks_vec *r)
{
    KS_TRY(ks_vec_copy(b, r));
    return ks_matrix_apply(s->A, -1.0, x, 1.0, r);
}

ks_error ks_krylov_axpy_norm(ks_solver *s, double a, const ks_vec *x, ks_vec *y, double *nrm)
{
    if (s->prm.norm == KS_NORM_L2)
        return ks_vec_axpy_norm2(a, x, y, nrm);
    KS_TRY(ks_vec_axpy(a, x, y));
    return ks_krylov_norm(s, y, nrm);
}

/* The norm the criterion compares against (1 for ABSOLUTE). */
static double conv_reference(const ks_solver *s)
{
    switch (s->prm.convergence) {
    case KS_CONV_ABSOLUTE: return s->scale; /* the tolerance in the scaled system */
    case KS_CONV_RELATIVE_INI: return s->stats.initial_residual;
    case KS_CONV_RELATIVE_RHS: break;
    }
    return s->stats.rhs_norm;
}

int ks_krylov_converged(const ks_solver *s, double rnorm)
{
    /* An exactly zero residual is the exact answer under every criterion
     * (also RELATIVE_INI from an exact x0, where tol * ||r0|| is 0). */
    return rnorm == 0.0 || rnorm < s->prm.tolerance * conv_reference(s);
}

void ks_krylov_stop(ks_solver *s, ks_solve_status status, const char *fmt, ...)
{
    va_list ap;
    s->stats.status = status;
    va_start(ap, fmt);
    vsnprintf(s->stats.breakdown, sizeof s->stats.breakdown, fmt, ap);
    va_end(ap);
}

ks_error ks_krylov_record(ks_solver *s, int it, double rnorm)
{
    ks_solve_stats *st = &s->stats;
    double prev = st->final_residual;
    if (s->prm.store_res_history) {
        if (it >= s->history_cap) {
            int cap = s->history_cap < 64 ? 64 : 2 * s->history_cap;
            while (cap <= it)
                cap *= 2;
            double *h = realloc(s->history, (size_t)cap * sizeof *h);
            if (!h)
                return ks_seterr(KS_ERR_MEMORY,
                                 "out of host memory growing the residual history to %d entries",
                                 cap);
            s->history = h;
            s->history_cap = cap;
        }
        s->history[it] = rnorm;
        st->history = s->history;
        st->history_len = it + 1;
    }
    st->iterations = it;
    st->final_residual = rnorm;
    double ref = conv_reference(s);
    st->relative_residual = ref > 0.0 ? rnorm / ref : rnorm;
    if (s->prm.monitor_residual) {
        /* ks_log flushes each line: a pipe (| tee, a log) would otherwise
         * get the table in bursts of a buffer's size. */
        if (it == 0)
            ks_log(KS_LOG_INFO, "%8d  %14.6e\n", it, rnorm / s->scale);
        else
            ks_log(KS_LOG_INFO, "%8d  %14.6e  %8.4f\n", it, rnorm / s->scale,
                   prev > 0.0 ? rnorm / prev : NAN);
    }
    return KS_OK;
}

void ks_krylov_amend(ks_solver *s, int it, double rnorm)
{
    ks_solve_stats *st = &s->stats;
    if (s->prm.store_res_history && s->history && it < s->history_cap)
        s->history[it] = rnorm;
    st->final_residual = rnorm;
    double ref = conv_reference(s);
    st->relative_residual = ref > 0.0 ? rnorm / ref : rnorm;
}

ks_error ks_krylov_check(ks_solver *s, int it, double rnorm, int *stop)
{
    KS_TRY(ks_krylov_record(s, it, rnorm));
    return ks_krylov_decide(s, it, rnorm, stop);
}

ks_error ks_krylov_decide(ks_solver *s, int it, double rnorm, int *stop)
{
    ks_solve_stats *st = &s->stats;
    *stop = 1;
    if (!isfinite(rnorm)) {
        ks_krylov_stop(s, KS_SOLVE_NAN, "residual norm = %g at iteration %d", rnorm, it);
        return KS_OK;
    }
    if (ks_krylov_converged(s, rnorm)) {
        st->status = KS_SOLVE_CONVERGED;
        return KS_OK;
    }
    /* Divergence is measured from where the solve started (and from ||b||
     * for RELATIVE_RHS, so a poor x0 alone never counts as divergence). A
     * non-positive factor turns the test off. */
    double dref = st->initial_residual;
    if (s->prm.convergence == KS_CONV_RELATIVE_RHS && st->rhs_norm > dref)
        dref = st->rhs_norm;
    if (it > 0 && s->prm.divergence_factor > 0.0 && rnorm > s->prm.divergence_factor * dref) {
        ks_krylov_stop(s, KS_SOLVE_DIVERGED, "residual %g > divergence_factor %g * %g", rnorm,
                       s->prm.divergence_factor, dref);
        return KS_OK;
    }
    if (it >= s->prm.max_iters) {
        st->status = KS_SOLVE_MAX_ITERS;
        return KS_OK;
    }
    *stop = 0;
    return KS_OK;
}

ks_error ks_krylov_start(ks_solver *s, const ks_vec *b, ks_vec *x, ks_vec *r, double *rnorm,
                         int *stop)
{
    double bn, rn = 0.0;
    KS_TRY(ks_krylov_norm(s, b, &bn));
    if (bn == 0.0) {
        /* A x = 0 has the exact answer x = 0 (for any nonsingular A); iterating
         * would only divide by zero norms. */
        KS_TRY(ks_vec_fill(x, 0.0));
        KS_TRY(ks_vec_fill(r, 0.0));
    } else if (isfinite(bn)) {
        KS_TRY(ks_krylov_norm(s, r, &rn));
    }
    return ks_krylov_start_norms(s, bn, rn, rnorm, stop);
}

ks_error ks_krylov_start_norms(ks_solver *s, double bn, double rn, double *rnorm, int *stop)
{
    ks_solve_stats *st = &s->stats;
    *stop = 1;
    *rnorm = NAN;
    st->rhs_norm = bn;
    if (s->prm.monitor_residual)
        ks_log(KS_LOG_INFO, "%8s  %14s  %8s\n", "iter", "residual", "rate");
    if (!isfinite(bn)) {
        st->initial_residual = bn;
        KS_TRY(ks_krylov_record(s, 0, bn));
        ks_krylov_stop(s, KS_SOLVE_NAN, "||b|| = %g: the right-hand side contains NaN or Inf",
                       bn);
        return KS_OK;
    }
    if (bn == 0.0) {
        st->initial_residual = 0.0;
        KS_TRY(ks_krylov_record(s, 0, 0.0));
        st->status = KS_SOLVE_CONVERGED;
        *rnorm = 0.0;
        return KS_OK;
    }
    st->initial_residual = rn;
    if (!isfinite(rn)) {
        KS_TRY(ks_krylov_record(s, 0, rn));
        ks_krylov_stop(s, KS_SOLVE_NAN,
                       "||b - A x0|| = %g: the initial guess or the matrix gives NaN or Inf", rn);
        return KS_OK;
    }
    *rnorm = rn;
    return ks_krylov_check(s, 0, rn, stop);
}

int ks_krylov_not_finite(ks_solver *s, const char *what, double v, int it)
{
    if (isfinite(v))
        return 0;
    ks_krylov_stop(s, KS_SOLVE_NAN, "%s = %g at iteration %d", what, v, it);
    return 1;
}

ks_error ks_bicgstab_omega(ks_solver *s, int it, const double ts_tt[2], double alpha,
                           const ks_vec *phat, double half, ks_vec *x, double *omega,
                           int *stopped)
{
    *stopped = 1;
    if (ks_krylov_not_finite(s, "t's", ts_tt[0], it) ||
        ks_krylov_not_finite(s, "t't", ts_tt[1], it))
        return KS_OK;
    if (ts_tt[1] == 0.0 || ts_tt[0] == 0.0) {
        /* The half step is still progress: keep it (x, its norm), then stop. */
        KS_TRY(ks_vec_axpy(alpha, phat, x));
        KS_TRY(ks_krylov_record(s, it, half));
        if (ts_tt[1] == 0.0)
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN, "t't = 0 (t = A M^-1 s): omega undefined");
        else
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN, "omega = t's/t't = 0: stagnation");
        return KS_OK;
    }
    *omega = ts_tt[0] / ts_tt[1];
    *stopped = 0;
    return KS_OK;
}

int ks_bicgstab_alpha(ks_solver *s, int it, double rho, double rv, double *alpha)
{
    if (ks_krylov_not_finite(s, "r0'v", rv, it))
        return 1;
    if (rv == 0.0) {
        ks_krylov_stop(s, KS_SOLVE_BREAKDOWN, "r0'v = 0: alpha = rho / r0'v undefined");
        return 1;
    }
    *alpha = rho / rv;
    return 0;
}

int ks_bicgstab_rho(ks_solver *s, int it, double rho)
{
    if (ks_krylov_not_finite(s, "rho = r0'r", rho, it))
        return 1;
    if (rho == 0.0) {
        ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                       "rho = r0'r = 0: residual orthogonal to the shadow residual");
        return 1;
    }
    return 0;
}
