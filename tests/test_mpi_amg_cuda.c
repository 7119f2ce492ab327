/* Distributed AMG on the cuda backend, under mpirun on 1 and 2 ranks
 * (tests/meson.build; every rank may share one GPU). For each problem and
 * configuration (the default PCG + AMG, and PMIS with D1 / JACOBI_L1 and
 * D2 / JACOBI with a W cycle, small coarsest levels so that coarse levels
 * move onto fewer ranks), four solves of the same system:
 *   - the float64 reference: one process, cpu backend;
 *   - one process on cuda (ks_amg_setup's device setup);
 *   - distributed on cpu (mpi/amg_dist_setup.c);
 *   - distributed on cuda (the same setup, the operators on the device).
 * Checked: every solve converges; the distributed cuda solve's iterations
 * within 2 of the one-process cuda solve and of the distributed cpu solve;
 * its hierarchy the distributed cpu one (levels, global rows and nonzeros
 * of A, P and R: the setup runs the same host pieces); x within 1e-7 (of
 * max |x|) of the reference and within 1e-8 relative (2-norm) of the
 * one-process cuda solve's x (the same PMIS hierarchy, so the two runs
 * differ by rounding only), the true residual reached; a second solve
 * with the same iterations; with more than one rank, halo exchanges
 * counted with their time and bytes. HMIS, aggregation, aggressive
 * coarsening and FLOAT hierarchies (compare_cpu): the distributed cuda
 * solve against the distributed cpu solve of the same options and
 * partition, iteration for iteration. A values-only re-setup on cuda
 * against the same on the cpu (compare_resetup), also with aggressive
 * coarsening, FLOAT and aggregation and the pcg_amg_gpu.json-like
 * configuration. The distributed strength on the device against the
 * cpu's (test_dist_strength), and so the distributed spectral estimate
 * (test_dist_spectral). Skipped, with the reason printed,
 * unless every rank has a CUDA device. Rank 0 prints each case's numbers. */
#include "ks_test_mpi.h"
#include "ksolve_mpi.h"
#include "mpi/amg_dist.h"     /* ks_dist_strength_classical; ks_halo_stage_always */
#include "mpi/rap_dist.h"     /* ks_local_spgemm */
#include "mpi/amg_dist_setup.h" /* ks_dist_spectral_radius_sym */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ks_backend *cuda;
static int have_cuda;
static char cuda_err[256]; /* why the backend could not be made, on this rank */

/* The cuda backend exists on every rank (made in suite()). */
static void need_cuda(void)
{
    ALL(cuda != NULL, "ks_backend_create(\"cuda\") failed on a rank with a device: %s",
        cuda_err);
}

static void generate(ks_gen_kind kind, int n, ks_csr *A)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = kind;
    g.nx = g.ny = g.nz = n;
    /* convection-diffusion strongly upwind: a structurally nonsymmetric
     * strength graph (PMIS's fix-up has candidates) */
    g.vx = 20.0, g.vy = -7.0, g.vz = 3.0;
    KS_CHECK(ks_generate(&g, A));
}

/* A generated problem n^3 and its layout (dist_of's empty). */
typedef struct dist_problem {
    ks_gen_kind kind;
    int n, empty;
} dist_problem;

/* This rank's rows of N: even blocks, or (empty = 1, several ranks) all
 * on rank 0 but a tenth on the last rank, the ranks between without rows. */
static void layout(int empty, ks_int N, ks_gint *begin, ks_int *count)
{
    ks_int c[8] = {0};
    if (!empty || nranks == 1) {
        for (int q = 0; q < nranks; q++)
            c[q] = N / nranks + (q < N % nranks);
    } else {
        c[nranks - 1] = N / 10;
        c[0] = N - c[nranks - 1];
    }
    ks_gint b = 0;
    for (int q = 0; q < rank; q++)
        b += c[q];
    *begin = b;
    *count = c[rank];
}

/* A's rows of this rank as a distributed matrix on dbe. */
static ks_matrix *dist_of(ks_backend *dbe, const ks_csr *A, int empty)
{
    ks_gint b;
    ks_int n;
    layout(empty, A->nrows, &b, &n);
    return ks_test_dist_rows(dbe, A, b, n);
}

typedef struct amg_case {
    const char *name;
    const char *smoother, *interp, *cycle; /* NULL: the default configuration's */
    /* the options beyond classical PMIS (NULL / 0: PMIS, CLASSICAL, none, DOUBLE) */
    const char *selector, *algorithm;
    int aggressive;
    const char *precision;
    const char *aggressive_interp; /* NULL: the default second stage */
} amg_case;

static ks_config *config_of(const amg_case *c)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    KS_CHECK(ks_config_set(cfg, "solver.solver", "PCG"));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.solver", "AMG"));
    if (c->smoother) {
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.selector",
                               c->selector ? c->selector : "PMIS"));
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.smoother.solver", c->smoother));
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.interpolator", c->interp));
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.cycle", c->cycle));
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.coarse_max_rows", "40"));
    }
    if (c->algorithm)
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.algorithm", c->algorithm));
    if (c->aggressive) {
        char v[16];
        snprintf(v, sizeof v, "%d", c->aggressive);
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.aggressive_levels", v));
    }
    if (c->precision)
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.hierarchy_precision", c->precision));
    if (c->aggressive_interp)
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.aggressive_interpolator",
                               c->aggressive_interp));
    KS_CHECK(ks_config_set(cfg, "solver.tolerance", "1e-10"));
    KS_CHECK(ks_config_set(cfg, "solver.max_iters", "300"));
    return cfg;
}

typedef struct solve_out {
    ks_solve_status status;
    int iterations, again; /* the first solve's and a second one's iterations */
    double true_rel;
    int nlevels;
    long long sizes[4 * 32]; /* per level: rows, nnz, P nnz, R nnz */
    ks_comm_stats cs;        /* the first solve's communication */
    ks_int nrows;            /* this rank's rows */
    double *x;               /* M's rows of this rank */
    double *hist;            /* the first solve's residual history (hlen entries) */
    int hlen;
    int ranks;               /* ks_hierarchy_info.ranks */
    const char *location;    /* ks_hierarchy_info.location */
} solve_out;

/* The hierarchy's sizes and two solves with s, set up on M. */
static void solve_set_up(ks_solver *s, ks_matrix *M, solve_out *o)
{
    memset(o, 0, sizeof *o);
    ks_vec *b = NULL, *x = NULL;
    ks_hierarchy_info h;
    KS_ALL(ks_solver_hierarchy(s, &h));
    o->nlevels = h.nlevels < 32 ? h.nlevels : 32;
    o->ranks = h.ranks;
    o->location = h.location;
    for (int l = 0; l < o->nlevels; l++) {
        o->sizes[4 * l] = h.levels[l].rows;
        o->sizes[4 * l + 1] = h.levels[l].nnz;
        o->sizes[4 * l + 2] = h.levels[l].p_nnz;
        o->sizes[4 * l + 3] = h.levels[l].r_nnz;
    }
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_matrix_vec_create(M, &x));
    const ks_int n = ks_matrix_rows(M);
    o->nrows = n;
    ks_test_dist_rhs(b);
    KS_ALL(ks_vec_fill(x, 0.0));
    ks_comm_reset_stats(comm);
    KS_ALL(ks_solver_solve(s, b, x));
    KS_ALL(ks_comm_get_stats(comm, &o->cs));
    const ks_solve_stats *st = ks_solver_stats(s);
    o->status = st->status;
    o->iterations = st->iterations;
    o->true_rel = st->true_relative_residual;
    o->hlen = st->history ? st->history_len : 0;
    o->hist = malloc(((size_t)o->hlen + 1) * sizeof *o->hist);
    if (o->hlen)
        memcpy(o->hist, st->history, (size_t)o->hlen * sizeof *o->hist);
    o->x = malloc(((size_t)n + 1) * sizeof *o->x);
    KS_ALL(ks_vec_get_host(x, o->x));
    KS_ALL(ks_vec_fill(x, 0.0));
    KS_ALL(ks_solver_solve(s, b, x));
    o->again = ks_solver_stats(s)->iterations;
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
}

