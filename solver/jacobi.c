/* Point Jacobi preconditioners, z = D^{-1} r:
 *   JACOBI:    d_i = a_ii / omega
 *   JACOBI_L1: d_i = (a_ii + sum_{j != i} |a_ij|) / omega  (the l1 variant,
 *              which makes D - A diagonally dominant so smoothing with it
 *              converges without tuning omega for symmetric M-matrices).
 * The inverse is made once at setup; apply is one pointwise multiply on the
 * backend. On a distributed matrix each rank inverts its rows' diagonal
 * (the l1 sums take the ghost columns too). */
#include "krylov.h"

#include <math.h>

/* The diagonal (and for l1 the off-diagonal absolute row sums) come from
 * the matrix's CSR where it lives (sparse/); checked and inverted on the
 * host, a vector each way. */
static ks_error jacobi_build(ks_precond *pc, ks_matrix *A, int l1)
{
    const char *name = pc->ops->name;
    const ks_sparse *S = ks_matrix_sparse(A);
    if (S->nrows != S->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s setup: matrix is %ld x %ld, Jacobi needs it square",
                         name, (long)S->nrows, (long)S->ncols);
    ks_int n = S->nrows;
    double omega = pc->prm.relaxation_factor;
    double *diag = ks_malloc(2 * (size_t)n * sizeof *diag + 1, "Jacobi diagonal");
    if (!diag)
        return KS_ERR_MEMORY;
    double *off = diag + n;
    ks_vec *v = NULL;
    ks_error e = ks_matrix_vec_create(A, &v);
    if (e == KS_OK)
        e = ks_sparse_diagonal(S, v->data);
    if (e == KS_OK)
        e = ks_vec_get_host(v, diag);
    if (e == KS_OK && l1)
        e = ks_matrix_offdiag_abs_sums(A, v);
    if (e == KS_OK && l1)
        e = ks_vec_get_host(v, off);
    for (ks_int i = 0; i < n && e == KS_OK; i++) {
        double d = l1 ? diag[i] + off[i] : diag[i];
        if (!isfinite(diag[i]) || !isfinite(d))
            e = ks_seterr(KS_ERR_NUMERIC, "%s setup: diagonal at row %ld is %g (not finite)",
                          name, (long)i, d);
        else if (diag[i] == 0.0)
            e = ks_seterr(KS_ERR_NUMERIC,
                          "%s setup: zero diagonal at row %ld (Jacobi needs a nonzero "
                          "diagonal; a row without a stored one counts as zero)",
                          name, (long)i);
        else if (d == 0.0 || !isfinite(omega / d))
            e = ks_seterr(KS_ERR_NUMERIC,
                          "%s setup: l1 diagonal a_ii + sum|a_ij| = %g at row %ld cannot be "
                          "inverted",
                          name, d, (long)i);
        else
            diag[i] = omega / d;
    }
    /* A distributed matrix: a bad row on one rank fails every rank's setup. */
    e = ks_matrix_agree(A, e);
    if (e == KS_OK)
        e = ks_vec_set_host(v, diag);
    if (e == KS_OK) {
        ks_vec *old = pc->data;
        ks_vec_destroy(&old);
        pc->data = v;
    } else {
        ks_vec_destroy(&v);
    }
    free(diag);
    return e;
}

static ks_error jacobi_setup(ks_precond *pc, ks_matrix *A) { return jacobi_build(pc, A, 0); }

static ks_error jacobi_l1_setup(ks_precond *pc, ks_matrix *A) { return jacobi_build(pc, A, 1); }

static ks_error jacobi_apply(ks_precond *pc, const ks_vec *r, ks_vec *z)
{
    if (!pc->data)
        return ks_seterr(KS_ERR_ARG, "%s apply before setup", pc->ops->name);
    return ks_vec_pointwise_mult(pc->data, r, z);
}

static ks_error jacobi_apply_block(ks_precond *pc, const ks_block *R, ks_block *Z)
{
    if (!pc->data)
        return ks_seterr(KS_ERR_ARG, "%s apply before setup", pc->ops->name);
    return ks_block_pointwise_mult(pc->data, R, Z);
}

static void jacobi_destroy(ks_precond *pc)
{
    ks_vec *d = pc->data;
    ks_vec_destroy(&d);
    pc->data = NULL;
}

const ks_precond_ops ks_precond_jacobi_ops = {
    .name = "JACOBI",
    .setup = jacobi_setup,
    .apply = jacobi_apply,
    .destroy = jacobi_destroy,
    .apply_block = jacobi_apply_block,
};

const ks_precond_ops ks_precond_jacobi_l1_ops = {
    .name = "JACOBI_L1",
    .setup = jacobi_l1_setup,
    .apply = jacobi_apply,
    .destroy = jacobi_destroy,
    .apply_block = jacobi_apply_block,
};
