/* AMG strength of connection: classical and symmetric measures on small
 * matrices with hand-computed patterns (positive off-diagonals, negative
 * diagonal, max_row_sum, theta 0 and 1, explicit zeros, zero diagonals),
 * random matrices against an independent dense reference, stencils,
 * transpose round trip, thread-count independence and argument errors. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"
#include "amg/cpu/coarsen_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif



/* CSR from a dense row-major table: every entry with keep != 0 is stored
 * (so explicit zeros can be stored on purpose). */
static void csr_from_dense(int n, const double *a, const int *keep, ks_csr *A)
{
    int nnz = 0;
    for (int k = 0; k < n * n; k++)
        nnz += keep[k] != 0;
    KS_CHECK(ks_csr_alloc(A, n, n, nnz));
    int p = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            if (keep[i * n + j]) {
                A->colind[p] = j;
                A->val[p++] = a[i * n + j];
            }
        A->rowptr[i + 1] = p;
    }
}

/* S must hold exactly rows[i] (lists end with -1). */
static void expect_rows(const ks_strength *S, int n, const int rows[][5], const char *what)
{
    ck_assert_int_eq(S->n, n);
    for (int i = 0; i < n; i++) {
        int len = 0;
        while (rows[i][len] >= 0)
            len++;
        ck_assert_msg(S->rowptr[i + 1] - S->rowptr[i] == len, "%s: row %d has %d entries, "
                      "expected %d", what, i, S->rowptr[i + 1] - S->rowptr[i], len);
        for (int k = 0; k < len; k++)
            ck_assert_msg(S->colind[S->rowptr[i] + k] == rows[i][k], "%s: row %d entry %d is %d, "
                          "expected %d", what, i, k, S->colind[S->rowptr[i] + k], rows[i][k]);
    }
}

static int same_pattern(const ks_strength *a, const ks_strength *b)
{
    if (a->n != b->n || memcmp(a->rowptr, b->rowptr, ((size_t)a->n + 1) * sizeof(ks_int)))
        return 0;
    return memcmp(a->colind, b->colind, (size_t)a->rowptr[a->n] * sizeof(ks_int)) == 0;
}

/* Row 0: positive diagonal, one positive off-diagonal (never strong).
 * Row 1: an entry exactly at theta * max (strong: >=).
 * Row 2: negative diagonal: positive entries are the strong ones.
 * Row 3: diagonally dominant row (row sum 9.5 > 0.9 * 10) and an explicit
 *        zero off-diagonal. */
static const double hand_a[16] = {4, -1, -3, 0.5,
                                  -1, 5, -0.5, -2,
                                  2, 1, -6, 0.2,
                                  0, -0.5, 0, 10};
static const int hand_keep[16] = {1, 1, 1, 1,
                                  1, 1, 1, 1,
                                  1, 1, 1, 1,
                                  0, 1, 1, 1};