static void solve(ks_matrix *M, const amg_case *c, solve_out *o)
{
    ks_config *cfg = config_of(c);
    ks_solver *s = NULL;
    KS_ALL(ks_solver_create(ks_matrix_backend(M), cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    solve_set_up(s, M, o);
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
}

/* Setup on M, A2's values set on it, a re-setup, then solve_set_up;
 * *values_only: the re-setup kept the hierarchy (not rebuilt, no
 * coarsening time, no strength time but an aggressive level's second
 * stage's, which the serial rule computes anew). */
static void resetup_solve(ks_matrix *M, const ks_csr *A2, const amg_case *c, solve_out *o,
                          int *values_only)
{
    ks_config *cfg = config_of(c);
    ks_solver *s = NULL;
    KS_ALL(ks_solver_create(ks_matrix_backend(M), cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    ks_test_set_values_of(M, A2);
    KS_ALL(ks_solver_resetup(s, M));
    ks_hierarchy_info h;
    KS_ALL(ks_solver_hierarchy(s, &h));
    *values_only = h.last_was_resetup && !h.resetup_rebuilt &&
                   ks_test_phase_seconds(&h, "coarsening") == 0.0 &&
                   (c->aggressive > 0 || ks_test_split_seconds(&h) == 0.0);
    solve_set_up(s, M, o);
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
}


/* The distributed cpu solve with the agglomeration cuda takes by default
 * (more coarse levels on fewer ranks than the cpu's): HMIS's and the
 * aggregates' splittings follow the layout, so only then do the two
 * hierarchies agree. The cuda solves run with the default. */
static int agglomerate_as_cuda(void)
{
    const int keep = ks_amg_dist_agglomerate_rows;
    ks_amg_dist_agglomerate_rows = KS_AMG_DIST_AGGLOMERATE_ROWS_DEVICE;
    return keep;
}

static void solve_cpu_as_cuda(ks_matrix *Mc, const amg_case *c, solve_out *o)
{
    const int keep = agglomerate_as_cuda();
    solve(Mc, c, o);
    ks_amg_dist_agglomerate_rows = keep;
}

/* One process (every rank alike) on backend obe. */
static void solve_one(ks_backend *obe, const ks_csr *A, const amg_case *c, solve_out *o)
{
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create(obe, A, "auto", NULL, &M));
    solve(M, c, o);
    ks_matrix_destroy(&M);
}

static void out_free(solve_out *o)
{
    free(o->x);
    free(o->hist);
}

static int same_hierarchy(const solve_out *a, const solve_out *b)
{
    return a->nlevels == b->nlevels &&
           !memcmp(a->sizes, b->sizes, 4 * (size_t)a->nlevels * sizeof a->sizes[0]);
}

static void compare(const char *problem, const ks_csr *A, const amg_case *c, int empty)
{
    solve_out ref, one_cu, dcpu, dcu;
    solve_one(be, A, c, &ref);
    solve_one(cuda, A, c, &one_cu);
    ks_matrix *Mc = dist_of(be, A, empty), *Mg = dist_of(cuda, A, empty);
    solve_cpu_as_cuda(Mc, c, &dcpu);
    solve(Mg, c, &dcu);
    double v[2];
    ks_test_dist_xerr(Mg, dcu.x, ref.x, v);
    char what[160];
    snprintf(what, sizeof what, "%s, %s, %d ranks%s", problem, c->name, nranks,
             empty && nranks > 1 ? " (uneven rows, any ranks between empty)" : "");
    ALL(ref.status == KS_SOLVE_CONVERGED && one_cu.status == KS_SOLVE_CONVERGED &&
            dcpu.status == KS_SOLVE_CONVERGED && dcu.status == KS_SOLVE_CONVERGED,
        "%s: not converged: reference %s, one-process cuda %s, distributed cpu %s, "
        "distributed cuda %s",
        what, ks_solve_status_name(ref.status), ks_solve_status_name(one_cu.status),
        ks_solve_status_name(dcpu.status), ks_solve_status_name(dcu.status));
    ALL(abs(dcu.iterations - one_cu.iterations) <= 2,
        "%s: distributed cuda took %d iterations, one-process cuda %d (allowed +-2)", what,
        dcu.iterations, one_cu.iterations);
    ALL(abs(dcu.iterations - dcpu.iterations) <= 2,
        "%s: distributed cuda took %d iterations, distributed cpu %d (allowed +-2)", what,
        dcu.iterations, dcpu.iterations);
    ALL(same_hierarchy(&dcu, &dcpu),
        "%s: the distributed cuda hierarchy (%d levels, level 1: %lld rows) differs from the "
        "distributed cpu one (%d levels, level 1: %lld rows)",
        what, dcu.nlevels, dcu.nlevels > 1 ? dcu.sizes[4] : 0LL, dcpu.nlevels,
        dcpu.nlevels > 1 ? dcpu.sizes[4] : 0LL);
    ALL(dcu.true_rel < 1e-9, "%s: distributed cuda: true relative residual %g", what,
        dcu.true_rel);
    ALL(v[0] <= 1e-7 * v[1], "%s: distributed cuda x differs from the float64 reference by %g "
        "(max |x| %g)", what, v[0], v[1]);
    const double xrel = ks_test_dist_xrel(Mg, dcu.x, one_cu.x);
    ALL(xrel <= 1e-8, "%s: distributed cuda x differs from the one-process cuda x by %g "
        "(relative, 2-norm)", what, xrel);
    ALL(dcu.again == dcu.iterations, "%s: distributed cuda: a second solve took %d iterations, "
        "the first %d", what, dcu.again, dcu.iterations);
    /* Each rank with a neighbour exchanges every SpMV's halo; the time
     * includes the staging copies through the host. */
    ks_int ng = 0, ns = 0;
    int nb = 0;
    KS_ALL(ks_matrix_halo_size(Mg, &ng, &ns, &nb));
    ALL(nb == 0 || (dcu.cs.halo_exchanges >= dcu.iterations && dcu.cs.halo_seconds > 0.0 &&
                    (ns == 0 || dcu.cs.halo_bytes_sent > 0.0)),
        "%s: rank %d has %d neighbours but counted %lld halo exchanges, %g s, %g bytes sent",
        what, rank, nb, dcu.cs.halo_exchanges, dcu.cs.halo_seconds, dcu.cs.halo_bytes_sent);
    if (rank == 0)
        printf("%s: iterations: distributed cuda %d, one-process cuda %d, distributed cpu %d, "
               "reference %d; x within %.2g of one-process cuda's; %d levels; rank 0 halo: %lld exchanges, %.3g s, %.0f bytes sent, "
               "%d neighbours\n",
               what, dcu.iterations, one_cu.iterations, dcpu.iterations, ref.iterations, xrel,
               dcu.nlevels, dcu.cs.halo_exchanges, dcu.cs.halo_seconds, dcu.cs.halo_bytes_sent,
               nb);
    out_free(&ref);
    out_free(&one_cu);
    out_free(&dcpu);
    out_free(&dcu);
    ks_matrix_destroy(&Mc);
    ks_matrix_destroy(&Mg);
}

/* On one rank the preconditioner builds the one-process hierarchy on the
 * matrix's local block, on the device: the one-process cuda solve's
 * iterations and x (to rounding: the Krylov method's reductions are the
 * distributed ones), a values-only re-setup too. This program asks for the
 * distributed setup on one rank (main); this test lets it choose. Over
 * several ranks the hierarchy is the distributed one either way. */
static void compare_one_rank(const char *problem, const ks_csr *A, const ks_csr *A2)
{
    static const amg_case c = {"default PCG + AMG", NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL};
    solve_out one_cu, dcu, re_one, re_dcu;
    int vo = 0, vo2 = 0;
    solve_one(cuda, A, &c, &one_cu);
    ks_matrix *Mg = dist_of(cuda, A, 0);
    unsetenv("KS_AMG_ONE_RANK");
    solve(Mg, &c, &dcu);
    resetup_solve(Mg, A2, &c, &re_dcu, &vo);
    setenv("KS_AMG_ONE_RANK", "distributed", 1);
    ks_matrix *M1 = NULL;
    KS_ALL(ks_matrix_create(cuda, A, "auto", NULL, &M1));
    resetup_solve(M1, A2, &c, &re_one, &vo2);
    const double xrel = ks_test_dist_xrel(Mg, dcu.x, one_cu.x);
    const double xrel2 = ks_test_dist_xrel(Mg, re_dcu.x, re_one.x);
    const int want = nranks == 1 ? 0 : nranks;
    /* over ranks the distributed hierarchy: compare() checks it */
    const int same = nranks > 1 || (dcu.iterations == one_cu.iterations && xrel <= 1e-12 &&
                                    re_dcu.iterations == re_one.iterations && xrel2 <= 1e-12);
    ALL(dcu.ranks == want && !strcmp(dcu.location, "device") &&
            dcu.status == KS_SOLVE_CONVERGED && re_dcu.status == KS_SOLVE_CONVERGED && vo && same,
        "%s, %d ranks: hierarchy over %d ranks (want %d) on the %s, %d iterations (one process "
        "%d), x %g apart; re-setup values only %d, %d iterations (one process %d), x %g apart",
        problem, nranks, dcu.ranks, want, dcu.location, dcu.iterations, one_cu.iterations, xrel,
        vo, re_dcu.iterations, re_one.iterations, xrel2);
    out_free(&one_cu);
    out_free(&dcu);
    out_free(&re_one);
    out_free(&re_dcu);
    ks_matrix_destroy(&Mg);
    ks_matrix_destroy(&M1);
}

START_TEST(test_one_rank_device)
{
    need_cuda();
    ks_csr A, A2;
    generate(KS_GEN_POISSON3D_7, 16, &A);
    ks_test_new_values(&A, 1, 1.0, 0.3, &A2);
    compare_one_rank("7-point 16^3", &A, &A2);
    ks_csr_free(&A);
    ks_csr_free(&A2);
}
END_TEST

static const amg_case cases[] = {
    {"default PCG + AMG", NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL},
    {"PMIS D1 JACOBI_L1 V", "JACOBI_L1", "D1", "V", NULL, NULL, 0, NULL, NULL},
    {"PMIS D2 JACOBI W", "JACOBI", "D2", "W", NULL, NULL, 0, NULL, NULL},
};

START_TEST(test_poisson7)
{
    need_cuda();
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 16, &A);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        compare("7-point 16^3", &A, &cases[k], 0);
    compare("7-point 16^3", &A, &cases[1], 1);
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_poisson27)
{
    need_cuda();
    ks_csr A;
    generate(KS_GEN_POISSON3D_27, 12, &A);
    compare("27-point 12^3", &A, &cases[0], 0);
    compare("27-point 12^3", &A, &cases[2], 0);
    ks_csr_free(&A);
}
END_TEST

/* The options the one-process cuda setup splits otherwise (HMIS over
 * ranks, uncoupled aggregates) or that need the float32 blocks: the
 * distributed cuda solve against the distributed cpu solve of the same
 * options and partition, whose hierarchy it shares (the same host pieces;
 * only the Chebyshev and aggregation estimates' SpMVs run on the device):
 * the same iterations, the residual histories equal to rounding (1e-10
 * relative, entry by entry; the one-process and distributed cpu solves of
 * one hierarchy differ by 1e-14 at most), the same hierarchy, x within
 * 1e-7 of the one-process float64 cpu reference, a second solve alike.
 * With FLOAT (PMIS, so the hierarchy is the one-process one) also at most
 * one iteration more than the float64 distributed cuda solve and than the
 * one-process cuda FLOAT solve. */
static void compare_cpu(const char *problem, const ks_csr *A, const amg_case *c, int empty)
{
    solve_out ref, dcpu, dcu;
    amg_case r = *c;
    r.precision = NULL;
    solve_one(be, A, &r, &ref);
    ks_matrix *Mc = dist_of(be, A, empty), *Mg = dist_of(cuda, A, empty);
    solve_cpu_as_cuda(Mc, c, &dcpu);
    solve(Mg, c, &dcu);
    double v[2], dh = 0.0;
    ks_test_dist_xerr(Mg, dcu.x, ref.x, v);
    for (int k = 0; k < dcu.hlen && k < dcpu.hlen; k++)
        dh = fmax(dh, fabs(dcu.hist[k] - dcpu.hist[k]) / dcpu.hist[k]);
    char what[200];
    snprintf(what, sizeof what, "%s, %s, %d ranks%s", problem, c->name, nranks,
             empty && nranks > 1 ? " (uneven rows, any ranks between empty)" : "");
    ALL(ref.status == KS_SOLVE_CONVERGED && dcpu.status == KS_SOLVE_CONVERGED &&
            dcu.status == KS_SOLVE_CONVERGED,
        "%s: not converged: reference %s, distributed cpu %s, distributed cuda %s", what,
        ks_solve_status_name(ref.status), ks_solve_status_name(dcpu.status),
        ks_solve_status_name(dcu.status));
    ALL(dcu.iterations == dcpu.iterations && dcu.hlen == dcpu.hlen && dcu.hlen > 1,
        "%s: distributed cuda took %d iterations (%d history entries), distributed cpu %d (%d)",
        what, dcu.iterations, dcu.hlen, dcpu.iterations, dcpu.hlen);
    ALL(dh <= 1e-10, "%s: the residual histories of cuda and cpu differ by %g (relative)", what,
        dh);
    ALL(same_hierarchy(&dcu, &dcpu),
        "%s: the distributed cuda hierarchy (%d levels, level 1: %lld rows) differs from the "
        "distributed cpu one (%d levels, level 1: %lld rows)",
        what, dcu.nlevels, dcu.nlevels > 1 ? dcu.sizes[4] : 0LL, dcpu.nlevels,
        dcpu.nlevels > 1 ? dcpu.sizes[4] : 0LL);
    ALL(dcu.true_rel < 1e-9 && v[0] <= 1e-7 * v[1],
        "%s: distributed cuda: true relative residual %g, x differs from the float64 reference "
        "by %g (max |x| %g)", what, dcu.true_rel, v[0], v[1]);
    ALL(dcu.again == dcu.iterations, "%s: distributed cuda: a second solve took %d iterations, "
        "the first %d", what, dcu.again, dcu.iterations);
    int one_its = -1, dbl_its = -1;
    if (c->precision) {
        solve_out one_cu, dbl;
        solve_one(cuda, A, c, &one_cu);
        solve(Mg, &r, &dbl);
        one_its = one_cu.iterations;
        dbl_its = dbl.iterations;
        ALL(one_cu.status == KS_SOLVE_CONVERGED && dcu.iterations <= one_its + 1 &&
                dcu.iterations <= dbl_its + 1,
            "%s: distributed cuda %s took %d iterations, one-process cuda %s %d (%s), "
            "distributed cuda float64 %d (at most one more allowed)", what, c->precision,
            dcu.iterations, c->precision, one_its, ks_solve_status_name(one_cu.status),
            dbl_its);
        out_free(&one_cu);
        out_free(&dbl);
    }
    if (rank == 0 && c->precision)
        printf("%s: iterations: distributed cuda %d, distributed cpu %d, reference %d, "
               "one-process cuda %d, distributed cuda float64 %d; %d levels; histories within "
               "%.2g\n",
               what, dcu.iterations, dcpu.iterations, ref.iterations, one_its, dbl_its,
               dcu.nlevels, dh);
    else if (rank == 0)
        printf("%s: iterations: distributed cuda %d, distributed cpu %d, reference %d; %d "
               "levels; histories within %.2g\n",
               what, dcu.iterations, dcpu.iterations, ref.iterations, dcu.nlevels, dh);
    out_free(&ref);
    out_free(&dcpu);
    out_free(&dcu);
    ks_matrix_destroy(&Mc);
    ks_matrix_destroy(&Mg);
}

static const amg_case option_cases[] = {
    {"HMIS D2 JACOBI_L1 V", "JACOBI_L1", "D2", "V", "HMIS", NULL, 0, NULL, NULL},
    {"HMIS D1 CHEBYSHEV W", "CHEBYSHEV", "D1", "W", "HMIS", NULL, 0, NULL, NULL},
    {"AGGREGATION JACOBI_L1 V", "JACOBI_L1", "D2", "V", NULL, "AGGREGATION", 0, NULL, NULL},
    {"AGGREGATION CHEBYSHEV W", "CHEBYSHEV", "D2", "W", NULL, "AGGREGATION", 0, NULL, NULL},
    {"PMIS aggressive 1 D2 JACOBI_L1 V", "JACOBI_L1", "D2", "V", NULL, NULL, 1, NULL, NULL},
    {"HMIS aggressive 2 D1 CHEBYSHEV V", "CHEBYSHEV", "D1", "V", "HMIS", NULL, 2, NULL, NULL},
    {"PMIS D2 JACOBI_L1 V FLOAT", "JACOBI_L1", "D2", "V", NULL, NULL, 0, "FLOAT", NULL},
    {"PMIS D1 CHEBYSHEV W FLOAT", "CHEBYSHEV", "D1", "W", NULL, NULL, 0, "FLOAT", NULL},
};
#define NOPTION_CASES (sizeof option_cases / sizeof option_cases[0])

START_TEST(test_options_poisson7)
{
    need_cuda();
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 16, &A);
    for (size_t k = 0; k < NOPTION_CASES; k++)
        compare_cpu("7-point 16^3", &A, &option_cases[k], 0);
    compare_cpu("7-point 16^3", &A, &option_cases[0], 1);
    compare_cpu("7-point 16^3", &A, &option_cases[2], 1);
    compare_cpu("7-point 16^3", &A, &option_cases[6], 1);
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_options_poisson27)
{
    need_cuda();
    ks_csr A;
    generate(KS_GEN_POISSON3D_27, 12, &A);
    compare_cpu("27-point 12^3", &A, &option_cases[0], 0);
    compare_cpu("27-point 12^3", &A, &option_cases[3], 1);
    compare_cpu("27-point 12^3", &A, &option_cases[4], 0);
    compare_cpu("27-point 12^3", &A, &option_cases[7], 0);
    ks_csr_free(&A);
}
END_TEST

/* What stays refused on cuda over ranks: the Gauss-Seidel smoothers (no
 * cuda format has a sweep), on every rank with the same message. */
START_TEST(test_gs_refused)
{
    need_cuda();
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 8, &A);
    ks_matrix *M = dist_of(cuda, &A, 1);
    const char *gs[] = {"GS", "SGS"};
    for (int k = 0; k < 2; k++) {
        amg_case c = {"refused", gs[k], "D2", "V", NULL, NULL, 0, NULL, NULL};
        ks_config *cfg = config_of(&c);
        ks_solver *s = NULL;
        KS_ALL(ks_solver_create(cuda, cfg, &s));
        EXPECT_ERR(ks_solver_setup(s, M), KS_ERR_UNSUPPORTED, "the cuda backend has none");
        ks_solver_destroy(&s);
        ks_config_destroy(&cfg);
    }
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
}
END_TEST

