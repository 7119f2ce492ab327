/* Host CSR utilities: COO -> CSR (sorting, duplicates, overflow), validate
 * (each defect), copy, reference SpMV. */
#include "ks_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Dense row-major image of A (nrows x ncols). */
static double *dense(const ks_csr *A)
{
    double *d = calloc((size_t)A->nrows * (size_t)A->ncols, sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            d[(size_t)i * A->ncols + A->colind[k]] += A->val[k];
    return d;
}

START_TEST(from_coo_sorts_and_sums_duplicates)
{
    /* 3 x 4, scrambled, with (1,2) three times and (0,0) twice. */
    const ks_int r[] = {2, 1, 0, 1, 0, 1, 2, 0, 1};
    const ks_int c[] = {3, 2, 3, 0, 0, 2, 0, 0, 2};
    const double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ks_csr A;
    int64_t ndup = -1;
    KS_CHECK(ks_csr_from_coo(3, 4, 9, r, c, v, &A, &ndup));
    ck_assert_int_eq(ndup, 3);
    ck_assert_int_eq(A.nrows, 3);
    ck_assert_int_eq(A.ncols, 4);
    ck_assert_int_eq(A.nnz, 6);
    const ks_int rp[] = {0, 2, 4, 6};
    const ks_int ci[] = {0, 3, 0, 2, 0, 3};
    const double cv[] = {13, 3, 4, 17, 7, 1};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(A.rowptr[i], rp[i]);
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(A.colind[k], ci[k]);
        ck_assert_double_eq(A.val[k], cv[k]);
    }
    KS_CHECK(ks_csr_validate(&A));
    ks_csr_free(&A);
    ck_assert_ptr_null(A.rowptr);
}
END_TEST

START_TEST(from_coo_long_unsorted_rows)
{
    /* Rows long enough for the merge sort (> 16), random order, many
     * duplicates; compare against a dense accumulation. */
    enum { N = 40, M = 37, NE = 5000 };
    ks_int *r = malloc(NE * sizeof *r), *c = malloc(NE * sizeof *c);
    double *v = malloc(NE * sizeof *v), *ref = calloc(N * M, sizeof *ref);
    unsigned seed = 12345;
    for (int e = 0; e < NE; e++) {
        seed = seed * 1103515245u + 12345u;
        r[e] = (ks_int)((seed >> 8) % N);
        seed = seed * 1103515245u + 12345u;
        c[e] = (ks_int)((seed >> 8) % M);
        v[e] = (double)(e % 17) - 8.0;
        ref[r[e] * M + c[e]] += v[e];
    }
    int distinct = 0;
    {
        char *seen = calloc(N * M, 1);
        for (int e = 0; e < NE; e++)
            if (!seen[r[e] * M + c[e]]++)
                distinct++;
        free(seen);
    }
    ks_csr A;
    int64_t ndup;
    KS_CHECK(ks_csr_from_coo(N, M, NE, r, c, v, &A, &ndup));
    ck_assert_int_eq(A.nnz, distinct);
    ck_assert_int_eq(ndup, NE - distinct);
    KS_CHECK(ks_csr_validate(&A));
    double *d = dense(&A);
    for (int k = 0; k < N * M; k++)
        ck_assert_double_eq(d[k], ref[k]);
    free(d);
    ks_csr_free(&A);
    free(r);
    free(c);
    free(v);
    free(ref);
}
END_TEST

