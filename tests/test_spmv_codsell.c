/* CoD-SELL ("codsell"): the host layout against the CSR reference on random
 * and structured matrices (its float64 apply repeats the kernel's loops),
 * exact round trips to CSR (explicit zeros kept), dictionaries really
 * shared (stencil interiors: dictionary = stencil, no remainder), the
 * greedy pairing, parameters honoured and bad ones refused, refusal with a
 * size estimate, bytes, and with a CUDA device the kernel against the host
 * layout. Run with -v to print the memory saved against CSR for the shared
 * matrices and 3D stencils (host only). */
#include "ks_test.h"
#include "spmv/codsell.h"
#include "spmv/ell_family.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12

static double srand1(void) { return 2.0 * (double)(ks_test_rng_next() >> 11) / 9007199254740992.0 - 1.0; }

static double *random_vec(ks_int n, uint64_t seed)
{
    ks_test_rng_seed(seed);
    double *v = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert_ptr_nonnull(v);
    for (ks_int i = 0; i < n; i++)
        v[i] = srand1();
    return v;
}

/* CSR from per-row sorted distinct column lists given by a callback. */
typedef ks_int (*row_fn)(ks_int i, ks_int ncols, ks_int *cols, void *ctx);

static void build(ks_csr *A, ks_int nrows, ks_int ncols, ks_int maxlen, row_fn f, void *ctx,
                  int zero_every)
{
    ks_int *cols = malloc(sizeof(ks_int) * ((size_t)maxlen + 1));
    ks_int *rowptr = malloc(sizeof(ks_int) * ((size_t)nrows + 1));
    ck_assert(cols && rowptr);
    rowptr[0] = 0;
    for (ks_int i = 0; i < nrows; i++)
        rowptr[i + 1] = rowptr[i] + f(i, ncols, cols, ctx);
    KS_CHECK(ks_csr_alloc(A, nrows, ncols, rowptr[nrows]));
    memcpy(A->rowptr, rowptr, sizeof(ks_int) * ((size_t)nrows + 1));
    int64_t k = 0;
    for (ks_int i = 0; i < nrows; i++) {
        ks_int len = f(i, ncols, cols, ctx);
        for (ks_int j = 0; j < len; j++, k++) {
            A->colind[A->rowptr[i] + j] = cols[j];
            A->val[A->rowptr[i] + j] = zero_every && k % zero_every == 0 ? 0.0 : srand1();
        }
    }
    free(cols);
    free(rowptr);
    KS_CHECK(ks_csr_validate(A));
}

/* Random rows: deterministic per row (seeded by the row), some empty. */
static ks_int row_random(ks_int i, ks_int ncols, ks_int *cols, void *ctx)
{
    const ks_int *maxl = ctx;
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + 77;
    h ^= h >> 29;
    ks_int len = (ks_int)(h % (uint64_t)(*maxl + 1));
    if (i % 7 == 3)
        len = 0;
    if (len > ncols)
        len = ncols;
    ks_int n = 0;
    /* Strided pick keeps the columns sorted and distinct. */
    ks_int start = (ks_int)((h >> 8) % (uint64_t)ncols);
    for (ks_int c = start; c < ncols && n < len; c += 1 + (ks_int)((h >> (n % 40)) % 3))
        cols[n++] = c;
    return n;
}

static ks_int row_huge(ks_int i, ks_int ncols, ks_int *cols, void *ctx)
{
    (void)ctx;
    if (i == 5) {
        for (ks_int c = 0; c < ncols; c++)
            cols[c] = c;
        return ncols;
    }
    ks_int n = 0;
    for (ks_int c = i - 1; c <= i + 1; c++)
        if (c >= 0 && c < ncols)
            cols[n++] = c;
    return n;
}

/* Dense first row and dense first column plus the diagonal. */
static ks_int row_arrow(ks_int i, ks_int ncols, ks_int *cols, void *ctx)
{
    (void)ctx;
    if (i == 0) {
        for (ks_int c = 0; c < ncols; c++)
            cols[c] = c;
        return ncols;
    }
    ks_int n = 0;
    cols[n++] = 0;
    if (i < ncols && i > 0)
        cols[n++] = i;
    return n;
}