/* Without a GPU too: every level's halo (A, P, R, the coarse inverse)
 * staged through host buffers and the backend's staging queue, the path
 * cuda takes, gives the unstaged distributed solve's iterations and bits
 * on the cpu (the copies change no arithmetic). */
START_TEST(test_staged_levels_cpu)
{
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 12, &A);
    for (size_t k = 0; k < 2; k++) {
        solve_out plain, staged;
        ks_matrix *M = dist_of(be, &A, 1);
        solve(M, &cases[k], &plain);
        ks_matrix_destroy(&M);
        ks_halo_stage_always = 1;
        M = dist_of(be, &A, 1);
        solve(M, &cases[k], &staged);
        ks_matrix_destroy(&M);
        ks_halo_stage_always = 0;
        int same = plain.status == KS_SOLVE_CONVERGED && staged.iterations == plain.iterations &&
                   same_hierarchy(&plain, &staged);
        const ks_int n = plain.nrows;
        for (ks_int i = 0; same && i < n; i++)
            same = !memcmp(&plain.x[i], &staged.x[i], sizeof(double));
        ALL(same, "%s on %d ranks: staged halos give %d iterations (%s), unstaged %d (%s), or "
            "other bits or levels", cases[k].name, nranks, staged.iterations,
            ks_solve_status_name(staged.status), plain.iterations,
            ks_solve_status_name(plain.status));
        out_free(&plain);
        out_free(&staged);
    }
    ks_csr_free(&A);
}
END_TEST