START_TEST(from_coo_empty_and_errors)
{
    ks_csr A;
    KS_CHECK(ks_csr_from_coo(3, 3, 0, NULL, NULL, NULL, &A, NULL));
    ck_assert_int_eq(A.nnz, 0);
    for (int i = 0; i <= 3; i++)
        ck_assert_int_eq(A.rowptr[i], 0);
    KS_CHECK(ks_csr_validate(&A));
    ks_csr_free(&A);

    const ks_int r[] = {0, 3}, c[] = {1, 1};
    const double v[] = {1, 2};
    ck_assert_int_eq(ks_csr_from_coo(3, 3, 2, r, c, v, &A, NULL), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "entry 1"));
    ck_assert_ptr_null(A.rowptr);
    const ks_int cneg[] = {0, -1};
    ck_assert_int_eq(ks_csr_from_coo(3, 3, 2, r, cneg, v, &A, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_from_coo(-1, 3, 0, NULL, NULL, NULL, &A, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_from_coo(3, 3, 2, r, c, NULL, &A, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_from_coo(3, 3, 1, r, c, v, NULL, NULL), KS_ERR_ARG);
}
END_TEST

START_TEST(duplicates_collapse_and_size_limit)
{
    /* All entries on one position collapse to one. (The builder's own
     * INT32_MAX check needs over 2^31 entries, tens of GB, so the 32-bit
     * limit is exercised through the generator's up-front count.) */
    ks_csr A;
    const ks_int r[] = {0, 0, 0}, c[] = {0, 0, 0};
    const double v[] = {1, 2, 3};
    int64_t ndup;
    KS_CHECK(ks_csr_from_coo(1, 1, 3, r, c, v, &A, &ndup));
    ck_assert_int_eq(A.nnz, 1);
    ck_assert_double_eq(A.val[0], 6.0);
    ck_assert_int_eq(ndup, 2);
    ks_csr_free(&A);
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON3D_27;
    p.nx = p.ny = p.nz = 500; /* 125M rows, about 3.4G nonzeros */
    ck_assert_int_eq(ks_generate(&p, &A), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "32-bit"));
    ck_assert_ptr_null(A.rowptr);
}
END_TEST

static ks_csr small(void)
{
    /* [ 2 -1  0 ]
     * [-1  2 -1 ]
     * [ 0 -1  2 ] plus a 4th column with one entry in row 0 */
    const ks_int r[] = {0, 0, 1, 1, 1, 2, 2, 0};
    const ks_int c[] = {0, 1, 0, 1, 2, 1, 2, 3};
    const double v[] = {2, -1, -1, 2, -1, -1, 2, 0.5};
    ks_csr A;
    KS_CHECK(ks_csr_from_coo(3, 4, 8, r, c, v, &A, NULL));
    return A;
}

static void expect_invalid(ks_csr *A, ks_error code, const char *needle)
{
    ks_clear_error();
    ck_assert_int_eq(ks_csr_validate(A), code);
    ck_assert_msg(strstr(ks_last_error(), needle) != NULL, "message '%s' lacks '%s'",
                  ks_last_error(), needle);
}

START_TEST(validate_each_defect)
{
    ks_csr A = small();
    KS_CHECK(ks_csr_validate(&A));

    A.rowptr[0] = 1;
    expect_invalid(&A, KS_ERR_ARG, "rowptr[0]");
    A.rowptr[0] = 0;

    A.rowptr[2] = 1; /* row 1 ends before it starts */
    expect_invalid(&A, KS_ERR_ARG, "row 1");
    A.rowptr[2] = 6;

    A.rowptr[3] = 7; /* last pointer != nnz */
    expect_invalid(&A, KS_ERR_ARG, "nnz");
    A.rowptr[3] = 8;

    A.rowptr[2] = 9; /* beyond nnz */
    expect_invalid(&A, KS_ERR_ARG, "row 1");
    A.rowptr[2] = 6;

    A.colind[4] = 4; /* column out of range in row 1 */
    expect_invalid(&A, KS_ERR_ARG, "row 1: column index 4 out of range");
    A.colind[4] = -1;
    expect_invalid(&A, KS_ERR_ARG, "row 1: column index -1");
    A.colind[4] = 1;
    A.colind[5] = 0; /* row 1 (positions 3..5) is now 0,1,0: unsorted */
    expect_invalid(&A, KS_ERR_ARG, "row 1: column 0 after column 1");
    A.colind[5] = 1; /* 0,1,1: duplicate */
    expect_invalid(&A, KS_ERR_ARG, "row 1: column 1 after column 1 (columns must be sorted and unique)");
    A.colind[5] = 2;

    A.val[6] = NAN;
    expect_invalid(&A, KS_ERR_NUMERIC, "row 2");
    A.val[6] = INFINITY;
    expect_invalid(&A, KS_ERR_NUMERIC, "not finite");
    A.val[6] = 2;
    KS_CHECK(ks_csr_validate(&A));

    ks_int *rp = A.rowptr;
    A.rowptr = NULL;
    expect_invalid(&A, KS_ERR_ARG, "rowptr is NULL");
    A.rowptr = rp;
    A.nrows = -2;
    expect_invalid(&A, KS_ERR_ARG, "negative");
    A.nrows = 3;
    ck_assert_int_eq(ks_csr_validate(NULL), KS_ERR_ARG);
    ks_csr_free(&A);
}
END_TEST

/* On a matrix large enough for the parallel scan, the message names the first
 * bad row whatever the thread count. */
START_TEST(validate_large_names_first_bad_row)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.nx = g.ny = g.nz = 50; /* 125,000 rows, 845,000 entries */
    ks_csr A;
    KS_CHECK(ks_generate(&g, &A));
    KS_CHECK(ks_csr_validate(&A));
    const ks_int late = 120000, early = 70001;
    A.val[A.rowptr[late] + 1] = NAN;
    A.colind[A.rowptr[early] + 1] = A.colind[A.rowptr[early]]; /* duplicate column */
    for (int threads = 1; threads <= 3; threads++) {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        ck_assert_int_eq(ks_csr_validate(&A), KS_ERR_ARG);
        ck_assert_msg(strstr(ks_last_error(), "row 70001:") != NULL, "%d threads: %s", threads,
                      ks_last_error());
    }
    A.colind[A.rowptr[early] + 1] = A.colind[A.rowptr[early]] + 1; /* only the NaN left */
    ck_assert_int_eq(ks_csr_validate(&A), KS_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "row 120000,"));
    ks_csr_free(&A);
}
END_TEST

