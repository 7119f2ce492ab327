/* The "other" SpMV formats (jds, coo, hyb, dia, bdia): host layouts against
 * the CSR reference (every build, through the functions of
 * spmv/other_formats.h, so CI without CUDA tests them), exact round trips
 * to CSR, refusals with their size estimates, the HYB width rule, the
 * parameters, shared real matrices, and on a GPU the kernels through
 * ks_matrix_* against the reference, with NaN-poisoned y and bitwise
 * repeatability. */
#include "ks_test.h"
#include "spmv/csr_layout.h"
#include "spmv/other_formats.h"
#include "spmv_cases.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12

/* ------------------------------------------------------------ formats */
typedef struct host_fmt {
    const char *name;
    ks_error (*build)(const ks_csr *, const ks_spmv_params *, void **);
    void (*apply)(const void *, double, const double *, double, double *);
    double (*bytes)(const void *);
    void (*release)(void *);
    ks_error (*to_csr)(const void *, ks_csr *);
} host_fmt;

enum { F_JDS, F_COO, F_HYB, F_DIA, F_BDIA, NFMT };
static const host_fmt fmts[NFMT] = {
    {"jds", ks_jds_layout_build, ks_jds_layout_apply, ks_jds_layout_bytes, ks_jds_layout_free,
     ks_jds_layout_to_csr},
    {"coo", ks_coo_layout_build, ks_coo_layout_apply, ks_coo_layout_bytes, ks_coo_layout_free,
     ks_coo_layout_to_csr},
    {"hyb", ks_hyb_layout_build, ks_hyb_layout_apply, ks_hyb_layout_bytes, ks_hyb_layout_free,
     ks_hyb_layout_to_csr},
    {"dia", ks_dia_layout_build, ks_dia_layout_apply, ks_dia_layout_bytes, ks_dia_layout_free,
     ks_dia_layout_to_csr},
    {"bdia", ks_bdia_layout_build, ks_bdia_layout_apply, ks_bdia_layout_bytes,
     ks_bdia_layout_free, ks_bdia_layout_to_csr},
};

/* ------------------------------------------------------------ test data */
/* Rows longer than an eighth of the columns are drawn by selection
 * sampling (the huge row holds 100000 of 110000 columns). */
static const sc_rows other_rows = {8, 0};

/* Rows of 0..3 entries (a third empty) and one row of 100000 in the middle. */
static void make_huge_row(ks_csr *A)
{
    const ks_int n = 110000;
    sc_rng_seed(7);
    ks_int *len = malloc(sizeof(ks_int) * (size_t)n);
    ck_assert_ptr_nonnull(len);
    for (ks_int i = 0; i < n; i++)
        len[i] = sc_urand() < 0.33 ? 0 : 1 + (ks_int)(sc_rng_next() % 3);
    len[n / 2] = 100000;
    sc_build_rows(A, n, n, len, &other_rows);
    free(len);
}

/* Row lengths around the COO tile (KS_COO_TILE entries) and its threads'
 * chunks (KS_COO_ITEMS), so rows start and end on and next to every kind
 * of boundary, with empty rows between. */
static void make_tiles(ks_csr *A)
{
    const ks_int pattern[] = {0, 1, 6, 7, 8, 0, 0, 255, 256, KS_COO_TILE - 1, KS_COO_TILE,
                              KS_COO_TILE + 1, 2 * KS_COO_TILE, 3, KS_COO_ITEMS * 32 + 1};
    const int np = (int)(sizeof pattern / sizeof pattern[0]);
    const ks_int n = 4 * np;
    ks_int len[4 * 15];
    for (ks_int i = 0; i < n; i++)
        len[i] = pattern[(i * 7) % np];
    sc_rng_seed(13);
    sc_build_rows(A, n, 4000, len, &other_rows);
}

/* A band: offsets -3..3 about 70% full, offsets -40 and +40 sparser, and
 * about 5% explicit zeros. */
static void make_banded(ks_csr *A, ks_int n, uint64_t seed)
{
    static const ks_int offs[] = {-40, -3, -2, -1, 0, 1, 2, 3, 40};
    sc_rng_seed(seed);
    KS_CHECK(ks_csr_alloc(A, n, n, 9 * n));
    ks_int pos = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        for (int k = 0; k < 9; k++) {
            ks_int c = i + offs[k];
            double keep = offs[k] == 0 ? 1.0 : (offs[k] == 40 || offs[k] == -40) ? 0.5 : 0.7;
            if (c < 0 || c >= n || sc_urand() >= keep)
                continue;
            A->colind[pos] = c;
            A->val[pos++] = sc_urand() < 0.05 ? 0.0 : sc_srand1();
        }
        A->rowptr[i + 1] = pos;
    }
    A->nnz = pos;
}

enum { C_RANDOM, C_HUGE_ROW, C_ONE, C_ARROW, C_DENSE_ROW, C_DENSE_COL, C_P2D, C_P3D, C_P3D27,
       C_WIDE, C_TALL, C_EMPTY, C_BANDED, C_TILES, NCASES };
static const char *const case_names[NCASES] = {
    "random with empty rows", "one row of 100000", "1x1", "dense row and column",
    "dense row 1x500", "dense column 500x1", "poisson2d_5 24^2", "poisson3d_7 12^3",
    "poisson3d_27 7^3", "rectangular 150x900", "rectangular 900x150", "no entries",
    "banded with explicit zeros", "rows at COO tile edges"};
/* dia and bdia hold the banded cases and refuse the scattered ones. */
static const int diag_ok[NCASES] = {
    [C_ONE] = 1, [C_DENSE_ROW] = 1, [C_P2D] = 1, [C_P3D] = 1, [C_P3D27] = 1,
    [C_EMPTY] = 1, [C_BANDED] = 1};

