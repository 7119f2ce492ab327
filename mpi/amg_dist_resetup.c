/* Values-only re-setup of a distributed AMG hierarchy (new values, same
 * pattern), amg/resetup.c's rule over ranks. Kept from the setup (the
 * level keeps, amg_dist_keep.c): each level's strength graph, C/F
 * splitting, coarse ids and truncated P pattern in its coarse layout
 * (agglomeration included), an aggressive level's second-stage splitting,
 * smoothed aggregation's tentative prolongator (its aggregates), and the
 * distributed matrices P, R and the coarse operators with their ghost
 * columns and halo plans; kept from the first re-setup: extended+i's
 * fetched rows with their plan, R = P^T with its plan
 * (transpose_numeric_dist.c) and the Galerkin product's plan
 * (rap_numeric_dist.c), so later ones send values only.
 *
 * Recomputed, level by level, P's values:
 *   classical: the interpolation from the kept S and splitting on the new
 *     A (untruncated), projected onto the kept pattern as ks_amgk_project
 *     does (the dropped weight's row sum rescaled onto the kept entries,
 *     the same bits as the serial re-setup's);
 *   aggressive: both stages as the setup makes them (the first from the
 *     kept S and splitting, truncated afresh; the second on the new
 *     A1 = P1^T A P1 with A1's strength anew and the kept splitting,
 *     truncated), P1 P2 projected likewise (aggressive_dist.c);
 *   aggregation: the kept P0 smoothed with the new A (rho anew); its
 *     pattern must be the kept P's (aggregate_dist.c);
 * then R = P^T, the Galerkin product, the gathered coarse LU and the
 * smoothers' data (diagonals, l1 sums, Chebyshev estimates). The new
 * values go into the matrices' blocks in place (their patterns compared
 * first), so every halo plan stays. With hierarchy_precision FLOAT the
 * blocks the cycle reads are float32 copies whose float64 rows stay: the
 * values go into those rows and each block remakes its float32 copy
 * (ks_matrix_set_values), the cycle's copy of level 0 takes the caller's
 * new values, the coarse inverse is recast as the setup does, and a
 * level's Chebyshev estimate runs on a float64 copy of its operator made
 * for it (the setup's estimate ran before the recast, in float64).
 *
 * As serially, the whole hierarchy is rebuilt (resetup_fell_back = 1)
 * when the kept pattern cannot hold the new operator (an interpolation row
 * that would lose weight without truncation or keeps none, a smoothed
 * prolongator or product entry outside the kept pattern) and when the
 * matrix is another object than the last setup's. Every decision is
 * agreed over the ranks, and a failure ends every rank's re-setup with
 * the same error. */
#include "amg_dist_setup.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Pn's values onto P's pattern (P's values rewritten), row by row as
 * amg/cpu's interpolation projection: entries outside the pattern dropped,
 * the kept ones rescaled to the untruncated row sum where some were
 * dropped. 1 when a row does not fit (dropped entries without truncation,
 * or no kept weight). Local. */
static int project(const ks_dist_prows *Pn, ks_dist_prows *P, int truncated)
{
    if (Pn->nloc != P->nloc)
        return 1;
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
    for (ks_int i = 0; i < P->nloc; i++) {
        ks_int a = Pn->rowptr[i], ae = Pn->rowptr[i + 1];
        const ks_int k0 = P->rowptr[i], k1 = P->rowptr[i + 1];
        double sum_all = 0.0, sum_kept = 0.0;
        int dropped = 0;
        for (ks_int j = a; j < ae; j++)
            sum_all += Pn->val[j];
        for (ks_int k = k0; k < k1; k++) {
            while (a < ae && Pn->col[a] < P->col[k]) {
                a++;
                dropped = 1;
            }
            const double v = a < ae && Pn->col[a] == P->col[k] ? Pn->val[a++] : 0.0;
            P->val[k] = v;
            sum_kept += v;
        }
        if (a < ae)
            dropped = 1;
        if (!dropped)
            continue;
        if (!truncated || sum_kept == 0.0) {
            bad = 1;
            continue;
        }
        const double scale = sum_all / sum_kept;
        for (ks_int k = k0; k < k1; k++)
            P->val[k] *= scale;
    }
    return bad;
}

