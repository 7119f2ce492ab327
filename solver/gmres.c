/* GMRES(m) and flexible GMRES(m) (Saad), right preconditioned: the
 * iteration minimises ||b - A x|| itself, so its estimate is the true
 * residual up to rounding. FGMRES keeps z_j = M^{-1} v_j for every basis
 * vector and builds x from them, so M may change from one application to
 * the next (an inner Krylov solve, a varying number of sweeps); GMRES keeps
 * only V and applies M once more per cycle to form x.
 *
 * Orthogonalisation is classical Gram-Schmidt done twice (CGS2), each pass
 * one block dot product (ks_vec_mdot: all <v_i, w> in one pass and one
 * reduction) and one block update (ks_vec_maxpy). The first pass's group
 * also carries <w, w> and the second's <w', w'>, so ||w''|| comes from
 * Pythagoras without a third reduction (computed directly when the second
 * pass removed much of w', where that subtraction would cancel).
 *
 * The least-squares problem is kept triangular by Givens rotations; |g_{j+1}|
 * is the residual estimate the monitor shows. Every cycle ends by forming x
 * and the true residual b - A x, which replaces the last estimate in the
 * statistics and decides convergence, so what is reported is real; a cycle
 * that only seemed converged restarts. h_{j+1,j} = 0 (the Krylov space is
 * invariant: a "lucky" breakdown) ends the cycle with the exact solution of
 * the projected problem; only when the projected matrix is singular as well
 * does the solve stop with BREAKDOWN. */
#include "many.h"
#include "../vec/vec_fused.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* s->work: V[0..m] (the basis, V[0] also the residual), W (the new vector),
 * then Z[0..m-1] (FGMRES) or one z (GMRES). */
static int gmres_count(const ks_solver_params *prm) { return ks_solver_params_gmres_m(prm) + 3; }

static int fgmres_count(const ks_solver_params *prm)
{
    return 2 * ks_solver_params_gmres_m(prm) + 2;
}

/* Host side of one solve: the Hessenberg matrix (column-major, m + 1 rows),
 * rotations, right-hand side g, and the lists the block operations take. */
typedef struct gm_host {
    int m;
    double *H, *cs, *sn, *g, *y, *d, *c;
    const ks_vec **xl, **yl;
} gm_host;

#define HIJ(h, i, j) ((h)->H[(size_t)(j) * (size_t)((h)->m + 1) + (size_t)(i)])

static ks_error host_alloc(gm_host *h, int m)
{
    h->m = m;
    size_t nd = (size_t)(m + 1) * (size_t)m + 2 * (size_t)m + 2 * (size_t)(m + 1) +
                (size_t)(m + 2) + (size_t)(m + 1);
    h->H = ks_malloc(nd * sizeof(double), "GMRES Hessenberg matrix");
    h->xl = ks_malloc(2 * (size_t)(m + 2) * sizeof *h->xl, "GMRES vector lists");
    if (!h->H || !h->xl) {
        free(h->H);
        free(h->xl);
        return KS_ERR_MEMORY;
    }
    h->cs = h->H + (size_t)(m + 1) * (size_t)m;
    h->sn = h->cs + m;
    h->g = h->sn + m;
    h->y = h->g + (m + 1);
    h->d = h->y + (m + 1);
    h->c = h->d + (m + 2);
    h->yl = h->xl + (m + 2);
    return KS_OK;
}

static void host_free(gm_host *h)
{
    free(h->H);
    free(h->xl);
}

/* w -= V[0..j] (V' w), once; d[0..j] = V' w and d[j+1] = <w, w> before it. */
static ks_error cgs_pass(gm_host *h, ks_vec **V, int j, ks_vec *w)
{
    for (int i = 0; i <= j; i++) {
        h->xl[i] = V[i];
        h->yl[i] = w;
    }
    h->xl[j + 1] = h->yl[j + 1] = w;
    KS_TRY(ks_vec_mdot(j + 2, h->xl, h->yl, h->d));
    for (int i = 0; i <= j; i++)
        h->c[i] = -h->d[i];
    return ks_vec_maxpy(j + 1, h->c, (const ks_vec *const *)V, w);
}

