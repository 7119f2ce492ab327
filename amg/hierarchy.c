/* AMG setup: build the levels with the steps of kernels.h on the backend
 * the solve runs on, then hand each level's operators to ks_matrix objects
 * (the arrays move, nothing is copied) for the cycle.
 *
 *   classical:   S = strength_classical -> C/F (HMIS | PMIS) -> P (D2 | D1)
 *                -> truncate -> R = P^T -> Ac = R A P
 *   aggregation: S = strength_symmetric -> aggregates -> P0 -> P = (I - w D^-1 A) P0
 *                -> R = P^T -> Ac = R A P
 * On the first aggressive_levels levels (classical) coarsening runs twice,
 * the second time on the first stage's Galerkin operator, and P = P1 P2
 * (build_aggressive).
 * Coarsening stops when a level has at most coarse_max_rows or
 * min_coarse_rows rows, at max_levels, or when it stalls (no coarse points,
 * or more than 90% of the rows kept: another level would cost more than it
 * gives). The coarsest level gets a dense LU and its explicit inverse. */
#include "hierarchy.h"

#include <math.h>
#include <string.h>

const char *const ks_amg_phase_names[KS_AMG_NPHASES] = {
    "strength", "coarsening", "interpolation", "truncation",
    "RAP",      "coarse LU",  "smoother",      "upload",
};

/* A stalled coarsening keeps more than this fraction of the rows. */
#define KS_AMG_STALL_RATIO 0.9

ks_error ks_amg_alloc_array(ks_amg *amg, ks_int n, size_t size, void **p, const char *what)
{
    return ks_be_alloc(amg->be, (size_t)n * size + 1, p, what);
}

void ks_amg_free_array(ks_amg *amg, void *p)
{
    if (p)
        amg->be->ops->free(amg->be, p);
}

/* A nonzero, finite diagonal on every row: strength, interpolation and the
 * smoothers divide by it, and a zero would otherwise surface as NaNs. */
ks_error ks_amg_check_diagonal(ks_amg *amg, const ks_sparse *A, int l, const char *who)
{
    ks_int bad;
    double d;
    int stored;
    KS_TRY(ks_amgk_check_diagonal(&amg->exec, A, &bad, &d, &stored));
    if (bad >= A->nrows)
        return KS_OK;
    return ks_seterr(KS_ERR_NUMERIC, "AMG level %d: %s diagonal at row %ld%s (%s)", l,
                     d == 0.0 ? "zero" : "non-finite", (long)bad,
                     stored ? "" : " (no diagonal entry stored)", who);
}

static int is_aggregation(const ks_amg *amg) { return amg->prm.algorithm == KS_AMG_AGGREGATION; }

/* Time `call` into phase ph (the backend finishes the call's work first,
 * so device steps are timed, not just queued); with KS_AMG_TRACE set in
 * the environment each step's time goes to stderr too. */
#define PHASE(amg, ph, call)                                  \
    do {                                                      \
        double ph_t0_ = ks_wtime();                           \
        ks_error ph_e_ = (call);                              \
        if (ph_e_ == KS_OK)                                   \
            ph_e_ = ks_backend_sync((amg)->be);               \
        (amg)->phase_seconds[ph] += ks_wtime() - ph_t0_;      \
        ks_amg_trace(l, #call, ks_wtime() - ph_t0_);          \
        if (ph_e_ != KS_OK)                                   \
            return ks_adderr(ph_e_, "AMG level %d", l);       \
    } while (0)

static int trace_env(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("KS_AMG_TRACE");
        on = v && v[0] && strcmp(v, "0") != 0;
    }
    return on;
}

int ks_amg_tracing(void) { return trace_env() || ks_log_level() >= KS_LOG_DEBUG; }

void ks_amg_trace(int level, const char *what, double seconds)
{
    if (!ks_amg_tracing())
        return;
    /* the step's function name: what comes before its argument list */
    int len = (int)strcspn(what, "(");
    /* Debug level, but shown at the default level when the environment
     * asks for it, as before the log levels existed. */
    ks_log((trace_env() ? KS_LOG_INFO : KS_LOG_DEBUG) | KS_LOG_STDERR,
           "ksolve AMG level %d: %.*s %.3f ms\n", level, len, what, 1e3 * seconds);
}

