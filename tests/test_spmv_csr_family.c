/* CSR family formats: csr_adaptive's host layout (row blocks cover every
 * row once, respect the staging budget and the rows cap, long rows split in
 * exact chunks; its reference apply and to_csr round trip), then on a CUDA
 * device csr_scalar, csr_adaptive and csr_vector against their host
 * references with NaN-poisoned outputs, and bitwise-repeatable applies.
 *
 * Also a generator for the "few very long rows" benchmark case:
 *   test_spmv_csr_family --write-long-rows PATH [NROWS NLONG LEN]
 * writes a Matrix Market file (gzip when PATH ends in .gz) of NROWS rows
 * (default 1000000) of a 5-point 1D band plus NLONG (default 8) rows of LEN
 * (default 200000) entries spread over the columns, for bench_spmv --mtx. */
#include "ks_test.h"
#include "spmv/csr_family.h"
#include "spmv_cases.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12

/* ------------------------------------------------------------ test data */
/* Rows longer than a quarter of the columns are drawn by selection sampling
 * (the long rows here reach 50000 of 60000 columns). main() selects seed
 * stream 7, the data these tests were written against. */
static const sc_rows csr_rows = {4, 0};

enum { C_RANDOM, C_HUGE, C_MANY_LONG, C_ONE, C_ARROW, C_EMPTY, C_P7, C_P27, C_P27_BIG,
       NCASES };
static const char *const case_names[NCASES] = {
    "random with empty rows", "one row of 50000", "many long rows", "1x1",
    "dense row and column 5000", "no entries", "poisson3d_7 12^3", "poisson3d_27 8^3",
    "poisson3d_27 48^3"};

/* Row lengths around the path boundaries: the shared capacity (vector vs
 * long) and the chunk size (one chunk vs two). */
static const ks_int long_lens[] = {
    KS_CSR_ADAPTIVE_SHARED,          KS_CSR_ADAPTIVE_SHARED + 1, KS_CSR_ADAPTIVE_CHUNK,
    KS_CSR_ADAPTIVE_CHUNK + 1,       2 * KS_CSR_ADAPTIVE_CHUNK,  2 * KS_CSR_ADAPTIVE_CHUNK + 1,
    KS_CSR_ADAPTIVE_SHARED - 1,      12001,                      300,
    33 * KS_CSR_ADAPTIVE_CHUNK + 17, 1,                          0};

static void make_case(int c, ks_csr *A)
{
    memset(A, 0, sizeof *A);
    ks_int *len = NULL;
    switch (c) {
    case C_RANDOM: {
        const ks_int n = 2000;
        sc_rng_seed(1);
        len = malloc(sizeof(ks_int) * n);
        ck_assert_ptr_nonnull(len);
        for (ks_int i = 0; i < n; i++)
            len[i] = sc_urand() < 0.2 ? 0 : (ks_int)(sc_rng_next() % 41);
        sc_build_rows(A, n, 1800, len, &csr_rows);
        break;
    }
    case C_HUGE: {
        const ks_int n = 6000;
        sc_rng_seed(2);
        len = malloc(sizeof(ks_int) * n);
        ck_assert_ptr_nonnull(len);
        for (ks_int i = 0; i < n; i++)
            len[i] = (ks_int)(sc_rng_next() % 6);
        len[n / 2 + 1] = 50000;
        sc_build_rows(A, n, 60000, len, &csr_rows);
        break;
    }
    case C_MANY_LONG: {
        /* Long rows every 5th row, some adjacent pairs, among short ones. */
        const ks_int n = 700;
        const int nl = (int)(sizeof long_lens / sizeof long_lens[0]);
        sc_rng_seed(3);
        len = malloc(sizeof(ks_int) * n);
        ck_assert_ptr_nonnull(len);
        for (ks_int i = 0; i < n; i++)
            len[i] = (ks_int)(sc_rng_next() % 31);
        for (ks_int i = 0, k = 0; i < n; i += 5, k++)
            len[i] = long_lens[k % nl];
        len[n - 1] = 3 * KS_CSR_ADAPTIVE_CHUNK; /* last row long */
        len[n - 2] = 3 * KS_CSR_ADAPTIVE_CHUNK;
        sc_build_rows(A, n, 140000, len, &csr_rows);
        break;
    }
    case C_ONE: sc_make_one(A); break;
    case C_ARROW: sc_make_arrow(A, 5000, 4); break;
    case C_EMPTY: sc_make_empty(A, 10, 7); break;
    case C_P7: sc_make_gen(A, KS_GEN_POISSON3D_7, 12); break;
    case C_P27: sc_make_gen(A, KS_GEN_POISSON3D_27, 8); break;
    case C_P27_BIG: sc_make_gen(A, KS_GEN_POISSON3D_27, 48); break;
    }
    free(len);
}