/* Own row i's values in global column order (its local and ghost
 * entries merged), as the fetch of extended+i's rows packs them. */
typedef struct row_values {
    const ks_csr *AL, *AG;
    const ks_dist_strength *S;
} row_values;

static ks_int pack_row_values(const void *ctx, ks_int i, void *out)
{
    const row_values *x = ctx;
    const ks_csr *AL = x->AL, *AG = x->AG;
    const ks_int l0 = AL->rowptr[i], l1 = AL->rowptr[i + 1];
    const ks_int g0 = AG ? AG->rowptr[i] : 0, g1 = AG ? AG->rowptr[i + 1] : 0;
    double *w = out;
    if (!w)
        return (l1 - l0) + (g1 - g0);
    ks_int kl = l0, kg = g0, m = 0;
    while (kl < l1 || kg < g1) {
        const ks_gint a = kl < l1 ? x->S->row_begin + AL->colind[kl] : INT64_MAX;
        const ks_gint b = kg < g1 ? x->S->ghost_gid[AG->colind[kg]] : INT64_MAX;
        w[m++] = a < b ? AL->val[kl++] : AG->val[kg++];
    }
    return m;
}

/* Extended+i's rows of other ranks for level l's new values: fetched with
 * their plan by the first re-setup (kept), then their values only through
 * that plan (their patterns, strong flags and coarse ids are the kept S's
 * and splitting's). Collective (agreed). */
static ks_error ext_rows(const ks_matrix *A, ks_dist_level_keep *K, const ks_csr *AL,
                         const ks_csr *AG)
{
    if (!K->ext_made) {
        KS_TRY(ks_dist_fetch_ext_rows(A, &K->S, K->cf, &K->C, &K->ext));
        K->ext_made = 1;
        return KS_OK;
    }
    const ks_comm *c = K->S.comm;
    const row_values x = {AL, AG, &K->S};
    ks_int *rp = NULL;
    double *in = NULL;
    ks_error e = ks_halo_rows_fetch(c, K->ext.halo, K->S.nloc, K->ext.n, sizeof(double),
                                    pack_row_values, &x, &rp, (void **)&in);
    if (e == KS_OK && memcmp(rp, K->ext.rowptr, ((size_t)K->ext.n + 1) * sizeof *rp))
        e = ks_seterr(KS_ERR_ARG, "extended+i's fetched rows changed their pattern");
    if (e == KS_OK)
        memcpy(K->ext.val, in, (size_t)rp[K->ext.n] * sizeof *in);
    free(rp);
    free(in);
    return ks_comm_agree(c, e);
}

/* Level l's interpolation of its new values (untruncated) from the kept
 * strength, splitting and coarse ids. */
static ks_error interpolation(ks_amg *amg, const ks_matrix *A, ks_dist_level_keep *K,
                              ks_dist_prows *Pn)
{
    if (amg->prm.interpolator == KS_AMG_D1)
        return ks_dist_interp(amg->be, A, &K->S, K->cf, &K->C, KS_AMG_D1, NULL, Pn);
    static const char who[] = "distributed extended+i interpolation (re-setup)";
    const ks_comm *c = K->S.comm;
    const ks_csr *AL = ks_matrix_host_csr(A->dist->local);
    const ks_csr *AG = A->dist->ghost ? ks_matrix_host_csr(A->dist->ghost) : NULL;
    ks_error e = !AL || (A->dist->ghost && !AG)
                     ? ks_seterr(KS_ERR_MEMORY, "%s: host copy of the level's blocks", who)
                     : KS_OK;
    KS_TRY(ks_comm_agree(c, e));
    KS_TRY(ext_rows(A, K, AL, AG));
    memset(Pn, 0, sizeof *Pn);
    Pn->comm = c;
    Pn->nloc = K->S.nloc;
    Pn->row_begin = K->S.row_begin;
    Pn->c_begin = K->C.c_begin;
    Pn->nc = K->C.nc;
    Pn->nc_global = K->C.nc_global;
    e = ks_comm_agree(c, ks_dist_interp_rows(amg->be, AL, AG, NULL, NULL, &K->S, K->cf, &K->C, &K->ext,
                                             NULL, Pn, who));
    if (e != KS_OK)
        ks_dist_prows_free(Pn);
    return e;
}