/* Under KS_AMG_TRACE, the time since *t0 of a level's step (the backend
 * finished first), and *t0 moved on. */
static void trace_since(ks_amg *amg, int l, const char *what, double *t0)
{
    if (!ks_amg_tracing() || ks_backend_sync(amg->be) != KS_OK)
        return;
    double t = ks_wtime();
    ks_amg_trace(l, what, t - *t0);
    *t0 = t;
}

ks_error ks_amg_level_spectral(ks_amg *amg, ks_amg_exec *x, int l, const ks_sparse *A,
                               double *rho)
{
    int exact = 0;
    ks_error e = ks_amgk_spectral_radius(x, A, KS_AMG_SPECTRAL_STEPS, l > 0 && amg->sym0, rho,
                                         l == 0 ? &exact : NULL);
    if (l == 0)
        amg->sym0 = e == KS_OK && exact;
    return e;
}

/* Classical coarsening of A: strength and C/F splitting. */
ks_error ks_amg_classical_strength(ks_amg *amg, int l, const ks_sparse *A, ks_sparse *S)
{
    const ks_amg_params *p = &amg->prm;
    PHASE(amg, KS_AMG_PHASE_STRENGTH,
          ks_amgk_strength_classical(&amg->exec, A, p->strength_threshold, p->max_row_sum, S));
    return KS_OK;
}

static ks_error classical_split(ks_amg *amg, int l, const ks_sparse *A, unsigned long long seed,
                                ks_sparse *S, int **cf, ks_int *nc)
{
    const ks_amg_params *p = &amg->prm;
    KS_TRY(ks_amg_classical_strength(amg, l, A, S));
    KS_TRY(ks_amg_alloc_array(amg, A->nrows, sizeof **cf, (void **)cf, "AMG C/F splitting"));
    if (p->selector == KS_AMG_PMIS)
        PHASE(amg, KS_AMG_PHASE_COARSENING, ks_amgk_pmis(&amg->exec, S, seed, *cf, nc));
    else
        PHASE(amg, KS_AMG_PHASE_COARSENING,
              ks_amgk_hmis(&amg->exec, S, seed, p->hmis_block_rows, *cf, nc));
    return KS_OK;
}

static int truncating(const ks_amg_params *p)
{
    return p->interp_max_elements > 0 || p->interp_truncation_factor > 0.0;
}

/* Classical interpolation (D1 or D2), truncated. */
ks_error ks_amg_classical_interp(ks_amg *amg, int l, ks_amg_interp kind, const ks_sparse *A,
                                 const ks_sparse *S, const int *cf, int truncate, ks_sparse *P)
{
    const ks_amg_params *p = &amg->prm;
    PHASE(amg, KS_AMG_PHASE_INTERP, ks_amgk_interp(&amg->exec, kind, A, S, cf, P));
    if (truncate && truncating(p))
        PHASE(amg, KS_AMG_PHASE_TRUNCATION,
              ks_amgk_truncate(&amg->exec, P, p->interp_max_elements,
                               p->interp_truncation_factor));
    return KS_OK;
}

static int stalls(ks_int nc, ks_int n)
{
    return nc == 0 || (double)nc > KS_AMG_STALL_RATIO * (double)n;
}

/* Aggressive coarsening of level l (L->S / L->cf are the first stage,
 * n1 = its C points). Second stage on the Galerkin operator of the first:
 * its strength graph links C points that are strongly connected through F
 * points (distance two in S), the same graph hypre's S*S gives, with
 * weights. P = P1 P2, truncated like any P. When the second stage stalls
 * the level keeps the first stage alone. */
