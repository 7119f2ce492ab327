/* Stencil generators: every kind against an independent dense reference,
 * sizes and nnz, symmetry, zero interior row sums, diagonal dominance,
 * convection nonsymmetry, parameter validation, 32-bit limits. */
#include "ks_test.h"
#include "matrices/gen_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Reference coefficient between grid points differing by (di,dj,dk);
 * *present = 0 when the stencil has no such neighbour. */
static double ref_coef(const ks_gen_params *p, int di, int dj, int dk, int *present)
{
    int nz = (di != 0) + (dj != 0) + (dk != 0);
    int axis = nz == 1; /* a face neighbour */
    *present = 1;
    switch (p->kind) {
    case KS_GEN_POISSON2D_5:
        if (dk == 0 && nz == 0)
            return 2 * (p->cx + p->cy);
        if (dk == 0 && axis)
            return di ? -p->cx : -p->cy;
        break;
    case KS_GEN_POISSON2D_9:
        if (dk == 0)
            return nz == 0 ? 8.0 : -1.0;
        break;
    case KS_GEN_POISSON3D_27:
        return nz == 0 ? 26.0 : -1.0;
    case KS_GEN_POISSON3D_7:
    case KS_GEN_ANISO3D:
        if (nz == 0)
            return 2 * (p->cx + p->cy + p->cz);
        if (axis)
            return di ? -p->cx : dj ? -p->cy : -p->cz;
        break;
    case KS_GEN_CONVDIFF3D: {
        double hx = 1.0 / (p->nx + 1), hy = 1.0 / (p->ny + 1), hz = 1.0 / (p->nz + 1);
        if (nz == 0)
            return 2 * (p->cx + p->cy + p->cz) + fabs(p->vx) * hx + fabs(p->vy) * hy +
                   fabs(p->vz) * hz;
        if (axis) {
            /* upwind: the neighbour the flow comes from gets -|v| h */
            double c = di ? p->cx : dj ? p->cy : p->cz;
            double v = di ? p->vx : dj ? p->vy : p->vz;
            double h = di ? hx : dj ? hy : hz;
            int d = di + dj + dk;
            return -c - ((v > 0 && d < 0) || (v < 0 && d > 0) ? fabs(v) * h : 0.0);
        }
        break;
    }
    }
    *present = 0;
    return 0.0;
}

static int is3d(ks_gen_kind k) { return k != KS_GEN_POISSON2D_5 && k != KS_GEN_POISSON2D_9; }

static double entry(const ks_csr *A, ks_int i, ks_int j, int *found)
{
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->colind[k] == j) {
            *found = 1;
            return A->val[k];
        }
    *found = 0;
    return 0.0;
}

/* Every pair of grid points against the reference (small grids only). */
static void compare_with_reference(const ks_gen_params *p)
{
    ks_csr A;
    KS_CHECK(ks_generate(p, &A));
    KS_CHECK(ks_csr_validate(&A));
    int nx = p->nx, ny = p->ny, nz = is3d(p->kind) ? p->nz : 1;
    ck_assert_int_eq(A.nrows, nx * ny * nz);
    ck_assert_int_eq(A.ncols, nx * ny * nz);
    long count = 0;
    for (int k = 0; k < nz; k++)
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++)
                for (int k2 = 0; k2 < nz; k2++)
                    for (int j2 = 0; j2 < ny; j2++)
                        for (int i2 = 0; i2 < nx; i2++) {
                            int di = i2 - i, dj = j2 - j, dk = k2 - k, present = 0, found;
                            double want = 0.0;
                            if (abs(di) <= 1 && abs(dj) <= 1 && abs(dk) <= 1)
                                want = ref_coef(p, di, dj, dk, &present);
                            ks_int r = i + nx * (j + ny * k), c = i2 + nx * (j2 + ny * k2);
                            double got = entry(&A, r, c, &found);
                            ck_assert_msg(found == present, "%s: (%d,%d) stored=%d expected %d",
                                          ks_gen_kind_name(p->kind), r, c, found, present);
                            ck_assert_msg(fabs(got - want) <= 1e-14 * fabs(want),
                                          "%s: A(%d,%d) = %.17g, expected %.17g",
                                          ks_gen_kind_name(p->kind), r, c, got, want);
                            count += present;
                        }
    ck_assert_int_eq(A.nnz, count);
    ks_csr_free(&A);
}