static void make_case(int c, ks_csr *A)
{
    memset(A, 0, sizeof *A);
    switch (c) {
    case C_RANDOM: sc_make_random(A, 700, 650, 24, 1); break;
    case C_HUGE_ROW: make_huge_row(A); break;
    case C_ONE: sc_make_one(A); break;
    case C_ARROW: sc_make_arrow(A, 400, 11); break;
    case C_DENSE_ROW: sc_make_dense_line(A, 500, 0, 17); break;
    case C_DENSE_COL: sc_make_dense_line(A, 500, 1, 17); break;
    case C_P2D: sc_make_gen(A, KS_GEN_POISSON2D_5, 24); break;
    case C_P3D: sc_make_gen(A, KS_GEN_POISSON3D_7, 12); break;
    case C_P3D27: sc_make_gen(A, KS_GEN_POISSON3D_27, 7); break;
    case C_WIDE: sc_make_random(A, 150, 900, 40, 2); break;
    case C_TALL: sc_make_random(A, 900, 150, 8, 3); break;
    case C_EMPTY: sc_make_empty(A, 10, 7); break;
    case C_BANDED: make_banded(A, 1000, 5); break;
    case C_TILES: make_tiles(A); break;
    }
    KS_CHECK(ks_csr_validate(A));
}

static int accepts(int f, int c)
{
    return (f != F_DIA && f != F_BDIA) || diag_ok[c];
}

static const sc_coef coefs[] = {
    {1.0, 0.0}, {-0.5, 0.0}, {2.0, 1.0}, {1.0, -1.5}, {0.75, 0.25}, {0.0, 2.0},
};
#define NCOEFS ((int)(sizeof coefs / sizeof coefs[0]))

/* ------------------------------------------------------------ checkers */
/* Layout of format f holds A: reference apply for every alpha/beta (y
 * NaN-poisoned when beta is 0), positive bytes, exact round trip. */
static void check_layout(int f, const ks_spmv_params *prm, const ks_csr *A, const char *label)
{
    const host_fmt *F = &fmts[f];
    void *L = NULL;
    ks_error e = F->build(A, prm, &L);
    ck_assert_msg(e == KS_OK, "%s layout of %s: %s: %s", F->name, label, ks_error_name(e),
                  ks_last_error());
    ck_assert_msg(F->bytes(L) > 0.0 || A->nrows == 0, "%s: bytes per apply not positive",
                  F->name);
    char what[160];
    snprintf(what, sizeof what, "%s layout, %s", F->name, label);
    sc_check_apply(F->apply, L, A, coefs, NCOEFS, TOL, what);
    ks_csr B;
    KS_CHECK(F->to_csr(L, &B));
    snprintf(what, sizeof what, "%s round trip of %s", F->name, label);
    sc_expect_same_csr(&B, A, what);
    ks_csr_free(&B);
    F->release(L);
}

/* Format f refuses A with KS_ERR_UNSUPPORTED, a size estimate and max_fill
 * (or the shared-memory limit), leaving the layout NULL. */
static void check_refused(int f, const ks_spmv_params *prm, const ks_csr *A, const char *label,
                          const char *must_say)
{
    void *L = (void *)&L;
    ks_error e = fmts[f].build(A, prm, &L);
    ck_assert_msg(e == KS_ERR_UNSUPPORTED, "%s of %s: %s (%s), want KS_ERR_UNSUPPORTED",
                  fmts[f].name, label, ks_error_name(e), ks_last_error());
    ck_assert_ptr_null(L);
    const char *msg = ks_last_error();
    char head[16];
    snprintf(head, sizeof head, "%s:", fmts[f].name);
    ck_assert_msg(strstr(msg, head) && strstr(msg, must_say) &&
                      (strstr(msg, " KB") || strstr(msg, " MB") || strstr(msg, " GB") ||
                       strstr(msg, " B")),
                  "%s of %s: message lacks the name, \"%s\" or a size: %s", fmts[f].name, label,
                  must_say, msg);
}

/* What the bdia kernel does, on the host: stage each block's window from
 * its segment lists (start column, cumulative window end; columns outside
 * the matrix as 0), then sum values times window entries through the
 * shifts, without column indices. Checks the encoding the kernel relies
 * on, in builds without a GPU. */
static void emulate_bdia(const ks_bdia_layout *L, const ks_csr *A, const char *label)
{
    double *x = sc_random_vec(L->ncols, 301);
    double *y = malloc(sizeof(double) * ((size_t)L->nrows + 1));
    double *win = malloc(sizeof(double) * ((size_t)L->max_window + 1));
    ck_assert(y && win);
    ck_assert(KS_BDIA_SHARED_BYTES(L->max_window, L->max_nseg, L->max_nd) <=
              KS_BDIA_MAX_SHARED_BYTES);
    for (ks_int b = 0; b < L->nblocks; b++) {
        ks_int r0 = b * L->block_rows;
        ks_int rows = r0 + L->block_rows < L->nrows ? L->block_rows : L->nrows - r0;
        ks_int s0 = L->seg_ptr[b], ns = L->seg_ptr[b + 1] - s0;
        ks_int d0 = L->blk_ptr[b], nd = L->blk_ptr[b + 1] - d0;
        ck_assert_int_le(ns, L->max_nseg);
        ck_assert_int_le(nd, L->max_nd);
        ks_int window = ns ? L->seg_wend[s0 + ns - 1] : 0;
        ck_assert_int_le(window, L->max_window);
        for (ks_int s = 0; s < ns; s++) {
            ks_int wb = s ? L->seg_wend[s0 + s - 1] : 0;
            ck_assert_int_gt(L->seg_wend[s0 + s], wb);
            for (ks_int p = wb; p < L->seg_wend[s0 + s]; p++) {
                int64_t c = (int64_t)L->seg_start[s0 + s] + (p - wb);
                win[p] = c >= 0 && c < L->ncols ? x[c] : 0.0;
            }
        }
        const double *v = L->val + (size_t)d0 * (size_t)L->block_rows;
        for (ks_int i = 0; i < rows; i++) {
            double sum = 0.0;
            for (ks_int k = 0; k < nd; k++) {
                ks_int sh = L->shift[d0 + k];
                ck_assert(sh >= 0 && sh + rows <= window);
                sum += v[(size_t)k * rows + i] * win[sh + i];
            }
            y[r0 + i] = sum;
        }
    }
    double err = sc_spmv_error(A, 1.0, x, 0.0, NULL, y);
    ck_assert_msg(err <= TOL, "bdia kernel emulation, %s: error %.3e", label, err);
    free(x);
    free(y);
    free(win);
}