static ks_error build_aggressive(ks_amg *amg, int l, ks_int n1, ks_int *nc)
{
    ks_amg_level *L = &amg->levels[l];
    const ks_amg_params *p = &amg->prm;
    ks_sparse R1, A1;
    memset(&R1, 0, sizeof R1);
    memset(&A1, 0, sizeof A1);
    ks_error e = ks_amg_classical_interp(amg, l, p->interpolator, &L->A, &L->S, L->cf, 1,
                                         &L->P1);
    double t0 = ks_wtime();
    if (e == KS_OK)
        e = ks_amgk_transpose(&amg->exec, &L->P1, &R1);
    if (e == KS_OK)
        e = ks_amgk_rap(&amg->exec, &R1, &L->A, &L->P1, &A1);
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t0;
    ks_amg_trace(l, "aggressive stage 1: transpose + RAP", ks_wtime() - t0);
    ks_sparse_free(&R1);
    if (e == KS_OK)
        e = classical_split(amg, l, &A1, p->seed + 1000003ULL * (unsigned long long)(l + 1),
                            &L->S2, &L->cf2, nc);
    if (e == KS_OK && stalls(*nc, n1)) {
        /* one stage only: the level is an ordinary one */
        L->P = L->P1;
        memset(&L->P1, 0, sizeof L->P1);
        ks_sparse_free(&L->S2);
        ks_amg_free_array(amg, L->cf2);
        L->cf2 = NULL;
        *nc = n1;
        ks_sparse_free(&A1);
        return KS_OK;
    }
    if (e == KS_OK)
        e = ks_amg_classical_interp(amg, l, p->aggressive_interpolator, &A1, &L->S2, L->cf2, 1,
                                    &L->P2);
    ks_sparse_free(&A1);
    if (e != KS_OK)
        return e;
    L->aggressive = 1;
    PHASE(amg, KS_AMG_PHASE_INTERP, ks_amgk_spgemm(&amg->exec, &L->P1, &L->P2, &L->P));
    if (truncating(p))
        PHASE(amg, KS_AMG_PHASE_TRUNCATION,
              ks_amgk_truncate(&amg->exec, &L->P, p->interp_max_elements,
                               p->interp_truncation_factor));
    return KS_OK;
}

/* Smoothed aggregation's transfer of level l; *nc its aggregates. */
static ks_error build_aggregation(ks_amg *amg, int l, ks_int *nc, int *stalled)
{
    ks_amg_level *L = &amg->levels[l];
    const ks_amg_params *p = &amg->prm;
    ks_int n = L->A.nrows;
    /* Smoothed aggregation halves theta on every level (Vanek, Mandel,
     * Brezina 1996: eps_l = eps 0.5^l): the smoothed coarse operators
     * spread each row over more, weaker entries, and a fixed theta soon
     * finds no strong connection at all and coarsening stalls. */
    double theta = ldexp(p->strength_threshold, -l);
    PHASE(amg, KS_AMG_PHASE_STRENGTH,
          ks_amgk_strength_symmetric(&amg->exec, &L->A, theta, &L->S));
    KS_TRY(ks_amg_alloc_array(amg, n, sizeof *L->agg, (void **)&L->agg, "AMG aggregates"));
    PHASE(amg, KS_AMG_PHASE_COARSENING,
          ks_amgk_aggregate(&amg->exec, &L->S, p->seed + (unsigned long long)l, L->agg,
                            &L->nagg));
    *nc = L->nagg;
    if (stalls(*nc, n)) {
        *stalled = 1;
        return KS_OK;
    }
    ks_sparse P0;
    memset(&P0, 0, sizeof P0);
    double rho = 0.0;
    PHASE(amg, KS_AMG_PHASE_INTERP,
          ks_amgk_tentative(&amg->exec, amg->be, n, L->agg, *nc, &P0));
    double t0 = ks_wtime();
    ks_error e = ks_amg_level_spectral(amg, &amg->exec, l, &L->A, &rho);
    L->rho = rho;
    L->rho_valid = e == KS_OK; /* the Chebyshev smoother reuses it */
    if (e == KS_OK)
        e = ks_amgk_smooth_prolongator(&amg->exec, &L->A, &P0, rho, &L->P);
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t0;
    ks_amg_trace(l, "spectral radius + smoothed prolongator", ks_wtime() - t0);
    ks_sparse_free(&P0);
    if (e != KS_OK)
        return ks_adderr(e, "AMG level %d: smoothed prolongator", l);
    return KS_OK;
}

/* Transfer operators and the next level's matrix from level l.
 * *stalled = 1 (and nothing kept) when the level should be the coarsest. */
