/* ELL family of SpMV formats ("ell", "ellr", "sliced_ell", "sell"): the
 * host layouts against the CSR reference (their float64 apply repeats the
 * kernels' loops), refusals with a size estimate, exact round trips to CSR
 * (explicit zeros kept), the SELL permutation and sort windows, parameters
 * honoured and bad ones refused, bytes per apply, the shared real matrices,
 * and, with a CUDA device, the kernels against the host layouts. */
#include "ks_test.h"
#include "spmv/ell_family.h"
#include "spmv_cases.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TOL 1e-12

/* ------------------------------------------------------------ formats */
typedef struct {
    const char *name;
    ks_error (*build)(const ks_csr *, const ks_spmv_params *, void **);
    void (*apply)(const void *, double, const double *, double, double *);
    double (*bytes)(const void *);
    void (*destroy)(void *);
    ks_error (*to_csr)(const void *, ks_csr *);
    int sliced; /* accepts a lone long row by default */
} fmt;

enum { F_ELL, F_ELLR, F_SLICED, F_SELL, NFMT };
static const fmt fmts[NFMT] = {
    {"ell", ks_ell_layout_build, ks_ell_layout_apply, ks_ell_layout_bytes, ks_ell_layout_free,
     ks_ell_layout_to_csr, 0},
    {"ellr", ks_ellr_layout_build, ks_ell_layout_apply, ks_ell_layout_bytes,
     ks_ell_layout_free, ks_ell_layout_to_csr, 0},
    {"sliced_ell", ks_sliced_ell_layout_build, ks_sell_layout_apply, ks_sell_layout_bytes,
     ks_sell_layout_free, ks_sell_layout_to_csr, 1},
    {"sell", ks_sell_layout_build, ks_sell_layout_apply, ks_sell_layout_bytes,
     ks_sell_layout_free, ks_sell_layout_to_csr, 1},
};

/* ------------------------------------------------------------ test data */
#define HUGE_ROW SC_HUGE_ROW

/* Rows of equal length (every format accepts, every T is exercised). */
static void make_uniform(ks_csr *A, ks_int nrows, ks_int ncols, ks_int len, uint64_t seed)
{
    sc_rng_seed(seed);
    ks_int *l = malloc(sizeof(ks_int) * (size_t)nrows);
    ck_assert_ptr_nonnull(l);
    for (ks_int i = 0; i < nrows; i++)
        l[i] = len - (ks_int)(sc_rng_next() % 2);
    sc_build_rows(A, nrows, ncols, l, NULL);
    free(l);
}

/* Explicit zeros: every 3rd entry, rows made only of zeros, empty rows. */
static void make_zeros(ks_csr *A)
{
    sc_rng_seed(21);
    const ks_int n = 90;
    ks_int len[90];
    for (ks_int i = 0; i < n; i++)
        len[i] = i % 7 == 0 ? 0 : 1 + (ks_int)(sc_rng_next() % 6);
    sc_build_rows(A, n, 70, len, &(sc_rows){.zero_every = 3});
    for (ks_int i = 0; i < n; i += 10) /* rows of zeros only */
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            A->val[j] = 0.0;
}

enum { C_RANDOM, C_ONE, C_P2D, C_P3D, C_P3D27, C_WIDE, C_TALL, C_EMPTY, C_DENSE_ROW,
       C_DENSE_COL, C_ZEROS, C_HUGE, C_ARROW, NCASES };
static const char *const case_names[NCASES] = {
    "random with empty rows", "1x1", "poisson2d_5 24^2", "poisson3d_7 12^3",
    "poisson3d_27 6^3", "rectangular 150x900", "rectangular 900x150", "no entries",
    "single dense row 1x300", "single dense column 300x1", "explicit zeros", "one huge row",
    "dense row and column"};
/* ELL and ELLR refuse these two (a lone long row); the sliced formats not. */
#define FIRST_REFUSED C_HUGE

