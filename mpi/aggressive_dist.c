/* Aggressive coarsening over ranks: amg/hierarchy.c's build_aggressive
 * with the distributed pieces.
 *
 *   P1 (the level's classical interpolation, truncated: the caller's P)
 *   A1 = P1^T A P1                     (ks_dist_rap, rows at the C owners)
 *   second stage on A1: strength, PMIS | HMIS (seed + 1000003 (l + 1)),
 *   coarse ids, aggressive_interpolator, truncation -> P2
 *   P = P1 P2, truncated               (ks_dist_ap with P1 as the matrix)
 *
 * A1's strength graph links first-stage C points strongly connected
 * through F points, the distance-2 pattern; the rows that needs beyond a
 * rank (P1's rows of A's ghost columns, A1's ghost rows for extended+i)
 * come through the RAP and interpolation fetches. With PMIS every piece
 * gives the serial rows, so the hierarchy is the one-process hierarchy
 * (to the products' rounding); with HMIS both stages split as hmis_dist.c
 * does (the one-process splitting on one rank). */
#include "amg_dist_setup.h"

#include <string.h>

/* P's rows as a distributed matrix (rows by the fine layout, columns by
 * its coarse layout), for the product P1 P2. */
static ks_error as_matrix(ks_amg *amg, const ks_dist_prows *P, const ks_gint *foff,
                          ks_matrix **M)
{
    const ks_comm *c = P->comm;
    ks_gint *coff = NULL;
    ks_error e = ks_comm_agree(c, ks_layout_gather(c, P->nc, &coff));
    if (e == KS_OK)
        e = ks_amg_dist_transfer_matrix(amg, P, foff, coff, M);
    free(coff);
    return e;
}

/* X's rows moved into a ks_dist_prows (X is left empty). */
static void take_rows(ks_dist_csr *X, const ks_dist_prows *cols, ks_dist_prows *P)
{
    ks_dist_prows_free(P);
    P->comm = cols->comm;
    P->nloc = X->nrows;
    P->row_begin = X->row_begin;
    P->c_begin = cols->c_begin;
    P->nc = cols->nc;
    P->nc_global = cols->nc_global;
    P->rowptr = X->rowptr;
    P->col = X->colind;
    P->val = X->val;
    memset(X, 0, sizeof *X);
}

ks_error ks_amg_dist_aggressive(ks_amg *amg, int l, const ks_matrix *A, ks_dist_prows *P)
{
    const ks_amg_params *p = &amg->prm;
    const ks_comm *c = ks_matrix_comm(A);
    ks_dist_csr Ac1, PP;
    ks_dist_prows P2;
    ks_matrix *A1 = NULL, *P1m = NULL;
    memset(&Ac1, 0, sizeof Ac1);
    memset(&PP, 0, sizeof PP);
    memset(&P2, 0, sizeof P2);
    int stalled = 0;
    double t = ks_wtime();
    ks_error e = ks_dist_rap(A, P, &Ac1);
    if (e == KS_OK)
        e = ks_matrix_create_dist(amg->be, c, Ac1.nrows, Ac1.ncols_global, Ac1.rowptr,
                                  Ac1.colind, Ac1.val, "auto", NULL, &A1);
    ks_dist_csr_free(&Ac1);
    amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t;
    ks_amg_trace(l, "distributed aggressive stage 1: RAP", ks_wtime() - t);
    if (e == KS_OK)
        e = ks_amg_dist_classical_p(amg, l, A1, p->seed + 1000003ULL * (unsigned long long)(l + 1),
                                    p->aggressive_interpolator, &stalled, &P2);
    /* a stalled second stage: the level keeps the first alone */
    if (e == KS_OK && !stalled) {
        t = ks_wtime();
        e = as_matrix(amg, P, A->dist->offsets, &P1m);
        if (e == KS_OK)
            e = ks_dist_ap(P1m, &P2, &PP);
        if (e == KS_OK)
            take_rows(&PP, &P2, P);
        amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t;
        ks_amg_trace(l, "distributed aggressive P1 P2", ks_wtime() - t);
    }
    if (e == KS_OK && !stalled && ks_amg_dist_truncating(p)) {
        t = ks_wtime();
        e = ks_dist_prows_truncate(P, p->interp_max_elements, p->interp_truncation_factor);
        amg->phase_seconds[KS_AMG_PHASE_TRUNCATION] += ks_wtime() - t;
    }
    ks_dist_csr_free(&PP);
    ks_dist_prows_free(&P2);
    ks_matrix_destroy(&P1m);
    ks_matrix_destroy(&A1);
    return e == KS_OK ? KS_OK : ks_adderr(e, "aggressive coarsening");
}
