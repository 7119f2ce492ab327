/* Block form of (preconditioned) CG for ks_solver_solve_many: cg.c's
 * iteration on the running columns of blocks, each column with its own
 * alpha, beta and checks (the same tests, messages and order as cg.c), one
 * SpMM and one block preconditioner application per iteration. */
#include "many.h"
#include "../vec/vec_fused.h"

#include <math.h>

/* Stop slot q with `status` unless it stopped already; 1 when it did. */
#define STOP(m, q, status, ...)                                                   \
    do {                                                                          \
        ks_krylov_stop(ks_many_view(m, q), status, __VA_ARGS__);                  \
        (m)->stop[q] = 1;                                                         \
    } while (0)

/* r'z of each slot, checked as cg.c checks it. */
static void check_rz(ks_many *m, const double *rz, int it)
{
    for (int q = 0; q < m->kr; q++) {
        if (!isfinite(rz[q]))
            STOP(m, q, KS_SOLVE_NAN, "r'z = %g at iteration %d", rz[q], it);
        else if (rz[q] < 0.0)
            STOP(m, q, KS_SOLVE_BREAKDOWN,
                 "r'z = %.3g < 0: preconditioner is not positive definite", rz[q]);
        else if (rz[q] == 0.0)
            STOP(m, q, KS_SOLVE_BREAKDOWN,
                 "r'z = 0 with r != 0: preconditioner is singular or indefinite");
    }
}

ks_error ks_krylov_cg_many(ks_solver *s, ks_many *m)
{
    ks_block *R, *Z, *P, *AP;
    const int ident = ks_krylov_pc_is_identity(s), l2 = s->prm.norm == KS_NORM_L2;
    double rnorm[KS_BLOCK_MAX_COLS], rz[KS_BLOCK_MAX_COLS], rz_old[KS_BLOCK_MAX_COLS];
    double pap[KS_BLOCK_MAX_COLS], alpha[KS_BLOCK_MAX_COLS], beta[KS_BLOCK_MAX_COLS];
    double one[KS_BLOCK_MAX_COLS];
    for (int q = 0; q < KS_BLOCK_MAX_COLS; q++)
        one[q] = 1.0;

    KS_TRY(ks_many_block(m, &R));
    KS_TRY(ks_many_block(m, &P));
    KS_TRY(ks_many_block(m, &AP));
    Z = R;
    if (!ident)
        KS_TRY(ks_many_block(m, &Z));
    KS_TRY(ks_many_start(m, R, rnorm));
    if (m->kr == 0)
        return KS_OK;

    if (!ident)
        KS_TRY(ks_precond_apply_block_dot(s->pc, R, Z, rz));
    else if (l2)
        for (int q = 0; q < m->kr; q++)
            rz[q] = rnorm[q] * rnorm[q];
    else
        KS_TRY(ks_block_dot(R, Z, rz));
    KS_TRY(ks_block_copy(Z, P));

    for (int it = 1;; it++) {
        double *sc[] = {rz, rnorm, pap};
        check_rz(m, rz, it);
        KS_TRY(ks_many_retire(m, sc, 2));
        if (m->kr == 0)
            return KS_OK;

        KS_TRY(ks_matrix_apply_block_dot(s->A, P, AP, pap));
        for (int q = 0; q < m->kr; q++) {
            if (!isfinite(pap[q]))
                STOP(m, q, KS_SOLVE_NAN, "p'Ap = %g at iteration %d", pap[q], it);
            else if (pap[q] <= 0.0)
                STOP(m, q, KS_SOLVE_BREAKDOWN,
                     "p'Ap = %.3g <= 0: matrix is not positive definite", pap[q]);
        }
        KS_TRY(ks_many_retire(m, sc, 3));
        if (m->kr == 0)
            return KS_OK;
        /* X += alpha P waits for the next direction (ks_block_axpy_aypx:
         * P read once for both) unless a column stops now, whose x must
         * be whole when it is retired */
        for (int q = 0; q < m->kr; q++)
            alpha[q] = -(rz[q] / pap[q]);
        KS_TRY(ks_many_axpy_norm(m, alpha, AP, R, rnorm));
        for (int q = 0; q < m->kr; q++)
            alpha[q] = -alpha[q];
        KS_TRY(ks_many_check(m, it, rnorm));
        int late = 1;
        for (int q = 0; q < m->kr; q++)
            late &= !m->stop[q];
        if (!late)
            KS_TRY(ks_block_axpy(alpha, P, m->Xw));
        KS_TRY(ks_many_retire(m, sc, 2));
        if (m->kr == 0)
            return KS_OK;

        for (int q = 0; q < m->kr; q++)
            rz_old[q] = rz[q];
        if (ident && l2) {
            for (int q = 0; q < m->kr; q++)
                rz[q] = rnorm[q] * rnorm[q];
        } else if (!ident) { /* r'z where the cycle's last pass makes z */
            KS_TRY(ks_precond_apply_block_dot(s->pc, R, Z, rz));
        } else {
            KS_TRY(ks_block_dot(R, Z, rz));
        }
        /* P = Z + beta P */
        for (int q = 0; q < m->kr; q++)
            beta[q] = rz[q] / rz_old[q];
        if (late)
            KS_TRY(ks_block_axpy_aypx(alpha, P, m->Xw, beta, Z));
        else
            KS_TRY(ks_block_axpby(one, Z, beta, P));
    }
}
