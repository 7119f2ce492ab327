/* ks_matrix_fused_step: the format's fused kernel when it has one, else the
 * same arithmetic in three steps (copy b, SpMV with beta = 1, vector
 * update). Both give t = b - A x per row first, so results agree to
 * rounding of the row sum's order. ks_matrix_fused_step_from_zero: the
 * same with the iterate made from b in the kernel (two smoothing steps
 * from x = 0 in one pass). A distributed matrix fuses when both its blocks'
 * formats can: its local block's pass runs while the halo travels, its
 * ghost block's share is taken from t after (the step is linear in t). */
#include "format.h"
#include "../vec/vec_fused.h"

static ks_error check_vec(const ks_matrix *M, const ks_vec *v, const char *name, int need)
{
    if (!v)
        return need ? ks_seterr(KS_ERR_ARG, "ks_matrix_fused_step: NULL %s", name) : KS_OK;
    if (M->dist && v->be == M->be)
        return ks_matrix_dist_check_vec(M, v, "ks_matrix_fused_step", name);
    if (v->be != M->be)
        return ks_seterr(KS_ERR_ARG,
                         "ks_matrix_fused_step: %s is on another backend object than the matrix",
                         name);
    if (v->n != M->A.nrows)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_fused_step: %s has %ld entries, matrix %ld rows",
                         name, (long)v->n, (long)M->A.nrows);
    return KS_OK;
}

static ks_error check_square(const ks_matrix *M)
{
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_fused_step: NULL matrix");
    if (M->A.nrows != M->A.ncols)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_fused_step: matrix is %ld x %ld, not square",
                         (long)M->A.nrows, (long)M->A.ncols);
    return KS_OK;
}

ks_error ks_matrix_fused_local(const ks_matrix *M, const ks_fused_step *f)
{
    ks_error e = M->ops->fused_step(M->be, M->state, f);
    if (e != KS_OK)
        return ks_adderr(e, "SpMV format '%s' (fused residual pass)", M->ops->name);
    return KS_OK;
}

ks_error ks_matrix_fused_ghost(const ks_matrix *G, const double *xg, const ks_fused_step *f)
{
    ks_error e = G->ops->fused_ghost(G->be, G->state, xg, f);
    if (e != KS_OK)
        return ks_adderr(e, "SpMV format '%s' (ghost block of a fused residual pass)",
                         G->ops->name);
    return KS_OK;
}

/* The format's pass, or the distributed one (the local block's beside the
 * halo exchange, then the ghost block's share). */
static ks_error run_fused(const ks_matrix *M, ks_fused_step *f)
{
    if (!M->dist)
        return ks_matrix_fused_local(M, f);
    /* The local block would rebuild an l1 weight from its own columns
     * only; w holds the whole row's (the ghost columns' too). */
    if (f->wkind == KS_W_L1)
        f->wkind = KS_W_VECTOR;
    ks_error e = M->dist->ops->fused_step(M->dist, f);
    if (e != KS_OK)
        return ks_adderr(e, "ks_matrix_fused_step (distributed, rank %d)", M->dist->comm->rank);
    return KS_OK;
}

ks_error ks_matrix_fused_step_from_zero(const ks_matrix *M, const ks_vec *b, double c0, double a,
                                        double c, const ks_vec *w, int wkind, double wscale,
                                        ks_vec *x1, int keep_x1, ks_vec *r, ks_vec *xo)
{
    KS_TRY(check_square(M));
    const int fused = ks_matrix_has_fused_step(M);
    KS_TRY(check_vec(M, b, "b", 1));
    KS_TRY(check_vec(M, w, "w", 1));
    KS_TRY(check_vec(M, x1, "x1", 1));
    KS_TRY(check_vec(M, r, "r", !fused));
    KS_TRY(check_vec(M, xo, "xo", 1));
    const ks_vec *all[] = {b, w, x1, r, xo};
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (all[i] && all[i] == all[j])
                return ks_seterr(KS_ERR_ARG, "ks_matrix_fused_step_from_zero: b, w, x1, r and "
                                             "xo must be distinct vectors");
    /* A distributed pass exchanges its iterate's ghost values, so x1 is
     * made first (the halo has no b scaled by the other ranks' w). */
    if (!fused || M->dist) {
        KS_TRY(ks_vec_smooth_update(0.0, c0, w, b, NULL, NULL, x1));
        return ks_matrix_fused_step(M, b, x1, r, a, c, w, wkind, wscale, NULL, xo);
    }
    if (M->A.nrows == 0)
        return KS_OK;
    ks_fused_step f = {b->data, b->data, NULL, a, c, w->data, NULL, xo->data, wkind, wscale,
                       w->data, c0, keep_x1 ? x1->data : NULL};
    return run_fused(M, &f);
}

ks_error ks_matrix_fused_step(const ks_matrix *M, const ks_vec *b, const ks_vec *x, ks_vec *r,
                              double a, double c, const ks_vec *w, int wkind, double wscale,
                              const ks_vec *xprev, ks_vec *xo)
{
    KS_TRY(check_square(M));
    const int fused = ks_matrix_has_fused_step(M);
    KS_TRY(check_vec(M, b, "b", 1));
    KS_TRY(check_vec(M, x, "x", 1));
    KS_TRY(check_vec(M, r, "r", !fused || !xo));
    KS_TRY(check_vec(M, w, "w", xo != NULL));
    KS_TRY(check_vec(M, xprev, "xprev", 0));
    KS_TRY(check_vec(M, xo, "xo", 0));
    if ((r && (r == x || r == b)) || (xo && (xo == x || xo == b || xo == r)) ||
        (xprev && (xprev == x || xprev == r)))
        return ks_seterr(KS_ERR_ARG, "ks_matrix_fused_step: output vectors alias x, b or "
                                     "each other");
    if (M->A.nrows == 0 && !M->dist) /* a rank without rows still joins the halo */
        return KS_OK;
    if (fused) {
        ks_fused_step f = {b->data, x->data, r ? r->data : NULL, a, c,
                           w ? w->data : NULL, xprev ? xprev->data : NULL,
                           xo ? xo->data : NULL, xo ? wkind : KS_W_VECTOR, wscale, NULL, 0.0, NULL};
        return run_fused(M, &f);
    }
    ks_error e = ks_vec_copy(b, r);
    if (e == KS_OK && M->dist) {
        /* The distributed product (halo exchange included); it changes
         * only the matrix's exchange buffers, never its values. */
        e = ks_matrix_apply((ks_matrix *)M, -1.0, x, 1.0, r);
        if (e != KS_OK)
            return e;
    } else if (e == KS_OK) {
        e = M->ops->apply(M->be, M->state, -1.0, x->data, 1.0, r->data);
    }
    if (e != KS_OK)
        return ks_adderr(e, "SpMV format '%s' (residual pass)", M->ops->name);
    return xo ? ks_vec_smooth_update(a, c, w, r, x, xprev, xo) : KS_OK;
}