static void make_case(int c, ks_csr *A)
{
    memset(A, 0, sizeof *A);
    switch (c) {
    case C_RANDOM: sc_make_random(A, 700, 650, 24, 1); break;
    case C_ONE: sc_make_one(A); break;
    case C_P2D: sc_make_gen(A, KS_GEN_POISSON2D_5, 24); break;
    case C_P3D: sc_make_gen(A, KS_GEN_POISSON3D_7, 12); break;
    case C_P3D27: sc_make_gen(A, KS_GEN_POISSON3D_27, 6); break;
    case C_WIDE: sc_make_random(A, 150, 900, 40, 2); break;
    case C_TALL: sc_make_random(A, 900, 150, 8, 3); break;
    case C_EMPTY: sc_make_empty(A, 10, 7); break;
    case C_DENSE_ROW: sc_make_dense_line(A, 300, 0, 4); break;
    case C_DENSE_COL: sc_make_dense_line(A, 300, 1, 5); break;
    case C_ZEROS: make_zeros(A); break;
    case C_HUGE: sc_make_huge_row(A); break;
    case C_ARROW: sc_make_arrow(A, 400, 11); break;
    }
}

static const sc_coef coefs[] = {
    {1.0, 0.0}, {-0.5, 0.0}, {2.0, 1.0}, {1.0, -1.5}, {0.0, 2.0},
};
#define NCOEFS ((int)(sizeof coefs / sizeof coefs[0]))

static ks_spmv_params params0(void)
{
    ks_spmv_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* ------------------------------------------------------------ checkers */
static void check_roundtrip(const fmt *f, const void *L, const ks_csr *A, const char *label)
{
    ks_csr B;
    KS_CHECK(f->to_csr(L, &B));
    char what[160];
    snprintf(what, sizeof what, "%s to_csr, %s", f->name, label);
    sc_expect_same_csr(&B, A, what);
    ks_csr_free(&B);
}

/* The layout's apply against the CSR reference for every alpha/beta (y
 * NaN-poisoned when beta == 0), then the round trip. */
static void check_layout_ok(const fmt *f, const ks_spmv_params *prm, const ks_csr *A,
                            const char *label)
{
    void *L = NULL;
    ks_error e = f->build(A, prm, &L);
    ck_assert_msg(e == KS_OK, "%s layout of %s: %s: %s", f->name, label, ks_error_name(e),
                  ks_last_error());
    ck_assert_msg(f->bytes(L) > 0.0, "%s, %s: bytes per apply not positive", f->name, label);
    char what[160];
    snprintf(what, sizeof what, "%s layout, %s", f->name, label);
    sc_check_apply(f->apply, L, A, coefs, NCOEFS, TOL, what);
    check_roundtrip(f, L, A, label);
    f->destroy(L);
}

static void check_refused(const fmt *f, const ks_spmv_params *prm, const ks_csr *A,
                          const char *label)
{
    void *L = (void *)A; /* must come back NULL */
    ks_error e = f->build(A, prm, &L);
    ck_assert_msg(e == KS_ERR_UNSUPPORTED, "%s, %s: %s instead of a refusal", f->name, label,
                  ks_error_name(e));
    ck_assert_ptr_null(L);
    const char *m = ks_last_error();
    ck_assert_msg(strstr(m, f->name) && strstr(m, "MB") && strstr(m, "x CSR") &&
                      strstr(m, "max_fill"),
                  "%s refusal of %s lacks the size estimate: %s", f->name, label, m);
}

/* ----------------------------------------------------------- host tests */
START_TEST(test_cases)
{
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        for (int f = 0; f < NFMT; f++) {
            if (c >= FIRST_REFUSED && !fmts[f].sliced)
                check_refused(&fmts[f], NULL, &A, case_names[c]);
            else
                check_layout_ok(&fmts[f], NULL, &A, case_names[c]);
        }
        ks_csr_free(&A);
    }
}
END_TEST

/* The refusal names the long row and its length, and is a choice the
 * caller can override with max_fill; a tight max_fill makes the sliced
 * formats refuse too. */
