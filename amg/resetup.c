/* Values-only AMG re-setup (time stepping, Newton: same pattern, new
 * values). Kept from the full setup: the strength graph, the C/F splitting
 * or aggregates, and the patterns of P, R and every coarse operator.
 * Recomputed: interpolation values, RAP values, the coarse LU, smoother data.
 *
 * Classical interpolation is recomputed from the saved S and C/F splitting,
 * then projected onto the saved (truncated) pattern: entries outside it are
 * dropped and the kept ones rescaled so each row keeps the untruncated row
 * sum -- what truncation does, with the kept set frozen. So A -> c A gives
 * exactly the fresh hierarchy, and a small change of values gives the one a
 * fresh setup would give unless truncation would now pick other entries.
 * Smoothed aggregation's P pattern depends only on A's pattern and the
 * aggregates, so it is recomputed and must match. Whenever the saved pattern
 * cannot hold the new operator (an interpolation row with no kept weight, a
 * new P entry without truncation, or RAP entries outside the saved pattern)
 * the whole hierarchy is rebuilt (resetup_fell_back = 1); so is a matrix
 * whose own pattern changed. */
#include "hierarchy.h"
#include "../sparse/cpu/csr_kernels.h"

#include <string.h>
#include <strings.h>

/* Project Pn (recomputed, untruncated) onto P's pattern, in place in P.
 * *changed = 1 when the pattern cannot hold it. */
static void project_rows(const ks_csr *Pn, ks_csr *P, int truncated, int *changed)
{
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
    for (ks_int i = 0; i < P->nrows; i++) {
        ks_int a = Pn->rowptr[i], ae = Pn->rowptr[i + 1];
        ks_int k0 = P->rowptr[i], k1 = P->rowptr[i + 1];
        double sum_all = 0.0, sum_kept = 0.0;
        int dropped = 0;
        for (ks_int j = a; j < ae; j++)
            sum_all += Pn->val[j];
        for (ks_int k = k0; k < k1; k++) {
            while (a < ae && Pn->colind[a] < P->colind[k]) {
                a++;
                dropped = 1;
            }
            double v = a < ae && Pn->colind[a] == P->colind[k] ? Pn->val[a++] : 0.0;
            P->val[k] = v;
            sum_kept += v;
        }
        if (a < ae)
            dropped = 1;
        if (!dropped)
            continue; /* same entries: no rescaling, exact */
        if (!truncated || sum_kept == 0.0) {
            bad = 1;
            continue;
        }
        double scale = sum_all / sum_kept;
        for (ks_int k = k0; k < k1; k++)
            P->val[k] *= scale;
    }
    *changed = bad;
}

static int same_pattern(const ks_csr *X, const ks_csr *Y)
{
    return X->nrows == Y->nrows && X->ncols == Y->ncols && X->nnz == Y->nnz &&
           memcmp(X->rowptr, Y->rowptr, sizeof(ks_int) * ((size_t)X->nrows + 1)) == 0 &&
           memcmp(X->colind, Y->colind, sizeof(ks_int) * (size_t)X->nnz) == 0;
}

#define PHASE(amg, ph, call)                                  \
    do {                                                      \
        double ph_t0_ = ks_wtime();                           \
        ks_error ph_e_ = (call);                              \
        (amg)->phase_seconds[ph] += ks_wtime() - ph_t0_;      \
        if (ph_e_ != KS_OK) {                                 \
            e = ks_adderr(ph_e_, "AMG re-setup, level %d", l); \
            goto done;                                        \
        }                                                     \
    } while (0)

/* Recompute an interpolation (untruncated) and project it onto the saved
 * pattern in P. */
