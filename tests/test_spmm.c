/* SpMM (ks_matrix_apply_block): every format of a backend against k
 * SpMVs of the same format (ks_matrix_apply on each column) and against
 * the float64 reference, on random matrices with empty rows (square and
 * rectangular) and a 7-point stencil (so the banded formats build), for
 * k = 1, 2, 3, 8, 32 and alpha / beta pairs with beta = 0 (Y poisoned
 * with NaN: it must not be read); cuda dia's SpMM variants; the cuda csr
 * SpMM two columns a thread (KS_CSR_BLOCK_PAIR) against one, bit for bit,
 * and its choice; bad input. cpu formats run here, the cuda ones with a
 * GPU (skipped otherwise). */
#include "ks_test.h"
#include "spmv_cases.h"
#include "spmv/csr_block_pair.h"
#include "spmv/dia_spmm.h"
#include "spmv/format.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const int kcols[] = {1, 2, 3, 8, 32};
#define NK ((int)(sizeof kcols / sizeof kcols[0]))
static const sc_coef coefs[] = {{1.0, 0.0}, {-0.5, 2.0}};
#define NC 2

/* ks_matrix_apply_block_dot on X (square M): Y the SpMM's hy (alpha 1, beta
 * 0) bit for bit, whether the format fuses the dots (dia on cuda) or not,
 * Y poisoned first; dots[j] = X(:,j)'Y(:,j) to rounding. */
static void check_dots(ks_matrix *M, const ks_block *X, const double *hy, int k,
                       const char *what, const char *fmt)
{
    const ks_int n = X->n;
    const size_t m = (size_t)n * k;
    double *hx = malloc((m + 1) * sizeof(double)), *hz = malloc((m + 1) * sizeof(double));
    double dots[KS_BLOCK_MAX_COLS];
    ks_block *Z = NULL;
    KS_CHECK(ks_block_get_host(X, hx));
    for (size_t i = 0; i < m; i++)
        hz[i] = NAN;
    KS_CHECK(ks_block_create(M->be, n, k, &Z));
    KS_CHECK(ks_block_set_host(Z, hz));
    for (int j = 0; j < k; j++)
        dots[j] = NAN;
    KS_CHECK(ks_matrix_apply_block_dot(M, X, Z, dots));
    KS_CHECK(ks_block_get_host(Z, hz));
    ck_assert_msg(memcmp(hz, hy, m * sizeof(double)) == 0,
                  "%s %s k %d: Y of the SpMM with dots differs from the SpMM's", what, fmt, k);
    long double s = 0.0L;
    const int j = ks_test_col_dots_miss(hx, hy, n, k, dots, &s);
    ck_assert_msg(j < 0, "%s %s k %d column %d: dot %.17g, reference %.17Lg", what, fmt, k, j,
                  j < 0 ? 0.0 : dots[j], s);
    ks_block_destroy(&Z);
    free(hx);
    free(hz);
}

/* Y = alpha A X + beta Y0 by the format's SpMM against the format's SpMV
 * per column and the reference. Returns 0 when the format refused A. */
static int check_format_k(ks_backend *be, const char *fmt, const ks_csr *A, const char *what,
                          const ks_spmv_params *prm, const int *ks, int nk)
{
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, fmt, prm, &M);
    /* float32 values: the SpMV's own rounding, so only SpMM against SpMV */
    const int f32 = prm && prm->float_values;
    if (e == KS_ERR_UNSUPPORTED) /* the layout does not suit A (too much fill) */
        return 0;
    ck_assert_msg(e == KS_OK, "%s %s: create: %s", what, fmt, ks_last_error());
    for (int t = 0; t < nk; t++)
        for (int c = 0; c < NC; c++) {
            const int k = ks[t];
            const double alpha = coefs[c].alpha, beta = coefs[c].beta;
            const size_t mx = (size_t)A->ncols * k, my = (size_t)A->nrows * k;
            double *hx = malloc((mx + 1) * sizeof(double)), *hy0 = malloc((my + 1) * sizeof(double));
            double *hy = malloc((my + 1) * sizeof(double));
            double *xc = malloc(((size_t)A->ncols + 1) * sizeof(double));
            double *yc = malloc(((size_t)A->nrows + 1) * sizeof(double));
            double *y0c = malloc(((size_t)A->nrows + 1) * sizeof(double));
            double *yv = malloc(((size_t)A->nrows + 1) * sizeof(double));
            sc_rng_seed(7 + (uint64_t)(t * NC + c));
            for (size_t i = 0; i < mx; i++)
                hx[i] = sc_srand1();
            for (size_t i = 0; i < my; i++)
                hy0[i] = beta == 0.0 ? NAN : sc_srand1();
            ks_block *X = NULL, *Y = NULL;
            KS_CHECK(ks_block_create(be, A->ncols, k, &X));
            KS_CHECK(ks_block_create(be, A->nrows, k, &Y));
            KS_CHECK(ks_block_set_host(X, hx));
            KS_CHECK(ks_block_set_host(Y, hy0));
            KS_CHECK(ks_matrix_apply_block(M, alpha, X, beta, Y));
            KS_CHECK(ks_block_get_host(Y, hy));
            ks_vec *x = NULL, *y = NULL;
            KS_CHECK(ks_vec_create(be, A->ncols, &x));
            KS_CHECK(ks_vec_create(be, A->nrows, &y));
            for (int j = 0; j < k; j++) {
                for (ks_int i = 0; i < A->ncols; i++)
                    xc[i] = hx[(size_t)i * k + j];
                for (ks_int i = 0; i < A->nrows; i++) {
                    y0c[i] = beta == 0.0 ? 0.0 : hy0[(size_t)i * k + j];
                    yc[i] = hy[(size_t)i * k + j];
                }
                KS_CHECK(ks_vec_set_host(x, xc));
                KS_CHECK(ks_vec_set_host(y, y0c));
                KS_CHECK(ks_matrix_apply(M, alpha, x, beta, y));
                KS_CHECK(ks_vec_get_host(y, yv));
                /* the same format's SpMV: the same sums up to their order */
                double d = sc_scaled_diff(A, alpha, xc, beta, y0c, yc, yv);
                ck_assert_msg(d <= 1e-13, "%s %s k %d column %d alpha %g beta %g: SpMM vs SpMV "
                              "scaled difference %g", what, fmt, k, j, alpha, beta, d);
                double r = f32 ? 0.0 : sc_spmv_error(A, alpha, xc, beta, y0c, yc);
                ck_assert_msg(r <= 1e-13, "%s %s k %d column %d: SpMM vs reference %g", what,
                              fmt, k, j, r);
            }
            if (c == 0 && A->nrows == A->ncols)
                check_dots(M, X, hy, k, what, fmt);
            ks_vec_destroy(&x);
            ks_vec_destroy(&y);
            ks_block_destroy(&X);
            ks_block_destroy(&Y);
            free(hx);
            free(hy0);
            free(hy);
            free(xc);
            free(yc);
            free(y0c);
            free(yv);
        }
    ks_matrix_destroy(&M);
    return 1;
}

