/* AMG setup: build the levels on the host with the steps of amg_impl.h,
 * then upload each level's operators as ks_matrix objects for the cycle.
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
#include "../sparse/cpu/csr_kernels.h"

#include <math.h>
#include <string.h>

const char *const ks_amg_phase_names[KS_AMG_NPHASES] = {
    "strength", "coarsening", "interpolation", "truncation",
    "RAP",      "coarse LU",  "smoother",      "upload",
};

/* A stalled coarsening keeps more than this fraction of the rows. */
#define KS_AMG_STALL_RATIO 0.9
/* Coarsest levels above coarse_max_rows still get the dense solve up to
 * this size (n^2 doubles: 32 MiB); beyond it the coarsest level is smoothed. */
#define KS_AMG_DENSE_LIMIT 2048

/* A nonzero, finite diagonal on every row: strength, interpolation and the
 * smoothers divide by it, and a zero would otherwise surface as NaNs. */
ks_error ks_amg_check_diagonal(const ks_csr *A, int l)
{
    for (ks_int i = 0; i < A->nrows; i++) {
        double d = 0.0;
        int found = 0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) {
                d = A->val[k];
                found = 1;
                break;
            }
        if (d == 0.0 || !isfinite(d))
            return ks_seterr(KS_ERR_NUMERIC,
                             "AMG level %d: %s diagonal at row %ld%s (AMG needs a nonzero "
                             "diagonal)",
                             l, d == 0.0 ? "zero" : "non-finite", (long)i,
                             found ? "" : " (no diagonal entry stored)");
    }
    return KS_OK;
}

static int is_aggregation(const ks_amg *amg)
{
    return amg->prm.algorithm == KS_AMG_AGGREGATION;
}

/* Time `call` into phase ph. */
#define PHASE(amg, ph, call)                                  \
    do {                                                      \
        double ph_t0_ = ks_wtime();                           \
        ks_error ph_e_ = (call);                              \
        (amg)->phase_seconds[ph] += ks_wtime() - ph_t0_;      \
        if (ph_e_ != KS_OK)                                   \
            return ks_adderr(ph_e_, "AMG level %d", l);       \
    } while (0)

/* Classical coarsening of A: strength and C/F splitting. */
static ks_error classical_split(ks_amg *amg, int l, const ks_csr *A, unsigned long long seed,
                                ks_strength *S, int **cf, ks_int *nc)
{
    const ks_amg_params *p = &amg->prm;
    PHASE(amg, KS_AMG_PHASE_STRENGTH,
          ks_amg_strength_classical(A, p->strength_threshold, p->max_row_sum, S));
    *cf = ks_malloc((size_t)A->nrows * sizeof **cf + 1, "AMG C/F splitting");
    if (!*cf)
        return KS_ERR_MEMORY;
    if (p->selector == KS_AMG_PMIS)
        PHASE(amg, KS_AMG_PHASE_COARSENING, ks_amg_pmis(S, seed, *cf, nc));
    else
        PHASE(amg, KS_AMG_PHASE_COARSENING,
              ks_amg_hmis_rows(S, seed, p->hmis_block_rows, *cf, nc));
    return KS_OK;
}

static int truncating(const ks_amg_params *p)
{
    return p->interp_max_elements > 0 || p->interp_truncation_factor > 0.0;
}