static ks_error reinterp(ks_amg *amg, int l, const ks_csr *A, const ks_strength *S,
                         const int *cf, ks_csr *P, int *changed)
{
    const ks_amg_params *p = &amg->prm;
    ks_csr Pn;
    memset(&Pn, 0, sizeof Pn);
    KS_TRY(ks_amg_classical_interp(amg, l, A, S, cf, 0, &Pn));
    if (Pn.nrows != P->nrows || Pn.ncols != P->ncols) {
        *changed = 1;
    } else {
        double t0 = ks_wtime();
        project_rows(&Pn, P, p->interp_max_elements > 0 || p->interp_truncation_factor > 0.0,
                     changed);
        amg->phase_seconds[KS_AMG_PHASE_TRUNCATION] += ks_wtime() - t0;
    }
    ks_csr_free(&Pn);
    return KS_OK;
}

/* Both stages of an aggressive level, then P = P1 P2 onto P's pattern. */
static ks_error reinterp_aggressive(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l];
    const ks_amg_params *p = &amg->prm;
    ks_csr R1, A1, Pn;
    memset(&R1, 0, sizeof R1);
    memset(&A1, 0, sizeof A1);
    memset(&Pn, 0, sizeof Pn);
    ks_error e = reinterp(amg, l, &L->A, &L->S, L->cf, &L->P1, changed);
    if (e != KS_OK || *changed)
        return e;
    double t0 = ks_wtime();
    e = ks_csr_transpose(&L->P1, &R1);
    if (e == KS_OK)
        e = ks_csr_rap(&R1, &L->A, &L->P1, &A1);
    amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t0;
    if (e == KS_OK)
        e = reinterp(amg, l, &A1, &L->S2, L->cf2, &L->P2, changed);
    if (e == KS_OK && !*changed) {
        t0 = ks_wtime();
        e = ks_csr_spgemm(&L->P1, &L->P2, &Pn);
        amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t0;
        if (e == KS_OK) {
            t0 = ks_wtime();
            if (Pn.nrows != L->P.nrows || Pn.ncols != L->P.ncols)
                *changed = 1;
            else
                project_rows(&Pn, &L->P,
                             p->interp_max_elements > 0 || p->interp_truncation_factor > 0.0,
                             changed);
            amg->phase_seconds[KS_AMG_PHASE_TRUNCATION] += ks_wtime() - t0;
        }
    }
    ks_csr_free(&R1);
    ks_csr_free(&A1);
    ks_csr_free(&Pn);
    if (e != KS_OK)
        return ks_adderr(e, "AMG re-setup, level %d: aggressive coarsening", l);
    return KS_OK;
}

/* New P values of level l into L->P. */
static ks_error new_interpolation(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l];
    if (L->aggressive)
        return reinterp_aggressive(amg, l, changed);
    if (L->cf)
        return reinterp(amg, l, &L->A, &L->S, L->cf, &L->P, changed);
    ks_csr P0, Pn;
    memset(&P0, 0, sizeof P0);
    memset(&Pn, 0, sizeof Pn);
    double rho = 0.0;
    double t0 = ks_wtime();
    ks_error e = ks_amg_tentative_prolongator(L->A.nrows, L->agg, L->nagg, &P0);
    if (e == KS_OK)
        e = ks_amg_spectral_radius_dinv_a(&L->A, 12, &rho);
    L->rho = rho;
    L->rho_valid = e == KS_OK;
    if (e == KS_OK)
        e = ks_amg_smooth_prolongator(&L->A, &P0, rho, &Pn);
    amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t0;
    if (e == KS_OK) {
        if (!same_pattern(&Pn, &L->P))
            *changed = 1;
        else
            memcpy(L->P.val, Pn.val, sizeof(double) * (size_t)Pn.nnz);
    } else {
        e = ks_adderr(e, "AMG re-setup, level %d: smoothed prolongator", l);
    }
    ks_csr_free(&P0);
    ks_csr_free(&Pn);
    return e;
}

/* Level l's transfer values and level l+1's operator, into the saved
 * patterns; *changed = 1 when they do not fit. */
