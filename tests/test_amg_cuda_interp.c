/* The cuda interpolation steps (amg/cuda/amg_cuda_interp.h) against the
 * cpu table (amg/cpu/amg_cpu.c): coarse numbering, direct (D1) and
 * extended+i (D2) interpolation, truncation, the re-setup projection and
 * the smoothed prolongator must give identical patterns and values within
 * 1e-12 relative (the kernels aim at the same bits: every comparison
 * prints its largest difference and how many values are not bit-equal, so
 * one GPU run shows everything), and fail with the cpu's error codes.
 *
 * Inputs: strength graphs and PMIS splittings made on the host by the cpu
 * functions, for generated problems (2D/3D Poisson 5/7/27-point,
 * anisotropic, convection-diffusion, several seeds), the real matrices of
 * ../shared/matrices (when present), random small integer matrices (exact
 * cancellations: empty rows from lumping, atil_ii = 0, D_k = 0, ties in
 * truncation, explicit zeros), hand-made rows whose interpolatory sets
 * land on the sizes where the device's extended+i changes bins (hubs) and
 * edge cases (one row, all C, all F with and without strong connections,
 * no rows). Without a CUDA device every test is skipped, saying so. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"
#include "amg/cuda/amg_cuda_interp.h"
#include "sparse/sparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12

#ifdef KS_HAVE_CUDA

/* ------------------------------------------------------------- fixtures */

typedef struct ctx {
    ks_backend *cpu, *cu;
    const ks_amg_kernels *C, *G;
} ctx;

static void ctx_init(ctx *x)
{
    KS_CHECK(ks_backend_create("cpu", &x->cpu));
    KS_CHECK(ks_backend_create("cuda", &x->cu));
    x->C = &ks_amg_cpu_kernels;
    x->G = &ks_amg_cuda_kernels;
    ck_assert(x->G->interp_direct && x->G->interp_extended_i && x->G->interp_truncate &&
              x->G->interp_project && x->G->smooth_prolongator);
}

static void ctx_free(ctx *x)
{
    ks_backend_destroy(&x->cpu);
    ks_backend_destroy(&x->cu);
}

/* A problem on the host and on both backends. */
typedef struct prob {
    char name[128];
    ks_csr A;
    ks_strength S;
    int *cf;
    ks_int nc;
    ks_sparse Ac, Sc, Ag, Sg; /* cpu backend, cuda */
    int *cfg;                 /* cf on cuda */
} prob;

static ks_csr strength_csr(const ks_strength *S)
{
    ks_csr H = {S->n, S->n, S->rowptr[S->n], S->rowptr, S->colind, NULL};
    return H;
}

/* A, S and cf (already on the host) onto both backends. */
static void prob_upload(ctx *x, prob *p)
{
    ks_csr Sh = strength_csr(&p->S);
    KS_CHECK(ks_sparse_from_csr(x->cpu, &p->A, 0, &p->Ac));
    KS_CHECK(ks_sparse_from_csr(x->cpu, &Sh, 1, &p->Sc));
    KS_CHECK(ks_sparse_from_csr(x->cu, &p->A, 0, &p->Ag));
    KS_CHECK(ks_sparse_from_csr(x->cu, &Sh, 1, &p->Sg));
    KS_CHECK(ks_be_upload_new(x->cu, p->cf, (size_t)p->A.nrows * sizeof(int), (void **)&p->cfg,
                              "test splitting"));
}

static void prob_free(ctx *x, prob *p)
{
    ks_sparse_free(&p->Ac);
    ks_sparse_free(&p->Sc);
    ks_sparse_free(&p->Ag);
    ks_sparse_free(&p->Sg);
    if (p->cfg)
        x->cu->ops->free(x->cu, p->cfg);
    ks_csr_free(&p->A);
    ks_strength_free(&p->S);
    free(p->cf);
    memset(p, 0, sizeof *p);
}

/* Classical strength and PMIS on the host, as the setup makes them. */
static void prob_classical(prob *p, double theta, unsigned long long seed)
{
    KS_CHECK(ks_amg_strength_classical(&p->A, theta, 0.9, &p->S));
    p->cf = malloc(((size_t)p->A.nrows + 1) * sizeof *p->cf);
    ck_assert(p->cf);
    KS_CHECK(ks_amg_pmis(&p->S, seed, p->cf, &p->nc));
}

/* ----------------------------------------------------------- comparison */

static void print_row(const char *who, const ks_csr *P, ks_int i)
{
    printf("    %s row %d:", who, i);
    for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1] && k < P->rowptr[i] + 12; k++)
        printf(" (%d, %.17g)", P->colind[k], P->val ? P->val[k] : 1.0);
    printf("%s\n", P->rowptr[i + 1] - P->rowptr[i] > 12 ? " ..." : "");
}

/* Pc (cpu) and Pg (cuda): same shape, row pointers and columns, values
 * within TOL relative to the largest |value| of their row (so a weight
 * that cancels to nearly nothing is not held to a tighter bound than its
 * row's rounding). Prints the largest entrywise relative difference, the
 * largest row-relative one and the count of values that are not bit for
 * bit equal (the kernels aim at 0); the first differing row is printed
 * before a failure. */
static void compare(const char *what, const ks_sparse *Pc, const ks_sparse *Pg)
{
    ks_csr C, G;
    KS_CHECK(ks_sparse_to_csr(Pc, &C));
    KS_CHECK(ks_sparse_to_csr(Pg, &G));
    ck_assert_msg(C.nrows == G.nrows && C.ncols == G.ncols && C.nnz == G.nnz,
                  "%s: cpu %d x %d (%d entries), cuda %d x %d (%d entries)", what, C.nrows,
                  C.ncols, C.nnz, G.nrows, G.ncols, G.nnz);
    ks_int bad = -1;
    for (ks_int i = 0; i < C.nrows && bad < 0; i++) {
        if (C.rowptr[i + 1] != G.rowptr[i + 1])
            bad = i;
        for (ks_int k = C.rowptr[i]; bad < 0 && k < C.rowptr[i + 1]; k++)
            if (C.colind[k] != G.colind[k])
                bad = i;
    }
    if (bad >= 0) {
        printf("%s: patterns differ first at row %d\n", what, bad);
        print_row("cpu ", &C, bad);
        print_row("cuda", &G, bad);
        fflush(stdout);
    }
    ck_assert_msg(bad < 0, "%s: patterns differ first at row %d", what, bad);
    double maxrel = 0.0, maxrow = 0.0;
    long notbit = 0;
    ks_int worst = -1;
    for (ks_int i = 0; i < C.nrows; i++) {
        double scale = 0.0;
        for (ks_int k = C.rowptr[i]; k < C.rowptr[i + 1]; k++)
            scale = fmax(scale, fabs(C.val[k]));
        for (ks_int k = C.rowptr[i]; k < C.rowptr[i + 1]; k++) {
            const double diff = G.val[k] == C.val[k] ? 0.0 : fabs(G.val[k] - C.val[k]);
            const double d = diff / fmax(fabs(C.val[k]), 1e-300);
            const double dr = diff / fmax(scale, 1e-300);
            if (!(d <= maxrel))
                maxrel = isnan(d) ? INFINITY : d;
            if (!(dr <= maxrow)) {
                maxrow = isnan(dr) ? INFINITY : dr;
                worst = i;
            }
            notbit += memcmp(&G.val[k], &C.val[k], sizeof(double)) != 0;
        }
    }
    printf("  %-58s %7d x %-7d nnz %-9d max rel diff %-9.3g (row-relative %-9.3g) not "
           "bit-equal %ld\n", what, C.nrows, C.ncols, C.nnz, maxrel, maxrow, notbit);
    if (maxrow > TOL && worst >= 0) {
        print_row("cpu ", &C, worst);
        print_row("cuda", &G, worst);
    }
    fflush(stdout);
    ck_assert_msg(maxrow <= TOL, "%s: values differ by %g relative to their row (row %d)", what,
                  maxrow, worst);
    ks_csr_free(&C);
    ks_csr_free(&G);
}

