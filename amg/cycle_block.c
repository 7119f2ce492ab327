/* The AMG cycle on block vectors (k right-hand sides, ks_solver_solve_many):
 * cycle.c's V/W/F cycles with every operator applied to all k columns at
 * once by SpMM (smoother residuals, restriction R, prolongation P, the
 * coarsest level's explicit inverse) and each Jacobi, l1-Jacobi or
 * Chebyshev step as an SpMM (A x) and one block update (vec/block_smooth.h,
 * the single cycle's per-entry expression): two passes where cycle.c's
 * fused step is one, since the update is not fused into the SpMM.
 * Gauss-Seidel smoothers and a cycle replayed from a graph have no block
 * form: the preconditioner then applies the single cycle to each column
 * (solver/precond_amg.c).
 *
 * The levels' blocks are allocated for the widest block seen and used as
 * views of fewer columns when a block solve has retired some. */
#include "hierarchy.h"
#include "../vec/block_smooth.h"

#include <stdlib.h>
#include <string.h>

#define KS_AMG_COARSE_SWEEPS_BLOCK 20 /* as cycle.c's KS_AMG_COARSE_SWEEPS */

typedef struct level_blocks {
    ks_block *x, *b, *r, *w; /* x, b NULL on level 0 (the caller's) */
} level_blocks;

struct ks_amg_blocks {
    int cap;  /* columns allocated */
    int nlevels;
    level_blocks *lv;
};

void ks_amg_blocks_free(ks_amg *amg)
{
    struct ks_amg_blocks *bl = amg->blocks;
    if (!bl)
        return;
    for (int l = 0; l < bl->nlevels; l++) {
        ks_block_destroy(&bl->lv[l].x);
        ks_block_destroy(&bl->lv[l].b);
        ks_block_destroy(&bl->lv[l].r);
        ks_block_destroy(&bl->lv[l].w);
    }
    free(bl->lv);
    free(bl);
    amg->blocks = NULL;
}

static ks_error blocks_reserve(ks_amg *amg, int k)
{
    if (amg->blocks && amg->blocks->cap >= k && amg->blocks->nlevels == amg->nlevels)
        return KS_OK;
    ks_amg_blocks_free(amg);
    struct ks_amg_blocks *bl = ks_calloc(1, sizeof *bl, "AMG block workspace");
    if (!bl)
        return KS_ERR_MEMORY;
    bl->lv = ks_calloc((size_t)amg->nlevels, sizeof *bl->lv, "AMG block workspace");
    if (!bl->lv) {
        free(bl);
        return KS_ERR_MEMORY;
    }
    bl->cap = k;
    bl->nlevels = amg->nlevels;
    amg->blocks = bl;
    for (int l = 0; l < amg->nlevels; l++) {
        ks_int n = amg->levels[l].A.nrows;
        level_blocks *L = &bl->lv[l];
        if (l > 0) {
            KS_TRY(ks_block_create(amg->be, n, k, &L->x));
            KS_TRY(ks_block_create(amg->be, n, k, &L->b));
        }
        KS_TRY(ks_block_create(amg->be, n, k, &L->r));
        KS_TRY(ks_block_create(amg->be, n, k, &L->w));
    }
    return KS_OK;
}

/* A view of k columns over a block allocated for at least k. */
static ks_block view(const ks_block *B, int k)
{
    ks_block v = *B;
    v.k = k;
    return v;
}

/* One block cycle's state: width k, the level views. */
typedef struct bcycle {
    ks_amg *amg;
    int k;
} bcycle;

typedef struct bxbuf {
    ks_block *cur, *spare;
} bxbuf;

/* R = B - A_l X */
static ks_error residual(bcycle *c, int l, const ks_block *B, const ks_block *X, ks_block *R)
{
    KS_TRY(ks_block_copy(B, R));
    return ks_matrix_apply_block(ks_amg_cycle_matrix(c->amg, l), -1.0, X, 1.0, R);
}

/* ks_amg_jacobi_step on blocks: x_new = x + cc dinv.*(b - A x) + a (x - x_old),
 * x in cur, x_old in spare (zero when prev_zero); x_zero: x = 0, x_new =
 * cc dinv.*b into cur. Two passes over the k columns, A x by the SpMM into
 * R and the update (the single cycle's expression, vec/smooth_value.h), so
 * on the cpu a column rounds as the single cycle's fused pass does. */
static ks_error jacobi_step(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R,
                            double a, double cc, int x_zero, int prev_zero)
{
    const ks_vec *w = c->amg->levels[l].dinv;
    if (x_zero)
        return ks_block_smooth_update(0.0, cc, w, B, NULL, NULL, NULL, xb->cur);
    KS_TRY(ks_matrix_apply_block(ks_amg_cycle_matrix(c->amg, l), 1.0, xb->cur, 0.0, R));
    /* out of place even when a = 0: a Chebyshev step after it reads this
     * x as its x_old */
    KS_TRY(ks_block_smooth_update(a, cc, w, B, R, xb->cur, prev_zero ? NULL : xb->spare,
                                  xb->spare));
    ks_block *tmp = xb->cur;
    xb->cur = xb->spare;
    xb->spare = tmp;
    return KS_OK;
}

/* chebyshev.c's steps on blocks (its first two steps from zero as two). */
static ks_error chebyshev(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R,
                          int x_zero)
{
    const ks_amg_level *L = &c->amg->levels[l];
    const int steps = ks_amg_chebyshev_steps(c->amg, l);
    const double theta = 0.5 * (L->lmax + L->lmin), delta = 0.5 * (L->lmax - L->lmin);
    const double sigma = steps > 1 ? theta / delta : 0.0;
    double rho = steps > 1 ? 1.0 / sigma : 0.0;
    for (int k = 0; k < steps; k++) {
        if (k == 0) {
            KS_TRY(jacobi_step(c, l, B, xb, R, 0.0, 1.0 / theta, x_zero, 0));
            continue;
        }
        const double rho_new = 1.0 / (2.0 * sigma - rho);
        KS_TRY(jacobi_step(c, l, B, xb, R, rho_new * rho, 2.0 * rho_new / delta, 0,
                           k == 1 && x_zero));
        rho = rho_new;
    }
    return KS_OK;
}

