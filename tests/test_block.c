/* Block vectors (ks_block_*): every block kernel against the same
 * operation done column by column with ks_vec on the same backend (the
 * columns taken out with ks_block_get_col), the columns against a host
 * float64 loop, for sizes across the cpu's reduction blocks and k = 1 ..
 * KS_BLOCK_MAX_COLS; column get/set/gather/scatter and compaction; bad
 * input. The same checks on the cuda backend (skipped without a GPU). */
#include "ks_test.h"
#include "vec/vec_fused.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ks_int sizes[] = {1, 7, 1500, 5000};
static const int kcols[] = {1, 2, 3, 8, 32, KS_BLOCK_MAX_COLS};
#define NS ((int)(sizeof sizes / sizeof sizes[0]))
#define NK ((int)(sizeof kcols / sizeof kcols[0]))

static double *rand_host(size_t m)
{
    double *h = malloc((m ? m : 1) * sizeof(double));
    ck_assert(h);
    for (size_t i = 0; i < m; i++)
        h[i] = 2.0 * ks_test_urand() - 1.0;
    return h;
}

static ks_block *block_from(ks_backend *be, ks_int n, int k, const double *h)
{
    ks_block *X = NULL;
    KS_CHECK(ks_block_create(be, n, k, &X));
    KS_CHECK(ks_block_set_host(X, h));
    return X;
}

/* Column j of block X as a fresh vector on X's backend. */
static ks_vec *col(const ks_block *X, int j)
{
    ks_vec *v = NULL;
    KS_CHECK(ks_vec_create(ks_block_backend(X), ks_block_rows(X), &v));
    KS_CHECK(ks_block_get_col(X, j, v));
    return v;
}

/* Column j of X equals v to tol (relative to max(1, |v|)). */
static void expect_col(const ks_block *X, int j, const ks_vec *v, double tol, const char *what)
{
    ks_int n = ks_block_rows(X);
    ks_vec *c = col(X, j);
    double *a = malloc((size_t)(n ? n : 1) * sizeof(double));
    double *b = malloc((size_t)(n ? n : 1) * sizeof(double));
    KS_CHECK(ks_vec_get_host(c, a));
    KS_CHECK(ks_vec_get_host(v, b));
    double err = ks_test_max_relerr(a, b, n);
    ck_assert_msg(err <= tol, "%s: n %ld k %d column %d: error %g", what, (long)n,
                  ks_block_cols(X), j, err);
    free(a);
    free(b);
    ks_vec_destroy(&c);
}