/* ------------------------------------------------------------ the steps */

typedef ks_error (*interp_entry)(const ks_sparse *, const ks_sparse *, const int *, ks_sparse *);

static const struct {
    int max_elements;
    double factor;
} trunc_pairs[] = {{0, 0.0}, {4, 0.0}, {0, 0.2}, {4, 0.2}, {1, 0.0}, {2, 0.5}, {6, 0.1}, {3, 1.0}};
#define NPAIRS ((int)(sizeof trunc_pairs / sizeof trunc_pairs[0]))

/* A with its values perturbed (same pattern, signs kept), for re-setup. */
static void perturbed(const ks_csr *A, uint64_t seed, ks_csr *B)
{
    KS_CHECK(ks_csr_copy(A, B));
    ks_test_rng_seed(seed);
    for (ks_int k = 0; k < B->nnz; k++)
        B->val[k] *= 1.0 + 0.3 * (ks_test_urand() - 0.5);
}

/* Pn (cpu, cuda) projected onto copies of (Tc, Tg) on both backends with
 * `truncated`; the flags agree and so do the values (written also when
 * the projection does not fit, on both). Returns the flag. */
static int project_both(ctx *x, const char *what, const ks_sparse *Nc, const ks_sparse *Ng,
                        const ks_sparse *Tc, const ks_sparse *Tg, int truncated)
{
    ks_sparse Xc, Xg;
    KS_CHECK(ks_sparse_copy(Tc, x->cpu, &Xc));
    KS_CHECK(ks_sparse_copy(Tg, x->cu, &Xg));
    int chc = -1, chg = -1;
    KS_CHECK(x->C->interp_project(Nc, &Xc, truncated, &chc));
    KS_CHECK(x->G->interp_project(Ng, &Xg, truncated, &chg));
    char buf[200];
    snprintf(buf, sizeof buf, "%s (changed %d)", what, chc);
    ck_assert_msg(chc == chg, "%s: projection changed = %d on the cpu, %d on cuda", what, chc,
                  chg);
    compare(buf, &Xc, &Xg);
    ks_sparse_free(&Xc);
    ks_sparse_free(&Xg);
    return chc;
}

/* D1 and D2 of p on both backends, compared; then each truncation pair
 * on copies, compared; with `project`, re-setup projections from a
 * perturbed A onto each truncated pattern: as the setup does it (truncated
 * = whether the pair truncates; must fit when fit_expected), and with
 * truncated = 0 where truncation dropped entries (must not fit). */
static void interp_all(ctx *x, prob *p, int project, int fit_expected)
{
    const char *kname[2] = {"D1", "D2"};
    interp_entry cfn[2] = {x->C->interp_direct, x->C->interp_extended_i};
    interp_entry gfn[2] = {x->G->interp_direct, x->G->interp_extended_i};
    prob q;
    memset(&q, 0, sizeof q);
    if (project) {
        perturbed(&p->A, 99, &q.A);
        KS_CHECK(ks_sparse_from_csr(x->cpu, &q.A, 0, &q.Ac));
        KS_CHECK(ks_sparse_from_csr(x->cu, &q.A, 0, &q.Ag));
    }
    for (int f = 0; f < 2; f++) {
        char what[200];
        ks_sparse Pc, Pg;
        KS_CHECK(cfn[f](&p->Ac, &p->Sc, p->cf, &Pc));
        KS_CHECK(gfn[f](&p->Ag, &p->Sg, p->cfg, &Pg));
        ck_assert_int_eq(Pg.ncols, p->nc);
        ck_assert(Pg.be == x->cu);
        snprintf(what, sizeof what, "%s %s", p->name, kname[f]);
        compare(what, &Pc, &Pg);
        ks_sparse Nc, Ng;
        if (project) {
            KS_CHECK(cfn[f](&q.Ac, &p->Sc, p->cf, &Nc));
            KS_CHECK(gfn[f](&q.Ag, &p->Sg, p->cfg, &Ng));
            snprintf(what, sizeof what, "%s %s, perturbed A", p->name, kname[f]);
            compare(what, &Nc, &Ng);
        }
        for (int t = 0; t < NPAIRS; t++) {
            const int me = trunc_pairs[t].max_elements;
            const double fa = trunc_pairs[t].factor;
            ks_sparse Tc, Tg;
            KS_CHECK(ks_sparse_copy(&Pc, x->cpu, &Tc));
            KS_CHECK(ks_sparse_copy(&Pg, x->cu, &Tg));
            KS_CHECK(x->C->interp_truncate(&Tc, me, fa));
            KS_CHECK(x->G->interp_truncate(&Tg, me, fa));
            ck_assert(Tg.be == x->cu);
            snprintf(what, sizeof what, "%s %s truncated (%d, %g)", p->name, kname[f], me, fa);
            compare(what, &Tc, &Tg);
            if (project) {
                const int truncated = me > 0 || fa > 0.0;
                snprintf(what, sizeof what, "%s %s projected onto (%d, %g)", p->name, kname[f],
                         me, fa);
                int ch = project_both(x, what, &Nc, &Ng, &Tc, &Tg, truncated);
                if (fit_expected)
                    ck_assert_msg(!ch, "%s: expected to fit", what);
                if (Tc.nnz < Pc.nnz) {
                    snprintf(what, sizeof what, "%s %s projected onto (%d, %g), untruncated",
                             p->name, kname[f], me, fa);
                    ch = project_both(x, what, &Nc, &Ng, &Tc, &Tg, 0);
                    ck_assert_msg(ch, "%s: expected not to fit", what);
                }
            }
            ks_sparse_free(&Tc);
            ks_sparse_free(&Tg);
        }
        if (project) {
            ks_sparse_free(&Nc);
            ks_sparse_free(&Ng);
        }
        ks_sparse_free(&Pc);
        ks_sparse_free(&Pg);
    }
    if (project) {
        ks_sparse_free(&q.Ac);
        ks_sparse_free(&q.Ag);
        ks_csr_free(&q.A);
    }
}

/* P = (I - 4/(3 rho) D^-1 A) P0 on both backends from host A and P0. */
static void smooth_both(ctx *x, const char *what, const ks_csr *A, const ks_csr *P0, double rho)
{
    ks_sparse Ac, Ag, Qc, Qg, Pc, Pg;
    KS_CHECK(ks_sparse_from_csr(x->cpu, A, 0, &Ac));
    KS_CHECK(ks_sparse_from_csr(x->cu, A, 0, &Ag));
    KS_CHECK(ks_sparse_from_csr(x->cpu, P0, 0, &Qc));
    KS_CHECK(ks_sparse_from_csr(x->cu, P0, 0, &Qg));
    KS_CHECK(x->C->smooth_prolongator(&Ac, &Qc, rho, &Pc));
    KS_CHECK(x->G->smooth_prolongator(&Ag, &Qg, rho, &Pg));
    ck_assert(Pg.be == x->cu);
    compare(what, &Pc, &Pg);
    ks_sparse_free(&Ac);
    ks_sparse_free(&Ag);
    ks_sparse_free(&Qc);
    ks_sparse_free(&Qg);
    ks_sparse_free(&Pc);
    ks_sparse_free(&Pg);
}

