/* The distributed AMG setup: the serial driver's level loop (amg/hierarchy.c)
 * over the distributed pieces, with the same stopping rules on global
 * sizes:
 *
 *   strength -> PMIS | HMIS -> coarse ids -> D1 | extended+i -> truncation
 *   [-> aggressive second stage, P = P1 P2 (aggressive_dist.c)]
 *   -> R = P^T -> Ac = R A P (rows at the coarse points' owners)
 *   ... coarse inverse, smoother data; [FLOAT: the cycle's operators
 *   remade with float32 blocks (float_hierarchy)]
 *
 * Each level's A, P and R become distributed ks_matrix objects (P and R
 * with a column layout of their own), so the cycle of amg/cycle.c runs on
 * them unchanged: every SpMV exchanges its halo, every reduction adds the
 * ranks' parts in rank order. With PMIS the splitting, P and the coarse
 * rows equal the serial ones on the global matrix (the pieces are tested
 * so), hence the hierarchy is the one-process hierarchy, the same on every
 * run; HMIS's splitting depends on the partition (hmis_dist.c).
 *
 * On the cuda backend the operators are built where they live, by the
 * sparse table and the AMG kernel table (docs/mpi.md, "Distributed AMG on
 * cuda"): the strength on the blocks, the interpolation on a local system
 * assembled on the device (interp_local.c), P split there from the rows the
 * device built (ks_amg_dist_transfer_matrix), R = P^T from P's local block
 * transposed there and the other ranks' entries
 * (ks_amg_dist_transpose_matrix), both local products of the Galerkin
 * product on device operands and the coarse matrix split there
 * (rap_dist.c), the smoother data by the kernel table
 * (amg_dist_smoother.c). The host keeps what needs the ranks' numbering:
 * PMIS on the strength's host copy, the rows other ranks fetch (few), P's
 * rows with global columns, and the messages. The products give the cpu's
 * bits (with KS_SPGEMM=cusparse: to rounding), so the hierarchy is the
 * distributed cpu one.
 *
 * Every step that can fail on some ranks only ends in ks_comm_agree, so a
 * failure is every rank's and no rank waits alone in a collective. */
#include "amg_dist_setup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int gs_smoother(const ks_amg_params *p)
{
    return p->smoother.solver == KS_SMOOTHER_GS || p->smoother.solver == KS_SMOOTHER_SGS;
}

/* The levels' matrices' format: one with a Gauss-Seidel sweep for GS and
 * SGS (as serially), else the transfers' (prm.level_format or "auto"). */
static const char *level_matrix_format(const ks_amg *amg)
{
    return gs_smoother(&amg->prm) ? ks_spmv_format_with_gs(amg->be->ops->kind)
                                  : ks_amg_dist_level_format(amg);
}

/* The caller's matrix's local block sweeps for GS and SGS; a backend
 * without a sweeping format (cuda) refuses them, as serially. The answer
 * is agreed. */
static ks_error check_gs(const ks_backend *be, const ks_amg_params *p, const ks_matrix *A)
{
    if (!gs_smoother(p))
        return KS_OK;
    const char *name = p->smoother.solver == KS_SMOOTHER_GS ? "GS" : "SGS";
    const char *fmt = ks_spmv_format_with_gs(be->ops->kind);
    if (!fmt)
        return ks_seterr(KS_ERR_UNSUPPORTED, "AMG on a distributed matrix: smoother %s needs an "
                         "SpMV format with a Gauss-Seidel sweep; the %s backend has none; use "
                         "JACOBI_L1 or CHEBYSHEV", name, ks_backend_name(be));
    if (!ks_matrix_has_gs_sweep(A))
        return ks_seterr(KS_ERR_UNSUPPORTED, "AMG on a distributed matrix: smoother %s sweeps "
                         "the matrix's local block, whose format '%s' has no Gauss-Seidel "
                         "sweep; make the matrix with format %s, or use JACOBI_L1 or CHEBYSHEV",
                         name, ks_matrix_format(A->dist->local), fmt);
    return KS_OK;
}

/* Every row of level l has a nonzero finite diagonal, on every rank; the
 * message names the global row. */