START_TEST(classical_hand_computed)
{
    ks_csr A;
    csr_from_dense(4, hand_a, hand_keep, &A);
    ks_strength S;
    const int r025[4][5] = {{1, 2, -1}, {0, 2, 3, -1}, {0, 1, -1}, {-1}};
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    expect_rows(&S, 4, r025, "theta 0.25, max_row_sum 0.9");
    ks_strength_free(&S);

    /* max_row_sum 1 disables the row-sum test: row 3 gets its connection. */
    const int r025_1[4][5] = {{1, 2, -1}, {0, 2, 3, -1}, {0, 1, -1}, {1, -1}};
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 1.0, &S));
    expect_rows(&S, 4, r025_1, "theta 0.25, max_row_sum 1");
    ks_strength_free(&S);

    /* A tighter max_row_sum drops more rows: row 0 (|0.5| > 0.1*4), row 1
     * (1.5 > 0.1*5), row 2 (2.8 > 0.1*6). */
    const int r_tight[4][5] = {{-1}, {-1}, {-1}, {-1}};
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.1, &S));
    expect_rows(&S, 4, r_tight, "theta 0.25, max_row_sum 0.1");
    ks_strength_free(&S);

    /* theta 0: every entry of the right sign, but not the stored zero. */
    const int r0[4][5] = {{1, 2, -1}, {0, 2, 3, -1}, {0, 1, 3, -1}, {1, -1}};
    KS_CHECK(ks_amg_strength_classical(&A, 0.0, 1.0, &S));
    expect_rows(&S, 4, r0, "theta 0");
    ks_strength_free(&S);

    /* theta 1: only the entries reaching the row maximum. */
    const int r1[4][5] = {{2, -1}, {3, -1}, {0, -1}, {1, -1}};
    KS_CHECK(ks_amg_strength_classical(&A, 1.0, 1.0, &S));
    expect_rows(&S, 4, r1, "theta 1");
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(classical_ties_at_theta_one)
{
    /* Two entries equal to the maximum: both strong at theta = 1. */
    const double a[9] = {2, -1, -1, -1, 2, -0.5, -1, -1, 2};
    const int keep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ks_csr A;
    csr_from_dense(3, a, keep, &A);
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 1.0, 1.0, &S));
    const int r[3][5] = {{1, 2, -1}, {0, -1}, {0, 1, -1}};
    expect_rows(&S, 3, r, "ties");
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* Zero and missing diagonals: classical strength uses only the sign (a
 * zero counts as positive) and must not fail; the symmetric measure must
 * fail naming the first such row. */
START_TEST(zero_diagonal)
{
    /* row 0: normal; row 1: explicit zero diagonal; row 2: no diagonal,
     * positive off-diagonals only. */
    const double a[9] = {2, -1, 0, -1, 0, -2, 1, 1, 0};
    const int keep[9] = {1, 1, 0, 1, 1, 1, 1, 1, 0};
    ks_csr A;
    csr_from_dense(3, a, keep, &A);
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 1.0, &S));
    const int r[3][5] = {{1, -1}, {0, 2, -1}, {-1}};
    expect_rows(&S, 3, r, "zero diagonal, max_row_sum 1");
    ks_strength_free(&S);
    /* With the row-sum test on, a zero diagonal with a nonzero row sum is
     * "far from zero row sum": no strong connections, and no NaN trouble. */
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    const int r9[3][5] = {{1, -1}, {-1}, {-1}};
    expect_rows(&S, 3, r9, "zero diagonal, max_row_sum 0.9");
    ks_strength_free(&S);

    ks_error e = ks_amg_strength_symmetric(&A, 0.25, &S);
    ck_assert_int_eq(e, KS_ERR_NUMERIC);
    ck_assert_msg(strstr(ks_last_error(), "zero diagonal at row 1") != NULL, "message: %s",
                  ks_last_error());
    ck_assert_ptr_null(S.rowptr);
    ks_csr_free(&A);
}
END_TEST

START_TEST(symmetric_hand_computed)
{
    /* Negative diagonal in row 1: the measure uses |a_ii|. */
    const double a[9] = {4, -2, 0.5, -2, -1, -0.1, 0.5, -0.1, 9};
    const int keep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ks_csr A;
    csr_from_dense(3, a, keep, &A);
    ks_strength S;
    /* |a01| = 2 >= 0.25*2; |a02| = 0.5 < 0.25*6; |a12| = 0.1 < 0.25*3. */
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.25, &S));
    const int r025[3][5] = {{1, -1}, {0, -1}, {-1}};
    expect_rows(&S, 3, r025, "symmetric 0.25");
    ks_strength_free(&S);
    /* 0.05: 0.5 >= 0.3 joins, 0.1 < 0.15 does not. */
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.05, &S));
    const int r005[3][5] = {{1, 2, -1}, {0, -1}, {0, -1}};
    expect_rows(&S, 3, r005, "symmetric 0.05");
    ks_strength_free(&S);
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.0, &S));
    const int r0[3][5] = {{1, 2, -1}, {0, 2, -1}, {0, 1, -1}};
    expect_rows(&S, 3, r0, "symmetric 0");
    ks_strength_free(&S);
    /* theta 1: |a_ij| >= sqrt|a_ii a_jj| only for |a01| = 2 = sqrt(4*1). */
    KS_CHECK(ks_amg_strength_symmetric(&A, 1.0, &S));
    expect_rows(&S, 3, r025, "symmetric 1");
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* Random sparse matrices with mixed signs against a direct dense
 * evaluation of both definitions. */