/* Classical interpolation (D1 or D2), truncated. */
ks_error ks_amg_classical_interp(ks_amg *amg, int l, const ks_csr *A, const ks_strength *S,
                                 const int *cf, int truncate, ks_csr *P)
{
    const ks_amg_params *p = &amg->prm;
    if (p->interpolator == KS_AMG_D1)
        PHASE(amg, KS_AMG_PHASE_INTERP, ks_amg_interp_direct(A, S, cf, P));
    else
        PHASE(amg, KS_AMG_PHASE_INTERP, ks_amg_interp_extended_i(A, S, cf, P));
    if (truncate && truncating(p))
        PHASE(amg, KS_AMG_PHASE_TRUNCATION,
              ks_amg_interp_truncate(P, p->interp_max_elements, p->interp_truncation_factor));
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
    ks_csr R1, A1;
    memset(&R1, 0, sizeof R1);
    memset(&A1, 0, sizeof A1);
    ks_error e = ks_amg_classical_interp(amg, l, &L->A, &L->S, L->cf, 1, &L->P1);
    double t0 = ks_wtime();
    if (e == KS_OK)
        e = ks_csr_transpose(&L->P1, &R1);
    if (e == KS_OK)
        e = ks_csr_rap(&R1, &L->A, &L->P1, &A1);
    amg->phase_seconds[KS_AMG_PHASE_RAP] += ks_wtime() - t0;
    ks_csr_free(&R1);
    if (e == KS_OK)
        e = classical_split(amg, l, &A1, p->seed + 1000003ULL * (unsigned long long)(l + 1),
                            &L->S2, &L->cf2, nc);
    if (e == KS_OK && stalls(*nc, n1)) {
        /* one stage only: the level is an ordinary one */
        L->P = L->P1;
        memset(&L->P1, 0, sizeof L->P1);
        ks_strength_free(&L->S2);
        free(L->cf2);
        L->cf2 = NULL;
        *nc = n1;
        ks_csr_free(&A1);
        return KS_OK;
    }
    if (e == KS_OK)
        e = ks_amg_classical_interp(amg, l, &A1, &L->S2, L->cf2, 1, &L->P2);
    ks_csr_free(&A1);
    if (e != KS_OK)
        return e;
    L->aggressive = 1;
    PHASE(amg, KS_AMG_PHASE_INTERP, ks_csr_spgemm(&L->P1, &L->P2, &L->P));
    if (truncating(p))
        PHASE(amg, KS_AMG_PHASE_TRUNCATION,
              ks_amg_interp_truncate(&L->P, p->interp_max_elements, p->interp_truncation_factor));
    return KS_OK;
}

/* Transfer operators and the next level's host matrix from level l.
 * *stalled = 1 (and nothing kept) when the level should be the coarsest. */
static ks_error build_transfer(ks_amg *amg, int l, int *stalled)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    const ks_amg_params *p = &amg->prm;
    ks_int n = L->A.nrows, nc = 0;
    *stalled = 0;

    if (is_aggregation(amg)) {
        /* Smoothed aggregation halves theta on every level (Vanek, Mandel,
         * Brezina 1996: eps_l = eps 0.5^l): the smoothed coarse operators
         * spread each row over more, weaker entries, and a fixed theta soon
         * finds no strong connection at all and coarsening stalls. */
        double theta = ldexp(p->strength_threshold, -l);
        PHASE(amg, KS_AMG_PHASE_STRENGTH, ks_amg_strength_symmetric(&L->A, theta, &L->S));
        L->agg = ks_malloc((size_t)n * sizeof *L->agg + 1, "AMG aggregates");
        if (!L->agg)
            return KS_ERR_MEMORY;
        PHASE(amg, KS_AMG_PHASE_COARSENING, ks_amg_aggregate(&L->S, L->agg, &L->nagg));
        nc = L->nagg;
        if (stalls(nc, n)) {
            *stalled = 1;
            return KS_OK;
        }
        ks_csr P0;
        memset(&P0, 0, sizeof P0);
        double rho = 0.0;
        PHASE(amg, KS_AMG_PHASE_INTERP, ks_amg_tentative_prolongator(n, L->agg, nc, &P0));
        double t0 = ks_wtime();
        ks_error e = ks_amg_spectral_radius_dinv_a(&L->A, 12, &rho);
        L->rho = rho;
        L->rho_valid = e == KS_OK; /* the Chebyshev smoother reuses it */
        if (e == KS_OK)
            e = ks_amg_smooth_prolongator(&L->A, &P0, rho, &L->P);
        amg->phase_seconds[KS_AMG_PHASE_INTERP] += ks_wtime() - t0;
        ks_csr_free(&P0);
        if (e != KS_OK)
            return ks_adderr(e, "AMG level %d: smoothed prolongator", l);
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
            KS_TRY(ks_amg_classical_interp(amg, l, &L->A, &L->S, L->cf, 1, &L->P));
    }
    PHASE(amg, KS_AMG_PHASE_RAP, ks_csr_transpose(&L->P, &L->R));
    PHASE(amg, KS_AMG_PHASE_RAP, ks_csr_rap(&L->R, &L->A, &L->P, &C->A));
    return KS_OK;
}