/* Long rows of many chunks: row 10 of 201 chunks (the last of one entry),
 * the last row of exactly 64, and every 5th row of 2 or 3 chunks, among
 * short rows: more chunk blocks (about 1300) than an H100 holds at once
 * (8 per SM on 132 SMs), many of them adding to one row's counter. */
#define MANY_CHUNKS_MIN 1100
static void make_many_chunks(ks_csr *A)
{
    const ks_int n = 2000;
    ks_int *len = malloc(sizeof(ks_int) * n);
    ck_assert_ptr_nonnull(len);
    sc_rng_seed(4);
    for (ks_int i = 0; i < n; i++)
        len[i] = (ks_int)(sc_rng_next() % 9);
    for (ks_int i = 3; i < n; i += 5)
        len[i] = KS_CSR_ADAPTIVE_SHARED + 1 + (ks_int)(sc_rng_next() % (2 * KS_CSR_ADAPTIVE_CHUNK));
    len[10] = 200 * KS_CSR_ADAPTIVE_CHUNK + 1;
    len[n - 1] = 64 * KS_CSR_ADAPTIVE_CHUNK;
    memset(A, 0, sizeof *A);
    sc_build_rows(A, n, 420000, len, &csr_rows);
    free(len);
}

static const sc_coef coefs[] = {
    {1.0, 0.0}, {-0.5, 0.0}, {2.0, 1.0}, {0.75, -0.25}, {0.0, 2.0},
};
#define NCOEFS ((int)(sizeof coefs / sizeof coefs[0]))

/* ---------------------------------------------------- layout structure */
static ks_int rlen(const ks_csr *A, ks_int r) { return A->rowptr[r + 1] - A->rowptr[r]; }

/* Blocks partition the rows in order; each respects its kind's limits and
 * is maximal (greedy); long rows are exactly the rows above the shared
 * capacity, in order, and their chunks tile each row exactly. */