/* Smoothed aggregation as the setup does it: symmetric strength,
 * aggregates, tentative P0, rho(D^-1 A) by 12 Lanczos steps. */
static void smoothed_aggregation(ctx *x, const char *name, const ks_csr *A, double theta)
{
    ks_strength S;
    KS_CHECK(ks_amg_strength_symmetric(A, theta, &S));
    ks_int *agg = malloc(((size_t)A->nrows + 1) * sizeof *agg), na = 0;
    ck_assert(agg);
    KS_CHECK(ks_amg_aggregate(&S, agg, &na));
    ks_csr P0;
    KS_CHECK(ks_amg_tentative_prolongator(A->nrows, agg, na, &P0));
    double rho = 0.0;
    KS_CHECK(ks_amg_spectral_radius_dinv_a(A, 12, &rho));
    char what[200];
    snprintf(what, sizeof what, "%s smoothed P (rho %.4g)", name, rho);
    smooth_both(x, what, A, &P0, rho);
    ks_csr_free(&P0);
    free(agg);
    ks_strength_free(&S);
}

/* First row whose diagonal is zero or missing, or n. */
static ks_int zero_diagonal(const ks_csr *A)
{
    for (ks_int i = 0; i < A->nrows; i++) {
        double d = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i)
                d = A->val[k];
        if (d == 0.0)
            return i;
    }
    return A->nrows;
}

/* --------------------------------------------------------------- tests */

/* The coarse numbering against ks_amg_coarse_map at sizes around the
 * scan's tiles; a point neither C nor F is refused naming it. */
START_TEST(coarse_map)
{
    ctx x;
    ctx_init(&x);
    const ks_int sizes[] = {0, 1, 2, 1023, 1024, 1025, 70001};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        const ks_int n = sizes[t];
        int *cf = malloc(((size_t)n + 1) * sizeof *cf);
        ks_int *want = malloc(((size_t)n + 1) * sizeof *want);
        ks_int *got = malloc(((size_t)n + 1) * sizeof *got);
        ck_assert(cf && want && got);
        for (int pattern = 0; pattern < 3; pattern++) {
            ks_test_rng_seed((uint64_t)n * 3 + (uint64_t)pattern);
            for (ks_int i = 0; i < n; i++)
                cf[i] = pattern == 0 ? (ks_test_urand() < 0.3 ? KS_CPT : KS_FPT)
                                     : pattern == 1 ? KS_CPT : KS_FPT;
            ks_int nc_want = -1, nc_got = -1;
            KS_CHECK(ks_amg_coarse_map(n, cf, want, &nc_want));
            int *cfd = NULL;
            ks_int *cmd = NULL;
            KS_CHECK(ks_be_upload_new(x.cu, cf, (size_t)n * sizeof *cf, (void **)&cfd, "cf"));
            KS_CHECK(ks_be_alloc(x.cu, ((size_t)n + 1) * sizeof *cmd, (void **)&cmd, "cmap"));
            KS_CHECK(ks_cu_coarse_map(x.cu, n, cfd, cmd, &nc_got));
            KS_CHECK(x.cu->ops->download(x.cu, got, cmd, (size_t)n * sizeof *got));
            ck_assert_int_eq(nc_got, nc_want);
            ck_assert_msg(n == 0 || !memcmp(got, want, (size_t)n * sizeof *got),
                          "coarse map differs (n %d, pattern %d)", n, pattern);
            if (n > 1) { /* an undecided point, and one marked 7 before it */
                cf[n / 2] = KS_UNDECIDED;
                if (n > 3)
                    cf[n / 3] = 7;
                ks_int bad_at = n > 3 ? n / 3 : n / 2;
                KS_CHECK(x.cu->ops->upload(x.cu, cfd, cf, (size_t)n * sizeof *cf));
                ck_assert_int_eq(ks_amg_coarse_map(n, cf, want, &nc_want), KS_ERR_ARG);
                ck_assert_int_eq(ks_cu_coarse_map(x.cu, n, cfd, cmd, &nc_got), KS_ERR_ARG);
                char needle[64];
                snprintf(needle, sizeof needle, "point %d ", bad_at);
                ck_assert_msg(strstr(ks_last_error(), needle), "message: %s", ks_last_error());
            }
            x.cu->ops->free(x.cu, cfd);
            x.cu->ops->free(x.cu, cmd);
        }
        free(cf);
        free(want);
        free(got);
    }
    ctx_free(&x);
}
END_TEST

/* Generated problems, PMIS splittings of several seeds. */
static const struct gen_case {
    const char *name;
    ks_gen_kind kind;
    int nx, ny, nz;
    double cx, cy, cz, vx;
    double theta;
} gen_cases[] = {
    {"poisson2d_5 64^2", KS_GEN_POISSON2D_5, 64, 64, 1, 1, 1, 1, 0, 0.25},
    {"poisson2d_9 40^2", KS_GEN_POISSON2D_9, 40, 40, 1, 1, 1, 1, 0, 0.25},
    {"poisson3d_7 16^3", KS_GEN_POISSON3D_7, 16, 16, 16, 1, 1, 1, 0, 0.25},
    {"poisson3d_27 14^3", KS_GEN_POISSON3D_27, 14, 14, 14, 1, 1, 1, 0, 0.25},
    {"aniso3d 16^3 (1, 1, 1e-3)", KS_GEN_ANISO3D, 16, 16, 16, 1, 1, 1e-3, 0, 0.25},
    {"aniso3d 16^3 (1, 1e-2, 1e2)", KS_GEN_ANISO3D, 16, 16, 16, 1, 1e-2, 1e2, 0, 0.5},
    {"convdiff3d 16^3 v 20", KS_GEN_CONVDIFF3D, 16, 16, 16, 1, 1, 1, 20, 0.25},
    {"convdiff3d 12^3 v 1", KS_GEN_CONVDIFF3D, 12, 12, 12, 1, 1, 1, 1, 0.25},
};
#define NGEN ((int)(sizeof gen_cases / sizeof gen_cases[0]))
static const unsigned long long seeds[] = {1, 7, 12345};
#define NSEEDS ((int)(sizeof seeds / sizeof seeds[0]))

static void gen_matrix(const struct gen_case *g, ks_csr *A)
{
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = g->kind;
    gp.nx = g->nx;
    gp.ny = g->ny;
    gp.nz = g->nz;
    gp.cx = g->cx;
    gp.cy = g->cy;
    gp.cz = g->cz;
    if (g->kind == KS_GEN_CONVDIFF3D)
        gp.vx = gp.vy = gp.vz = g->vx;
    KS_CHECK(ks_generate(&gp, A));
}

/* _i: one generated case, every seed: D1, D2, truncations, projections. */
START_TEST(generated)
{
    ctx x;
    ctx_init(&x);
    const struct gen_case *g = &gen_cases[_i];
    for (int s = 0; s < NSEEDS; s++) {
        prob p;
        memset(&p, 0, sizeof p);
        gen_matrix(g, &p.A);
        prob_classical(&p, g->theta, seeds[s]);
        snprintf(p.name, sizeof p.name, "%s seed %llu", g->name, seeds[s]);
        prob_upload(&x, &p);
        interp_all(&x, &p, 1, 1);
        if (s == 0)
            smoothed_aggregation(&x, g->name, &p.A, 0.08);
        prob_free(&x, &p);
    }
    ctx_free(&x);
}
END_TEST

/* Long distance-two rows: 27-point 40^3 (64000 rows), D2 with hundreds of
 * candidate entries a row, and theta 0 (every coupling strong). */