/* Let C be M's host CSR (freeing C's own arrays): see ks_amg_level. The
 * accessor's const only keeps users of the public API from writing; the
 * hierarchy does write C's values (re-setup), then ks_matrix_set_values. */
static void share_host(ks_csr *C, unsigned char *shared, const ks_matrix *M)
{
    if (*shared || !M)
        return;
    ks_csr_free(C);
    *C = *ks_matrix_host_csr(M);
    *shared = 1;
}

/* Forget C when it is a matrix's host CSR, else free it. */
static void drop_csr(ks_csr *C, unsigned char *shared)
{
    if (*shared)
        memset(C, 0, sizeof *C);
    else
        ks_csr_free(C);
    *shared = 0;
}

/* Drop what build_transfer kept on a level that turned out to be the
 * coarsest. */
static void drop_transfer(ks_amg_level *L)
{
    ks_strength_free(&L->S);
    ks_strength_free(&L->S2);
    free(L->cf);
    free(L->cf2);
    free(L->agg);
    L->cf = L->cf2 = NULL;
    L->agg = NULL;
    L->nagg = 0;
    L->aggressive = 0;
    drop_csr(&L->P, &L->P_shared);
    drop_csr(&L->R, &L->R_shared);
    ks_csr_free(&L->P1);
    ks_csr_free(&L->P2);
}

/* Dense LU of the coarsest level and its explicit inverse on the backend.
 * Re-setup calls it again with the new values (the inverse's pattern is
 * dense and fixed, so its matrix only gets new values). */