static void check_structure(const ks_csr *A, const ks_csr_adaptive_layout *L, int max_rows,
                            const char *label)
{
    ck_assert_msg(L->budget >= KS_CSR_ADAPTIVE_MIN_BUDGET &&
                      L->budget <= KS_CSR_ADAPTIVE_SHARED && (L->budget & (L->budget - 1)) == 0,
                  "%s: budget %d", label, L->budget);
    ck_assert_int_eq(L->max_rows, max_rows > 0 ? max_rows : KS_CSR_ADAPTIVE_MAX_ROWS);
    ck_assert_int_eq(L->block_row[0], 0);
    ck_assert_int_eq(L->block_row[L->nblocks], A->nrows);
    ck_assert(A->nrows == 0 || L->nblocks >= 1);
    ks_int nlong = 0;
    for (ks_int b = 0; b < L->nblocks; b++) {
        ks_int r0 = L->block_row[b], r1 = L->block_row[b + 1];
        ck_assert_msg(r1 > r0, "%s: block %d is empty or out of order", label, (int)b);
        ck_assert_msg(r1 - r0 <= L->max_rows, "%s: block %d has %d rows", label, (int)b,
                      (int)(r1 - r0));
        ks_int nnz = A->rowptr[r1] - A->rowptr[r0];
        if (r1 - r0 > 1) {
            ck_assert_msg(nnz <= L->budget, "%s: stream block %d holds %d > %d entries", label,
                          (int)b, (int)nnz, L->budget);
        } else if (nnz > KS_CSR_ADAPTIVE_SHARED) {
            ck_assert_msg(nlong < L->nlong && L->long_row[nlong] == r0,
                          "%s: long row %d missing from the list", label, (int)r0);
            nlong++;
        }
        for (ks_int r = r0; r < r1 && r1 - r0 > 1; r++)
            ck_assert(rlen(A, r) <= L->budget);
        /* greedy: the next row could not have joined */
        if (r1 < A->nrows && !(r1 - r0 == 1 && nnz > KS_CSR_ADAPTIVE_SHARED))
            ck_assert_msg(r1 - r0 == L->max_rows || nnz + rlen(A, r1) > L->budget ||
                              rlen(A, r0) > L->budget,
                          "%s: block %d (rows %d..%d) stopped early", label, (int)b, (int)r0,
                          (int)r1);
    }
    ck_assert_int_eq(nlong, L->nlong);
    ck_assert_int_eq(L->long_chunk[0], 0);
    ck_assert_int_eq(L->long_chunk[L->nlong], L->nchunks);
    for (ks_int l = 0; l < L->nlong; l++) {
        ks_int r = L->long_row[l];
        ck_assert(l == 0 || r > L->long_row[l - 1]);
        ck_assert(rlen(A, r) > KS_CSR_ADAPTIVE_SHARED);
        ks_int g0 = L->long_chunk[l], g1 = L->long_chunk[l + 1];
        ck_assert_int_eq(g1 - g0, (rlen(A, r) + KS_CSR_ADAPTIVE_CHUNK - 1) /
                                      KS_CSR_ADAPTIVE_CHUNK);
        for (ks_int g = g0; g < g1; g++) {
            ck_assert_int_eq(L->chunk_row[g], r);
            ck_assert_int_eq(L->chunk_begin[g],
                             A->rowptr[r] + (g - g0) * KS_CSR_ADAPTIVE_CHUNK);
            ck_assert(L->chunk_begin[g] < A->rowptr[r + 1]);
        }
        ck_assert(L->chunk_begin[g1 - 1] + KS_CSR_ADAPTIVE_CHUNK >= A->rowptr[r + 1]);
    }
    /* bytes: the CSR count, the block descriptors, and long-row extras */
    double want = 20.0 * A->nnz + 12.0 * A->nrows + 4.0 + 8.0 * (L->nblocks + 1.0);
    if (L->nlong)
        want += 32.0 * L->nchunks + 12.0 * L->nlong + 8.0;
    ck_assert_msg(fabs(ks_csr_adaptive_layout_bytes(L) - want) < 0.5, "%s: bytes %g, want %g",
                  label, ks_csr_adaptive_layout_bytes(L), want);
}

static void check_round_trip(const ks_csr *A, const void *L,
                             ks_error (*to_csr)(const void *, ks_csr *), const char *label)
{
    ks_csr B;
    memset(&B, 0, sizeof B);
    KS_CHECK(to_csr(L, &B));
    sc_expect_same_csr(&B, A, label);
    ks_csr_free(&B);
}

static void check_adaptive_host(const ks_csr *A, int block_rows, const char *label)
{
    ks_spmv_params p;
    memset(&p, 0, sizeof p);
    p.block_rows = block_rows;
    void *L = NULL;
    ks_error e = ks_csr_adaptive_layout_build(A, &p, &L);
    ck_assert_msg(e == KS_OK, "%s: %s: %s", label, ks_error_name(e), ks_last_error());
    check_structure(A, L, block_rows, label);
    sc_check_apply(ks_csr_adaptive_layout_apply, L, A, coefs, NCOEFS, TOL, label);
    check_round_trip(A, L, ks_csr_adaptive_layout_to_csr, label);
    ks_csr_adaptive_layout_free(L);
}

/* ------------------------------------------------------- host tests */
START_TEST(test_stream_lanes)
{
    for (int nr = 1; nr <= KS_CSR_ADAPTIVE_MAX_ROWS; nr++) {
        int t = ks_csr_adaptive_stream_lanes(nr);
        ck_assert_msg(t >= 1 && t <= 32 && (t & (t - 1)) == 0, "rows %d: T %d", nr, t);
        ck_assert(t * nr <= KS_CSR_ADAPTIVE_THREADS);
        ck_assert(t == 32 || 2 * t * nr > KS_CSR_ADAPTIVE_THREADS);
    }
}
END_TEST