START_TEST(long_rows)
{
    ctx x;
    ctx_init(&x);
    const double thetas[2] = {0.25, 0.0};
    for (int t = 0; t < 2; t++) {
        struct gen_case g = {"poisson3d_27 40^3", KS_GEN_POISSON3D_27, 40, 40, 40, 1, 1, 1, 0,
                             thetas[t]};
        prob p;
        memset(&p, 0, sizeof p);
        gen_matrix(&g, &p.A);
        prob_classical(&p, g.theta, 3);
        snprintf(p.name, sizeof p.name, "%s theta %g", g.name, g.theta);
        prob_upload(&x, &p);
        interp_all(&x, &p, 0, 0);
        if (t == 0)
            smoothed_aggregation(&x, p.name, &p.A, 0.0);
        prob_free(&x, &p);
    }
    ctx_free(&x);
}
END_TEST

static const char *const shared_names[] = {
    "fv1.mtx.gz",     "ani4.mtx.gz",       "ani5_crop.mtx.gz", "bcsstk13.mtx.gz",
    "bcsstk14.mtx.gz", "cage11.mtx.gz",    "poisson3Da.mtx.gz", "cavity26.mtx.gz",
    "raefsky2.mtx.gz", "watt_2.mtx.gz",    "memplus.mtx.gz",   "rajat01.mtx.gz",
    "hangGlider_2.mtx.gz"};
#define NSHARED ((int)(sizeof shared_names / sizeof shared_names[0]))

/* _i: one real matrix (absent ones were counted as skipped in main). A
 * zero diagonal at an F point is refused by both backends alike (AMG
 * refuses such matrices), so its values are not compared. */
START_TEST(shared_matrix)
{
    const char *path = ks_test_shared_matrix(shared_names[_i]);
    if (!path)
        return;
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    KS_CHECK(ks_mm_read_csr(path, &p.A, NULL));
    prob_classical(&p, 0.25, 1);
    snprintf(p.name, sizeof p.name, "%s", shared_names[_i]);
    prob_upload(&x, &p);
    const ks_int zd = zero_diagonal(&p.A);
    if (zd < p.A.nrows) {
        interp_entry cfn[2] = {x.C->interp_direct, x.C->interp_extended_i};
        interp_entry gfn[2] = {x.G->interp_direct, x.G->interp_extended_i};
        for (int f = 0; f < 2; f++) {
            ks_sparse Pc, Pg;
            ks_error ec = cfn[f](&p.Ac, &p.Sc, p.cf, &Pc);
            ks_error eg = gfn[f](&p.Ag, &p.Sg, p.cfg, &Pg);
            ck_assert_msg(ec == eg, "%s: cpu %s, cuda %s (%s)", p.name, ks_error_name(ec),
                          ks_error_name(eg), ks_last_error());
            if (ec == KS_OK) {
                compare(p.name, &Pc, &Pg);
                ks_sparse_free(&Pc);
                ks_sparse_free(&Pg);
            }
        }
        printf("  %s: zero diagonal at row %d: values not compared (both backends: the same "
               "result)\n", p.name, zd);
    } else {
        interp_all(&x, &p, 1, 0);
        smoothed_aggregation(&x, p.name, &p.A, 0.08);
    }
    prob_free(&x, &p);
    ctx_free(&x);
}
END_TEST

/* A random n x n matrix of small integers (exact sums, so cancellations
 * happen: lumping that empties D1 rows, atil_ii = 0, D_k = 0, ties in
 * truncation), explicit zeros now and then, nonzero diagonals of either
 * sign (some rows with zero row sum); S a random part of the off-diagonal
 * pattern; a random splitting. */
static void random_problem(prob *p, ks_int n, uint64_t seed)
{
    ks_test_rng_seed(seed);
    const double dens = 0.05 + 0.4 * ks_test_urand(), strong = 0.3 + 0.7 * ks_test_urand();
    const double cfrac = 0.15 + 0.5 * ks_test_urand();
    const int64_t cap = (int64_t)n * n + 1;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t ne = 0;
    for (ks_int i = 0; i < n; i++) {
        double off = 0.0;
        for (ks_int j = 0; j < n; j++) {
            if (j == i || ks_test_urand() >= dens)
                continue;
            const int k = (int)(ks_test_rng_next() % 8); /* -3..3, and 0 once in 8 */
            const double a = k == 7 ? 0.0 : (double)(k < 3 ? k - 3 : k - 2);
            r[ne] = i;
            c[ne] = j;
            v[ne++] = a;
            off += a;
        }
        double d = (double)((int)(ks_test_rng_next() % 9) - 4);
        if (ks_test_urand() < 0.3)
            d = -off; /* zero row sum */
        if (d == 0.0)
            d = ks_test_urand() < 0.5 ? 1.0 : -2.0;
        r[ne] = i;
        c[ne] = i;
        v[ne++] = d;
    }
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, c, v, &p->A, NULL));
    free(r);
    free(c);
    free(v);
    ks_strength *S = &p->S;
    S->n = n;
    S->rowptr = malloc(((size_t)n + 1) * sizeof *S->rowptr);
    S->colind = malloc(((size_t)p->A.nnz + 1) * sizeof *S->colind);
    ck_assert(S->rowptr && S->colind);
    S->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int w = S->rowptr[i];
        for (ks_int k = p->A.rowptr[i]; k < p->A.rowptr[i + 1]; k++)
            if (p->A.colind[k] != i && ks_test_urand() < strong)
                S->colind[w++] = p->A.colind[k];
        S->rowptr[i + 1] = w;
    }
    p->cf = malloc(((size_t)n + 1) * sizeof *p->cf);
    ck_assert(p->cf);
    p->nc = 0;
    for (ks_int i = 0; i < n; i++) {
        p->cf[i] = ks_test_urand() < cfrac ? KS_CPT : KS_FPT;
        p->nc += p->cf[i] == KS_CPT;
    }
}

/* Hand-made F rows whose interpolatory sets have chosen sizes, for the
 * device's bins (amg/cuda/interp_extended.cu: hashes of 32 to 4096 slots
 * in shared memory, by powers of two, for sets of at most 16, 32, ...,
 * 2048 points; larger sets in global memory). Its count pass bins a row by
 * a bound (the C points of S_i and of the S rows of its strong F
 * neighbours, repeats counted), the fill pass by the exact size; for every
 * s of hub_sizes, three F rows ("hubs") land on s:
 *   direct       s strong C neighbours (bound = size = s);
 *   disjoint     the size through strong F neighbours with disjoint sets
 *                of C points, each also with one of i's own (size s, a
 *                larger bound);
 *   overlapping  the bound through F neighbours whose S rows are i and C
 *                points drawn from a small window (bound s, a smaller size);
 * and one hub with `wide` strong F neighbours (S rows: i and two random C
 * points), beyond the shared capacity in both passes (a row of A of
 * several thousand entries). C points are 0 .. ncp - 1, each with `pad`
 * weak couplings (which P does not see) to set the mean row length of A,
 * hence the lanes a row of the smaller bins; `filler` F rows with no
 * connection at the end (empty rows) lower it. Values: random, mostly
 * negative off the diagonal; a fifth of the F neighbours have a negative
 * diagonal (the other ahat sign; D_k = 0 then and then). Hubs also have
 * weak couplings to C points (inside their set or not) and F rows. */
static const ks_int hub_sizes[] = {1,   2,   15,  16,  17,  31,   32,   33,   63,
                                   64,  65,  127, 128, 129, 255,  256,  257,  511,
                                   512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 3000};