START_TEST(random_against_reference)
{
    ks_test_rng_seed(7);
    const int n = 40;
    double *a = calloc((size_t)n * n, sizeof *a);
    int *keep = calloc((size_t)n * n, sizeof *keep);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(keep);
    for (int trial = 0; trial < 6; trial++) {
        memset(keep, 0, (size_t)n * n * sizeof *keep);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (i != j && ks_test_urand() < 0.15) {
                    keep[i * n + j] = 1;
                    a[i * n + j] = (ks_test_urand() < 0.25 ? 1.0 : -1.0) * (0.05 + ks_test_urand());
                }
            }
            keep[i * n + i] = 1;
            a[i * n + i] = (trial % 2 && ks_test_urand() < 0.2 ? -1.0 : 1.0) * (1.0 + 4 * ks_test_urand());
        }
        ks_csr A;
        csr_from_dense(n, a, keep, &A);
        const double thetas[] = {0.0, 0.25, 0.5, 0.9, 1.0};
        const double mrs = trial < 3 ? 1.0 : 0.7;
        for (int t = 0; t < 5; t++) {
            ks_strength S, Ssym;
            KS_CHECK(ks_amg_strength_classical(&A, thetas[t], mrs, &S));
            KS_CHECK(ks_amg_strength_symmetric(&A, thetas[t], &Ssym));
            for (int i = 0; i < n; i++) {
                double d = a[i * n + i], s = d < 0 ? -1 : 1, mx = 0, sum = 0;
                for (int j = 0; j < n; j++)
                    if (keep[i * n + j]) {
                        sum += a[i * n + j];
                        if (j != i)
                            mx = fmax(mx, -s * a[i * n + j]);
                    }
                int dropped = mrs < 1 && fabs(sum) > mrs * fabs(d);
                int p = S.rowptr[i], q = Ssym.rowptr[i];
                for (int j = 0; j < n; j++) {
                    if (j == i || !keep[i * n + j])
                        continue;
                    double v = -s * a[i * n + j];
                    if (!dropped && v > 0 && v >= thetas[t] * mx) {
                        ck_assert_msg(p < S.rowptr[i + 1] && S.colind[p] == j,
                                      "classical trial %d theta %g row %d misses %d", trial,
                                      thetas[t], i, j);
                        p++;
                    }
                    if (fabs(a[i * n + j]) >= thetas[t] * sqrt(fabs(d * a[j * n + j]))) {
                        ck_assert_msg(q < Ssym.rowptr[i + 1] && Ssym.colind[q] == j,
                                      "symmetric trial %d theta %g row %d misses %d", trial,
                                      thetas[t], i, j);
                        q++;
                    }
                }
                ck_assert_int_eq(p, S.rowptr[i + 1]);
                ck_assert_int_eq(q, Ssym.rowptr[i + 1]);
            }
            ks_strength_free(&S);
            ks_strength_free(&Ssym);
        }
        ks_csr_free(&A);
    }
    free(a);
    free(keep);
}
END_TEST

/* 2D 5-point: every neighbour is strong and S is symmetric. */
START_TEST(laplacian_all_strong)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON2D_5;
    p.nx = 9;
    p.ny = 7;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    ks_strength S, ST;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    ck_assert_int_eq(S.rowptr[S.n], A.nnz - A.nrows);
    for (ks_int i = 0; i < A.nrows; i++) {
        ks_int p2 = S.rowptr[i];
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            if (A.colind[k] != i)
                ck_assert_int_eq(S.colind[p2++], A.colind[k]);
    }
    KS_CHECK(ks_strength_transpose(&S, &ST));
    ck_assert(same_pattern(&S, &ST));
    ks_strength_free(&S);
    ks_strength_free(&ST);
    ks_csr_free(&A);
}
END_TEST