/* The standalone AMG solver over ranks on cuda: the cycle alone. */
START_TEST(test_amg_standalone)
{
    need_cuda();
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 12, &A);
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    KS_CHECK(ks_config_set(cfg, "solver.solver", "AMG"));
    KS_CHECK(ks_config_set(cfg, "solver.tolerance", "1e-8"));
    KS_CHECK(ks_config_set(cfg, "solver.max_iters", "100"));
    int its[2] = {0, 0};
    ks_solve_status st[2] = {KS_SOLVE_DIVERGED, KS_SOLVE_DIVERGED};
    ks_backend *bes[2] = {be, cuda};
    for (int k = 0; k < 2; k++) {
        ks_matrix *M = dist_of(bes[k], &A, 0);
        ks_solver *s = NULL;
        ks_vec *b = NULL, *x = NULL;
        KS_ALL(ks_solver_create(bes[k], cfg, &s));
        KS_ALL(ks_solver_setup(s, M));
        KS_ALL(ks_matrix_vec_create(M, &b));
        KS_ALL(ks_matrix_vec_create(M, &x));
        KS_ALL(ks_vec_fill(b, 1.0));
        KS_ALL(ks_vec_fill(x, 0.0));
        KS_ALL(ks_solver_solve(s, b, x));
        its[k] = ks_solver_stats(s)->iterations;
        st[k] = ks_solver_stats(s)->status;
        ks_vec_destroy(&b);
        ks_vec_destroy(&x);
        ks_solver_destroy(&s);
        ks_matrix_destroy(&M);
    }
    ALL(st[0] == KS_SOLVE_CONVERGED && st[1] == KS_SOLVE_CONVERGED && abs(its[0] - its[1]) <= 2,
        "standalone AMG on %d ranks: cpu %s in %d, cuda %s in %d iterations", nranks,
        ks_solve_status_name(st[0]), its[0], ks_solve_status_name(st[1]), its[1]);
    if (rank == 0)
        printf("standalone AMG, 7-point 12^3, %d ranks: cuda %d, cpu %d iterations\n", nranks,
               its[1], its[0]);
    ks_config_destroy(&cfg);
    ks_csr_free(&A);
}
END_TEST