#define NHUB_SIZES ((int)(sizeof hub_sizes / sizeof hub_sizes[0]))

typedef struct hub_build {
    int64_t ne, cap; /* A's entries (COO), strong flag each */
    ks_int *r, *c;
    double *v;
    unsigned char *s;
    ks_int *mark; /* the row that last took a column */
    double offsum;
} hub_build;

static double hub_off(void)
{
    const double u = ks_test_urand();
    return ks_test_urand() < 0.85 ? -(0.1 + 0.9 * u) : 0.05 + 0.45 * u;
}

static void hub_push(hub_build *b, ks_int i, ks_int j, double v, int strong)
{
    if (b->ne == b->cap) {
        b->cap = 2 * b->cap + 1024;
        b->r = (ks_int *)realloc(b->r, (size_t)b->cap * sizeof *b->r);
        b->c = (ks_int *)realloc(b->c, (size_t)b->cap * sizeof *b->c);
        b->v = (double *)realloc(b->v, (size_t)b->cap * sizeof *b->v);
        b->s = (unsigned char *)realloc(b->s, (size_t)b->cap);
        ck_assert(b->r && b->c && b->v && b->s);
    }
    b->r[b->ne] = i;
    b->c[b->ne] = j;
    b->v[b->ne] = v;
    b->s[b->ne++] = (unsigned char)strong;
}

/* a_ij with a random value, unless j == i or row i has column j already. */
static void hub_add(hub_build *b, ks_int i, ks_int j, int strong)
{
    if (j == i || b->mark[j] == i)
        return;
    b->mark[j] = i;
    const double v = hub_off();
    b->offsum += fabs(v);
    hub_push(b, i, j, v, strong);
}

/* Row i's diagonal, after its couplings: their absolute sum times 0.6 to
 * 1.4, negative with probability neg. */
static void hub_diag(hub_build *b, ks_int i, double neg)
{
    const double d = (b->offsum > 0 ? b->offsum : 1.0) * (0.6 + 0.8 * ks_test_urand());
    b->offsum = 0.0;
    hub_push(b, i, i, ks_test_urand() < neg ? -d : d, 0);
}

/* Weak couplings of hub i: three C points, two of the F rows f0 .. next - 1. */
static void hub_weak(hub_build *b, ks_int i, ks_int ncp, ks_int f0, ks_int next)
{
    for (int t = 0; t < 3; t++)
        hub_add(b, i, (ks_int)(ks_test_rng_next() % (uint64_t)ncp), 0);
    for (int t = 0; t < 2 && next > f0 + 1; t++)
        hub_add(b, i, f0 + (ks_int)(ks_test_rng_next() % (uint64_t)(next - f0)), 0);
}

static ks_int hub_m(ks_int s) { return s < 8 ? 1 : s / 8 < 64 ? s / 8 : 64; }

/* A shuffled copy of 0 .. ncp - 1 into perm. */
static void hub_shuffle(ks_int *perm, ks_int ncp)
{
    for (ks_int t = 0; t < ncp; t++)
        perm[t] = t;
    for (ks_int t = ncp - 1; t > 0; t--) {
        const ks_int u = (ks_int)(ks_test_rng_next() % (uint64_t)(t + 1)), x = perm[t];
        perm[t] = perm[u];
        perm[u] = x;
    }
}

static void hub_problem(prob *p, ks_int ncp, ks_int wide, int pad, ks_int filler, uint64_t seed)
{
    ks_test_rng_seed(seed);
    ks_int n = ncp + 1 + wide + filler;
    for (int h = 0; h < NHUB_SIZES; h++)
        n += 3 + 2 * hub_m(hub_sizes[h]);
    hub_build b;
    memset(&b, 0, sizeof b);
    b.mark = (ks_int *)malloc((size_t)n * sizeof *b.mark);
    ks_int *perm = (ks_int *)malloc((size_t)ncp * sizeof *perm);
    ck_assert(b.mark && perm);
    for (ks_int j = 0; j < n; j++)
        b.mark[j] = -1;
    const ks_int f0 = ncp; /* the first F row */
    for (ks_int i = 0; i < ncp; i++) {
        for (int t = 0; t < pad; t++)
            hub_add(&b, i, (ks_int)(ks_test_rng_next() % (uint64_t)ncp), 0);
        hub_diag(&b, i, 0.0);
    }
    ks_int next = f0;
    for (int h = 0; h < NHUB_SIZES; h++) {
        const ks_int s = hub_sizes[h];
        ck_assert(s <= ncp);
        /* direct */
        ks_int i = next++;
        hub_shuffle(perm, ncp);
        for (ks_int t = 0; t < s; t++)
            hub_add(&b, i, perm[t], 1);
        hub_weak(&b, i, ncp, f0, next);
        hub_diag(&b, i, 0.0);
        /* disjoint (kind 0), overlapping (1): a points for i, t for each of
         * its m strong F neighbours */
        for (int kind = 0; kind < 2; kind++) {
            const ks_int m = hub_m(s);
            const ks_int t = kind == 0 ? s / (m + 1) : s / m, a = s - m * t;
            i = next++;
            const ks_int k0 = next;
            next += m;
            hub_shuffle(perm, ncp);
            ks_int win = 2 * (t > a ? t : a);
            if (win < s / 3 + 1)
                win = s / 3 + 1;
            if (win > ncp)
                win = ncp;
            for (ks_int u = 0; u < a; u++)
                hub_add(&b, i, perm[u], 1);
            for (ks_int k = k0; k < k0 + m; k++)
                hub_add(&b, i, k, 1);
            hub_weak(&b, i, ncp, f0, next);
            hub_diag(&b, i, 0.0);
            for (ks_int k = k0; k < k0 + m; k++) {
                const ks_int j = k - k0;
                if (kind == 0) { /* its slice, one of i's (a >= 1); i, a neighbour maybe */
                    for (ks_int u = 0; u < t; u++)
                        hub_add(&b, k, perm[a + j * t + u], 1);
                    hub_add(&b, k, perm[0], 1);
                    hub_add(&b, k, i, ks_test_urand() < 0.5);
                    if (m > 1)
                        hub_add(&b, k, k0 + (j + 1) % m, ks_test_urand() < 0.5);
                } else { /* t points of the window, and i */
                    const ks_int off = (ks_int)(ks_test_rng_next() % (uint64_t)win);
                    for (ks_int u = 0; u < t; u++)
                        hub_add(&b, k, perm[(off + u) % win], 1);
                    hub_add(&b, k, i, 1);
                }
                hub_add(&b, k, (ks_int)(ks_test_rng_next() % (uint64_t)ncp), 0);
                if (m > 1)
                    hub_add(&b, k, k0 + (j + m - 1) % m, 0);
                hub_diag(&b, k, 0.2);
            }
        }
    }
    { /* the wide hub */
        const ks_int i = next++, k0 = next;
        next += wide;
        for (ks_int k = k0; k < k0 + wide; k++)
            hub_add(&b, i, k, 1);
        hub_weak(&b, i, ncp, f0, next);
        hub_diag(&b, i, 0.0);
        for (ks_int k = k0; k < k0 + wide; k++) {
            hub_add(&b, k, (ks_int)(ks_test_rng_next() % (uint64_t)ncp), 1);
            hub_add(&b, k, (ks_int)(ks_test_rng_next() % (uint64_t)ncp), 1);
            hub_add(&b, k, i, 1);
            hub_add(&b, k, (ks_int)(ks_test_rng_next() % (uint64_t)ncp), 0);
            if (wide > 1)
                hub_add(&b, k, k0 + (k - k0 + 1) % wide, 0);
            hub_diag(&b, k, 0.2);
        }
    }
    for (ks_int i = next; i < next + filler; i++)
        hub_diag(&b, i, 0.0);
    ck_assert_int_eq(next + filler, n);
    /* A, then S: the strong entries, sorted by ks_csr_from_coo as well */
    KS_CHECK(ks_csr_from_coo(n, n, b.ne, b.r, b.c, b.v, &p->A, NULL));
    int64_t ns = 0;
    for (int64_t e = 0; e < b.ne; e++)
        if (b.s[e]) {
            b.r[ns] = b.r[e];
            b.c[ns] = b.c[e];
            b.v[ns++] = 1.0;
        }
    ks_csr Sc;
    KS_CHECK(ks_csr_from_coo(n, n, ns, b.r, b.c, b.v, &Sc, NULL));
    p->S.n = n;
    p->S.rowptr = Sc.rowptr;
    p->S.colind = Sc.colind;
    free(Sc.val);
    p->cf = (int *)malloc(((size_t)n + 1) * sizeof *p->cf);
    ck_assert(p->cf);
    for (ks_int i = 0; i < n; i++)
        p->cf[i] = i < ncp ? KS_CPT : KS_FPT;
    p->nc = ncp;
    free(b.r);
    free(b.c);
    free(b.v);
    free(b.s);
    free(b.mark);
    free(perm);
}

