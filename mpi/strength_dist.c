/* Classical strength of a distributed matrix. Row i of this rank has its
 * entries in two blocks (owned columns, ghost columns); the serial rule
 * (amg/cpu/strength.c) needs the whole row: the diagonal's sign, the
 * largest entry of the opposite sign, and the row sum for max_row_sum. No
 * communication is needed, since a rank holds all entries of its rows.
 * The row sum is added in global column order -- the ghosts below this
 * rank's first row, the owned columns, then the ghosts above -- which is
 * the serial loop's order, so the max_row_sum test sees the same bits.
 *
 * The rule on the two blocks is the AMG table's strength_classical_blocks
 * (amg/kernels.h). On a host-memory backend its host function reads the
 * blocks in place; on a device the blocks are read where they live (no
 * host copy of A is made for this step) and S comes back to the host,
 * where the splitting and the interpolation read it. */
#include "amg_dist.h"

#include <string.h>

void ks_dist_strength_drop_dev(ks_dist_strength *S)
{
    if (!S)
        return;
    ks_sparse_free(&S->dlocal);
    ks_sparse_free(&S->dghost);
}

void ks_dist_strength_free(ks_dist_strength *S)
{
    if (!S)
        return;
    ks_dist_strength_drop_dev(S);
    ks_strength_free(&S->local);
    free(S->grp);
    free(S->gci);
    memset(S, 0, sizeof *S);
}

/* The ghosts below global row lo: their count (gid ascends, and no ghost
 * is one of this rank's own columns, so they are a prefix). */
static ks_int ghosts_below(const ks_gint *gid, ks_int ng, ks_gint lo)
{
    return ks_lower_bound_gint(gid, ng, lo);
}

/* 1 when M's values can be read on its backend (not released). */
static int values_there(const ks_matrix *M)
{
    const ks_sparse *A = ks_matrix_sparse(M);
    return A->val || A->nnz == 0;
}

static ks_error check_args(const ks_matrix *A, int on_host, double theta, double max_row_sum,
                           const char *who)
{
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    if (!(max_row_sum > 0.0 && max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: max_row_sum = %g, expected a value in (0, 1] "
                         "(1 disables the test)", who, max_row_sum);
    const ks_matrix *L = A->dist->local, *G = A->dist->ghost;
    if (on_host && (!ks_matrix_host_csr(L) || (G && !ks_matrix_host_csr(G))))
        return ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host",
                         who);
    if (!on_host && (!values_there(L) || (G && !values_there(G))))
        return ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the %s "
                         "backend (released)", who, ks_backend_name(L->be));
    return KS_OK;
}

/* n ks_ints at p on be into a new host array (one extra slot, as the
 * host function allocates, so an empty part is not NULL). */
static ks_error fetch_ints(ks_backend *be, const ks_int *p, size_t n, ks_int **out)
{
    *out = ks_malloc(n * sizeof(ks_int) + 1, "strength pattern (host copy)");
    if (!*out)
        return KS_ERR_MEMORY;
    return n ? be->ops->download(be, *out, p, n * sizeof(ks_int)) : KS_OK;
}

/* The device blocks' strength, brought into S's host arrays. */
static ks_error device_blocks(const ks_matrix_dist *md, ks_int nbelow, double theta,
                              double max_row_sum, ks_dist_strength *S)
{
    const ks_sparse *L = ks_matrix_sparse(md->local);
    const ks_sparse *G = md->ghost ? ks_matrix_sparse(md->ghost) : NULL;
    ks_backend *be = L->be;
    ks_amg_exec x;
    memset(&x, 0, sizeof x);
    ks_sparse SL, SG;
    memset(&SL, 0, sizeof SL);
    memset(&SG, 0, sizeof SG);
    ks_error e = ks_amgk_strength_classical_blocks(&x, L, G, nbelow, theta, max_row_sum, &SL,
                                                   &SG);
    const size_t n1 = (size_t)L->nrows + 1;
    S->local.n = L->nrows;
    if (e == KS_OK)
        e = fetch_ints(be, SL.rowptr, n1, &S->local.rowptr);
    if (e == KS_OK)
        e = fetch_ints(be, SL.colind, (size_t)SL.nnz, &S->local.colind);
    if (e == KS_OK)
        e = fetch_ints(be, SG.rowptr, n1, &S->grp);
    if (e == KS_OK)
        e = fetch_ints(be, SG.colind, (size_t)SG.nnz, &S->gci);
    if (e == KS_OK) { /* kept there too: the interpolation's local system reads them */
        S->dlocal = SL;
        S->dghost = SG;
    } else {
        ks_sparse_free(&SL);
        ks_sparse_free(&SG);
    }
    ks_amg_exec_free(&x);
    return e;
}

/* The host blocks' strength into S (the host function's arrays taken):
 * the matrix's own blocks, whose rows were checked when it was made. */
static ks_error host_blocks(const ks_matrix_dist *md, ks_int nbelow, double theta,
                            double max_row_sum, ks_dist_strength *S)
{
    const ks_csr *G = md->ghost ? ks_matrix_host_csr(md->ghost) : NULL;
    ks_strength SG;
    KS_TRY(ks_amg_strength_classical_blocks_valid(ks_matrix_host_csr(md->local), G, nbelow,
                                                  theta, max_row_sum, &S->local, &SG));
    S->grp = SG.rowptr;
    S->gci = SG.colind;
    ks_backend *be = md->local->be;
    if (!ks_amg_dist_local_on_backend(be))
        return KS_OK;
    /* the device's path on the cpu (KS_AMG_DIST_LOCAL=device, the tests):
     * copies of the parts as the device would keep them */
    const ks_int n = S->local.n;
    const ks_csr l = {n, n, S->local.rowptr[n], S->local.rowptr, S->local.colind, NULL};
    const ks_csr g = {n, S->nghost, S->grp[n], S->grp, S->gci, NULL};
    ks_error e = ks_sparse_from_csr(be, &l, 1, &S->dlocal);
    if (e == KS_OK)
        e = ks_sparse_from_csr(be, &g, 1, &S->dghost);
    return e;
}

ks_error ks_dist_strength_classical(const ks_matrix *A, double theta, double max_row_sum,
                                    ks_dist_strength *S)
{
    static const char who[] = "distributed classical strength";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!A || !A->dist)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, A ? "the matrix is not distributed"
                                                       : "NULL matrix");
    const ks_matrix_dist *md = A->dist;
    const ks_dist_impl *d = (const ks_dist_impl *)md;
    const ks_comm *c = md->comm;
    const int on_host = ks_backend_host_memory(md->local->be);
    /* A parameter may be bad on some ranks only: all refuse together. */
    ks_error e = ks_comm_agree(c, check_args(A, on_host, theta, max_row_sum, who));
    if (e != KS_OK)
        return e;
    S->comm = c;
    S->offsets = md->offsets;
    S->row_begin = md->offsets[c->rank];
    S->nloc = (ks_int)(md->offsets[c->rank + 1] - S->row_begin);
    S->nghost = d->nghost;
    S->ghost_gid = d->ghost_gid;
    S->halo = d->halo;
    const ks_int nbelow = ghosts_below(d->ghost_gid, d->nghost, S->row_begin);
    e = on_host ? host_blocks(md, nbelow, theta, max_row_sum, S)
                : device_blocks(md, nbelow, theta, max_row_sum, S);
    e = ks_comm_agree(c, e);
    if (e != KS_OK) {
        ks_dist_strength_free(S);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