static int check_format(ks_backend *be, const char *fmt, const ks_csr *A, const char *what,
                        const ks_spmv_params *prm)
{
    return check_format_k(be, fmt, A, what, prm, kcols, NK);
}

/* Every format of backend `name` on the test matrices; each must build on
 * at least the stencil. */
static void check_backend(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    ks_csr mats[4];
    const char *what[4] = {"random 900x900", "random 700x1100", "random 1100x700", "7-point 10^3"};
    sc_make_random(&mats[0], 900, 900, 12, 31);
    sc_make_random(&mats[1], 700, 1100, 9, 32);
    sc_make_random(&mats[2], 1100, 700, 9, 33);
    sc_make_gen(&mats[3], KS_GEN_POISSON3D_7, 10);
    const char *const *names = ks_spmv_format_names(name);
    ck_assert_ptr_nonnull(names);
    for (int f = 0; names[f]; f++) {
        int built = 0;
        for (int m = 0; m < 4; m++)
            built += check_format(be, names[f], &mats[m], what[m], NULL);
        ck_assert_msg(built > 0, "format %s built on none of the test matrices", names[f]);
    }
    for (int m = 0; m < 4; m++)
        ks_csr_free(&mats[m]);
    ks_backend_destroy(&be);
}

START_TEST(spmm_cpu) { check_backend("cpu"); }
END_TEST

START_TEST(spmm_cuda) { check_backend("cuda"); }
END_TEST

/* The formats that keep float32 values, with them (csr on the cpu, csr_vector
 * and dia on cuda): SpMM against the same matrix's SpMV. */
START_TEST(spmm_float_values)
{
    const char *bes[2] = {"cpu", "cuda"};
    const int nb = ks_test_have_cuda() ? 2 : 1;
    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    prm.float_values = 1;
    ks_csr A, S;
    sc_make_random(&A, 900, 900, 12, 34);
    sc_make_gen(&S, KS_GEN_POISSON3D_7, 9);
    for (int b = 0; b < nb; b++) {
        ks_backend *be;
        KS_CHECK(ks_backend_create(bes[b], &be));
        const char *const *names = ks_spmv_format_names(bes[b]);
        for (int f = 0; names[f]; f++) {
            const ks_spmv_format_ops *o = ks_spmv_format_find(names[f], be->ops->kind);
            if (!o || !o->float_values)
                continue;
            int built = check_format(be, names[f], &A, "random float32", &prm) +
                        check_format(be, names[f], &S, "7-point float32", &prm);
            ck_assert_msg(built > 0, "%s float32: built on no matrix", names[f]);
        }
        ks_backend_destroy(&be);
    }
    ks_csr_free(&A);
    ks_csr_free(&S);
}
END_TEST

/* Variable `name` as the test found it (a copy, or NULL when unset), and
 * put back. */