static void check_bdia_emulated(const ks_spmv_params *prm, const ks_csr *A, const char *label)
{
    ks_bdia_layout *L = NULL;
    KS_CHECK(ks_bdia_layout_build(A, prm, (void **)&L));
    emulate_bdia(L, A, label);
    ks_bdia_layout_free(L);
}

/* ------------------------------------------------------- host layouts */
START_TEST(test_layout_cases)
{
    ks_csr A;
    make_case(_i, &A);
    for (int f = 0; f < NFMT; f++) {
        if (accepts(f, _i)) {
            check_layout(f, NULL, &A, case_names[_i]);
            if (f == F_BDIA)
                check_bdia_emulated(NULL, &A, case_names[_i]);
        }
        else
            check_refused(f, NULL, &A, case_names[_i], "max_fill 3");
    }
    ks_csr_free(&A);
}
END_TEST

/* Explicit zeros anywhere survive every round trip: dia/bdia keep them
 * apart from band zeros with their bitmask. */
START_TEST(test_explicit_zeros)
{
    ks_csr A;
    make_banded(&A, 600, 21);
    for (ks_int j = 0; j < A.nnz; j += 3)
        A.val[j] = 0.0; /* a third of the entries, the diagonal's included */
    ks_int zeros = 0;
    for (ks_int j = 0; j < A.nnz; j++)
        zeros += A.val[j] == 0.0;
    ck_assert_int_gt(zeros, A.nnz / 4);
    for (int f = 0; f < NFMT; f++)
        check_layout(f, NULL, &A, "band with many explicit zeros");
    /* An all-zero row that is still stored as entries. */
    for (ks_int j = A.rowptr[7]; j < A.rowptr[8]; j++)
        A.val[j] = 0.0;
    for (int f = 0; f < NFMT; f++)
        check_layout(f, NULL, &A, "band with a row of zeros");
    ks_csr_free(&A);
}
END_TEST

/* Stencils: dia has exactly the stencil's diagonals; bdia has them in the
 * interior blocks and no more anywhere; both hold every entry. */
START_TEST(test_stencil_diagonals)
{
    static const struct {
        ks_gen_kind kind;
        ks_int n, ndiag;
    } cases[] = {{KS_GEN_POISSON2D_5, 40, 5}, {KS_GEN_POISSON3D_7, 14, 7},
                 {KS_GEN_POISSON3D_27, 9, 27}};
    for (int c = 0; c < 3; c++) {
        ks_csr A;
        sc_make_gen(&A, cases[c].kind, cases[c].n);
        ks_dia_layout *D = NULL;
        KS_CHECK(ks_dia_layout_build(&A, NULL, (void **)&D));
        ck_assert_int_eq(D->ndiag, cases[c].ndiag);
        /* Offsets: combinations of 0, +-1, +-n, +-n^2 symmetric about 0. */
        for (ks_int k = 0; k < D->ndiag; k++)
            ck_assert_int_eq(D->offset[k], -D->offset[D->ndiag - 1 - k]);
        ck_assert_int_eq(D->offset[D->ndiag / 2], 0);
        ks_int nn = cases[c].n, far = cases[c].kind == KS_GEN_POISSON2D_5 ? nn : nn * nn;
        ck_assert_int_eq(D->offset[D->ndiag - 1], cases[c].kind == KS_GEN_POISSON3D_27
                                                      ? far + nn + 1
                                                      : far);
        ks_dia_layout_free(D);

        ks_bdia_layout *B = NULL;
        KS_CHECK(ks_bdia_layout_build(&A, NULL, (void **)&B));
        ck_assert_int_eq(B->block_rows, KS_BDIA_DEFAULT_ROWS);
        ks_int most = 0;
        for (ks_int b = 0; b < B->nblocks; b++) {
            ks_int nd = B->blk_ptr[b + 1] - B->blk_ptr[b];
            if (nd > most)
                most = nd;
            for (ks_int k = B->blk_ptr[b] + 1; k < B->blk_ptr[b + 1]; k++)
                ck_assert_int_lt(B->offset[k - 1], B->offset[k]);
        }
        ck_assert_int_eq(most, cases[c].ndiag);
        ck_assert_int_ge(B->nblocks, 3);
        /* The window covers each block's rows plus its offset spread. */
        ck_assert_int_ge(B->max_window, KS_BDIA_DEFAULT_ROWS);
        ks_bdia_layout_free(B);
        check_layout(F_DIA, NULL, &A, "stencil");
        check_layout(F_BDIA, NULL, &A, "stencil");
        check_bdia_emulated(NULL, &A, "stencil");
        ks_csr_free(&A);
    }
}
END_TEST

/* A scattered matrix: dia and bdia refuse with the estimate; a large
 * enough max_fill makes them accept it (and still be right). */