/* A values-only re-setup on cuda (the setup's pieces on host copies, as
 * the setup runs them) against the same re-setup of the same distributed
 * matrix on the cpu: new values A2 on A's pattern; both values only, the
 * same hierarchy sizes, iterations within one of each other and within
 * fresh_within of a fresh cuda setup of A2 (-1: not compared: where the
 * kept pattern differs from the one a fresh setup picks, the serial
 * re-setup's iterations differ as much), x within 1e-9 of the cpu re-setup's x (relative
 * to max |x|; FLOAT: 1e-7) and the true residual reached; a second solve
 * alike. */
static void compare_resetup(const char *problem, const ks_csr *A, const ks_csr *A2,
                            const amg_case *c, int empty, int fresh_within)
{
    ks_matrix *Mc = dist_of(be, A, empty), *Mg = dist_of(cuda, A, empty);
    ks_matrix *Fg = dist_of(cuda, A2, empty);
    solve_out dcpu, dcu, fresh;
    int vo_cpu = 0, vo_cu = 0;
    const int keep = agglomerate_as_cuda();
    resetup_solve(Mc, A2, c, &dcpu, &vo_cpu);
    ks_amg_dist_agglomerate_rows = keep;
    resetup_solve(Mg, A2, c, &dcu, &vo_cu);
    solve(Fg, c, &fresh);
    double v[2];
    ks_test_dist_xdiff(Mg, dcu.x, dcpu.x, v);
    const double xtol = c->precision ? 1e-7 : 1e-9;
    char what[200];
    snprintf(what, sizeof what, "re-setup %s, %s, %d ranks%s", problem, c->name, nranks,
             empty && nranks > 1 ? " (uneven rows)" : "");
    ALL(vo_cpu && vo_cu, "%s: values only on cpu %d, on cuda %d", what, vo_cpu, vo_cu);
    ALL(dcpu.status == KS_SOLVE_CONVERGED && dcu.status == KS_SOLVE_CONVERGED &&
            abs(dcu.iterations - dcpu.iterations) <= 1 && dcu.again == dcu.iterations &&
            (fresh_within < 0 || abs(dcu.iterations - fresh.iterations) <= fresh_within),
        "%s: distributed cuda %d iterations (%s, again %d), distributed cpu %d (%s), a fresh "
        "cuda setup %d", what, dcu.iterations, ks_solve_status_name(dcu.status), dcu.again,
        dcpu.iterations, ks_solve_status_name(dcpu.status), fresh.iterations);
    ALL(same_hierarchy(&dcu, &dcpu), "%s: the cuda hierarchy (%d levels) differs from the cpu "
        "one (%d levels)", what, dcu.nlevels, dcpu.nlevels);
    ALL(dcu.true_rel < 1e-9 && v[0] <= xtol * v[1],
        "%s: cuda: true relative residual %g, x differs from the cpu re-setup's by %g (max "
        "%g)", what, dcu.true_rel, v[0], v[1]);
    if (rank == 0)
        printf("%s: iterations: distributed cuda %d, distributed cpu %d, fresh cuda %d; %d "
               "levels\n", what, dcu.iterations, dcpu.iterations, fresh.iterations,
               dcu.nlevels);
    out_free(&dcpu);
    out_free(&dcu);
    out_free(&fresh);
    ks_matrix_destroy(&Mc);
    ks_matrix_destroy(&Mg);
    ks_matrix_destroy(&Fg);
}

/* Re-setups beyond classical PMIS: the configuration
 * examples/configs/pcg_amg_gpu.json recommends (aggressive coarsening on
 * level 0 with a D1 second stage, CHEBYSHEV of degree 2, FLOAT below level
 * 0), aggressive coarsening alone, FLOAT alone, smoothed aggregation. */
static const amg_case resetup_cases[] = {
    {"gpu-like: PMIS D2 aggressive 1 (D1) CHEBYSHEV V FLOAT", "CHEBYSHEV", "D2", "V", NULL, NULL,
     1, "FLOAT", "D1"},
    {"PMIS aggressive 1 D2 JACOBI_L1 V", "JACOBI_L1", "D2", "V", NULL, NULL, 1, NULL, NULL},
    {"PMIS D1 CHEBYSHEV W FLOAT", "CHEBYSHEV", "D1", "W", NULL, NULL, 0, "FLOAT", NULL},
    {"AGGREGATION CHEBYSHEV V", "CHEBYSHEV", "D2", "V", NULL, "AGGREGATION", 0, NULL, NULL},
};

/* The classical cases with D A D + 0.3 I; those of resetup_cases with
 * A + 0.05 I and 4 A (D A D + 0.3 I makes some of the aggressive level's
 * projected rows keep no weight: a rebuild, as serially). */
START_TEST(test_resetup)
{
    need_cuda();
    ks_csr A, A2, As, A4;
    generate(KS_GEN_POISSON3D_7, 16, &A);
    ks_test_new_values(&A, 1, 1.0, 0.3, &A2);
    ks_test_new_values(&A, 0, 1.0, 0.05, &As);
    ks_test_new_values(&A, 0, 4.0, 0.0, &A4);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        compare_resetup("poisson3d_7 16^3, D A D + 0.3 I", &A, &A2, &cases[k], (int)(k % 2),
                        -1);
    for (size_t k = 0; k < sizeof resetup_cases / sizeof resetup_cases[0]; k++) {
        compare_resetup("poisson3d_7 16^3, A + 0.05 I", &A, &As, &resetup_cases[k],
                        (int)(k % 2), 1);
        compare_resetup("poisson3d_7 16^3, 4 A", &A, &A4, &resetup_cases[k], (int)(k % 2), 1);
    }
    compare_resetup("poisson3d_7 16^3, A + 0.05 I", &A, &As, &resetup_cases[0], 1, 1);
    ks_csr_free(&A);
    ks_csr_free(&A2);
    ks_csr_free(&As);
    ks_csr_free(&A4);
}
END_TEST