START_TEST(test_host_cases)
{
    ks_csr A;
    make_case(_i, &A);
    check_adaptive_host(&A, 0, case_names[_i]);
    ks_csr_free(&A);
}
END_TEST

/* Rows-per-block caps, down to one row per block (every block a vector or
 * long block), on matrices that make both kinds of block. */
START_TEST(test_host_block_rows)
{
    const int cases[] = {C_RANDOM, C_MANY_LONG, C_P27};
    const int caps[] = {1, 2, 7, 64, KS_CSR_ADAPTIVE_MAX_ROWS};
    for (int c = 0; c < 3; c++) {
        ks_csr A;
        make_case(cases[c], &A);
        for (int k = 0; k < 5; k++) {
            char label[128];
            snprintf(label, sizeof label, "%s, block_rows %d", case_names[cases[c]], caps[k]);
            check_adaptive_host(&A, caps[k], label);
        }
        ks_csr_free(&A);
    }
}
END_TEST

/* The budget is the shared capacity on big matrices and shrinks on small
 * ones (more, smaller blocks to fill the device); stencils land in stream
 * blocks of the expected size. */
START_TEST(test_host_budget)
{
    ks_csr A;
    make_case(C_P27_BIG, &A);
    void *v = NULL;
    KS_CHECK(ks_csr_adaptive_layout_build(&A, NULL, &v));
    ks_csr_adaptive_layout *L = v;
    ck_assert_int_eq(L->budget, KS_CSR_ADAPTIVE_SHARED);
    ck_assert_int_eq(L->nlong, 0);
    /* interior rows have 27 entries: 75 of them fill 2025 of 2048 */
    ks_int most = 0;
    for (ks_int b = 0; b < L->nblocks; b++)
        if (L->block_row[b + 1] - L->block_row[b] > most)
            most = L->block_row[b + 1] - L->block_row[b];
    ck_assert_int_ge(most, 75);
    ck_assert_int_le(L->nblocks, A.nnz / (KS_CSR_ADAPTIVE_SHARED - 27) + 2 + A.nrows / 256);
    ks_csr_adaptive_layout_free(v);
    ks_csr_free(&A);

    make_case(C_P7, &A); /* 1728 rows, about 11000 entries: smallest budget */
    KS_CHECK(ks_csr_adaptive_layout_build(&A, NULL, &v));
    L = v;
    ck_assert_int_eq(L->budget, KS_CSR_ADAPTIVE_MIN_BUDGET);
    ck_assert_int_ge(L->nblocks, A.nnz / KS_CSR_ADAPTIVE_MIN_BUDGET);
    ks_csr_adaptive_layout_free(v);
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_host_errors)
{
    ks_csr A;
    make_case(C_P27, &A);
    const int bad[] = {-1, KS_CSR_ADAPTIVE_MAX_ROWS + 1, 100000};
    for (int k = 0; k < 3; k++) {
        ks_spmv_params p;
        memset(&p, 0, sizeof p);
        p.block_rows = bad[k];
        void *L = &p;
        ck_assert_int_eq(ks_csr_adaptive_layout_build(&A, &p, &L), KS_ERR_ARG);
        ck_assert_ptr_null(L);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "block_rows"));
    }
    void *L = &A;
    ck_assert_int_ne(ks_csr_adaptive_layout_build(NULL, NULL, &L), KS_OK);
    ck_assert_ptr_null(L);
    ck_assert_int_eq(ks_csr_adaptive_layout_build(&A, NULL, NULL), KS_ERR_ARG);
    ks_int saved = A.rowptr[A.nrows];
    A.rowptr[A.nrows] = A.nnz + 1; /* inconsistent header */
    ck_assert_int_ne(ks_csr_adaptive_layout_build(&A, NULL, &L), KS_OK);
    ck_assert_ptr_null(L);
    A.rowptr[A.nrows] = saved;
    ks_csr_free(&A);
}
END_TEST

/* The many-chunks matrix: the layout has the chunks it is meant to have,
 * and the reference apply adds more than 32 partials a row right. */