START_TEST(test_refusal_details)
{
    ks_csr A;
    make_case(C_HUGE, &A);
    void *L = NULL;
    ck_assert_int_eq(ks_ell_layout_build(&A, NULL, &L), KS_ERR_UNSUPPORTED);
    char want[64];
    snprintf(want, sizeof want, "row %d has 2000 entries", HUGE_ROW);
    ck_assert_msg(strstr(ks_last_error(), want), "message: %s", ks_last_error());
    ks_spmv_params p = params0();
    p.max_fill = 1000.0;
    check_layout_ok(&fmts[F_ELL], &p, &A, "one huge row, max_fill 1000");
    check_layout_ok(&fmts[F_ELLR], &p, &A, "one huge row, max_fill 1000");
    p.max_fill = 2.0;
    snprintf(want, sizeof want, "row of 2000 entries (original row %d)", HUGE_ROW);
    for (int f = F_SLICED; f <= F_SELL; f++) {
        check_refused(&fmts[f], &p, &A, "one huge row, max_fill 2");
        ck_assert_msg(strstr(ks_last_error(), want), "message: %s", ks_last_error());
    }
    ks_csr_free(&A);

    /* Just at the threshold: uniform rows of 4 or 5 fill at most 1.25. */
    make_uniform(&A, 200, 200, 5, 9);
    p.max_fill = 1.25;
    check_layout_ok(&fmts[F_ELL], &p, &A, "uniform rows, max_fill 1.25");
    p.max_fill = 1.01;
    check_refused(&fmts[F_ELL], &p, &A, "uniform rows, max_fill 1.01");
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_roundtrip_zeros)
{
    ks_csr A;
    make_case(C_ZEROS, &A);
    int zeros = 0;
    for (ks_int j = 0; j < A.nnz; j++)
        zeros += A.val[j] == 0.0;
    ck_assert_int_ge(zeros, 20);
    const int sizes[] = {1, 4, 32, 128};
    for (int f = 0; f < NFMT; f++)
        for (int k = 0; k < 4; k++) {
            ks_spmv_params p = params0();
            p.threads_per_row = f < F_SLICED && sizes[k] <= 32 ? sizes[k] : 0;
            p.slice_height = sizes[k];
            p.sort_window = f == F_SELL && sizes[k] > 1 ? 2 * sizes[k] : 0;
            p.max_fill = 100.0;
            void *L = NULL;
            KS_CHECK(fmts[f].build(&A, &p, &L));
            check_roundtrip(&fmts[f], L, &A, "explicit zeros");
            fmts[f].destroy(L);
        }
    ks_csr_free(&A);
}
END_TEST

/* perm is a permutation; each window of sigma rows is sorted by length,
 * longest first, ties in the original order, and holds exactly its own
 * rows; slices are padded to their longest row and column-major. */
static void check_sell_structure(const ks_sell_layout *L, const ks_csr *A, int C, int sigma)
{
    ck_assert_int_eq(L->C, C);
    ck_assert_int_eq(L->sigma, sigma);
    ck_assert_int_eq(L->nslices, (A->nrows + C - 1) / C);
    char *seen = calloc((size_t)A->nrows + 1, 1);
    ck_assert_ptr_nonnull(seen);
    int identity = 1;
    for (ks_int p = 0; p < A->nrows; p++) {
        ks_int r = L->perm[p];
        ck_assert_msg(r >= 0 && r < A->nrows && !seen[r], "perm[%d] = %d repeats or is out "
                      "of range", (int)p, (int)r);
        seen[r] = 1;
        identity &= r == p;
        ck_assert_int_eq(r / sigma, p / sigma); /* inside its window */
        ck_assert_int_eq(L->rowlen[p], A->rowptr[r + 1] - A->rowptr[r]);
        if (p % sigma != 0) {
            ks_int q = L->perm[p - 1];
            ks_int lq = L->rowlen[p - 1], lp = L->rowlen[p];
            ck_assert_msg(lq > lp || (lq == lp && q < r),
                          "window %d not sorted at position %d", (int)(p / sigma), (int)p);
        }
    }
    ck_assert_int_eq(L->permuted, !identity);
    free(seen);
    for (ks_int s = 0; s < L->nslices; s++) {
        ks_int w = 0;
        for (ks_int p = s * C; p < A->nrows && p < (s + 1) * C; p++)
            w = L->rowlen[p] > w ? L->rowlen[p] : w;
        ck_assert_int_eq(L->slice_width[s], w);
        ck_assert_int_eq(L->slice_ptr[s + 1] - L->slice_ptr[s], (ks_int)C * w);
        for (ks_int p = s * C; p < A->nrows && p < (s + 1) * C; p++) {
            ks_int r = L->perm[p], j0 = A->rowptr[r];
            for (ks_int k = 0; k < w; k++) {
                ks_int off = L->slice_ptr[s] + k * C + p % C;
                if (k < L->rowlen[p]) {
                    ck_assert_int_eq(L->colind[off], A->colind[j0 + k]);
                    ck_assert(L->val[off] == A->val[j0 + k]);
                } else {
                    ck_assert(L->val[off] == 0.0);
                    ck_assert(L->colind[off] >= 0 && L->colind[off] < A->ncols);
                }
            }
        }
    }
}

