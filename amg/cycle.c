/* Multigrid cycles. Level l: pre-smooth, restrict the residual with the
 * explicit R = P^T (one SpMV), recurse, prolongate and correct (SpMV with
 * beta = 1), post-smooth with the adjoint smoother. The coarsest level is
 * one SpMV with the explicit inverse (or, when coarsening stopped above
 * the dense limit, smoothing sweeps).
 *   V: one coarse visit per level.
 *   W: two coarse visits per level (one when the next level is the exact
 *      coarse solve: a second would change nothing).
 *   F: an F-cycle on the next level followed by a V-cycle there.
 * With the same smoother before and after (or GS forward / backward) each
 * of these is a symmetric operator, so PCG may use it. */
#include "hierarchy.h"

#include <string.h>

typedef enum { CYC_V, CYC_W, CYC_F } cycle_kind;

/* Sweeps the coarsest level gets when it is too large for the dense solve. */
#define KS_AMG_COARSE_SWEEPS 20

static ks_error coarse_solve(ks_amg *amg, int l, const ks_vec *b, ks_vec *x, int x_zero)
{
    ks_amg_level *L = &amg->levels[l];
    if (!amg->coarse_inv) {
        /* Symmetric: half the sweeps forward, half as the adjoint. */
        KS_TRY(ks_amg_smooth(amg, l, b, x, KS_AMG_COARSE_SWEEPS / 2, 0, x_zero));
        return ks_amg_smooth(amg, l, b, x, KS_AMG_COARSE_SWEEPS / 2, 1, 0);
    }
    if (x_zero)
        return ks_matrix_apply(amg->coarse_inv, 1.0, b, 0.0, x);
    /* x += A^-1 (b - A x) */
    KS_TRY(ks_amg_residual(amg, l, b, x, L->r));
    return ks_matrix_apply(amg->coarse_inv, 1.0, L->r, 1.0, x);
}

static ks_error cycle_level(ks_amg *amg, int l, const ks_vec *b, ks_vec *x, int x_zero,
                            cycle_kind kind)
{
    if (l == amg->nlevels - 1)
        return coarse_solve(amg, l, b, x, x_zero);
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    const int pre = amg->prm.presweeps, post = amg->prm.postsweeps;

    KS_TRY(ks_amg_smooth(amg, l, b, x, pre, 0, x_zero));
    if (pre <= 0 && x_zero)
        KS_TRY(ks_vec_copy(b, L->r)); /* x = 0: the residual is b */
    else
        KS_TRY(ks_amg_residual(amg, l, b, x, L->r));
    KS_TRY(ks_matrix_apply(L->Rm, 1.0, L->r, 0.0, C->b));

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

    KS_TRY(ks_matrix_apply(L->Pm, 1.0, C->x, 1.0, x));
    return ks_amg_smooth(amg, l, b, x, post, 1, 0);
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
    cycle_kind kind = CYC_V;
    if (amg->prm.cycle[0] == 'W' || amg->prm.cycle[0] == 'w')
        kind = CYC_W;
    else if (amg->prm.cycle[0] == 'F' || amg->prm.cycle[0] == 'f')
        kind = CYC_F;
    return cycle_level(amg, 0, b, x, x_zero, kind);
}