ks_error ks_amg_dist_check_diagonal(ks_amg *amg, int l)
{
    const ks_amg_level *L = &amg->levels[l];
    ks_int bad;
    double d;
    int stored;
    ks_error e = ks_amgk_check_diagonal(&amg->exec, &L->A, &bad, &d, &stored);
    if (e == KS_OK && bad < L->A.nrows)
        e = ks_seterr(KS_ERR_NUMERIC, "AMG level %d: %s diagonal at global row %lld%s (AMG "
                      "needs a nonzero diagonal)", l, d == 0.0 ? "zero" : "non-finite",
                      (long long)(ks_matrix_row_begin(L->Am) + bad),
                      stored ? "" : " (no diagonal entry stored)");
    return ks_matrix_agree(L->Am, e);
}

int ks_amg_dist_agglomerate_rows = -1;

/* The rows a rank below which a coarse grid moves onto fewer ranks. On a
 * GPU a small level's products take a few microseconds while each halo
 * exchange costs tens (a kernel, a message, events), so levels of up to
 * tens of thousands of rows a rank are cheaper on fewer GPUs; a cpu
 * core's products are slow enough that only tiny levels gain. */
static ks_error agglomerate_rows(const ks_backend *be, long *rows)
{
    *rows = ks_backend_host_memory(be) ? KS_AMG_DIST_AGGLOMERATE_ROWS
                                       : KS_AMG_DIST_AGGLOMERATE_ROWS_DEVICE;
    if (ks_amg_dist_agglomerate_rows >= 0) {
        *rows = ks_amg_dist_agglomerate_rows;
        return KS_OK;
    }
    const char *v = getenv("KS_AMG_DIST_AGGLOMERATE");
    if (!v || !v[0])
        return KS_OK;
    char *end = NULL;
    const long r = strtol(v, &end, 10);
    if (*end || r < 0)
        return ks_seterr(KS_ERR_ARG, "KS_AMG_DIST_AGGLOMERATE=%s: expected a row count >= 0 "
                         "(0: never agglomerate)", v);
    *rows = r;
    return KS_OK;
}

/* Agglomeration: when the coarse grid averages fewer than
 * agglomerate_rows(be) rows over the ranks holding C points, it
 * moves onto q = nc / that many ranks (at least one): even blocks on
 * ranks 0 .. q-1, the others keep no row of it or of the levels below.
 * The global numbering stays, so this only changes P's coarse layout,
 * before the Galerkin product: RAP and the transpose then send the coarse
 * rows straight to their new owners, and every sum keeps its order (fine
 * rows in global order), so the operators keep their bits. Small levels
 * are latency-bound: fewer ranks mean fewer neighbours per halo exchange
 * (the ranks without rows still join the reductions). *q: the ranks that
 * hold the coarse grid now (0: P's layout kept). */
static ks_error agglomerate(const ks_comm *c, const ks_backend *be, ks_dist_prows *P, int *q)
{
    const int p = c->size, me = c->rank;
    long rows = 0;
    *q = 0;
    KS_TRY(ks_comm_agree(c, agglomerate_rows(be, &rows)));
    if (rows <= 0 || p == 1)
        return KS_OK;
    ks_gint *coff = NULL;
    const ks_error e = ks_comm_agree(c, ks_layout_gather(c, P->nc, &coff));
    if (e != KS_OK) {
        free(coff);
        return e;
    }
    int holders = 0;
    for (int r = 0; r < p; r++)
        holders += coff[r + 1] > coff[r];
    free(coff);
    ks_gint want = P->nc_global / rows;
    if (want < 1)
        want = 1;
    if (want >= holders)
        return KS_OK;
    ks_gint begin = P->nc_global, count = 0;
    if (me < want)
        ks_layout_even(P->nc_global, (int)want, me, &begin, &count);
    P->c_begin = begin;
    P->nc = (ks_int)count;
    ks_dist_prows_drop_dev(P); /* its columns' map was the old layout's */
    *q = (int)want;
    return KS_OK;
}