/* Block kernels against column-wise ks_vec operations on backend `name`. */
static void check_kernels(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    for (int s = 0; s < NS; s++)
        for (int t = 0; t < NK; t++) {
            const ks_int n = sizes[s];
            const int k = kcols[t];
            const size_t m = (size_t)n * k;
            ks_test_rng_seed(100 + (uint64_t)(s * NK + t));
            double *hx = rand_host(m), *hy = rand_host(m), *hz = rand_host(m);
            double *hw = rand_host((size_t)n);
            double a[KS_BLOCK_MAX_COLS], b[KS_BLOCK_MAX_COLS], c[KS_BLOCK_MAX_COLS];
            for (int j = 0; j < k; j++) {
                a[j] = 0.5 + j;
                b[j] = j % 3 == 0 ? 0.0 : -0.25 * j; /* b == 0: y not read */
                c[j] = j % 2 ? 0.0 : 1.5;
            }
            ks_block *X = block_from(be, n, k, hx), *Y = block_from(be, n, k, hy);
            ks_block *Z = block_from(be, n, k, hz), *W = NULL;
            KS_CHECK(ks_block_create(be, n, k, &W));
            ks_vec *w = NULL;
            KS_CHECK(ks_vec_create(be, n, &w));
            KS_CHECK(ks_vec_set_host(w, hw));

            /* host layout: column j of hx at hx[i*k + j] */
            double *hc = malloc((size_t)n * sizeof(double) + 1);
            for (int j = 0; j < k; j++) {
                ks_vec *xj = col(X, j);
                KS_CHECK(ks_vec_get_host(xj, hc));
                for (ks_int i = 0; i < n; i++)
                    ck_assert(hc[i] == hx[(size_t)i * k + j]);
                ks_vec_destroy(&xj);
            }
            free(hc);

            /* dot and norm2 */
            double r[KS_BLOCK_MAX_COLS], r2[KS_BLOCK_MAX_COLS], r3[KS_BLOCK_MAX_COLS];
            KS_CHECK(ks_block_dot(X, Y, r));
            KS_CHECK(ks_block_dot(X, Y, r2));
            KS_CHECK(ks_block_norm2(X, r3));
            for (int j = 0; j < k; j++) {
                ks_vec *xj = col(X, j), *yj = col(Y, j);
                double d, nr, ref = 0.0;
                KS_CHECK(ks_vec_dot(xj, yj, &d));
                KS_CHECK(ks_vec_norm2(xj, &nr));
                for (ks_int i = 0; i < n; i++)
                    ref += hx[(size_t)i * k + j] * hy[(size_t)i * k + j];
                ck_assert_msg(fabs(r[j] - d) <= 1e-12 * (1.0 + fabs(d)) &&
                                  fabs(r[j] - ref) <= 1e-12 * (1.0 + n),
                              "%s dot n %ld k %d col %d: %.17g vs %.17g", name, (long)n, k, j,
                              r[j], d);
                ck_assert_msg(r[j] == r2[j], "%s dot not reproducible", name);
                ck_assert_msg(fabs(r3[j] - nr) <= 1e-12 * nr, "%s norm2 col %d: %g vs %g", name,
                              j, r3[j], nr);
                ks_vec_destroy(&xj);
                ks_vec_destroy(&yj);
            }

            /* the streaming kernels, column by column */
            ks_vec *xc[KS_BLOCK_MAX_COLS], *yc[KS_BLOCK_MAX_COLS], *zc[KS_BLOCK_MAX_COLS];
            for (int j = 0; j < k; j++) {
                xc[j] = col(X, j);
                yc[j] = col(Y, j);
                zc[j] = col(Z, j);
            }
            KS_CHECK(ks_block_axpby(a, X, b, Y));
            KS_CHECK(ks_block_axpbypcz(a, X, b, Y, c, Z));
            KS_CHECK(ks_block_pointwise_mult(w, Z, W));
            for (int j = 0; j < k; j++) {
                KS_CHECK(ks_vec_axpby(a[j], xc[j], b[j], yc[j]));
                expect_col(Y, j, yc[j], 1e-13, "axpby");
                /* z = a x + b y + c z with the new y */
                KS_CHECK(ks_vec_scale(zc[j], c[j]));
                KS_CHECK(ks_vec_axpy(a[j], xc[j], zc[j]));
                KS_CHECK(ks_vec_axpy(b[j], yc[j], zc[j]));
                expect_col(Z, j, zc[j], 1e-13, "axpbypcz");
                KS_CHECK(ks_vec_pointwise_mult(w, zc[j], xc[j]));
                expect_col(W, j, xc[j], 1e-13, "pointwise_mult");
            }
            KS_CHECK(ks_block_axpy(a, Z, Y));
            KS_CHECK(ks_block_scale(Z, b));
            for (int j = 0; j < k; j++) {
                KS_CHECK(ks_vec_axpy(a[j], zc[j], yc[j]));
                expect_col(Y, j, yc[j], 1e-13, "axpy");
                KS_CHECK(ks_vec_scale(zc[j], b[j]));
                expect_col(Z, j, zc[j], 1e-13, "scale");
            }

            /* fill, copy, set_col */
            KS_CHECK(ks_block_copy(Y, X));
            for (int j = 0; j < k; j++) { /* from here on yc[j] is Y's column exactly */
                ks_vec_destroy(&yc[j]);
                yc[j] = col(Y, j);
                expect_col(X, j, yc[j], 0.0, "copy");
            }
            KS_CHECK(ks_block_fill(Y, 2.5));
            for (int j = 0; j < k; j++) {
                KS_CHECK(ks_vec_fill(xc[j], 2.5));
                expect_col(Y, j, xc[j], 0.0, "fill");
                KS_CHECK(ks_block_set_col(Y, j, zc[j]));
            }
            for (int j = 0; j < k; j++)
                expect_col(Y, j, zc[j], 0.0, "set_col");

            /* gather, scatter, compaction: the odd columns, reversed */
            int cols[KS_BLOCK_MAX_COLS], mm = 0;
            for (int j = k - 1; j >= 0; j--)
                if (j % 2 || k == 1)
                    cols[mm++] = j;
            ks_block *G = NULL;
            KS_CHECK(ks_block_create(be, n, mm, &G));
            KS_CHECK(ks_block_gather_cols(X, mm, cols, G));
            for (int q = 0; q < mm; q++)
                expect_col(G, q, yc[cols[q]], 0.0, "gather_cols");
            KS_CHECK(ks_block_scale(G, a));
            KS_CHECK(ks_block_scatter_cols(G, mm, cols, Y));
            KS_CHECK(ks_block_keep_cols(X, mm, cols));
            ck_assert_int_eq(ks_block_cols(X), mm);
            for (int q = 0; q < mm; q++) {
                expect_col(X, q, yc[cols[q]], 0.0, "keep_cols");
                KS_CHECK(ks_vec_scale(yc[cols[q]], a[q]));
                expect_col(Y, cols[q], yc[cols[q]], 1e-13, "scatter_cols");
            }
            for (int j = 0; j < k; j++)
                if (!(j % 2 || k == 1))
                    expect_col(Y, j, zc[j], 0.0, "scatter_cols leaves other columns");

            for (int j = 0; j < k; j++) {
                ks_vec_destroy(&xc[j]);
                ks_vec_destroy(&yc[j]);
                ks_vec_destroy(&zc[j]);
            }
            ks_block_destroy(&G);
            ks_block_destroy(&X);
            ks_block_destroy(&Y);
            ks_block_destroy(&Z);
            ks_block_destroy(&W);
            ks_vec_destroy(&w);
            free(hx);
            free(hy);
            free(hz);
            free(hw);
        }
    ks_backend_destroy(&be);
}

