/* Values-only AMG re-setup (time stepping, Newton: same pattern, new
 * values). Kept from the full setup: the strength graph, the C/F splitting
 * or aggregates, and the patterns of P, R and every coarse operator.
 * Recomputed: interpolation values (an aggressive level's two stages as
 * the setup makes them), RAP values, the coarse LU, smoother data.
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
 * other than the one of the last setup (a ks_matrix keeps its pattern, so
 * the same matrix object is the test of an unchanged pattern). Every step
 * runs where the hierarchy lives, through kernels.h. */
#include "hierarchy.h"

#include <string.h>

#define PHASE(amg, ph, call)                                  \
    do {                                                      \
        double ph_t0_ = ks_wtime();                           \
        ks_error ph_e_ = (call);                              \
        if (ph_e_ == KS_OK)                                   \
            ph_e_ = ks_backend_sync((amg)->be);               \
        (amg)->phase_seconds[ph] += ks_wtime() - ph_t0_;      \
        if (ph_e_ != KS_OK) {                                 \
            e = ks_adderr(ph_e_, "AMG re-setup, level %d", l); \
            goto done;                                        \
        }                                                     \
    } while (0)

static int truncated(const ks_amg_params *p)
{
    return p->interp_max_elements > 0 || p->interp_truncation_factor > 0.0;
}

/* Pn onto P's pattern when the shapes agree (else *changed = 1). */
static ks_error project(ks_amg *amg, const ks_sparse *Pn, ks_sparse *P, int *changed)
{
    if (Pn->nrows != P->nrows || Pn->ncols != P->ncols) {
        *changed = 1;
        return KS_OK;
    }
    double t0 = ks_wtime();
    ks_error e = ks_amgk_project(&amg->exec, Pn, P, truncated(&amg->prm), changed);
    amg->phase_seconds[KS_AMG_PHASE_TRUNCATION] += ks_wtime() - t0;
    return e;
}

/* Recompute an interpolation (untruncated) and project it onto the saved
 * pattern in P. */
static ks_error reinterp(ks_amg *amg, int l, const ks_sparse *A, const ks_sparse *S,
                         const int *cf, ks_sparse *P, int *changed)
{
    ks_sparse Pn;
    memset(&Pn, 0, sizeof Pn);
    KS_TRY(ks_amg_classical_interp(amg, l, amg->prm.interpolator, A, S, cf, 0, &Pn));
    ks_error e = project(amg, &Pn, P, changed);
    ks_sparse_free(&Pn);
    return e;
}

/* Both stages of an aggressive level as the setup makes them (the first
 * from the saved S and cf, the second from the new A1's strength and the
 * saved cf2, each truncated afresh), then P = P1 P2 onto P's pattern. */
static ks_error reinterp_aggressive(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l];
    ks_sparse P1, R1, A1, S2, P2, Pn;
    memset(&P1, 0, sizeof P1);
    memset(&R1, 0, sizeof R1);
    memset(&A1, 0, sizeof A1);
    memset(&S2, 0, sizeof S2);
    memset(&P2, 0, sizeof P2);
    memset(&Pn, 0, sizeof Pn);
    ks_error e =
        ks_amg_classical_interp(amg, l, amg->prm.interpolator, &L->A, &L->S, L->cf, 1, &P1);
    double t0 = ks_wtime();
    if (e == KS_OK)
        e = ks_amgk_transpose(&amg->exec, &P1, &R1);
    if (e == KS_OK)
        e = ks_amgk_rap(&amg->exec, &R1, &L->A, &P1, &A1);
    amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t0;
    ks_sparse_free(&R1);
    if (e == KS_OK)
        e = ks_amg_classical_strength(amg, l, &A1, &S2);
    if (e == KS_OK)
        e = ks_amg_classical_interp(amg, l, amg->prm.aggressive_interpolator, &A1, &S2, L->cf2,
                                    1, &P2);
    ks_sparse_free(&S2);
    ks_sparse_free(&A1);
    if (e == KS_OK) {
        t0 = ks_wtime();
        e = ks_amgk_spgemm(&amg->exec, &P1, &P2, &Pn);
        amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t0;
    }
    if (e == KS_OK)
        e = project(amg, &Pn, &L->P, changed);
    ks_sparse_free(&P1);
    ks_sparse_free(&P2);
    ks_sparse_free(&Pn);
    if (e != KS_OK)
        return ks_adderr(e, "AMG re-setup, level %d: aggressive coarsening", l);
    return KS_OK;
}

/* Copy the values of X into Y (same pattern, same backend). */
static ks_error copy_values(const ks_sparse *X, ks_sparse *Y)
{
    if (X->nnz == 0)
        return KS_OK;
    return Y->be->ops->copy(Y->be, Y->val, X->val, (size_t)X->nnz * sizeof(double));
}

/* New P values of level l into L->P. */
static ks_error new_interpolation(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l];
    if (L->aggressive)
        return reinterp_aggressive(amg, l, changed);
    if (L->cf)
        return reinterp(amg, l, &L->A, &L->S, L->cf, &L->P, changed);
    ks_sparse P0, Pn;
    memset(&P0, 0, sizeof P0);
    memset(&Pn, 0, sizeof Pn);
    double rho = 0.0;
    double t0 = ks_wtime();
    ks_error e = ks_amgk_tentative(&amg->exec, amg->be, L->A.nrows, L->agg, L->nagg, &P0);
    if (e == KS_OK)
        e = ks_amg_level_spectral(amg, &amg->exec, l, &L->A, &rho);
    L->rho = rho;
    L->rho_valid = e == KS_OK;
    if (e == KS_OK)
        e = ks_amgk_smooth_prolongator(&amg->exec, &L->A, &P0, rho, &Pn);
    amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t0;
    int same = 0;
    if (e == KS_OK)
        e = ks_amgk_same_pattern(&amg->exec, &Pn, &L->P, &same);
    if (e == KS_OK) {
        if (!same)
            *changed = 1;
        else
            e = copy_values(&Pn, &L->P);
    } else {
        e = ks_adderr(e, "AMG re-setup, level %d: smoothed prolongator", l);
    }
    ks_sparse_free(&P0);
    ks_sparse_free(&Pn);
    return e;
}