/* A random m x n host CSR: about `per` entries a row (some rows empty),
 * columns sorted and unique, values in [-1, 1). */
static void random_csr(ks_int m, ks_int n, int per, ks_csr *A)
{
    KS_CHECK(ks_csr_alloc(A, m, n, m * per));
    ks_int k = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < m; i++) {
        const int len = (ks_test_rng_next() % 7 == 0) ? 0 : (int)(ks_test_rng_next() % per) + 1;
        ks_int c = (ks_int)(ks_test_rng_next() % 3);
        for (int j = 0; j < len && c < n; j++) {
            A->colind[k] = c;
            A->val[k++] = 2.0 * ks_test_urand() - 1.0;
            c += 1 + (ks_int)(ks_test_rng_next() % (uint64_t)(2 * n / per + 1));
        }
        A->rowptr[i + 1] = k;
    }
    A->nnz = k;
}

/* The distributed Galerkin product's local products (ks_local_spgemm) on
 * the cuda backend give the cpu product's pattern and bits: the device
 * setup of a distributed hierarchy then keeps the cpu hierarchy exactly.
 * Local to each rank. */
START_TEST(test_local_spgemm)
{
    need_cuda();
    ks_test_rng_seed(41 + (uint64_t)rank);
    /* empty shapes too: ranks without coarse rows or entries on deep levels */
    const ks_int shapes[][3] = {{0, 5, 7},     {5, 0, 7},        {5, 7, 0},          {1, 1, 1},
                                {37, 50, 29}, {2000, 900, 1500}, {5000, 5000, 5000}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        ks_csr L = {0}, B = {0}, Tc = {0}, Tg = {0};
        random_csr(shapes[t][0], shapes[t][1], t == 6 ? 60 : 9, &L);
        random_csr(shapes[t][1], shapes[t][2], 11, &B);
        KS_CHECK(ks_local_spgemm(NULL, &L, &B, &Tc));
        KS_CHECK(ks_local_spgemm(cuda, &L, &B, &Tg));
        int same = Tc.nrows == Tg.nrows && Tc.ncols == Tg.ncols && Tc.nnz == Tg.nnz &&
                   !memcmp(Tc.rowptr, Tg.rowptr, ((size_t)Tc.nrows + 1) * sizeof *Tc.rowptr) &&
                   !memcmp(Tc.colind, Tg.colind, (size_t)Tc.nnz * sizeof *Tc.colind) &&
                   !memcmp(Tc.val, Tg.val, (size_t)Tc.nnz * sizeof *Tc.val);
        ALL(same, "local product %lld x %lld x %lld: the cuda product (%lld entries) differs "
            "from the cpu one (%lld entries) in pattern or bits", (long long)shapes[t][0],
            (long long)shapes[t][1], (long long)shapes[t][2], (long long)Tg.nnz,
            (long long)Tc.nnz);
        ks_csr_free(&L);
        ks_csr_free(&B);
        ks_csr_free(&Tc);
        ks_csr_free(&Tg);
    }
}
END_TEST

/* The distributed classical strength of a cuda matrix (the blocks'
 * strength on the device, S brought back to the host) is the cpu
 * matrix's, row for row, and makes no host copy of the matrix's blocks.
 * Poisson 27-point and 7-point with a fifth of the off-diagonals made
 * positive (rows whose sums max_row_sum 0.9 and 0.5 cut), even and
 * lopsided layouts (ranks without rows). */
START_TEST(test_dist_strength)
{
    need_cuda();
    static const double mrs[] = {1.0, 0.9, 0.5};
    for (int g = 0; g < 2; g++) {
        ks_csr A;
        generate(g ? KS_GEN_POISSON3D_7 : KS_GEN_POISSON3D_27, 11, &A);
        for (ks_int k = 0; g && k < A.nnz; k++)
            if (k % 5 == 2 && A.val[k] < 0.0)
                A.val[k] = -0.75 * A.val[k];
        for (int empty = 0; empty < 2; empty++) {
            ks_matrix *Mc = dist_of(be, &A, empty), *Md = dist_of(cuda, &A, empty);
            ks_matrix_host_csr_free(Md); /* whatever making it left */
            for (int p = 0; p < 3; p++) {
                ks_dist_strength Sc, Sd;
                KS_ALL(ks_dist_strength_classical(Mc, 0.25, mrs[p], &Sc));
                KS_ALL(ks_dist_strength_classical(Md, 0.25, mrs[p], &Sd));
                const ks_int n = Sc.nloc;
                int same = Sd.nloc == n && Sd.nghost == Sc.nghost && Sd.local.n == n &&
                           !memcmp(Sc.local.rowptr, Sd.local.rowptr, (n + 1) * sizeof(ks_int)) &&
                           !memcmp(Sc.grp, Sd.grp, (n + 1) * sizeof(ks_int));
                same = same &&
                       !memcmp(Sc.local.colind, Sd.local.colind,
                               (size_t)Sc.local.rowptr[n] * sizeof(ks_int)) &&
                       !memcmp(Sc.gci, Sd.gci, (size_t)Sc.grp[n] * sizeof(ks_int));
                ALL(same, "%s, %s layout, max_row_sum %g: the cuda matrix's strength (%d + %d "
                    "entries) is not the cpu matrix's (%d + %d)", g ? "7-point" : "27-point",
                    empty ? "lopsided" : "even", mrs[p], Sd.local.rowptr ? Sd.local.rowptr[n] : -1,
                    Sd.grp ? Sd.grp[n] : -1, Sc.local.rowptr[n], Sc.grp[n]);
                const ks_matrix *G = Md->dist->ghost;
                ALL(!Md->dist->local->host_owned && !(G && G->host_owned),
                    "the cuda matrix's strength made a host copy of its blocks");
                ks_dist_strength_free(&Sc);
                ks_dist_strength_free(&Sd);
            }
            ks_matrix_destroy(&Mc);
            ks_matrix_destroy(&Md);
        }
        ks_csr_free(&A);
    }
}
END_TEST

/* The distributed rho(D^-1 A) estimate of a cuda matrix against the cpu
 * matrix's: the diagonal, its checks, the bound, the scaling and the start
 * vector made on the device (amg/kernels.h's spectral_prepare_blocks and
 * spectral_scale_start), the same steps after; equal to rounding (the
 * device's dot products sum in another order), the same symmetry report,
 * and with the symmetry known no host copy of the blocks. Poisson 7- and
 * 27-point (Lanczos), the 7-point negated (Lanczos on -A), convection-
 * diffusion (the power method); even and lopsided layouts. A zero diagonal
 * fails alike, naming the global row. */