START_TEST(test_sell_permutation)
{
    ks_csr A;
    make_case(C_RANDOM, &A);
    const int Cs[] = {1, 4, 32, 64};
    for (int c = 0; c < 4; c++) {
        const int C = Cs[c];
        const int sigmas[] = {1, C, 4 * C, 1024 * C};
        for (int s = 0; s < 4; s++) {
            ks_spmv_params p = params0();
            p.slice_height = C;
            p.sort_window = sigmas[s];
            ks_sell_layout *L = NULL;
            KS_CHECK(ks_sell_layout_build(&A, &p, (void **)&L));
            check_sell_structure(L, &A, C, sigmas[s]);
            if (sigmas[s] > 1)
                ck_assert(L->permuted); /* random rows: some window reorders */
            ks_sell_layout_free(L);
            check_layout_ok(&fmts[F_SELL], &p, &A, "random, sell params");
        }
        /* sliced_ell never sorts, whatever sort_window says. */
        ks_spmv_params p = params0();
        p.slice_height = C;
        p.sort_window = 4 * C;
        ks_sell_layout *L = NULL;
        KS_CHECK(ks_sliced_ell_layout_build(&A, &p, (void **)&L));
        check_sell_structure(L, &A, C, 1);
        ck_assert_int_eq(L->permuted, 0);
        ks_sell_layout_free(L);
        check_layout_ok(&fmts[F_SLICED], &p, &A, "random, sliced_ell params");
    }
    /* Defaults: C = 32, sigma = 8 C. */
    ks_sell_layout *L = NULL;
    KS_CHECK(ks_sell_layout_build(&A, NULL, (void **)&L));
    check_sell_structure(L, &A, 32, 256);
    ks_sell_layout_free(L);
    ks_spmv_params p = params0();
    p.slice_height = 8;
    KS_CHECK(ks_sell_layout_build(&A, &p, (void **)&L));
    check_sell_structure(L, &A, 8, 64);
    ks_sell_layout_free(L);
    ks_csr_free(&A);
}
END_TEST

/* Sorting in windows shrinks the padding of uneven rows. */
START_TEST(test_sell_sorting_pays)
{
    ks_csr A;
    make_case(C_RANDOM, &A);
    ks_sell_layout *S = NULL, *U = NULL;
    KS_CHECK(ks_sell_layout_build(&A, NULL, (void **)&S));
    KS_CHECK(ks_sliced_ell_layout_build(&A, NULL, (void **)&U));
    ck_assert_int_lt(S->slice_ptr[S->nslices], U->slice_ptr[U->nslices]);
    ck_assert(ks_sell_layout_bytes(S) < ks_sell_layout_bytes(U));
    ks_sell_layout_free(S);
    ks_sell_layout_free(U);
    ks_csr_free(&A);
}
END_TEST

/* ELL: T honoured (interleaved slots as documented), width padded to a
 * multiple of T, automatic T from the width. */
START_TEST(test_ell_threads_per_row)
{
    const ks_int widths[] = {3, 20, 40, 100};
    for (int w = 0; w < 4; w++) {
        ks_csr A;
        make_uniform(&A, 133, 250, widths[w], 30 + (uint64_t)w);
        for (int t = 0; t <= 32; t = t ? 2 * t : 1) {
            for (int f = F_ELL; f <= F_ELLR; f++) {
                ks_spmv_params p = params0();
                p.threads_per_row = t;
                p.max_fill = 100.0;
                ks_ell_layout *L = NULL;
                KS_CHECK(fmts[f].build(&A, &p, (void **)&L));
                const int T = t ? t : ks_ell_auto_threads_per_row(widths[w]);
                ck_assert_int_eq(L->threads_per_row, T);
                ck_assert_int_eq(L->width, widths[w]);
                ck_assert_int_eq(L->wpad % T, 0);
                ck_assert_int_lt(L->wpad - L->width, T);
                ck_assert_int_eq(L->ld % 32, 0);
                ck_assert_int_ge(L->ld, A.nrows);
                ck_assert_int_eq(L->stop_at_row_end, f == F_ELLR);
                for (ks_int i = 0; i < A.nrows; i += 7)
                    for (ks_int k = 0; k < L->rowlen[i]; k++) {
                        size_t s = ((size_t)(k / T) * L->ld + i) * T + k % T;
                        ck_assert_int_eq(L->colind[s], A.colind[A.rowptr[i] + k]);
                    }
                ks_ell_layout_free(L);
                check_layout_ok(&fmts[f], &p, &A, "uniform rows, threads_per_row");
            }
        }
        ks_csr_free(&A);
    }
    ck_assert_int_eq(ks_ell_auto_threads_per_row(0), 1);
    ck_assert_int_eq(ks_ell_auto_threads_per_row(32), 1);
    ck_assert_int_eq(ks_ell_auto_threads_per_row(33), 2);
    ck_assert_int_eq(ks_ell_auto_threads_per_row(64), 2);
    ck_assert_int_eq(ks_ell_auto_threads_per_row(100), 4);
    ck_assert_int_eq(ks_ell_auto_threads_per_row(100000), 32);
}
END_TEST

