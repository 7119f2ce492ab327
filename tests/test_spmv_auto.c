/* "spmv_format": "auto": the statistics-based choice (host code, so CI
 * without a GPU tests the cuda rules too) and the reason a matrix records. */
#include "ks_test.h"
#include "spmv/format.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void gen(ks_gen_kind kind, ks_int n, ks_csr *A)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = p.ny = p.nz = n;
    KS_CHECK(ks_generate(&p, A));
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* n x n, row i with len(i) entries at distinct columns (sorted), one of them
 * the diagonal. len < 0 picks 3..12 at random. */
static void random_rows(ks_int n, uint64_t seed, ks_int (*len_of)(ks_int i), ks_csr *A)
{
    uint64_t s = seed;
    A->nrows = A->ncols = n;
    A->rowptr = malloc(((size_t)n + 1) * sizeof *A->rowptr);
    ks_int cap = 16 * n + 8192;
    A->colind = malloc((size_t)cap * sizeof *A->colind);
    A->val = malloc((size_t)cap * sizeof *A->val);
    unsigned char *used = calloc((size_t)n, 1);
    ck_assert(A->rowptr && A->colind && A->val && used);
    ks_int nnz = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int len = len_of ? len_of(i) : 3 + (ks_int)(rng_next(&s) % 10);
        if (len > n)
            len = n;
        ck_assert(nnz + len <= cap);
        /* distinct columns (the marks), then sorted by insertion */
        ks_int *row = A->colind + nnz;
        row[0] = i;
        used[i] = 1;
        ks_int got = 1;
        while (got < len) {
            ks_int c = (ks_int)(rng_next(&s) % (uint64_t)n);
            if (!used[c]) {
                used[c] = 1;
                row[got++] = c;
            }
        }
        for (ks_int a = 1; a < len; a++)
            for (ks_int b = a; b > 0 && row[b - 1] > row[b]; b--) {
                ks_int t = row[b];
                row[b] = row[b - 1];
                row[b - 1] = t;
            }
        for (ks_int a = 0; a < len; a++) {
            used[row[a]] = 0;
            A->val[nnz + a] = row[a] == i ? 4.0 : -0.1;
        }
        nnz += len;
        A->rowptr[i + 1] = nnz;
    }
    A->nnz = nnz;
    free(used);
    KS_CHECK(ks_csr_validate(A));
}

static int cuda_has(const char *name)
{
    return ks_spmv_format_find(name, KS_BACKEND_CUDA) != NULL;
}

#define EXPECT_REASON(r, s) ck_assert_msg(strstr((r), (s)) != NULL, "reason \"%s\" lacks \"%s\"", (r), (s))

START_TEST(large_7pt_is_dia)
{
    if (!cuda_has("dia")) {
        ks_test_skip(1, "build without cuda formats: dia not registered");
        return;
    }
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 50, &A); /* 125000 rows */
    char why[160];
    const char *f = ks_spmv_format_auto_reason(&A, KS_BACKEND_CUDA, why, sizeof why);
    ck_assert_str_eq(f, "dia");
    EXPECT_REASON(why, "banded");
    EXPECT_REASON(why, "7 occupied diagonals");
    EXPECT_REASON(why, "fill 1.0"); /* 7 * 125000 / 860000 = 1.017 */
    EXPECT_REASON(why, "125000 rows");
    ck_assert_str_eq(ks_spmv_format_auto(&A, KS_BACKEND_CUDA), "dia");
    ks_csr_free(&A);
}
END_TEST

START_TEST(large_27pt_is_dia)
{
    if (!cuda_has("dia")) {
        ks_test_skip(1, "build without cuda formats: dia not registered");
        return;
    }
    ks_csr A;
    gen(KS_GEN_POISSON3D_27, 47, &A); /* 103823 rows */
    char why[160];
    ck_assert_str_eq(ks_spmv_format_auto_reason(&A, KS_BACKEND_CUDA, why, sizeof why), "dia");
    EXPECT_REASON(why, "27 occupied diagonals");
    ks_csr_free(&A);
}
END_TEST