START_TEST(kernels_cpu) { check_kernels("cpu"); }
END_TEST

START_TEST(kernels_cuda) { check_kernels("cuda"); }
END_TEST

/* m doubles of a block on the host (malloc'ed). */
static double *host_of(const ks_block *X)
{
    const size_t m = (size_t)ks_block_rows(X) * ks_block_cols(X);
    double *h = malloc((m ? m : 1) * sizeof(double));
    ck_assert(h);
    KS_CHECK(ks_block_get_host(X, h));
    return h;
}

/* ks_block_axpy_norm2 (the fused kernel where the backend has one) against
 * ks_block_axpy, then ks_block_norm2: the same bits in Y and the norms;
 * both against a host float64 loop; on the cpu each column's norm also has
 * the bits of ks_vec_axpy_norm2 on that column (the single solve's). */
static void check_axpy_norm2(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    const int cpu = strcmp(name, "cpu") == 0;
    for (int s = 0; s < NS; s++)
        for (int t = 0; t < NK; t++) {
            const ks_int n = sizes[s];
            const int k = kcols[t];
            const size_t m = (size_t)n * k;
            double *hx = rand_host(m), *hy = rand_host(m), a[KS_BLOCK_MAX_COLS];
            for (int j = 0; j < k; j++) /* a zero scalar: the column keeps its values */
                a[j] = j % 5 == 4 ? 0.0 : 2.0 * ks_test_urand() - 1.0;
            ks_block *X = block_from(be, n, k, hx), *Y1 = block_from(be, n, k, hy),
                     *Y2 = block_from(be, n, k, hy);
            double r1[KS_BLOCK_MAX_COLS], r2[KS_BLOCK_MAX_COLS];
            KS_CHECK(ks_block_axpy(a, X, Y1));
            KS_CHECK(ks_block_norm2(Y1, r1));
            KS_CHECK(ks_block_axpy_norm2(a, X, Y2, r2));
            double *y1 = host_of(Y1), *y2 = host_of(Y2);
            ck_assert_msg(memcmp(y1, y2, m * sizeof(double)) == 0,
                          "%s: n %ld k %d: Y differs from ks_block_axpy's", name, (long)n, k);
            for (int j = 0; j < k; j++) {
                ck_assert_msg(r1[j] == r2[j], "%s: n %ld k %d column %d: norm %.17g, two "
                              "calls %.17g", name, (long)n, k, j, r2[j], r1[j]);
                double ss = 0.0;
                for (ks_int i = 0; i < n; i++) {
                    const double yi = hy[(size_t)i * k + j] + a[j] * hx[(size_t)i * k + j];
                    ck_assert(fabs(y2[(size_t)i * k + j] - yi) <= 1e-15 * (1.0 + fabs(yi)));
                    ss += yi * yi;
                }
                ck_assert_msg(fabs(r2[j] - sqrt(ss)) <= 1e-13 * sqrt(ss), "%s: n %ld k %d "
                              "column %d: norm %.17g, host %.17g", name, (long)n, k, j, r2[j],
                              sqrt(ss));
                if (cpu) {
                    ks_vec *xv = col(X, j), *yv = NULL;
                    KS_CHECK(ks_vec_create(be, n, &yv));
                    for (ks_int i = 0; i < n; i++)
                        y1[i] = hy[(size_t)i * k + j];
                    KS_CHECK(ks_vec_set_host(yv, y1));
                    double rv;
                    KS_CHECK(ks_vec_axpy_norm2(a[j], xv, yv, &rv));
                    ck_assert_msg(rv == r2[j], "cpu: n %ld k %d column %d: norm %.17g, the "
                                  "vector's %.17g", (long)n, k, j, r2[j], rv);
                    expect_col(Y2, j, yv, 0.0, "axpy_norm2 column against the vector's");
                    ks_vec_destroy(&xv);
                    ks_vec_destroy(&yv);
                }
            }
            free(y1);
            free(y2);
            ks_block_destroy(&X);
            ks_block_destroy(&Y1);
            ks_block_destroy(&Y2);
            free(hx);
            free(hy);
        }

    /* Squares that overflow (column 0) or underflow (1) take the careful
     * norm; a column that becomes zero (2) has norm 0; X == Y is y *= 1 + a. */
    double hx[6] = {1e200, 1e-200, 1.0, 2e200, 1e-200, -3.0};
    double hy[6] = {0.0, 0.0, -2.0, 1e200, 1e-200, 6.0}, a[3] = {1.0, 1.0, 2.0}, r[3];
    ks_block *X = block_from(be, 2, 3, hx), *Y = block_from(be, 2, 3, hy);
    KS_CHECK(ks_block_axpy_norm2(a, X, Y, r));
    ck_assert(fabs(r[0] - sqrt(1.0 + 9.0) * 1e200) <= 1e-14 * r[0]);
    ck_assert(fabs(r[1] - sqrt(1.0 + 4.0) * 1e-200) <= 1e-14 * r[1]);
    ck_assert(r[2] == 0.0);
    KS_CHECK(ks_block_axpy_norm2(a, Y, Y, r));
    ck_assert(fabs(r[2]) == 0.0 && fabs(r[0] - 2.0 * sqrt(10.0) * 1e200) <= 1e-14 * r[0]);
    ks_block *Z = NULL;
    KS_CHECK(ks_block_create(be, 2, 2, &Z));
    ck_assert_int_eq(ks_block_axpy_norm2(a, X, Z, r), KS_ERR_SIZE);
    ck_assert_int_eq(ks_block_axpy_norm2(NULL, X, Y, r), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_axpy_norm2(a, X, Y, NULL), KS_ERR_ARG);
    ks_block_destroy(&X);
    ks_block_destroy(&Y);
    ks_block_destroy(&Z);
    ks_backend_destroy(&be);
}