/* Every slice height 1 .. 1024 gives a correct layout of that height. */
START_TEST(test_slice_heights)
{
    ks_csr A;
    make_case(C_TALL, &A);
    for (int C = 1; C <= 1024; C *= 2)
        for (int f = F_SLICED; f <= F_SELL; f++) {
            ks_spmv_params p = params0();
            p.slice_height = C;
            p.max_fill = 1e6;
            ks_sell_layout *L = NULL;
            KS_CHECK(fmts[f].build(&A, &p, (void **)&L));
            ck_assert_int_eq(L->C, C);
            ck_assert_int_eq(L->sigma, f == F_SELL ? 8 * C : 1);
            ck_assert_int_eq(L->nslices, (A.nrows + C - 1) / C);
            ks_sell_layout_free(L);
            check_layout_ok(&fmts[f], &p, &A, "tall, slice heights");
        }
    ks_csr_free(&A);
}
END_TEST

static void expect_arg(const fmt *f, const ks_spmv_params *p, const ks_csr *A, const char *word,
                       double value)
{
    void *L = (void *)A;
    ks_error e = f->build(A, p, &L);
    ck_assert_msg(e == KS_ERR_ARG, "%s with %s = %g gave %s", f->name, word, value,
                  ks_error_name(e));
    ck_assert_ptr_null(L);
    ck_assert_msg(strstr(ks_last_error(), word), "%s: message lacks '%s': %s", f->name, word,
                  ks_last_error());
}

START_TEST(test_bad_params)
{
    ks_csr A;
    make_case(C_P2D, &A);
    const int bad_t[] = {-1, 3, 5, 12, 33, 64};
    for (int f = F_ELL; f <= F_ELLR; f++)
        for (int k = 0; k < 6; k++) {
            ks_spmv_params p = params0();
            p.threads_per_row = bad_t[k];
            expect_arg(&fmts[f], &p, &A, "threads_per_row", bad_t[k]);
        }
    const int bad_c[] = {-1, 3, 6, 48, 100, 2048, 4096};
    for (int f = F_SLICED; f <= F_SELL; f++)
        for (int k = 0; k < 7; k++) {
            ks_spmv_params p = params0();
            p.slice_height = bad_c[k];
            expect_arg(&fmts[f], &p, &A, "slice_height", bad_c[k]);
        }
    const int bad_sigma[] = {-1, 3, 48, 100};
    for (int k = 0; k < 4; k++) {
        ks_spmv_params p = params0();
        p.sort_window = bad_sigma[k];
        expect_arg(&fmts[F_SELL], &p, &A, "sort_window", bad_sigma[k]);
    }
    for (int f = 0; f < NFMT; f++) {
        ks_spmv_params p = params0();
        p.max_fill = -1.0;
        expect_arg(&fmts[f], &p, &A, "max_fill", -1.0);
        p.max_fill = NAN;
        expect_arg(&fmts[f], &p, &A, "max_fill", NAN);
    }
    /* Parameters that do not apply are ignored. */
    ks_spmv_params p = params0();
    p.slice_height = 3;
    p.sort_window = 5;
    check_layout_ok(&fmts[F_ELL], &p, &A, "ell ignores slice_height");
    p = params0();
    p.threads_per_row = 3;
    check_layout_ok(&fmts[F_SELL], &p, &A, "sell ignores threads_per_row");
    /* NULL arguments. */
    void *L = NULL;
    for (int f = 0; f < NFMT; f++) {
        ck_assert_int_eq(fmts[f].build(NULL, NULL, &L), KS_ERR_ARG);
        ck_assert_int_eq(fmts[f].build(&A, NULL, NULL), KS_ERR_ARG);
    }
    /* Malformed CSR: rowptr not ending at nnz. */
    A.rowptr[A.nrows]--;
    for (int f = 0; f < NFMT; f++) {
        ck_assert_int_eq(fmts[f].build(&A, NULL, &L), KS_ERR_ARG);
        ck_assert_ptr_null(L);
    }
    A.rowptr[A.nrows]++;
    ks_csr_free(&A);
}
END_TEST

