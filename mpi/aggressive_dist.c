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
 * does (the one-process splitting on one rank).
 *
 * For a values-only re-setup the level keeps the second stage's splitting
 * cf2 (of A1's rows, laid out as the first stage's C points); the re-setup
 * (ks_amg_dist_aggressive_values) makes both stages again as the serial
 * re-setup does (amg/resetup.c, reinterp_aggressive): the first stage's
 * new P1 truncated afresh, A1 = P1^T A P1, A1's strength anew, the kept
 * cf2's coarse ids (a halo exchange: A1's ghost columns may differ from
 * the setup's A1's when truncation keeps other entries), P2 truncated,
 * P1 P2 untruncated for the caller to project onto the kept P. */
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

/* A1 = P1^T A P1 as a distributed matrix (rows at P1's C points). */
static ks_error stage1_rap(ks_amg *amg, int l, const ks_matrix *A, const ks_dist_prows *P1,
                           ks_matrix **A1)
{
    ks_dist_csr Ac1;
    memset(&Ac1, 0, sizeof Ac1);
    double t = ks_wtime();
    ks_error e = ks_dist_rap(A, P1, &Ac1);
    if (e == KS_OK)
        e = ks_matrix_create_dist(amg->be, ks_matrix_comm(A), Ac1.nrows, Ac1.ncols_global,
                                  Ac1.rowptr, Ac1.colind, Ac1.val, "auto", NULL, A1);
    ks_dist_csr_free(&Ac1);
    amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t;
    ks_amg_trace(l, "distributed aggressive stage 1: RAP", ks_wtime() - t);
    return e;
}

/* P = P1 P2, P's rows replaced (P1 may be P: it is read before). */
static ks_error product(ks_amg *amg, int l, const ks_matrix *A, const ks_dist_prows *P1,
                        ks_dist_prows *P2, ks_dist_prows *P)
{
    ks_matrix *P1m = NULL;
    ks_dist_csr PP;
    memset(&PP, 0, sizeof PP);
    double t = ks_wtime();
    ks_error e = as_matrix(amg, P1, A->dist->offsets, &P1m);
    if (e == KS_OK)
        e = ks_dist_ap(P1m, P2, &PP);
    if (e == KS_OK)
        take_rows(&PP, P2, P);
    amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t;
    ks_amg_trace(l, "distributed aggressive P1 P2", ks_wtime() - t);
    ks_dist_csr_free(&PP);
    ks_matrix_destroy(&P1m);
    return e;
}

ks_error ks_amg_dist_aggressive(ks_amg *amg, int l, const ks_matrix *A, ks_dist_prows *P,
                                ks_dist_level_keep *keep)
{
    const ks_amg_params *p = &amg->prm;
    ks_dist_prows P2;
    ks_dist_level_keep k2; /* the second stage's splitting, for keep */
    memset(&P2, 0, sizeof P2);
    memset(&k2, 0, sizeof k2);
    ks_matrix *A1 = NULL;
    int stalled = 0;
    ks_error e = stage1_rap(amg, l, A, P, &A1);
    if (e == KS_OK)
        e = ks_amg_dist_classical_p_keep(amg, l, A1,
                                         p->seed + 1000003ULL * (unsigned long long)(l + 1),
                                         p->aggressive_interpolator, &stalled, &P2,
                                         keep ? &k2 : NULL);
    /* a stalled second stage: the level keeps the first alone */
    if (e == KS_OK && !stalled)
        e = product(amg, l, A, P, &P2, P);
    if (e == KS_OK && !stalled && ks_amg_dist_truncating(p)) {
        double t = ks_wtime();
        e = ks_dist_prows_truncate(P, p->interp_max_elements, p->interp_truncation_factor);
        amg->phase_seconds[KS_AMG_PHASE_TRUNCATION] += ks_wtime() - t;
    }
    if (e == KS_OK && !stalled && keep) { /* cf2 only: S2 and the ids go with A1 */
        keep->aggressive = 1;
        keep->cf2 = k2.cf;
        k2.cf = NULL;
    }
    free(k2.cf);
    ks_dist_coarse_free(&k2.C);
    ks_dist_strength_free(&k2.S);
    ks_dist_prows_free(&P2);
    ks_matrix_destroy(&A1);
    return e == KS_OK ? KS_OK : ks_adderr(e, "aggressive coarsening");
}

ks_error ks_amg_dist_aggressive_values(ks_amg *amg, int l, const ks_matrix *A,
                                       const ks_dist_prows *P1, const int *cf2, ks_dist_prows *P)
{
    const ks_amg_params *p = &amg->prm;
    const ks_comm *c = ks_matrix_comm(A);
    ks_dist_strength S2;
    ks_dist_coarse C2;
    ks_dist_prows P2;
    memset(&S2, 0, sizeof S2);
    memset(&C2, 0, sizeof C2);
    memset(&P2, 0, sizeof P2);
    memset(P, 0, sizeof *P);
    ks_matrix *A1 = NULL;
    ks_error e = stage1_rap(amg, l, A, P1, &A1);
    double t = ks_wtime();
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_matrix_rows(A1) == P1->nc
                                 ? KS_OK
                                 : ks_seterr(KS_ERR_SIZE, "aggressive re-setup: A1 has %ld rows "
                                             "here, the kept splitting %ld",
                                             (long)ks_matrix_rows(A1), (long)P1->nc));
    /* the serial re-setup's rule: A1's strength anew, the splitting kept */
    if (e == KS_OK)
        e = ks_dist_strength_classical(A1, p->strength_threshold, p->max_row_sum, &S2);
    if (e == KS_OK)
        e = ks_dist_coarse_ids(&S2, cf2, &C2);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_STRENGTH,
                      "aggressive stage 2: strength of the new A1, the kept cf2's coarse ids", &t);
    if (e == KS_OK)
        e = ks_dist_interp(amg->be, A1, &S2, cf2, &C2, p->aggressive_interpolator, NULL, &P2);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_INTERP, "aggressive stage 2: interpolation", &t);
    if (e == KS_OK && ks_amg_dist_truncating(p))
        e = ks_dist_prows_truncate(&P2, p->interp_max_elements, p->interp_truncation_factor);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_TRUNCATION, "aggressive stage 2: truncation", &t);
    if (e == KS_OK)
        e = product(amg, l, A, P1, &P2, P);
    ks_dist_prows_free(&P2);
    ks_dist_coarse_free(&C2);
    ks_dist_strength_free(&S2);
    ks_matrix_destroy(&A1);
    if (e != KS_OK)
        ks_dist_prows_free(P);
    return e == KS_OK ? KS_OK : ks_adderr(e, "aggressive coarsening (re-setup)");
}