static ks_error build_transfer(ks_amg *amg, int l, int *stalled)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    const ks_amg_params *p = &amg->prm;
    ks_int n = L->A.nrows, nc = 0;
    *stalled = 0;

    if (is_aggregation(amg)) {
        KS_TRY(build_aggregation(amg, l, &nc, stalled));
        if (*stalled)
            return KS_OK;
    } else {
        KS_TRY(classical_split(amg, l, &L->A, p->seed + (unsigned long long)l, &L->S, &L->cf,
                               &nc));
        if (stalls(nc, n)) {
            *stalled = 1;
            return KS_OK;
        }
        if (l < p->aggressive_levels)
            KS_TRY(build_aggressive(amg, l, nc, &nc));
        else
            KS_TRY(ks_amg_classical_interp(amg, l, p->interpolator, &L->A, &L->S, L->cf, 1,
                                           &L->P));
    }
    PHASE(amg, KS_AMG_PHASE_RAP, ks_amgk_transpose(&amg->exec, &L->P, &L->R));
    PHASE(amg, KS_AMG_PHASE_RAP, ks_amgk_rap(&amg->exec, &L->R, &L->A, &L->P, &C->A));
    /* An aggressive level's second-stage strength graph and its two stage
     * interpolations served this build only: re-setup recomputes them from
     * the new values. At 7-point 256^3 they were a sixth of the device
     * hierarchy. (S and the splittings stay: they fix the patterns a
     * re-setup projects onto.) */
    ks_sparse_free(&L->S2);
    ks_sparse_free(&L->P1);
    ks_sparse_free(&L->P2);
    return KS_OK;
}

/* Forget X when it views a matrix's CSR, else free it. */
static void drop_sparse(ks_sparse *X, unsigned char *view)
{
    if (*view)
        memset(X, 0, sizeof *X);
    else
        ks_sparse_free(X);
    *view = 0;
}

/* Drop what build_transfer kept on a level that turned out to be the
 * coarsest. */
static void drop_transfer(ks_amg *amg, ks_amg_level *L)
{
    ks_sparse_free(&L->S);
    ks_sparse_free(&L->S2);
    ks_amg_free_array(amg, L->cf);
    ks_amg_free_array(amg, L->cf2);
    ks_amg_free_array(amg, L->agg);
    L->cf = L->cf2 = NULL;
    L->agg = NULL;
    L->nagg = 0;
    L->aggressive = 0;
    drop_sparse(&L->P, &L->P_view);
    drop_sparse(&L->R, &L->R_view);
    ks_sparse_free(&L->P1);
    ks_sparse_free(&L->P2);
}

static ks_error make_vec(ks_amg *amg, ks_int n, ks_vec **v)
{
    if (*v)
        return KS_OK;
    return ks_vec_create(amg->be, n, v);
}

void ks_amg_level_spmv_params(const ks_amg *amg, ks_spmv_params *sp)
{
    memset(sp, 0, sizeof *sp);
    sp->float_values = amg->prm.hierarchy_precision == KS_AMG_FLOAT;
}

static int gs_smoother(const ks_amg *amg)
{
    return amg->smoother == KS_SMOOTHER_GS || amg->smoother == KS_SMOOTHER_SGS;
}

/* M made from X (which it takes) in format fmt; X then views M's CSR. */
static ks_error level_matrix(ks_amg *amg, int l, const char *what, ks_sparse *X,
                             unsigned char *view, const char *fmt, const ks_spmv_params *sp,
                             ks_matrix **M)
{
    if (*M)
        return KS_OK;
    double t0 = ks_wtime();
    KS_TRY(ks_matrix_create_sparse(amg->be, X, fmt, sp, M));
    *X = *ks_matrix_sparse(*M);
    *view = 1;
    trace_since(amg, l, what, &t0);
    return KS_OK;
}

/* The cycle only applies P and R; when their formats keep float32 copies
 * (FLOAT) the float64 values would be a second copy of the level's
 * largest matrices (at 7-point 256^3 a sixth of the device hierarchy), so
 * they go until re-setup writes new ones. */
ks_error ks_amg_transfer_values(ks_amg_level *L, int keep)
{
    int rel = 0;
    if (keep) {
        if (L->Pm)
            KS_TRY(ks_matrix_acquire_values(L->Pm, &L->P.val));
        if (L->Rm)
            KS_TRY(ks_matrix_acquire_values(L->Rm, &L->R.val));
        return KS_OK;
    }
    if (L->Pm && L->P_view) {
        KS_TRY(ks_matrix_release_values(L->Pm, &rel));
        if (rel)
            L->P.val = NULL;
    }
    if (L->Rm && L->R_view) {
        KS_TRY(ks_matrix_release_values(L->Rm, &rel));
        if (rel)
            L->R.val = NULL;
    }
    return KS_OK;
}