ks_error ks_amg_coarse_setup(ks_amg *amg)
{
    int l = amg->nlevels - 1;
    const ks_csr *A = &amg->levels[l].A;
    if (A->nrows == 0 || (A->nrows > amg->prm.coarse_max_rows && A->nrows > KS_AMG_DENSE_LIMIT))
        return KS_OK; /* smoothed instead (cycle.c) */
    double t0 = ks_wtime();
    ks_dense_lu_free(&amg->lu);
    ks_error e = ks_dense_lu_factor(A, &amg->lu);
    if (e != KS_OK)
        return ks_adderr(e, "AMG coarsest level %d (%ld rows)", l, (long)A->nrows);
    ks_csr inv;
    memset(&inv, 0, sizeof inv);
    e = ks_dense_lu_inverse_csr(&amg->lu, &inv);
    amg->phase_seconds[KS_AMG_PHASE_COARSE] += ks_wtime() - t0;
    if (e != KS_OK)
        return ks_adderr(e, "AMG coarsest level %d: explicit inverse", l);
    t0 = ks_wtime();
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    if (amg->coarse_inv)
        e = ks_matrix_set_values(amg->coarse_inv, inv.val);
    else
        e = ks_matrix_create(amg->be, &inv, "auto", &sp, &amg->coarse_inv);
    amg->phase_seconds[KS_AMG_PHASE_UPLOAD] += ks_wtime() - t0;
    ks_csr_free(&inv);
    if (e != KS_OK)
        return ks_adderr(e, "AMG coarsest level %d: uploading the inverse", l);
    return KS_OK;
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

/* Backend objects of level l: its matrix (l > 0), P and R (not on the
 * coarsest), work vectors. */
static ks_error upload_level(ks_amg *amg, int l)
{
    ks_amg_level *L = &amg->levels[l];
    ks_int n = L->A.nrows;
    const char *fmt = amg->prm.level_format[0] ? amg->prm.level_format : "auto";
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    /* Gauss-Seidel sweeps the caller's level-0 matrix in place of a copy. */
    int gs0 = amg->smoother == KS_SMOOTHER_GS || amg->smoother == KS_SMOOTHER_SGS;
    if (l == 0 && sp.float_values && !gs0 && !amg->A0f)
        KS_TRY(ks_matrix_create(amg->be, &L->A, fmt, &sp, &amg->A0f));
    if (l > 0 && !L->Am) {
        /* Gauss-Seidel needs the format's sweep, which "auto" might not pick. */
        int gs = amg->smoother == KS_SMOOTHER_GS || amg->smoother == KS_SMOOTHER_SGS;
        KS_TRY(ks_matrix_create(amg->be, &L->A, gs ? "csr" : fmt, &sp, &L->Am));
        L->own_Am = 1;
    }
    if (l > 0)
        share_host(&L->A, &L->A_shared, L->Am);
    if (l < amg->nlevels - 1) {
        if (!L->Pm)
            KS_TRY(ks_matrix_create(amg->be, &L->P, fmt, &sp, &L->Pm));
        share_host(&L->P, &L->P_shared, L->Pm);
        if (!L->Rm)
            KS_TRY(ks_matrix_create(amg->be, &L->R, fmt, &sp, &L->Rm));
        share_host(&L->R, &L->R_shared, L->Rm);
    }
    if (l > 0) {
        KS_TRY(make_vec(amg, n, &L->x));
        KS_TRY(make_vec(amg, n, &L->b));
    }
    KS_TRY(make_vec(amg, n, &L->r));
    KS_TRY(make_vec(amg, n, &L->w));
    return KS_OK;
}

/* CSR bytes with values of vbytes each (8, or 4 for float32 values). */
static double csr_bytes(const ks_csr *A, double vbytes)
{
    if (!A->rowptr)
        return 0.0;
    return (double)A->nnz * (vbytes + sizeof(ks_int)) + (double)(A->nrows + 1) * sizeof(ks_int);
}

/* Bytes of matrix C (M's entries) where the level lives: on cuda the
 * device CSR, values float32 or float64; on the cpu the host CSR (float64
 * values) plus the float32 copy the cpu csr state keeps with float_values. */
static double matrix_bytes(const ks_matrix *M, const ks_csr *C)
{
    const int f = M && M->params.float_values;
    if (M && M->be->ops->kind == KS_BACKEND_CUDA)
        return csr_bytes(C, f ? 4.0 : 8.0);
    return csr_bytes(C, 8.0) + (f && C->rowptr ? 4.0 * (double)C->nnz : 0.0);
}

double ks_amg_level_bytes(const ks_amg *amg, int l)
{
    const ks_amg_level *L = &amg->levels[l];
    double b = matrix_bytes(L->Am, &L->A) + matrix_bytes(L->Pm, &L->P) +
               matrix_bytes(L->Rm, &L->R);
    if (l == amg->nlevels - 1 && amg->coarse_inv)
        b += matrix_bytes(amg->coarse_inv, ks_matrix_host_csr(amg->coarse_inv));
    if (l == 0 && amg->A0f) /* the cycle's float32 copy */
        b += matrix_bytes(amg->A0f, &L->A);
    return b;
}

static void complexities(ks_amg *amg)
{
    double rows = 0.0, nnz = 0.0;
    for (int l = 0; l < amg->nlevels; l++) {
        rows += amg->levels[l].A.nrows;
        nnz += amg->levels[l].A.nnz;
    }
    const ks_csr *A0 = &amg->levels[0].A;
    amg->grid_complexity = A0->nrows ? rows / A0->nrows : 1.0;
    amg->operator_complexity = A0->nnz ? nnz / A0->nnz : 1.0;
}

/* Everything after level 0's host copy: levels, coarse solve, smoothers,
 * uploads. Shared by ks_amg_setup and re-setup's fallback. */
ks_error ks_amg_build(ks_amg *amg)
{
    const ks_amg_params *p = &amg->prm;
    int l = 0;
    amg->nlevels = 1;
    for (;; l++) {
        ks_amg_level *L = &amg->levels[l];
        KS_TRY(ks_amg_check_diagonal(&L->A, l));
        ks_int n = L->A.nrows;
        if (n <= p->coarse_max_rows || n <= p->min_coarse_rows || l >= p->max_levels - 1)
            break;
        int stalled = 0;
        ks_error e = build_transfer(amg, l, &stalled);
        if (e != KS_OK)
            return e;
        if (stalled) {
            drop_transfer(L);
            break;
        }
        amg->nlevels = l + 2;
    }
    KS_TRY(ks_amg_coarse_setup(amg));

    double t0 = ks_wtime();
    for (l = 0; l < amg->nlevels; l++) {
        ks_error e = upload_level(amg, l);
        if (e != KS_OK)
            return ks_adderr(e, "AMG level %d: creating backend objects", l);
    }
    KS_TRY(ks_backend_sync(amg->be));
    amg->phase_seconds[KS_AMG_PHASE_UPLOAD] += ks_wtime() - t0;

    t0 = ks_wtime();
    for (l = 0; l < amg->nlevels; l++)
        KS_TRY(ks_amg_smoother_setup(amg, l));
    KS_TRY(ks_backend_sync(amg->be));
    amg->phase_seconds[KS_AMG_PHASE_SMOOTHER] += ks_wtime() - t0;
    complexities(amg);
    return KS_OK;
}

static void free_level(ks_amg_level *L)
{
    drop_transfer(L);
    drop_csr(&L->A, &L->A_shared); /* before the matrices that may own it */
    if (L->own_Am)
        ks_matrix_destroy(L->Am);
    ks_matrix_destroy(L->Pm);
    ks_matrix_destroy(L->Rm);
    ks_amg_smoother_free(L);
    ks_vec_destroy(L->x);
    ks_vec_destroy(L->b);
    ks_vec_destroy(L->r);
    ks_vec_destroy(L->w);
    memset(L, 0, sizeof *L);
}

/* Free every level except level 0's host copy and matrix pointer (re-setup
 * fallback rebuilds from them). */
void ks_amg_clear(ks_amg *amg)
{
    ks_amg_graph_reset(amg);
    if (!amg->levels)
        return;
    ks_csr A0 = amg->levels[0].A;
    ks_matrix *Am0 = amg->levels[0].Am;
    memset(&amg->levels[0].A, 0, sizeof A0);
    for (int l = 0; l < amg->prm.max_levels; l++)
        free_level(&amg->levels[l]);
    amg->levels[0].A = A0;
    amg->levels[0].Am = Am0;
    ks_dense_lu_free(&amg->lu);
    ks_matrix_destroy(amg->coarse_inv);
    amg->coarse_inv = NULL;
    ks_matrix_destroy(amg->A0f);
    amg->A0f = NULL;
    amg->nlevels = 0;
    memset(amg->phase_seconds, 0, sizeof amg->phase_seconds);
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
    if (amg->smoother == KS_SMOOTHER_GS || amg->smoother == KS_SMOOTHER_SGS) {
        if (amg->be->ops->kind != KS_BACKEND_CPU)
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "smoother %s needs the cpu backend; use JACOBI_L1 or CHEBYSHEV",
                             ks_name_of(ks_amg_smoother_names, amg->smoother));
        if (!A->ops->gs_sweep)
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "smoother %s needs an SpMV format with a Gauss-Seidel sweep "
                             "(format '%s' has none); use format csr, or smoother JACOBI_L1 or "
                             "CHEBYSHEV",
                             ks_name_of(ks_amg_smoother_names, amg->smoother), ks_matrix_format(A));
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
    amg->levels[0].Am = A;
    e = ks_csr_copy(ks_matrix_host_csr(A), &amg->levels[0].A);
    if (e == KS_OK)
        e = ks_amg_build(amg);
    if (e == KS_OK)
        e = ks_backend_sync(be);
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
        ks_csr_free(&amg->levels[0].A);
    free(amg->levels);
    free(amg->info);
    free(amg->prof_seconds);
    free(amg->prof_calls);
    free(amg);
}