/* Anisotropic 3D: with cy, cz << cx only the x neighbours are strong. */
START_TEST(anisotropic_keeps_strong_axis)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_ANISO3D;
    p.nx = 6;
    p.ny = 5;
    p.nz = 4;
    p.cx = 1.0;
    p.cy = p.cz = 0.01;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 1.0, &S));
    for (ks_int i = 0; i < A.nrows; i++) {
        int x = i % p.nx;
        int expect = (x > 0) + (x < p.nx - 1);
        ck_assert_int_eq(S.rowptr[i + 1] - S.rowptr[i], expect);
        for (ks_int k = S.rowptr[i]; k < S.rowptr[i + 1]; k++)
            ck_assert_int_eq(abs(S.colind[k] - i), 1);
    }
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(transpose_round_trip)
{
    /* A nonsymmetric pattern from a random matrix. */
    ks_test_rng_seed(11);
    const int n = 300;
    ks_int *r = malloc(sizeof(ks_int) * n * 8), *c = malloc(sizeof(ks_int) * n * 8);
    double *v = malloc(sizeof(double) * n * 8);
    int m = 0;
    for (int i = 0; i < n; i++) {
        r[m] = i, c[m] = i, v[m++] = 4.0;
        for (int t = 0; t < 5; t++)
            r[m] = i, c[m] = (int)(ks_test_rng_next() % n), v[m++] = -ks_test_urand();
    }
    ks_csr A;
    KS_CHECK(ks_csr_from_coo(n, n, m, r, c, v, &A, NULL));
    ks_strength S, ST, STT;
    KS_CHECK(ks_amg_strength_classical(&A, 0.3, 1.0, &S));
    KS_CHECK(ks_strength_transpose(&S, &ST));
    ck_assert_int_eq(ST.rowptr[n], S.rowptr[n]);
    ck_assert(!same_pattern(&S, &ST)); /* the test must exercise a nonsymmetric S */
    /* Every (i,j) of S is (j,i) of ST, and ST rows are sorted. */
    for (ks_int j = 0; j < n; j++)
        for (ks_int k = ST.rowptr[j]; k + 1 < ST.rowptr[j + 1]; k++)
            ck_assert_int_lt(ST.colind[k], ST.colind[k + 1]);
    for (ks_int i = 0; i < n; i++)
        for (ks_int k = S.rowptr[i]; k < S.rowptr[i + 1]; k++) {
            ks_int j = S.colind[k], found = 0;
            for (ks_int q = ST.rowptr[j]; q < ST.rowptr[j + 1]; q++)
                found |= ST.colind[q] == i;
            ck_assert_msg(found, "S(%d,%d) missing from the transpose", i, j);
        }
    KS_CHECK(ks_strength_transpose(&ST, &STT));
    ck_assert(same_pattern(&S, &STT));
    ks_strength_free(&S);
    ks_strength_free(&ST);
    ks_strength_free(&STT);
    ks_csr_free(&A);
    free(r);
    free(c);
    free(v);
}
END_TEST

/* A pattern large enough for the blocked parallel transpose: equal to a
 * plain counting-sort transpose on 1 and 2 threads. */
/* ks_strength_transpose of S with 1 to 3 threads against a serial
 * counting sort. */