static ks_error level_values(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    ks_csr RT;
    memset(&RT, 0, sizeof RT);
    ks_error e = new_interpolation(amg, l, changed);
    if (e != KS_OK || *changed)
        return e;
    PHASE(amg, KS_AMG_PHASE_RAP, ks_csr_transpose(&L->P, &RT));
    if (!same_pattern(&RT, &L->R)) {
        *changed = 1;
        goto done;
    }
    memcpy(L->R.val, RT.val, sizeof(double) * (size_t)RT.nnz);
    {
        double t0 = ks_wtime();
        e = ks_csr_rap_numeric(&L->R, &L->A, &L->P, &C->A, changed);
        amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t0;
        if (e != KS_OK) {
            e = ks_adderr(e, "AMG re-setup, level %d: RAP", l);
            goto done;
        }
        if (*changed)
            goto done;
    }
    {
        double t0 = ks_wtime();
        e = ks_matrix_set_values(L->Pm, L->P.val);
        if (e == KS_OK)
            e = ks_matrix_set_values(L->Rm, L->R.val);
        if (e == KS_OK)
            e = ks_matrix_set_values(C->Am, C->A.val);
        amg->phase_seconds[KS_AMG_PHASE_UPLOAD] += ks_wtime() - t0;
        if (e != KS_OK)
            e = ks_adderr(e, "AMG re-setup, level %d: updating backend matrices", l);
    }
done:
    ks_csr_free(&RT);
    return e;
}

static ks_error values_only(ks_amg *amg, int *changed)
{
    for (int l = 0; l < amg->nlevels; l++)
        amg->levels[l].rho_valid = 0; /* estimates of the old values */
    for (int l = 0; l < amg->nlevels - 1; l++) {
        KS_TRY(ks_amg_check_diagonal(&amg->levels[l].A, l));
        KS_TRY(level_values(amg, l, changed));
        if (*changed)
            return KS_OK;
    }
    KS_TRY(ks_amg_check_diagonal(&amg->levels[amg->nlevels - 1].A, amg->nlevels - 1));
    KS_TRY(ks_amg_coarse_setup(amg));
    double t0 = ks_wtime();
    for (int l = 0; l < amg->nlevels; l++)
        KS_TRY(ks_amg_smoother_setup(amg, l));
    KS_TRY(ks_backend_sync(amg->be));
    amg->phase_seconds[KS_AMG_PHASE_SMOOTHER] += ks_wtime() - t0;
    return KS_OK;
}

ks_error ks_amg_resetup(ks_amg *amg, ks_matrix *A)
{
    if (!amg)
        return ks_seterr(KS_ERR_ARG, "ks_amg_resetup: NULL hierarchy");
    KS_TRY(ks_amg_check_matrix(amg, A));
    const ks_csr *H = ks_matrix_host_csr(A);
    ks_amg_level *L0 = &amg->levels[0];
    KS_TRY(ks_backend_sync(amg->be));
    double t0 = ks_wtime();
    memset(amg->phase_seconds, 0, sizeof amg->phase_seconds);
    ks_amg_graph_reset(amg); /* the values move to new storage */
    amg->last_was_resetup = 1;
    amg->resetup_fell_back = 0;
    /* After a failed (re-)setup only level 0's copy is left: rebuild. */
    int changed = amg->nlevels < 1 || !same_pattern(H, &L0->A);
    ks_error e = KS_OK;
    if (!changed) {
        memcpy(L0->A.val, H->val, sizeof(double) * (size_t)H->nnz);
        L0->Am = A;
        e = values_only(amg, &changed);
        if (e == KS_OK && !changed && amg->A0f) /* the cycle's float32 copy */
            e = ks_matrix_set_values(amg->A0f, H->val);
    }
    if (e == KS_OK && changed) {
        /* Rebuild everything from the new matrix. */
        ks_amg_clear(amg);
        ks_csr_free(&amg->levels[0].A);
        amg->levels[0].Am = A;
        amg->resetup_fell_back = 1;
        e = ks_csr_copy(H, &amg->levels[0].A);
        if (e == KS_OK)
            e = ks_amg_build(amg);
    }
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    if (e != KS_OK) {
        /* The hierarchy is half updated: unusable until a setup succeeds. */
        ks_amg_clear(amg);
        return e;
    }
    amg->resetup_seconds = ks_wtime() - t0;
    amg->resetup_count++;
    return KS_OK;
}