static char *env_save(const char *name)
{
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static void env_restore(const char *name, char *keep)
{
    if (keep)
        setenv(name, keep, 1);
    else
        unsetenv(name);
    free(keep);
}

/* cuda dia's SpMM variants (KS_DIA_SPMM, read when a matrix is set up; the
 * tile ones also with odd tile lengths): each against the SpMV and the
 * reference, float64 and float32 values, k of every kernel instance (the
 * constants, an odd and an even run-time k, 64). max_fill high, so the
 * random matrices build too: hundreds of diagonals (chunks of loads and a
 * ragged last one), offsets out of range (rectangular), empty rows; a
 * matrix without entries (no diagonal); the 7-point 20^3 spans several
 * tiles of several steps, the last one partial. */
static const int dia_ks[] = {1, 2, 3, 4, 6, 8, 16, 32, 64};

START_TEST(spmm_dia_variants)
{
    static const char *const variants[] = {"old",    "tile",   "vec",   "vec256",
                                           "vec1024", "tile:1", "vec:100"};
    ks_backend *be;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr mats[5];
    const char *what[5] = {"random 900x900", "random 700x1100", "random 1100x700", "7-point 20^3",
                           "empty 300x200"};
    sc_make_random(&mats[0], 900, 900, 12, 35);
    sc_make_random(&mats[1], 700, 1100, 9, 36);
    sc_make_random(&mats[2], 1100, 700, 9, 37);
    sc_make_gen(&mats[3], KS_GEN_POISSON3D_7, 20);
    sc_make_empty(&mats[4], 300, 200);
    char *keep = env_save("KS_DIA_SPMM");
    char *keep_h = env_save("KS_DIA_SPMM_HOIST"), *keep_p = env_save("KS_DIA_SPMM_PREFETCH");
    char *keep_l2 = env_save("KS_DIA_SPMM_L2PF");
    /* hoist 0: the 7-point and empty matrices (at most 8 diagonals) through
     * the per-row tile kernel too */
    /* and hoisted in chunks of 8, 4 and 2 diagonals (the same sums) */
    static const char *const hoists[] = {"1", "8", "4", "2", "0"};
    for (int hoist = 0; hoist < 5; hoist++)
    for (int v = 0; v < (int)(sizeof variants / sizeof variants[0]); v++) {
        setenv("KS_DIA_SPMM_HOIST", hoists[hoist], 1);
        /* the epilogue's read before the sums (prefetch) and after, in turn;
         * the loads with the L2 prefetch (the default) and without it */
        setenv("KS_DIA_SPMM_PREFETCH", (hoist + v) % 2 ? "1" : "0", 1);
        setenv("KS_DIA_SPMM_L2PF", hoist % 2 ? "0" : "1", 1);
        setenv("KS_DIA_SPMM", variants[v], 1);
        for (int f32 = 0; f32 < 2; f32++) {
            ks_spmv_params prm;
            memset(&prm, 0, sizeof prm);
            prm.max_fill = 1e6;
            prm.float_values = f32;
            for (int m = 0; m < 5; m++) {
                char label[96];
                snprintf(label, sizeof label, "KS_DIA_SPMM=%s HOIST=%s L2PF=%d%s %s", variants[v],
                         hoists[hoist], hoist % 2 ? 0 : 1, f32 ? " float32" : "", what[m]);
                ck_assert_msg(check_format_k(be, "dia", &mats[m], label, &prm, dia_ks,
                                             (int)(sizeof dia_ks / sizeof dia_ks[0])),
                              "%s: dia refused the matrix", label);
            }
        }
    }
    /* a bad value (dia_spmm_choice has the parsing): the setup fails */
    setenv("KS_DIA_SPMM", "fast", 1);
    ks_matrix *M = NULL;
    ck_assert_int_eq(ks_matrix_create(be, &mats[3], "dia", NULL, &M), KS_ERR_ARG);
    ck_assert_ptr_null(M);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "KS_DIA_SPMM"));
    env_restore("KS_DIA_SPMM_HOIST", keep_h);
    env_restore("KS_DIA_SPMM_PREFETCH", keep_p);
    env_restore("KS_DIA_SPMM_L2PF", keep_l2);
    env_restore("KS_DIA_SPMM", keep);
    for (int m = 0; m < 5; m++)
        ks_csr_free(&mats[m]);
    ks_backend_destroy(&be);
}
END_TEST