START_TEST(axpy_norm2_cpu) { check_axpy_norm2("cpu"); }
END_TEST

START_TEST(axpy_norm2_cuda) { check_axpy_norm2("cuda"); }
END_TEST

/* ks_block_axpy_aypx (the fused kernel where the backend has one) against
 * ks_block_axpy, then ks_block_axpby(1, Z, b, P): the same bits in Y and P,
 * both against a host float64 loop (a zero b: P becomes Z); P, Y and Z
 * distinct and of one shape. */
static void check_axpy_aypx(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    for (int s = 0; s < NS; s++)
        for (int t = 0; t < NK; t++) {
            const ks_int n = sizes[s];
            const int k = kcols[t];
            const size_t m = (size_t)n * k;
            double *hp = rand_host(m), *hy = rand_host(m), *hz = rand_host(m);
            double a[KS_BLOCK_MAX_COLS], b[KS_BLOCK_MAX_COLS], one[KS_BLOCK_MAX_COLS];
            for (int j = 0; j < k; j++) {
                a[j] = 2.0 * ks_test_urand() - 1.0;
                b[j] = j % 4 == 3 ? 0.0 : 2.0 * ks_test_urand() - 1.0;
                one[j] = 1.0;
            }
            ks_block *P1 = block_from(be, n, k, hp), *Y1 = block_from(be, n, k, hy),
                     *P2 = block_from(be, n, k, hp), *Y2 = block_from(be, n, k, hy),
                     *Z = block_from(be, n, k, hz);
            KS_CHECK(ks_block_axpy(a, P1, Y1));
            KS_CHECK(ks_block_axpby(one, Z, b, P1));
            KS_CHECK(ks_block_axpy_aypx(a, P2, Y2, b, Z));
            double *p1 = host_of(P1), *y1 = host_of(Y1), *p2 = host_of(P2), *y2 = host_of(Y2);
            ck_assert_msg(memcmp(y1, y2, m * sizeof(double)) == 0 &&
                              memcmp(p1, p2, m * sizeof(double)) == 0,
                          "%s: n %ld k %d: Y or P differs from the two calls'", name, (long)n, k);
            for (size_t e = 0; e < m; e++) {
                const int j = (int)(e % (size_t)k);
                const double ye = hy[e] + a[j] * hp[e], pe = hz[e] + b[j] * hp[e];
                ck_assert(fabs(y2[e] - ye) <= 1e-15 * (1.0 + fabs(ye)));
                ck_assert(fabs(p2[e] - pe) <= 1e-15 * (1.0 + fabs(pe)));
            }
            free(p1);
            free(y1);
            free(p2);
            free(y2);
            ks_block_destroy(&P1);
            ks_block_destroy(&Y1);
            ks_block_destroy(&P2);
            ks_block_destroy(&Y2);
            ks_block_destroy(&Z);
            free(hp);
            free(hy);
            free(hz);
        }
    double h[6] = {1, 2, 3, 4, 5, 6}, a[3] = {1, 1, 1};
    ks_block *P = block_from(be, 2, 3, h), *Y = block_from(be, 2, 3, h), *W = NULL;
    KS_CHECK(ks_block_create(be, 2, 2, &W));
    ck_assert_int_eq(ks_block_axpy_aypx(a, P, P, a, Y), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "distinct"));
    ck_assert_int_eq(ks_block_axpy_aypx(a, P, Y, a, Y), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_axpy_aypx(a, P, Y, a, W), KS_ERR_SIZE);
    ks_block *Q = block_from(be, 2, 3, h);
    ck_assert_int_eq(ks_block_axpy_aypx(NULL, P, Y, a, Q), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_axpy_aypx(a, P, Y, NULL, Q), KS_ERR_ARG);
    KS_CHECK(ks_block_axpy_aypx(a, P, Y, a, Q));
    ks_block_destroy(&Q);
    ks_block_destroy(&P);
    ks_block_destroy(&Y);
    ks_block_destroy(&W);
    ks_backend_destroy(&be);
}