static ks_error smooth(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R, int sweeps,
                       int x_zero)
{
    if (sweeps <= 0)
        return x_zero ? ks_block_fill(xb->cur, 0.0) : KS_OK;
    for (int s = 0; s < sweeps; s++, x_zero = 0) {
        if (c->amg->smoother == KS_SMOOTHER_CHEBYSHEV)
            KS_TRY(chebyshev(c, l, B, xb, R, x_zero));
        else /* JACOBI, JACOBI_L1: dinv holds omega */
            KS_TRY(jacobi_step(c, l, B, xb, R, 0.0, 1.0, x_zero, 0));
    }
    return KS_OK;
}

static ks_error cycle_level(bcycle *c, int l, const ks_block *B, ks_block *X, int x_zero,
                            ks_amg_cycle_kind kind);

/* Into X from whichever buffer the smoothing left the result in. */
static ks_error settle(const bxbuf *xb, ks_block *X)
{
    return xb->cur == X ? KS_OK : ks_block_copy(xb->cur, X);
}

static ks_error coarse_solve(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R,
                             int x_zero)
{
    ks_amg *amg = c->amg;
    if (!amg->coarse_inv) /* as cycle.c: half the sweeps, then as many more */
        return smooth(c, l, B, xb, R, KS_AMG_COARSE_SWEEPS_BLOCK, x_zero);
    if (x_zero)
        return ks_matrix_apply_block(amg->coarse_inv, 1.0, B, 0.0, xb->cur);
    KS_TRY(residual(c, l, B, xb->cur, R));
    return ks_matrix_apply_block(amg->coarse_inv, 1.0, R, 1.0, xb->cur);
}

static ks_error cycle_level(bcycle *c, int l, const ks_block *B, ks_block *X, int x_zero,
                            ks_amg_cycle_kind kind)
{
    ks_amg *amg = c->amg;
    level_blocks *LB = &amg->blocks->lv[l];
    ks_block R = view(LB->r, c->k), W = view(LB->w, c->k);
    bxbuf xb = {X, &W};
    if (l == amg->nlevels - 1) {
        KS_TRY(coarse_solve(c, l, B, &xb, &R, x_zero));
        return settle(&xb, X);
    }
    KS_TRY(smooth(c, l, B, &xb, &R, amg->prm.presweeps, x_zero));
    if (amg->prm.presweeps <= 0 && x_zero)
        KS_TRY(ks_block_copy(B, &R));
    else
        KS_TRY(residual(c, l, B, xb.cur, &R));
    /* restrict, visit the next level, correct */
    const ks_amg_level *L = &amg->levels[l];
    level_blocks *CB = &amg->blocks->lv[l + 1];
    ks_block Cb = view(CB->b, c->k), Cx = view(CB->x, c->k);
    KS_TRY(ks_matrix_apply_block(L->Rm, 1.0, &R, 0.0, &Cb));
    const int coarse_exact = l + 1 == amg->nlevels - 1 && amg->coarse_inv;
    switch (kind) {
    case KS_AMG_V: KS_TRY(cycle_level(c, l + 1, &Cb, &Cx, 1, KS_AMG_V)); break;
    case KS_AMG_W:
        KS_TRY(cycle_level(c, l + 1, &Cb, &Cx, 1, KS_AMG_W));
        if (!coarse_exact)
            KS_TRY(cycle_level(c, l + 1, &Cb, &Cx, 0, KS_AMG_W));
        break;
    case KS_AMG_F:
        KS_TRY(cycle_level(c, l + 1, &Cb, &Cx, 1, KS_AMG_F));
        if (!coarse_exact)
            KS_TRY(cycle_level(c, l + 1, &Cb, &Cx, 0, KS_AMG_V));
        break;
    }
    KS_TRY(ks_matrix_apply_block(L->Pm, 1.0, &Cx, 1.0, xb.cur));
    KS_TRY(smooth(c, l, B, &xb, &R, amg->prm.postsweeps, 0));
    return settle(&xb, X);
}

int ks_amg_has_block_cycle(const ks_amg *amg)
{
    return amg && amg->nlevels > 0 && amg->smoother != KS_SMOOTHER_GS &&
           amg->smoother != KS_SMOOTHER_SGS && !amg->ranks && amg->be->ops->bsmooth;
}

ks_error ks_amg_cycle_block(ks_amg *amg, const ks_block *B, ks_block *X)
{
    if (!ks_amg_has_block_cycle(amg))
        return ks_seterr(KS_ERR_UNSUPPORTED, "AMG block cycle: no hierarchy, or a smoother "
                                             "without a block form (Gauss-Seidel)");
    ks_int n = amg->levels[0].A.nrows;
    if (B->n != n || X->n != n || B->k != X->k)
        return ks_seterr(KS_ERR_SIZE, "AMG block cycle: blocks %ld x %d and %ld x %d, matrix "
                                      "%ld rows", (long)B->n, B->k, (long)X->n, X->k, (long)n);
    if (B == X)
        return ks_seterr(KS_ERR_ARG, "AMG block cycle: B and X must be distinct blocks");
    KS_TRY(blocks_reserve(amg, X->k));
    bcycle c = {.amg = amg, .k = X->k};
    return cycle_level(&c, 0, B, X, 1, amg->prm.cycle);
}