static double max_err(const ks_csr *A, double a, const double *x, double b, const double *y0,
                      const double *y)
{
    double *r = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert_ptr_nonnull(r);
    memcpy(r, y0, sizeof(double) * (size_t)A->nrows);
    ks_csr_spmv_ref(A, a, x, b, r);
    for (ks_int i = 0; i < A->nrows; i++)
        ck_assert_msg(isfinite(y[i]), "row %d not finite (%g)", (int)i, y[i]);
    double e = ks_test_max_relerr(y, r, A->nrows);
    free(r);
    return e;
}

static const double coefs[][2] = {{1.0, 0.0}, {-0.5, 0.0}, {2.0, 0.5}, {1.0, -1.0}};
#define NCOEF 4

/* Host layout vs CSR, round trip, bytes. */
static void check_layout(const ks_csr *A, const ks_spmv_params *prm, const char *label)
{
    void *vL = NULL;
    ks_error e = ks_codsell_layout_build(A, prm, &vL);
    ck_assert_msg(e == KS_OK, "%s: %s: %s", label, ks_error_name(e), ks_last_error());
    const ks_codsell_layout *L = vL;
    double *x = random_vec(A->ncols, 11), *y0 = random_vec(A->nrows, 12);
    double *y = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert_ptr_nonnull(y);
    for (int k = 0; k < NCOEF; k++) {
        const double a = coefs[k][0], b = coefs[k][1];
        for (ks_int i = 0; i < A->nrows; i++)
            y[i] = b == 0.0 ? NAN : y0[i];
        ks_codsell_layout_apply(L, a, x, b, y);
        double err = max_err(A, a, x, b, y0, y);
        ck_assert_msg(err <= TOL, "%s: alpha %g beta %g: error %.3e", label, a, b, err);
    }
    /* Structure: slices of 1..C rows covering all positions, a permutation. */
    ck_assert_int_eq(L->slice_row[0], 0);
    ck_assert_int_eq(L->slice_row[L->nslices], A->nrows);
    for (ks_int s = 0; s < L->nslices; s++) {
        const ks_int R = L->slice_row[s + 1] - L->slice_row[s];
        ck_assert_msg(R >= 1 && R <= L->C, "%s: slice %d has %d rows", label, (int)s, (int)R);
        ck_assert_int_eq((L->rem_ptr[s + 1] - L->rem_ptr[s]) % R, 0);
        ck_assert_int_eq(L->dval_ptr[s + 1] - L->dval_ptr[s],
                         R * (L->dict_ptr[s + 1] - L->dict_ptr[s]));
    }
    char *seen = calloc((size_t)A->nrows + 1, 1);
    ck_assert_ptr_nonnull(seen);
    for (ks_int p = 0; p < A->nrows; p++) {
        ck_assert(L->perm[p] >= 0 && L->perm[p] < A->nrows && !seen[L->perm[p]]);
        seen[L->perm[p]] = 1;
    }
    free(seen);
    /* Round trip exact. */
    ks_csr B;
    KS_CHECK(ks_codsell_layout_to_csr(L, &B));
    ck_assert_int_eq(B.nrows, A->nrows);
    ck_assert_int_eq(B.ncols, A->ncols);
    ck_assert_int_eq(B.nnz, A->nnz);
    ck_assert_msg(memcmp(B.rowptr, A->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1)) == 0,
                  "%s: rowptr differs", label);
    if (A->nnz > 0) {
        ck_assert_msg(memcmp(B.colind, A->colind, sizeof(ks_int) * (size_t)A->nnz) == 0,
                      "%s: colind differs", label);
        ck_assert_msg(memcmp(B.val, A->val, sizeof(double) * (size_t)A->nnz) == 0,
                      "%s: values differ", label);
    }
    ks_csr_free(&B);
    /* Bytes: storage + x per stored slot + y. */
    const double slots = (double)L->dval_ptr[L->nslices] + (double)L->rem_ptr[L->nslices];
    ck_assert(slots >= A->nnz);
    ck_assert_double_eq_tol(ks_codsell_layout_bytes(L),
                            ks_codsell_storage_bytes(L) + 8.0 * slots + 8.0 * A->nrows, 1e-6);
    ck_assert_double_eq_tol(ks_codsell_storage_bytes(L) - ks_codsell_index_bytes(L),
                            8.0 * slots, 1e-6);
    free(x);
    free(y0);
    free(y);
    ks_codsell_layout_free(vL);
}

