/* ks_matrix_apply_block: Y = alpha A X + beta Y on block vectors, through
 * the format's SpMM (one pass over the matrix for the k columns), or, for
 * a format without one, k SpMVs on columns copied out of the blocks. And
 * ks_matrix_fused_block, the fused residual / smoothing pass on blocks. */
#include "format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ks_matrix_has_spmm(const ks_matrix *M) { return M && !M->dist && M->ops->spmm != NULL; }

/* Column by column through the format's SpMV: two work vectors, each
 * column of X (and of Y when beta reads it) copied out, applied, copied
 * back. */
static ks_error spmm_by_columns(ks_matrix *M, double alpha, const ks_block *X, double beta,
                                ks_block *Y)
{
    ks_backend *be = M->be;
    const ks_backend_ops *o = be->ops;
    if (!M->spmm_fallback_said) {
        M->spmm_fallback_said = 1;
        ks_log(KS_LOG_INFO, "ksolve: SpMV format '%s' has no SpMM: a block of %d columns is "
                            "applied as %d SpMVs\n", M->ops->name, X->k, X->k);
    }
    double *x = NULL, *y = NULL;
    ks_error e = ks_be_alloc(be, (size_t)(X->n ? X->n : 1) * sizeof(double), (void **)&x,
                             "SpMM fallback column of X");
    if (e == KS_OK)
        e = ks_be_alloc(be, (size_t)(Y->n ? Y->n : 1) * sizeof(double), (void **)&y,
                        "SpMM fallback column of Y");
    for (int j = 0; j < X->k && e == KS_OK; j++) {
        if (X->n)
            e = o->bgather(be, X->n, X->k, X->data, 1, &j, x);
        if (e == KS_OK && beta != 0.0)
            e = o->bgather(be, Y->n, Y->k, Y->data, 1, &j, y);
        if (e == KS_OK)
            e = M->ops->apply(be, M->state, alpha, x, beta, y);
        if (e == KS_OK)
            e = o->bscatter(be, Y->n, 1, y, &j, Y->k, Y->data);
    }
    if (x)
        o->free(be, x);
    if (y)
        o->free(be, y);
    return e;
}

/* What an SpMM of M needs of X and Y (fn names the caller in the message). */
static ks_error block_args(const ks_matrix *M, const ks_block *X, const ks_block *Y,
                          const char *fn)
{
    if (!M || !X || !Y)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", fn, !M ? "matrix" : !X ? "X" : "Y");
    if (M->dist)
        return ks_seterr(KS_ERR_UNSUPPORTED, "%s: distributed matrices do not apply blocks "
                                             "yet (one ks_matrix_apply per column)", fn);
    if (X->be != M->be || Y->be != M->be)
        return ks_seterr(KS_ERR_ARG, "%s: %s is on another backend object than the matrix", fn,
                         X->be != M->be ? "X" : "Y");
    if (X->n != M->A.ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: X has %ld rows, the matrix %ld columns", fn,
                         (long)X->n, (long)M->A.ncols);
    if (Y->n != M->A.nrows)
        return ks_seterr(KS_ERR_SIZE, "%s: Y has %ld rows, the matrix %ld rows", fn, (long)Y->n,
                         (long)M->A.nrows);
    if (X->k != Y->k)
        return ks_seterr(KS_ERR_SIZE, "%s: X has %d columns, Y %d", fn, X->k, Y->k);
    if (X == Y || (X->data == Y->data && X->n > 0))
        return ks_seterr(KS_ERR_ARG, "%s: X and Y must be distinct blocks", fn);
    if (M->A.nrows > 0 && !M->state)
        return ks_seterr(KS_ERR_ARG, "%s: the matrix has no SpMV state (a failed change of "
                                     "values)", fn);
    return KS_OK;
}

ks_error ks_matrix_apply_block(ks_matrix *M, double alpha, const ks_block *X, double beta,
                               ks_block *Y)
{
    KS_TRY(block_args(M, X, Y, "ks_matrix_apply_block"));
    if (M->A.nrows == 0)
        return KS_OK;
    ks_error e = M->ops->spmm ? M->ops->spmm(M->be, M->state, X->k, alpha, X->data, beta, Y->data)
                              : spmm_by_columns(M, alpha, X, beta, Y);
    if (e != KS_OK)
        return ks_adderr(e, "SpMM of format '%s' (k = %d)", M->ops->name, X->k);
    return KS_OK;
}

/* KS_SPMM_DOT=0: the SpMM and a block dot even where the format fuses them. */
static int spmm_dot_wanted(void)
{
    const char *v = getenv("KS_SPMM_DOT");
    return !(v && strcmp(v, "0") == 0);
}

ks_error ks_matrix_apply_block_dot(ks_matrix *M, const ks_block *X, ks_block *Y, double *dots)
{
    const char *fn = "ks_matrix_apply_block_dot";
    if (!dots)
        return ks_seterr(KS_ERR_ARG, "%s: NULL dots", fn);
    KS_TRY(block_args(M, X, Y, fn));
    if (M->A.nrows != M->A.ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: the matrix is %ld x %ld, not square", fn,
                         (long)M->A.nrows, (long)M->A.ncols);
    if (M->A.nrows == 0 || !M->ops->spmm_dot || !spmm_dot_wanted()) {
        KS_TRY(ks_matrix_apply_block(M, 1.0, X, 0.0, Y));
        return ks_block_dot(X, Y, dots);
    }
    ks_error e = M->ops->spmm_dot(M->be, M->state, X->k, X->data, Y->data, dots);
    if (e != KS_OK)
        return ks_adderr(e, "SpMM with dots of format '%s' (k = %d)", M->ops->name, X->k);
    return KS_OK;
}

