/* Smoothed aggregation over ranks, with uncoupled aggregates (as ML's and
 * MueLu's "uncoupled" aggregation): each rank aggregates its own points
 * with the serial code (amg/cpu/aggregate.c) on the symmetric strength of
 * its local block, so no aggregate spans two ranks; the smoothing then
 * couples them:
 *
 *   S_loc = strength_symmetric(A's local block, theta 2^-l)
 *   agg   = ks_amg_aggregate_seeded(S_loc, seed + l), numbered after the
 *           lower ranks' aggregates
 *   P0    = ks_amg_tentative_prolongator (1 / sqrt(|aggregate|))
 *   P     = P0 - omega D^-1 A P0, omega = 4 / (3 rho(D^-1 A))
 *           (A P0 by ks_dist_ap, rho by ks_dist_spectral_radius)
 *
 * The symmetric strength of an entry reads only a_ij, a_ii and a_jj, so the
 * local block's strength is the global strength restricted to the rank's
 * points; only the cuts between ranks differ from one process, which gets
 * the same aggregates on one rank (the values of P up to the order of the
 * sums: A P0 is summed first here, P0 + the terms serially). Deterministic:
 * every step is.
 *
 * A values-only re-setup keeps P0 (its values are 1 / sqrt(|aggregate|):
 * the aggregates' alone) and smooths it with the new A
 * (ks_amg_dist_smoothed_p): rho and P anew, whose pattern (A's and the
 * aggregates') must be the kept P's, as serially. */
#include "amg_dist_setup.h"

#include <math.h>
#include <string.h>

/* Local aggregates of A's rows (theta: the level's), numbered globally:
 * the tentative prolongator's rows. */
static ks_error tentative(const ks_matrix *A, double theta, unsigned long long seed,
                          ks_dist_prows *P0)
{
    const ks_comm *c = ks_matrix_comm(A);
    const ks_csr *AL = ks_matrix_host_csr(A->dist->local);
    const ks_int n = ks_matrix_rows(A);
    ks_strength S = {0};
    ks_csr T;
    memset(&T, 0, sizeof T);
    ks_int *agg = ks_malloc((size_t)n * sizeof *agg + 1, "AMG aggregates");
    ks_int na = 0;
    ks_gint *aoff = NULL;
    ks_error e = agg && AL ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = ks_amg_strength_symmetric(AL, theta, &S);
    if (e == KS_OK)
        e = ks_amg_aggregate_seeded(&S, seed, agg, &na);
    if (e == KS_OK)
        e = ks_amg_tentative_prolongator(n, agg, na, &T);
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_layout_gather(c, na, &aoff));
    if (e == KS_OK) {
        P0->comm = c;
        P0->nloc = n;
        P0->row_begin = ks_matrix_row_begin(A);
        P0->c_begin = aoff[c->rank];
        P0->nc = na;
        P0->nc_global = aoff[c->size];
        P0->rowptr = T.rowptr;
        P0->val = T.val;
        P0->col = ks_malloc((size_t)T.rowptr[n] * sizeof *P0->col + 1, "P0 columns");
        for (ks_int k = 0; P0->col && k < T.rowptr[n]; k++)
            P0->col[k] = P0->c_begin + T.colind[k];
        T.rowptr = NULL;
        T.val = NULL;
        e = ks_comm_agree(c, P0->col ? KS_OK : KS_ERR_MEMORY);
    }
    free(aoff);
    free(agg);
    ks_csr_free(&T);
    ks_strength_free(&S);
    return e;
}

/* The diagonal of this rank's rows (the local block holds it); a zero or
 * missing one fails on every rank, named by its global row. */