static void check_transpose_threads(const ks_strength *S, const char *what)
{
    const ks_int n = S->n, nnz = S->rowptr[n];
    ck_assert_int_gt(nnz, 65536);
    ks_int *rp = calloc((size_t)n + 1, sizeof *rp), *ci = malloc(sizeof(ks_int) * (size_t)nnz);
    ks_int *next = malloc(sizeof(ks_int) * (size_t)n);
    ck_assert(rp && ci && next);
    for (ks_int k = 0; k < nnz; k++)
        rp[S->colind[k] + 1]++;
    for (ks_int i = 0; i < n; i++)
        rp[i + 1] += rp[i];
    memcpy(next, rp, sizeof(ks_int) * (size_t)n);
    for (ks_int i = 0; i < n; i++)
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
            ci[next[S->colind[k]]++] = i;
    int saved = 1;
#ifdef _OPENMP
    saved = omp_get_max_threads();
#endif
    for (int t = 1; t <= 3; t++) {
        ks_test_set_threads(t);
        ks_strength ST;
        KS_CHECK(ks_strength_transpose(S, &ST));
        ck_assert_int_eq(ST.n, n);
        ck_assert_msg(memcmp(ST.rowptr, rp, sizeof(ks_int) * ((size_t)n + 1)) == 0 &&
                      memcmp(ST.colind, ci, sizeof(ks_int) * (size_t)nnz) == 0,
                      "%s, %d threads: transpose differs from the reference", what, t);
        ks_strength_free(&ST);
        /* With room after some rows (0 to 4 entries, none after most): each
         * row the reference's, its room after it, unwritten. */
        ks_int *room = malloc(sizeof(ks_int) * ((size_t)n + 1));
        ck_assert(room);
        room[0] = 0;
        for (ks_int i = 0; i < n; i++)
            room[i + 1] = room[i] + (i % 7 == 3 ? (i / 7) % 5 : 0);
        KS_CHECK(ks_strength_transpose_room(S, room, &ST));
        ck_assert_int_eq(ST.n, n);
        ck_assert_int_eq(ST.rowptr[n], nnz + room[n]);
        int same = 1;
        for (ks_int i = 0; i < n && same; i++) {
            const ks_int len = rp[i + 1] - rp[i];
            same = ST.rowptr[i] == rp[i] + room[i] &&
                   ST.rowptr[i + 1] - ST.rowptr[i] == len + room[i + 1] - room[i] &&
                   memcmp(ST.colind + ST.rowptr[i], ci + rp[i], sizeof(ks_int) * (size_t)len) == 0;
        }
        ck_assert_msg(same, "%s, %d threads: transpose with room differs from the reference", what,
                      t);
        ks_strength_free(&ST);
        free(room);
    }
    ks_test_set_threads(saved);
    free(rp);
    free(ci);
    free(next);
}

/* A mesh's pattern (each thread's block reaches few columns beyond its
 * rows) and one reaching everywhere (the blocks count over all columns). */
START_TEST(transpose_large_blocked)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 24;
    p.vx = 70;
    p.vy = -30;
    p.vz = 8;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    check_transpose_threads(&S, "convection-diffusion");
    ks_strength_free(&S);
    ks_csr_free(&A);

    const ks_int n = 100000;
    ks_strength F = {0};
    F.n = n;
    F.rowptr = malloc(((size_t)n + 1) * sizeof *F.rowptr);
    F.colind = malloc(5 * (size_t)n * sizeof *F.colind);
    ck_assert(F.rowptr && F.colind);
    F.rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int m = F.rowptr[i];
        for (int j = 0; j < 5; j++) {
            const ks_int c = (ks_int)(((int64_t)i * 7919 + (int64_t)j * 104729 + 1) % n);
            if (c != i)
                F.colind[m++] = c;
        }
        F.rowptr[i + 1] = m;
    }
    check_transpose_threads(&F, "far-reaching");
    ks_strength_free(&F);
}
END_TEST

START_TEST(thread_count_independent)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 14;
    p.vx = 40;
    p.vy = -25;
    p.vz = 3;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    ks_strength S1, S2, Y1, Y2;
    ks_test_set_threads(1);
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S1));
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.08, &Y1));
    ks_test_set_threads(2);
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S2));
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.08, &Y2));
    ck_assert(same_pattern(&S1, &S2));
    ck_assert(same_pattern(&Y1, &Y2));
    ks_strength_free(&S1);
    ks_strength_free(&S2);
    ks_strength_free(&Y1);
    ks_strength_free(&Y2);
    ks_csr_free(&A);
}
END_TEST