/* Random P0 with 0 to 3 entries a row (the cuda kernel merges any number). */
static void random_p0(ks_int n, ks_int nc, uint64_t seed, ks_csr *P0)
{
    ks_test_rng_seed(seed);
    ks_int *r = malloc(((size_t)n * 3 + 1) * sizeof *r), *c = malloc(((size_t)n * 3 + 1) * sizeof *c);
    double *v = malloc(((size_t)n * 3 + 1) * sizeof *v);
    ck_assert(r && c && v);
    int64_t ne = 0;
    for (ks_int i = 0; i < n; i++) {
        const int m = (int)(ks_test_rng_next() % 4);
        for (int t = 0; t < m; t++) {
            r[ne] = i;
            c[ne] = (ks_int)(ks_test_rng_next() % (uint64_t)nc);
            v[ne++] = ks_test_urand() - 0.3;
        }
    }
    KS_CHECK(ks_csr_from_coo(n, nc, ne, r, c, v, P0, NULL));
    free(r);
    free(c);
    free(v);
}

/* _i: a batch of random problems. D1 and D2 (with the same error where
 * the cpu refuses: a zero diagonal only where it is a C point is fine),
 * truncations and projections, and smoothed prolongators from random P0.
 * Counts how often the unusual branches ran (F rows left empty). */
START_TEST(random_small)
{
    ctx x;
    ctx_init(&x);
    long empty_rows[2] = {0, 0}, frows = 0;
    for (int t = 0; t < 40; t++) {
        const uint64_t seed = (uint64_t)_i * 1000 + (uint64_t)t;
        ks_test_rng_seed(seed * 7 + 1);
        const ks_int n = 1 + (ks_int)(ks_test_rng_next() % 90);
        prob p;
        memset(&p, 0, sizeof p);
        random_problem(&p, n, seed);
        snprintf(p.name, sizeof p.name, "random n %d seed %llu", n, (unsigned long long)seed);
        prob_upload(&x, &p);
        interp_all(&x, &p, 1, 0);
        /* how often F rows came out empty (lumping cancelled, atil = 0,
         * no C point to interpolate from) */
        interp_entry cfn[2] = {x.C->interp_direct, x.C->interp_extended_i};
        for (int f = 0; f < 2; f++) {
            ks_sparse Pc;
            KS_CHECK(cfn[f](&p.Ac, &p.Sc, p.cf, &Pc));
            for (ks_int i = 0; i < n; i++)
                if (p.cf[i] != KS_CPT) {
                    frows += f == 0;
                    empty_rows[f] += Pc.rowptr[i + 1] == Pc.rowptr[i];
                }
            ks_sparse_free(&Pc);
        }
        if (p.nc > 0) {
            ks_csr P0;
            random_p0(n, p.nc, seed, &P0);
            char what[200];
            snprintf(what, sizeof what, "%s smoothed P (random P0)", p.name);
            smooth_both(&x, what, &p.A, &P0, 0.5 + 2.0 * ks_test_urand());
            ks_csr_free(&P0);
        }
        prob_free(&x, &p);
    }
    printf("  random batch %d: %ld F rows, empty D1 rows %ld, empty D2 rows %ld\n", _i, frows,
           empty_rows[0], empty_rows[1]);
    ctx_free(&x);
}
END_TEST

/* The hubs (hub_problem) at four mean row lengths of A, rounded up: the
 * lanes a row of the device's smaller bins follow it (4, 8, 16, 32). The
 * largest sets go beyond the shared capacity (2048 points). */
static const struct {
    int pad;
    ks_int filler;
    long long lo, hi; /* the mean row length of A, rounded up, in [lo, hi] */
} hub_variants[] = {{0, 30000, 1, 4}, {0, 8000, 5, 8}, {4, 0, 9, 16}, {24, 0, 17, 1000}};
#define NHUB_VARIANTS ((int)(sizeof hub_variants / sizeof hub_variants[0]))

/* _i: one variant of the hubs: D1, D2, truncations and projections. */
START_TEST(bins)
{
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    hub_problem(&p, 4096, 3000, hub_variants[_i].pad, hub_variants[_i].filler,
                100 + (uint64_t)_i);
    const ks_int n = p.A.nrows;
    const long long mean = ((long long)p.A.nnz + n - 1) / n;
    ck_assert_msg(mean >= hub_variants[_i].lo && mean <= hub_variants[_i].hi,
                  "hubs: mean row length %lld, meant to be in [%lld, %lld]", mean,
                  hub_variants[_i].lo, hub_variants[_i].hi);
    ks_csr P;
    KS_CHECK(ks_amg_interp_extended_i(&p.A, &p.S, p.cf, &P));
    ks_int longest = 0;
    for (ks_int i = 0; i < n; i++)
        if (P.rowptr[i + 1] - P.rowptr[i] > longest)
            longest = P.rowptr[i + 1] - P.rowptr[i];
    ck_assert_msg(longest > 2048, "hubs: longest D2 row %d, meant to be over 2048", longest);
    ks_csr_free(&P);
    snprintf(p.name, sizeof p.name, "hubs, mean row %lld (longest D2 row %d)", mean, longest);
    prob_upload(&x, &p);
    interp_all(&x, &p, 1, 0);
    prob_free(&x, &p);
    ctx_free(&x);
}
END_TEST

/* Edge cases: no rows, one row (F with no connection: an empty row and no
 * coarse point; C: the unit row), all C (identity), all F with no strong
 * connections (every row empty, nc = 0), all F with strong connections
 * (no C point anywhere: empty rows). */