START_TEST(small_7pt_is_csr_vector)
{
    if (!cuda_has("csr_vector")) {
        ks_test_skip(1, "build without cuda formats");
        return;
    }
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 20, &A); /* 8000 rows: too small for DIA to pay */
    char why[160];
    ck_assert_str_eq(ks_spmv_format_auto_reason(&A, KS_BACKEND_CUDA, why, sizeof why),
                     "csr_vector");
    EXPECT_REASON(why, "regular rows");
    EXPECT_REASON(why, "max 7");
    EXPECT_REASON(why, "mean 6.");
    ks_csr_free(&A);
}
END_TEST

static ks_int few_long(ks_int i) { return i % 700 == 3 ? 1500 : 5; }
static ks_int short_spread(ks_int i) { return i % 500 == 0 ? 200 : 2; }

START_TEST(few_long_rows_is_adaptive)
{
    if (!cuda_has("csr_adaptive")) {
        ks_test_skip(1, "build without cuda formats: csr_adaptive not registered");
        return;
    }
    ks_csr A;
    random_rows(2100, 7, few_long, &A); /* 3 rows of 1500, the rest 5: mean 7.1 */
    char why[160];
    ck_assert_str_eq(ks_spmv_format_auto_reason(&A, KS_BACKEND_CUDA, why, sizeof why),
                     "csr_adaptive");
    EXPECT_REASON(why, "few long rows");
    EXPECT_REASON(why, "max 1500");
    EXPECT_REASON(why, "mean 7.1");
    ks_csr_free(&A);
}
END_TEST

START_TEST(short_long_rows_stay_vector)
{
    if (!cuda_has("csr_vector")) {
        ks_test_skip(1, "build without cuda formats");
        return;
    }
    /* max 200 is 100x the mean but still one warp's easy work (<= 256). */
    ks_csr A;
    random_rows(5000, 3, short_spread, &A);
    ck_assert_str_eq(ks_spmv_format_auto(&A, KS_BACKEND_CUDA), "csr_vector");
    ks_csr_free(&A);
}
END_TEST

START_TEST(random_regular_is_csr_vector)
{
    if (!cuda_has("csr_vector")) {
        ks_test_skip(1, "build without cuda formats");
        return;
    }
    /* Scattered columns: huge DIA fill even at 100000+ rows, so never dia. */
    ks_int sizes[] = {50, 3000, 120000};
    for (int t = 0; t < 3; t++) {
        ks_csr A;
        random_rows(sizes[t], 11 + (uint64_t)t, NULL, &A);
        char why[160];
        const char *f = ks_spmv_format_auto_reason(&A, KS_BACKEND_CUDA, why, sizeof why);
        ck_assert_msg(f && strcmp(f, "csr_vector") == 0, "%d rows: %s (%s)", (int)sizes[t],
                      f ? f : "NULL", why);
        EXPECT_REASON(why, "regular rows: mean ");
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(cpu_is_csr)
{
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 50, &A); /* what cuda runs as dia */
    char why[160];
    ck_assert_str_eq(ks_spmv_format_auto_reason(&A, KS_BACKEND_CPU, why, sizeof why), "csr");
    ck_assert_str_eq(why, "the cpu backend's format");
    ck_assert_str_eq(ks_spmv_format_auto(&A, KS_BACKEND_CPU), "csr");
    ks_csr_free(&A);
    random_rows(3000, 5, few_long, &A);
    ck_assert_str_eq(ks_spmv_format_auto(&A, KS_BACKEND_CPU), "csr");
    ks_csr_free(&A);
}
END_TEST

START_TEST(matrix_reason_cpu)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 6, &A);
    ks_matrix *M;
    const char *autos[] = {"auto", "", NULL};
    for (int i = 0; i < 3; i++) {
        KS_CHECK(ks_matrix_create(be, &A, autos[i], NULL, &M));
        ck_assert_str_eq(ks_matrix_format(M), "csr");
        ck_assert_str_eq(ks_matrix_format_reason(M), "the cpu backend's format");
        ks_matrix_destroy(&M);
    }
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    ck_assert_str_eq(ks_matrix_format_reason(M), "");
    ks_matrix_destroy(&M);
    ck_assert_str_eq(ks_matrix_format_reason(NULL), "");
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

