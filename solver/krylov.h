/* Private pieces shared by the Krylov methods, the preconditioners and
 * solver.c: the method and preconditioner tables, and the residual
 * bookkeeping (norm, convergence test, history, monitor) every method uses
 * the same way. Not installed. */
#ifndef KS_KRYLOV_H
#define KS_KRYLOV_H

#include "solver_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const ks_krylov_ops ks_krylov_cg_ops;
extern const ks_krylov_ops ks_krylov_bicgstab_ops;
extern const ks_krylov_ops ks_krylov_gmres_ops;
extern const ks_krylov_ops ks_krylov_fgmres_ops;
extern const ks_krylov_ops ks_krylov_pipecg_ops;
extern const ks_krylov_ops ks_krylov_pipebicgstab_ops;

extern const ks_precond_ops ks_precond_identity_ops;
extern const ks_precond_ops ks_precond_jacobi_ops;
extern const ks_precond_ops ks_precond_jacobi_l1_ops;

/* The pipelined methods' residual replacement (reliable updating): when
 * the recurrence's ||r|| falls below this times the largest ||r|| since the
 * last replacement, every recurrence is recomputed from x and p. One or two
 * replacements in a 1e-8 solve; keeps the true residual within 10x of the
 * standard methods' attainable accuracy (test_krylov). Sparser than 1e-3,
 * which perturbed BiCGStab's iteration counts by up to 15 %. */
#define KS_PIPE_RR_DROP 1e-5

/* 1 when the preconditioner is the identity, so a method may alias z = r
 * instead of copying. */
int ks_krylov_pc_is_identity(const ks_solver *s);

/* *nrm = ||v|| in the configured norm (prm.norm). */
ks_error ks_krylov_norm(const ks_solver *s, const ks_vec *v, double *nrm);
/* r = b - A x */
ks_error ks_krylov_residual(ks_solver *s, const ks_vec *b, const ks_vec *x, ks_vec *r);
/* y += a x and *nrm = ||y|| in the configured norm; one pass when it is L2. */
ks_error ks_krylov_axpy_norm(ks_solver *s, double a, const ks_vec *x, ks_vec *y, double *nrm);

/* Start of a solve; r holds b - A x0. Computes ||b|| and ||r0||, fills the
 * stats, history[0] and the monitor header. Sets *stop when the solve is
 * already decided: b == 0 (then x = 0 and r = 0: the exact answer, converged
 * in 0 iterations), NaN/Inf in b or r0, r0 small enough, or max_iters == 0.
 * Otherwise *rnorm is ||r0||. */
ks_error ks_krylov_start(ks_solver *s, const ks_vec *b, ks_vec *x, ks_vec *r, double *rnorm,
                         int *stop);
/* ks_krylov_start's decisions from the norms bn = ||b|| and rn = ||r0||
 * (rn unused when bn is 0 or not finite), for a caller that computed them
 * itself (a column of a block solve); x and r are the caller's to zero
 * when bn == 0. */
ks_error ks_krylov_start_norms(ks_solver *s, double bn, double rn, double *rnorm, int *stop);
/* Record the residual norm of iteration `it` (history, stats, monitor line)
 * without deciding anything. */
ks_error ks_krylov_record(ks_solver *s, int it, double rnorm);
/* Record, then decide: NaN/Inf -> KS_SOLVE_NAN, converged, diverged,
 * it >= max_iters -> KS_SOLVE_MAX_ITERS. *stop is 1 when the status is set. */
ks_error ks_krylov_check(ks_solver *s, int it, double rnorm, int *stop);
/* The decision half of ks_krylov_check, for a residual already recorded
 * (a method that records estimates and then checks a true residual). */
ks_error ks_krylov_decide(ks_solver *s, int it, double rnorm, int *stop);
/* Replace the residual recorded for iteration `it` (the last one) by
 * rnorm, e.g. an estimate by the true residual; prints nothing. */
void ks_krylov_amend(ks_solver *s, int it, double rnorm);
/* 1 when rnorm meets the convergence criterion. */
int ks_krylov_converged(const ks_solver *s, double rnorm);
/* End the solve with `status` (BREAKDOWN or NAN) and the reason text
 * (stored in stats.breakdown, e.g. "p'Ap = -3 <= 0: ..."). */
void ks_krylov_stop(ks_solver *s, ks_solve_status status, const char *fmt, ...) KS_PRINTF(3, 4);
/* A non-finite scalar `what` = v at iteration `it` ends the solve with
 * KS_SOLVE_NAN; 1 when it did. */
int ks_krylov_not_finite(ks_solver *s, const char *what, double v, int it);
/* BiCGStab's rho = r0'r: non-finite ends the solve with NaN, 0 with a
 * breakdown (r orthogonal to the shadow residual); 1 when it ended. */
int ks_bicgstab_rho(ks_solver *s, int it, double rho);
/* BiCGStab's alpha = rho / r0'v (rv): a non-finite rv ends the solve with
 * NaN, rv = 0 with a breakdown; 1 when it ended, else *alpha is set. */
int ks_bicgstab_alpha(ks_solver *s, int it, double rho, double rv, double *alpha);
/* BiCGStab's omega = t's / t't from ts_tt = {t's, t't} (the BiCGStab
 * family's shared step). Where either is non-finite the solve ends with NaN;
 * where either is 0 (omega undefined, or stagnation) the half step is kept
 * (x += alpha phat, its residual norm `half` recorded) and the solve ends
 * with a breakdown. *stopped = 1 in both cases, else *omega is set. */
ks_error ks_bicgstab_omega(ks_solver *s, int it, const double ts_tt[2], double alpha,
                           const ks_vec *phat, double half, ks_vec *x, double *omega,
                           int *stopped);

#ifdef __cplusplus
}
#endif
#endif
