/* AMG coarsening (PMIS, HMIS) and the coarse numbering: on Laplacians
 * (1D, 2D 5/9-point, 3D 7-point), random SPD-like and nonsymmetric
 * matrices every point ends C or F, C points are independent in the
 * symmetrized strength graph (except next to fix-up promotions, which a
 * symmetric S never needs), every F point with strong connections has a
 * strong C neighbour, isolated points are F, coarse fractions are sane;
 * results repeat for a seed and do not depend on the thread count. The
 * blocked RS pass of HMIS (forced to small blocks) keeps all of that, and
 * on a 7-point Laplacian with blocks of an even number of planes gives the
 * serial splitting. */
#include "ks_test.h"
#include "amg/cpu/coarsen_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif



typedef ks_error (*coarsen_fn)(const ks_strength *, unsigned long long, int *, ks_int *,
                               unsigned char *);
static const coarsen_fn methods[2] = {ks_amg_pmis_ex, ks_amg_hmis_ex};
static const char *const method_names[2] = {"PMIS", "HMIS"};

static void generate(ks_gen_kind kind, int nx, int ny, int nz, ks_csr *A)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    KS_CHECK(ks_generate(&p, A));
}

static int structurally_symmetric(const ks_strength *S)
{
    ks_strength ST;
    KS_CHECK(ks_strength_transpose(S, &ST));
    int same = memcmp(S->rowptr, ST.rowptr, ((size_t)S->n + 1) * sizeof(ks_int)) == 0 &&
               memcmp(S->colind, ST.colind, (size_t)S->rowptr[S->n] * sizeof(ks_int)) == 0;
    ks_strength_free(&ST);
    return same;
}

/* The guarantees of both coarsenings; returns the number of promoted points. */
static ks_int check_splitting(const char *what, const ks_strength *S, const int *cf, ks_int nc,
                              const unsigned char *promoted)
{
    ks_int n = S->n, c = 0, npro = 0;
    ks_strength ST;
    KS_CHECK(ks_strength_transpose(S, &ST));
    for (ks_int i = 0; i < n; i++) {
        ck_assert_msg(cf[i] == KS_CPT || cf[i] == KS_FPT, "%s: point %d is %d", what, i, cf[i]);
        c += cf[i] == KS_CPT;
        npro += promoted[i] != 0;
        ck_assert_msg(!promoted[i] || cf[i] == KS_CPT, "%s: promoted F point %d", what, i);
        int isolated = S->rowptr[i] == S->rowptr[i + 1] && ST.rowptr[i] == ST.rowptr[i + 1];
        if (isolated)
            ck_assert_msg(cf[i] == KS_FPT, "%s: isolated point %d is C", what, i);
        int has_c = 0;
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++) {
            ks_int j = S->colind[k];
            has_c |= cf[j] == KS_CPT;
            /* Independence on S covers S^T too: each edge is in some S row. */
            if (cf[i] == KS_CPT && cf[j] == KS_CPT)
                ck_assert_msg(promoted[i] || promoted[j], "%s: C points %d and %d are strongly "
                              "connected and neither was promoted", what, i, j);
        }
        if (cf[i] == KS_FPT && S->rowptr[i] < S->rowptr[i + 1])
            ck_assert_msg(has_c, "%s: F point %d has strong connections but no C among them",
                          what, i);
    }
    ck_assert_int_eq(c, nc);
    ks_strength_free(&ST);
    return npro;
}

/* Coarsen A with both methods and check everything; fractions out. */
static void coarsen_and_check(const char *name, const ks_csr *A, double theta,
                              unsigned long long seed, double lo[2], double hi[2],
                              double frac[2])
{
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(A, theta, 0.9, &S));
    int sym = structurally_symmetric(&S);
    int *cf = malloc(sizeof(int) * (size_t)A->nrows);
    unsigned char *pro = malloc((size_t)A->nrows + 1);
    ck_assert_ptr_nonnull(cf);
    ck_assert_ptr_nonnull(pro);
    for (int m = 0; m < 2; m++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s", method_names[m], name);
        ks_int nc = -1;
        KS_CHECK(methods[m](&S, seed, cf, &nc, pro));
        ks_int npro = check_splitting(what, &S, cf, nc, pro);
        if (sym)
            ck_assert_msg(npro == 0, "%s: %d promotions with a symmetric S", what, npro);
        double f = (double)nc / A->nrows;
        printf("%-28s n = %6d  C = %6d  coarse fraction %.3f  promoted %d%s\n", what, A->nrows,
               nc, f, npro, sym ? "" : "  (nonsymmetric S)");
        if (lo)
            ck_assert_msg(f >= lo[m] && f <= hi[m], "%s: coarse fraction %.3f outside "
                          "[%.2f, %.2f]", what, f, lo[m], hi[m]);
        if (frac)
            frac[m] = f;
    }
    fflush(stdout);
    free(cf);
    free(pro);
    ks_strength_free(&S);
}