/* KS_DIA_SPMM's parsing: names, the alias, a tile length, bad values. */
START_TEST(dia_spmm_choice)
{
    static const struct {
        const char *env;
        int variant, rows;
    } good[] = {{"", KS_DIA_SPMM_VEC1024, KS_DIA_SPMM_DEFAULT_ROWS},
                {"vec", KS_DIA_SPMM_VEC, KS_DIA_SPMM_TILE_ROWS},
                {"old", KS_DIA_SPMM_OLD, KS_DIA_SPMM_TILE_ROWS},
                {"tile", KS_DIA_SPMM_TILE, KS_DIA_SPMM_TILE_ROWS},
                {"new", KS_DIA_SPMM_VEC, KS_DIA_SPMM_TILE_ROWS},
                {"vec256:1", KS_DIA_SPMM_VEC256, 1},
                {"vec1024:16777216", KS_DIA_SPMM_VEC1024, 1 << 24},
                {"vec:8192", KS_DIA_SPMM_VEC, 8192}};
    static const char *const bad[] = {"fast", "vec:", "vec:0", "tile:12x", "old2", "ve",
                                      "vec:16777217", ":64", "vec:-4"};
    char *keep = env_save("KS_DIA_SPMM");
    ks_dia_spmm_choice c;
    unsetenv("KS_DIA_SPMM");
    KS_CHECK(ks_dia_spmm_choice_get(&c));
    ck_assert_int_eq(c.variant, KS_DIA_SPMM_VEC1024);
    ck_assert_int_eq(c.tile_rows, KS_DIA_SPMM_DEFAULT_ROWS);
    for (int g = 0; g < (int)(sizeof good / sizeof good[0]); g++) {
        setenv("KS_DIA_SPMM", good[g].env, 1);
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ck_assert_msg(c.variant == good[g].variant && c.tile_rows == good[g].rows,
                      "KS_DIA_SPMM=%s: variant %d rows %d", good[g].env, c.variant, c.tile_rows);
    }
    for (int b = 0; b < (int)(sizeof bad / sizeof bad[0]); b++) {
        setenv("KS_DIA_SPMM", bad[b], 1);
        ck_assert_int_eq(ks_dia_spmm_choice_get(&c), KS_ERR_ARG);
        ck_assert_msg(strstr(ks_last_error(), "KS_DIA_SPMM") != NULL, "%s: %s", bad[b],
                      ks_last_error());
    }
    /* the tile fitted to the largest |offset| (7-point n^3: n^2) when it is
     * longer than the default and each of nsm multiprocessors gets a tile;
     * rows named in KS_DIA_SPMM kept */
    {
        const ks_int off7[] = {-65536, -256, -1, 0, 1, 256, 65536};
        unsetenv("KS_DIA_SPMM");
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ck_assert_int_eq(c.rows_given, 0);
        ks_dia_spmm_fit_tile(&c, 16777216, off7, 7, 132);
        ck_assert_int_eq(c.tile_rows, 65536);
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ks_dia_spmm_fit_tile(&c, 132 * 65536 - 1, off7, 7, 132); /* a tile short */
        ck_assert_int_eq(c.tile_rows, KS_DIA_SPMM_DEFAULT_ROWS);
        const ks_int off_small[] = {-4096, 0, 4096}; /* within the default */
        ks_dia_spmm_fit_tile(&c, 16777216, off_small, 3, 132);
        ck_assert_int_eq(c.tile_rows, KS_DIA_SPMM_DEFAULT_ROWS);
        ks_dia_spmm_fit_tile(&c, 16777216, off7, 7, 0); /* no SM count */
        ck_assert_int_eq(c.tile_rows, KS_DIA_SPMM_DEFAULT_ROWS);
        setenv("KS_DIA_SPMM", "vec1024:16384", 1);
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ck_assert_int_eq(c.rows_given, 1);
        ks_dia_spmm_fit_tile(&c, 16777216, off7, 7, 132);
        ck_assert_int_eq(c.tile_rows, 16384);
        setenv("KS_DIA_SPMM", "vec", 1);
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ks_dia_spmm_fit_tile(&c, 16777216, off7, 7, 132);
        ck_assert_int_eq(c.tile_rows, 65536);
    }
    /* KS_DIA_SPMM_HOIST: 1 (each pass's chunk) unless set; 0 off, 2, 4, 8 a
     * chunk; anything else refused */
    unsetenv("KS_DIA_SPMM");
    unsetenv("KS_DIA_SPMM_HOIST");
    KS_CHECK(ks_dia_spmm_choice_get(&c));
    ck_assert_int_eq(c.hoist, 1);
    static const char *const given[] = {"0", "1", "2", "4", "8"};
    const int want[] = {0, 1, 2, 4, 8};
    for (int i = 0; i < 5; i++) {
        setenv("KS_DIA_SPMM_HOIST", given[i], 1);
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ck_assert_int_eq(c.hoist, want[i]);
    }
    static const char *const bad_hoist[] = {"yes", "3", "16", "-1", "4x"};
    for (int i = 0; i < 5; i++) {
        setenv("KS_DIA_SPMM_HOIST", bad_hoist[i], 1);
        ck_assert_int_eq(ks_dia_spmm_choice_get(&c), KS_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "KS_DIA_SPMM_HOIST"));
    }
    unsetenv("KS_DIA_SPMM_HOIST");
    /* KS_DIA_SPMM_PREFETCH and KS_DIA_SPMM_L2PF: the default unless set; 0
     * or 1; else refused naming the variable */
    static const struct {
        const char *name;
        int def;
        size_t at; /* the field's offset in ks_dia_spmm_choice */
    } knobs[] = {{"KS_DIA_SPMM_PREFETCH", KS_DIA_SPMM_DEFAULT_PREFETCH,
                  offsetof(ks_dia_spmm_choice, prefetch)},
                 {"KS_DIA_SPMM_L2PF", KS_DIA_SPMM_DEFAULT_L2PF, offsetof(ks_dia_spmm_choice, l2pf)}};
    static const char *const bad_bit[] = {"2", "yes", "1x"};
    for (int n = 0; n < 2; n++) {
        char *keep_n = env_save(knobs[n].name);
        const int *field = (const int *)((const char *)&c + knobs[n].at);
        unsetenv(knobs[n].name);
        KS_CHECK(ks_dia_spmm_choice_get(&c));
        ck_assert_int_eq(*field, knobs[n].def);
        for (int v = 0; v < 2; v++) {
            setenv(knobs[n].name, v ? "1" : "0", 1);
            KS_CHECK(ks_dia_spmm_choice_get(&c));
            ck_assert_int_eq(*field, v);
        }
        for (int i = 0; i < 3; i++) {
            setenv(knobs[n].name, bad_bit[i], 1);
            ck_assert_int_eq(ks_dia_spmm_choice_get(&c), KS_ERR_ARG);
            ck_assert_ptr_nonnull(strstr(ks_last_error(), knobs[n].name));
        }
        env_restore(knobs[n].name, keep_n);
    }
    env_restore("KS_DIA_SPMM", keep);
}
END_TEST