/* Bytes per apply as documented in ell.c and sell.c. */
START_TEST(test_bytes)
{
    ks_csr A;
    make_case(C_RANDOM, &A);
    ks_int width = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        width = A.rowptr[i + 1] - A.rowptr[i] > width ? A.rowptr[i + 1] - A.rowptr[i] : width;
    ks_spmv_params p = params0();
    p.max_fill = 100.0;
    p.threads_per_row = 4;
    void *L = NULL;
    KS_CHECK(ks_ell_layout_build(&A, &p, &L));
    const double wpad = (double)((width + 3) / 4 * 4);
    ck_assert_double_eq_tol(ks_ell_layout_bytes(L), 20.0 * A.nrows * wpad + 8.0 * A.nrows, 0.5);
    ks_ell_layout_free(L);
    KS_CHECK(ks_ellr_layout_build(&A, &p, &L));
    ck_assert_double_eq_tol(ks_ell_layout_bytes(L), 20.0 * A.nnz + 12.0 * A.nrows, 0.5);
    ks_ell_layout_free(L);

    for (int f = F_SLICED; f <= F_SELL; f++) {
        ks_sell_layout *S = NULL;
        KS_CHECK(fmts[f].build(&A, NULL, (void **)&S));
        double slots = 0.0;
        for (ks_int p0 = 0; p0 < A.nrows; p0++)
            slots += S->slice_width[p0 / S->C];
        double want = 20.0 * slots + 4.0 * (S->nslices + 1) + 8.0 * A.nrows +
                      (f == F_SELL ? 4.0 * A.nrows : 0.0);
        ck_assert_double_eq_tol(ks_sell_layout_bytes(S), want, 0.5);
        ck_assert(ks_sell_layout_bytes(S) >= 20.0 * A.nnz + 8.0 * A.nrows);
        ks_sell_layout_free(S);
    }
    ks_csr_free(&A);
}
END_TEST

/* Layouts are built in parallel; they must not depend on the thread count. */
START_TEST(test_thread_count_independent)
{
#ifdef _OPENMP
    ks_csr A;
    make_case(C_RANDOM, &A);
    const int saved = omp_get_max_threads();
    ks_spmv_params p = params0();
    p.threads_per_row = 4;
    p.slice_height = 8;
    ks_ell_layout *E[2];
    ks_sell_layout *S[2];
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t == 0 ? 1 : 3);
        KS_CHECK(ks_ell_layout_build(&A, &p, (void **)&E[t]));
        KS_CHECK(ks_sell_layout_build(&A, &p, (void **)&S[t]));
    }
    omp_set_num_threads(saved);
    const size_t ne = (size_t)E[0]->ld * E[0]->wpad, ns = (size_t)S[0]->slice_ptr[S[0]->nslices];
    ck_assert(memcmp(E[0]->colind, E[1]->colind, ne * sizeof(ks_int)) == 0);
    ck_assert(memcmp(E[0]->val, E[1]->val, ne * sizeof(double)) == 0);
    ck_assert(memcmp(S[0]->perm, S[1]->perm, (size_t)A.nrows * sizeof(ks_int)) == 0);
    ck_assert(memcmp(S[0]->colind, S[1]->colind, ns * sizeof(ks_int)) == 0);
    ck_assert(memcmp(S[0]->val, S[1]->val, ns * sizeof(double)) == 0);
    for (int t = 0; t < 2; t++) {
        ks_ell_layout_free(E[t]);
        ks_sell_layout_free(S[t]);
    }
    ks_csr_free(&A);
#endif
}
END_TEST

/* ------------------------------------------------------ shared matrices */
static const char *const shared_names[] = {"memplus.mtx.gz", "cage11.mtx.gz",
                                           "raefsky2.mtx.gz"};
#define NSHARED 3

/* memplus (rows of 2 to 574, stored zeros): ELL and ELLR refuse, the sliced
 * formats hold it. cage11 and raefsky2 suit every format. */