START_TEST(test_scattered)
{
    ks_csr A;
    sc_make_random(&A, 2000, 2000, 8, 31);
    check_refused(F_DIA, NULL, &A, "scattered", "diagonals");
    check_refused(F_DIA, NULL, &A, "scattered", "max_fill 3");
    check_refused(F_BDIA, NULL, &A, "scattered", "diagonals");
    ks_spmv_params p;
    memset(&p, 0, sizeof p);
    p.max_fill = 1e6;
    check_layout(F_DIA, &p, &A, "scattered, max_fill 1e6");
    check_layout(F_BDIA, &p, &A, "scattered, max_fill 1e6");
    check_bdia_emulated(&p, &A, "scattered, max_fill 1e6");
    /* A max_fill just below the fill refuses, just above accepts. */
    ks_dia_layout *D = NULL;
    KS_CHECK(ks_dia_layout_build(&A, &p, (void **)&D));
    double fill = (double)D->ndiag * A.nrows / A.nnz;
    ks_dia_layout_free(D);
    p.max_fill = fill * 0.999;
    check_refused(F_DIA, &p, &A, "scattered", "diagonals");
    p.max_fill = fill * 1.001;
    check_layout(F_DIA, &p, &A, "scattered, max_fill above its fill");
    ks_csr_free(&A);

    /* The 100000-entry row: refused before allocating ~9 GB of values. */
    make_huge_row(&A);
    check_refused(F_DIA, NULL, &A, "one huge row", "GB");
    check_refused(F_BDIA, NULL, &A, "one huge row", "max_fill");
    ks_csr_free(&A);
}
END_TEST

/* bdia: a block whose x window exceeds 48 KB of shared memory is refused
 * (saying so, with the fallback); smaller blocks fit. dia holds it. */
START_TEST(test_bdia_window)
{
    /* 30 diagonals 300 apart: 30 separate segments per block. */
    const ks_int n = 12000, nd = 30, gap = 300;
    ks_csr A;
    KS_CHECK(ks_csr_alloc(&A, n, n, n * nd));
    sc_rng_seed(41);
    ks_int pos = 0;
    A.rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        for (ks_int k = 0; k < nd; k++) {
            ks_int c = i + (k - nd / 2) * gap;
            if (c < 0 || c >= n)
                continue;
            A.colind[pos] = c;
            A.val[pos++] = sc_srand1();
        }
        A.rowptr[i + 1] = pos;
    }
    A.nnz = pos;
    check_refused(F_BDIA, NULL, &A, "30 far diagonals", "shared memory");
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "use dia"));
    check_layout(F_DIA, NULL, &A, "30 far diagonals");
    ks_spmv_params p;
    memset(&p, 0, sizeof p);
    p.block_rows = 128; /* 30 x 128 doubles = 30 KB */
    check_layout(F_BDIA, &p, &A, "30 far diagonals, 128-row blocks");
    check_bdia_emulated(&p, &A, "30 far diagonals, 128-row blocks");
    ks_bdia_layout *B = NULL;
    KS_CHECK(ks_bdia_layout_build(&A, &p, (void **)&B));
    ck_assert_int_le(B->max_window * 8, KS_BDIA_MAX_SHARED_BYTES);
    ck_assert_int_eq(B->seg_ptr[B->nblocks / 2 + 1] - B->seg_ptr[B->nblocks / 2], nd);
    ks_bdia_layout_free(B);
    ks_csr_free(&A);
}
END_TEST

/* The HYB width rule: largest K with at least max(4096, nrows/3) rows of K
 * or more entries. */
START_TEST(test_hyb_width_rule)
{
    ks_csr A;
    ks_int *len = malloc(sizeof(ks_int) * 15000);
    ck_assert_ptr_nonnull(len);
    /* 9000 rows of 5, 6000 of 2: rows >= 5 = 9000 >= 5000 -> K = 5. */
    for (ks_int i = 0; i < 15000; i++)
        len[i] = i % 5 < 3 ? 5 : 2;
    sc_rng_seed(51);
    sc_build_rows(&A, 15000, 15000, len, &other_rows);
    ck_assert_int_eq(ks_hyb_auto_width(&A), 5);
    ks_hyb_layout *H = NULL;
    KS_CHECK(ks_hyb_layout_build(&A, NULL, (void **)&H));
    ck_assert_int_eq(H->width, 5);
    ck_assert_int_eq(H->coo.nnz, 0);
    ks_hyb_layout_free(H);
    ks_csr_free(&A);

    /* 13000 rows: 4000 of 10, the rest 3; max(4096, 4333) = 4333 rows
     * needed: K = 3, the 4000 long rows overflow by 7. */
    for (ks_int i = 0; i < 13000; i++)
        len[i] = i % 13 < 4 ? 10 : 3;
    sc_build_rows(&A, 13000, 13000, len, &other_rows);
    ck_assert_int_eq(ks_hyb_auto_width(&A), 3);
    KS_CHECK(ks_hyb_layout_build(&A, NULL, (void **)&H));
    ck_assert_int_eq(H->width, 3);
    ck_assert_int_eq(H->coo.nnz, 4000 * 7);
    ck_assert_int_eq(H->ell_nnz + H->coo.nnz, A.nnz);
    ks_hyb_layout_free(H);
    check_layout(F_HYB, NULL, &A, "K = 3 with overflow");
    ks_csr_free(&A);

    /* 8000 rows of 6: nrows/3 is below 4096, so 4096 rules: K = 6; with
     * 4000 rows, fewer than 4096 rows exist: K = 0 (all COO). */
    for (ks_int i = 0; i < 8000; i++)
        len[i] = 6;
    sc_build_rows(&A, 8000, 8000, len, &other_rows);
    ck_assert_int_eq(ks_hyb_auto_width(&A), 6);
    ks_csr_free(&A);
    sc_build_rows(&A, 4000, 4000, len, &other_rows);
    ck_assert_int_eq(ks_hyb_auto_width(&A), 0);
    KS_CHECK(ks_hyb_layout_build(&A, NULL, (void **)&H));
    ck_assert_int_eq(H->width, 0);
    ck_assert_int_eq(H->coo.nnz, A.nnz);
    ks_hyb_layout_free(H);
    ks_csr_free(&A);
    free(len);

    /* 30000 rows: nrows/3 = 10000 rules. 10000 rows of 9 (the rest 2)
     * reach it exactly: K = 9; 9999 rows of 9 miss it: K = 2. */
    len = malloc(sizeof(ks_int) * 30000);
    ck_assert_ptr_nonnull(len);
    for (int miss = 0; miss < 2; miss++) {
        for (ks_int i = 0; i < 30000; i++)
            len[i] = i < 10000 - miss ? 9 : 2;
        sc_build_rows(&A, 30000, 30000, len, &other_rows);
        ck_assert_int_eq(ks_hyb_auto_width(&A), miss ? 2 : 9);
        ks_csr_free(&A);
    }
    free(len);

    /* The huge row: the rule ignores it (K small), COO takes it. */
    make_huge_row(&A);
    ks_int K = ks_hyb_auto_width(&A);
    ck_assert_int_ge(K, 1);
    ck_assert_int_le(K, 3);
    check_layout(F_HYB, NULL, &A, "huge row, automatic width");
    ks_csr_free(&A);
}
END_TEST