/* The cuda CSR block kernels two columns a thread (KS_CSR_BLOCK_PAIR, read
 * at setup): csr_vector (float64 and float32 values) and csr_adaptive. k
 * even runs the pair kernel, odd k (3, 5) the one-column kernel either way;
 * 6 and 10 take the run-time k / 2, 64 the largest. */
static const int pair_ks[] = {2, 4, 8, 32, 3, 5, 6, 10, 64};
#define NPAIRK ((int)(sizeof pair_ks / sizeof pair_ks[0]))

static const struct {
    const char *fmt;
    int f32;
} pair_fmts[] = {{"csr_vector", 0}, {"csr_vector", 1}, {"csr_adaptive", 0}};
#define NPAIRF ((int)(sizeof pair_fmts / sizeof pair_fmts[0]))

static ks_matrix *create_with(ks_backend *be, const ks_csr *A, const char *fmt,
                              const ks_spmv_params *prm, const char *pair)
{
    ks_matrix *M = NULL;
    setenv("KS_CSR_BLOCK_PAIR", pair, 1);
    KS_CHECK(ks_matrix_create(be, A, fmt, prm, &M));
    return M;
}

/* Y = alpha A X + beta Y0 by M's SpMM on blocks whose data start `shift`
 * doubles into their allocation (1: not 16-byte aligned, so the pair
 * kernel must give way to the one-column kernel); the result into hy. */
static void spmm_shifted(ks_matrix *M, const ks_csr *A, int k, double alpha, const double *hx,
                         double beta, const double *hy0, int shift, double *hy)
{
    ks_backend *be = M->be;
    const size_t mx = (size_t)A->ncols * k, my = (size_t)A->nrows * k;
    double *bx = calloc(mx + (size_t)k, sizeof(double)), *by = calloc(my + (size_t)k, sizeof(double));
    memcpy(bx + shift, hx, mx * sizeof(double));
    memcpy(by + shift, hy0, my * sizeof(double));
    ks_block *X = NULL, *Y = NULL;
    KS_CHECK(ks_block_create(be, A->ncols + 1, k, &X));
    KS_CHECK(ks_block_create(be, A->nrows + 1, k, &Y));
    KS_CHECK(ks_block_set_host(X, bx));
    KS_CHECK(ks_block_set_host(Y, by));
    KS_CHECK(M->ops->spmm(be, M->state, k, alpha, X->data + shift, beta, Y->data + shift));
    KS_CHECK(ks_block_get_host(Y, by));
    memcpy(hy, by + shift, my * sizeof(double));
    ks_block_destroy(&X);
    ks_block_destroy(&Y);
    free(bx);
    free(by);
}

/* Pair on against off, bit for bit (each column is summed and stored as
 * the one-column kernel does it), also with unaligned blocks; then the
 * pair kernels against k SpMVs and the reference (check_format_k). A bad
 * KS_CSR_BLOCK_PAIR fails the setup, naming the variable. */