START_TEST(every_kind_matches_reference)
{
    ks_gen_params p;
    for (int kind = KS_GEN_POISSON2D_5; kind <= KS_GEN_CONVDIFF3D; kind++) {
        ks_gen_params_default(&p);
        p.kind = (ks_gen_kind)kind;
        p.nx = 4;
        p.ny = 3;
        p.nz = is3d(p.kind) ? 5 : 0; /* nz is ignored in 2D, even when 0 */
        compare_with_reference(&p);
        /* non-default coefficients and a velocity with mixed signs */
        p.cx = 0.5;
        p.cy = 3.0;
        p.cz = 1e-3;
        p.vx = 20.0;
        p.vy = -7.5;
        p.vz = 0.0;
        compare_with_reference(&p);
    }
    /* 1-point-wide grids: only the diagonal along that axis */
    ks_gen_params_default(&p);
    p.nx = 1;
    p.ny = 1;
    p.nz = 6;
    compare_with_reference(&p);
}
END_TEST

START_TEST(sizes_and_nnz)
{
    static const struct {
        ks_gen_kind kind;
        int nx, ny, nz;
        int rows, nnz;
    } cases[] = {
        {KS_GEN_POISSON2D_5, 4, 3, 1, 12, 46},        /* 12 + 2*(3*3 + 4*2) */
        {KS_GEN_POISSON2D_9, 4, 3, 7, 12, 70},        /* (3*4-2)(3*3-2) */
        {KS_GEN_POISSON3D_7, 10, 10, 10, 1000, 6400}, /* 1000 + 6*900 */
        {KS_GEN_POISSON3D_27, 10, 10, 10, 1000, 21952}, /* 28^3 */
        {KS_GEN_ANISO3D, 5, 6, 7, 210, 210 + 2 * (4 * 42 + 5 * 35 + 6 * 30)},
        {KS_GEN_CONVDIFF3D, 5, 6, 7, 210, 210 + 2 * (4 * 42 + 5 * 35 + 6 * 30)},
        {KS_GEN_POISSON3D_7, 1, 1, 1, 1, 1},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        ks_gen_params p;
        ks_gen_params_default(&p);
        p.kind = cases[t].kind;
        p.nx = cases[t].nx;
        p.ny = cases[t].ny;
        p.nz = cases[t].nz;
        ks_csr A;
        KS_CHECK(ks_generate(&p, &A));
        ck_assert_int_eq(A.nrows, cases[t].rows);
        ck_assert_int_eq(A.nnz, cases[t].nnz);
        KS_CHECK(ks_csr_validate(&A));
        ks_csr_free(&A);
    }
}
END_TEST

static int is_symmetric(const ks_csr *A)
{
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int found;
            double t = entry(A, A->colind[k], i, &found);
            if (!found || t != A->val[k])
                return 0;
        }
    return 1;
}

START_TEST(symmetry_row_sums_dominance)
{
    for (int kind = KS_GEN_POISSON2D_5; kind <= KS_GEN_CONVDIFF3D; kind++) {
        ks_gen_params p;
        ks_gen_params_default(&p);
        p.kind = (ks_gen_kind)kind;
        p.nx = 7;
        p.ny = 6;
        p.nz = 5;
        p.cx = 2.0;
        p.cz = 0.25;
        p.vx = 3.0;
        p.vy = -1.0;
        ks_csr A;
        KS_CHECK(ks_generate(&p, &A));
        int sym = is_symmetric(&A);
        ck_assert_msg(sym == (kind != KS_GEN_CONVDIFF3D), "%s: symmetric = %d",
                      ks_gen_kind_name(p.kind), sym);
        int nz = is3d(p.kind) ? p.nz : 1, interior = 0, strict = 0;
        for (int k = 0; k < nz; k++)
            for (int j = 0; j < p.ny; j++)
                for (int i = 0; i < p.nx; i++) {
                    ks_int r = i + p.nx * (j + p.ny * k);
                    double diag = 0, off = 0, sum = 0;
                    for (ks_int q = A.rowptr[r]; q < A.rowptr[r + 1]; q++) {
                        sum += A.val[q];
                        if (A.colind[q] == r)
                            diag = A.val[q];
                        else {
                            off += fabs(A.val[q]);
                            ck_assert(A.val[q] < 0); /* M-matrix sign pattern */
                        }
                    }
                    ck_assert(diag > 0);
                    ck_assert(diag >= off * (1 - 1e-15));
                    int inner = i > 0 && i < p.nx - 1 && j > 0 && j < p.ny - 1 &&
                                (nz == 1 || (k > 0 && k < nz - 1));
                    if (inner) {
                        ck_assert_msg(fabs(sum) <= 1e-13 * diag, "%s: interior row %d sums to %g",
                                      ks_gen_kind_name(p.kind), r, sum);
                        interior++;
                    } else {
                        ck_assert(diag > off); /* strict at the Dirichlet boundary */
                        strict++;
                    }
                }
        ck_assert(interior > 0 && strict > 0);
        ks_csr_free(&A);
    }
    /* Convection-diffusion without velocity is the symmetric 7-point Laplacian. */
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.vx = p.vy = p.vz = 0.0;
    ks_csr A, B;
    KS_CHECK(ks_generate(&p, &A));
    p.kind = KS_GEN_POISSON3D_7;
    KS_CHECK(ks_generate(&p, &B));
    ck_assert(is_symmetric(&A));
    ck_assert_int_eq(A.nnz, B.nnz);
    ck_assert_int_eq(memcmp(A.colind, B.colind, (size_t)A.nnz * sizeof(ks_int)), 0);
    ck_assert_int_eq(memcmp(A.val, B.val, (size_t)A.nnz * sizeof(double)), 0);
    ks_csr_free(&A);
    ks_csr_free(&B);
}
END_TEST