START_TEST(test_host_many_chunks)
{
    ks_csr A;
    make_many_chunks(&A);
    check_adaptive_host(&A, 0, "many chunks");
    void *v = NULL;
    KS_CHECK(ks_csr_adaptive_layout_build(&A, NULL, &v));
    ks_csr_adaptive_layout *L = v;
    ck_assert_int_ge(L->nchunks, MANY_CHUNKS_MIN);
    ck_assert_int_eq(L->long_row[0], 3);
    ck_assert_int_eq(L->long_row[2], 10);
    ck_assert_int_eq(L->long_chunk[3] - L->long_chunk[2], 201);
    ck_assert_int_eq(L->long_row[L->nlong - 1], A.nrows - 1);
    ck_assert_int_eq(L->long_chunk[L->nlong] - L->long_chunk[L->nlong - 1], 64);
    ks_csr_adaptive_layout_free(v);
    ks_csr_free(&A);
}
END_TEST

/* Every CSR-family format's host half through the registry. */
#ifdef KS_HAVE_CUDA
START_TEST(test_host_registered)
{
    const char *names[3] = {"csr_scalar", "csr_adaptive", "csr_vector"};
    ks_csr A;
    make_case(_i, &A);
    for (int f = 0; f < 3; f++) {
        const ks_spmv_format_ops *ops = ks_spmv_format_find(names[f], KS_BACKEND_CUDA);
        ck_assert_msg(ops != NULL, "%s not registered", names[f]);
        ck_assert_ptr_nonnull(ops->layout_to_csr);
        ck_assert_ptr_null(ops->gs_sweep);
        void *L = NULL;
        KS_CHECK(ops->layout_build(&A, NULL, &L));
        ck_assert(ops->layout_bytes(L) > 0.0);
        char label[160];
        snprintf(label, sizeof label, "%s layout, %s", names[f], case_names[_i]);
        sc_check_apply(ops->layout_apply, L, &A, coefs, NCOEFS, TOL, label);
        check_round_trip(&A, L, ops->layout_to_csr, label);
        ops->layout_free(L);
    }
    ks_csr_free(&A);
}
END_TEST
#endif

/* --------------------------------------------------- shared matrices */
static const char *const shared_names[] = {"memplus.mtx.gz", "rajat01.mtx.gz",
                                           "hangGlider_2.mtx.gz", "cage11.mtx.gz",
                                           "raefsky2.mtx.gz", "fv1.mtx.gz", "bcsstk13.mtx.gz"};
#define NSHARED ((int)(sizeof shared_names / sizeof shared_names[0]))

START_TEST(test_shared_host)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    check_adaptive_host(&A, 0, shared_names[_i]);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------- cuda device */
/* Format fmt through ks_matrix_* on the cuda backend against its own host
 * layout apply (same summation order but for fused multiply-adds) and the
 * CSR reference; y NaN-poisoned before each beta == 0 apply; three applies
 * with the same operands give bitwise-equal results. */