START_TEST(spmm_csr_pair)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr mats[4];
    const char *what[4] = {"random 900x900", "random 700x1100", "random 1100x700", "7-point 10^3"};
    sc_make_random(&mats[0], 900, 900, 12, 61);
    sc_make_random(&mats[1], 700, 1100, 9, 62);
    sc_make_random(&mats[2], 1100, 700, 40, 63);
    sc_make_gen(&mats[3], KS_GEN_POISSON3D_7, 10);
    char *keep = env_save("KS_CSR_BLOCK_PAIR"), *keep_l = env_save("KS_CSR_BLOCK_LANES");
    /* the lanes chosen by the matrix (the SpMV's on these small ones), one, 32 and the
     * SpMV's: pairs equal single columns under each */
    static const char *const lanes[] = {NULL, "1", "32", "spmv"};
    for (int ln = 0; ln < 4; ln++)
    for (int f = 0; f < NPAIRF; f++)
        for (int m = 0; m < 4; m++) {
            if (lanes[ln])
                setenv("KS_CSR_BLOCK_LANES", lanes[ln], 1);
            else
                unsetenv("KS_CSR_BLOCK_LANES");
            ks_spmv_params prm;
            memset(&prm, 0, sizeof prm);
            prm.float_values = pair_fmts[f].f32;
            const ks_csr *A = &mats[m];
            ks_matrix *on = create_with(be, A, pair_fmts[f].fmt, &prm, "1");
            ks_matrix *off = create_with(be, A, pair_fmts[f].fmt, &prm, "0");
            for (int t = 0; t < NPAIRK; t++)
                for (int c = 0; c < NC; c++) {
                    const int k = pair_ks[t];
                    const double alpha = coefs[c].alpha, beta = coefs[c].beta;
                    const size_t mx = (size_t)A->ncols * k, my = (size_t)A->nrows * k;
                    double *hx = sc_random_vec((ks_int)mx, 70 + (uint64_t)t);
                    double *hy0 = sc_random_vec((ks_int)my, 80 + (uint64_t)t);
                    if (beta == 0.0)
                        for (size_t i = 0; i < my; i++)
                            hy0[i] = NAN;
                    double *y[3];
                    for (int r = 0; r < 3; r++)
                        y[r] = malloc(my * sizeof(double) + 8);
                    spmm_shifted(on, A, k, alpha, hx, beta, hy0, 0, y[0]);
                    spmm_shifted(off, A, k, alpha, hx, beta, hy0, 0, y[1]);
                    spmm_shifted(on, A, k, alpha, hx, beta, hy0, 1, y[2]);
                    for (int r = 1; r < 3; r++)
                        for (size_t e = 0; e < my; e++)
                            ck_assert_msg(memcmp(&y[0][e], &y[r][e], sizeof(double)) == 0,
                                          "%s%s %s lanes %s k %d alpha %g beta %g entry (%zu, "
                                          "%zu): pair %.17g, %s %.17g",
                                          pair_fmts[f].fmt, pair_fmts[f].f32 ? " float32" : "",
                                          lanes[ln] ? lanes[ln] : "chosen",
                                          what[m], k, alpha, beta, e / (size_t)k, e % (size_t)k,
                                          y[0][e], r == 1 ? "one column a thread" : "unaligned",
                                          y[r][e]);
                    for (int r = 0; r < 3; r++)
                        free(y[r]);
                    free(hx);
                    free(hy0);
                }
            ks_matrix_destroy(&on);
            ks_matrix_destroy(&off);
            setenv("KS_CSR_BLOCK_PAIR", "1", 1);
            char label[96];
            snprintf(label, sizeof label, "KS_CSR_BLOCK_PAIR=1 lanes %s %s",
                     lanes[ln] ? lanes[ln] : "chosen", what[m]);
            ck_assert(check_format_k(be, pair_fmts[f].fmt, A, label, &prm, pair_ks, NPAIRK));
        }
    /* a bad lane count: the SpMM refuses it, naming the variable */
    setenv("KS_CSR_BLOCK_LANES", "3", 1);
    {
        ks_matrix *M = create_with(be, &mats[0], "csr_vector", NULL, "1");
        ks_block *X = NULL, *Y = NULL;
        KS_CHECK(ks_block_create(be, 900, 2, &X));
        KS_CHECK(ks_block_create(be, 900, 2, &Y));
        KS_CHECK(ks_block_fill(X, 1.0));
        ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, X, 0.0, Y), KS_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "KS_CSR_BLOCK_LANES"));
        ks_block_destroy(&X);
        ks_block_destroy(&Y);
        ks_matrix_destroy(&M);
    }
    env_restore("KS_CSR_BLOCK_LANES", keep_l);
    static const char *const bad[] = {"2", "yes", "on", " 1", "00"};
    for (int b = 0; b < (int)(sizeof bad / sizeof bad[0]); b++)
        for (int f = 0; f < NPAIRF; f++) {
            setenv("KS_CSR_BLOCK_PAIR", bad[b], 1);
            ks_matrix *M = NULL;
            ck_assert_int_eq(ks_matrix_create(be, &mats[0], pair_fmts[f].fmt, NULL, &M),
                             KS_ERR_ARG);
            ck_assert_ptr_null(M);
            ck_assert_msg(strstr(ks_last_error(), "KS_CSR_BLOCK_PAIR") != NULL, "%s: %s",
                          bad[b], ks_last_error());
        }
    env_restore("KS_CSR_BLOCK_PAIR", keep);
    for (int m = 0; m < 4; m++)
        ks_csr_free(&mats[m]);
    ks_backend_destroy(&be);
}
END_TEST

