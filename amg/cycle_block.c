/* The AMG cycle on block vectors (k right-hand sides, ks_solver_solve_many):
 * cycle.c's V/W/F cycles with every operator applied to all k columns at
 * once (restriction R, prolongation P and the coarsest level's explicit
 * inverse by SpMM). Residuals and Jacobi, l1-Jacobi or Chebyshev steps are
 * fused block passes of the level's matrix (ks_matrix_fused_block: one
 * pass reads A, B, X, X_old and writes the result, as cycle.c's fused
 * steps do for one vector), the first two Chebyshev steps from x = 0 one
 * pass. A level whose format has no fused block pass (cuda's dia, sell...)
 * is applied through a view of its CSR in a format that has one (csr_vector
 * on cuda: it borrows the float64 arrays, so it costs no matrix memory).
 * KS_BLOCK_FUSED=0 in the environment selects the two-pass steps instead
 * (the SpMM, then the update vec/block_smooth.h, which has the same
 * per-entry expression): the A/B comparison of docs/blocks.md.
 * The cycle profile (ks_amg_profile) times its steps as cycle.c's, one
 * cycle counted per block cycle.
 * Gauss-Seidel smoothers and a cycle replayed from a graph have no block
 * form: the preconditioner then applies the single cycle to each column
 * (solver/precond_amg.c).
 *
 * The levels' blocks are allocated for the widest block seen and used as
 * views of fewer columns when a block solve has retired some. */
#include "hierarchy.h"
#include "../spmv/format.h"
#include "../vec/block_smooth.h"

#include <stdlib.h>
#include <string.h>

#define KS_AMG_COARSE_SWEEPS_BLOCK 20 /* as cycle.c's KS_AMG_COARSE_SWEEPS */