START_TEST(test_dist_spectral)
{
    need_cuda();
    const ks_gen_kind kinds[] = {KS_GEN_POISSON3D_7, KS_GEN_POISSON3D_27, KS_GEN_POISSON3D_7,
                                 KS_GEN_CONVDIFF3D};
    for (int k = 0; k < 4; k++) {
        ks_csr A;
        generate(kinds[k], 10, &A);
        for (ks_int q = 0; k == 2 && q < A.nnz; q++)
            A.val[q] = -A.val[q];
        for (int empty = 0; empty < 2; empty++) {
            ks_matrix *Mc = dist_of(be, &A, empty), *Md = dist_of(cuda, &A, empty);
            ks_matrix_host_csr_free(Md); /* whatever making it left */
            for (int known = k < 3; known >= 0; known--) {
                double rc = 0.0, rd = 0.0;
                int xc = -1, xd = -1;
                KS_ALL(ks_dist_spectral_radius_sym(Mc, 12, known, &rc, &xc));
                KS_ALL(ks_dist_spectral_radius_sym(Md, 12, known, &rd, &xd));
                ALL(fabs(rd - rc) <= 1e-10 * rc && xd == xc,
                    "%s (%d), %s layout, symmetry %s: estimate %.17g (exact %d) on cuda, "
                    "%.17g (exact %d) on the cpu", ks_gen_kind_name(kinds[k]), k,
                    empty ? "lopsided" : "even", known ? "known" : "checked", rd, xd, rc, xc);
                const ks_matrix *G = Md->dist->ghost;
                ALL(!known || (!Md->dist->local->host_owned && !(G && G->host_owned)),
                    "the cuda matrix's estimate made a host copy of its blocks");
            }
            ks_matrix_destroy(&Mc);
            ks_matrix_destroy(&Md);
        }
        ks_csr_free(&A);
    }
    /* the last row's diagonal zero: the last rank with rows holds it */
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 6, &A);
    const ks_int r = A.nrows - 1;
    for (ks_int q = A.rowptr[r]; q < A.rowptr[r + 1]; q++)
        if (A.colind[q] == r)
            A.val[q] = 0.0;
    char who[96];
    snprintf(who, sizeof who, "global row %ld has a zero or non-finite diagonal", (long)r);
    ks_matrix *Mc = dist_of(be, &A, 1), *Md = dist_of(cuda, &A, 1);
    double rho = 0.0;
    EXPECT_ERR(ks_dist_spectral_radius_sym(Mc, 12, 0, &rho, NULL), KS_ERR_NUMERIC, who);
    EXPECT_ERR(ks_dist_spectral_radius_sym(Md, 12, 0, &rho, NULL), KS_ERR_NUMERIC, who);
    ks_clear_error();
    ks_matrix_destroy(&Mc);
    ks_matrix_destroy(&Md);
    ks_csr_free(&A);
}
END_TEST

/* dp's rows equal hp's: row pointers, global columns and value bits. */
static int same_prows(const ks_dist_prows *hp, const ks_dist_prows *dp)
{
    if (hp->nloc != dp->nloc || hp->nc != dp->nc || hp->c_begin != dp->c_begin ||
        hp->nc_global != dp->nc_global ||
        memcmp(hp->rowptr, dp->rowptr, ((size_t)hp->nloc + 1) * sizeof *hp->rowptr))
        return 0;
    const ks_int nnz = hp->rowptr[hp->nloc];
    return !memcmp(hp->col, dp->col, (size_t)nnz * sizeof *hp->col) &&
           !memcmp(hp->val, dp->val, (size_t)nnz * sizeof *hp->val);
}

/* M's classical strength (theta 0.25, max_row_sum 0.9), PMIS splitting
 * with seed and coarse ids: the pieces the interpolation and the
 * products are tested on. Free with splitting_free. */
static void splitting_of(const ks_matrix *M, unsigned long long seed, ks_dist_strength *S,
                         int **cf, ks_dist_coarse *C)
{
    memset(C, 0, sizeof *C);
    KS_ALL(ks_dist_strength_classical(M, 0.25, 0.9, S));
    *cf = malloc((size_t)S->nloc * sizeof **cf + 1);
    ALL(*cf != NULL, "out of memory");
    ks_int nc = 0;
    KS_ALL(ks_dist_pmis(S, seed, *cf, &nc));
    KS_ALL(ks_dist_coarse_ids(S, *cf, C));
}

static void splitting_free(ks_dist_strength *S, int *cf, ks_dist_coarse *C)
{
    free(cf);
    ks_dist_coarse_free(C);
    ks_dist_strength_free(S);
}

/* Distributed PMIS on the device (the joint graph kept where the
 * strength's device parts made it, the rounds and the fix-up by the cuda
 * table's pmis_joint_step, the external points' states exchanged through
 * packed downloads) against the host's: the same splitting point for
 * point. Symmetric and upwind (nonsymmetric S: the fix-up runs)
 * problems, even and uneven layouts (ranks without rows), two seeds. */
START_TEST(test_dist_pmis_device)
{
    need_cuda();
    static const dist_problem probs[] = {{KS_GEN_POISSON3D_7, 14, 0},
                                         {KS_GEN_POISSON3D_7, 13, 1},
                                         {KS_GEN_POISSON3D_27, 9, 1},
                                         {KS_GEN_CONVDIFF3D, 12, 0},
                                         {KS_GEN_CONVDIFF3D, 11, 1}};
    for (size_t q = 0; q < sizeof probs / sizeof probs[0]; q++) {
        ks_csr A;
        generate(probs[q].kind, probs[q].n, &A);
        ks_matrix *Mc = dist_of(be, &A, probs[q].empty), *Md = dist_of(cuda, &A, probs[q].empty);
        for (unsigned long long seed = 3; seed <= 4; seed++) {
            ks_dist_strength Sc, Sd;
            ks_dist_coarse Cc, Cd;
            int *cfc, *cfd;
            splitting_of(Mc, seed, &Sc, &cfc, &Cc);
            splitting_of(Md, seed, &Sd, &cfd, &Cd);
            const ks_int n = Sc.nloc;
            ks_int differ = Sd.nloc == n ? 0 : 1, cpts = 0;
            for (ks_int i = 0; !differ && i < n; i++) {
                differ += cfc[i] != cfd[i];
                cpts += cfc[i] == KS_CPT;
            }
            ALL(!differ && Cc.nc == Cd.nc && Cc.nc_global == Cd.nc_global,
                "problem %zu (%d^3, %s layout), seed %llu: the device's splitting differs from "
                "the host's (%lld points differ; C points %lld / %lld global, host %lld / "
                "%lld)", q, probs[q].n, probs[q].empty ? "uneven" : "even", seed,
                (long long)differ, (long long)Cd.nc, (long long)Cd.nc_global,
                (long long)Cc.nc, (long long)Cc.nc_global);
            ALL(n == 0 || cpts > 0 || Cc.nc_global > 0, "problem %zu: no C point", q);
            splitting_free(&Sc, cfc, &Cc);
            splitting_free(&Sd, cfd, &Cd);
        }
        ks_matrix_destroy(&Mc);
        ks_matrix_destroy(&Md);
        ks_csr_free(&A);
    }
}
END_TEST

/* Distributed interpolation built on the device (ks_dist_interp on cuda:
 * each rank's local system uploaded, the kernel table's row-range
 * builders and truncation run there, the rows downloaded) against the
 * host's builders: the same rows bit for bit, D1 and extended+i, even and
 * uneven layouts (ranks without rows), untruncated and truncated as the
 * setup does it on cuda (in the interpolation) against the host rows
 * truncated by ks_dist_prows_truncate (the setup's host step). */
