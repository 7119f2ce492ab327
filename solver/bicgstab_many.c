/* Block form of (right preconditioned) BiCGStab for ks_solver_solve_many:
 * bicgstab.c's iteration on the running columns of blocks, each column with
 * its own rho, alpha, omega and checks (the same tests, messages and order
 * as bicgstab.c), two SpMMs and two block preconditioner applications per
 * iteration for the columns still running. */
#include "many.h"

#include <math.h>

/* Stop slot q with NAN when v is not finite; 1 when it stopped. */
static int not_finite(ks_many *m, int q, const char *what, double v, int it)
{
    if (isfinite(v))
        return 0;
    ks_krylov_stop(ks_many_view(m, q), KS_SOLVE_NAN, "%s = %g at iteration %d", what, v, it);
    m->stop[q] = 1;
    return 1;
}

static void stop_breakdown(ks_many *m, int q, const char *why)
{
    ks_krylov_stop(ks_many_view(m, q), KS_SOLVE_BREAKDOWN, "%s", why);
    m->stop[q] = 1;
}

ks_error ks_krylov_bicgstab_many(ks_solver *s, ks_many *m)
{
    ks_block *R, *RHAT, *P, *V, *PHAT, *SHAT, *T;
    const int ident = ks_krylov_pc_is_identity(s);
    enum { RHO, RHO_OLD, ALPHA, OMEGA, RNORM, SNORM, TS, TT, RV, NSC };
    double sc_[NSC][KS_BLOCK_MAX_COLS], *sc[NSC];
    double a[KS_BLOCK_MAX_COLS], b[KS_BLOCK_MAX_COLS], c[KS_BLOCK_MAX_COLS];
    for (int i = 0; i < NSC; i++)
        sc[i] = sc_[i];
    double *rho = sc[RHO], *rho_old = sc[RHO_OLD], *alpha = sc[ALPHA], *omega = sc[OMEGA];
    double *rnorm = sc[RNORM], *snorm = sc[SNORM], *ts = sc[TS], *tt = sc[TT];
    double *rv = sc[RV];

    KS_TRY(ks_many_block(m, &R));
    KS_TRY(ks_many_block(m, &RHAT));
    KS_TRY(ks_many_block(m, &P));
    KS_TRY(ks_many_block(m, &V));
    KS_TRY(ks_many_block(m, &T));
    PHAT = P;
    SHAT = R; /* s = r - alpha v overwrites r */
    if (!ident) {
        KS_TRY(ks_many_block(m, &PHAT));
        KS_TRY(ks_many_block(m, &SHAT));
    }
    KS_TRY(ks_many_start(m, R, rnorm));
    if (m->kr == 0)
        return KS_OK;
    KS_TRY(ks_block_copy(R, RHAT));
    for (int q = 0; q < m->kr; q++)
        rho_old[q] = alpha[q] = omega[q] = 1.0;

    for (int it = 1;; it++) {
        KS_TRY(ks_block_dot(RHAT, R, rho));
        for (int q = 0; q < m->kr; q++)
            if (!not_finite(m, q, "rho = r0'r", rho[q], it) && rho[q] == 0.0)
                stop_breakdown(m, q, "rho = r0'r = 0: residual orthogonal to the shadow "
                                     "residual");
        KS_TRY(ks_many_retire(m, sc, NSC));
        if (m->kr == 0)
            return KS_OK;
        if (it == 1) {
            KS_TRY(ks_block_copy(R, P));
        } else {
            /* p = r + beta (p - omega v) in one pass */
            for (int q = 0; q < m->kr; q++) {
                double beta = (rho[q] / rho_old[q]) * (alpha[q] / omega[q]);
                a[q] = 1.0;
                b[q] = -beta * omega[q];
                c[q] = beta;
            }
            KS_TRY(ks_block_axpbypcz(a, R, b, V, c, P));
        }
        if (!ident)
            KS_TRY(ks_precond_apply_block(s->pc, P, PHAT));
        KS_TRY(ks_matrix_apply_block(s->A, 1.0, PHAT, 0.0, V));
        KS_TRY(ks_block_dot(RHAT, V, rv));
        for (int q = 0; q < m->kr; q++)
            if (!not_finite(m, q, "r0'v", rv[q], it) && rv[q] == 0.0)
                stop_breakdown(m, q, "r0'v = 0: alpha = rho / r0'v undefined");
        KS_TRY(ks_many_retire(m, sc, NSC));
        if (m->kr == 0)
            return KS_OK;
        for (int q = 0; q < m->kr; q++) {
            alpha[q] = rho[q] / rv[q];
            a[q] = -alpha[q];
        }

        /* Half step: s = r - alpha v; a column whose s is already small
         * takes x += alpha phat and stops. */
        KS_TRY(ks_many_axpy_norm(m, a, V, R, snorm));
        int half = 0, done[KS_BLOCK_MAX_COLS];
        for (int q = 0; q < m->kr; q++) {
            done[q] = isfinite(snorm[q]) && ks_krylov_converged(ks_many_view(m, q), snorm[q]);
            a[q] = done[q] ? alpha[q] : 0.0;
            half |= done[q];
        }
        if (half) {
            KS_TRY(ks_block_axpy(a, PHAT, m->Xw));
            for (int q = 0; q < m->kr; q++)
                if (done[q])
                    KS_TRY(ks_krylov_check(ks_many_view(m, q), it, snorm[q], &m->stop[q]));
            KS_TRY(ks_many_retire(m, sc, NSC));
            if (m->kr == 0)
                return KS_OK;
        }

        if (!ident)
            KS_TRY(ks_precond_apply_block(s->pc, R, SHAT));
        KS_TRY(ks_matrix_apply_block(s->A, 1.0, SHAT, 0.0, T));
        KS_TRY(ks_block_dot(T, R, ts));
        KS_TRY(ks_block_dot(T, T, tt));
        /* a scalar that is not finite stops its column without the half
         * step, as bicgstab.c does */
        for (int q = 0; q < m->kr; q++)
            if (!not_finite(m, q, "t's", ts[q], it))
                not_finite(m, q, "t't", tt[q], it);
        KS_TRY(ks_many_retire(m, sc, NSC));
        if (m->kr == 0)
            return KS_OK;
        for (int q = 0; q < m->kr; q++) {
            a[q] = alpha[q];
            b[q] = 0.0;
            c[q] = 1.0;
            if (tt[q] == 0.0 || ts[q] == 0.0) {
                /* The half step is still progress: keep it (x, ||s||), then stop. */
                KS_TRY(ks_krylov_record(ks_many_view(m, q), it, snorm[q]));
                stop_breakdown(m, q, tt[q] == 0.0 ? "t't = 0 (t = A M^-1 s): omega undefined"
                                                  : "omega = t's/t't = 0: stagnation");
                continue;
            }
            omega[q] = ts[q] / tt[q];
            b[q] = omega[q];
        }
        /* x += alpha phat + omega shat (only alpha phat where it broke down) */
        KS_TRY(ks_block_axpbypcz(a, PHAT, b, SHAT, c, m->Xw));
        KS_TRY(ks_many_retire(m, sc, NSC));
        if (m->kr == 0)
            return KS_OK;
        /* r = s - omega t */
        for (int q = 0; q < m->kr; q++)
            a[q] = -omega[q];
        KS_TRY(ks_many_axpy_norm(m, a, T, R, rnorm));
        KS_TRY(ks_many_check(m, it, rnorm));
        for (int q = 0; q < m->kr; q++)
            rho_old[q] = rho[q];
        KS_TRY(ks_many_retire(m, sc, NSC));
        if (m->kr == 0)
            return KS_OK;
    }
}
