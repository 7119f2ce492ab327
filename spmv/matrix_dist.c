/* What spmv/ does with a distributed matrix (ks_matrix_dist, built by mpi/)
 * without knowing MPI: the checks of an apply's vectors against its layout,
 * vectors shaped like its rows, sizes, and the row sums Jacobi needs. */
#include "format.h"

#include <stdio.h>
#include <string.h>

int ks_matrix_distributed(const ks_matrix *M) { return M && M->dist; }

ks_gint ks_matrix_global_rows(const ks_matrix *M)
{
    if (!M)
        return 0;
    return M->dist ? M->dist->offsets[M->dist->comm->size] : (ks_gint)M->A.nrows;
}

ks_error ks_matrix_agree(const ks_matrix *M, ks_error e)
{
    if (!M || !M->dist)
        return e;
    return M->dist->comm->ops->agree(M->dist->comm, e);
}

/* v laid out like d's rows. The offsets are the same on every rank, so
 * every rank finds the same mismatch and refuses alike; the message names
 * the first rank where the layouts differ. */
static ks_error check_layout(const ks_matrix_dist *d, const ks_gint *offsets, const ks_vec *v,
                             const char *fn, const char *name)
{
    if (v->comm != d->comm)
        return ks_seterr(KS_ERR_ARG,
                         "%s: %s is %s but the matrix is distributed (make vectors with "
                         "ks_matrix_vec_create, or ks_vec_create_dist on the matrix's ks_comm)",
                         fn, name, v->comm ? "distributed over another ks_comm" : "local");
    const int p = d->comm->size;
    if (v->offsets == offsets || !memcmp(v->offsets, offsets, ((size_t)p + 1) * sizeof *offsets))
        return KS_OK;
    int q = 0;
    while (q < p - 1 && v->offsets[q + 1] - v->offsets[q] == offsets[q + 1] - offsets[q])
        q++;
    return ks_seterr(KS_ERR_SIZE,
                     "%s: %s is distributed differently from the matrix's %s: rank %d holds "
                     "%lld of its %lld entries and %lld of the matrix's %lld %s",
                     fn, name, offsets == d->offsets ? "rows" : "columns", q,
                     (long long)(v->offsets[q + 1] - v->offsets[q]), (long long)v->offsets[p],
                     (long long)(offsets[q + 1] - offsets[q]), (long long)offsets[p],
                     offsets == d->offsets ? "rows" : "columns");
}

ks_error ks_matrix_dist_check_vec(const ks_matrix *M, const ks_vec *v, const char *fn,
                                  const char *name)
{
    return check_layout(M->dist, M->dist->offsets, v, fn, name);
}

ks_error ks_matrix_dist_apply(ks_matrix *M, double alpha, const ks_vec *x, double beta,
                              ks_vec *y)
{
    ks_matrix_dist *d = M->dist;
    const char *fn = "ks_matrix_apply";
    if (x->be != M->be || y->be != M->be)
        return ks_seterr(KS_ERR_ARG, "%s: %s is on another backend object than the matrix", fn,
                         x->be != M->be ? "x" : "y");
    KS_TRY(check_layout(d, d->col_offsets ? d->col_offsets : d->offsets, x, fn, "x"));
    KS_TRY(check_layout(d, d->offsets, y, fn, "y"));
    if (x == y || (x->data == y->data && x->n > 0))
        return ks_seterr(KS_ERR_ARG, "%s: x and y must be distinct vectors", fn);
    ks_error e = d->ops->apply(d, alpha, x, beta, y);
    if (e != KS_OK)
        return ks_adderr(e, "%s (distributed, rank %d)", fn, d->comm->rank);
    return KS_OK;
}

ks_error ks_matrix_dist_gs_sweep(const ks_matrix *M, const ks_vec *b, ks_vec *x, int reverse)
{
    ks_matrix_dist *d = M->dist;
    const char *fn = "ks_matrix_gs_sweep";
    if (!ks_matrix_has_gs_sweep(M))
        return ks_seterr(KS_ERR_UNSUPPORTED, "%s: the local block's SpMV format '%s' has no "
                         "Gauss-Seidel sweep%s", fn, ks_matrix_format(d->local),
                         d->col_offsets ? " (or the matrix is not square)" : "");
    if (b->be != M->be || x->be != M->be)
        return ks_seterr(KS_ERR_ARG, "%s: %s is on another backend object than the matrix", fn,
                         b->be != M->be ? "b" : "x");
    KS_TRY(check_layout(d, d->offsets, b, fn, "b"));
    KS_TRY(check_layout(d, d->offsets, x, fn, "x"));
    if (b == x || (b->data == x->data && x->n > 0))
        return ks_seterr(KS_ERR_ARG, "%s: b and x must be distinct vectors", fn);
    ks_error e = d->ops->gs_sweep(d, b, x, reverse);
    if (e != KS_OK)
        return ks_adderr(e, "%s (distributed, rank %d)", fn, d->comm->rank);
    return KS_OK;
}

ks_error ks_matrix_vec_create(const ks_matrix *M, ks_vec **v)
{
    if (!v)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_vec_create: NULL output pointer");
    *v = NULL;
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_vec_create: NULL matrix");
    ks_vec *w;
    KS_TRY(ks_vec_create(M->be, M->A.nrows, &w));
    if (M->dist) {
        /* The layout is replicated, so a copy needs no communication. */
        const size_t bytes = ((size_t)M->dist->comm->size + 1) * sizeof(ks_gint);
        w->offsets = ks_malloc(bytes, "vector layout");
        if (!w->offsets) {
            ks_vec_destroy(&w);
            return KS_ERR_MEMORY;
        }
        memcpy(w->offsets, M->dist->offsets, bytes);
        w->comm = M->dist->comm;
    }
    *v = w;
    return KS_OK;
}

ks_error ks_matrix_offdiag_abs_sums(const ks_matrix *M, ks_vec *s)
{
    if (!M || !s)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_offdiag_abs_sums: NULL %s", M ? "vector" : "matrix");
    if (s->be != M->be || s->n != M->A.nrows)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_offdiag_abs_sums: the vector must be shaped "
                                      "like the matrix's rows, on its backend object");
    KS_TRY(ks_sparse_offdiag_abs_sums(&M->A, s->data));
    if (!M->dist || !M->dist->ghost || M->A.nrows == 0)
        return KS_OK;
    /* Every ghost entry is off the diagonal: its |a_ij| joins the row's
     * sum (on the host; the ghost block is small beside the local one). */
    const ks_csr *G = ks_matrix_host_csr(M->dist->ghost);
    if (!G)
        return ks_adderr(KS_ERR_MEMORY, "ks_matrix_offdiag_abs_sums: the ghost block");
    double *h = ks_malloc((size_t)s->n * sizeof *h, "row sums");
    if (!h)
        return KS_ERR_MEMORY;
    ks_error e = ks_vec_get_host(s, h);
    for (ks_int i = 0; i < G->nrows && e == KS_OK; i++)
        for (ks_int k = G->rowptr[i]; k < G->rowptr[i + 1]; k++)
            h[i] += G->val[k] < 0 ? -G->val[k] : G->val[k];
    if (e == KS_OK)
        e = ks_vec_set_host(s, h);
    free(h);
    return e;
}