START_TEST(laplacian_1d)
{
    ks_csr A;
    generate(KS_GEN_POISSON2D_5, 100, 1, 1, &A);
    /* A maximal independent set of a path holds between n/3 and n/2
     * points; RS sweeps it as every other point. */
    double lo[2] = {0.33, 0.5}, hi[2] = {0.5, 0.5};
    coarsen_and_check("1D n=100", &A, 0.25, 1, lo, hi, NULL);
    ks_csr_free(&A);
}
END_TEST

START_TEST(laplacian_2d_5pt)
{
    ks_csr A;
    generate(KS_GEN_POISSON2D_5, 20, 20, 1, &A);
    double lo[2] = {0.2, 0.3}, hi[2] = {0.5, 0.52};
    coarsen_and_check("2D 5-point 20x20", &A, 0.25, 1, lo, hi, NULL);
    ks_csr_free(&A);
}
END_TEST

START_TEST(laplacian_2d_9pt)
{
    ks_csr A;
    generate(KS_GEN_POISSON2D_9, 20, 20, 1, &A);
    /* 8 strong neighbours: a quarter of the points (every other line) or
     * a bit more near the boundary. */
    double lo[2] = {0.1, 0.2}, hi[2] = {0.35, 0.35};
    coarsen_and_check("2D 9-point 20x20", &A, 0.25, 1, lo, hi, NULL);
    ks_csr_free(&A);
}
END_TEST

START_TEST(laplacian_3d_7pt)
{
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 10, 10, 10, &A);
    double lo[2] = {0.1, 0.1}, hi[2] = {0.5, 0.5};
    coarsen_and_check("3D 7-point 10^3", &A, 0.25, 1, lo, hi, NULL);
    ks_csr_free(&A);
}
END_TEST

/* The numbers asked for in the report (and sane bounds on them). */
START_TEST(laplacian_3d_7pt_32)
{
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 32, 32, 32, &A);
    double lo[2] = {0.1, 0.1}, hi[2] = {0.5, 0.5};
    coarsen_and_check("3D 7-point 32^3", &A, 0.25, 1, lo, hi, NULL);
    ks_csr_free(&A);
}
END_TEST

/* Random symmetric, diagonally dominant matrices with negative
 * off-diagonals. unit = 1: all off-diagonals -1, so S is the (symmetric)
 * graph; else random magnitudes, which make the classical S nonsymmetric
 * (row maxima differ) and may need fix-up promotions. */
static void random_spd(int n, int deg, int unit, uint64_t seed, ks_csr *A)
{
    ks_test_rng_seed(seed);
    int64_t cap = (int64_t)n * (2 * deg + 1);
    ks_int *r = malloc(sizeof(ks_int) * cap), *c = malloc(sizeof(ks_int) * cap);
    double *v = malloc(sizeof(double) * cap);
    double *dsum = calloc((size_t)n, sizeof *dsum);
    int64_t m = 0;
    for (int i = 0; i < n; i++)
        for (int t = 0; t < deg; t++) {
            int j = (int)(ks_test_rng_next() % (uint64_t)n);
            if (j == i)
                continue;
            double w = unit ? 1.0 : 0.05 + ks_test_urand();
            r[m] = i, c[m] = j, v[m++] = -w;
            r[m] = j, c[m] = i, v[m++] = -w;
            dsum[i] += w;
            dsum[j] += w;
        }
    for (int i = 0; i < n; i++)
        r[m] = i, c[m] = i, v[m++] = dsum[i] > 0 ? dsum[i] : 1.0;
    KS_CHECK(ks_csr_from_coo(n, n, m, r, c, v, A, NULL));
    /* Duplicate pairs were summed into one, so off-diagonals may be -2:
     * unit matrices are rebuilt with every off-diagonal -1. */
    if (unit)
        for (ks_int i = 0; i < n; i++)
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                if (A->colind[k] != i)
                    A->val[k] = -1.0;
    free(r);
    free(c);
    free(v);
    free(dsum);
}