/* Backend objects of level l: its matrix (l > 0), P and R (not on the
 * coarsest), work vectors. */
static ks_error upload_level(ks_amg *amg, int l)
{
    ks_amg_level *L = &amg->levels[l];
    ks_int n = L->A.nrows;
    const char *fmt = amg->prm.level_format[0] ? amg->prm.level_format : "auto";
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    /* Gauss-Seidel sweeps the caller's level-0 matrix in place of a copy,
     * and needs a format with the sweep, which "auto" might not pick. */
    const char *gs_fmt = gs_smoother(amg) ? ks_spmv_format_with_gs(amg->be->ops->kind) : NULL;
    double t0 = ks_wtime();
    if (l == 0 && sp.float_values && !gs_fmt && !amg->A0f) {
        /* the caller's matrix has the row statistics "auto" reads, if it
         * chose its format so: not counted again */
        KS_TRY(ks_matrix_create_view_of(L->Am, fmt, &sp, &amg->A0f));
        trace_since(amg, l, "float32 view of level 0's matrix", &t0);
    }
    if (l > 0) {
        KS_TRY(level_matrix(amg, l, "level matrix", &L->A, &L->A_view, gs_fmt ? gs_fmt : fmt,
                            &sp, &L->Am));
        L->own_Am = 1;
    }
    if (l < amg->nlevels - 1) {
        KS_TRY(level_matrix(amg, l, "P", &L->P, &L->P_view, fmt, &sp, &L->Pm));
        KS_TRY(level_matrix(amg, l, "R", &L->R, &L->R_view, fmt, &sp, &L->Rm));
        t0 = ks_wtime();
        KS_TRY(ks_amg_transfer_values(L, 0));
        trace_since(amg, l, "P and R float64 values released", &t0);
    }
    t0 = ks_wtime();
    if (l > 0) {
        KS_TRY(make_vec(amg, n, &L->x));
        KS_TRY(make_vec(amg, n, &L->b));
    }
    KS_TRY(make_vec(amg, n, &L->r));
    KS_TRY(make_vec(amg, n, &L->w));
    trace_since(amg, l, "work vectors", &t0);
    return KS_OK;
}

double ks_amg_level_bytes(const ks_amg *amg, int l)
{
    const ks_amg_level *L = &amg->levels[l];
    /* level 0's matrix is the caller's, not the hierarchy's */
    double b = (L->own_Am ? ks_matrix_memory_bytes(L->Am) : 0.0) +
               ks_matrix_memory_bytes(L->Pm) + ks_matrix_memory_bytes(L->Rm);
    if (l == amg->nlevels - 1)
        b += ks_matrix_memory_bytes(amg->coarse_inv);
    if (l == 0) /* the cycle's float32 copy (it shares level 0's CSR) */
        b += ks_matrix_memory_bytes(amg->A0f);
    return b;
}

static void complexities(ks_amg *amg)
{
    double rows = 0.0, nnz = 0.0;
    for (int l = 0; l < amg->nlevels; l++) {
        rows += amg->levels[l].A.nrows;
        nnz += amg->levels[l].A.nnz;
    }
    const ks_sparse *A0 = &amg->levels[0].A;
    amg->grid_complexity = A0->nrows ? rows / A0->nrows : 1.0;
    amg->operator_complexity = A0->nnz ? nnz / A0->nnz : 1.0;
}

/* Everything below level 0: levels, coarse solve, smoothers, the level
 * matrices. Shared by ks_amg_setup and re-setup's fallback. */
