/* Direct interpolation (D1) across ranks. Row i of D1 reads only row i of
 * A and of S and, for each column, its C/F state and coarse id; a rank
 * holds all of its rows (local and ghost blocks), and the ghost columns'
 * states and ids come from ks_dist_coarse_ids, so no message is needed:
 * the serial builder runs on the rank's local system (interp_local.c),
 * which gives the serial rows bit for bit. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

void ks_dist_prows_free(ks_dist_prows *P)
{
    if (!P)
        return;
    free(P->rowptr);
    free(P->col);
    free(P->val);
    memset(P, 0, sizeof *P);
}

ks_error ks_dist_interp_direct(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                               const ks_dist_coarse *C, ks_dist_prows *P)
{
    static const char who[] = "distributed direct interpolation";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(P, 0, sizeof *P);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    ks_error e = KS_OK;
    const ks_csr *AL = NULL, *AG = NULL;
    if (!A || !A->dist || A->dist->comm != c ||
        A->dist->offsets[c->rank] != S->row_begin)
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix is not the strength graph's", who);
    else if (!(AL = ks_matrix_host_csr(A->dist->local)) ||
             (A->dist->ghost && !(AG = ks_matrix_host_csr(A->dist->ghost))))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    else if ((!cf && S->nloc > 0) || !C || (!C->cid && S->nloc > 0))
        e = ks_seterr(KS_ERR_ARG, "%s: NULL splitting or coarse ids", who);
    /* The ghost block's numbering must be S's (the coarse ids index it). */
    else if (AG && (AG->nrows != S->nloc || AG->ncols != S->nghost))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's ghost block is %ld x %ld, the strength "
                      "graph has %ld rows and %ld ghosts", who, (long)AG->nrows,
                      (long)AG->ncols, (long)S->nloc, (long)S->nghost);
    e = ks_comm_agree(c, e);
    if (e != KS_OK)
        return e;
    P->comm = c;
    P->nloc = S->nloc;
    P->row_begin = S->row_begin;
    P->c_begin = C->c_begin;
    P->nc = C->nc;
    P->nc_global = C->nc_global;
    /* The rows' messages name the function already. */
    e = ks_comm_agree(c, ks_dist_interp_rows(AL, AG, S, cf, C, NULL, P, who));
    if (e != KS_OK)
        ks_dist_prows_free(P);
    return e;
}