START_TEST(axpy_aypx_cpu) { check_axpy_aypx("cpu"); }
END_TEST

START_TEST(axpy_aypx_cuda) { check_axpy_aypx("cuda"); }
END_TEST

/* The norm of a column whose squares overflow or underflow. */
START_TEST(norm2_scaled)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    double h[6] = {1e200, 1e-200, 3e200, 2e-200, 0.0, 0.0};
    ks_block *X = block_from(be, 3, 2, h);
    double r[2];
    KS_CHECK(ks_block_norm2(X, r));
    ck_assert(fabs(r[0] - sqrt(1.0 + 9.0 + 0.0) * 1e200) <= 1e-14 * r[0]);
    ck_assert(fabs(r[1] - sqrt(5.0) * 1e-200) <= 1e-14 * r[1]); /* squares underflow */
    ks_block_destroy(&X);
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(errors)
{
    ks_backend *be, *be2;
    KS_CHECK(ks_backend_create("cpu", &be));
    KS_CHECK(ks_backend_create("cpu", &be2));
    ks_block *X = NULL, *Y = NULL, *Z = NULL, *V = NULL;
    ck_assert_int_eq(ks_block_create(be, 10, 0, &X), KS_ERR_ARG);
    ck_assert_ptr_null(X);
    ck_assert_int_eq(ks_block_create(be, 10, -2, &X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_create(be, 10, KS_BLOCK_MAX_COLS + 1, &X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_create(be, -1, 2, &X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_create(NULL, 10, 2, &X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_create(be, 10, 2, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_create(be, 1 << 30, 8, &X), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "ks_block_create"));
    KS_CHECK(ks_block_create(be, 10, 2, &X));
    KS_CHECK(ks_block_create(be, 10, 3, &Y));
    KS_CHECK(ks_block_create(be2, 10, 2, &Z));
    KS_CHECK(ks_block_create(be, 11, 2, &V));
    double a[3] = {1, 2, 3}, r[3];
    ck_assert_int_eq(ks_block_axpy(a, X, Y), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "shape mismatch"));
    ck_assert_int_eq(ks_block_axpy(a, X, V), KS_ERR_SIZE);
    ck_assert_int_eq(ks_block_dot(X, Z, r), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "different backend"));
    ck_assert_int_eq(ks_block_axpby(NULL, X, a, X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_dot(X, X, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_copy(X, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_set_host(X, NULL), KS_ERR_ARG);
    ks_vec *v = NULL, *v2 = NULL;
    KS_CHECK(ks_vec_create(be, 11, &v));
    KS_CHECK(ks_vec_create(be2, 10, &v2));
    ck_assert_int_eq(ks_block_get_col(X, 0, v), KS_ERR_SIZE);
    ck_assert_int_eq(ks_block_set_col(X, 0, v2), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_pointwise_mult(v, X, X), KS_ERR_SIZE);
    ks_vec_destroy(&v);
    KS_CHECK(ks_vec_create(be, 10, &v));
    ck_assert_int_eq(ks_block_get_col(X, 2, v), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_get_col(X, -1, v), KS_ERR_ARG);
    int dup[2] = {1, 1}, out[1] = {5}, ok[2] = {1, 0};
    ck_assert_int_eq(ks_block_keep_cols(X, 2, dup), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "twice"));
    ck_assert_int_eq(ks_block_keep_cols(X, 1, out), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_keep_cols(X, 0, ok), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_keep_cols(X, 3, ok), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_gather_cols(X, 2, ok, Y), KS_ERR_SIZE);
    ck_assert_int_eq(ks_block_gather_cols(X, 2, ok, X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_scatter_cols(Z, 2, ok, X), KS_ERR_ARG);
    ck_assert_int_eq(ks_block_cols(X), 2); /* refused calls changed nothing */
    ks_vec_destroy(&v);
    ks_vec_destroy(&v2);
    ks_block_destroy(&X);
    ks_block_destroy(&X); /* second destroy: no-op */
    ks_block_destroy(&Y);
    ks_block_destroy(&Z);
    ks_block_destroy(&V);
    ks_backend_destroy(&be);
    ks_backend_destroy(&be2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("block");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, kernels_cpu);
    tcase_add_test(tc, norm2_scaled);
    tcase_add_test(tc, axpy_norm2_cpu);
    tcase_add_test(tc, axpy_aypx_cpu);
    tcase_add_test(tc, errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("cuda");
    if (ks_test_have_cuda()) {
        tcase_add_test(tc, kernels_cuda);
        tcase_add_test(tc, axpy_norm2_cuda);
        tcase_add_test(tc, axpy_aypx_cuda);
    } else {
        ks_test_skip(3, "no CUDA device: cuda block kernels against column-wise vectors, the "
                        "fused block axpy and norm, and the fused axpy and aypx, against the "
                        "two calls");
    }
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