/* R = P^T made as a distributed matrix from P's (ks_amg_dist_transpose_matrix)
 * and read by R (A P) as that: on a device, where it spares R's host rows
 * and their uploads. The host keeps the threaded host transpose;
 * KS_AMG_DIST_R=matrix takes the matrix path there too (a test runs the
 * device path's logic on the cpu so). */
static int r_as_matrix(const ks_backend *be)
{
    const char *v = getenv("KS_AMG_DIST_R");
    return !ks_backend_host_memory(be) || (v && strcmp(v, "matrix") == 0);
}

/* The transfer of level l and level l + 1's matrix. *stalled = 1 (nothing
 * kept) when the coarsening stalls: level l is then the coarsest. */
static ks_error build_level(ks_amg *amg, int l, int *stalled)
{
    ks_amg_level *L = &amg->levels[l], *C = &amg->levels[l + 1];
    const ks_amg_params *p = &amg->prm;
    ks_matrix *A = L->Am;
    const ks_comm *c = ks_matrix_comm(A);
    const ks_gint *foff = A->dist->offsets;
    ks_dist_prows P, R;
    ks_dist_split Ac; /* the coarse rows as the blocks of a distributed matrix */
    memset(&R, 0, sizeof R);
    memset(&Ac, 0, sizeof Ac);
    ks_gint *coff = NULL;

    /* the serial driver's seed of level l, so the splitting is its own */
    ks_dist_level_keep *K = ks_amg_dist_keep_level(amg, l);
    ks_error e = p->algorithm == KS_AMG_AGGREGATION
                     ? ks_amg_dist_aggregation_p(amg, l, A, stalled, &P, K)
                     : ks_amg_dist_classical_p_keep(amg, l, A, p->seed + (unsigned long long)l,
                                                    p->interpolator, stalled, &P, K);
    if (e == KS_OK && *stalled)
        goto done;
    double t = ks_wtime();
    if (e == KS_OK && l < p->aggressive_levels)
        e = ks_amg_dist_aggressive(amg, l, A, &P, K);
    int q = 0;
    if (e == KS_OK)
        e = agglomerate(c, amg->be, &P, &q);
    if (e == KS_OK && q > 0 && ks_amg_tracing() && c->rank == 0)
        ks_log((ks_log_level() >= KS_LOG_DEBUG ? KS_LOG_DEBUG : KS_LOG_INFO) | KS_LOG_STDERR,
               "ksolve AMG level %d: the coarse grid (%lld rows) moves onto %d rank%s\n", l + 1,
               (long long)P.nc_global, q, q == 1 ? "" : "s");
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_layout_gather(c, P.nc, &coff));
    double t_sub = ks_wtime();
    if (r_as_matrix(amg->be)) {
        /* On a device: P's matrix first, R's local block its local block's
         * transpose there, and R (A P) reads R's rows where they live */
        if (e == KS_OK)
            e = ks_amg_dist_transfer_matrix(amg, &P, foff, coff, &L->Pm);
        ks_amg_dist_substep(c, "P as a distributed matrix", &t_sub);
        if (e == KS_OK)
            e = ks_amg_dist_transpose_matrix(amg, &P, foff, coff, L->Pm, &L->Rm);
        ks_amg_dist_substep(c, "R as a distributed matrix", &t_sub);
        if (e == KS_OK)
            e = ks_dist_rap_split_m(A, &P, L->Rm, &Ac);
        ks_dist_prows_drop_dev(&P); /* the matrix and the product have read them */
        ks_amg_dist_phase(amg, l, KS_AMG_PHASE_RAP, "distributed transpose and RAP", &t);
        t_sub = t;
    } else {
        if (e == KS_OK)
            e = ks_dist_prows_transpose(&P, foff, coff, &R);
        ks_amg_dist_substep(c, "transpose P", &t_sub);
        if (e == KS_OK)
            e = ks_dist_rap_split(A, &P, &R, &Ac);
        ks_amg_dist_phase(amg, l, KS_AMG_PHASE_RAP, "distributed transpose and RAP", &t);
        t_sub = t;
        if (e == KS_OK)
            e = ks_amg_dist_transfer_matrix(amg, &P, foff, coff, &L->Pm);
        ks_amg_dist_substep(c, "P as a distributed matrix", &t_sub);
        if (e == KS_OK)
            e = ks_amg_dist_transfer_matrix(amg, &R, coff, foff, &L->Rm);
        ks_amg_dist_substep(c, "R as a distributed matrix", &t_sub);
    }
    if (e == KS_OK) { /* square over P's coarse layout; no entry order: the AMG sets no values */
        ks_gint *ro = ks_layout_copy(c, coff);
        e = ks_comm_agree(c, ro ? KS_OK : KS_ERR_MEMORY);
        if (e == KS_OK)
            e = ks_dist_matrix_from_split(amg->be, c, ro, NULL, &Ac, level_matrix_format(amg),
                                          NULL, &C->Am);
        else
            free(ro);
    }
    ks_amg_dist_substep(c, "coarse matrix as a distributed matrix", &t_sub);
    if (e == KS_OK) {
        /* views of the matrices' local blocks: what sizes and reports read */
        L->P = *ks_matrix_sparse(L->Pm);
        L->R = *ks_matrix_sparse(L->Rm);
        L->P_view = L->R_view = 1;
        C->A = *ks_matrix_sparse(C->Am);
        C->A_view = 1;
        C->own_Am = 1;
    }
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_UPLOAD, "distributed P, R and coarse matrix", &t);
    if (e == KS_OK && K) { /* P's pattern and layout, for a re-setup */
        K->P = P;
        K->coff = coff;
        memset(&P, 0, sizeof P);
        coff = NULL;
    }
