/* New values for a distributed matrix (ks_matrix_set_values and
 * ks_matrix_set_values_device): the caller's entries, in the order its rows
 * were given to ks_matrix_create_dist, are scattered into the local and the
 * ghost block through the places the split kept (dist_csr.c), and each
 * block, a ks_matrix of its own, rebuilds its SpMV state from them. The
 * pattern, the ghost columns and the halo plan stay. Every step that can
 * fail on one rank only is agreed over the ranks, so none is left waiting. */
#include "mpi_internal.h"

#include <math.h>
#include <string.h>

/* The global row and column of the block entry at place p (as entry_pos
 * numbers them): the error message names them, as create does. */
static void entry_place(const ks_dist_impl *d, ks_int p, ks_gint *row, ks_gint *col)
{
    const ks_matrix *L = d->base.local;
    const ks_int nl = ks_matrix_nnz(L);
    const int ghost = p >= nl;
    const ks_csr *H = ks_matrix_host_csr(ghost ? d->base.ghost : L);
    *row = *col = -1;
    if (!H)
        return;
    const ks_int q = ghost ? p - nl : p;
    ks_int lo = 0, hi = H->nrows; /* the row i with rowptr[i] <= q < rowptr[i+1] */
    while (hi - lo > 1) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (H->rowptr[mid] <= q)
            lo = mid;
        else
            hi = mid;
    }
    const ks_gint begin = d->base.offsets[d->base.comm->rank];
    *row = begin + lo;
    *col = ghost ? d->ghost_gid[H->colind[q]] : begin + H->colind[q];
}

/* The caller's values on the host: val itself where it is host memory, else
 * a copy downloaded into *tmp. */
static ks_error host_values(ks_backend *be, const void *val, int on_backend, ks_int nnz,
                            const double **h, double **tmp)
{
    *tmp = NULL;
    *h = val;
    if (!on_backend || ks_backend_host_memory(be) || nnz == 0)
        return KS_OK;
    const size_t bytes = (size_t)nnz * sizeof(double);
    *tmp = ks_malloc(bytes, "new matrix values (host staging)");
    if (!*tmp)
        return KS_ERR_MEMORY;
    *h = *tmp;
    return be->ops->download(be, *tmp, val, bytes);
}

/* The values checked (finite) and scattered into lv (the local block's
 * order) and gv (the ghost block's). Local work. */
static ks_error scatter(const ks_dist_impl *d, const double *h, ks_int nnz, ks_int nl,
                        double *lv, double *gv)
{
    for (ks_int k = 0; k < nnz; k++) {
        const ks_int p = d->entry_pos[k];
        if (!isfinite(h[k])) {
            ks_gint row, col;
            entry_place(d, p, &row, &col);
            return ks_seterr(KS_ERR_NUMERIC,
                             "the value at global row %lld, column %lld (entry %ld of this "
                             "rank's rows) is %g",
                             (long long)row, (long long)col, (long)k, h[k]);
        }
        if (p < nl)
            lv[p] = h[k];
        else
            gv[p - nl] = h[k];
    }
    return KS_OK;
}

/* The ghost block's values now (host copy), to put back if the local block
 * then fails. */
static ks_error ghost_values(const ks_matrix *G, ks_int ng, double **old)
{
    *old = NULL;
    if (!G || ng == 0)
        return KS_OK;
    const ks_csr *H = ks_matrix_host_csr(G);
    if (!H)
        return ks_adderr(KS_ERR_MEMORY, "the ghost block's values");
    *old = ks_malloc((size_t)ng * sizeof **old, "previous ghost values");
    if (!*old)
        return KS_ERR_MEMORY;
    memcpy(*old, H->val, (size_t)ng * sizeof **old);
    return KS_OK;
}

void ks_dist_drop_entry_order(ks_matrix *M)
{
    ks_dist_impl *d = (ks_dist_impl *)M->dist;
    if (!d->entry_pos)
        return;
    const ks_int nnz = ks_matrix_nnz(M);
    free(d->entry_pos);
    d->entry_pos = NULL;
    d->base.halo_bytes -= (double)nnz * sizeof(ks_int);
}

ks_error ks_dist_set_values(ks_matrix_dist *base, const void *val, int on_backend, const char *fn)
{
    ks_dist_impl *d = (ks_dist_impl *)base;
    const ks_comm *c = base->comm;
    ks_matrix *L = base->local, *G = base->ghost;
    const ks_int nl = ks_matrix_nnz(L), ng = G ? ks_matrix_nnz(G) : 0, nnz = nl + ng;
    /* The same on every rank: the AMG's own matrices keep no caller order. */
    if (!d->entry_pos)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "%s: this distributed matrix is an AMG level's or transfer "
                         "operator: its values have no caller order",
                         fn);
    ks_error e = !val && nnz > 0 ? ks_seterr(KS_ERR_ARG, "NULL values (%ld entries)", (long)nnz)
                                 : KS_OK;
    const double *h = NULL;
    double *tmp = NULL, *lv = NULL, *gv = NULL, *old = NULL;
    if (e == KS_OK)
        e = host_values(L->be, val, on_backend, nnz, &h, &tmp);
    if (e == KS_OK) {
        lv = ks_malloc(((size_t)nl + 1) * sizeof *lv, "new local block values");
        gv = ks_malloc(((size_t)ng + 1) * sizeof *gv, "new ghost block values");
        e = lv && gv ? KS_OK : KS_ERR_MEMORY;
    }
    if (e == KS_OK)
        e = scatter(d, h, nnz, nl, lv, gv);
    if (e == KS_OK)
        e = ghost_values(G, ng, &old);
    e = ks_comm_agree_same(c, e); /* nothing changed yet on any rank */
    const int changing = e == KS_OK;
    /* The ghost block first: it is the smaller one to put back when the
     * local block fails (whose own set_values keeps its old values then). */
    int ghost_set = 0;
    if (e == KS_OK && G) {
        e = ks_matrix_set_values(G, gv);
        ghost_set = e == KS_OK;
    }
    if (e == KS_OK)
        e = ks_matrix_set_values(L, lv);
    if (e != KS_OK && ghost_set)
        (void)ks_matrix_set_values(G, old);
    /* A rank that failed here kept its old values, the others hold the new
     * ones: the error says so. */
    e = ks_comm_agree(c, e);
    free(tmp);
    free(lv);
    free(gv);
    free(old);
    if (e != KS_OK && changing)
        ks_adderr(e, "the ranks' blocks may now hold old and new values: set them again");
    return e == KS_OK ? KS_OK : ks_adderr(e, "%s (distributed)", fn);
}