/* Orthogonalise w against V[0..j] (CGS2) into column j of H; *hn is
 * ||w|| after it and *wn ||w|| before it. */
static ks_error orthogonalise(gm_host *h, ks_vec **V, int j, ks_vec *w, double *hn, double *wn)
{
    KS_TRY(cgs_pass(h, V, j, w));
    *wn = sqrt(h->d[j + 1]);
    for (int i = 0; i <= j; i++)
        HIJ(h, i, j) = h->d[i];
    KS_TRY(cgs_pass(h, V, j, w));
    double ww = h->d[j + 1], hh = 0.0;
    for (int i = 0; i <= j; i++) {
        HIJ(h, i, j) += h->d[i];
        hh += h->d[i] * h->d[i];
    }
    /* ||w''||^2 = ||w'||^2 - ||h2||^2 for orthonormal V; when the second
     * pass took off more than a hundredth of it, measure instead. */
    if (isfinite(ww) && hh <= 0.01 * ww)
        *hn = sqrt(ww - hh);
    else
        KS_TRY(ks_vec_norm2(w, hn));
    return KS_OK;
}

/* Rotate column j by the previous rotations, then make and apply the one
 * that zeroes H(j+1, j). Returns 0 when the column is zero (the projected
 * matrix is singular). */
static int rotate(gm_host *h, int j)
{
    for (int i = 0; i < j; i++) {
        double a = HIJ(h, i, j), b = HIJ(h, i + 1, j);
        HIJ(h, i, j) = h->cs[i] * a + h->sn[i] * b;
        HIJ(h, i + 1, j) = -h->sn[i] * a + h->cs[i] * b;
    }
    double a = HIJ(h, j, j), b = HIJ(h, j + 1, j), r = hypot(a, b);
    if (r == 0.0)
        return 0;
    h->cs[j] = a / r;
    h->sn[j] = b / r;
    HIJ(h, j, j) = r;
    HIJ(h, j + 1, j) = 0.0;
    h->g[j + 1] = -h->sn[j] * h->g[j];
    h->g[j] = h->cs[j] * h->g[j];
    return 1;
}

/* x += (the correction of the first k basis vectors): y = R^{-1} g, then
 * x += Z y (FGMRES), V y (no preconditioner) or M^{-1} (V y) (GMRES). */
static ks_error update_x(ks_solver *s, gm_host *h, int k, ks_vec **V, ks_vec **Z, ks_vec *w,
                         ks_vec *zt, ks_vec *x)
{
    if (k == 0)
        return KS_OK;
    for (int i = k - 1; i >= 0; i--) {
        double t = h->g[i];
        for (int l = i + 1; l < k; l++)
            t -= HIJ(h, i, l) * h->y[l];
        h->y[i] = t / HIJ(h, i, i);
    }
    if (Z)
        return ks_vec_maxpy(k, h->y, (const ks_vec *const *)Z, x);
    if (!zt)
        return ks_vec_maxpy(k, h->y, (const ks_vec *const *)V, x);
    KS_TRY(ks_vec_fill(w, 0.0));
    KS_TRY(ks_vec_maxpy(k, h->y, (const ks_vec *const *)V, w));
    KS_TRY(s->pc->ops->apply(s->pc, w, zt));
    return ks_vec_axpy(1.0, zt, x);
}