static void gen(ks_gen_kind kind, ks_int nx, ks_int ny, ks_int nz, ks_csr *A)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = kind;
    g.nx = nx;
    g.ny = ny;
    g.nz = nz;
    KS_CHECK(ks_generate(&g, A));
}

enum { C_RANDOM, C_ZEROS, C_HUGE, C_ONE, C_ARROW, C_P2D5, C_P2D9, C_P3D7, C_P3D27, C_WIDE,
       C_TALL, C_EMPTY, NCASES };
static const char *const case_names[NCASES] = {
    "random with empty rows", "random, explicit zeros", "one huge row", "1x1",
    "dense row and column", "2D 5-point", "2D 9-point", "3D 7-point", "3D 27-point",
    "rectangular wide", "rectangular tall", "no entries"};

static void make_case(int c, ks_csr *A)
{
    ks_int maxl = 12;
    ks_test_rng_seed(1000 + (uint64_t)c);
    switch (c) {
    case C_RANDOM: build(A, 700, 500, maxl, row_random, &maxl, 0); break;
    case C_ZEROS: build(A, 300, 300, maxl, row_random, &maxl, 3); break;
    case C_HUGE: build(A, 200, 1500, 1500, row_huge, NULL, 0); break;
    case C_ONE: {
        ks_int one = 1;
        KS_CHECK(ks_csr_alloc(A, 1, 1, 1));
        A->rowptr[0] = 0;
        A->rowptr[1] = one;
        A->colind[0] = 0;
        A->val[0] = 3.5;
        break;
    }
    case C_ARROW: build(A, 400, 400, 400, row_arrow, NULL, 0); break;
    case C_P2D5: gen(KS_GEN_POISSON2D_5, 23, 17, 1, A); break;
    case C_P2D9: gen(KS_GEN_POISSON2D_9, 20, 21, 1, A); break;
    case C_P3D7: gen(KS_GEN_POISSON3D_7, 12, 11, 10, A); break;
    case C_P3D27: gen(KS_GEN_POISSON3D_27, 9, 10, 11, A); break;
    case C_WIDE: maxl = 30; build(A, 150, 2000, maxl, row_random, &maxl, 0); break;
    case C_TALL: build(A, 900, 40, maxl, row_random, &maxl, 0); break;
    case C_EMPTY:
        KS_CHECK(ks_csr_alloc(A, 50, 20, 0));
        memset(A->rowptr, 0, sizeof(ks_int) * 51);
        break;
    }
}

START_TEST(test_cases)
{
    const int c = _i;
    ks_csr A;
    make_case(c, &A);
    static const int shapes[][2] = {{0, 0}, {1, 1}, {4, 16}, {4, 1}, {64, 128}, {2, 2}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        ks_spmv_params prm = {0};
        prm.slice_height = shapes[k][0];
        prm.sort_window = shapes[k][1];
        char label[128];
        snprintf(label, sizeof label, "%s, C %d sigma %d", case_names[c], shapes[k][0],
                 shapes[k][1]);
        check_layout(&A, &prm, label);
    }
    check_layout(&A, NULL, case_names[c]);
    ks_csr_free(&A);
}
END_TEST

/* Slices made only of full-length stencil rows share the whole pattern:
 * dictionary = stencil, no remainder; index bytes far below CSR's. */