/* Level l's transfer values and level l+1's operator, into the saved
 * patterns; *changed = 1 when they do not fit. */
static ks_error level_values(ks_amg *amg, int l, int *changed)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    ks_sparse RT;
    memset(&RT, 0, sizeof RT);
    int same = 0;
    ks_error e = ks_amg_transfer_values(L, 1);
    if (e == KS_OK)
        e = new_interpolation(amg, l, changed);
    if (e != KS_OK || *changed)
        return e;
    PHASE(amg, KS_AMG_PHASE_RAP, ks_amgk_transpose(&amg->exec, &L->P, &RT));
    PHASE(amg, KS_AMG_PHASE_RAP, ks_amgk_same_pattern(&amg->exec, &RT, &L->R, &same));
    if (!same) {
        *changed = 1;
        goto done;
    }
    PHASE(amg, KS_AMG_PHASE_RAP, copy_values(&RT, &L->R));
    PHASE(amg, KS_AMG_PHASE_RAP,
          ks_amgk_rap_numeric(&amg->exec, &L->R, &L->A, &L->P, &C->A, changed));
    if (*changed)
        goto done;
    {
        double t0 = ks_wtime();
        e = ks_matrix_values_changed(L->Pm);
        if (e == KS_OK)
            e = ks_matrix_values_changed(L->Rm);
        if (e == KS_OK)
            e = ks_amg_transfer_values(L, 0);
        if (e == KS_OK)
            e = ks_matrix_values_changed(C->Am);
        amg->phase_seconds[KS_AMG_PHASE_UPLOAD] += ks_wtime() - t0;
        if (e != KS_OK)
            e = ks_adderr(e, "AMG re-setup, level %d: updating backend matrices", l);
    }
done:
    ks_sparse_free(&RT);
    return e;
}

static ks_error values_only(ks_amg *amg, int *changed)
{
    const char *need = "AMG needs a nonzero diagonal";
    for (int l = 0; l < amg->nlevels; l++)
        amg->levels[l].rho_valid = 0; /* estimates of the old values */
    amg->sym0 = 0;
    for (int l = 0; l < amg->nlevels - 1; l++) {
        KS_TRY(ks_amg_check_diagonal(amg, &amg->levels[l].A, l, need));
        KS_TRY(level_values(amg, l, changed));
        if (*changed)
            return KS_OK;
    }
    KS_TRY(ks_amg_check_diagonal(amg, &amg->levels[amg->nlevels - 1].A, amg->nlevels - 1, need));
    KS_TRY(ks_amg_coarse_start(amg)); /* overlaps the smoothers' device work */
    double t0 = ks_wtime();
    ks_error e = KS_OK;
    for (int l = 0; l < amg->nlevels && e == KS_OK; l++)
        e = ks_amg_smoother_setup(amg, l);
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    amg->phase_seconds[KS_AMG_PHASE_SMOOTHER] += ks_wtime() - t0;
    if (e != KS_OK) {
        ks_amg_coarse_cancel(amg);
        return e;
    }
    return ks_amg_coarse_finish(amg);
}

ks_error ks_amg_resetup(ks_amg *amg, ks_matrix *A)
{
    if (!amg)
        return ks_seterr(KS_ERR_ARG, "ks_amg_resetup: NULL hierarchy");
    KS_TRY(ks_amg_check_matrix(amg, A));
    KS_TRY(ks_backend_sync(amg->be));
    double t0 = ks_wtime();
    memset(amg->phase_seconds, 0, sizeof amg->phase_seconds);
    ks_amg_graph_reset(amg); /* the values move to new storage */
    amg->last_was_resetup = 1;
    amg->resetup_fell_back = 0;
    /* After a failed (re-)setup only level 0 is left: rebuild. So is
     * another matrix than the last setup's (its pattern is unknown). */
    int changed = amg->nlevels < 1 || ks_matrix_id(A) != amg->A0_id;
    ks_error e = KS_OK;
    if (!changed) {
        e = values_only(amg, &changed);
        if (e == KS_OK && !changed && amg->A0f) /* the cycle's float32 copy */
            e = ks_matrix_values_changed(amg->A0f);
    }
    if (e == KS_OK && changed) {
        /* Rebuild everything from the new matrix. */
        ks_amg_clear(amg);
        ks_amg_start(amg, A);
        amg->resetup_fell_back = 1;
        e = ks_amg_build(amg);
    }
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    return ks_amg_resetup_finish(amg, e, t0);
}

ks_error ks_amg_resetup_finish(ks_amg *amg, ks_error e, double t0)
{
    if (e != KS_OK) {
        /* The hierarchy is half updated: unusable until a setup succeeds. */
        ks_amg_clear(amg);
        return e;
    }
    amg->resetup_seconds = ks_wtime() - t0;
    amg->resetup_count++;
    return KS_OK;
}