int ks_matrix_has_fused_block(const ks_matrix *M)
{
    return M && !M->dist && M->ops->fused_block != NULL;
}

/* Y absent, or of B's shape on B's backend. */
static ks_error fb_shape(const ks_block *B, const ks_block *Y, const char *name)
{
    if (Y && (Y->be != B->be || Y->n != B->n || Y->k != B->k))
        return ks_seterr(Y->be != B->be ? KS_ERR_ARG : KS_ERR_SIZE,
                         "ks_matrix_fused_block: %s is %ld x %d%s, B %ld x %d", name,
                         (long)Y->n, Y->k, Y->be != B->be ? " on another backend" : "",
                         (long)B->n, B->k);
    return KS_OK;
}

static ks_error fb_weights(const ks_block *B, const ks_vec *v, const char *name)
{
    if (v && (v->be != B->be || v->n != B->n || v->comm))
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_fused_block: %s is not a local vector of the "
                                      "blocks' %ld rows on their backend", name, (long)B->n);
    return KS_OK;
}

/* ks_matrix_fused_block, and with dots (not NULL) ks_matrix_fused_block_dot. */
static ks_error fused_block(const ks_matrix *M, const ks_block *B, const ks_block *X,
                            const ks_vec *xw, double xs, ks_block *R, double a, double c,
                            const ks_vec *w, const ks_block *Xprev, ks_block *Xo, ks_block *X1,
                            double *dots)
{
    const char *fn = dots ? "ks_matrix_fused_block_dot" : "ks_matrix_fused_block";
    if (!M || !B || (!X && !xw) || (X && xw) || (!R && !Xo) || (Xo && !w) || (X1 && (!xw || !Xo)))
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix or B, neither or both of X and xw, no "
                                     "output, Xo without w or X1 without xw and Xo", fn);
    if (!ks_matrix_has_fused_block(M))
        return ks_seterr(KS_ERR_UNSUPPORTED, "%s: SpMV format '%s'%s has no fused block pass",
                         fn, M->ops->name, M->dist ? " (distributed)" : "");
    if (B->be != M->be || B->n != M->A.nrows || M->A.nrows != M->A.ncols)
        return ks_seterr(B->be != M->be ? KS_ERR_ARG : KS_ERR_SIZE,
                         "%s: B (%ld rows) is not on the backend of the square matrix of %ld x "
                         "%ld", fn, (long)B->n, (long)M->A.nrows, (long)M->A.ncols);
    KS_TRY(fb_shape(B, X, "X"));
    KS_TRY(fb_shape(B, R, "R"));
    KS_TRY(fb_shape(B, Xprev, "Xprev"));
    KS_TRY(fb_shape(B, Xo, "Xo"));
    KS_TRY(fb_shape(B, X1, "X1"));
    KS_TRY(fb_weights(B, w, "w"));
    KS_TRY(fb_weights(B, xw, "xw"));
    const ks_block *in[] = {B, X}, *out[] = {R, Xo, X1};
    for (int o = 0; o < 3; o++) {
        for (int i = 0; i < 2 && out[o]; i++)
            if (in[i] && in[i]->data == out[o]->data)
                return ks_seterr(KS_ERR_ARG, "%s: an output block aliases B or X", fn);
        for (int p = o + 1; p < 3; p++)
            if (out[o] && out[p] && out[o]->data == out[p]->data)
                return ks_seterr(KS_ERR_ARG, "%s: R, Xo and X1 must be distinct", fn);
    }
    if (Xprev && X && Xprev->data == X->data)
        return ks_seterr(KS_ERR_ARG, "%s: Xprev aliases X", fn);
    if (dots && !Xo)
        return ks_seterr(KS_ERR_ARG, "%s: no Xo to take the dots with", fn);
    if (B->n == 0)
        return dots ? ks_block_dot(B, Xo, dots) : KS_OK;
    if (!M->state)
        return ks_seterr(KS_ERR_ARG, "%s: the matrix has no SpMV state (a failed change of "
                                     "values)", fn);
    const ks_fused_step f = {B->data, X ? X->data : B->data, R ? R->data : NULL, a, c,
                             w ? w->data : NULL, Xprev ? Xprev->data : NULL,
                             Xo ? Xo->data : NULL, KS_W_VECTOR, 0.0, xw ? xw->data : NULL, xs,
                             X1 ? X1->data : NULL};
    const int fused_dots = dots && M->ops->fused_block_dot && spmm_dot_wanted();
    ks_error e = fused_dots ? M->ops->fused_block_dot(M->be, M->state, B->k, &f, dots)
                            : M->ops->fused_block(M->be, M->state, B->k, &f);
    if (e != KS_OK)
        return ks_adderr(e, "fused block pass of format '%s' (k = %d)", M->ops->name, B->k);
    return dots && !fused_dots ? ks_block_dot(B, Xo, dots) : KS_OK;
}

ks_error ks_matrix_fused_block(const ks_matrix *M, const ks_block *B, const ks_block *X,
                               const ks_vec *xw, double xs, ks_block *R, double a, double c,
                               const ks_vec *w, const ks_block *Xprev, ks_block *Xo,
                               ks_block *X1)
{
    return fused_block(M, B, X, xw, xs, R, a, c, w, Xprev, Xo, X1, NULL);
}

ks_error ks_matrix_fused_block_dot(const ks_matrix *M, const ks_block *B, const ks_block *X,
                                   const ks_vec *xw, double xs, ks_block *R, double a,
                                   double c, const ks_vec *w, const ks_block *Xprev,
                                   ks_block *Xo, ks_block *X1, double *dots)
{
    if (!dots)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_fused_block_dot: NULL dots");
    return fused_block(M, B, X, xw, xs, R, a, c, w, Xprev, Xo, X1, dots);
}