static void check_stencil(ks_gen_kind kind, ks_int m, ks_int width)
{
    ks_csr A;
    gen(kind, m, m, m, &A);
    void *vL = NULL;
    KS_CHECK(ks_codsell_layout_build(&A, NULL, &vL));
    const ks_codsell_layout *L = vL;
    ks_int full = 0, full_rows = 0, interior = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        interior += A.rowptr[i + 1] - A.rowptr[i] == width;
    for (ks_int s = 0; s < L->nslices; s++) {
        int all = 1;
        for (ks_int p = L->slice_row[s]; p < L->slice_row[s + 1]; p++)
            all &= L->rowlen[p] == width;
        if (!all)
            continue;
        full++;
        full_rows += L->slice_row[s + 1] - L->slice_row[s];
        ck_assert_int_eq(L->dict_ptr[s + 1] - L->dict_ptr[s], width);
        ck_assert_int_eq(L->rem_ptr[s + 1] - L->rem_ptr[s], 0);
    }
    ck_assert_int_gt(full, 0);
    /* Every interior row lands in a full slice but fewer than C per sort
     * window (the interior rows of a window fill whole slices first). */
    const ks_int nwin = (A.nrows + L->sigma - 1) / L->sigma;
    ck_assert_msg(full_rows > interior - nwin * L->C, "%d of %d interior rows in full slices",
                  (int)full_rows, (int)interior);
    const double csr_idx = 4.0 * A.nnz + 4.0 * (A.nrows + 1.0);
    ck_assert_msg(ks_codsell_index_bytes(L) < 0.5 * csr_idx, "index bytes %.0f vs CSR %.0f",
                  ks_codsell_index_bytes(L), csr_idx);
    ck_assert(ks_codsell_storage_bytes(L) < 12.0 * A.nnz + 4.0 * (A.nrows + 1.0));
    ks_codsell_layout_free(vL);
    ks_csr_free(&A);
}

START_TEST(test_stencil_dictionary)
{
    check_stencil(KS_GEN_POISSON3D_7, 16, 7);
    check_stencil(KS_GEN_POISSON3D_27, 12, 27);
    check_stencil(KS_GEN_POISSON3D_27, 16, 27);
}
END_TEST

/* Rows of equal length with patterns B A A B B A A B (C = 2): the greedy
 * pairing joins the neighbours that share the whole pattern, leaving the
 * two ends alone. */
static ks_int row_ab(ks_int i, ks_int ncols, ks_int *cols, void *ctx)
{
    (void)ctx;
    (void)ncols;
    static const int isA[8] = {0, 1, 1, 0, 0, 1, 1, 0};
    const ks_int b = 4 * i;
    cols[0] = b;
    cols[1] = b + (isA[i] ? 1 : 2);
    cols[2] = b + 3;
    return 3;
}