START_TEST(test_shared_host)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    const int uneven = strcmp(shared_names[_i], "memplus.mtx.gz") == 0;
    for (int f = 0; f < NFMT; f++) {
        if (uneven && !fmts[f].sliced)
            check_refused(&fmts[f], NULL, &A, shared_names[_i]);
        else
            check_layout_ok(&fmts[f], NULL, &A, shared_names[_i]);
    }
    ks_spmv_params p = params0();
    p.slice_height = 8;
    p.sort_window = 1024;
    check_layout_ok(&fmts[F_SELL], &p, &A, shared_names[_i]);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------------- cuda */
#ifdef KS_HAVE_CUDA
static const ks_spmv_format_ops *ops_of(int f)
{
    const ks_spmv_format_ops *o = ks_spmv_format_find(fmts[f].name, KS_BACKEND_CUDA);
    ck_assert_ptr_nonnull(o);
    return o;
}

/* Device result against the host layout (same loops) and the CSR
 * reference, y NaN-poisoned for beta == 0, twice for repeatability. */
static void check_device(ks_backend *be, int f, const ks_spmv_params *prm, const ks_csr *A,
                         const char *label)
{
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, fmts[f].name, prm, &M);
    ck_assert_msg(e == KS_OK, "%s on cuda, %s: %s: %s", fmts[f].name, label, ks_error_name(e),
                  ks_last_error());
    void *L = NULL;
    KS_CHECK(fmts[f].build(A, prm, &L));
    ck_assert_double_eq_tol(ks_matrix_bytes_per_apply(M), fmts[f].bytes(L), 0.5);
    ks_vec *vx, *vy;
    KS_CHECK(ks_vec_create(be, A->ncols, &vx));
    KS_CHECK(ks_vec_create(be, A->nrows, &vy));
    double *x = sc_random_vec(A->ncols, 201), *y0 = sc_random_vec(A->nrows, 202);
    double *y = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    double *h = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    double *y2 = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert(y && h && y2);
    KS_CHECK(ks_vec_set_host(vx, x));
    for (int k = 0; k < NCOEFS; k++) {
        const double a = coefs[k].alpha, b = coefs[k].beta;
        if (b == 0.0)
            KS_CHECK(ks_vec_fill(vy, NAN));
        else
            KS_CHECK(ks_vec_set_host(vy, y0));
        KS_CHECK(ks_matrix_apply(M, a, vx, b, vy));
        for (ks_int i = 0; i < A->nrows; i++)
            y[i] = NAN;
        KS_CHECK(ks_vec_get_host(vy, y));
        for (ks_int i = 0; i < A->nrows; i++)
            h[i] = b == 0.0 ? NAN : y0[i];
        fmts[f].apply(L, a, x, b, h);
        double err = sc_spmv_error(A, a, x, b, y0, y);
        ck_assert_msg(err <= TOL, "%s on cuda, %s, alpha %g beta %g: error %.3e", fmts[f].name,
                      label, a, b, err);
        /* Same loops and order, only FMA contraction differs: tighter. */
        err = sc_scaled_diff(A, a, x, b, y0, y, h);
        ck_assert_msg(err <= 1e-13, "%s on cuda, %s, alpha %g beta %g: differs from the host "
                      "layout by %.3e", fmts[f].name, label, a, b, err);
    }
    KS_CHECK(ks_vec_fill(vy, NAN));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y));
    KS_CHECK(ks_vec_fill(vy, NAN));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y2));
    ck_assert_msg(memcmp(y, y2, sizeof(double) * (size_t)A->nrows) == 0,
                  "%s: repeated apply differs", fmts[f].name);
    fmts[f].destroy(L);
    free(x);
    free(y0);
    free(y);
    free(h);
    free(y2);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
}

START_TEST(test_cuda_registry)
{
    const ks_spmv_format_ops *o[NFMT];
    for (int f = 0; f < NFMT; f++) {
        o[f] = ops_of(f);
        ck_assert_int_eq(o[f]->backend, KS_BACKEND_CUDA);
        ck_assert(o[f]->layout_build == fmts[f].build && o[f]->layout_apply == fmts[f].apply &&
                  o[f]->layout_bytes == fmts[f].bytes && o[f]->layout_free == fmts[f].destroy &&
                  o[f]->layout_to_csr == fmts[f].to_csr);
        ck_assert(o[f]->setup && o[f]->apply && o[f]->destroy && o[f]->description);
        ck_assert_ptr_null(o[f]->gs_sweep);
    }
}
END_TEST