START_TEST(empty_matrix)
{
    ks_csr A;
    KS_CHECK(ks_csr_alloc(&A, 0, 0, 0));
    ks_strength S, ST;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    ck_assert_int_eq(S.n, 0);
    ck_assert_int_eq(S.rowptr[0], 0);
    KS_CHECK(ks_strength_transpose(&S, &ST));
    ck_assert_int_eq(ST.n, 0);
    ks_strength_free(&S);
    ks_strength_free(&ST);
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.25, &S));
    ks_strength_free(&S);
    ks_strength_free(&S); /* freeing twice is harmless: free() zeroes */
    ks_csr_free(&A);
}
END_TEST

static void expect_err(ks_error got, ks_error want, const char *needle)
{
    ck_assert_msg(got == want, "got %s, expected %s (%s)", ks_error_name(got),
                  ks_error_name(want), ks_last_error());
    ck_assert_msg(strstr(ks_last_error(), needle) != NULL, "message '%s' lacks '%s'",
                  ks_last_error(), needle);
}

START_TEST(bad_arguments)
{
    ks_csr A;
    csr_from_dense(4, hand_a, hand_keep, &A);
    ks_strength S;
    const double bad_theta[] = {-0.01, 1.01, NAN};
    for (int k = 0; k < 3; k++) {
        expect_err(ks_amg_strength_classical(&A, bad_theta[k], 0.9, &S), KS_ERR_ARG,
                   "strength_threshold");
        ck_assert_ptr_null(S.rowptr);
        expect_err(ks_amg_strength_symmetric(&A, bad_theta[k], &S), KS_ERR_ARG,
                   "strength_threshold");
    }
    const double bad_mrs[] = {0.0, -0.5, 1.5, NAN};
    for (int k = 0; k < 4; k++)
        expect_err(ks_amg_strength_classical(&A, 0.25, bad_mrs[k], &S), KS_ERR_ARG,
                   "max_row_sum");
    expect_err(ks_amg_strength_classical(NULL, 0.25, 0.9, &S), KS_ERR_ARG, "NULL");
    expect_err(ks_amg_strength_classical(&A, 0.25, 0.9, NULL), KS_ERR_ARG, "NULL");
    expect_err(ks_amg_strength_symmetric(NULL, 0.25, &S), KS_ERR_ARG, "NULL");
    A.ncols = 5;
    expect_err(ks_amg_strength_classical(&A, 0.25, 0.9, &S), KS_ERR_SIZE, "square");
    A.ncols = 4;
    ks_int save = A.colind[5];
    A.colind[5] = 4; /* row 1 */
    expect_err(ks_amg_strength_classical(&A, 0.25, 0.9, &S), KS_ERR_ARG, "row 1");
    A.colind[5] = save;

    ks_strength ST;
    expect_err(ks_strength_transpose(NULL, &ST), KS_ERR_ARG, "NULL");
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    expect_err(ks_strength_transpose(&S, NULL), KS_ERR_ARG, "NULL");
    expect_err(ks_strength_transpose(&S, &S), KS_ERR_ARG, "input");
    S.colind[S.rowptr[2]] = 2; /* row 2 naming itself */
    expect_err(ks_strength_transpose(&S, &ST), KS_ERR_ARG, "row 2");
    S.colind[S.rowptr[2]] = -1;
    expect_err(ks_strength_transpose(&S, &ST), KS_ERR_ARG, "row 2");
    ks_strength_free(&S);
    ks_strength_free(NULL);
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_strength");
    TCase *tc = tcase_create("strength");
    tcase_add_test(tc, classical_hand_computed);
    tcase_add_test(tc, classical_ties_at_theta_one);
    tcase_add_test(tc, zero_diagonal);
    tcase_add_test(tc, symmetric_hand_computed);
    tcase_add_test(tc, random_against_reference);
    tcase_add_test(tc, laplacian_all_strong);
    tcase_add_test(tc, anisotropic_keeps_strong_axis);
    tcase_add_test(tc, transpose_round_trip);
    tcase_add_test(tc, thread_count_independent);
    tcase_add_test(tc, transpose_large_blocked);
    tcase_add_test(tc, empty_matrix);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