/* Parameters are used, and bad ones are refused naming them. */
START_TEST(test_params)
{
    ks_csr R, S;
    make_case(C_RANDOM, &R);
    make_banded(&S, 3000, 61);
    ks_spmv_params p;

    /* hyb: explicit widths, including wider than any row. */
    const int widths[] = {1, 2, 5, 12, 24};
    for (int k = 0; k < 5; k++) {
        memset(&p, 0, sizeof p);
        p.ell_width = widths[k];
        p.max_fill = 100;
        ks_hyb_layout *H = NULL;
        KS_CHECK(ks_hyb_layout_build(&R, &p, (void **)&H));
        ck_assert_int_eq(H->width, widths[k]);
        ks_hyb_layout_free(H);
        check_layout(F_HYB, &p, &R, "explicit ell_width");
    }
    /* A width whose padding exceeds max_fill is refused with the size. */
    memset(&p, 0, sizeof p);
    p.ell_width = 200;
    check_refused(F_HYB, &p, &R, "ell_width 200", "max_fill 3");
    /* A small max_fill narrows the automatic width instead. */
    memset(&p, 0, sizeof p);
    ks_csr W;
    ks_int *len = malloc(sizeof(ks_int) * 15000);
    for (ks_int i = 0; i < 15000; i++)
        len[i] = i % 2 ? 8 : 2;
    sc_rng_seed(63);
    sc_build_rows(&W, 15000, 15000, len, &other_rows);
    free(len);
    ck_assert_int_eq(ks_hyb_auto_width(&W), 8);
    p.max_fill = 1.2;
    ks_hyb_layout *H = NULL;
    KS_CHECK(ks_hyb_layout_build(&W, &p, (void **)&H));
    ck_assert_int_lt(H->width, 8);
    ck_assert((double)H->width * W.nrows + H->coo.nnz <= 1.2 * W.nnz);
    ks_hyb_layout_free(H);
    ks_csr_free(&W);

    /* bdia: block_rows is the block size. */
    const int rows[] = {32, 64, 96, 512, 1024};
    for (int k = 0; k < 5; k++) {
        memset(&p, 0, sizeof p);
        p.block_rows = rows[k];
        ks_bdia_layout *B = NULL;
        KS_CHECK(ks_bdia_layout_build(&S, &p, (void **)&B));
        ck_assert_int_eq(B->block_rows, rows[k]);
        ck_assert_int_eq(B->nblocks, (S.nrows + rows[k] - 1) / rows[k]);
        ks_bdia_layout_free(B);
        check_layout(F_BDIA, &p, &S, "block_rows");
        check_bdia_emulated(&p, &S, "block_rows");
    }

    /* Bad values: KS_ERR_ARG naming the parameter, layout left NULL. */
    static const struct {
        int f;
        int ell_width, block_rows;
        double max_fill;
        const char *name;
    } bad[] = {
        {F_HYB, -1, 0, 0, "ell_width"},        {F_HYB, 0, 0, -2, "max_fill"},
        {F_HYB, 0, 0, 0.5, "max_fill"},        {F_DIA, 0, 0, -1, "max_fill"},
        {F_DIA, 0, 0, 0.25, "max_fill"},       {F_DIA, 0, 0, NAN, "max_fill"},
        {F_DIA, 0, 0, INFINITY, "max_fill"},   {F_BDIA, 0, 0, 0.9, "max_fill"},
        {F_BDIA, 0, -1, 0, "block_rows"},      {F_BDIA, 0, 7, 0, "block_rows"},
        {F_BDIA, 0, 33, 0, "block_rows"},      {F_BDIA, 0, 1000, 0, "block_rows"},
        {F_BDIA, 0, 2048, 0, "block_rows"},    {F_BDIA, 0, 16, 0, "block_rows"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&p, 0, sizeof p);
        p.ell_width = bad[k].ell_width;
        p.block_rows = bad[k].block_rows;
        p.max_fill = bad[k].max_fill;
        void *L = (void *)&p;
        ks_error e = fmts[bad[k].f].build(&S, &p, &L);
        ck_assert_msg(e == KS_ERR_ARG, "%s with bad %s gave %s", fmts[bad[k].f].name,
                      bad[k].name, ks_error_name(e));
        ck_assert_ptr_null(L);
        ck_assert_msg(strstr(ks_last_error(), bad[k].name), "message lacks %s: %s",
                      bad[k].name, ks_last_error());
    }
    /* jds and coo take no parameters: anything is ignored. */
    memset(&p, 0, sizeof p);
    p.ell_width = -5;
    p.block_rows = 7;
    p.max_fill = -1;
    p.threads_per_row = 3;
    check_layout(F_JDS, &p, &R, "ignored parameters");
    check_layout(F_COO, &p, &R, "ignored parameters");
    /* NULL arguments and invalid CSR are refused. */
    for (int f = 0; f < NFMT; f++) {
        void *L = (void *)&p;
        ck_assert_int_eq(fmts[f].build(NULL, NULL, &L), KS_ERR_ARG);
        ck_assert_int_eq(fmts[f].build(&R, NULL, NULL), KS_ERR_ARG);
        ks_int r = 3;
        while (R.rowptr[r + 1] - R.rowptr[r] < 2)
            r++;
        ks_int j0 = R.rowptr[r], t = R.colind[j0];
        R.colind[j0] = R.colind[j0 + 1];
        R.colind[j0 + 1] = t;
        L = (void *)&p;
        ck_assert_int_eq(fmts[f].build(&R, NULL, &L), KS_ERR_ARG);
        ck_assert_ptr_null(L);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), fmts[f].name));
        R.colind[j0 + 1] = R.colind[j0];
        R.colind[j0] = t;
    }
    ks_csr_free(&R);
    ks_csr_free(&S);
}
END_TEST