/* KS_CSR_BLOCK_PAIR's parsing and the pair kernels' choice (plain C). */
START_TEST(csr_block_pair_choice)
{
    char *keep = env_save("KS_CSR_BLOCK_PAIR");
    int on = -1;
    unsetenv("KS_CSR_BLOCK_PAIR");
    KS_CHECK(ks_csr_block_pair_get(&on));
    ck_assert_int_eq(on, 1);
    static const struct {
        const char *env;
        int on;
    } good[] = {{"", 1}, {"1", 1}, {"0", 0}};
    for (int g = 0; g < (int)(sizeof good / sizeof good[0]); g++) {
        setenv("KS_CSR_BLOCK_PAIR", good[g].env, 1);
        on = -1;
        KS_CHECK(ks_csr_block_pair_get(&on));
        ck_assert_msg(on == good[g].on, "KS_CSR_BLOCK_PAIR=%s: %d", good[g].env, on);
    }
    static const char *const bad[] = {"2", "yes", "off", " 1", "0 ", "00", "-1", "true"};
    for (int b = 0; b < (int)(sizeof bad / sizeof bad[0]); b++) {
        setenv("KS_CSR_BLOCK_PAIR", bad[b], 1);
        on = -1;
        ck_assert_int_eq(ks_csr_block_pair_get(&on), KS_ERR_ARG);
        ck_assert_int_eq(on, 1);
        ck_assert_msg(strstr(ks_last_error(), "KS_CSR_BLOCK_PAIR") != NULL, "%s: %s", bad[b],
                      ks_last_error());
    }
    env_restore("KS_CSR_BLOCK_PAIR", keep);
    /* KS_CSR_BLOCK_LANES: the counts, or 0 (chosen) unset; bad values refused */
    char *keep_l = env_save("KS_CSR_BLOCK_LANES");
    int lanes = -1;
    unsetenv("KS_CSR_BLOCK_LANES");
    KS_CHECK(ks_csr_block_lanes_get(&lanes));
    ck_assert_int_eq(lanes, 0);
    static const char *const lgood[] = {"1", "2", "4", "8", "16", "32"};
    for (int g = 0; g < 6; g++) {
        setenv("KS_CSR_BLOCK_LANES", lgood[g], 1);
        KS_CHECK(ks_csr_block_lanes_get(&lanes));
        ck_assert_int_eq(lanes, 1 << g);
        ck_assert_int_eq(ks_csr_block_lanes_shift(lanes, 16777216, 117047296, 8, 132, 2), g);
    }
    setenv("KS_CSR_BLOCK_LANES", "spmv", 1);
    KS_CHECK(ks_csr_block_lanes_get(&lanes));
    ck_assert_int_eq(lanes, -1);
    static const char *const lbad[] = {"0", "3", "64", "x", " 4", "SPMV"};
    for (int b = 0; b < 6; b++) {
        setenv("KS_CSR_BLOCK_LANES", lbad[b], 1);
        ck_assert_int_eq(ks_csr_block_lanes_get(&lanes), KS_ERR_ARG);
        ck_assert_int_eq(lanes, 0);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "KS_CSR_BLOCK_LANES"));
    }
    env_restore("KS_CSR_BLOCK_LANES", keep_l);
    /* chosen: the 7-point 256^3 and 128^3 defaults' levels at k = 8 on 132
     * SMs (one wave: 270,336 threads): the levels that fill it one lane
     * (128^3's level 2, 2.5 waves, was 1.7x slower with 32); the smaller ones
     * their SpMV's lanes (csr_vector: 32 for rows of 65-90 entries), or
     * without them 1 doubled while under one wave with 2 entries a lane */
    static const struct {
        int lanes;
        ks_int nrows, nnz;
        int k, nsm, spmv, want;
    } lc[] = {
        {0, 5155439, 152685939, 8, 132, 8, 0},
        {0, 679082, 47384578, 8, 132, 32, 0},
        {0, 71486, 6480450, 8, 132, 32, 0},
        {0, 71486, 6480450, 8, 132, 0, 0},
        {0, 86242, 6100000, 8, 132, 32, 0},
        {0, 9529, 800000, 8, 132, 32, 5},
        {0, 8202, 732512, 8, 132, 16, 4},
        {0, 8202, 732512, 8, 132, 0, 3},
        {0, 1431, 92889, 8, 132, 0, 5},
        {0, 1000, 3000, 8, 132, 0, 0},
        {0, 1000, 8000, 8, 132, 0, 2},
        {0, 8202, 732512, 8, 0, 16, 0},
        {0, 0, 0, 8, 132, 4, 0},
        /* spmv: the SpMV's lanes on every level; the doubling where none */
        {-1, 5155439, 152685939, 8, 132, 8, 3},
        {-1, 1000, 8000, 8, 0, 0, 2},
    };
    for (size_t q = 0; q < sizeof lc / sizeof lc[0]; q++) {
        const int got = ks_csr_block_lanes_shift(lc[q].lanes, lc[q].nrows, lc[q].nnz, lc[q].k,
                                                 lc[q].nsm, lc[q].spmv);
        ck_assert_msg(got == lc[q].want, "lanes case %zu: shift %d, expected %d", q, got,
                      lc[q].want);
    }
    /* even k with the switch on and aligned blocks only */
    for (int k = 0; k <= KS_BLOCK_MAX_COLS; k++)
        for (int sw = 0; sw < 2; sw++)
            for (int al = 0; al < 2; al++)
                ck_assert_int_eq(ks_csr_block_pair_use(sw, k, al), sw && al && k > 0 && k % 2 == 0);
    /* 16-byte alignment of every non-NULL pointer */
    _Alignas(16) double buf[4];
    const void *p[3] = {buf, buf + 2, NULL};
    ck_assert_int_eq(ks_csr_block_pair_aligned(p, 3), 1);
    ck_assert_int_eq(ks_csr_block_pair_aligned(p, 0), 1);
    p[2] = buf + 1;
    ck_assert_int_eq(ks_csr_block_pair_aligned(p, 3), 0);
    ck_assert_int_eq(ks_csr_block_pair_aligned(p, 2), 1);
    p[0] = buf + 3;
    ck_assert_int_eq(ks_csr_block_pair_aligned(p, 1), 0);
}
END_TEST