START_TEST(test_cuda_cases)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        for (int f = 0; f < NFMT; f++) {
            if (c >= FIRST_REFUSED && !fmts[f].sliced) {
                ks_matrix *M = NULL;
                ck_assert_int_eq(ks_matrix_create(be, &A, fmts[f].name, NULL, &M),
                                 KS_ERR_UNSUPPORTED);
                ck_assert_ptr_null(M);
                ck_assert_ptr_nonnull(strstr(ks_last_error(), "MB"));
            } else {
                check_device(be, f, NULL, &A, case_names[c]);
            }
        }
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(test_cuda_params)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr A, H;
    make_uniform(&A, 1100, 900, 70, 41);
    make_case(C_HUGE, &H);
    for (int t = 1; t <= 32; t *= 2)
        for (int f = F_ELL; f <= F_ELLR; f++) {
            ks_spmv_params p = params0();
            p.threads_per_row = t;
            check_device(be, f, &p, &A, "uniform rows of 70, threads_per_row");
            p.max_fill = 1000.0;
            check_device(be, f, &p, &H, "one huge row, max_fill 1000");
        }
    ks_csr_free(&A);
    make_case(C_RANDOM, &A);
    for (int C = 1; C <= 1024; C *= 4)
        for (int f = F_SLICED; f <= F_SELL; f++) {
            ks_spmv_params p = params0();
            p.slice_height = C;
            p.max_fill = 1e6;
            check_device(be, f, &p, &A, "random, slice heights");
            check_device(be, f, &p, &H, "one huge row, slice heights");
            p.sort_window = f == F_SELL ? 1 : 0;
            check_device(be, f, &p, &A, "random, sigma 1");
        }
    ks_csr_free(&A);
    ks_csr_free(&H);
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(test_cuda_shared)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    const int uneven = strcmp(shared_names[_i], "memplus.mtx.gz") == 0;
    for (int f = 0; f < NFMT; f++)
        if (!(uneven && !fmts[f].sliced))
            check_device(be, f, NULL, &A, shared_names[_i]);
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST
#endif

/* The formats need the cuda backend: the cpu backend refuses them by name. */
START_TEST(test_cpu_backend_refuses)
{
    ks_csr A;
    make_case(C_P2D, &A);
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    for (int f = 0; f < NFMT; f++) {
        ks_matrix *M = NULL;
        ck_assert_int_eq(ks_matrix_create(be, &A, fmts[f].name, NULL, &M), KS_ERR_UNSUPPORTED);
        ck_assert_ptr_null(M);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "cuda"));
    }
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spmv_ell_family");
    const int have_cuda = ks_test_have_cuda();

    TCase *tc = tcase_create("host");
    tcase_add_test(tc, test_cases);
    tcase_add_test(tc, test_refusal_details);
    tcase_add_test(tc, test_roundtrip_zeros);
    tcase_add_test(tc, test_sell_permutation);
    tcase_add_test(tc, test_sell_sorting_pays);
    tcase_add_test(tc, test_ell_threads_per_row);
    tcase_add_test(tc, test_slice_heights);
    tcase_add_test(tc, test_bad_params);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_thread_count_independent);
    tcase_add_test(tc, test_cpu_backend_refuses);
    suite_add_tcase(s, tc);

    tc = tcase_create("shared");
    const TTest *cuda_shared = NULL;
#ifdef KS_HAVE_CUDA
    if (have_cuda)
        cuda_shared = test_cuda_shared;
#endif
    int missing = sc_add_shared_tests(tc, shared_names, NSHARED, test_shared_host, cuda_shared,
                                      "ELL-family matrices");
    suite_add_tcase(s, tc);

    tc = tcase_create("cuda");
#ifdef KS_HAVE_CUDA
    if (have_cuda) {
        tcase_add_test(tc, test_cuda_registry);
        tcase_add_test(tc, test_cuda_cases);
        tcase_add_test(tc, test_cuda_params);
    } else {
        ks_test_skip(3 + NSHARED - missing, "no CUDA device: ELL-family kernels");
    }
#else
    (void)have_cuda;
    ks_test_skip(3 + NSHARED - missing, "CUDA not compiled in: ELL-family kernels");
#endif
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