/* Byte counts follow the documented conventions. */
START_TEST(test_bytes)
{
    ks_csr A;
    make_case(C_RANDOM, &A);
    void *L = NULL;
    KS_CHECK(ks_coo_layout_build(&A, NULL, &L));
    ks_coo_layout *C = L;
    ks_int nempty = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        nempty += A.rowptr[i + 1] == A.rowptr[i];
    ck_assert_int_gt(nempty, 0);
    ck_assert_int_eq(C->nempty, nempty);
    double ntiles = ceil((double)A.nnz / KS_COO_TILE);
    ck_assert_double_eq_tol(ks_coo_layout_bytes(L),
                            24.0 * A.nnz + 48.0 * ntiles + 8.0 * (A.nrows - nempty) +
                                12.0 * nempty,
                            0.5);
    ks_coo_layout_free(L);
    KS_CHECK(ks_jds_layout_build(&A, NULL, &L));
    ks_jds_layout *J = L;
    ks_int longest = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        if (A.rowptr[i + 1] - A.rowptr[i] > longest)
            longest = A.rowptr[i + 1] - A.rowptr[i];
    ck_assert_int_eq(J->njd, longest);
    ck_assert_int_eq(J->jd_ptr[J->njd], A.nnz);
    ck_assert_double_eq_tol(ks_jds_layout_bytes(L),
                            20.0 * A.nnz + 12.0 * A.nrows + 4.0 * (J->njd + 1), 0.5);
    ks_jds_layout_free(L);
    ks_csr_free(&A);

    /* dia vs bdia on a 3D stencil: bdia reads each x about once per block
     * window, dia once per stored slot. */
    sc_make_gen(&A, KS_GEN_POISSON3D_7, 16);
    KS_CHECK(ks_dia_layout_build(&A, NULL, &L));
    ks_dia_layout *D = L;
    double in_range = 0;
    for (ks_int k = 0; k < D->ndiag; k++) {
        ks_int d = D->offset[k];
        in_range += A.nrows - (d < 0 ? -d : d); /* square matrix */
    }
    ck_assert_double_eq_tol(D->in_range, in_range, 0.5);
    double dia_bytes = ks_dia_layout_bytes(L);
    ck_assert_double_eq_tol(dia_bytes,
                            8.0 * 7 * A.nrows + 4.0 * 7 + 8.0 * in_range + 8.0 * A.nrows, 0.5);
    ks_dia_layout_free(L);
    KS_CHECK(ks_bdia_layout_build(&A, NULL, &L));
    ks_bdia_layout *B = L;
    ck_assert(B->window_reads < 3.0 * A.nrows);
    ck_assert(B->window_reads >= A.nrows);
    ck_assert(ks_bdia_layout_bytes(L) < dia_bytes);
    ks_bdia_layout_free(L);

    /* hyb: ELL slots + its x + y, then the COO pass. */
    ks_spmv_params p;
    memset(&p, 0, sizeof p);
    p.ell_width = 5;
    KS_CHECK(ks_hyb_layout_build(&A, &p, &L));
    ks_hyb_layout *H = L;
    ck_assert_int_gt(H->coo.nnz, 0);
    ck_assert_double_eq_tol(ks_hyb_layout_bytes(L),
                            12.0 * 5 * A.nrows + 8.0 * H->ell_nnz + 8.0 * A.nrows +
                                ks_coo_bytes(&H->coo, 1),
                            0.5);
    ks_hyb_layout_free(L);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------- shared matrices */
static const char *const shared_names[] = {"memplus.mtx.gz", "rajat01.mtx.gz",
                                           "hangGlider_2.mtx.gz"};
#define NSHARED 3

START_TEST(test_shared_host)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    for (int f = 0; f < NFMT; f++) {
        if (f == F_DIA || f == F_BDIA) {
            /* Scattered real matrices: held or refused with the estimate. */
            void *L = NULL;
            ks_error e = fmts[f].build(&A, NULL, &L);
            if (e == KS_OK) {
                fmts[f].release(L);
                check_layout(f, NULL, &A, shared_names[_i]);
            } else {
                ck_assert_msg(e == KS_ERR_UNSUPPORTED, "%s of %s: %s: %s", fmts[f].name,
                              shared_names[_i], ks_error_name(e), ks_last_error());
                ck_assert_ptr_nonnull(strstr(ks_last_error(), "max_fill"));
            }
        } else {
            check_layout(f, NULL, &A, shared_names[_i]);
        }
    }
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------------ backend */
START_TEST(test_registry)
{
#ifdef KS_HAVE_CUDA
    const ks_spmv_format_ops *ops[NFMT] = {&ks_format_jds_cuda, &ks_format_coo_cuda,
                                           &ks_format_hyb_cuda, &ks_format_dia_cuda,
                                           &ks_format_bdia_cuda};
    const char *const *names = ks_spmv_format_names("cuda");
    for (int f = 0; f < NFMT; f++) {
        ck_assert_ptr_eq(ks_spmv_format_find(fmts[f].name, KS_BACKEND_CUDA), ops[f]);
        ck_assert_str_eq(ops[f]->name, fmts[f].name);
        ck_assert_int_eq(ops[f]->backend, KS_BACKEND_CUDA);
        ck_assert_ptr_eq(ops[f]->layout_build, fmts[f].build);
        ck_assert_ptr_eq(ops[f]->layout_apply, fmts[f].apply);
        ck_assert_ptr_eq(ops[f]->layout_bytes, fmts[f].bytes);
        ck_assert_ptr_eq(ops[f]->layout_free, fmts[f].release);
        ck_assert_ptr_eq(ops[f]->layout_to_csr, fmts[f].to_csr);
        ck_assert(ops[f]->setup && ops[f]->apply && ops[f]->destroy && ops[f]->description);
        ck_assert_ptr_null(ops[f]->gs_sweep);
        int seen = 0;
        for (int i = 0; names[i]; i++)
            seen += strcmp(names[i], fmts[f].name) == 0;
        ck_assert_int_eq(seen, 1);
    }
#endif
    /* On the cpu backend every one of them is "unsupported", naming cuda,
     * compiled in or not. */
    ks_csr A;
    make_case(C_P2D, &A);
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    for (int f = 0; f < NFMT; f++) {
        ks_matrix *M = (ks_matrix *)&A;
        ck_assert_int_eq(ks_matrix_create(be, &A, fmts[f].name, NULL, &M), KS_ERR_UNSUPPORTED);
        ck_assert_ptr_null(M);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "cuda"));
    }
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