START_TEST(edge_cases)
{
    ctx x;
    ctx_init(&x);
    for (int c = 0; c < 7; c++) {
        prob p;
        memset(&p, 0, sizeof p);
        ks_gen_params gp;
        ks_gen_params_default(&gp);
        gp.kind = KS_GEN_POISSON2D_5;
        gp.nx = gp.ny = c < 3 ? 1 : 12;
        gp.nz = 1;
        KS_CHECK(ks_generate(&gp, &p.A));
        if (c == 0) { /* no rows at all */
            ks_csr_free(&p.A);
            KS_CHECK(ks_csr_alloc(&p.A, 0, 0, 0));
            p.A.rowptr[0] = 0;
        }
        const ks_int n = p.A.nrows;
        if (c == 6)
            KS_CHECK(ks_amg_strength_classical(&p.A, 0.25, 0.9, &p.S));
        else {
            p.S.n = n;
            p.S.rowptr = calloc((size_t)n + 1, sizeof *p.S.rowptr);
            p.S.colind = malloc(sizeof *p.S.colind);
        }
        if (c == 4) { /* all C, strength from A */
            ks_strength_free(&p.S);
            KS_CHECK(ks_amg_strength_classical(&p.A, 0.25, 0.9, &p.S));
        }
        p.cf = malloc(((size_t)n + 1) * sizeof *p.cf);
        const int all = c == 2 || c == 4 ? KS_CPT : KS_FPT;
        p.nc = 0;
        for (ks_int i = 0; i < n; i++) {
            p.cf[i] = all;
            p.nc += all == KS_CPT;
        }
        if (c == 5) /* PMIS on an empty strength graph: every point F */
            KS_CHECK(ks_amg_pmis(&p.S, 1, p.cf, &p.nc));
        static const char *names[7] = {"no rows", "one row, F", "one row, C", "all F, no S",
                                       "all C",   "PMIS, no S", "all F, strong S"};
        snprintf(p.name, sizeof p.name, "edge: %s", names[c]);
        prob_upload(&x, &p);
        interp_all(&x, &p, 1, 0);
        if (n > 0) {
            ks_int *agg = malloc((size_t)n * sizeof *agg);
            for (ks_int i = 0; i < n; i++)
                agg[i] = i / 3;
            ks_csr P0;
            KS_CHECK(ks_amg_tentative_prolongator(n, agg, (n + 2) / 3, &P0));
            char what[200];
            snprintf(what, sizeof what, "%s, smoothed P", p.name);
            smooth_both(&x, what, &p.A, &P0, 1.9);
            ks_csr_free(&P0);
            free(agg);
        }
        prob_free(&x, &p);
    }
    ctx_free(&x);
}
END_TEST

/* A without the diagonal entry of row r. */
static void drop_diagonal(const ks_csr *A, ks_int r, ks_csr *B)
{
    ks_int *ri = malloc(((size_t)A->nnz + 1) * sizeof *ri);
    ks_int *ci = malloc(((size_t)A->nnz + 1) * sizeof *ci);
    double *v = malloc(((size_t)A->nnz + 1) * sizeof *v);
    ck_assert(ri && ci && v);
    int64_t ne = 0;
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (!(i == r && A->colind[k] == r)) {
                ri[ne] = i;
                ci[ne] = A->colind[k];
                v[ne++] = A->val[k];
            }
    KS_CHECK(ks_csr_from_coo(A->nrows, A->ncols, ne, ri, ci, v, B, NULL));
    free(ri);
    free(ci);
    free(v);
}

static void set_diagonal(ks_csr *A, ks_int r, double d)
{
    for (ks_int k = A->rowptr[r]; k < A->rowptr[r + 1]; k++)
        if (A->colind[k] == r)
            A->val[k] = d;
}

/* Errors: the cuda entries fail where the cpu's do, with the same codes
 * (and the same first bad row or point in the message). */
START_TEST(errors)
{
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON2D_5;
    gp.nx = gp.ny = 10;
    KS_CHECK(ks_generate(&gp, &p.A));
    prob_classical(&p, 0.25, 5);
    const ks_int n = p.A.nrows;
    ks_csr A0;
    KS_CHECK(ks_csr_copy(&p.A, &A0));
    /* a zero diagonal at a C point: accepted, the same P */
    ks_int zc = -1, zf[2] = {-1, -1};
    for (ks_int i = 21; i < n; i++) {
        if (p.cf[i] == KS_CPT && zc < 0)
            zc = i;
        if (p.cf[i] == KS_FPT && i > 40 && zf[1] < 0)
            zf[zf[0] < 0 ? 0 : 1] = i;
    }
    ck_assert(zc >= 0 && zf[0] >= 0 && zf[1] >= 0);
    set_diagonal(&p.A, zc, 0.0);
    strcpy(p.name, "zero diagonal at a C point");
    prob_upload(&x, &p);
    interp_all(&x, &p, 0, 0);
    /* zero diagonals at two F points: refused, naming the first */
    ks_sparse_free(&p.Ac);
    ks_sparse_free(&p.Ag);
    set_diagonal(&p.A, zf[0], 0.0);
    set_diagonal(&p.A, zf[1], 0.0);
    KS_CHECK(ks_sparse_from_csr(x.cpu, &p.A, 0, &p.Ac));
    KS_CHECK(ks_sparse_from_csr(x.cu, &p.A, 0, &p.Ag));
    char needle[64];
    snprintf(needle, sizeof needle, "row %d", zf[0]);
    interp_entry cfn[2] = {x.C->interp_direct, x.C->interp_extended_i};
    interp_entry gfn[2] = {x.G->interp_direct, x.G->interp_extended_i};
    ks_sparse P;
    for (int f = 0; f < 2; f++) {
        ck_assert_int_eq(cfn[f](&p.Ac, &p.Sc, p.cf, &P), KS_ERR_NUMERIC);
        ck_assert_int_eq(gfn[f](&p.Ag, &p.Sg, p.cfg, &P), KS_ERR_NUMERIC);
        ck_assert_msg(strstr(ks_last_error(), needle), "message: %s", ks_last_error());
    }
    /* an undecided point (reported before the zero diagonals, as on the cpu) */
    const int keep = p.cf[33];
    p.cf[33] = KS_UNDECIDED;
    KS_CHECK(x.cu->ops->upload(x.cu, p.cfg, p.cf, (size_t)n * sizeof(int)));
    for (int f = 0; f < 2; f++) {
        ck_assert_int_eq(cfn[f](&p.Ac, &p.Sc, p.cf, &P), KS_ERR_ARG);
        ck_assert_int_eq(gfn[f](&p.Ag, &p.Sg, p.cfg, &P), KS_ERR_ARG);
        ck_assert_msg(strstr(ks_last_error(), "point 33 "), "message: %s", ks_last_error());
    }
    p.cf[33] = keep;
    KS_CHECK(x.cu->ops->upload(x.cu, p.cfg, p.cf, (size_t)n * sizeof(int)));
    ks_sparse_free(&p.Ac);
    ks_sparse_free(&p.Ag);
    KS_CHECK(ks_sparse_from_csr(x.cpu, &A0, 0, &p.Ac));
    KS_CHECK(ks_sparse_from_csr(x.cu, &A0, 0, &p.Ag));
    /* truncation arguments (P is left as it was) */
    ks_sparse Pc;
    KS_CHECK(x.C->interp_extended_i(&p.Ac, &p.Sc, p.cf, &Pc));
    KS_CHECK(x.G->interp_extended_i(&p.Ag, &p.Sg, p.cfg, &P));
    ck_assert_int_eq(x.G->interp_truncate(&P, -1, 0.0), KS_ERR_ARG);
    ck_assert_int_eq(x.G->interp_truncate(&P, 4, 1.5), KS_ERR_ARG);
    ck_assert_int_eq(x.G->interp_truncate(&P, 4, NAN), KS_ERR_ARG);
    compare("D2 after refused truncations", &Pc, &P);
    ks_sparse_free(&Pc);
    /* smoothed prolongator: rho, aliasing, a zero and a missing diagonal */
    ks_int *agg = malloc((size_t)n * sizeof *agg);
    ck_assert(agg);
    for (ks_int i = 0; i < n; i++)
        agg[i] = i / 4;
    ks_csr P0;
    KS_CHECK(ks_amg_tentative_prolongator(n, agg, (n + 3) / 4, &P0));
    ks_sparse Qc, Qg, Xc, Xg, Bc, Bg;
    KS_CHECK(ks_sparse_from_csr(x.cpu, &P0, 0, &Qc));
    KS_CHECK(ks_sparse_from_csr(x.cu, &P0, 0, &Qg));
    const double bad_rho[3] = {0.0, -1.0, INFINITY};
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(x.C->smooth_prolongator(&p.Ac, &Qc, bad_rho[r], &Xc), KS_ERR_ARG);
        ck_assert_int_eq(x.G->smooth_prolongator(&p.Ag, &Qg, bad_rho[r], &Xg), KS_ERR_ARG);
    }
    ck_assert_int_eq(x.G->smooth_prolongator(&p.Ag, &Qg, 1.0, &p.Ag), KS_ERR_ARG);
    ks_csr B;
    KS_CHECK(ks_csr_copy(&A0, &B));
    set_diagonal(&B, 57, 0.0);
    set_diagonal(&B, 80, 0.0);
    KS_CHECK(ks_sparse_from_csr(x.cpu, &B, 0, &Bc));
    KS_CHECK(ks_sparse_from_csr(x.cu, &B, 0, &Bg));
    ck_assert_int_eq(x.C->smooth_prolongator(&Bc, &Qc, 1.5, &Xc), KS_ERR_NUMERIC);
    ck_assert_int_eq(x.G->smooth_prolongator(&Bg, &Qg, 1.5, &Xg), KS_ERR_NUMERIC);
    ck_assert_msg(strstr(ks_last_error(), "row 57 has a zero"), "message: %s", ks_last_error());
    ks_sparse_free(&Bc);
    ks_sparse_free(&Bg);
    ks_csr_free(&B);
    drop_diagonal(&A0, 23, &B);
    set_diagonal(&B, 57, 0.0);
    KS_CHECK(ks_sparse_from_csr(x.cpu, &B, 0, &Bc));
    KS_CHECK(ks_sparse_from_csr(x.cu, &B, 0, &Bg));
    ck_assert_int_eq(x.C->smooth_prolongator(&Bc, &Qc, 1.5, &Xc), KS_ERR_NUMERIC);
    ck_assert_int_eq(x.G->smooth_prolongator(&Bg, &Qg, 1.5, &Xg), KS_ERR_NUMERIC);
    ck_assert_msg(strstr(ks_last_error(), "row 23 has a missing"), "message: %s",
                  ks_last_error());
    ks_sparse_free(&Bc);
    ks_sparse_free(&Bg);
    ks_csr_free(&B);
    /* a non-finite value in A */
    KS_CHECK(ks_csr_copy(&A0, &B));
    B.val[B.rowptr[44] + 1] = NAN;
    KS_CHECK(ks_sparse_from_csr(x.cpu, &B, 0, &Bc));
    KS_CHECK(ks_sparse_from_csr(x.cu, &B, 0, &Bg));
    ck_assert_int_eq(x.C->smooth_prolongator(&Bc, &Qc, 1.5, &Xc), KS_ERR_NUMERIC);
    ck_assert_int_eq(x.G->smooth_prolongator(&Bg, &Qg, 1.5, &Xg), KS_ERR_NUMERIC);
    ck_assert_msg(strstr(ks_last_error(), "row 44"), "message: %s", ks_last_error());
    ks_sparse_free(&Bc);
    ks_sparse_free(&Bg);
    ks_csr_free(&B);
    ks_sparse_free(&Qc);
    ks_sparse_free(&Qg);
    ks_sparse_free(&P);
    ks_csr_free(&P0);
    ks_csr_free(&A0);
    free(agg);
    prob_free(&x, &p);
    ctx_free(&x);
}
END_TEST