/* On a device: auto builds what it chose; a dia refusal falls back. */
START_TEST(matrix_reason_cuda)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 50, &A);
    ks_matrix *M;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &M));
    ck_assert_str_eq(ks_matrix_format(M), "dia");
    EXPECT_REASON(ks_matrix_format_reason(M), "7 occupied diagonals");
    ks_matrix_destroy(&M);
    /* max_fill 1.0 < the 1.01 DIA stores: dia refuses, csr_vector takes it. */
    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    prm.max_fill = 1.0;
    KS_CHECK(ks_matrix_create(be, &A, "auto", &prm, &M));
    ck_assert_str_eq(ks_matrix_format(M), "csr_vector");
    EXPECT_REASON(ks_matrix_format_reason(M), "dia refused, fallback csr_vector: dia");
    ks_matrix_destroy(&M);
    KS_CHECK(ks_matrix_create(be, &A, "dia", NULL, &M));
    ck_assert_str_eq(ks_matrix_format_reason(M), "");
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

/* ks_matrix_create_view_of on the cpu: a view of M's CSR in the format
 * asked for; the cpu's "auto" reads no statistics, so none are kept. */
START_TEST(view_of_cpu)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 6, &A);
    ks_matrix *M, *V;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &M));
    KS_CHECK(ks_matrix_create_view_of(M, "auto", NULL, &V));
    ck_assert_str_eq(ks_matrix_format(V), "csr");
    ck_assert_ptr_eq(ks_matrix_sparse(V)->val, ks_matrix_sparse(M)->val);
    ck_assert_int_eq(M->stats_known, 0);
    ck_assert_int_eq(V->stats_known, 0);
    ks_matrix_destroy(&V);
    ck_assert_int_eq(ks_matrix_create_view_of(NULL, "auto", NULL, &V), KS_ERR_ARG);
    ck_assert_ptr_null(V);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

static void expect_stats_eq(const ks_sparse_stats *a, const ks_sparse_stats *b)
{
    ck_assert_int_eq(a->nrows, b->nrows);
    ck_assert_int_eq(a->ncols, b->ncols);
    ck_assert_int_eq(a->nnz, b->nnz);
    ck_assert_int_eq(a->max_row, b->max_row);
    ck_assert_uint_eq(a->sum, b->sum);
    ck_assert_uint_eq(a->sum2, b->sum2);
    ck_assert_int_eq(a->ndiag, b->ndiag);
}

/* On a device: "auto" counts a matrix's statistics once (the device's
 * counts equal the host's), and a view of it takes them from it: the same
 * choice as a view that counts them itself. */
START_TEST(view_of_cuda_reuses_stats)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr A;
    gen(KS_GEN_POISSON3D_7, 50, &A);
    ks_sparse_stats host;
    ks_csr_row_stats(&A, ks_spmv_format_auto_dia_fill(KS_BACKEND_CUDA, A.nrows), &host);
    ks_sparse D;
    KS_CHECK(ks_sparse_from_csr(be, &A, 0, &D));
    D.valid = 1;
    ks_matrix *M, *V, *W;
    KS_CHECK(ks_matrix_create_sparse(be, &D, "auto", NULL, &M)); /* counted on the device */
    ck_assert_int_eq(M->stats_known, 1);
    expect_stats_eq(&M->stats, &host);
    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    prm.float_values = 1;
    KS_CHECK(ks_matrix_create_view_of(M, "auto", &prm, &V));
    ck_assert_int_eq(V->stats_known, 1);
    expect_stats_eq(&V->stats, &host);
    KS_CHECK(ks_matrix_create_view(be, ks_matrix_sparse(M), "auto", &prm, &W));
    ck_assert_str_eq(ks_matrix_format(V), ks_matrix_format(W));
    ck_assert_str_eq(ks_matrix_format_reason(V), ks_matrix_format_reason(W));
    ck_assert_int_eq(ks_matrix_float_values(V), ks_matrix_float_values(W));
    ks_matrix_destroy(&V);
    ks_matrix_destroy(&W);
    ks_matrix_destroy(&M);
    /* a named format counts nothing; the first view for "auto" counts into
     * M, which the next view reuses */
    KS_CHECK(ks_matrix_create(be, &A, "csr_vector", NULL, &M));
    ck_assert_int_eq(M->stats_known, 0);
    KS_CHECK(ks_matrix_create_view_of(M, "csr_vector", NULL, &V));
    ck_assert_int_eq(M->stats_known, 0);
    ks_matrix_destroy(&V);
    KS_CHECK(ks_matrix_create_view_of(M, "auto", NULL, &V));
    ck_assert_int_eq(M->stats_known, 1);
    expect_stats_eq(&M->stats, &host);
    ck_assert_str_eq(ks_matrix_format(V), "dia");
    ks_matrix_destroy(&V);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