done:
    free(coff);
    ks_dist_split_free(&Ac);
    ks_dist_prows_free(&R);
    ks_dist_prows_free(&P);
    return e == KS_OK ? KS_OK : ks_adderr(e, "AMG level %d (distributed)", l);
}

/* Each level's global sizes (for the reports, which may run on one rank
 * only, so they are summed here) and the complexities from them. */
static ks_error global_sizes(ks_amg *amg)
{
    const ks_comm *c = ks_matrix_comm(amg->levels[0].Am);
    const int nl = amg->nlevels;
    ks_gint *v = ks_calloc(4 * (size_t)nl, sizeof *v, "AMG level sizes");
    ks_error e = ks_comm_agree(c, v ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK) {
        free(v);
        return e;
    }
    for (int l = 0; l < nl; l++) {
        const ks_amg_level *L = &amg->levels[l];
        v[4 * l] = L->Am->A.nrows;
        v[4 * l + 1] = ks_matrix_nnz(L->Am);
        v[4 * l + 2] = L->Pm ? ks_matrix_nnz(L->Pm) : 0;
        v[4 * l + 3] = L->Rm ? ks_matrix_nnz(L->Rm) : 0;
    }
    e = ks_comm_sum_gint(c, v, 4 * nl);
    double rows = 0.0, nnz = 0.0;
    for (int l = 0; l < nl && e == KS_OK; l++) {
        ks_amg_level *L = &amg->levels[l];
        L->rows_global = v[4 * l];
        L->nnz_global = v[4 * l + 1];
        L->p_nnz_global = v[4 * l + 2];
        L->r_nnz_global = v[4 * l + 3];
        rows += (double)L->rows_global;
        nnz += (double)L->nnz_global;
    }
    free(v);
    KS_TRY(e);
    amg->ranks = c->size;
    const ks_amg_level *L0 = &amg->levels[0];
    amg->grid_complexity = L0->rows_global ? rows / (double)L0->rows_global : 1.0;
    amg->operator_complexity = L0->nnz_global ? nnz / (double)L0->nnz_global : 1.0;
    return KS_OK;
}

static ks_error level_vectors(ks_amg_level *L, int l)
{
    ks_error e = KS_OK;
    if (l > 0 && e == KS_OK && !L->x)
        e = ks_matrix_vec_create(L->Am, &L->x);
    if (l > 0 && e == KS_OK && !L->b)
        e = ks_matrix_vec_create(L->Am, &L->b);
    if (e == KS_OK && !L->r)
        e = ks_matrix_vec_create(L->Am, &L->r);
    if (e == KS_OK && !L->w)
        e = ks_matrix_vec_create(L->Am, &L->w);
    return ks_matrix_agree(L->Am, e);
}