START_TEST(defaults_and_names)
{
    ks_gen_params p;
    memset(&p, 0x7f, sizeof p);
    ks_gen_params_default(&p);
    ck_assert_int_eq(p.kind, KS_GEN_POISSON3D_7);
    ck_assert_int_eq(p.nx, 10);
    ck_assert_int_eq(p.ny, 10);
    ck_assert_int_eq(p.nz, 10);
    ck_assert_double_eq(p.cx, 1.0);
    ck_assert_double_eq(p.cy, 1.0);
    ck_assert_double_eq(p.cz, 1.0);
    ck_assert_double_eq(p.vx, 1.0);
    ck_assert_double_eq(p.vy, 1.0);
    ck_assert_double_eq(p.vz, 1.0);
    const char *names[] = {"poisson2d_5", "poisson2d_9", "poisson3d_7",
                           "poisson3d_27", "aniso3d", "convdiff3d"};
    for (int k = 0; k < 6; k++) {
        ks_gen_kind kind;
        KS_CHECK(ks_gen_kind_from_name(names[k], &kind));
        ck_assert_int_eq(kind, k);
        ck_assert_str_eq(ks_gen_kind_name(kind), names[k]);
    }
    ks_gen_kind kind = KS_GEN_ANISO3D;
    ck_assert_int_eq(ks_gen_kind_from_name("poisson4d", &kind), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "poisson4d"));
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "convdiff3d")); /* lists the valid names */
    ck_assert_int_eq(kind, KS_GEN_ANISO3D);
    ck_assert_int_eq(ks_gen_kind_from_name(NULL, &kind), KS_ERR_ARG);
    ck_assert_str_eq(ks_gen_kind_name((ks_gen_kind)42), "unknown");
}
END_TEST

static void expect_bad(const ks_gen_params *p, ks_error code, const char *needle)
{
    ks_csr A;
    memset(&A, 0x5a, sizeof A);
    ks_error e = ks_generate(p, &A);
    ck_assert_msg(e == code, "expected %s, got %s (%s)", ks_error_name(code), ks_error_name(e),
                  ks_last_error());
    ck_assert_msg(strstr(ks_last_error(), needle) != NULL, "message '%s' lacks '%s'",
                  ks_last_error(), needle);
    ck_assert_ptr_null(A.rowptr);
}