typedef struct level_blocks {
    ks_block *x, *b, *r, *w; /* x, b NULL on level 0 (the caller's) */
    ks_matrix *fview;        /* the level's CSR in a format with a fused block pass, when
                              * the cycle's matrix has none (NULL: it has, or no view) */
    const void *fview_of;    /* the cycle matrix's storage when the view was made */
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
        ks_matrix_destroy(&bl->lv[l].fview);
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

/* Level l's view for the fused block pass, made on first need and again
 * when the cycle matrix's storage changed (a re-setup's new values: a
 * float32 view keeps its own copy). None when the matrix has the pass
 * itself, no format of the backend has it, or the float64 values were
 * released; a view that cannot be made (memory) leaves the two passes. */
static ks_matrix *fused_view(ks_amg *amg, int l)
{
    ks_matrix *M = ks_amg_cycle_matrix(amg, l);
    if (ks_matrix_has_fused_block(M))
        return M;
    level_blocks *L = &amg->blocks->lv[l];
    const void *id = ks_matrix_storage_id(M);
    if (L->fview_of == id) /* made (or found impossible) for this storage */
        return L->fview;
    ks_matrix_destroy(&L->fview);
    L->fview_of = id;
    const char *fmt = ks_spmv_format_with_fused_block(amg->be->ops->kind);
    const ks_sparse *A = ks_matrix_sparse(M);
    if (!fmt || !A->val || ks_matrix_distributed(M))
        return NULL;
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    if (ks_matrix_create_view(amg->be, A, fmt, &sp, &L->fview) != KS_OK) {
        ks_log(KS_LOG_INFO, "ksolve: AMG level %d: no %s view for the fused block pass (%s); "
                            "its block steps take two passes\n", l, fmt, ks_last_error());
        L->fview = NULL;
    }
    return L->fview;
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
    int fused; /* KS_BLOCK_FUSED: fused block passes where a level has one */
    double *dots;  /* ks_amg_cycle_block_dot's B'X: asked of level 0's last step */
    int dots_done; /* that step summed them */
} bcycle;

/* The matrix of level l's fused block passes, or NULL for two passes. */
static ks_matrix *fused_matrix(bcycle *c, int l)
{
    return c->fused ? fused_view(c->amg, l) : NULL;
}

typedef struct bxbuf {
    ks_block *cur, *spare;
} bxbuf;

/* R = B - A_l X */
static ks_error residual(bcycle *c, int l, const ks_block *B, const ks_block *X, ks_block *R)
{
    ks_matrix *F = fused_matrix(c, l);
    if (F)
        return ks_matrix_fused_block(F, B, X, NULL, 0.0, R, 0.0, 0.0, NULL, NULL, NULL, NULL);
    KS_TRY(ks_block_copy(B, R));
    return ks_matrix_apply_block(ks_amg_cycle_matrix(c->amg, l), -1.0, X, 1.0, R);
}

/* ks_amg_jacobi_step on blocks: x_new = x + cc dinv.*(b - A x) + a (x - x_old),
 * x in cur, x_old in spare (zero when prev_zero); x_zero: x = 0, x_new =
 * cc dinv.*b into cur. One fused pass (R unused), or the SpMM into R and
 * the update (the same per-entry expression, vec/smooth_value.h), so on
 * the cpu a column rounds as the single cycle's fused pass does. */
static ks_error jacobi_step(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R,
                            double a, double cc, int x_zero, int prev_zero, int dot)
{
    const ks_vec *w = c->amg->levels[l].dinv;
    if (x_zero)
        return ks_block_smooth_update(0.0, cc, w, B, NULL, NULL, NULL, xb->cur);
    ks_matrix *F = fused_matrix(c, l);
    const ks_block *prev = a != 0.0 && !prev_zero ? xb->spare : NULL;
    if (F && dot && c->dots) { /* the cycle's last step: B'X in its epilogue */
        KS_TRY(ks_matrix_fused_block_dot(F, B, xb->cur, NULL, 0.0, NULL, a, cc, w, prev,
                                         xb->spare, NULL, c->dots));
        c->dots_done = 1;
    } else if (F) {
        KS_TRY(ks_matrix_fused_block(F, B, xb->cur, NULL, 0.0, NULL, a, cc, w, prev, xb->spare,
                                     NULL));
    } else {
        KS_TRY(ks_matrix_apply_block(ks_amg_cycle_matrix(c->amg, l), 1.0, xb->cur, 0.0, R));
        /* out of place even when a = 0: a Chebyshev step after it reads
         * this x as its x_old */
        KS_TRY(ks_block_smooth_update(a, cc, w, B, R, xb->cur, prev, xb->spare));
    }
    ks_block *tmp = xb->cur;
    xb->cur = xb->spare;
    xb->spare = tmp;
    return KS_OK;
}

/* chebyshev.c's steps on blocks, its first two from zero one fused pass
 * (x1 into cur only when a third step reads it as x_old), or two steps
 * where the level has no fused pass. */
static ks_error chebyshev(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R,
                          int x_zero, int dot)
{
    const ks_amg_level *L = &c->amg->levels[l];
    const int steps = ks_amg_chebyshev_steps(c->amg, l);
    const double theta = 0.5 * (L->lmax + L->lmin), delta = 0.5 * (L->lmax - L->lmin);
    const double sigma = steps > 1 ? theta / delta : 0.0;
    double rho = steps > 1 ? 1.0 / sigma : 0.0;
    ks_matrix *F = x_zero && steps > 1 ? fused_matrix(c, l) : NULL;
    for (int k = 0; k < steps; k++) {
        if (k == 0 && F) {
            const double rho_new = 1.0 / (2.0 * sigma - rho);
            KS_TRY(ks_matrix_fused_block(F, B, NULL, L->dinv, 1.0 / theta, NULL, rho_new * rho,
                                         2.0 * rho_new / delta, L->dinv, NULL, xb->spare,
                                         steps > 2 ? xb->cur : NULL));
            ks_block *tmp = xb->cur;
            xb->cur = xb->spare;
            xb->spare = tmp;
            rho = rho_new;
            k++;
            continue;
        }
        if (k == 0) {
            KS_TRY(jacobi_step(c, l, B, xb, R, 0.0, 1.0 / theta, x_zero, 0,
                               dot && steps == 1));
            continue;
        }
        const double rho_new = 1.0 / (2.0 * sigma - rho);
        KS_TRY(jacobi_step(c, l, B, xb, R, rho_new * rho, 2.0 * rho_new / delta, 0,
                           k == 1 && x_zero, dot && k == steps - 1));
        rho = rho_new;
    }
    return KS_OK;
}

/* dot: the last step may sum the cycle's B'X (jacobi_step). */
static ks_error smooth(bcycle *c, int l, const ks_block *B, bxbuf *xb, ks_block *R, int sweeps,
                       int x_zero, int dot)
{
    if (sweeps <= 0)
        return x_zero ? ks_block_fill(xb->cur, 0.0) : KS_OK;
    for (int s = 0; s < sweeps; s++, x_zero = 0) {
        const int last = dot && s == sweeps - 1;
        if (c->amg->smoother == KS_SMOOTHER_CHEBYSHEV)
            KS_TRY(chebyshev(c, l, B, xb, R, x_zero, last));
        else /* JACOBI, JACOBI_L1: dinv holds omega */
            KS_TRY(jacobi_step(c, l, B, xb, R, 0.0, 1.0, x_zero, 0, last));
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
        return smooth(c, l, B, xb, R, KS_AMG_COARSE_SWEEPS_BLOCK, x_zero, 0);
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
    /* as cycle.c: with an odd number of swaps ahead, a visit from x = 0
     * starts in the spare block, so that the result lands in X uncopied */
    bxbuf xb = {X, &W};
    if (x_zero && (ks_amg_level_swaps(amg, l, x_zero) & 1)) {
        xb.cur = &W;
        xb.spare = X;
    }
    if (l == amg->nlevels - 1) {
        KS_AMG_STEP(amg, l, KS_STEP_COARSE, coarse_solve(c, l, B, &xb, &R, x_zero));
        return settle(&xb, X);
    }
    KS_AMG_STEP(amg, l, KS_STEP_SMOOTH,
                smooth(c, l, B, &xb, &R, amg->prm.presweeps, x_zero, 0));
    if (amg->prm.presweeps <= 0 && x_zero)
        KS_AMG_STEP(amg, l, KS_STEP_RESIDUAL, ks_block_copy(B, &R));
    else
        KS_AMG_STEP(amg, l, KS_STEP_RESIDUAL, residual(c, l, B, xb.cur, &R));
    /* restrict, visit the next level, correct */
    const ks_amg_level *L = &amg->levels[l];
    level_blocks *CB = &amg->blocks->lv[l + 1];
    ks_block Cb = view(CB->b, c->k), Cx = view(CB->x, c->k);
    KS_AMG_STEP(amg, l, KS_STEP_RESTRICT, ks_matrix_apply_block(L->Rm, 1.0, &R, 0.0, &Cb));
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
    KS_AMG_STEP(amg, l, KS_STEP_PROLONG, ks_matrix_apply_block(L->Pm, 1.0, &Cx, 1.0, xb.cur));
    KS_AMG_STEP(amg, l, KS_STEP_POSTSMOOTH,
                smooth(c, l, B, &xb, &R, amg->prm.postsweeps, 0, l == 0));
    return settle(&xb, X);
}

int ks_amg_has_block_cycle(const ks_amg *amg)
{
    return amg && amg->nlevels > 0 && amg->smoother != KS_SMOOTHER_GS &&
           amg->smoother != KS_SMOOTHER_SGS && !amg->ranks && amg->be->ops->bsmooth;
}

/* The block cycle, and with dots (not NULL) dots[j] = B(:,j)'X(:,j). */
static ks_error cycle_block(ks_amg *amg, const ks_block *B, ks_block *X, double *dots)
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
    const char *env = getenv("KS_BLOCK_FUSED");
    bcycle c = {.amg = amg, .k = X->k, .fused = !(env && strcmp(env, "0") == 0), .dots = dots};
    if (amg->profile) /* one count per block cycle, whatever its width */
        amg->profiled_cycles++;
    KS_TRY(cycle_level(&c, 0, B, X, 1, amg->prm.cycle));
    /* a W or F cycle revisits level 1 only, so level 0's post-smoothing ran
     * once and its last step made X; else the dots as a pass of their own */
    return dots && !c.dots_done ? ks_block_dot(B, X, dots) : KS_OK;
}

ks_error ks_amg_cycle_block(ks_amg *amg, const ks_block *B, ks_block *X)
{
    return cycle_block(amg, B, X, NULL);
}

ks_error ks_amg_cycle_block_dot(ks_amg *amg, const ks_block *B, ks_block *X, double *dots)
{
    if (!dots)
        return ks_seterr(KS_ERR_ARG, "AMG block cycle: NULL dots");
    return cycle_block(amg, B, X, dots);
}
