/* ks_matrix_apply_block: Y = alpha A X + beta Y on block vectors, through
 * the format's SpMM (one pass over the matrix for the k columns), or, for
 * a format without one, k SpMVs on columns copied out of the blocks. */
#include "format.h"

#include <stdio.h>

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

ks_error ks_matrix_apply_block(ks_matrix *M, double alpha, const ks_block *X, double beta,
                               ks_block *Y)
{
    const char *fn = "ks_matrix_apply_block";
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
    if (M->A.nrows == 0)
        return KS_OK;
    if (!M->state)
        return ks_seterr(KS_ERR_ARG, "%s: the matrix has no SpMV state (a failed change of "
                                     "values)", fn);
    ks_error e = M->ops->spmm ? M->ops->spmm(M->be, M->state, X->k, alpha, X->data, beta, Y->data)
                              : spmm_by_columns(M, alpha, X, beta, Y);
    if (e != KS_OK)
        return ks_adderr(e, "SpMM of format '%s' (k = %d)", M->ops->name, X->k);
    return KS_OK;
}