START_TEST(bad_params)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.nx = 0;
    expect_bad(&p, KS_ERR_ARG, "grid 0 x 10 x 10");
    ks_gen_params_default(&p);
    p.ny = -3;
    expect_bad(&p, KS_ERR_ARG, "at least 1 point");
    ks_gen_params_default(&p);
    p.nz = 0;
    expect_bad(&p, KS_ERR_ARG, "poisson3d_7");
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON2D_5;
    p.ny = 0;
    expect_bad(&p, KS_ERR_ARG, "grid 10 x 0");
    ks_gen_params_default(&p);
    p.cx = 0.0;
    expect_bad(&p, KS_ERR_ARG, "cx = 0");
    ks_gen_params_default(&p);
    p.kind = KS_GEN_ANISO3D;
    p.cy = -1.0;
    expect_bad(&p, KS_ERR_ARG, "cy = -1 (expected a finite positive number)");
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.cz = NAN;
    expect_bad(&p, KS_ERR_ARG, "cz");
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.vy = INFINITY;
    expect_bad(&p, KS_ERR_ARG, "vy = inf");
    ks_gen_params_default(&p);
    p.kind = (ks_gen_kind)17;
    expect_bad(&p, KS_ERR_ARG, "unknown kind 17");
    ks_gen_params_default(&p);
    p.nx = p.ny = p.nz = 2048; /* 8.6G rows */
    expect_bad(&p, KS_ERR_SIZE, "32-bit");
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON2D_9;
    p.nx = p.ny = 20000; /* 400M rows, 3.6G nonzeros */
    expect_bad(&p, KS_ERR_SIZE, "32-bit");
    ck_assert_int_eq(ks_generate(NULL, NULL), KS_ERR_ARG);

    /* Unused parameters are not checked: 9/27-point ignore c and v,
     * the Laplacians ignore v, 2D ignores nz and cz. */
    ks_csr A;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON3D_27;
    p.nx = p.ny = p.nz = 3;
    p.cx = -1.0;
    p.vx = NAN;
    KS_CHECK(ks_generate(&p, &A));
    ks_csr_free(&A);
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON2D_5;
    p.nz = -1;
    p.cz = 0.0;
    p.vz = NAN;
    KS_CHECK(ks_generate(&p, &A));
    ks_csr_free(&A);
}
END_TEST

/* Grids whose row or nonzero counts overflow 64-bit or 32-bit products are
 * refused before any count is formed (they used to wrap, pass the size check
 * and undersize the buffers). */
START_TEST(overflowing_grids)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.nx = p.ny = 4194304; /* 2^22 * 2^22 * 2^20 = 2^64 rows: wraps to 0 */
    p.nz = 1048576;
    expect_bad(&p, KS_ERR_SIZE, "64-bit");
    ks_gen_params_default(&p);
    p.nx = p.ny = p.nz = INT32_MAX;
    expect_bad(&p, KS_ERR_SIZE, "64-bit");
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 2097152; /* 2^63 rows: one past int64 */
    expect_bad(&p, KS_ERR_SIZE, "64-bit");
    int64_t rows = 0;
    ck_assert_int_eq(ks_gen_rows_global(&p, &rows), KS_ERR_SIZE);
    /* Just below: (2^21 - 1)^3 rows fit a 64-bit count (the distributed
     * generator may use them) but not ks_int. */
    p.nx = p.ny = p.nz = 2097151;
    KS_CHECK(ks_gen_rows_global(&p, &rows));
    ck_assert(rows == (int64_t)2097151 * 2097151 * 2097151);
    expect_bad(&p, KS_ERR_SIZE, "32-bit");
    /* INT32_MAX rows fit ks_int, their 3*INT32_MAX - 2 nonzeros do not. */
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON2D_5;
    p.nx = INT32_MAX;
    p.ny = 1;
    expect_bad(&p, KS_ERR_SIZE, "nonzeros");
    p.ny = 2;
    expect_bad(&p, KS_ERR_SIZE, "rows, more than the 32-bit");
}
END_TEST

START_TEST(larger_grid_parallel_fill)
{
    /* Big enough for every OpenMP thread to fill a share; compare a few
     * rows with the reference stencil. */
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON3D_27;
    p.nx = 40;
    p.ny = 35;
    p.nz = 30;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    KS_CHECK(ks_csr_validate(&A));
    ck_assert_int_eq(A.nnz, (3 * 40 - 2) * (3 * 35 - 2) * (3 * 30 - 2));
    const ks_int rows[] = {0, 1, 40, 1400, 20000, 41999};
    for (int t = 0; t < 6; t++) {
        ks_int r = rows[t], i = r % 40, j = (r / 40) % 35, k = r / 1400;
        int n = 0;
        for (int dk = -1; dk <= 1; dk++)
            for (int dj = -1; dj <= 1; dj++)
                for (int di = -1; di <= 1; di++)
                    n += i + di >= 0 && i + di < 40 && j + dj >= 0 && j + dj < 35 &&
                         k + dk >= 0 && k + dk < 30;
        ck_assert_int_eq(A.rowptr[r + 1] - A.rowptr[r], n);
    }
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("generators");
    TCase *tc = tcase_create("generators");
    tcase_add_test(tc, every_kind_matches_reference);
    tcase_add_test(tc, sizes_and_nnz);
    tcase_add_test(tc, symmetry_row_sums_dominance);
    tcase_add_test(tc, defaults_and_names);
    tcase_add_test(tc, bad_params);
    tcase_add_test(tc, overflowing_grids);
    tcase_add_test(tc, larger_grid_parallel_fill);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