/* The DIA fill the caller computes (spmv/auto.c's expression). */
static double fill_of(int64_t ndiag, ks_int nrows, ks_int nnz)
{
    return (double)ndiag * nrows / nnz;
}

/* ks_sparse_stats_max_ndiag: the exact largest ndiag within the fill, or
 * -1 where nnz / min(nrows, ncols) diagonals are needed already. */
START_TEST(max_ndiag_bound)
{
    const struct {
        ks_int nrows, ncols, nnz;
        double fill;
    } cases[] = {{125000, 125000, 860000, 1.3}, {103823, 103823, 2685619, 1.3},
                 {1000, 1000, 7000, 1.3},       {7, 7, 3, 1.3},
                 {100000, 100000, 100000, 1.0}, {123457, 98765, 543210, 1.7},
                 {200000, 200000, 999999, 1.0 / 3.0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const ks_int r = cases[c].nrows, n = cases[c].ncols, z = cases[c].nnz;
        const int64_t m = ks_sparse_stats_max_ndiag(r, n, z, cases[c].fill);
        const int64_t least = (z + (r < n ? r : n) - 1) / (r < n ? r : n);
        if (m < 0) { /* only when the lower bound exceeds the largest ndiag */
            int64_t most = 0;
            while (fill_of(most + 1, r, z) <= cases[c].fill)
                most++;
            ck_assert_msg(least > most, "case %zu: -1 though %lld <= %lld", c, (long long)least,
                          (long long)most);
            continue;
        }
        ck_assert_int_ge(m, least);
        ck_assert_msg(fill_of(m, r, z) <= cases[c].fill, "case %zu: %lld too many", c,
                      (long long)m);
        ck_assert_msg(m == (int64_t)r + n - 1 || fill_of(m + 1, r, z) > cases[c].fill,
                      "case %zu: %lld not the largest", c, (long long)m);
    }
    /* never counted, or nothing to count */
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(1000, 1000, 7000, 0.0), -1);
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(1000, 1000, 0, 1.3), -1);
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(0, 0, 0, 1.3), -1);
    /* an interpolation's shape (n x n/4): a diagonal holds n/4 entries at
     * most, so 520000 entries need 6 diagonals: fill >= 6 * 4e5 / 5.2e5 = 4.6 */
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(400000, 100000, 520000, 1.3), -1);
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(400000, 100000, 520000, 4.5), -1);
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(400000, 100000, 520000, 4.7), 6);
    ck_assert_int_eq(ks_sparse_stats_max_ndiag(10, 10, 5, INFINITY), 19);
}
END_TEST

/* An n x nc matrix with one or two entries a row (an interpolation's
 * shape: row i near column i nc / n). */
static void tall(ks_int n, ks_int nc, ks_csr *A)
{
    A->nrows = n;
    A->ncols = nc;
    A->rowptr = malloc(((size_t)n + 1) * sizeof *A->rowptr);
    A->colind = malloc(2 * (size_t)n * sizeof *A->colind);
    A->val = malloc(2 * (size_t)n * sizeof *A->val);
    ck_assert(A->rowptr && A->colind && A->val);
    ks_int nnz = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int c = (ks_int)((int64_t)i * nc / n);
        A->colind[nnz] = c;
        A->val[nnz++] = 1.0;
        if (i % 3 && c + 1 < nc) {
            A->colind[nnz] = c + 1;
            A->val[nnz++] = 0.5;
        }
        A->rowptr[i + 1] = nnz;
    }
    A->nnz = nnz;
    KS_CHECK(ks_csr_validate(A));
}

/* The diagonals are counted only where they could decide, and "auto"
 * chooses (with the same reason) what it chose from the full counts. */