/* Format f through ks_matrix_* on the cuda backend: every alpha/beta
 * against the reference (y NaN-poisoned before beta == 0), the same bytes
 * as the host layout, and bitwise-equal repeated applies. */
static void check_cuda(ks_backend *be, int f, const ks_spmv_params *prm, const ks_csr *A,
                       const char *label)
{
    const char *fmt = fmts[f].name;
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, fmt, prm, &M);
    ck_assert_msg(e == KS_OK, "%s on cuda, %s: %s: %s", fmt, label, ks_error_name(e),
                  ks_last_error());
    void *L = NULL;
    KS_CHECK(fmts[f].build(A, prm, &L));
    ck_assert_double_eq_tol(ks_matrix_bytes_per_apply(M), fmts[f].bytes(L), 0.5);
    fmts[f].release(L);

    ks_int n = A->nrows;
    ks_vec *vx = NULL, *vy = NULL;
    KS_CHECK(ks_vec_create(be, A->ncols, &vx));
    KS_CHECK(ks_vec_create(be, n, &vy));
    double *x = sc_random_vec(A->ncols, 201);
    double *y0 = sc_random_vec(n, 202);
    double *y = malloc(sizeof(double) * ((size_t)n + 1));
    double *y2 = malloc(sizeof(double) * ((size_t)n + 1));
    double *poison = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert(y && y2 && poison);
    for (ks_int i = 0; i < n; i++)
        poison[i] = NAN;
    KS_CHECK(ks_vec_set_host(vx, x));
    for (int k = 0; k < NCOEFS; k++) {
        double a = coefs[k].alpha, b = coefs[k].beta;
        KS_CHECK(ks_vec_set_host(vy, b == 0.0 ? poison : y0));
        KS_CHECK(ks_matrix_apply(M, a, vx, b, vy));
        for (ks_int i = 0; i < n; i++)
            y[i] = NAN;
        KS_CHECK(ks_vec_get_host(vy, y));
        double err = sc_spmv_error(A, a, x, b, y0, y);
        ck_assert_msg(err <= TOL, "%s on cuda, %s, alpha %g beta %g: error %.3e", fmt, label, a,
                      b, err);
        /* The same apply again gives the same bits. */
        KS_CHECK(ks_vec_set_host(vy, b == 0.0 ? poison : y0));
        KS_CHECK(ks_matrix_apply(M, a, vx, b, vy));
        KS_CHECK(ks_vec_get_host(vy, y2));
        ck_assert_msg(memcmp(y, y2, sizeof(double) * (size_t)n) == 0,
                      "%s on cuda, %s: repeated apply (alpha %g beta %g) not bitwise equal",
                      fmt, label, a, b);
    }
    KS_CHECK(ks_backend_sync(be));
    free(x);
    free(y0);
    free(y);
    free(y2);
    free(poison);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
}

START_TEST(test_cuda_cases)
{
    ks_csr A;
    make_case(_i, &A);
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    for (int f = 0; f < NFMT; f++) {
        if (accepts(f, _i)) {
            check_cuda(be, f, NULL, &A, case_names[_i]);
        } else {
            ks_matrix *M = (ks_matrix *)&A;
            ck_assert_int_eq(ks_matrix_create(be, &A, fmts[f].name, NULL, &M),
                             KS_ERR_UNSUPPORTED);
            ck_assert_ptr_null(M);
        }
    }
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_cuda_params)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr A;
    ks_spmv_params p;
    /* hyb with both parts busy, and a row overflowing into many tiles. */
    make_case(C_TILES, &A);
    const int widths[] = {1, 3, 8, 300};
    for (int k = 0; k < 4; k++) {
        memset(&p, 0, sizeof p);
        p.ell_width = widths[k];
        p.max_fill = 1000;
        check_cuda(be, F_HYB, &p, &A, "tile edges, explicit ell_width");
    }
    ks_csr_free(&A);
    make_case(C_HUGE_ROW, &A);
    memset(&p, 0, sizeof p);
    p.ell_width = 2;
    check_cuda(be, F_HYB, &p, &A, "huge row, ell_width 2");
    ks_csr_free(&A);
    /* bdia over the block sizes, with a partial last block. */
    make_banded(&A, 3001, 71);
    const int rows[] = {32, 96, 256, 1024};
    for (int k = 0; k < 4; k++) {
        memset(&p, 0, sizeof p);
        p.block_rows = rows[k];
        check_cuda(be, F_BDIA, &p, &A, "banded, block_rows");
    }
    ks_csr_free(&A);
    sc_make_gen(&A, KS_GEN_POISSON3D_27, 17);
    check_cuda(be, F_BDIA, NULL, &A, "poisson3d_27 17^3");
    check_cuda(be, F_DIA, NULL, &A, "poisson3d_27 17^3");
    check_cuda(be, F_COO, NULL, &A, "poisson3d_27 17^3");
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(test_cuda_shared)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cuda", &be));
    for (int f = 0; f < NFMT; f++) {
        void *L = NULL;
        if (fmts[f].build(&A, NULL, &L) != KS_OK)
            continue; /* dia/bdia refusals are checked on the host */
        fmts[f].release(L);
        check_cuda(be, f, NULL, &A, shared_names[_i]);
    }
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