/* On a backend without host memory the pieces read host copies of the
 * levels (ks_matrix_host_csr), which the cycle does not need: freed, but
 * level 0's, which belongs to the caller's matrix (a re-setup reads it
 * again). */
void ks_amg_dist_drop_host_copies(ks_amg *amg)
{
    if (ks_backend_host_memory(amg->be))
        return;
    for (int l = 0; l < amg->nlevels; l++) {
        ks_amg_level *L = &amg->levels[l];
        if (l > 0)
            ks_matrix_host_csr_free(L->Am);
        ks_matrix_host_csr_free(L->Pm);
        ks_matrix_host_csr_free(L->Rm);
    }
    ks_matrix_host_csr_free(amg->coarse_inv);
}

/* *M (owned) replaced by its copy with float32 values (recast). */
static ks_error to_float(ks_matrix **M, const char *fmt, const ks_spmv_params *sp)
{
    ks_matrix *f = NULL;
    KS_TRY(ks_dist_matrix_recast(*M, fmt, sp, &f));
    ks_matrix_destroy(M);
    *M = f;
    return KS_OK;
}

/* hierarchy_precision FLOAT, as the serial upload does it: once the
 * hierarchy and the smoothers' data are built from the float64 values,
 * the operators the cycle applies (level 0's copy for the cycle, the
 * coarse levels' matrices, P, R, the coarse inverse) get float32 values
 * in their local and ghost blocks; the float64 coarse operators go (the
 * Krylov method keeps the caller's level 0). */
static ks_error float_hierarchy(ks_amg *amg)
{
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    if (!sp.float_values)
        return KS_OK;
    const char *fmt = ks_amg_dist_level_format(amg);
    /* Gauss-Seidel sweeps the caller's level 0 (as serially: no copy) */
    if (!gs_smoother(&amg->prm))
        KS_TRY(ks_dist_matrix_recast(amg->levels[0].Am, fmt, &sp, &amg->A0f));
    for (int l = 0; l < amg->nlevels; l++) {
        ks_amg_level *L = &amg->levels[l];
        if (l > 0) {
            KS_TRY(to_float(&L->Am, level_matrix_format(amg), &sp));
            L->A = *ks_matrix_sparse(L->Am);
            ks_amg_dist_keep_rebind(amg, l); /* its S borrowed the float64 matrix's plan */
        }
        if (L->Pm) {
            KS_TRY(to_float(&L->Pm, fmt, &sp));
            KS_TRY(to_float(&L->Rm, fmt, &sp));
            L->P = *ks_matrix_sparse(L->Pm);
            L->R = *ks_matrix_sparse(L->Rm);
        }
    }
    return ks_amg_dist_float_coarse_inv(amg);
}

ks_error ks_amg_dist_float_coarse_inv(ks_amg *amg)
{
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    if (!sp.float_values || !amg->coarse_inv)
        return KS_OK;
    return to_float(&amg->coarse_inv, "auto", &sp);
}