static void check_device(ks_backend *be, const char *fmt, const ks_spmv_params *prm,
                         const ks_csr *A, const char *label)
{
    const ks_spmv_format_ops *ops = ks_spmv_format_find(fmt, KS_BACKEND_CUDA);
    ck_assert_ptr_nonnull(ops);
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, fmt, prm, &M);
    ck_assert_msg(e == KS_OK, "%s, %s: %s: %s", fmt, label, ks_error_name(e), ks_last_error());
    void *L = NULL;
    KS_CHECK(ops->layout_build(A, prm, &L));

    ks_vec *vx = NULL, *vy = NULL;
    KS_CHECK(ks_vec_create(be, A->ncols, &vx));
    KS_CHECK(ks_vec_create(be, A->nrows, &vy));
    double *x = sc_random_vec(A->ncols, 201), *y0 = sc_random_vec(A->nrows, 202);
    size_t ybytes = sizeof(double) * ((size_t)A->nrows + 1);
    double *y = malloc(ybytes), *yh = malloc(ybytes), *y2 = malloc(ybytes);
    double *poison = malloc(ybytes);
    ck_assert(y && yh && y2 && poison);
    for (ks_int i = 0; i < A->nrows; i++)
        poison[i] = NAN;
    KS_CHECK(ks_vec_set_host(vx, x));
    for (int k = 0; k < NCOEFS; k++) {
        double a = coefs[k].alpha, b = coefs[k].beta;
        const double *start = b == 0.0 ? poison : y0;
        for (int rep = 0; rep < 3; rep++) {
            KS_CHECK(ks_vec_set_host(vy, start));
            KS_CHECK(ks_matrix_apply(M, a, vx, b, vy));
            double *out = rep == 0 ? y : y2;
            for (ks_int i = 0; i < A->nrows; i++)
                out[i] = -1.0;
            KS_CHECK(ks_vec_get_host(vy, out));
            if (rep > 0)
                ck_assert_msg(memcmp(y, y2, sizeof(double) * (size_t)A->nrows) == 0,
                              "%s, %s, alpha %g beta %g: apply %d differs bitwise", fmt, label,
                              a, b, rep + 1);
        }
        memcpy(yh, start, sizeof(double) * (size_t)A->nrows);
        ops->layout_apply(L, a, x, b, yh);
        double eh = sc_scaled_diff(A, a, x, b, y0, y, yh);
        double er = sc_spmv_error(A, a, x, b, y0, y);
        ck_assert_msg(eh <= TOL && er <= TOL,
                      "%s, %s, alpha %g beta %g: error %.3e vs host layout, %.3e vs CSR", fmt,
                      label, a, b, eh, er);
    }
    ops->layout_free(L);
    free(x);
    free(y0);
    free(y);
    free(yh);
    free(y2);
    free(poison);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
}

static const char *const device_formats[] = {"csr_scalar", "csr_adaptive", "csr_vector"};
#define NDEVFMT 3

/* One test (one CUDA context) for all cases: context creation dominates
 * the run time otherwise; the failure message names the case. */
