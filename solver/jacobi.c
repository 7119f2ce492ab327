/* Point Jacobi preconditioners, z = D^{-1} r:
 *   JACOBI:    d_i = a_ii / omega
 *   JACOBI_L1: d_i = (a_ii + sum_{j != i} |a_ij|) / omega  (the l1 variant,
 *              which makes D - A diagonally dominant so smoothing with it
 *              converges without tuning omega for symmetric M-matrices).
 * The inverse is built on the host from the matrix's CSR copy and uploaded
 * once; apply is one pointwise multiply on the backend. */
#include "krylov.h"

#include <math.h>

static ks_error jacobi_build(ks_precond *pc, ks_matrix *A, int l1)
{
    const char *name = pc->ops->name;
    const ks_csr *h = ks_matrix_host_csr(A);
    if (!h)
        return ks_seterr(KS_ERR_ARG, "%s setup: matrix has no host CSR copy", name);
    if (h->nrows != h->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s setup: matrix is %ld x %ld, Jacobi needs it square",
                         name, (long)h->nrows, (long)h->ncols);
    ks_int n = h->nrows;
    double omega = pc->prm.relaxation_factor;
    double *inv = ks_malloc((size_t)n * sizeof *inv, "Jacobi inverse diagonal");
    if (!inv)
        return KS_ERR_MEMORY;
    ks_error e = KS_OK;
    for (ks_int i = 0; i < n && e == KS_OK; i++) {
        double diag = 0.0, off = 0.0;
        int found = 0;
        for (ks_int k = h->rowptr[i]; k < h->rowptr[i + 1]; k++) {
            if (h->colind[k] == i) {
                diag = h->val[k];
                found = 1;
            } else {
                off += fabs(h->val[k]);
            }
        }
        double d = l1 ? diag + off : diag;
        if (!isfinite(diag) || !isfinite(d))
            e = ks_seterr(KS_ERR_NUMERIC, "%s setup: diagonal at row %ld is %g (not finite)",
                          name, (long)i, d);
        else if (!found || diag == 0.0)
            e = ks_seterr(KS_ERR_NUMERIC,
                          "%s setup: zero diagonal at row %ld%s (Jacobi needs a nonzero "
                          "diagonal)",
                          name, (long)i, found ? "" : " (no diagonal entry stored)");
        else if (d == 0.0 || !isfinite(omega / d))
            e = ks_seterr(KS_ERR_NUMERIC,
                          "%s setup: l1 diagonal a_ii + sum|a_ij| = %g at row %ld cannot be "
                          "inverted",
                          name, d, (long)i);
        else
            inv[i] = omega / d;
    }
    if (e == KS_OK) {
        ks_vec *v = NULL;
        e = ks_vec_create(pc->be, n, &v);
        if (e == KS_OK)
            e = ks_vec_set_host(v, inv);
        if (e == KS_OK) {
            ks_vec_destroy(pc->data);
            pc->data = v;
        } else {
            ks_vec_destroy(v);
        }
    }
    free(inv);
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

static void jacobi_destroy(ks_precond *pc)
{
    ks_vec_destroy(pc->data);
    pc->data = NULL;
}

const ks_precond_ops ks_precond_jacobi_ops = {
    .name = "JACOBI",
    .setup = jacobi_setup,
    .apply = jacobi_apply,
    .destroy = jacobi_destroy,
};

const ks_precond_ops ks_precond_jacobi_l1_ops = {
    .name = "JACOBI_L1",
    .setup = jacobi_l1_setup,
    .apply = jacobi_apply,
    .destroy = jacobi_destroy,
};