START_TEST(stats_count_diagonals_where_they_decide)
{
    ks_csr M[6];
    gen(KS_GEN_POISSON3D_7, 50, &M[0]);
    gen(KS_GEN_POISSON3D_27, 47, &M[1]);
    gen(KS_GEN_POISSON3D_7, 20, &M[2]);
    random_rows(120000, 11, NULL, &M[3]); /* max 12 > 1.3 x mean 7.5 */
    random_rows(2100, 7, few_long, &M[4]);
    tall(400000, 100000, &M[5]);
    const int64_t want[] = {7, 27, -1, -1, -1, -1}; /* with auto's fill on cuda */
    for (int t = 0; t < 6; t++) {
        ks_sparse_stats full, never, cut;
        ks_csr_row_stats(&M[t], INFINITY, &full);
        ks_csr_row_stats(&M[t], 0.0, &never);
        ks_csr_row_stats(&M[t], 1.3, &cut);
        ck_assert_int_gt(full.ndiag, 0);
        ck_assert_int_eq(never.ndiag, -1);
        ck_assert_int_eq(cut.ndiag, want[t] < 0 && t != 2 ? -1 : full.ndiag);
        ck_assert_int_eq(never.max_row, full.max_row);
        ck_assert_uint_eq(never.sum, full.sum);
        ck_assert_uint_eq(never.sum2, full.sum2);
        /* cut is what auto counts for cuda; the choice and reason as with
         * every diagonal counted */
        ks_sparse_stats used;
        ks_csr_row_stats(&M[t], ks_spmv_format_auto_dia_fill(KS_BACKEND_CUDA, M[t].nrows), &used);
        ck_assert_int_eq(used.ndiag, cuda_has("dia") ? want[t] : -1);
        char w1[160], w2[160];
        const char *f1 = ks_spmv_format_auto_stats(&full, KS_BACKEND_CUDA, w1, sizeof w1);
        const char *f2 = ks_spmv_format_auto_stats(&used, KS_BACKEND_CUDA, w2, sizeof w2);
        ck_assert_str_eq(f1 ? f1 : "(none)", f2 ? f2 : "(none)");
        ck_assert_str_eq(w1, w2);
        ks_csr_free(&M[t]);
    }
}
END_TEST

/* On a device: the statistics equal the host's for every kind of bound
 * (none, the shape's, the longest row's, all counted). */
START_TEST(stats_cuda_equal_host)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr M[5];
    gen(KS_GEN_POISSON3D_7, 50, &M[0]);
    gen(KS_GEN_POISSON3D_27, 20, &M[1]);
    random_rows(120000, 11, NULL, &M[2]);
    random_rows(2100, 7, few_long, &M[3]);
    tall(400000, 100000, &M[4]);
    const double fills[] = {0.0, 1.0, 1.3, 2.5, INFINITY};
    for (int t = 0; t < 5; t++) {
        ks_sparse D;
        KS_CHECK(ks_sparse_from_csr(be, &M[t], 1, &D));
        for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
            ks_sparse_stats h, d;
            ks_csr_row_stats(&M[t], fills[f], &h);
            KS_CHECK(ks_sparse_row_stats(&D, fills[f], &d));
            expect_stats_eq(&d, &h);
        }
        ks_sparse_free(&D);
        ks_csr_free(&M[t]);
    }
    ks_backend_destroy(&be);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spmv_auto");
    TCase *tc = tcase_create("choice");
    tcase_add_test(tc, large_7pt_is_dia);
    tcase_add_test(tc, large_27pt_is_dia);
    tcase_add_test(tc, small_7pt_is_csr_vector);
    tcase_add_test(tc, few_long_rows_is_adaptive);
    tcase_add_test(tc, short_long_rows_stay_vector);
    tcase_add_test(tc, random_regular_is_csr_vector);
    tcase_add_test(tc, cpu_is_csr);
    tcase_add_test(tc, matrix_reason_cpu);
    tcase_add_test(tc, view_of_cpu);
    tcase_add_test(tc, max_ndiag_bound);
    tcase_add_test(tc, stats_count_diagonals_where_they_decide);
    if (ks_test_have_cuda()) {
        tcase_add_test(tc, matrix_reason_cuda);
        tcase_add_test(tc, view_of_cuda_reuses_stats);
        tcase_add_test(tc, stats_cuda_equal_host);
    } else {
        ks_test_skip(3, "no CUDA device: auto on a cuda matrix, the dia fallback, the "
                        "statistics a view reuses, the device's statistics");
    }
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
