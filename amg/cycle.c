/* Multigrid cycles. Level l: pre-smooth, restrict the residual with the
 * explicit R = P^T (one SpMV), recurse, prolongate and correct (SpMV with
 * beta = 1), post-smooth with the adjoint smoother. Residuals and smoother
 * steps are fused passes of the level's matrix (ks_matrix_fused_step). The
 * coarsest level is one SpMV with the explicit inverse (or, when coarsening
 * stopped above the dense limit, smoothing sweeps).
 *   V: one coarse visit per level.
 *   W: two coarse visits per level (one when the next level is the exact
 *      coarse solve: a second would change nothing).
 *   F: an F-cycle on the next level followed by a V-cycle there.
 * With the same smoother before and after (or GS forward / backward) each
 * of these is a symmetric operator, so PCG may use it. */
#include "hierarchy.h"

#include <string.h>

typedef ks_amg_cycle_kind cycle_kind;
#define CYC_V KS_AMG_V
#define CYC_W KS_AMG_W
#define CYC_F KS_AMG_F

/* Sweeps the coarsest level gets when it is too large for the dense solve. */
#define KS_AMG_COARSE_SWEEPS 20

/* Number of times level l's smoothing swaps x between its two buffers in
 * one visit (the coarsest level: its sweeps when it has no dense solve). */
int ks_amg_level_swaps(const ks_amg *amg, int l, int x_zero)
{
    int n;
    if (l == amg->nlevels - 1)
        n = amg->coarse_inv ? 0 : 2 * ks_amg_smooth_steps(amg, l, KS_AMG_COARSE_SWEEPS / 2);
    else
        n = ks_amg_smooth_steps(amg, l, amg->prm.presweeps) +
            ks_amg_smooth_steps(amg, l, amg->prm.postsweeps);
    /* from x = 0 the first step writes in place */
    if (x_zero && n > 0 && (l < amg->nlevels - 1 ? amg->prm.presweeps > 0 : 1))
        n--;
    return n;
}

static ks_error coarse_solve(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, int x_zero)
{
    ks_amg_level *L = &amg->levels[l];
    if (!amg->coarse_inv) {
        /* Symmetric: half the sweeps forward, half as the adjoint. */
        KS_TRY(ks_amg_smooth(amg, l, b, xb, KS_AMG_COARSE_SWEEPS / 2, 0, x_zero));
        return ks_amg_smooth(amg, l, b, xb, KS_AMG_COARSE_SWEEPS / 2, 1, 0);
    }
    if (x_zero)
        return ks_matrix_apply(amg->coarse_inv, 1.0, b, 0.0, xb->cur);
    /* x += A^-1 (b - A x) */
    KS_TRY(ks_amg_residual(amg, l, b, xb->cur, L->r));
    return ks_matrix_apply(amg->coarse_inv, 1.0, L->r, 1.0, xb->cur);
}

static ks_error cycle_level(ks_amg *amg, int l, const ks_vec *b, ks_vec *x, int x_zero,
                            cycle_kind kind);

#define STEP KS_AMG_STEP

/* Level l below the smoothing: restrict, visit the next level, correct. */
static ks_error coarse_correct(ks_amg *amg, int l, ks_vec *x, cycle_kind kind)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    STEP(amg, l, KS_STEP_RESTRICT, ks_matrix_apply(L->Rm, 1.0, L->r, 0.0, C->b));
    int coarse_exact = l + 1 == amg->nlevels - 1 && amg->coarse_inv;
    switch (kind) {
    case CYC_V: KS_TRY(cycle_level(amg, l + 1, C->b, C->x, 1, CYC_V)); break;
    case CYC_W:
        KS_TRY(cycle_level(amg, l + 1, C->b, C->x, 1, CYC_W));
        if (!coarse_exact)
            KS_TRY(cycle_level(amg, l + 1, C->b, C->x, 0, CYC_W));
        break;
    case CYC_F:
        KS_TRY(cycle_level(amg, l + 1, C->b, C->x, 1, CYC_F));
        if (!coarse_exact)
            KS_TRY(cycle_level(amg, l + 1, C->b, C->x, 0, CYC_V));
        break;
    }
    STEP(amg, l, KS_STEP_PROLONG, ks_matrix_apply(L->Pm, 1.0, C->x, 1.0, x));
    return KS_OK;
}

/* The result must end in x. The smoothers write out of place, so with an
 * odd number of swaps ahead the visit starts in the spare buffer (from
 * x = 0, where nothing needs moving); otherwise, rarely, the result is
 * moved at the end: the buffers' memory is exchanged when x is the
 * level's own vector, copied when it is the caller's (level 0). */
static ks_error cycle_level(ks_amg *amg, int l, const ks_vec *b, ks_vec *x, int x_zero,
                            cycle_kind kind)
{
    ks_amg_level *L = &amg->levels[l];
    ks_amg_xbuf xb = {x, L->w};
    const int odd = ks_amg_level_swaps(amg, l, x_zero) & 1;
    if (odd && x_zero) {
        xb.cur = L->w;
        xb.spare = x;
    }
    if (l == amg->nlevels - 1) {
        STEP(amg, l, KS_STEP_COARSE, coarse_solve(amg, l, b, &xb, x_zero));
    } else {
        const int pre = amg->prm.presweeps, post = amg->prm.postsweeps;
        STEP(amg, l, KS_STEP_SMOOTH, ks_amg_smooth(amg, l, b, &xb, pre, 0, x_zero));
        if (pre <= 0 && x_zero)
            STEP(amg, l, KS_STEP_RESIDUAL, ks_vec_copy(b, L->r)); /* x = 0: the residual is b */
        else
            STEP(amg, l, KS_STEP_RESIDUAL, ks_amg_residual(amg, l, b, xb.cur, L->r));
        KS_TRY(coarse_correct(amg, l, xb.cur, kind));
        STEP(amg, l, KS_STEP_POSTSMOOTH, ks_amg_smooth(amg, l, b, &xb, post, 1, 0));
    }
    if (xb.cur == x)
        return KS_OK;
    if (x == L->x) {
        double *t = x->data;
        x->data = xb.cur->data;
        xb.cur->data = t;
        return KS_OK;
    }
    return ks_vec_copy(xb.cur, x);
}

ks_error ks_amg_cycle(ks_amg *amg, const ks_vec *b, ks_vec *x, int x_zero)
{
    if (!amg || !b || !x)
        return ks_seterr(KS_ERR_ARG, "ks_amg_cycle: NULL %s", !amg ? "hierarchy" : "vector");
    if (amg->nlevels < 1)
        return ks_seterr(KS_ERR_ARG, "AMG cycle: no hierarchy (the last setup failed)");
    ks_int n = amg->levels[0].A.nrows;
    if (ks_vec_size(b) != n || ks_vec_size(x) != n)
        return ks_seterr(KS_ERR_SIZE, "AMG cycle: vectors have %ld and %ld entries, matrix %ld rows",
                         (long)ks_vec_size(b), (long)ks_vec_size(x), (long)n);
    if (b == x)
        return ks_seterr(KS_ERR_ARG, "AMG cycle: b and x must be distinct vectors");
    if (amg->profile)
        amg->profiled_cycles++;
    return cycle_level(amg, 0, b, x, x_zero, amg->prm.cycle);
}