START_TEST(test_greedy_pairing)
{
    ks_csr A;
    build(&A, 8, 40, 3, row_ab, NULL, 0);
    ks_spmv_params prm = {0};
    prm.slice_height = 2;
    prm.sort_window = 8;
    void *vL = NULL;
    KS_CHECK(ks_codsell_layout_build(&A, &prm, &vL));
    const ks_codsell_layout *L = vL;
    ck_assert_int_eq(L->permuted, 0); /* equal lengths: order kept */
    static const ks_int rows[6] = {0, 1, 3, 5, 7, 8};
    ck_assert_int_eq(L->nslices, 5);
    for (int s = 0; s <= 5; s++)
        ck_assert_int_eq(L->slice_row[s], rows[s]);
    for (int s = 0; s < 5; s++) {
        ck_assert_int_eq(L->dict_ptr[s + 1] - L->dict_ptr[s], 3);
        ck_assert_int_eq(L->rem_ptr[s + 1] - L->rem_ptr[s], 0);
    }
    ks_codsell_layout_free(vL);
    /* sigma = 1: slices of exactly C consecutive rows, common pattern only. */
    prm.sort_window = 1;
    KS_CHECK(ks_codsell_layout_build(&A, &prm, &vL));
    L = vL;
    ck_assert_int_eq(L->nslices, 4);
    for (int s = 0; s < 4; s++) {
        ck_assert_int_eq(L->slice_row[s], 2 * s);
        ck_assert_int_eq(L->dict_ptr[s + 1] - L->dict_ptr[s], 2);
        ck_assert_int_eq(L->rem_ptr[s + 1] - L->rem_ptr[s], 2); /* 1 per row */
    }
    ks_codsell_layout_free(vL);
    check_layout(&A, &prm, "pairing, sigma 1");
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_params)
{
    ks_csr A;
    ks_int maxl = 9;
    build(&A, 500, 300, maxl, row_random, &maxl, 0);
    ks_spmv_params prm = {0};
    void *vL = NULL;
    /* Defaults. */
    KS_CHECK(ks_codsell_layout_build(&A, &prm, &vL));
    ck_assert_int_eq(((ks_codsell_layout *)vL)->C, KS_SELL_DEFAULT_SLICE_HEIGHT);
    ck_assert_int_eq(((ks_codsell_layout *)vL)->sigma,
                     KS_SELL_DEFAULT_SIGMA_SLICES * KS_SELL_DEFAULT_SLICE_HEIGHT);
    ks_codsell_layout_free(vL);
    /* Honoured: C and sigma; rows sorted by length inside each window. */
    prm.slice_height = 8;
    prm.sort_window = 64;
    KS_CHECK(ks_codsell_layout_build(&A, &prm, &vL));
    const ks_codsell_layout *L = vL;
    ck_assert_int_eq(L->C, 8);
    ck_assert_int_eq(L->sigma, 64);
    ck_assert_int_eq(L->permuted, 1);
    for (ks_int p = 0; p < A.nrows; p++) {
        ck_assert_int_eq(L->perm[p] / 64, p / 64);
        if (p % 64 != 0)
            ck_assert_int_le(L->rowlen[p], L->rowlen[p - 1]);
        ck_assert_int_eq(L->rowlen[p], A.rowptr[L->perm[p] + 1] - A.rowptr[L->perm[p]]);
    }
    for (ks_int s = 0; s < L->nslices; s++) {
        ck_assert_int_le(L->slice_row[s + 1] - L->slice_row[s], 8);
        /* Slices never cross a window. */
        ck_assert_int_eq(L->slice_row[s] / 64, (L->slice_row[s + 1] - 1) / 64);
    }
    ks_codsell_layout_free(vL);
    /* Bad ones. */
    static const int bad[][2] = {{3, 0}, {-1, 0}, {2048, 0}, {4, 6}, {4, -1}, {8, 4}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        prm.slice_height = bad[k][0];
        prm.sort_window = bad[k][1];
        vL = (void *)&prm;
        ck_assert_int_eq(ks_codsell_layout_build(&A, &prm, &vL), KS_ERR_ARG);
        ck_assert_ptr_null(vL);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "codsell"));
    }
    prm.slice_height = 0;
    prm.sort_window = 0;
    prm.max_fill = -1.0;
    ck_assert_int_eq(ks_codsell_layout_build(&A, &prm, &vL), KS_ERR_ARG);
    ck_assert_int_eq(ks_codsell_layout_build(&A, &prm, NULL), KS_ERR_ARG);
    ks_csr_free(&A);
}
END_TEST

/* A lone full row among 3-entry rows, even unsorted (sigma = 1): the
 * pairing keeps it in a slice of its own instead of padding 31 rows to
 * its length, so little is stored beyond nnz. Padding above a tight
 * max_fill is refused with the sizes. */