START_TEST(test_cuda_cases)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        for (int f = 0; f < NDEVFMT; f++)
            check_device(be, device_formats[f], NULL, &A, case_names[c]);
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(test_cuda_block_rows)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    const int cases[] = {C_RANDOM, C_MANY_LONG, C_P27};
    const int caps[] = {1, 3, 64};
    for (int c = 0; c < 3; c++) {
        ks_csr A;
        make_case(cases[c], &A);
        for (int k = 0; k < 3; k++) {
            ks_spmv_params p;
            memset(&p, 0, sizeof p);
            p.block_rows = caps[k];
            char label[128];
            snprintf(label, sizeof label, "%s, block_rows %d", case_names[cases[c]], caps[k]);
            check_device(be, "csr_adaptive", &p, &A, label);
        }
        ks_spmv_params p;
        memset(&p, 0, sizeof p);
        p.block_rows = KS_CSR_ADAPTIVE_MAX_ROWS + 1;
        ks_matrix *M = NULL;
        ck_assert_int_eq(ks_matrix_create(be, &A, "csr_adaptive", &p, &M), KS_ERR_ARG);
        ck_assert_ptr_null(M);
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(test_cuda_shared)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    for (int i = 0; i < NSHARED; i++) {
        if (!ks_test_shared_matrix(shared_names[i]))
            continue; /* counted as skipped in main */
        ks_csr A;
        sc_read_shared(shared_names[i], &A);
        for (int f = 0; f < NDEVFMT; f++)
            check_device(be, device_formats[f], NULL, &A, shared_names[i]);
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST

/* K csr_adaptive applies back to back, with no host round trip between
 * them: y = alpha A x into NaN-poisoned y (beta 0), then K - 1 times
 * y = alpha A x + y. Each apply must find the long-row counters left at 0
 * by the one before (a counter not reset leaves a long row unwritten, or
 * written before all its partials). Against the host layout doing the same
 * sequence and against K alpha A x; the whole sequence twice: bitwise equal. */
static void check_back_to_back(ks_backend *be, const ks_csr *A, const char *label)
{
    enum { K = 6 };
    const double alpha = 0.625;
    const ks_spmv_format_ops *ops = ks_spmv_format_find("csr_adaptive", KS_BACKEND_CUDA);
    ck_assert_ptr_nonnull(ops);
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, "csr_adaptive", NULL, &M);
    ck_assert_msg(e == KS_OK, "%s: %s: %s", label, ks_error_name(e), ks_last_error());
    void *L = NULL;
    KS_CHECK(ops->layout_build(A, NULL, &L));
    ks_vec *vx = NULL, *vy = NULL;
    KS_CHECK(ks_vec_create(be, A->ncols, &vx));
    KS_CHECK(ks_vec_create(be, A->nrows, &vy));
    double *x = sc_random_vec(A->ncols, 301);
    size_t ybytes = sizeof(double) * ((size_t)A->nrows + 1);
    double *y[2] = {malloc(ybytes), malloc(ybytes)}, *yh = malloc(ybytes);
    ck_assert(y[0] && y[1] && yh);
    KS_CHECK(ks_vec_set_host(vx, x));
    for (int run = 0; run < 2; run++) {
        for (ks_int i = 0; i < A->nrows; i++)
            yh[i] = NAN;
        KS_CHECK(ks_vec_set_host(vy, yh));
        for (int k = 0; k < K; k++)
            KS_CHECK(ks_matrix_apply(M, alpha, vx, k == 0 ? 0.0 : 1.0, vy));
        for (ks_int i = 0; i < A->nrows; i++)
            y[run][i] = -1.0;
        KS_CHECK(ks_vec_get_host(vy, y[run]));
    }
    ck_assert_msg(memcmp(y[0], y[1], sizeof(double) * (size_t)A->nrows) == 0,
                  "%s: two runs of %d back-to-back applies differ bitwise", label, K);
    for (int k = 0; k < K; k++) /* yh is NaN-poisoned from the loop above */
        ops->layout_apply(L, alpha, x, k == 0 ? 0.0 : 1.0, yh);
    /* beta 0: the scales are K |alpha| |A| |x| and y0 is not read */
    double eh = sc_scaled_diff(A, K * alpha, x, 0.0, yh, y[0], yh);
    double er = sc_spmv_error(A, K * alpha, x, 0.0, yh, y[0]);
    ck_assert_msg(eh <= TOL && er <= TOL,
                  "%s: %d back-to-back applies: error %.3e vs host layout, %.3e vs CSR", label,
                  K, eh, er);
    ops->layout_free(L);
    free(x);
    free(y[0]);
    free(y[1]);
    free(yh);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
}

/* The long-row path of csr_adaptive (chunk partials finished in the same
 * launch by the last chunk block of each row): many chunk blocks, applies
 * in a row with no host round trip between them, on matrices of one huge
 * row, many long rows, one row of 3 chunks (arrow) and none (27-point). */
START_TEST(test_cuda_long_rows)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr A;
    make_many_chunks(&A);
    check_device(be, "csr_adaptive", NULL, &A, "many chunks");
    check_back_to_back(be, &A, "many chunks");
    ks_csr_free(&A);
    const int cases[] = {C_HUGE, C_MANY_LONG, C_ARROW, C_P27};
    for (int c = 0; c < 4; c++) {
        make_case(cases[c], &A);
        check_back_to_back(be, &A, case_names[cases[c]]);
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST

/* ------------------------------------------------ long-rows generator */
static int parse_pos(const char *s, long *v)
{
    char *end;
    long x = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || x < 0 || x > 2000000000L)
        return 0;
    *v = x;
    return 1;
}

/* Rows of a 5-point 1D band (columns i-2..i+2) plus nlong rows, evenly
 * spaced, of len entries at evenly spread columns. */
static int write_long_rows(int argc, char **argv)
{
    long n = 1000000, nlong = 8, len = 200000;
    if (argc < 3 || (argc > 3 && argc != 6) ||
        (argc == 6 && (!parse_pos(argv[3], &n) || !parse_pos(argv[4], &nlong) ||
                       !parse_pos(argv[5], &len))) ||
        n < 1 || nlong > n || len > n) {
        fprintf(stderr, "usage: %s --write-long-rows PATH [NROWS NLONG LEN]\n", argv[0]);
        return 2;
    }
    int64_t nnz = 0;
    for (long i = 0; i < n; i++)
        nnz += (i >= 2 ? 2 : i) + 1 + (n - 1 - i >= 2 ? 2 : n - 1 - i);
    long stride = nlong > 0 ? n / nlong : n;
    for (long l = 0; l < nlong; l++) {
        long i = l * stride + stride / 2;
        nnz += len - ((i >= 2 ? 2 : i) + 1 + (n - 1 - i >= 2 ? 2 : n - 1 - i));
    }
    if (nnz > INT32_MAX) {
        fprintf(stderr, "%s: %lld entries exceed 32-bit indices\n", argv[0], (long long)nnz);
        return 2;
    }
    ks_csr A;
    if (ks_csr_alloc(&A, (ks_int)n, (ks_int)n, (ks_int)nnz) != KS_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], ks_last_error());
        return 1;
    }
    sc_rng_seed(99);
    ks_int pos = 0;
    A.rowptr[0] = 0;
    for (long i = 0, l = 0; i < n; i++) {
        int is_long = l < nlong && i == l * stride + stride / 2;
        if (is_long) {
            l++;
            /* len distinct columns, spread evenly, the diagonal among them
             * when it falls on the spread */
            for (long k = 0; k < len; k++)
                A.colind[pos + k] = (ks_int)((k * n) / len);
            for (long k = 0; k < len; k++)
                A.val[pos + k] = sc_srand1();
            pos += (ks_int)len;
        } else {
            for (long c = i - 2; c <= i + 2; c++)
                if (c >= 0 && c < n) {
                    A.colind[pos] = (ks_int)c;
                    A.val[pos++] = c == i ? 4.0 : -1.0 + 0.1 * sc_srand1();
                }
        }
        A.rowptr[i + 1] = pos;
    }
    ks_error e = ks_csr_validate(&A);
    if (e == KS_OK)
        e = ks_mm_write_csr(argv[2], &A);
    if (e != KS_OK)
        fprintf(stderr, "%s: %s\n", argv[0], ks_last_error());
    else
        printf("wrote %s: %ld x %ld, %d entries, %ld rows of %ld\n", argv[2], n, n, (int)A.nnz,
               nlong, len);
    ks_csr_free(&A);
    return e == KS_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    sc_rng_stream(7);
    if (argc > 1 && strcmp(argv[1], "--write-long-rows") == 0)
        return write_long_rows(argc, argv);

    /* Probe first: the probe forks, and a child holding the suite would
     * show as a leak under valgrind. */
    int have_cuda = ks_test_have_cuda();
    Suite *s = suite_create("spmv_csr_family");

    TCase *tc = tcase_create("host");
    tcase_add_test(tc, test_stream_lanes);
    tcase_add_loop_test(tc, test_host_cases, 0, NCASES);
    tcase_add_test(tc, test_host_block_rows);
    tcase_add_test(tc, test_host_budget);
    tcase_add_test(tc, test_host_errors);
    tcase_add_test(tc, test_host_many_chunks);
#ifdef KS_HAVE_CUDA
    tcase_add_loop_test(tc, test_host_registered, 0, NCASES);
#else
    ks_test_skip(NCASES, "CUDA not compiled in: registered CSR-family host layouts");
#endif
    suite_add_tcase(s, tc);

    tc = tcase_create("cuda");
    if (have_cuda) {
        tcase_add_test(tc, test_cuda_cases);
        tcase_add_test(tc, test_cuda_block_rows);
        tcase_add_test(tc, test_cuda_long_rows);
    } else {
        ks_test_skip(3, "no CUDA device: csr_scalar, csr_adaptive, csr_vector kernels");
    }
    suite_add_tcase(s, tc);

    tc = tcase_create("shared");
    int missing = sc_add_shared_tests(tc, shared_names, NSHARED, test_shared_host, NULL,
                                      "matrices");
    if (missing < NSHARED) {
        if (have_cuda)
            tcase_add_test(tc, test_cuda_shared); /* the matrices present */
        else
            ks_test_skip(1, "no CUDA device: CSR-family kernels on shared matrices");
    }
    suite_add_tcase(s, tc);

    return ks_test_run(s);
}