START_TEST(errors)
{
    ks_backend *be, *be2;
    KS_CHECK(ks_backend_create("cpu", &be));
    KS_CHECK(ks_backend_create("cpu", &be2));
    ks_csr A;
    sc_make_random(&A, 50, 40, 5, 3);
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    ck_assert_int_eq(ks_matrix_has_spmm(M), 1);
    ks_block *X = NULL, *Y = NULL, *Y3 = NULL, *Xo = NULL, *Xs = NULL;
    KS_CHECK(ks_block_create(be, 40, 2, &X));
    KS_CHECK(ks_block_create(be, 50, 2, &Y));
    KS_CHECK(ks_block_create(be, 50, 3, &Y3));
    KS_CHECK(ks_block_create(be2, 40, 2, &Xo));
    KS_CHECK(ks_block_create(be, 50, 2, &Xs));
    KS_CHECK(ks_block_fill(X, 1.0));
    KS_CHECK(ks_matrix_apply_block(M, 1.0, X, 0.0, Y));
    ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, X, 0.0, Y3), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "columns"));
    ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, Xs, 0.0, Y), KS_ERR_SIZE);
    ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, X, 0.0, X), KS_ERR_SIZE);
    ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, Xo, 0.0, Y), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "another backend"));
    ck_assert_int_eq(ks_matrix_apply_block(NULL, 1.0, X, 0.0, Y), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, NULL, 0.0, Y), KS_ERR_ARG);
    double dots[2];
    ck_assert_int_eq(ks_matrix_apply_block_dot(M, X, Y, dots), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "not square"));
    ks_matrix_destroy(&M);
    /* a square matrix: X == Y refused */
    ks_csr S;
    sc_make_random(&S, 50, 50, 5, 4);
    KS_CHECK(ks_matrix_create(be, &S, "csr", NULL, &M));
    ck_assert_int_eq(ks_matrix_apply_block(M, 1.0, Y, 0.0, Y), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "distinct"));
    ck_assert_int_eq(ks_matrix_apply_block_dot(M, Y, Y, dots), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_apply_block_dot(M, Y, Xs, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_apply_block_dot(NULL, Y, Xs, dots), KS_ERR_ARG);
    ks_matrix_destroy(&M);
    ks_block_destroy(&X);
    ks_block_destroy(&Y);
    ks_block_destroy(&Y3);
    ks_block_destroy(&Xo);
    ks_block_destroy(&Xs);
    ks_csr_free(&A);
    ks_csr_free(&S);
    ks_backend_destroy(&be);
    ks_backend_destroy(&be2);
}
END_TEST

/* A format without SpMM falls back to k SpMVs on copied columns and says
 * so once per matrix. The cpu backend's one format has its SpMM, so the
 * test takes csr's ops without it (a format that never had one). */
static int said;
static void count_lines(const char *msg, int len, void *ctx)
{
    (void)len;
    (void)ctx;
    if (strstr(msg, "has no SpMM"))
        said++;
}

START_TEST(fallback)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    ks_csr A;
    sc_make_random(&A, 300, 250, 9, 5);
    ks_matrix *M = NULL, *F = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &F));
    static ks_spmv_format_ops nospmm;
    nospmm = *F->ops;
    nospmm.spmm = NULL;
    F->ops = &nospmm;
    ck_assert_int_eq(ks_matrix_has_spmm(F), 0);
    const int k = 5;
    double *hx = sc_random_vec(250 * k, 41), *hy = sc_random_vec(300 * k, 42);
    double *r1 = malloc(300 * k * sizeof(double)), *r2 = malloc(300 * k * sizeof(double));
    ks_block *X = NULL, *Y1 = NULL, *Y2 = NULL;
    KS_CHECK(ks_block_create(be, 250, k, &X));
    KS_CHECK(ks_block_create(be, 300, k, &Y1));
    KS_CHECK(ks_block_create(be, 300, k, &Y2));
    KS_CHECK(ks_block_set_host(X, hx));
    said = 0;
    ks_set_print_callback(count_lines, NULL);
    for (int rep = 0; rep < 2; rep++) {
        const double beta = rep ? 0.75 : 0.0;
        KS_CHECK(ks_block_set_host(Y1, hy));
        KS_CHECK(ks_block_set_host(Y2, hy));
        KS_CHECK(ks_matrix_apply_block(M, -1.5, X, beta, Y1));
        KS_CHECK(ks_matrix_apply_block(F, -1.5, X, beta, Y2));
        KS_CHECK(ks_block_get_host(Y1, r1));
        KS_CHECK(ks_block_get_host(Y2, r2));
        /* the same sums in the same order: the same bits */
        ck_assert_msg(memcmp(r1, r2, 300 * k * sizeof(double)) == 0,
                      "fallback differs from csr's SpMM (beta %g)", beta);
    }
    ks_set_print_callback(NULL, NULL);
    ck_assert_msg(said == 1, "the fallback said so %d times", said);
    ks_block_destroy(&X);
    ks_block_destroy(&Y1);
    ks_block_destroy(&Y2);
    F->ops = M->ops; /* destroy through the real ops */
    ks_matrix_destroy(&F);
    ks_matrix_destroy(&M);
    free(hx);
    free(hy);
    free(r1);
    free(r2);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spmm");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, spmm_cpu);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, fallback);
    tcase_add_test(tc, spmm_float_values);
    tcase_add_test(tc, dia_spmm_choice);
    tcase_add_test(tc, csr_block_pair_choice);
    suite_add_tcase(s, tc);
    tc = tcase_create("cuda");
    if (ks_test_have_cuda()) {
        tcase_add_test(tc, spmm_cuda);
        tcase_add_test(tc, spmm_dia_variants);
        tcase_add_test(tc, spmm_csr_pair);
    } else {
        ks_test_skip(3, "no CUDA device: SpMM of the cuda formats against k SpMVs, dia's "
                        "SpMM variants, the csr SpMM two columns a thread");
    }
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