START_TEST(test_refusal)
{
    ks_csr A;
    build(&A, 64, 3000, 3000, row_huge, NULL, 0);
    ks_spmv_params prm = {0};
    prm.sort_window = 1;
    void *vL = NULL;
    KS_CHECK(ks_codsell_layout_build(&A, &prm, &vL));
    const ks_codsell_layout *L = vL;
    double slots = (double)L->dval_ptr[L->nslices] + (double)L->rem_ptr[L->nslices];
    ck_assert_msg(slots <= 1.3 * A.nnz, "stored slots %.0f, nnz %d", slots, (int)A.nnz);
    int alone = 0;
    for (ks_int s = 0; s < L->nslices; s++)
        alone |= L->slice_row[s + 1] - L->slice_row[s] == 1 && L->perm[L->slice_row[s]] == 5;
    ck_assert(alone);
    ks_codsell_layout_free(vL);
    check_layout(&A, &prm, "lone huge row, sigma 1");
    ks_csr_free(&A);

    ks_int maxl = 12;
    build(&A, 700, 500, maxl, row_random, &maxl, 0);
    prm.sort_window = 0;
    prm.max_fill = 1.0001;
    vL = NULL;
    ck_assert_int_eq(ks_codsell_layout_build(&A, &prm, &vL), KS_ERR_UNSUPPORTED);
    ck_assert_ptr_null(vL);
    const char *m = ks_last_error();
    ck_assert_msg(strstr(m, "codsell") && strstr(m, "MB") && strstr(m, "max_fill 1.0001"), "%s",
                  m);
    prm.max_fill = 1e9;
    check_layout(&A, &prm, "random, max_fill 1e9");
    ks_csr_free(&A);
}
END_TEST

#ifdef KS_HAVE_CUDA
static void check_device(ks_backend *be, const ks_csr *A, const ks_spmv_params *prm,
                         const char *label)
{
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, "codsell", prm, &M);
    ck_assert_msg(e == KS_OK, "%s: %s: %s", label, ks_error_name(e), ks_last_error());
    void *L = NULL;
    KS_CHECK(ks_codsell_layout_build(A, prm, &L));
    ck_assert_double_eq_tol(ks_matrix_bytes_per_apply(M), ks_codsell_layout_bytes(L), 0.5);
    ks_vec *vx, *vy;
    KS_CHECK(ks_vec_create(be, A->ncols, &vx));
    KS_CHECK(ks_vec_create(be, A->nrows, &vy));
    double *x = random_vec(A->ncols, 21), *y0 = random_vec(A->nrows, 22);
    double *y = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    double *h = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert(y && h);
    KS_CHECK(ks_vec_set_host(vx, x));
    for (int k = 0; k < NCOEF; k++) {
        const double a = coefs[k][0], b = coefs[k][1];
        if (b == 0.0)
            KS_CHECK(ks_vec_fill(vy, NAN));
        else
            KS_CHECK(ks_vec_set_host(vy, y0));
        KS_CHECK(ks_matrix_apply(M, a, vx, b, vy));
        KS_CHECK(ks_vec_get_host(vy, y));
        double err = max_err(A, a, x, b, y0, y);
        ck_assert_msg(err <= TOL, "%s on cuda, alpha %g beta %g: error %.3e", label, a, b, err);
        for (ks_int i = 0; i < A->nrows; i++)
            h[i] = b == 0.0 ? NAN : y0[i];
        ks_codsell_layout_apply(L, a, x, b, h);
        err = ks_test_max_relerr(y, h, A->nrows);
        ck_assert_msg(err <= 1e-13, "%s on cuda: differs from the host layout by %.3e", label,
                      err);
    }
    ks_codsell_layout_free(L);
    free(x);
    free(y0);
    free(y);
    free(h);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
}

START_TEST(test_cuda)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    const ks_spmv_format_ops *o = ks_spmv_format_find("codsell", KS_BACKEND_CUDA);
    ck_assert_ptr_nonnull(o);
    ck_assert(o->layout_build == ks_codsell_layout_build && o->layout_to_csr &&
              o->setup && o->apply && o->destroy && !o->gs_sweep);
    static const int shapes[][2] = {{0, 0}, {1, 1}, {4, 16}, {64, 128}, {512, 512}};
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            ks_spmv_params prm = {0};
            prm.slice_height = shapes[k][0];
            prm.sort_window = shapes[k][1];
            char label[128];
            snprintf(label, sizeof label, "%s, C %d sigma %d", case_names[c], shapes[k][0],
                     shapes[k][1]);
            check_device(be, &A, &prm, label);
        }
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST
#endif