static ks_error gmres_run(ks_solver *s, const ks_vec *b, ks_vec *x, int flexible, gm_host *h)
{
    const int m = h->m;
    int ident = ks_krylov_pc_is_identity(s);
    ks_vec **V = s->work, *w = s->work[m + 1];
    ks_vec **Z = flexible && !ident ? s->work + m + 2 : NULL;
    ks_vec *zt = !flexible && !ident ? s->work[m + 2] : NULL;
    double beta;
    int stop, it = 0;

    KS_TRY(ks_krylov_residual(s, b, x, V[0]));
    KS_TRY(ks_krylov_start(s, b, x, V[0], &beta, &stop));
    if (stop)
        return KS_OK;

    for (;;) { /* one cycle: V[0] holds the residual, beta its 2-norm */
        KS_TRY(ks_vec_scale(V[0], 1.0 / beta));
        h->g[0] = beta;
        int k = 0, singular = 0;
        for (int j = 0; j < m; j++) {
            it++;
            ks_vec *zj = Z ? Z[j] : zt ? zt : V[j];
            if (!ident)
                KS_TRY(s->pc->ops->apply(s->pc, V[j], zj));
            KS_TRY(ks_matrix_apply(s->A, 1.0, zj, 0.0, w));
            double hn, wn;
            KS_TRY(orthogonalise(h, V, j, w, &hn, &wn));
            if (!isfinite(hn) || !isfinite(wn)) {
                KS_TRY(ks_krylov_record(s, it, NAN));
                ks_krylov_stop(s, KS_SOLVE_NAN, "||A M^-1 v|| = %g at iteration %d", wn, it);
                return KS_OK;
            }
            /* What is left of w after taking off its projection is rounding:
             * A M^-1 v_j lies in the basis' span (lucky breakdown). */
            int lucky = hn <= 4.0 * DBL_EPSILON * wn;
            HIJ(h, j + 1, j) = lucky ? 0.0 : hn;
            if (!rotate(h, j)) {
                singular = 1; /* keep the first j columns */
                KS_TRY(ks_krylov_record(s, it, fabs(h->g[j])));
                break;
            }
            k = j + 1;
            double est = fabs(h->g[j + 1]);
            KS_TRY(ks_krylov_record(s, it, est));
            if (!isfinite(est)) {
                ks_krylov_stop(s, KS_SOLVE_NAN, "residual estimate = %g at iteration %d", est,
                               it);
                return KS_OK;
            }
            if (lucky || ks_krylov_converged(s, est) || it >= s->prm.max_iters)
                break;
            if (j + 1 < m)
                KS_TRY(ks_vec_axpby(1.0 / hn, w, 0.0, V[j + 1]));
        }
        KS_TRY(update_x(s, h, k, V, Z, w, zt, x));
        /* The true residual, which the next cycle starts from. */
        KS_TRY(ks_krylov_residual(s, b, x, V[0]));
        KS_TRY(ks_vec_norm2(V[0], &beta));
        ks_krylov_amend(s, it, beta);
        if (singular && isfinite(beta) && !ks_krylov_converged(s, beta)) {
            ks_krylov_stop(s, KS_SOLVE_BREAKDOWN,
                           "A M^-1 v_%d lies in the span of the previous basis vectors and the "
                           "projected matrix is singular at iteration %d: A or M is singular",
                           k, it);
            return KS_OK;
        }
        KS_TRY(ks_krylov_decide(s, it, beta, &stop));
        if (stop)
            return KS_OK;
    }
}

static ks_error solve_common(ks_solver *s, const ks_vec *b, ks_vec *x, int flexible)
{
    gm_host h;
    KS_TRY(host_alloc(&h, ks_solver_params_gmres_m(&s->prm)));
    ks_error e = gmres_run(s, b, x, flexible, &h);
    host_free(&h);
    return e;
}

static ks_error gmres_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    return solve_common(s, b, x, 0);
}

static ks_error fgmres_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    return solve_common(s, b, x, 1);
}

const ks_krylov_ops ks_krylov_gmres_ops = {
    .name = "GMRES",
    .preconditioned = 1,
    .work_count = gmres_count,
    .solve = gmres_solve,
    .solve_block = ks_krylov_gmres_many,
};

const ks_krylov_ops ks_krylov_fgmres_ops = {
    .name = "FGMRES",
    .preconditioned = 1,
    .work_count = fgmres_count,
    .solve = fgmres_solve,
    .solve_block = ks_krylov_gmres_many,
};
