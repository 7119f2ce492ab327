/* Classical interpolation (D1, extended+i) across ranks.
 *
 * Direct: row i of D1 reads only row i of A and of S and, for each column,
 * its C/F state and coarse id; a rank holds all of its rows (local and
 * ghost blocks), and the ghost columns' states and ids come from
 * ks_dist_coarse_ids, so no message is needed.
 *
 * Extended+i: row i of the serial builder (amg/cpu/interp_extended.c)
 * also reads, for each strong F neighbour k, row k of A and S with the
 * C/F state of k's columns; the rows of strong F neighbours on other ranks
 * come from ks_dist_fetch_ext_rows, one exchange.
 *
 * Either way the serial builder itself (or the device's row builder, the
 * same rows bit for bit) then runs on the rank's local system
 * (interp_local.c): its rows, the fetched rows and every point they reach,
 * in global order, so each row is the serial row bit for bit. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

void ks_dist_prows_drop_dev(ks_dist_prows *P)
{
    if (!P || !P->dev)
        return;
    ks_sparse_free(&P->dev->rows);
    free(P->dev->ext);
    free(P->dev);
    P->dev = NULL;
}

int ks_dist_prows_dev_view(const ks_dist_prows *P, ks_sparse *T, ks_gmap *cols)
{
    const ks_dist_prows_dev *d = P ? P->dev : NULL;
    if (!d || d->c_begin != P->c_begin || d->nc != P->nc || d->r0 + P->nloc > d->rows.nrows)
        return 0;
    *T = d->rows;
    T->nrows = P->nloc;
    T->rowptr = d->rows.rowptr + d->r0; /* the rows before are empty: entries from 0 */
    T->nnz = P->nloc ? P->rowptr[P->nloc] : 0;
    return ks_gmap_borrow(P->c_begin, P->c_begin + P->nc, d->ext, d->next, cols) == KS_OK;
}

void ks_dist_prows_free(ks_dist_prows *P)
{
    if (!P)
        return;
    ks_dist_prows_drop_dev(P);
    free(P->rowptr);
    free(P->col);
    free(P->val);
    memset(P, 0, sizeof *P);
}

int ks_dist_trunc_active(const ks_dist_trunc *tr)
{
    return tr && (tr->max_elements > 0 || tr->factor > 0.0);
}

/* A's host blocks (*AL, *AG: NULL when none) after the checks every rank
 * makes of its arguments (not agreed). */
static ks_error check_args(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                           const ks_dist_coarse *C, const char *who, int dev, const ks_csr **AL,
                           const ks_csr **AG)
{
    const ks_comm *c = S->comm;
    *AL = *AG = NULL;
    if (!A || !A->dist || A->dist->comm != c || A->dist->offsets[c->rank] != S->row_begin)
        return ks_seterr(KS_ERR_ARG, "%s: the matrix is not the strength graph's", who);
    if (dev) { /* the blocks are read where they live */
        const ks_sparse *G = A->dist->ghost ? ks_matrix_sparse(A->dist->ghost) : NULL;
        if (G && (G->nrows != S->nloc || G->ncols != S->nghost))
            return ks_seterr(KS_ERR_ARG, "%s: the matrix's ghost block is %ld x %ld, the "
                             "strength graph has %ld rows and %ld ghosts", who, (long)G->nrows,
                             (long)G->ncols, (long)S->nloc, (long)S->nghost);
    } else if (!(*AL = ks_matrix_host_csr(A->dist->local)) ||
               (A->dist->ghost && !(*AG = ks_matrix_host_csr(A->dist->ghost))))
        return ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host",
                         who);
    if ((!cf && S->nloc > 0) || !C || (!C->cid && S->nloc > 0))
        return ks_seterr(KS_ERR_ARG, "%s: NULL splitting or coarse ids", who);
    /* The ghost block's numbering must be S's (the coarse ids index it). */
    if (*AG && ((*AG)->nrows != S->nloc || (*AG)->ncols != S->nghost))
        return ks_seterr(KS_ERR_ARG, "%s: the matrix's ghost block is %ld x %ld, the strength "
                         "graph has %ld rows and %ld ghosts", who, (long)(*AG)->nrows,
                         (long)(*AG)->ncols, (long)S->nloc, (long)S->nghost);
    return KS_OK;
}

ks_error ks_dist_interp(ks_backend *be, const ks_matrix *A, const ks_dist_strength *S,
                        const int *cf, const ks_dist_coarse *C, ks_amg_interp kind,
                        const ks_dist_trunc *tr, ks_dist_prows *P)
{
    const char *who = kind == KS_AMG_D1 ? "distributed direct interpolation"
                                        : "distributed extended+i interpolation";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(P, 0, sizeof *P);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    const ks_csr *AL = NULL, *AG = NULL;
    double t = ks_wtime();
    /* on a device (ks_amg_dist_local_on_backend) A's blocks are read there,
     * no host copy made */
    const int dev = A && A->dist && ks_matrix_backend(A) == be &&
                    ks_amg_dist_local_on_backend(be) && ks_matrix_sparse(A->dist->local)->val &&
                    (!A->dist->ghost || ks_matrix_sparse(A->dist->ghost)->val);
    ks_error e = ks_comm_agree(c, check_args(A, S, cf, C, who, dev, &AL, &AG));
    ks_amg_dist_substep(c, dev ? "interpolation: checks" : "interpolation: A's host rows", &t);
    if (e != KS_OK)
        return e;
    /* Collective and agreed: every rank fetches, or none goes on. */
    ks_dist_ext_rows R;
    memset(&R, 0, sizeof R);
    if (kind != KS_AMG_D1 && (e = ks_dist_fetch_ext_rows(A, S, cf, C, &R)) != KS_OK)
        return ks_adderr(e, "%s", who);
    if (kind != KS_AMG_D1)
        ks_amg_dist_substep(c, "interpolation: fetch F neighbours' rows", &t);
    P->comm = c;
    P->nloc = S->nloc;
    P->row_begin = S->row_begin;
    P->c_begin = C->c_begin;
    P->nc = C->nc;
    P->nc_global = C->nc_global;
    /* The rows' messages name the function already. */
    const ks_matrix_dist *md = A->dist; /* its blocks where they live: the device's local system */
    e = ks_dist_interp_rows(be, AL, AG, dev ? ks_matrix_sparse(md->local) : NULL,
                            dev && md->ghost ? ks_matrix_sparse(md->ghost) : NULL, S, cf, C,
                            kind == KS_AMG_D1 ? NULL : &R, tr, P, who);
    if (kind != KS_AMG_D1)
        ks_dist_ext_rows_free(&R);
    e = ks_comm_agree(c, e);
    if (e != KS_OK)
        ks_dist_prows_free(P);
    return e;
}

ks_error ks_dist_interp_direct(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                               const ks_dist_coarse *C, ks_dist_prows *P)
{
    return ks_dist_interp(NULL, A, S, cf, C, KS_AMG_D1, NULL, P);
}

ks_error ks_dist_interp_extended_i(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                                   const ks_dist_coarse *C, ks_dist_prows *P)
{
    return ks_dist_interp(NULL, A, S, cf, C, KS_AMG_D2, NULL, P);
}