#ifdef _OPENMP
/* The host passes that run on all threads for large matrices (dia layout
 * with and without float32 rounding, csr float32 rounding, auto's
 * statistics) give bitwise the same result on 1 and on 3 threads; the
 * matrix is above their 200,000-entry threshold. */
START_TEST(test_layouts_thread_independent)
{
    ks_csr A;
    sc_make_gen(&A, KS_GEN_POISSON3D_7, 40);
    ck_assert_int_gt(A.nnz, 200000);
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] *= 1.0 + 0.1 * sin((double)k); /* inexact in float32 */
    const int saved = omp_get_max_threads(), teams[2] = {1, 3};
    ks_dia_layout *D[2][2] = {{NULL, NULL}, {NULL, NULL}};
    ks_csr_layout *C[2] = {NULL, NULL};
    char why[2][512];
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(teams[t]);
        for (int f = 0; f < 2; f++) {
            ks_spmv_params p;
            memset(&p, 0, sizeof p);
            p.float_values = f;
            KS_CHECK(ks_dia_layout_build(&A, &p, (void **)&D[t][f]));
        }
        ks_spmv_params p;
        memset(&p, 0, sizeof p);
        p.float_values = 1;
        KS_CHECK(ks_csr_layout_build(&A, &p, (void **)&C[t]));
        ks_spmv_format_auto_reason(&A, KS_BACKEND_CUDA, why[t], sizeof why[t]);
    }
    omp_set_num_threads(saved);
    const size_t n = (size_t)A.nrows;
    for (int f = 0; f < 2; f++) {
        ck_assert_int_eq(D[0][f]->ndiag, 7);
        ck_assert_int_eq(D[1][f]->ndiag, D[0][f]->ndiag);
        const size_t slots = (size_t)D[0][f]->ndiag * n;
        ck_assert(memcmp(D[0][f]->offset, D[1][f]->offset, sizeof(ks_int) * 7) == 0);
        ck_assert(memcmp(D[0][f]->val, D[1][f]->val, sizeof(double) * slots) == 0);
        ck_assert(memcmp(D[0][f]->present, D[1][f]->present, slots / 8 + 1) == 0);
    }
    /* the threaded build still holds exactly A (and its float32 rounding) */
    ks_csr B;
    KS_CHECK(ks_dia_layout_to_csr(D[1][0], &B));
    ck_assert_int_eq(B.nnz, A.nnz);
    ck_assert(memcmp(B.colind, A.colind, sizeof(ks_int) * (size_t)A.nnz) == 0);
    ck_assert(memcmp(B.val, A.val, sizeof(double) * (size_t)A.nnz) == 0);
    ks_csr_free(&B);
    KS_CHECK(ks_dia_layout_to_csr(D[1][1], &B));
    for (ks_int k = 0; k < A.nnz; k++)
        ck_assert(B.val[k] == (double)(float)A.val[k]);
    ks_csr_free(&B);
    ck_assert(memcmp(C[0]->valf, C[1]->valf, sizeof(float) * (size_t)A.nnz) == 0);
    for (ks_int k = 0; k < A.nnz; k++)
        ck_assert(C[1]->valf[k] == (float)A.val[k]);
    ck_assert_str_eq(why[0], why[1]);
    for (int t = 0; t < 2; t++) {
        ks_dia_layout_free(D[t][0]);
        ks_dia_layout_free(D[t][1]);
        ks_csr_layout_free(C[t]);
    }
    ks_csr_free(&A);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("spmv_other_formats");
    int have_cuda = ks_test_have_cuda();

    TCase *tc = tcase_create("layouts");
    tcase_add_loop_test(tc, test_layout_cases, 0, NCASES);
    tcase_add_test(tc, test_explicit_zeros);
    tcase_add_test(tc, test_stencil_diagonals);
    tcase_add_test(tc, test_scattered);
    tcase_add_test(tc, test_bdia_window);
    tcase_add_test(tc, test_hyb_width_rule);
    tcase_add_test(tc, test_params);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_registry);
#ifdef _OPENMP
    tcase_add_test(tc, test_layouts_thread_independent);
#else
    ks_test_skip(1, "no OpenMP: host layout passes' thread-count independence");
#endif
    suite_add_tcase(s, tc);

    tc = tcase_create("shared");
    int missing = sc_add_shared_tests(tc, shared_names, NSHARED, test_shared_host,
                                      have_cuda ? test_cuda_shared : NULL, "matrices");
    suite_add_tcase(s, tc);

    tc = tcase_create("cuda");
    if (have_cuda) {
        tcase_add_loop_test(tc, test_cuda_cases, 0, NCASES);
        tcase_add_test(tc, test_cuda_params);
    } else {
        ks_test_skip(NCASES + 1 + (NSHARED - missing),
                     "no CUDA device: jds/coo/hyb/dia/bdia kernels");
    }
    suite_add_tcase(s, tc);

    return ks_test_run(s);
}