ks_error ks_amg_dist_build(ks_amg *amg)
{
    const ks_amg_params *p = &amg->prm;
    const ks_comm *c = ks_matrix_comm(amg->levels[0].Am);
    const double t_start = ks_wtime();
    ks_amg_dist_trace_start();
    KS_TRY(ks_amg_dist_keep_start(amg));
    amg->nlevels = 1;
    amg->sym0 = 0; /* level 0's estimate tells */
    for (int l = 0;; l++) {
        ks_amg_level *L = &amg->levels[l];
        const ks_gint n = ks_matrix_global_rows(L->Am);
        if (p->print_setup_progress && c->rank == 0)
            ks_log(KS_LOG_INFO | KS_LOG_STDERR,
                   "AMG setup: level %d: %lld rows over %d ranks, %.3f s\n", l, (long long)n,
                   c->size, ks_wtime() - t_start);
        KS_TRY(ks_amg_dist_check_diagonal(amg, l));
        if (n <= p->coarse_max_rows || n <= p->min_coarse_rows || l >= p->max_levels - 1)
            break;
        int stalled = 0;
        KS_TRY(build_level(amg, l, &stalled));
        if (stalled)
            break;
        amg->nlevels = l + 2;
    }
    double t = ks_wtime();
    KS_TRY(ks_amg_dist_coarse_setup(amg));
    ks_amg_dist_phase(amg, amg->nlevels - 1, KS_AMG_PHASE_COARSE,
                      "gathered coarse LU and inverse", &t);
    for (int l = 0; l < amg->nlevels; l++)
        KS_TRY(level_vectors(&amg->levels[l], l));
    ks_amg_dist_phase(amg, 0, KS_AMG_PHASE_UPLOAD, "work vectors", &t);
    for (int l = 0; l < amg->nlevels; l++)
        KS_TRY(ks_amg_dist_smoother_setup(amg, l));
    ks_amg_dist_phase(amg, 0, KS_AMG_PHASE_SMOOTHER, "smoother setup", &t);
    KS_TRY(global_sizes(amg));
    KS_TRY(float_hierarchy(amg));
    ks_amg_dist_phase(amg, 0, KS_AMG_PHASE_UPLOAD, "float32 operators", &t);
    ks_amg_dist_drop_host_copies(amg);
    if (p->print_setup_progress && c->rank == 0)
        ks_log(KS_LOG_INFO | KS_LOG_STDERR,
               "AMG setup: %d level%s, coarse solve and smoothers ready, %.3f s\n",
               amg->nlevels, amg->nlevels == 1 ? "" : "s", ks_wtime() - t_start);
    return KS_OK;
}

ks_matrix *ks_amg_dist_one_rank_block(ks_matrix *A)
{
    if (!A || !ks_matrix_distributed(A) || ks_matrix_comm(A)->size != 1 || A->dist->col_offsets ||
        (A->dist->ghost && ks_matrix_nnz(A->dist->ghost) > 0))
        return NULL;
    const char *v = getenv("KS_AMG_ONE_RANK");
    return v && strcmp(v, "distributed") == 0 ? NULL : A->dist->local;
}

ks_error ks_amg_setup_dist(ks_backend *be, const ks_amg_params *prm, ks_matrix *A, ks_amg **out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "ks_amg_setup_dist: NULL output pointer");
    *out = NULL;
    if (!A || !ks_matrix_distributed(A))
        return ks_seterr(KS_ERR_ARG, "ks_amg_setup_dist: the matrix is not distributed");
    ks_error e = KS_OK;
    if (!be || !prm)
        e = ks_seterr(KS_ERR_ARG, "ks_amg_setup_dist: NULL backend or parameters");
    else if (ks_matrix_backend(A) != be)
        e = ks_seterr(KS_ERR_ARG, "AMG setup: the matrix lives on another backend object");
    if (e == KS_OK)
        e = ks_amg_params_check(prm, NULL);
    if (e == KS_OK)
        e = check_gs(be, prm, A);
    ks_amg *amg = NULL;
    if (e == KS_OK) {
        amg = ks_calloc(1, sizeof *amg, "AMG hierarchy");
        if (amg)
            amg->levels = ks_calloc((size_t)prm->max_levels, sizeof *amg->levels, "AMG levels");
        e = amg && amg->levels ? KS_OK : KS_ERR_MEMORY;
    }
    e = ks_matrix_agree(A, e);
    if (e != KS_OK) {
        if (amg)
            free(amg->levels);
        free(amg);
        return e;
    }
    amg->be = be;
    amg->prm = *prm;
    amg->smoother = prm->smoother.solver;
    const double t0 = ks_wtime();
    const size_t in_use = ks_backend_memory_in_use(be);
    ks_amg_start(amg, A);
    e = ks_amg_dist_build(amg);
    if (e != KS_OK) {
        ks_amg_destroy(amg);
        return e;
    }
    if (ks_backend_memory_in_use(be) > in_use)
        amg->bytes = (double)(ks_backend_memory_in_use(be) - in_use);
    amg->setup_seconds = ks_wtime() - t0;
    *out = amg;
    return KS_OK;
}