START_TEST(random_symmetric_graphs)
{
    for (int trial = 0; trial < 4; trial++) {
        ks_csr A;
        random_spd(600 + 100 * trial, 2 + trial, 1, 100 + trial, &A);
        double lo[2] = {0.02, 0.02}, hi[2] = {0.7, 0.7};
        char name[64];
        snprintf(name, sizeof name, "random graph #%d", trial);
        ks_strength S;
        KS_CHECK(ks_amg_strength_classical(&A, 0.25, 1.0, &S));
        ck_assert(structurally_symmetric(&S));
        ks_strength_free(&S);
        coarsen_and_check(name, &A, 0.25, 5 + trial, lo, hi, NULL);
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(random_spd_weighted)
{
    for (int trial = 0; trial < 4; trial++) {
        ks_csr A;
        random_spd(800, 3 + trial, 0, 200 + trial, &A);
        double lo[2] = {0.02, 0.02}, hi[2] = {0.8, 0.8};
        char name[64];
        snprintf(name, sizeof name, "random SPD #%d", trial);
        coarsen_and_check(name, &A, 0.25 + 0.1 * trial, 9, lo, hi, NULL);
        ks_csr_free(&A);
    }
}
END_TEST

/* Upwind convection-diffusion: strongly one-directional dependencies. */
START_TEST(convection_diffusion)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 12;
    p.vx = 200;
    p.vy = -60;
    p.vz = 10;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    double lo[2] = {0.05, 0.05}, hi[2] = {0.8, 0.8};
    coarsen_and_check("convdiff3d 12^3", &A, 0.25, 3, lo, hi, NULL);
    ks_csr_free(&A);
}
END_TEST

static ks_strength make_pattern(int n, const int rows[][4])
{
    ks_strength S;
    S.n = n;
    S.rowptr = malloc(sizeof(ks_int) * (size_t)(n + 1));
    S.colind = malloc(sizeof(ks_int) * (size_t)(4 * n + 1));
    S.rowptr[0] = 0;
    for (int i = 0; i < n; i++) {
        int k = S.rowptr[i];
        for (int t = 0; t < 4 && rows[i][t] >= 0; t++)
            S.colind[k++] = rows[i][t];
        S.rowptr[i + 1] = k;
    }
    return S;
}

/* A 3-cycle of one-way dependencies (0 on 1, 1 on 2, 2 on 0) cannot have
 * both an independent C set and a C neighbour for every F point: the
 * fix-up must promote, and the F guarantee must win. Point 3 depends on 0
 * only; points 4 and 5 are isolated. */
START_TEST(one_way_cycle_needs_fixup)
{
    const int rows[6][4] = {{1, -1}, {2, -1}, {0, -1}, {0, -1}, {-1}, {-1}};
    ks_strength S = make_pattern(6, rows);
    int cf[6];
    unsigned char pro[6];
    for (int m = 0; m < 2; m++) {
        for (unsigned long long seed = 1; seed <= 8; seed++) {
            ks_int nc;
            KS_CHECK(methods[m](&S, seed, cf, &nc, pro));
            ks_int npro = check_splitting(method_names[m], &S, cf, nc, pro);
            ck_assert_int_ge(npro, 1);
            ck_assert_int_eq(cf[4], KS_FPT);
            ck_assert_int_eq(cf[5], KS_FPT);
        }
    }
    ks_strength_free(&S);
}
END_TEST

START_TEST(diagonal_matrix_all_fine)
{
    ks_csr A;
    KS_CHECK(ks_csr_alloc(&A, 5, 5, 5));
    for (int i = 0; i < 5; i++) {
        A.rowptr[i + 1] = i + 1;
        A.colind[i] = i;
        A.val[i] = 2.0;
    }
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    int cf[5];
    ks_int nc = -1;
    KS_CHECK(ks_amg_pmis(&S, 1, cf, &nc));
    ck_assert_int_eq(nc, 0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(cf[i], KS_FPT);
    nc = -1;
    KS_CHECK(ks_amg_hmis(&S, 1, cf, &nc));
    ck_assert_int_eq(nc, 0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(cf[i], KS_FPT);
    ks_strength_free(&S);
    ks_csr_free(&A);

    /* n = 0 is fine too. */
    ks_strength E = {0, NULL, NULL};
    ks_int zero = 0;
    E.rowptr = &zero;
    KS_CHECK(ks_amg_pmis(&E, 1, cf, &nc));
    ck_assert_int_eq(nc, 0);
    KS_CHECK(ks_amg_hmis(&E, 1, cf, &nc));
    ck_assert_int_eq(nc, 0);
}
END_TEST

/* 1 vs 2 threads, same seed twice, and a different seed changing PMIS. */
START_TEST(deterministic)
{
    ks_csr A[2];
    generate(KS_GEN_POISSON3D_7, 10, 10, 10, &A[0]);
    random_spd(1500, 4, 0, 77, &A[1]);
    for (int t = 0; t < 2; t++) {
        ks_strength S;
        KS_CHECK(ks_amg_strength_classical(&A[t], 0.25, 0.9, &S));
        ks_int n = S.n;
        int *cf[4];
        for (int k = 0; k < 4; k++)
            cf[k] = malloc(sizeof(int) * (size_t)n);
        for (int m = 0; m < 2; m++) {
            ks_int nc[4];
            ks_test_set_threads(1);
            KS_CHECK(methods[m](&S, 42, cf[0], &nc[0], NULL));
            ks_test_set_threads(2);
            KS_CHECK(methods[m](&S, 42, cf[1], &nc[1], NULL));
            KS_CHECK(methods[m](&S, 42, cf[2], &nc[2], NULL));
            KS_CHECK(methods[m](&S, 43, cf[3], &nc[3], NULL));
            ck_assert_msg(memcmp(cf[0], cf[1], sizeof(int) * (size_t)n) == 0,
                          "%s matrix %d: 1 and 2 threads differ", method_names[m], t);
            ck_assert_msg(memcmp(cf[1], cf[2], sizeof(int) * (size_t)n) == 0,
                          "%s matrix %d: same seed, different result", method_names[m], t);
            ck_assert_int_eq(nc[0], nc[1]);
            ck_assert_int_eq(nc[1], nc[2]);
            /* PMIS is driven by the random weights; HMIS on one process
             * is the RS pass, which does not use them. */
            if (m == 0)
                ck_assert_msg(memcmp(cf[2], cf[3], sizeof(int) * (size_t)n) != 0,
                              "PMIS matrix %d: seeds 42 and 43 agree", t);
        }
        for (int k = 0; k < 4; k++)
            free(cf[k]);
        ks_strength_free(&S);
        ks_csr_free(&A[t]);
    }
}
END_TEST

static void expect_err(ks_error got, ks_error want, const char *needle)
{
    ck_assert_msg(got == want, "got %s, expected %s (%s)", ks_error_name(got),
                  ks_error_name(want), ks_last_error());
    ck_assert_msg(strstr(ks_last_error(), needle) != NULL, "message '%s' lacks '%s'",
                  ks_last_error(), needle);
}

/* HMIS with the RS pass in small blocks (many block boundaries, both
 * passes and the boundary step busy): the guarantees, no promotions for a
 * symmetric S, a sane coarse fraction, and the same splitting on 1 and 2
 * threads. */
static void blocked_case(const char *name, const ks_csr *A, double theta, double lo, double hi)
{
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(A, theta, 0.9, &S));
    const int sym = structurally_symmetric(&S);
    const ks_int n = A->nrows;
    int *cf1 = malloc(sizeof(int) * (size_t)n), *cf2 = malloc(sizeof(int) * (size_t)n);
    unsigned char *pro = malloc((size_t)n + 1);
    const ks_int blocks[4] = {64, 300, 1000, n / 3 + 1};
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
#endif
    for (int b = 0; b < 4; b++) {
        char what[160];
        snprintf(what, sizeof what, "blocked HMIS %s, blocks of %d", name, (int)blocks[b]);
        ks_int nc1 = -1, nc2 = -2;
        ks_test_set_threads(1);
        KS_CHECK(ks_amg_hmis_blocked(&S, 5, blocks[b], cf1, &nc1, pro));
        ks_test_set_threads(2);
        KS_CHECK(ks_amg_hmis_blocked(&S, 5, blocks[b], cf2, &nc2, NULL));
        ck_assert_msg(memcmp(cf1, cf2, sizeof(int) * (size_t)n) == 0 && nc1 == nc2,
                      "%s: 1 and 2 threads differ", what);
        ks_int npro = check_splitting(what, &S, cf1, nc1, pro);
        if (sym)
            ck_assert_msg(npro == 0, "%s: %d promotions with a symmetric S", what, npro);
        double f = (double)nc1 / n;
        ck_assert_msg(f >= lo && f <= hi, "%s: coarse fraction %.3f outside [%.2f, %.2f]", what,
                      f, lo, hi);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    free(cf1);
    free(cf2);
    free(pro);
    ks_strength_free(&S);
}

START_TEST(hmis_blocked)
{
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 16, 15, 14, &A);
    blocked_case("7-point 16x15x14", &A, 0.25, 0.3, 0.55);
    ks_csr_free(&A);
    generate(KS_GEN_POISSON2D_9, 70, 60, 1, &A);
    blocked_case("9-point 70x60", &A, 0.25, 0.15, 0.4);
    ks_csr_free(&A);
    random_spd(3000, 3, 1, 321, &A);
    blocked_case("random graph", &A, 0.25, 0.02, 0.7);
    ks_csr_free(&A);
    random_spd(3000, 4, 0, 322, &A); /* nonsymmetric S */
    blocked_case("random SPD", &A, 0.35, 0.02, 0.8);
    ks_csr_free(&A);
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 14;
    p.vx = 150;
    p.vy = -40;
    p.vz = 10;
    KS_CHECK(ks_generate(&p, &A));
    blocked_case("convdiff3d 14^3", &A, 0.25, 0.05, 0.8);
    ks_csr_free(&A);
}
END_TEST

/* Blocks of an even number of z-planes keep the RS pattern's phase on a
 * 7-point Laplacian: the blocked pass gives the serial splitting. Blocks of
 * one block or more are the serial pass; a block of 1 row is refused. */
START_TEST(hmis_blocked_serial_cases)
{
    ks_csr A;
    generate(KS_GEN_POISSON3D_7, 16, 16, 16, &A);
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    const ks_int n = A.nrows;
    int *ref = malloc(sizeof(int) * (size_t)n), *cf = malloc(sizeof(int) * (size_t)n);
    ks_int ncr, nc;
    KS_CHECK(ks_amg_hmis(&S, 1, ref, &ncr));
    const ks_int blocks[4] = {4 * 256, 8 * 256, n, 10 * n};
    for (int b = 0; b < 4; b++) {
        KS_CHECK(ks_amg_hmis_blocked(&S, 1, blocks[b], cf, &nc, NULL));
        ck_assert_msg(nc == ncr && memcmp(ref, cf, sizeof(int) * (size_t)n) == 0,
                      "blocks of %d rows: splitting differs from the serial pass",
                      (int)blocks[b]);
    }
    expect_err(ks_amg_hmis_blocked(&S, 1, 1, cf, &nc, NULL), KS_ERR_ARG, "block");
    expect_err(ks_amg_hmis_blocked(&S, 1, -5, cf, &nc, NULL), KS_ERR_ARG, "block");
    free(ref);
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(bad_arguments)
{
    const int rows[3][4] = {{1, -1}, {0, 2, -1}, {1, -1}};
    ks_strength S = make_pattern(3, rows);
    int cf[3];
    ks_int nc;
    for (int m = 0; m < 2; m++) {
        ks_error (*f)(const ks_strength *, unsigned long long, int *, ks_int *) =
            m ? ks_amg_hmis : ks_amg_pmis;
        const char *name = m ? "ks_amg_hmis" : "ks_amg_pmis";
        expect_err(f(NULL, 1, cf, &nc), KS_ERR_ARG, name);
        expect_err(f(&S, 1, NULL, &nc), KS_ERR_ARG, "cf");
        expect_err(f(&S, 1, cf, NULL), KS_ERR_ARG, "nc");
        S.colind[1] = 1; /* row 1 names itself */
        expect_err(f(&S, 1, cf, &nc), KS_ERR_ARG, "row 1");
        S.colind[1] = 3; /* out of range */
        expect_err(f(&S, 1, cf, &nc), KS_ERR_ARG, "row 1");
        S.colind[1] = 0;
        S.n = -1;
        expect_err(f(&S, 1, cf, &nc), KS_ERR_ARG, "negative");
        S.n = 3;
        KS_CHECK(f(&S, 1, cf, &nc));
        ck_assert_int_eq(nc, 1);
        ck_assert_int_eq(cf[1], KS_CPT);
    }
    ks_strength_free(&S);
}
END_TEST

START_TEST(coarse_map)
{
    const int cf[7] = {KS_CPT, KS_FPT, KS_FPT, KS_CPT, KS_CPT, KS_FPT, KS_CPT};
    const ks_int want[7] = {0, -1, -1, 1, 2, -1, 3};
    ks_int cmap[7], nc = -1;
    KS_CHECK(ks_amg_coarse_map(7, cf, cmap, &nc));
    ck_assert_int_eq(nc, 4);
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(cmap[i], want[i]);
    KS_CHECK(ks_amg_coarse_map(0, NULL, NULL, &nc));
    ck_assert_int_eq(nc, 0);

    int bad[3] = {KS_CPT, KS_UNDECIDED, KS_FPT};
    expect_err(ks_amg_coarse_map(3, bad, cmap, &nc), KS_ERR_ARG, "point 1 is undecided");
    bad[1] = 7;
    expect_err(ks_amg_coarse_map(3, bad, cmap, &nc), KS_ERR_ARG, "point 1");
    expect_err(ks_amg_coarse_map(-1, cf, cmap, &nc), KS_ERR_ARG, "negative");
    expect_err(ks_amg_coarse_map(7, NULL, cmap, &nc), KS_ERR_ARG, "cf");
    expect_err(ks_amg_coarse_map(7, cf, NULL, &nc), KS_ERR_ARG, "cmap");
    expect_err(ks_amg_coarse_map(7, cf, cmap, NULL), KS_ERR_ARG, "nc");

    /* Numbering of a real splitting: C points counted in index order. */
    ks_csr A;
    generate(KS_GEN_POISSON2D_9, 15, 13, 1, &A);
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    int *cf2 = malloc(sizeof(int) * (size_t)A.nrows);
    ks_int *cm = malloc(sizeof(ks_int) * (size_t)A.nrows), nc1, nc2;
    KS_CHECK(ks_amg_hmis(&S, 1, cf2, &nc1));
    KS_CHECK(ks_amg_coarse_map(A.nrows, cf2, cm, &nc2));
    ck_assert_int_eq(nc1, nc2);
    ks_int next = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        ck_assert_int_eq(cm[i], cf2[i] == KS_CPT ? next++ : -1);
    free(cf2);
    free(cm);
    ks_strength_free(&S);
    ks_csr_free(&A);

    /* Large enough for the blocked parallel scan: the serial numbering on
     * 1 and 2 threads, and the first bad point named. */
    const ks_int big = 200003;
    int *cf3 = malloc(sizeof(int) * (size_t)big);
    ks_int *cm3 = malloc(sizeof(ks_int) * (size_t)big);
    ks_test_rng_seed(5);
    for (ks_int i = 0; i < big; i++)
        cf3[i] = ks_test_rng_next() % 3 == 0 ? KS_CPT : KS_FPT;
    for (int t = 1; t <= 2; t++) {
        ks_test_set_threads(t);
        KS_CHECK(ks_amg_coarse_map(big, cf3, cm3, &nc1));
        ks_int c = 0;
        for (ks_int i = 0; i < big; i++)
            ck_assert_int_eq(cm3[i], cf3[i] == KS_CPT ? c++ : -1);
        ck_assert_int_eq(nc1, c);
    }
    cf3[150001] = KS_UNDECIDED;
    cf3[190000] = 9;
    expect_err(ks_amg_coarse_map(big, cf3, cm3, &nc1), KS_ERR_ARG, "point 150001 is undecided");
    free(cf3);
    free(cm3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_coarsen");
    TCase *tc = tcase_create("coarsen");
    tcase_add_test(tc, laplacian_1d);
    tcase_add_test(tc, laplacian_2d_5pt);
    tcase_add_test(tc, laplacian_2d_9pt);
    tcase_add_test(tc, laplacian_3d_7pt);
    tcase_add_test(tc, laplacian_3d_7pt_32);
    tcase_add_test(tc, random_symmetric_graphs);
    tcase_add_test(tc, random_spd_weighted);
    tcase_add_test(tc, convection_diffusion);
    tcase_add_test(tc, one_way_cycle_needs_fixup);
    tcase_add_test(tc, diagonal_matrix_all_fine);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, coarse_map);
    tcase_add_test(tc, hmis_blocked);
    tcase_add_test(tc, hmis_blocked_serial_cases);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
