/* Extended+i interpolation across ranks. Row i of the serial builder
 * (amg/cpu/interp_extended.c) reads row i of A and S and, for each strong
 * F neighbour k, row k of A and S with the C/F state of k's columns. A
 * rank holds its own rows; the rows of strong F neighbours on other ranks
 * come from ks_dist_fetch_ext_rows. After that one exchange the serial
 * builder itself runs on the rank's local system (interp_local.c): its
 * rows, the fetched rows and every point they reach, in global order, so
 * each row is the serial row bit for bit. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

ks_error ks_dist_interp_extended_i(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                                   const ks_dist_coarse *C, ks_dist_prows *P)
{
    static const char who[] = "distributed extended+i interpolation";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(P, 0, sizeof *P);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    ks_error e = KS_OK;
    const ks_csr *AL = NULL, *AG = NULL;
    if (!A || !A->dist || A->dist->comm != c || A->dist->offsets[c->rank] != S->row_begin)
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
    /* Collective and agreed: every rank fetches, or none goes on. */
    ks_dist_ext_rows R;
    e = ks_dist_fetch_ext_rows(A, S, cf, C, &R);
    if (e != KS_OK)
        return ks_adderr(e, "%s", who);
    P->comm = c;
    P->nloc = S->nloc;
    P->row_begin = S->row_begin;
    P->c_begin = C->c_begin;
    P->nc = C->nc;
    P->nc_global = C->nc_global;
    /* The rows' messages name the function already. */
    e = ks_dist_interp_rows(AL, AG, S, cf, C, &R, P, who);
    ks_dist_ext_rows_free(&R);
    e = ks_comm_agree(c, e);
    if (e != KS_OK)
        ks_dist_prows_free(P);
    return e;
}