static int same_pattern(const ks_csr *X, const ks_csr *Y)
{
    if (X->nrows != Y->nrows || X->nnz != Y->nnz)
        return 0;
    return !memcmp(X->rowptr, Y->rowptr, ((size_t)X->nrows + 1) * sizeof *X->rowptr) &&
           (X->nnz == 0 || !memcmp(X->colind, Y->colind, (size_t)X->nnz * sizeof *X->colind));
}

/* The split rows' values into M's blocks when their pattern and ghost
 * columns are M's (else *changed = 1, M untouched). Local; the caller
 * agrees. */
static ks_error set_split(ks_matrix *M, const ks_dist_split *S, int *changed)
{
    const ks_dist_impl *d = (const ks_dist_impl *)M->dist;
    const ks_csr *L = ks_matrix_host_csr(d->base.local);
    const ks_csr *G = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    if (!L || (d->base.ghost && !G))
        return ks_seterr(KS_ERR_MEMORY, "host copy of a level's blocks");
    const ks_int ng = S->ghost.ncols;
    if (ng != d->nghost || !same_pattern(&S->local, L) ||
        (ng > 0 && (!G || !same_pattern(&S->ghost, G) ||
                    memcmp(S->ghost_gid, d->ghost_gid, (size_t)ng * sizeof *d->ghost_gid)))) {
        *changed = 1;
        return KS_OK;
    }
    KS_TRY(ks_matrix_set_values(d->base.local, S->local.val));
    return ng > 0 ? ks_matrix_set_values(d->base.ghost, S->ghost.val) : KS_OK;
}

/* Transfer rows (P or R, global columns) into the distributed M. */
static ks_error set_prows(ks_matrix *M, const ks_dist_prows *X, int *changed)
{
    ks_dist_split S;
    KS_TRY(ks_dist_prows_split(X, &S));
    ks_error e = set_split(M, &S, changed);
    ks_dist_split_free(&S);
    return e;
}

/* Coarse operator rows into the distributed M. */
static ks_error set_rows(ks_matrix *M, const ks_dist_csr *Ac, int *changed)
{
    ks_dist_split S;
    ks_error e = ks_dist_csr_split(ks_matrix_comm(M)->rank, Ac->row_begin, Ac->ncols_global,
                                   Ac->nrows, Ac->rowptr, Ac->colind, Ac->val, &S);
    if (e == KS_OK)
        e = set_split(M, &S, changed);
    ks_dist_split_free(&S);
    return e;
}

/* *changed over the ranks: 1 everywhere when it is 1 somewhere. */
static ks_error agree_changed(const ks_comm *c, ks_error e, int *changed)
{
    e = ks_comm_agree(c, e);
    double v = *changed;
    if (e == KS_OK)
        e = ks_comm_max(c, &v, 1);
    *changed = v > 0.0;
    return e;
}

/* K->R = K->P^T: by the first re-setup with its plan (kept), then values
 * only on it. Collective. */
static ks_error transpose(const ks_matrix *A, ks_dist_level_keep *K)
{
    if (K->tr.made)
        return ks_dist_transpose_numeric(&K->P, &K->tr, &K->R);
    ks_dist_prows_free(&K->R);
    KS_TRY(ks_dist_prows_transpose(&K->P, A->dist->offsets, K->coff, &K->R));
    return ks_dist_transpose_plan_make(&K->P, &K->R, K->coff, &K->tr);
}

/* Pn's values into P when their patterns are the same (else 1). Local. */
static int take_values(const ks_dist_prows *Pn, ks_dist_prows *P)
{
    const ks_int nnz = P->rowptr[P->nloc];
    if (Pn->nloc != P->nloc ||
        memcmp(Pn->rowptr, P->rowptr, ((size_t)P->nloc + 1) * sizeof *P->rowptr) ||
        memcmp(Pn->col, P->col, (size_t)nnz * sizeof *P->col))
        return 1;
    memcpy(P->val, Pn->val, (size_t)nnz * sizeof *P->val);
    return 0;
}

/* Level l's new P values into the kept K->P (*changed = 1, agreed, when
 * they do not fit its pattern). Collective. */