ks_error ks_amg_build(ks_amg *amg)
{
    const ks_amg_params *p = &amg->prm;
    /* Progress for a long setup, which otherwise prints nothing for
     * minutes: each level as its operator exists (host sizes, no sync). */
    double t_start = ks_wtime();
    int l = 0;
    amg->nlevels = 1;
    amg->sym0 = 0; /* level 0's estimate tells */
    for (;; l++) {
        /* the first levels' estimates beside the coarser levels' build,
         * which leaves the device idle between small kernels (level 0's
         * own steps keep it busy); level l's operator is final here */
        if (l == 1)
            ks_amg_spectral_start(amg);
        if (l >= 1)
            KS_TRY(ks_amg_spectral_give(amg, l));
        ks_amg_level *L = &amg->levels[l];
        if (p->print_setup_progress)
            ks_log(KS_LOG_INFO | KS_LOG_STDERR,
                   "AMG setup: level %d: %ld rows, %ld nonzeros, %.3f s\n", l, (long)L->A.nrows,
                   (long)L->A.nnz, ks_wtime() - t_start);
        KS_TRY(ks_amg_check_diagonal(amg, &L->A, l, "AMG needs a nonzero diagonal"));
        ks_int n = L->A.nrows;
        if (n <= p->coarse_max_rows || n <= p->min_coarse_rows || l >= p->max_levels - 1)
            break;
        int stalled = 0;
        ks_error e = build_transfer(amg, l, &stalled);
        if (e != KS_OK)
            return e;
        if (stalled) {
            drop_transfer(amg, L);
            break;
        }
        amg->nlevels = l + 2;
    }
    /* The coarse LU's host work overlaps the device work below. */
    KS_TRY(ks_amg_coarse_start(amg));
    ks_error e = KS_OK;
    double t0 = ks_wtime();
    for (l = 0; l < amg->nlevels && e == KS_OK; l++) {
        double t1 = ks_wtime();
        /* levels 1.. become formats' (which may rewrite them) only after
         * the side queue has read them; level 0's upload only reads */
        if (l == 1)
            ks_amg_spectral_finish(amg);
        e = upload_level(amg, l);
        if (e != KS_OK)
            e = ks_adderr(e, "AMG level %d: creating backend objects", l);
        else if (ks_amg_tracing() && amg->be->ops->sync(amg->be) == KS_OK)
            ks_amg_trace(l, "matrices and vectors of the level", ks_wtime() - t1);
    }
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    amg->phase_seconds[KS_AMG_PHASE_UPLOAD] += ks_wtime() - t0;

    t0 = ks_wtime();
    /* one synchronisation for all levels unless each is traced */
    for (l = 0; l < amg->nlevels && e == KS_OK; l++) {
        double t1 = ks_wtime();
        e = ks_amg_smoother_setup(amg, l);
        if (e == KS_OK && ks_amg_tracing()) {
            e = ks_backend_sync(amg->be);
            ks_amg_trace(l, "smoother setup", ks_wtime() - t1);
        }
    }
    if (e == KS_OK)
        e = ks_backend_sync(amg->be);
    amg->phase_seconds[KS_AMG_PHASE_SMOOTHER] += ks_wtime() - t0;
    if (e != KS_OK) {
        ks_amg_coarse_cancel(amg);
        return e;
    }
    KS_TRY(ks_amg_coarse_finish(amg));
    complexities(amg);
    if (p->print_setup_progress)
        ks_log(KS_LOG_INFO | KS_LOG_STDERR,
               "AMG setup: %d level%s, coarse solve and smoothers ready, %.3f s\n",
               amg->nlevels, amg->nlevels == 1 ? "" : "s", ks_wtime() - t_start);
    return KS_OK;
}

static void free_level(ks_amg *amg, ks_amg_level *L)
{
    drop_transfer(amg, L);
    drop_sparse(&L->A, &L->A_view); /* before the matrices that may own it */
    if (L->own_Am)
        ks_matrix_destroy(&L->Am);
    ks_matrix_destroy(&L->Pm);
    ks_matrix_destroy(&L->Rm);
    ks_amg_smoother_free(L);
    ks_vec_destroy(&L->x);
    ks_vec_destroy(&L->b);
    ks_vec_destroy(&L->r);
    ks_vec_destroy(&L->w);
    memset(L, 0, sizeof *L);
}

/* Free every level except level 0's view of the caller's matrix (re-setup
 * rebuilds from it). */
void ks_amg_clear(ks_amg *amg)
{
    ks_amg_spectral_cancel(amg);
    ks_amg_coarse_cancel(amg);
    ks_amg_graph_reset(amg);
    ks_amg_blocks_free(amg);
    if (!amg->levels)
        return;
    if (amg->dist_keep_free)
        amg->dist_keep_free(amg->dist_keep);
    amg->dist_keep = NULL;
    ks_matrix *Am0 = amg->levels[0].Am;
    for (int l = 0; l < amg->prm.max_levels; l++)
        free_level(amg, &amg->levels[l]);
    ks_dense_lu_free(&amg->lu);
    ks_matrix_destroy(&amg->coarse_inv);
    amg->coarse_inv = NULL;
    ks_matrix_destroy(&amg->A0f);
    amg->A0f = NULL;
    amg->sym0 = 0;
    amg->nlevels = 0;
    memset(amg->phase_seconds, 0, sizeof amg->phase_seconds);
    if (Am0)
        ks_amg_start(amg, Am0);
}