/* The driver's calls (amg/kernels.c) on cuda operands take the cuda
 * entries: no step runs staged on the host. */
START_TEST(driver_calls)
{
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON3D_7;
    gp.nx = gp.ny = gp.nz = 10;
    KS_CHECK(ks_generate(&gp, &p.A));
    prob_classical(&p, 0.25, 2);
    prob_upload(&x, &p);
    ks_amg_exec ex;
    memset(&ex, 0, sizeof ex);
    ks_sparse P, Pn;
    KS_CHECK(ks_amgk_interp(&ex, KS_AMG_D1, &p.Ag, &p.Sg, p.cfg, &Pn));
    ks_sparse_free(&Pn);
    KS_CHECK(ks_amgk_interp(&ex, KS_AMG_D2, &p.Ag, &p.Sg, p.cfg, &P));
    KS_CHECK(ks_amgk_interp(&ex, KS_AMG_D2, &p.Ag, &p.Sg, p.cfg, &Pn));
    KS_CHECK(ks_amgk_truncate(&ex, &P, 4, 0.0));
    int changed = -1;
    KS_CHECK(ks_amgk_project(&ex, &Pn, &P, 1, &changed));
    ck_assert_int_eq(changed, 0);
    ks_int *agg = malloc((size_t)p.A.nrows * sizeof *agg);
    for (ks_int i = 0; i < p.A.nrows; i++)
        agg[i] = i / 5;
    ks_csr P0;
    KS_CHECK(ks_amg_tentative_prolongator(p.A.nrows, agg, (p.A.nrows + 4) / 5, &P0));
    ks_sparse Qg, Sm;
    KS_CHECK(ks_sparse_from_csr(x.cu, &P0, 0, &Qg));
    KS_CHECK(ks_amgk_smooth_prolongator(&ex, &p.Ag, &Qg, 1.8, &Sm));
    ck_assert_msg(ex.host_steps == 0, "%ld steps staged on the host (ops mask %#x)",
                  ex.host_steps, ex.host_ops);
    ks_sparse_free(&P);
    ks_sparse_free(&Pn);
    ks_sparse_free(&Qg);
    ks_sparse_free(&Sm);
    ks_csr_free(&P0);
    free(agg);
    ks_amg_exec_free(&ex);
    prob_free(&x, &p);
    ctx_free(&x);
}
END_TEST

#endif /* KS_HAVE_CUDA */

int main(void)
{
    Suite *s = suite_create("amg_cuda_interp");
    const int nrandom = 5;
#ifdef KS_HAVE_CUDA
    if (ks_test_have_cuda()) {
        TCase *tc = tcase_create("cuda");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, coarse_map);
        tcase_add_loop_test(tc, generated, 0, NGEN);
        tcase_add_test(tc, long_rows);
        tcase_add_loop_test(tc, random_small, 0, nrandom);
        tcase_add_loop_test(tc, bins, 0, NHUB_VARIANTS);
        tcase_add_test(tc, edge_cases);
        tcase_add_test(tc, errors);
        tcase_add_test(tc, driver_calls);
        int missing = 0;
        for (int i = 0; i < NSHARED; i++)
            missing += !ks_test_shared_matrix(shared_names[i]);
        tcase_add_loop_test(tc, shared_matrix, 0, NSHARED);
        if (missing)
            ks_test_skip(missing, "../shared/matrices: real matrices absent");
        suite_add_tcase(s, tc);
    } else {
        ks_test_skip(5 + NGEN + nrandom + NHUB_VARIANTS + NSHARED,
                     "no CUDA device: cuda interpolation against the cpu");
    }
#else
    ks_test_skip(1, "built without CUDA: cuda interpolation against the cpu");
    (void)nrandom;
#endif
    return ks_test_run(s);
}