START_TEST(test_dist_interp)
{
    need_cuda();
    static const dist_problem probs[] = {{KS_GEN_POISSON3D_7, 14, 0},
                                         {KS_GEN_POISSON3D_7, 13, 1},
                                         {KS_GEN_POISSON3D_27, 9, 0},
                                         {KS_GEN_POISSON3D_27, 8, 1}};
    static const ks_dist_trunc trs[] = {{0, 0.0}, {4, 0.0}, {0, 0.2}, {3, 0.1}, {1, 0.0}};
    for (size_t q = 0; q < sizeof probs / sizeof probs[0]; q++) {
        ks_csr A;
        generate(probs[q].kind, probs[q].n, &A);
        ks_matrix *M = dist_of(cuda, &A, probs[q].empty);
        ks_dist_strength S;
        ks_dist_coarse C;
        int *cf;
        splitting_of(M, 7 + q, &S, &cf, &C);
        for (int k = 0; k < 2; k++) {
            const ks_amg_interp kind = k ? KS_AMG_D2 : KS_AMG_D1;
            for (size_t t = 0; t < sizeof trs / sizeof trs[0]; t++) {
                ks_dist_prows H, D;
                KS_ALL(ks_dist_interp(NULL, M, &S, cf, &C, kind, NULL, &H));
                if (ks_dist_trunc_active(&trs[t]))
                    KS_ALL(ks_dist_prows_truncate(&H, trs[t].max_elements, trs[t].factor));
                KS_ALL(ks_dist_interp(cuda, M, &S, cf, &C, kind, &trs[t], &D));
                ALL(same_prows(&H, &D), "problem %zu (%d^3, %s layout) %s truncated (%d, %g): "
                    "the device's rows (%lld entries here) differ from the host's (%lld)", q,
                    probs[q].n, probs[q].empty ? "uneven" : "even", k ? "D2" : "D1",
                    trs[t].max_elements, trs[t].factor, (long long)D.rowptr[D.nloc],
                    (long long)H.rowptr[H.nloc]);
                ks_dist_prows_free(&H);
                ks_dist_prows_free(&D);
            }
        }
        splitting_free(&S, cf, &C);
        ks_matrix_destroy(&M);
        ks_csr_free(&A);
    }
}
END_TEST

/* X and Y hold the same rows: shape, pattern and value bits. */
static int same_dist_csr(const ks_dist_csr *X, const ks_dist_csr *Y)
{
    return X->nrows == Y->nrows && X->nnz == Y->nnz && X->row_begin == Y->row_begin &&
           X->nrows_global == Y->nrows_global && X->ncols_global == Y->ncols_global &&
           !memcmp(X->rowptr, Y->rowptr, ((size_t)X->nrows + 1) * sizeof *X->rowptr) &&
           !memcmp(X->colind, Y->colind, (size_t)X->nnz * sizeof *X->colind) &&
           !memcmp(X->val, Y->val, (size_t)X->nnz * sizeof *X->val);
}

/* The distributed A P of a cuda matrix (its blocks merged on the device,
 * ks_sparse_merge_blocks, the product reading them there; one rank or a
 * rank without ghosts: the local block in place) is the cpu matrix's bit
 * for bit, and makes no host copy of the blocks; so is P^T A P (A P left
 * on the device). The same P (the cpu matrix's D1 interpolation), even and
 * lopsided layouts (ranks without rows). */
START_TEST(test_dist_ap)
{
    need_cuda();
    static const dist_problem probs[] = {{KS_GEN_POISSON3D_7, 13, 0},
                                         {KS_GEN_POISSON3D_7, 12, 1},
                                         {KS_GEN_POISSON3D_27, 9, 0},
                                         {KS_GEN_POISSON3D_27, 8, 1}};
    for (size_t q = 0; q < sizeof probs / sizeof probs[0]; q++) {
        ks_csr A;
        generate(probs[q].kind, probs[q].n, &A);
        ks_matrix *Mc = dist_of(be, &A, probs[q].empty), *Md = dist_of(cuda, &A, probs[q].empty);
        ks_matrix_host_csr_free(Md); /* whatever making it left */
        ks_dist_strength S;
        ks_dist_coarse C;
        int *cf;
        splitting_of(Mc, 3 + q, &S, &cf, &C);
        ks_dist_prows P;
        KS_ALL(ks_dist_interp(NULL, Mc, &S, cf, &C, KS_AMG_D1, NULL, &P));
        ks_dist_csr APc, APd, Ac, Ad;
        KS_ALL(ks_dist_ap(Mc, &P, &APc));
        KS_ALL(ks_dist_ap(Md, &P, &APd));
        ALL(same_dist_csr(&APc, &APd), "problem %zu (%d^3, %s layout): the cuda matrix's A P "
            "(%lld entries here) differs from the cpu matrix's (%lld)", q, probs[q].n,
            probs[q].empty ? "uneven" : "even", (long long)APd.nnz, (long long)APc.nnz);
        const ks_matrix *G = Md->dist->ghost;
        ALL(!Md->dist->local->host_owned && !(G && G->host_owned),
            "problem %zu: the cuda matrix's A P made a host copy of its blocks", q);
        KS_ALL(ks_dist_rap(Mc, &P, &Ac));
        KS_ALL(ks_dist_rap(Md, &P, &Ad));
        ALL(same_dist_csr(&Ac, &Ad), "problem %zu (%d^3, %s layout): the cuda matrix's P^T A P "
            "(%lld entries here) differs from the cpu matrix's (%lld)", q, probs[q].n,
            probs[q].empty ? "uneven" : "even", (long long)Ad.nnz, (long long)Ac.nnz);
        ks_dist_csr_free(&APc);
        ks_dist_csr_free(&APd);
        ks_dist_csr_free(&Ac);
        ks_dist_csr_free(&Ad);
        ks_dist_prows_free(&P);
        splitting_free(&S, cf, &C);
        ks_matrix_destroy(&Mc);
        ks_matrix_destroy(&Md);
        ks_csr_free(&A);
    }
}
END_TEST

/* The skip line scripts/test counts (the MPI harness prints none itself);
 * the cuda backend goes before MPI_Finalize. */
static void after(void)
{
    if (rank == 0 && !have_cuda)
        printf("SKIPPED: 14 (no CUDA device on every rank: distributed AMG on cuda)\n");
    ks_backend_destroy(&cuda);
}

static Suite *suite(void)
{
    Suite *s = suite_create("mpi_amg_cuda");
    TCase *t = tcase_create("amg_cuda");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_staged_levels_cpu);
    /* every rank must have a device (a collective question) */
    have_cuda = ks_backend_available("cuda");
    MPI_Allreduce(MPI_IN_PLACE, &have_cuda, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (have_cuda) {
        if (ks_backend_create("cuda", &cuda) != KS_OK)
            snprintf(cuda_err, sizeof cuda_err, "%s", ks_last_error());
        tcase_add_test(t, test_local_spgemm);
        tcase_add_test(t, test_dist_strength);
        tcase_add_test(t, test_dist_spectral);
        tcase_add_test(t, test_dist_pmis_device);
        tcase_add_test(t, test_dist_interp);
        tcase_add_test(t, test_dist_ap);
        tcase_add_test(t, test_poisson7);
        tcase_add_test(t, test_poisson27);
        tcase_add_test(t, test_options_poisson7);
        tcase_add_test(t, test_options_poisson27);
        tcase_add_test(t, test_gs_refused);
        tcase_add_test(t, test_amg_standalone);
        tcase_add_test(t, test_resetup);
        tcase_add_test(t, test_one_rank_device);
    }
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    /* this program tests the distributed setup, on one rank too */
    setenv("KS_AMG_ONE_RANK", "distributed", 1);
    return ks_test_mpi_run(&argc, &argv, "test_mpi_amg_cuda", suite, after);
}