/* -v: memory of the layout against CSR (host only). */
static void report_one(const char *name, const ks_csr *A)
{
    void *L = NULL;
    ks_error e = ks_codsell_layout_build(A, NULL, &L);
    if (e != KS_OK) {
        printf("%-16s refused: %s\n", name, ks_last_error());
        return;
    }
    const double csr = 12.0 * A->nnz + 4.0 * (A->nrows + 1.0);
    const double csr_idx = 4.0 * A->nnz + 4.0 * (A->nrows + 1.0);
    const double all = ks_codsell_storage_bytes(L), idx = ks_codsell_index_bytes(L);
    const ks_codsell_layout *C = L;
    printf("%-16s n %8d nnz %9d slices %7d dict %8d rem slots %9d | total %9.3f MB vs CSR "
           "%9.3f MB (%5.1f%% saved) | index %8.3f MB vs CSR %8.3f MB (%5.1f%% saved)\n",
           name, (int)A->nrows, (int)A->nnz, (int)C->nslices, (int)C->dict_ptr[C->nslices],
           (int)C->rem_ptr[C->nslices], all / 1e6, csr / 1e6, 100.0 * (1.0 - all / csr),
           idx / 1e6, csr_idx / 1e6, 100.0 * (1.0 - idx / csr_idx));
    ks_codsell_layout_free(L);
}

static void report(void)
{
    static const char *const mats[] = {"ani4.mtx.gz",    "ani5_crop.mtx.gz", "bcsstk13.mtx.gz",
                                       "bcsstk14.mtx.gz", "cage11.mtx.gz",    "cavity26.mtx.gz",
                                       "fv1.mtx.gz",      "hangGlider_2.mtx.gz",
                                       "memplus.mtx.gz",  "poisson3Da.mtx.gz",
                                       "raefsky2.mtx.gz", "rajat01.mtx.gz",   "watt_2.mtx.gz"};
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
        const char *path = ks_test_shared_matrix(mats[k]);
        if (!path) {
            printf("%-16s missing\n", mats[k]);
            continue;
        }
        ks_csr A;
        if (ks_mm_read_csr(path, &A, NULL) != KS_OK) {
            printf("%-16s unreadable: %s\n", mats[k], ks_last_error());
            continue;
        }
        report_one(mats[k], &A);
        ks_csr_free(&A);
    }
    /* Outside a test: no ck_assert here. */
    static const ks_gen_kind kinds[2] = {KS_GEN_POISSON3D_7, KS_GEN_POISSON3D_27};
    static const char *const names[2] = {"3D 7-pt 64^3", "3D 27-pt 64^3"};
    for (int k = 0; k < 2; k++) {
        ks_gen_params g;
        ks_gen_params_default(&g);
        g.kind = kinds[k];
        g.nx = g.ny = g.nz = 64;
        ks_csr A;
        if (ks_generate(&g, &A) != KS_OK) {
            printf("%-16s failed: %s\n", names[k], ks_last_error());
            continue;
        }
        report_one(names[k], &A);
        ks_csr_free(&A);
    }
}

int main(int argc, char **argv)
{
    /* -v: the report only. Running the forked tests after it would hang:
     * a child forked after OpenMP ran in the parent deadlocks in libgomp. */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-v") == 0) {
            report();
            return 0;
        }
    Suite *s = suite_create("spmv_codsell");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_cases, 0, NCASES);
    tcase_add_test(tc, test_stencil_dictionary);
    tcase_add_test(tc, test_greedy_pairing);
    tcase_add_test(tc, test_params);
    tcase_add_test(tc, test_refusal);
    suite_add_tcase(s, tc);
    tc = tcase_create("cuda");
#ifdef KS_HAVE_CUDA
    if (ks_test_have_cuda())
        tcase_add_test(tc, test_cuda);
    else
        ks_test_skip(1, "no CUDA device: codsell kernel");
#else
    ks_test_skip(1, "CUDA not compiled in: codsell kernel");
#endif
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