static ks_error new_interpolation(ks_amg *amg, int l, const ks_matrix *A,
                                  ks_dist_level_keep *K, int *changed)
{
    const ks_amg_params *p = &amg->prm;
    const int truncating = ks_amg_dist_truncating(p);
    ks_dist_prows Pn, P1;
    memset(&Pn, 0, sizeof Pn);
    memset(&P1, 0, sizeof P1);
    ks_error e;
    if (p->algorithm == KS_AMG_AGGREGATION) {
        e = ks_amg_dist_smoothed_p(amg, l, A, &K->P0, &Pn);
        if (e == KS_OK)
            *changed = take_values(&Pn, &K->P);
    } else {
        double t = ks_wtime();
        e = interpolation(amg, A, K, K->aggressive ? &P1 : &Pn);
        ks_amg_dist_phase(amg, l, KS_AMG_PHASE_INTERP, "distributed interpolation values", &t);
        if (K->aggressive) { /* the first stage truncated as made, then the second */
            if (e == KS_OK && truncating)
                e = ks_dist_prows_truncate(&P1, p->interp_max_elements,
                                           p->interp_truncation_factor);
            ks_amg_dist_phase(amg, l, KS_AMG_PHASE_TRUNCATION, "first stage truncation", &t);
            if (e == KS_OK)
                e = ks_amg_dist_aggressive_values(amg, l, A, &P1, K->cf2, &Pn);
        }
        t = ks_wtime();
        if (e == KS_OK)
            *changed = project(&Pn, &K->P, truncating);
        ks_amg_dist_phase(amg, l, KS_AMG_PHASE_TRUNCATION, "projection onto the kept P", &t);
    }
    ks_dist_prows_free(&P1);
    ks_dist_prows_free(&Pn);
    return agree_changed(ks_matrix_comm(A), e, changed);
}

/* Level l's P, R and level l + 1's operator from the new values of level
 * l's A, into the kept patterns (*changed = 1, agreed, when they do not
 * fit). Collective. */
static ks_error level_values(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    ks_dist_level_keep *K = ks_amg_dist_keep_level(amg, l);
    const ks_matrix *A = L->Am;
    const ks_comm *c = ks_matrix_comm(A);
    ks_dist_csr Ac;
    memset(&Ac, 0, sizeof Ac);
    ks_error e = new_interpolation(amg, l, A, K, changed);
    double t = ks_wtime();
    if (e == KS_OK && !*changed)
        e = transpose(A, K);
    if (e == KS_OK && !*changed) /* Ac: a view of the kept product */
        e = K->rap.made ? ks_dist_rap_plan_numeric(A, &K->P, &K->R, &K->rap, &Ac)
                        : ks_dist_rap_plan_make(A, &K->P, &K->R, &K->rap, &Ac);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_RAP, "distributed transpose and RAP values", &t);
    if (e == KS_OK && !*changed)
        e = agree_changed(c, set_prows(L->Pm, &K->P, changed), changed);
    if (e == KS_OK && !*changed)
        e = agree_changed(c, set_prows(L->Rm, &K->R, changed), changed);
    if (e == KS_OK && !*changed)
        e = agree_changed(c, set_rows(C->Am, &Ac, changed), changed);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_UPLOAD, "P, R and coarse values into the matrices",
                      &t);
    return e == KS_OK ? KS_OK : ks_adderr(e, "AMG re-setup, level %d (distributed)", l);
}

/* FLOAT: the cycle's float32 copy of level 0 (made at setup from the
 * caller's blocks: the same patterns) takes their new values, on the
 * backend. */
static ks_error float_level0(ks_amg *amg)
{
    if (!amg->A0f)
        return KS_OK;
    const ks_matrix_dist *s = amg->levels[0].Am->dist, *d = amg->A0f->dist;
    ks_error e = ks_matrix_nnz(s->local) == ks_matrix_nnz(d->local) &&
                         ks_matrix_nnz(s->ghost) == ks_matrix_nnz(d->ghost) &&
                         !s->ghost == !d->ghost
                     ? ks_matrix_set_values_device(d->local, s->local->A.val)
                     : ks_seterr(KS_ERR_SIZE, "the float32 copy of level 0 has other blocks");
    if (e == KS_OK && s->ghost)
        e = ks_matrix_set_values_device(d->ghost, s->ghost->A.val);
    ks_matrix_host_csr_free(amg->A0f);
    return ks_matrix_agree(amg->levels[0].Am, e);
}