static ks_error diagonal(const ks_matrix *A, double *d)
{
    const ks_csr *AL = ks_matrix_host_csr(A->dist->local);
    ks_error e = KS_OK;
    for (ks_int i = 0; i < AL->nrows && e == KS_OK; i++) {
        d[i] = 0.0;
        for (ks_int k = AL->rowptr[i]; k < AL->rowptr[i + 1]; k++)
            if (AL->colind[k] == i)
                d[i] = AL->val[k];
        if (d[i] == 0.0)
            e = ks_seterr(KS_ERR_NUMERIC, "smoothed aggregation: row %lld has a zero or "
                          "missing diagonal (Jacobi smoothing needs a_ii != 0)",
                          (long long)(ks_matrix_row_begin(A) + i));
    }
    return ks_comm_agree(ks_matrix_comm(A), e);
}

/* P = P0 - omega D^-1 (A P0): AP's pattern holds P0's (A has its
 * diagonal), so P takes AP's rows. */
static ks_error smooth(const ks_matrix *A, const ks_dist_prows *P0, double omega, ks_dist_prows *P)
{
    const ks_comm *c = ks_matrix_comm(A);
    double *d = ks_malloc((size_t)P0->nloc * sizeof *d + 1, "smoothing diagonal");
    ks_error e = ks_comm_agree(c, d ? KS_OK : KS_ERR_MEMORY);
    ks_dist_csr AP;
    memset(&AP, 0, sizeof AP);
    if (e == KS_OK)
        e = diagonal(A, d);
    if (e == KS_OK)
        e = ks_dist_ap(A, P0, &AP);
    if (e == KS_OK) {
        for (ks_int i = 0; i < AP.nrows; i++) {
            const double s = omega / d[i];
            for (ks_int k = AP.rowptr[i]; k < AP.rowptr[i + 1]; k++) {
                double v = -s * AP.val[k];
                for (ks_int q = P0->rowptr[i]; q < P0->rowptr[i + 1]; q++)
                    if (P0->col[q] == AP.colind[k])
                        v += P0->val[q];
                AP.val[k] = v;
            }
        }
        *P = *P0;
        P->rowptr = AP.rowptr;
        P->col = AP.colind;
        P->val = AP.val;
    } else {
        ks_dist_csr_free(&AP);
    }
    free(d);
    return e;
}

ks_error ks_amg_dist_smoothed_p(ks_amg *amg, int l, const ks_matrix *A, const ks_dist_prows *P0,
                                ks_dist_prows *P)
{
    memset(P, 0, sizeof *P);
    double t = ks_wtime();
    double rho = 0.0;
    ks_error e = ks_dist_spectral_radius((ks_matrix *)A, 12, &rho);
    if (e == KS_OK)
        e = smooth(A, P0, 4.0 / (3.0 * rho), P);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_INTERP, "distributed smoothed prolongator", &t);
    return e;
}

ks_error ks_amg_dist_aggregation_p(ks_amg *amg, int l, const ks_matrix *A, int *stalled,
                                   ks_dist_prows *P, ks_dist_level_keep *keep)
{
    const ks_amg_params *p = &amg->prm;
    ks_dist_prows P0;
    memset(&P0, 0, sizeof P0);
    memset(P, 0, sizeof *P);
    *stalled = 0;
    double t = ks_wtime();
    /* the serial driver's theta (halved on every level) and seed */
    ks_error e = tentative(A, ldexp(p->strength_threshold, -l), p->seed + (unsigned long long)l,
                           &P0);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_COARSENING, "distributed uncoupled aggregation", &t);
    if (e == KS_OK && ks_amg_dist_stalls(P0.nc_global, ks_matrix_global_rows(A)))
        *stalled = 1;
    if (e == KS_OK && !*stalled)
        e = ks_amg_dist_smoothed_p(amg, l, A, &P0, P);
    if (e == KS_OK && !*stalled && keep) { /* the re-setup's (moved) */
        keep->P0 = P0;
        memset(&P0, 0, sizeof P0);
    }
    ks_dist_prows_free(&P0);
    return e == KS_OK ? KS_OK : ks_adderr(e, "smoothed aggregation");
}