START_TEST(copy_is_deep)
{
    ks_csr A = small(), B;
    KS_CHECK(ks_csr_copy(&A, &B));
    ck_assert_ptr_ne(A.rowptr, B.rowptr);
    ck_assert_ptr_ne(A.colind, B.colind);
    ck_assert_ptr_ne(A.val, B.val);
    ck_assert_int_eq(B.nrows, 3);
    ck_assert_int_eq(B.ncols, 4);
    ck_assert_int_eq(B.nnz, 8);
    ck_assert_int_eq(memcmp(A.rowptr, B.rowptr, 4 * sizeof(ks_int)), 0);
    ck_assert_int_eq(memcmp(A.colind, B.colind, 8 * sizeof(ks_int)), 0);
    ck_assert_int_eq(memcmp(A.val, B.val, 8 * sizeof(double)), 0);
    A.val[0] = 99; /* the copy does not follow */
    ck_assert_double_eq(B.val[0], 2.0);
    ck_assert_int_eq(ks_csr_copy(&A, &A), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_copy(NULL, &B), KS_ERR_ARG);
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_csr_free(&B); /* freeing twice is harmless after the struct was cleared */
}
END_TEST

/* A copy above the size where it is split over the threads (4 MiB an
 * array): every entry arrives, the partial last chunk included. */
START_TEST(copy_large_is_exact)
{
    const ks_int n = 700001, nnz = 3 * n - 2; /* tridiagonal: values 16.8 MB */
    ks_csr A, B;
    KS_CHECK(ks_csr_alloc(&A, n, n, nnz));
    ks_int k = 0;
    for (ks_int i = 0; i < n; i++) {
        for (ks_int j = i > 0 ? i - 1 : 0; j <= i + 1 && j < n; j++, k++) {
            A.colind[k] = j;
            A.val[k] = sin((double)k);
        }
        A.rowptr[i + 1] = k;
    }
    ck_assert_int_eq(k, nnz);
    KS_CHECK(ks_csr_copy(&A, &B));
    ck_assert_int_eq(memcmp(A.rowptr, B.rowptr, ((size_t)n + 1) * sizeof(ks_int)), 0);
    ck_assert_int_eq(memcmp(A.colind, B.colind, (size_t)nnz * sizeof(ks_int)), 0);
    ck_assert_int_eq(memcmp(A.val, B.val, (size_t)nnz * sizeof(double)), 0);
    ks_csr_free(&A);
    ks_csr_free(&B);
}
END_TEST

START_TEST(alloc_shapes)
{
    ks_csr A;
    KS_CHECK(ks_csr_alloc(&A, 5, 7, 11));
    ck_assert_int_eq(A.nrows, 5);
    ck_assert_int_eq(A.ncols, 7);
    ck_assert_int_eq(A.nnz, 11);
    ck_assert_ptr_nonnull(A.rowptr);
    ck_assert_ptr_nonnull(A.colind);
    ck_assert_ptr_nonnull(A.val);
    for (int i = 0; i <= 5; i++)
        ck_assert_int_eq(A.rowptr[i], 0);
    ks_csr_free(&A);
    KS_CHECK(ks_csr_alloc(&A, 0, 0, 0));
    KS_CHECK(ks_csr_validate(&A));
    ks_csr_free(&A);
    ck_assert_int_eq(ks_csr_alloc(&A, 3, -1, 0), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_alloc(NULL, 3, 3, 0), KS_ERR_ARG);
}
END_TEST

START_TEST(spmv_ref_matches_dense)
{
    ks_csr A = small();
    const double x[] = {1, -2, 3, 4};
    double y[3];
    for (int i = 0; i < 3; i++)
        y[i] = NAN; /* beta = 0 must not read y */
    ks_csr_spmv_ref(&A, 1.0, x, 0.0, y);
    /* row 0: 2*1 + -1*-2 + 0.5*4 = 6; row 1: -1 - 4 - 3 = -8; row 2: 2 + 6 = 8 */
    ck_assert_double_eq(y[0], 6.0);
    ck_assert_double_eq(y[1], -8.0);
    ck_assert_double_eq(y[2], 8.0);
    ks_csr_spmv_ref(&A, 2.0, x, -1.0, y); /* y = 2 A x - y = A x */
    ck_assert_double_eq(y[0], 6.0);
    ck_assert_double_eq(y[1], -8.0);
    ck_assert_double_eq(y[2], 8.0);
    ks_csr_spmv_ref(&A, 0.5, x, 3.0, y); /* 0.5 A x + 3 A x = 3.5 A x */
    ck_assert_double_eq(y[0], 21.0);
    ck_assert_double_eq(y[1], -28.0);
    ck_assert_double_eq(y[2], 28.0);
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("csr");
    TCase *tc = tcase_create("csr");
    tcase_add_test(tc, from_coo_sorts_and_sums_duplicates);
    tcase_add_test(tc, copy_large_is_exact);
    tcase_add_test(tc, from_coo_long_unsorted_rows);
    tcase_add_test(tc, from_coo_empty_and_errors);
    tcase_add_test(tc, duplicates_collapse_and_size_limit);
    tcase_add_test(tc, validate_each_defect);
    tcase_add_test(tc, validate_large_names_first_bad_row);
    tcase_add_test(tc, copy_is_deep);
    tcase_add_test(tc, alloc_shapes);
    tcase_add_test(tc, spmv_ref_matches_dense);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