void ks_amg_start(ks_amg *amg, ks_matrix *A)
{
    ks_amg_level *L0 = &amg->levels[0];
    L0->Am = A;
    L0->A = *ks_matrix_sparse(A);
    L0->A_view = 1;
    amg->A0_id = ks_matrix_id(A);
}

ks_error ks_amg_check_matrix(const ks_amg *amg, ks_matrix *A)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "AMG setup: NULL matrix");
    if (ks_matrix_backend(A) != amg->be)
        return ks_seterr(KS_ERR_ARG, "AMG setup: the matrix lives on another backend object");
    if (ks_matrix_rows(A) != ks_matrix_cols(A))
        return ks_seterr(KS_ERR_SIZE, "AMG setup: matrix is %ld x %ld, must be square",
                         (long)ks_matrix_rows(A), (long)ks_matrix_cols(A));
    if (gs_smoother(amg)) {
        const char *name = ks_name_of(ks_amg_smoother_names, amg->smoother);
        if (!ks_spmv_format_with_gs(amg->be->ops->kind)) {
            char where[128];
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "smoother %s needs an SpMV format with a Gauss-Seidel sweep; the %s "
                             "backend has none (%s has one); use JACOBI_L1 or CHEBYSHEV",
                             name, ks_backend_name(amg->be), ks_spmv_gs_where(where, sizeof where));
        }
        if (!ks_matrix_has_gs_sweep(A))
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "smoother %s needs an SpMV format with a Gauss-Seidel sweep "
                             "(format '%s' has none); use format %s, or smoother JACOBI_L1 or "
                             "CHEBYSHEV",
                             name, ks_matrix_format(A), ks_spmv_format_with_gs(amg->be->ops->kind));
    }
    return KS_OK;
}

ks_error ks_amg_setup(ks_backend *be, const ks_amg_params *prm, ks_matrix *A, ks_amg **out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "ks_amg_setup: NULL output pointer");
    *out = NULL;
    if (!be || !prm)
        return ks_seterr(KS_ERR_ARG, "ks_amg_setup: NULL backend or parameters");
    KS_TRY(ks_amg_params_check(prm, NULL));
    ks_amg *amg = ks_calloc(1, sizeof *amg, "AMG hierarchy");
    if (!amg)
        return KS_ERR_MEMORY;
    amg->be = be;
    amg->prm = *prm;
    amg->smoother = prm->smoother.solver;
    ks_error e = ks_amg_check_matrix(amg, A);
    if (e == KS_OK) {
        amg->levels = ks_calloc((size_t)prm->max_levels, sizeof *amg->levels, "AMG levels");
        e = amg->levels ? KS_OK : KS_ERR_MEMORY;
    }
    if (e == KS_OK)
        e = ks_backend_sync(be);
    if (e != KS_OK) {
        free(amg->levels);
        free(amg);
        return e;
    }
    double t0 = ks_wtime();
    const size_t in_use = ks_backend_memory_in_use(be);
    ks_amg_start(amg, A);
    e = ks_amg_build(amg);
    if (e == KS_OK)
        e = ks_backend_sync(be);
    if (e == KS_OK && ks_backend_memory_in_use(be) > in_use)
        amg->bytes = (double)(ks_backend_memory_in_use(be) - in_use);
    if (e != KS_OK) {
        ks_amg_destroy(amg);
        return e;
    }
    amg->setup_seconds = ks_wtime() - t0;
    *out = amg;
    return KS_OK;
}

void ks_amg_destroy(ks_amg *amg)
{
    if (!amg)
        return;
    ks_amg_clear(amg);
    if (amg->levels)
        free_level(amg, &amg->levels[0]);
    ks_amg_exec_free(&amg->exec);
    free(amg->levels);
    free(amg->info);
    free(amg->prof_seconds);
    free(amg->prof_calls);
    free(amg);
}