/* Level l's smoother data. A FLOAT level below level 0 holds float32
 * blocks (with their float64 rows): its Chebyshev estimate runs, as the
 * setup's did before the recast, on float64 blocks, a copy made for it. */
static ks_error smoother_data(ks_amg *amg, int l)
{
    ks_amg_level *L = &amg->levels[l];
    L->rho_valid = 0; /* the estimate of the old values */
    if (l > 0 && amg->smoother == KS_SMOOTHER_CHEBYSHEV &&
        ks_matrix_float_values(L->Am->dist->local)) {
        ks_matrix *D = NULL;
        double rho = 0.0;
        ks_error e = ks_dist_matrix_recast(L->Am, ks_amg_dist_level_format(amg), NULL, &D);
        if (e == KS_OK)
            e = ks_dist_spectral_radius_sym(D, 12, amg->sym0, &rho, NULL);
        ks_matrix_destroy(&D);
        if (e != KS_OK)
            return ks_adderr(e, "AMG level %d: Chebyshev eigenvalue estimate", l);
        L->rho = rho;
        L->rho_valid = 1;
    }
    return ks_amg_dist_smoother_setup(amg, l);
}

static ks_error values_only(ks_amg *amg, int *changed)
{
    for (int l = 0; l < amg->nlevels - 1 && !*changed; l++) {
        KS_TRY(ks_amg_dist_check_diagonal(amg, l));
        KS_TRY(level_values(amg, l, changed));
    }
    if (*changed)
        return KS_OK;
    const int last = amg->nlevels - 1;
    KS_TRY(ks_amg_dist_check_diagonal(amg, last));
    double t = ks_wtime();
    ks_matrix_destroy(&amg->coarse_inv);
    KS_TRY(ks_amg_dist_coarse_setup(amg));
    KS_TRY(ks_amg_dist_float_coarse_inv(amg));
    ks_amg_dist_phase(amg, last, KS_AMG_PHASE_COARSE, "gathered coarse LU and inverse", &t);
    amg->sym0 = 0; /* level 0's estimate (smoother_data) tells */
    for (int l = 0; l < amg->nlevels; l++)
        KS_TRY(smoother_data(amg, l));
    ks_amg_dist_phase(amg, 0, KS_AMG_PHASE_SMOOTHER, "smoother setup", &t);
    KS_TRY(float_level0(amg));
    ks_amg_dist_phase(amg, 0, KS_AMG_PHASE_UPLOAD, "float32 copy of level 0", &t);
    ks_amg_dist_drop_host_copies(amg);
    return KS_OK;
}

ks_error ks_amg_resetup_dist(ks_amg *amg, ks_matrix *A)
{
    if (!amg || !A || !ks_matrix_distributed(A))
        return ks_seterr(KS_ERR_ARG, "ks_amg_resetup_dist: NULL hierarchy, or the matrix is "
                         "not distributed");
    ks_error e = ks_matrix_backend(A) != amg->be
                     ? ks_seterr(KS_ERR_ARG, "AMG re-setup: the matrix lives on another "
                                 "backend object")
                     : KS_OK;
    KS_TRY(ks_matrix_agree(A, e));
    const ks_comm *c = ks_matrix_comm(A);
    const double t0 = ks_wtime();
    memset(amg->phase_seconds, 0, sizeof amg->phase_seconds);
    ks_amg_graph_reset(amg);
    ks_amg_dist_trace_start();
    amg->last_was_resetup = 1;
    amg->resetup_fell_back = 0;
    /* another matrix (its pattern unknown) or a failed earlier (re-)setup:
     * rebuild */
    int changed = amg->nlevels < 1 || ks_matrix_id(A) != amg->A0_id || !amg->dist_keep;
    e = agree_changed(c, KS_OK, &changed);
    if (e == KS_OK && !changed)
        e = values_only(amg, &changed);
    if (e == KS_OK && changed) {
        ks_amg_clear(amg);
        ks_amg_start(amg, A);
        amg->resetup_fell_back = 1;
        e = ks_amg_dist_build(amg);
    }
    return ks_amg_resetup_finish(amg, e, t0);
}
