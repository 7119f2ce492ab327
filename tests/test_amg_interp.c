/* AMG interpolation: direct (D1), extended+i (D2) and truncation.
 * Hand-checked weights on 1D/2D Laplacians, constant reproduction on
 * zero-row-sum graph Laplacians (2D/3D stencils, fixed and PMIS/HMIS
 * splittings, positive off-diagonals), truncation rules, errors,
 * independence from the thread count, and the two extended+i row builders
 * (plain and compact rows) giving the same P bit for bit. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"
#include "sparse/cpu/csr_kernels.h"
#include "amg/cpu/interp_common.h"
#include "amg/kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef ks_error (*interp_fn)(const ks_csr *, const ks_strength *, const int *, ks_csr *);

/* ------------------------------------------------------------- helpers */

/* CSR of a dense n x n matrix (zeros skipped). */
static void csr_dense(int n, const double *d, ks_csr *A)
{
    ks_int *r = malloc((size_t)n * n * sizeof *r), *c = malloc((size_t)n * n * sizeof *c);
    double *v = malloc((size_t)n * n * sizeof *v);
    int64_t ne = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (d[i * n + j] != 0.0) {
                r[ne] = i;
                c[ne] = j;
                v[ne++] = d[i * n + j];
            }
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* Explicit strength pattern from per-row lists terminated by -1. */
static void strength_lists(int n, const int *const *rows, ks_strength *S)
{
    S->n = n;
    S->rowptr = malloc(((size_t)n + 1) * sizeof *S->rowptr);
    S->rowptr[0] = 0;
    for (int i = 0; i < n; i++) {
        int m = 0;
        while (rows[i][m] >= 0)
            m++;
        S->rowptr[i + 1] = S->rowptr[i] + m;
    }
    S->colind = malloc(((size_t)S->rowptr[n] + 1) * sizeof *S->colind);
    for (int i = 0; i < n; i++)
        for (int m = 0; rows[i][m] >= 0; m++)
            S->colind[S->rowptr[i] + m] = rows[i][m];
}

static double pget(const ks_csr *P, ks_int i, ks_int c)
{
    for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++)
        if (P->colind[k] == c)
            return P->val[k];
    return 0.0;
}

static ks_int rowlen(const ks_csr *P, ks_int i)
{
    return P->rowptr[i + 1] - P->rowptr[i];
}

/* The output struct is poisoned: the builders must not read it. */
static void poison(ks_csr *P)
{
    memset(P, 0xA5, sizeof *P);
}

static uint64_t mix(uint64_t z)
{
    z += UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Graph Laplacian on an nx x ny x nz grid (nz = 1: 2D): neighbours are the
 * star (5/7-point) or the box (9/27-point); off-diagonals are -w with
 * w in [1, 1 + spread] from a hash of the edge (symmetric), a fraction
 * pos_frac of edges gets a positive +0.2 w instead; a_ii = -(row sum of the
 * off-diagonals), so every row sums to zero. */
static void grid_laplacian(int nx, int ny, int nz, int box, double spread, double pos_frac,
                           ks_csr *A)
{
    const int n = nx * ny * nz;
    const int64_t cap = (int64_t)n * 27;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    int64_t ne = 0;
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) {
                const int i = x + nx * (y + ny * z);
                double diag = 0.0;
                for (int dz = -1; dz <= 1; dz++)
                    for (int dy = -1; dy <= 1; dy++)
                        for (int dx = -1; dx <= 1; dx++) {
                            int nn = abs(dx) + abs(dy) + abs(dz);
                            if (nn == 0 || (!box && nn > 1))
                                continue;
                            int X = x + dx, Y = y + dy, Z = z + dz;
                            if (X < 0 || Y < 0 || Z < 0 || X >= nx || Y >= ny || Z >= nz)
                                continue;
                            const int j = X + nx * (Y + ny * Z);
                            uint64_t h = mix((uint64_t)(i < j ? i : j) * 1000003u +
                                             (uint64_t)(i < j ? j : i));
                            double w = 1.0 + spread * (double)(h % 1000) / 1000.0;
                            double a = ((h >> 20) % 1000) < pos_frac * 1000 ? 0.2 * w : -w;
                            r[ne] = i;
                            c[ne] = j;
                            v[ne++] = a;
                            diag -= a;
                        }
                r[ne] = i;
                c[ne] = i;
                v[ne++] = diag;
            }
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

enum { SPLIT_RED_BLACK, SPLIT_EVERY_OTHER, SPLIT_FULL, SPLIT_THIRD };

/* Deterministic C/F splittings on the grid (independent of PMIS). */
static int *split_grid(int nx, int ny, int nz, int kind)
{
    int *cf = malloc((size_t)nx * ny * nz * sizeof *cf);
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) {
                const int i = x + nx * (y + ny * z);
                int c = 0;
                switch (kind) {
                case SPLIT_RED_BLACK: c = (x + y + z) % 2 == 0; break;
                case SPLIT_EVERY_OTHER: c = i % 2 == 0; break;
                case SPLIT_FULL: c = x % 2 == 0 && y % 2 == 0 && z % 2 == 0; break;
                default: c = (x + 2 * y + 4 * z) % 3 == 0; break;
                }
                cf[i] = c ? KS_CPT : KS_FPT;
            }
    return cf;
}

/* Structure and rows of P: valid sorted CSR of n x nc; C rows are the unit
 * row of their coarse index; weights finite; with zero_rowsum every
 * nonempty F row sums to 1 (P * 1 == 1). Returns the nonempty F rows. */
static int check_interp(const ks_csr *A, const int *cf, const ks_csr *P, int zero_rowsum,
                        const char *what)
{
    const ks_int n = A->nrows;
    ks_int nc = 0;
    for (ks_int i = 0; i < n; i++)
        nc += cf[i] == KS_CPT;
    ck_assert_int_eq(P->nrows, n);
    ck_assert_int_eq(P->ncols, nc);
    KS_CHECK(ks_csr_validate(P));
    int nonempty = 0;
    ks_int cidx = 0;
    for (ks_int i = 0; i < n; i++) {
        if (cf[i] == KS_CPT) {
            ck_assert_msg(rowlen(P, i) == 1 && P->colind[P->rowptr[i]] == cidx &&
                          P->val[P->rowptr[i]] == 1.0, "%s: C row %d is not a unit row", what,
                          (int)i);
            cidx++;
            continue;
        }
        double s = 0.0;
        for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++) {
            ck_assert_msg(isfinite(P->val[k]), "%s: row %d has a non-finite weight", what,
                          (int)i);
            s += P->val[k];
        }
        if (rowlen(P, i) > 0) {
            nonempty++;
            if (zero_rowsum)
                ck_assert_msg(fabs(s - 1.0) < 1e-12, "%s: F row %d: P*1 = %.17g, expected 1",
                              what, (int)i, s);
        }
    }
    return nonempty;
}

static void strength(const ks_csr *A, double theta, ks_strength *S)
{
    KS_CHECK(ks_amg_strength_classical(A, theta, 1.0, S));
}

/* 1D Laplacian tridiag(-1, 2, -1) of size n (Dirichlet ends). */
static void laplace_1d(int n, ks_csr *A)
{
    double *d = calloc((size_t)n * n, sizeof *d);
    for (int i = 0; i < n; i++) {
        d[i * n + i] = 2.0;
        if (i > 0)
            d[i * n + i - 1] = -1.0;
        if (i + 1 < n)
            d[i * n + i + 1] = -1.0;
    }
    csr_dense(n, d, A);
    free(d);
}

/* --------------------------------------------------------- hand checks */

START_TEST(laplace1d_every_other_d1_d2)
{
    /* C at 0, 2, 4, 6: each F point sits between two C points, weights 1/2. */
    enum { N = 7 };
    ks_csr A, P;
    ks_strength S;
    laplace_1d(N, &A);
    strength(&A, 0.25, &S);
    int cf[N];
    for (int i = 0; i < N; i++)
        cf[i] = i % 2 == 0 ? KS_CPT : KS_FPT;
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        poison(&P);
        KS_CHECK(fns[f](&A, &S, cf, &P));
        ck_assert_int_eq(check_interp(&A, cf, &P, 0, f ? "D2" : "D1"), 3);
        ck_assert_int_eq(P.nnz, 4 + 3 * 2);
        for (int i = 1; i < N; i += 2) {
            ck_assert_int_eq(rowlen(&P, i), 2);
            ck_assert_double_eq_tol(pget(&P, i, i / 2), 0.5, 1e-15);
            ck_assert_double_eq_tol(pget(&P, i, i / 2 + 1), 0.5, 1e-15);
        }
        ks_csr_free(&P);
    }
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(laplace1d_every_third_d2_is_linear)
{
    /* C at 0, 3, 6, 9. F point 1: D1 sees only C point 0 (w = 1); D2 adds
     * C point 3 through F point 2, and with the "+i" term (row 2 sends half
     * of a_12 back to 1) gives linear interpolation 2/3, 1/3. Without "+i"
     * it would give 1/2, 1/2. */
    enum { N = 10 };
    ks_csr A, P1, P2;
    ks_strength S;
    laplace_1d(N, &A);
    strength(&A, 0.25, &S);
    int cf[N];
    for (int i = 0; i < N; i++)
        cf[i] = i % 3 == 0 ? KS_CPT : KS_FPT;
    KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &P1));
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P2));
    check_interp(&A, cf, &P1, 0, "D1");
    check_interp(&A, cf, &P2, 0, "D2");
    for (int i = 0; i < N; i++) {
        if (cf[i] == KS_CPT)
            continue;
        const int left = i / 3, right = i / 3 + 1;
        const int near_left = i % 3 == 1;
        ck_assert_int_eq(rowlen(&P1, i), 1);
        ck_assert_double_eq_tol(pget(&P1, i, near_left ? left : right), 1.0, 1e-15);
        ck_assert_int_eq(rowlen(&P2, i), 2);
        ck_assert_double_eq_tol(pget(&P2, i, left), near_left ? 2.0 / 3 : 1.0 / 3, 1e-15);
        ck_assert_double_eq_tol(pget(&P2, i, right), near_left ? 1.0 / 3 : 2.0 / 3, 1e-15);
    }
    ks_csr_free(&P1);
    ks_csr_free(&P2);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* 5-point Laplacian 4, -1 on an m x m grid (Dirichlet). */
static void laplace_2d(int m, ks_csr *A)
{
    const int n = m * m;
    double *d = calloc((size_t)n * n, sizeof *d);
    for (int y = 0; y < m; y++)
        for (int x = 0; x < m; x++) {
            int i = x + m * y;
            d[i * n + i] = 4.0;
            if (x > 0)
                d[i * n + i - 1] = -1.0;
            if (x + 1 < m)
                d[i * n + i + 1] = -1.0;
            if (y > 0)
                d[i * n + i - m] = -1.0;
            if (y + 1 < m)
                d[i * n + i + m] = -1.0;
        }
    csr_dense(n, d, A);
    free(d);
}

START_TEST(laplace2d_red_black)
{
    /* Red-black on 3x3: the F points (edge midpoints) have 3 strong C
     * neighbours and no F neighbours: D1 = D2 = 1/4 each (Dirichlet rows,
     * row sum 1 of 4). */
    ks_csr A, P;
    ks_strength S;
    laplace_2d(3, &A);
    strength(&A, 0.25, &S);
    int *cf = split_grid(3, 3, 1, SPLIT_RED_BLACK);
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        KS_CHECK(fns[f](&A, &S, cf, &P));
        check_interp(&A, cf, &P, 0, "2D red-black");
        ck_assert_int_eq(P.ncols, 5);
        /* point 1 = (1,0): C neighbours 0 -> col 0, 2 -> col 1, 4 -> col 2 */
        ck_assert_int_eq(rowlen(&P, 1), 3);
        for (int c = 0; c < 3; c++)
            ck_assert_double_eq_tol(pget(&P, 1, c), 0.25, 1e-15);
        ks_csr_free(&P);
    }
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(laplace2d_full_coarsening)
{
    /* 5x5, C where x and y are even (cols: (0,0)=0 (2,0)=1 (4,0)=2 (0,2)=3
     * (2,2)=4 ...). Point (1,1) has only F neighbours: D1 leaves it empty,
     * D2 interpolates bilinearly, 1/4 from each corner. Point (1,0): D1
     * gives 3/8, 3/8 (alpha = 3/2); D2 sends a_{(1,0),(1,1)} back to the
     * diagonal through row (1,1), whose only Chat U {i} coupling is i:
     * weights 1/3, 1/3. */
    ks_csr A, P1, P2;
    ks_strength S;
    laplace_2d(5, &A);
    strength(&A, 0.25, &S);
    int *cf = split_grid(5, 5, 1, SPLIT_FULL);
    KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &P1));
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P2));
    check_interp(&A, cf, &P1, 0, "D1");
    check_interp(&A, cf, &P2, 0, "D2");
    const int p11 = 1 + 5 * 1, p10 = 1;
    ck_assert_int_eq(rowlen(&P1, p11), 0);
    ck_assert_int_eq(rowlen(&P2, p11), 4);
    const int corners[4] = {0, 1, 3, 4};
    for (int q = 0; q < 4; q++)
        ck_assert_double_eq_tol(pget(&P2, p11, corners[q]), 0.25, 1e-15);
    ck_assert_int_eq(rowlen(&P1, p10), 2);
    ck_assert_double_eq_tol(pget(&P1, p10, 0), 0.375, 1e-15);
    ck_assert_double_eq_tol(pget(&P1, p10, 1), 0.375, 1e-15);
    ck_assert_int_eq(rowlen(&P2, p10), 2);
    ck_assert_double_eq_tol(pget(&P2, p10, 0), 1.0 / 3, 1e-15);
    ck_assert_double_eq_tol(pget(&P2, p10, 1), 1.0 / 3, 1e-15);
    ks_csr_free(&P1);
    ks_csr_free(&P2);
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(d2_lumps_when_no_opposite_sign_coupling)
{
    /* Point 1 (F) depends strongly on 0 (C) and 2 (F); row 2 couples only to
     * 3, so D_2 = 0 and a_12 goes to the diagonal: atil = 2 - 1 = 1, w_10 = 1.
     * Point 2 has no strong connection at all: empty row. */
    const double d[16] = {1, 0, 0, 0,
                          -1, 2, -1, 0,
                          0, 0, 1, -1,
                          0, 0, 0, 1};
    const int r0[] = {-1}, r1[] = {0, 2, -1}, r2[] = {-1}, r3[] = {-1};
    const int *rows[4] = {r0, r1, r2, r3};
    ks_csr A, P;
    ks_strength S;
    csr_dense(4, d, &A);
    strength_lists(4, rows, &S);
    int cf[4] = {KS_CPT, KS_FPT, KS_FPT, KS_CPT};
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P));
    ck_assert_int_eq(rowlen(&P, 1), 1);
    ck_assert_double_eq_tol(pget(&P, 1, 0), 1.0, 1e-15);
    ck_assert_int_eq(rowlen(&P, 2), 0); /* no strong connection: empty row */
    ks_csr_free(&P);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* Points 0, 3, 4 are C (identity rows), 1 = i and 2 = k are F, rows sum
 * to zero. Row 1: a_10 = -1, a_11 = 4, a_12 = -2, a_14 = -1, S_1 = {0,2,4};
 * row 2: a_21 = -1, a_22 = 3.5, a_23 = -3, a_24 = +0.5, S_2 = {1,3}.
 * Chat_1 = {0,4} U {3}. D_2 uses only the couplings of sign opposite to
 * a_22: {1: -1, 3: -3} (the +0.5 to 4 is left out), D_2 = -4, so a_12
 * sends -1.5 to 3 and -0.5 to the diagonal: atil = 3.5 and
 * w = (1, 1.5, 1) / 3.5 = (2/7, 3/7, 2/7). D1: alpha = 2, w = 1/2, 1/2. */
static void sign_case(double sign, ks_csr *A, ks_strength *S)
{
    const double d[25] = {1, 0, 0, 0, 0,
                          -1, 4, -2, 0, -1,
                          0, -1, 3.5, -3, 0.5,
                          0, 0, 0, 1, 0,
                          0, 0, 0, 0, 1};
    double m[25];
    for (int k = 0; k < 25; k++)
        m[k] = sign * d[k];
    const int r0[] = {-1}, r1[] = {0, 2, 4, -1}, r2[] = {1, 3, -1};
    const int *rows[5] = {r0, r1, r2, r0, r0};
    csr_dense(5, m, A);
    strength_lists(5, rows, S);
}

START_TEST(d2_sign_separation_and_negation)
{
    const int cf[5] = {KS_CPT, KS_FPT, KS_FPT, KS_CPT, KS_CPT};
    ks_csr P1[2], P2[2];
    for (int neg = 0; neg < 2; neg++) {
        ks_csr A;
        ks_strength S;
        sign_case(neg ? -1.0 : 1.0, &A, &S);
        KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &P1[neg]));
        KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P2[neg]));
        ck_assert_int_eq(rowlen(&P2[neg], 1), 3);
        ck_assert_double_eq_tol(pget(&P2[neg], 1, 0), 2.0 / 7, 1e-15);
        ck_assert_double_eq_tol(pget(&P2[neg], 1, 1), 3.0 / 7, 1e-15);
        ck_assert_double_eq_tol(pget(&P2[neg], 1, 2), 2.0 / 7, 1e-15);
        ck_assert_int_eq(rowlen(&P1[neg], 1), 2);
        ck_assert_double_eq_tol(pget(&P1[neg], 1, 0), 0.5, 1e-15);
        ck_assert_double_eq_tol(pget(&P1[neg], 1, 2), 0.5, 1e-15);
        ks_strength_free(&S);
        ks_csr_free(&A);
    }
    for (int neg = 0; neg < 2; neg++) {
        ks_csr_free(&P1[neg]);
        ks_csr_free(&P2[neg]);
    }
}
END_TEST

START_TEST(negated_matrix_same_p)
{
    /* -A (negative diagonal) with the same S gives the same P: the sign
     * rules follow a_ii / a_kk, not a fixed sign. Graph Laplacian with some
     * positive couplings, every-other splitting. */
    ks_csr A, N, P, Q;
    ks_strength S;
    grid_laplacian(9, 8, 1, 1, 1.0, 0.15, &A);
    strength(&A, 0.25, &S);
    KS_CHECK(ks_csr_copy(&A, &N));
    for (ks_int k = 0; k < N.nnz; k++)
        N.val[k] = -N.val[k];
    int *cf = split_grid(9, 8, 1, SPLIT_EVERY_OTHER);
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        KS_CHECK(fns[f](&A, &S, cf, &P));
        KS_CHECK(fns[f](&N, &S, cf, &Q));
        ck_assert_int_eq(P.nnz, Q.nnz);
        for (ks_int i = 0; i <= P.nrows; i++)
            ck_assert_int_eq(P.rowptr[i], Q.rowptr[i]);
        for (ks_int k = 0; k < P.nnz; k++) {
            ck_assert_int_eq(P.colind[k], Q.colind[k]);
            ck_assert_double_eq_tol(P.val[k], Q.val[k], 1e-14);
        }
        ks_csr_free(&P);
        ks_csr_free(&Q);
    }
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&N);
    ks_csr_free(&A);
}
END_TEST

START_TEST(d1_positive_offdiagonals_lumped)
{
    /* Row 1 = [-2, 4, -1, +1] with strong C {0, 2} (negative): no positive
     * strong C coupling, so +1 goes to the diagonal: d = 5, alpha = 1,
     * w_10 = 2/5, w_12 = 1/5. */
    const double d[16] = {1, 0, 0, 0,
                          -2, 4, -1, 1,
                          0, 0, 1, 0,
                          0, 0, 0, 1};
    const int r0[] = {-1}, r1[] = {0, 2, -1}, r2[] = {-1}, r3[] = {-1};
    const int *rows[4] = {r0, r1, r2, r3};
    ks_csr A, P;
    ks_strength S;
    csr_dense(4, d, &A);
    strength_lists(4, rows, &S);
    int cf[4] = {KS_CPT, KS_FPT, KS_CPT, KS_FPT};
    KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &P));
    ck_assert_int_eq(rowlen(&P, 1), 2);
    ck_assert_double_eq_tol(pget(&P, 1, 0), 0.4, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 1, 1), 0.2, 1e-15);
    ck_assert_int_eq(rowlen(&P, 3), 0);
    ks_csr_free(&P);
    /* With 3 a strong C point too, the positive part is interpolated from
     * it: beta = 1, w_13 = -1/4; alpha = 1: w_10 = 1/2, w_12 = 1/4. */
    ks_strength_free(&S);
    const int q1[] = {0, 2, 3, -1};
    const int *rows2[4] = {r0, q1, r2, r3};
    strength_lists(4, rows2, &S);
    cf[3] = KS_CPT;
    KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &P));
    ck_assert_int_eq(rowlen(&P, 1), 3);
    ck_assert_double_eq_tol(pget(&P, 1, 0), 0.5, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 1, 1), 0.25, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 1, 2), -0.25, 1e-15);
    ks_csr_free(&P);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* -------------------------------------------- constants, grids, stencils */

typedef struct grid_case {
    int nx, ny, nz, box;
    double spread, pos_frac, theta;
} grid_case;

static const grid_case grid_cases[] = {
    {12, 12, 1, 0, 0.0, 0.0, 0.25},  /* 2D 5-point */
    {12, 11, 1, 1, 0.0, 0.0, 0.25},  /* 2D 9-point */
    {7, 6, 5, 0, 0.0, 0.0, 0.25},    /* 3D 7-point */
    {6, 6, 5, 1, 0.0, 0.0, 0.25},    /* 3D 27-point */
    {12, 12, 1, 0, 3.0, 0.0, 0.5},   /* 2D 5-point, variable weights: weak links */
    {7, 7, 6, 1, 2.0, 0.0, 0.5},     /* 3D 27-point, variable weights */
    {11, 12, 1, 1, 1.0, 0.15, 0.25}, /* 2D 9-point with positive off-diagonals */
    {6, 7, 6, 1, 1.0, 0.1, 0.4},     /* 3D 27-point with positive off-diagonals */
};
enum { NGRID = sizeof grid_cases / sizeof grid_cases[0] };

/* D1 and D2 on one graph Laplacian and splitting: P*1 == 1, unit C rows,
 * and every F row of D2 is at least as long as in D1. */
static void constants_case(const grid_case *g, int *cf, const char *what)
{
    ks_csr A, P1, P2;
    ks_strength S;
    grid_laplacian(g->nx, g->ny, g->nz, g->box, g->spread, g->pos_frac, &A);
    strength(&A, g->theta, &S);
    poison(&P1);
    poison(&P2);
    KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &P1));
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P2));
    int ne1 = check_interp(&A, cf, &P1, 1, what);
    int ne2 = check_interp(&A, cf, &P2, 1, what);
    ck_assert_int_ge(ne2, ne1);
    ck_assert_int_gt(ne2, 0);
    for (ks_int i = 0; i < A.nrows; i++)
        if (cf[i] == KS_FPT)
            ck_assert_msg(rowlen(&P2, i) >= rowlen(&P1, i), "%s: row %d: D2 has %d entries, "
                          "D1 %d", what, (int)i, (int)rowlen(&P2, i), (int)rowlen(&P1, i));
    ks_csr_free(&P1);
    ks_csr_free(&P2);
    ks_strength_free(&S);
    ks_csr_free(&A);
}

START_TEST(constants_fixed_splittings)
{
    const grid_case *g = &grid_cases[_i];
    const int kinds[4] = {SPLIT_RED_BLACK, SPLIT_EVERY_OTHER, SPLIT_FULL, SPLIT_THIRD};
    const char *names[4] = {"red-black", "every other", "full", "thirds"};
    for (int k = 0; k < 4; k++) {
        int *cf = split_grid(g->nx, g->ny, g->nz, kinds[k]);
        char what[96];
        snprintf(what, sizeof what, "grid case %d, %s", _i, names[k]);
        constants_case(g, cf, what);
        free(cf);
    }
}
END_TEST

START_TEST(constants_pmis_hmis)
{
    const grid_case *g = &grid_cases[_i];
    ks_csr A;
    ks_strength S;
    grid_laplacian(g->nx, g->ny, g->nz, g->box, g->spread, g->pos_frac, &A);
    strength(&A, g->theta, &S);
    int *cf = malloc((size_t)A.nrows * sizeof *cf);
    for (int h = 0; h < 2; h++) {
        ks_int nc = 0;
        if (h)
            KS_CHECK(ks_amg_hmis(&S, 7, cf, &nc));
        else
            KS_CHECK(ks_amg_pmis(&S, 7, cf, &nc));
        ck_assert_int_gt(nc, 0);
        char what[96];
        snprintf(what, sizeof what, "grid case %d, %s", _i, h ? "HMIS" : "PMIS");
        constants_case(g, cf, what);
    }
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(dirichlet_poisson_pmis_rows_bounded)
{
    /* Generated 3D Poisson (Dirichlet rows: row sums >= 0): weights of an
     * M-matrix are positive and sum to at most 1. */
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON3D_27;
    gp.nx = gp.ny = gp.nz = 8;
    ks_csr A;
    ks_strength S;
    KS_CHECK(ks_generate(&gp, &A));
    strength(&A, 0.25, &S);
    int *cf = malloc((size_t)A.nrows * sizeof *cf);
    ks_int nc;
    KS_CHECK(ks_amg_pmis(&S, 1, cf, &nc));
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        ks_csr P;
        KS_CHECK(fns[f](&A, &S, cf, &P));
        check_interp(&A, cf, &P, 0, f ? "D2" : "D1");
        for (ks_int i = 0; i < A.nrows; i++) {
            double s = 0.0;
            for (ks_int k = P.rowptr[i]; k < P.rowptr[i + 1]; k++) {
                ck_assert_double_gt(P.val[k], 0.0);
                s += P.val[k];
            }
            ck_assert_double_le(s, 1.0 + 1e-12);
        }
        ks_csr_free(&P);
    }
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(isolated_f_point_empty_row)
{
    /* Point 2 has only its diagonal: F with an empty row in both. */
    const double d[9] = {2, -1, 0, -1, 2, 0, 0, 0, 3};
    ks_csr A, P;
    ks_strength S;
    csr_dense(3, d, &A);
    strength(&A, 0.25, &S);
    int cf[3] = {KS_CPT, KS_FPT, KS_FPT};
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        KS_CHECK(fns[f](&A, &S, cf, &P));
        ck_assert_int_eq(P.ncols, 1);
        ck_assert_int_eq(rowlen(&P, 2), 0);
        ck_assert_int_eq(rowlen(&P, 1), 1);
        ck_assert_double_eq_tol(pget(&P, 1, 0), 0.5, 1e-15);
        ks_csr_free(&P);
    }
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(edge_splittings)
{
    /* All C: identity; all F: n x 0 with empty rows; n = 0: 0 x 0. */
    enum { N = 6 };
    ks_csr A, P;
    ks_strength S;
    laplace_1d(N, &A);
    strength(&A, 0.25, &S);
    int cf[N];
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < N; i++)
            cf[i] = KS_CPT;
        KS_CHECK(fns[f](&A, &S, cf, &P));
        ck_assert_int_eq(P.ncols, N);
        ck_assert_int_eq(P.nnz, N);
        for (int i = 0; i < N; i++)
            ck_assert_double_eq(pget(&P, i, i), 1.0);
        ks_csr_free(&P);
        for (int i = 0; i < N; i++)
            cf[i] = KS_FPT;
        KS_CHECK(fns[f](&A, &S, cf, &P));
        ck_assert_int_eq(P.ncols, 0);
        ck_assert_int_eq(P.nnz, 0);
        KS_CHECK(ks_csr_validate(&P));
        KS_CHECK(ks_amg_interp_truncate(&P, 2, 0.1));
        ks_csr_free(&P);
    }
    ks_strength_free(&S);
    ks_csr_free(&A);

    ks_csr E;
    KS_CHECK(ks_csr_from_coo(0, 0, 0, NULL, NULL, NULL, &E, NULL));
    ks_strength SE = {0, NULL, NULL};
    SE.rowptr = calloc(1, sizeof *SE.rowptr);
    for (int f = 0; f < 2; f++) {
        poison(&P);
        KS_CHECK(fns[f](&E, &SE, cf, &P));
        ck_assert_int_eq(P.nrows, 0);
        ck_assert_int_eq(P.ncols, 0);
        ck_assert_int_eq(P.nnz, 0);
        KS_CHECK(ks_amg_interp_truncate(&P, 2, 0.1));
        ks_csr_free(&P);
    }
    ks_strength_free(&SE);
    ks_csr_free(&E);
}
END_TEST

/* ------------------------------------------------------------- errors */

START_TEST(zero_diagonal_error)
{
    /* 1D Laplacian of 12 points with a_33 = a_99 = 0 (both F): the message
     * names the first. */
    enum { N = 12 };
    double *d = calloc(N * N, sizeof *d);
    for (int i = 0; i < N; i++) {
        d[i * N + i] = (i == 3 || i == 9) ? 0.0 : 2.0;
        if (i > 0)
            d[i * N + i - 1] = -1.0;
        if (i + 1 < N)
            d[i * N + i + 1] = -1.0;
    }
    ks_csr A, P;
    ks_strength S;
    csr_dense(N, d, &A);
    free(d);
    /* Explicit strength: every neighbour (A's rows 3, 9 have no diagonal). */
    S.n = N;
    S.rowptr = malloc((N + 1) * sizeof *S.rowptr);
    S.colind = malloc(2 * N * sizeof *S.colind);
    S.rowptr[0] = 0;
    for (int i = 0, k = 0; i < N; i++) {
        if (i > 0)
            S.colind[k++] = i - 1;
        if (i + 1 < N)
            S.colind[k++] = i + 1;
        S.rowptr[i + 1] = k;
    }
    int cf[N];
    for (int i = 0; i < N; i++)
        cf[i] = i % 2 == 0 ? KS_CPT : KS_FPT;
    interp_fn fns[2] = {ks_amg_interp_direct, ks_amg_interp_extended_i};
    for (int f = 0; f < 2; f++) {
        poison(&P);
        ks_error e = fns[f](&A, &S, cf, &P);
        ck_assert_int_eq(e, KS_ERR_NUMERIC);
        ck_assert_msg(strstr(ks_last_error(), "zero diagonal at row 3") != NULL, "message: %s",
                      ks_last_error());
        ck_assert_ptr_null(P.rowptr);
        ck_assert_ptr_null(P.colind);
        ks_csr_free(&P);
    }
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(bad_arguments)
{
    ks_csr A, P;
    ks_strength S;
    laplace_1d(5, &A);
    strength(&A, 0.25, &S);
    int cf[5] = {KS_CPT, KS_FPT, KS_UNDECIDED, KS_FPT, KS_CPT};
    ck_assert_int_eq(ks_amg_interp_direct(&A, &S, cf, &P), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "ks_amg_interp_direct"));
    cf[2] = KS_CPT;
    ck_assert_int_eq(ks_amg_interp_extended_i(NULL, &S, cf, &P), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_interp_extended_i(&A, &S, NULL, &P), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_interp_extended_i(&A, &S, cf, NULL), KS_ERR_ARG);
    S.n = 4;
    ck_assert_int_eq(ks_amg_interp_extended_i(&A, &S, cf, &P), KS_ERR_SIZE);
    S.n = 5;
    /* A strength column out of range is caught, not read. */
    ks_int saved = S.colind[0];
    S.colind[0] = 99;
    ck_assert_int_eq(ks_amg_interp_extended_i(&A, &S, cf, &P), KS_ERR_ARG);
    S.colind[0] = saved;
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P));
    ks_csr_free(&P);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* ---------------------------------------------------------- truncation */

/* P from explicit rows (cols sorted), ncols given. */
static void p_rows(int n, int ncols, const int *len, const int *col, const double *val, ks_csr *P)
{
    int nnz = 0;
    for (int i = 0; i < n; i++)
        nnz += len[i];
    KS_CHECK(ks_csr_alloc(P, n, ncols, nnz));
    P->rowptr[0] = 0;
    for (int i = 0; i < n; i++)
        P->rowptr[i + 1] = P->rowptr[i] + len[i];
    for (int k = 0; k < nnz; k++) {
        P->colind[k] = col[k];
        P->val[k] = val[k];
    }
}

START_TEST(truncate_hand_rows)
{
    /* row 0: 0.5 0.3 0.1 0.05 0.05   row 1: unit   row 2: empty
     * row 3: four ties 0.25          row 4: 0.6 -0.2 0.6
     * row 5: 1 -1 0.1 (kept sum 0 with max 2: unscaled) */
    const int len[6] = {5, 1, 0, 4, 3, 3};
    const int col[] = {0, 1, 2, 3, 4, 2, 0, 1, 2, 3, 0, 2, 4, 1, 2, 3};
    const double val[] = {0.5, 0.3, 0.1, 0.05, 0.05, 1.0, 0.25, 0.25, 0.25, 0.25,
                          0.6, -0.2, 0.6, 1.0, -1.0, 0.1};
    ks_csr P;
    p_rows(6, 5, len, col, val, &P);
    KS_CHECK(ks_amg_interp_truncate(&P, 2, 0.0));
    KS_CHECK(ks_csr_validate(&P));
    const int want_len[6] = {2, 1, 0, 2, 2, 2};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(rowlen(&P, i), want_len[i]);
    ck_assert_int_eq(P.nnz, 9);
    ck_assert_double_eq_tol(pget(&P, 0, 0), 0.625, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 0, 1), 0.375, 1e-15);
    ck_assert_double_eq(pget(&P, 1, 2), 1.0);
    ck_assert_double_eq_tol(pget(&P, 3, 0), 0.5, 1e-15); /* ties: lowest columns */
    ck_assert_double_eq_tol(pget(&P, 3, 1), 0.5, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 4, 0), 0.5, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 4, 4), 0.5, 1e-15);
    ck_assert_double_eq(pget(&P, 5, 1), 1.0);
    ck_assert_double_eq(pget(&P, 5, 2), -1.0);
    ks_csr_free(&P);

    /* Factor only: 0.15 * 0.5 = 0.075 keeps 0.5 0.3 0.1, scaled by 1/0.9;
     * row 4: 0.2 >= 0.09 kept, nothing changes. */
    p_rows(6, 5, len, col, val, &P);
    KS_CHECK(ks_amg_interp_truncate(&P, 0, 0.15));
    ck_assert_int_eq(rowlen(&P, 0), 3);
    ck_assert_double_eq_tol(pget(&P, 0, 2), 0.1 / 0.9, 1e-15);
    ck_assert_double_eq_tol(pget(&P, 0, 0), 0.5 / 0.9, 1e-15);
    ck_assert_int_eq(rowlen(&P, 3), 4);
    ck_assert_int_eq(rowlen(&P, 4), 3);
    ck_assert_double_eq(pget(&P, 4, 2), -0.2);
    ck_assert_int_eq(rowlen(&P, 5), 2); /* 0.1 < 0.15: sum 0.1 over kept sum 0 */
    ck_assert_double_eq(pget(&P, 5, 1), 1.0);
    KS_CHECK(ks_csr_validate(&P));
    ks_csr_free(&P);

    /* Both: factor 0.7 cuts row 0 to 0.5 alone and row 4 to the two 0.6;
     * it keeps all four ties of row 3, of which max 3 keeps columns 0..2. */
    p_rows(6, 5, len, col, val, &P);
    KS_CHECK(ks_amg_interp_truncate(&P, 3, 0.7));
    ck_assert_int_eq(rowlen(&P, 0), 1);
    ck_assert_double_eq_tol(pget(&P, 0, 0), 1.0, 1e-15);
    ck_assert_int_eq(rowlen(&P, 3), 3);
    ck_assert_double_eq_tol(pget(&P, 3, 2), 1.0 / 3, 1e-15);
    ck_assert_double_eq(pget(&P, 3, 3), 0.0);
    ck_assert_int_eq(rowlen(&P, 4), 2);
    ck_assert_double_eq_tol(pget(&P, 4, 4), 0.5, 1e-15);
    KS_CHECK(ks_csr_validate(&P));
    ks_csr_free(&P);

    /* Both 0: no-op; bad arguments rejected and P untouched. */
    p_rows(6, 5, len, col, val, &P);
    KS_CHECK(ks_amg_interp_truncate(&P, 0, 0.0));
    ck_assert_int_eq(P.nnz, 16);
    ck_assert_int_eq(ks_amg_interp_truncate(&P, -1, 0.0), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_interp_truncate(&P, 2, 1.5), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_interp_truncate(&P, 2, NAN), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_interp_truncate(NULL, 2, 0.1), KS_ERR_ARG);
    ck_assert_int_eq(P.nnz, 16);
    for (int k = 0; k < 16; k++)
        ck_assert_double_eq(P.val[k], val[k]);
    ks_csr_free(&P);
}
END_TEST

START_TEST(truncate_d2_grid)
{
    /* D2 on a 3D 27-point graph Laplacian with PMIS: rows grow long;
     * truncation must respect the caps, keep row sums (1), and keep exactly
     * the entries the factor rule says, scaled uniformly. */
    ks_csr A, P, Q;
    ks_strength S;
    grid_laplacian(8, 8, 7, 1, 2.0, 0.0, &A);
    strength(&A, 0.25, &S);
    int *cf = malloc((size_t)A.nrows * sizeof *cf);
    ks_int nc;
    KS_CHECK(ks_amg_pmis(&S, 3, cf, &nc));
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P));
    ks_int longest = 0;
    for (ks_int i = 0; i < P.nrows; i++)
        longest = rowlen(&P, i) > longest ? rowlen(&P, i) : longest;
    ck_assert_int_gt(longest, 4);

    for (int mode = 0; mode < 2; mode++) {
        KS_CHECK(ks_csr_copy(&P, &Q));
        const int maxe = mode == 0 ? 4 : 0;
        const double fac = mode == 0 ? 0.0 : 0.3;
        KS_CHECK(ks_amg_interp_truncate(&Q, maxe, fac));
        check_interp(&A, cf, &Q, 1, mode == 0 ? "max 4" : "factor 0.3");
        ck_assert_int_lt(Q.nnz, P.nnz);
        for (ks_int i = 0; i < P.nrows; i++) {
            if (maxe)
                ck_assert_int_le(rowlen(&Q, i), maxe);
            /* Row sums kept (all rows here sum to 1 or are empty). */
            ck_assert_int_eq(rowlen(&Q, i) > 0, rowlen(&P, i) > 0);
            if (fac > 0) {
                double mx = 0, s = 0, ks = 0;
                for (ks_int k = P.rowptr[i]; k < P.rowptr[i + 1]; k++) {
                    mx = fmax(mx, fabs(P.val[k]));
                    s += P.val[k];
                }
                ks_int q = Q.rowptr[i];
                for (ks_int k = P.rowptr[i]; k < P.rowptr[i + 1]; k++)
                    if (fabs(P.val[k]) >= fac * mx) {
                        ck_assert_int_lt(q, Q.rowptr[i + 1]);
                        ck_assert_int_eq(Q.colind[q], P.colind[k]);
                        ks += P.val[k];
                        q++;
                    }
                ck_assert_int_eq(q, Q.rowptr[i + 1]);
                for (ks_int k = P.rowptr[i], q2 = Q.rowptr[i]; k < P.rowptr[i + 1]; k++)
                    if (fabs(P.val[k]) >= fac * mx)
                        ck_assert_double_eq_tol(Q.val[q2++], P.val[k] * s / ks, 1e-14);
            }
        }
        ks_csr_free(&Q);
    }
    ks_csr_free(&P);
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------ thread counts */

static int same_csr(const ks_csr *a, const ks_csr *b)
{
    if (a->nrows != b->nrows || a->ncols != b->ncols || a->nnz != b->nnz)
        return 0;
    return memcmp(a->rowptr, b->rowptr, ((size_t)a->nrows + 1) * sizeof *a->rowptr) == 0 &&
           memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof *a->colind) == 0 &&
           memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val) == 0;
}

START_TEST(thread_count_independent)
{
    ks_csr A;
    ks_strength S;
    grid_laplacian(11, 10, 9, 1, 2.0, 0.05, &A);
    strength(&A, 0.3, &S);
    int *cf = split_grid(11, 10, 9, SPLIT_FULL);
    ks_csr ref[3];
#ifdef _OPENMP
    int saved = omp_get_max_threads();
#endif
    const int threads[3] = {1, 2, 3};
    for (int t = 0; t < 3; t++) {
#ifdef _OPENMP
        omp_set_num_threads(threads[t]);
#endif
        ks_csr got[3];
        KS_CHECK(ks_amg_interp_direct(&A, &S, cf, &got[0]));
        KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &got[1]));
        KS_CHECK(ks_csr_copy(&got[1], &got[2]));
        KS_CHECK(ks_amg_interp_truncate(&got[2], 3, 0.2));
        for (int k = 0; k < 3; k++) {
            if (t == 0) {
                ref[k] = got[k];
                continue;
            }
            ck_assert_msg(same_csr(&ref[k], &got[k]), "output %d differs with %d threads", k,
                          threads[t]);
            ks_csr_free(&got[k]);
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    for (int k = 0; k < 3; k++)
        ks_csr_free(&ref[k]);
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* The row-range builders (what the distributed setup runs on a rank's
 * local system): rows r0 .. r1-1 equal the full builder's bit for bit,
 * the others are empty; a bad range is refused. The driver's call on the
 * cpu backend (ks_amgk_interp_rows: the cpu table's entries) gives the
 * same rows without a staged step. */
START_TEST(row_range_builders)
{
    ks_csr A;
    ks_strength S;
    grid_laplacian(9, 8, 7, 1, 2.0, 0.05, &A);
    strength(&A, 0.3, &S);
    int *cf = split_grid(9, 8, 7, SPLIT_FULL);
    ks_backend *cpu = NULL;
    KS_CHECK(ks_backend_create("cpu", &cpu));
    const ks_csr Sh = {S.n, S.n, S.rowptr[S.n], S.rowptr, S.colind, NULL};
    const ks_sparse As = ks_sparse_view_csr(cpu, &A), Ss = ks_sparse_view_csr(cpu, &Sh);
    ks_amg_exec ex;
    memset(&ex, 0, sizeof ex);
    const ks_int n = A.nrows, ranges[3][2] = {{0, n}, {n / 3, 2 * n / 3 + 1}, {n / 2, n / 2}};
    for (int kind = 0; kind < 2; kind++) {
        ks_csr full;
        KS_CHECK(kind ? ks_amg_interp_extended_i(&A, &S, cf, &full)
                      : ks_amg_interp_direct(&A, &S, cf, &full));
        for (int r = 0; r < 3; r++) {
            const ks_int r0 = ranges[r][0], r1 = ranges[r][1];
            ks_csr P;
            KS_CHECK(kind ? ks_amg_interp_extended_i_rows(&A, &S, cf, r0, r1, &P)
                          : ks_amg_interp_direct_rows(&A, &S, cf, r0, r1, &P));
            ck_assert_int_eq(P.nrows, n);
            ck_assert_int_eq(P.ncols, full.ncols);
            for (ks_int i = 0; i < n; i++) {
                const ks_int len = P.rowptr[i + 1] - P.rowptr[i];
                if (i < r0 || i >= r1) {
                    ck_assert_msg(len == 0, "kind %d: row %d outside %d .. %d not empty", kind,
                                  (int)i, (int)r0, (int)r1);
                    continue;
                }
                const ks_int b = P.rowptr[i], fb = full.rowptr[i];
                ck_assert_int_eq(len, full.rowptr[i + 1] - fb);
                const size_t m = (size_t)len;
                ck_assert(memcmp(P.colind + b, full.colind + fb, m * sizeof(ks_int)) == 0);
                ck_assert(memcmp(P.val + b, full.val + fb, m * sizeof(double)) == 0);
            }
            ks_sparse Q;
            KS_CHECK(ks_amgk_interp_rows(&ex, kind ? KS_AMG_D2 : KS_AMG_D1, &As, &Ss, cf, r0, r1,
                                         &Q));
            ck_assert(Q.nrows == n && Q.ncols == P.ncols && Q.nnz == P.nnz);
            ck_assert(memcmp(Q.rowptr, P.rowptr, ((size_t)n + 1) * sizeof(ks_int)) == 0);
            ck_assert(memcmp(Q.colind, P.colind, (size_t)P.nnz * sizeof(ks_int)) == 0);
            ck_assert(memcmp(Q.val, P.val, (size_t)P.nnz * sizeof(double)) == 0);
            ks_sparse_free(&Q);
            ks_csr_free(&P);
        }
        ks_csr P;
        ck_assert_int_eq(kind ? ks_amg_interp_extended_i_rows(&A, &S, cf, 2, 1, &P)
                              : ks_amg_interp_direct_rows(&A, &S, cf, 0, n + 1, &P),
                         KS_ERR_ARG);
        ks_csr_free(&full);
    }
    ck_assert_int_eq(ex.host_steps, 0);
    ks_amg_exec_free(&ex);
    ks_backend_destroy(&cpu);
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------- extended+i row builders */

/* Strong F-F pairs (i F, k in S_i F): the compact builder's work. */
static long strong_ff(const ks_strength *S, const int *cf)
{
    long c = 0;
    for (ks_int i = 0; i < S->n; i++)
        if (cf[i] != KS_CPT)
            for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
                c += cf[S->colind[k]] != KS_CPT;
    return c;
}

/* Plain and compact builders, forced and automatic, 1 to 3 threads: the
 * same P, bit for bit, on operators with long distance-two walks (a
 * Galerkin operator), positive couplings, nonsymmetric S, and a splitting
 * with F points next to no C at all. */
static void builders_agree(const ks_csr *A, const ks_strength *S, const int *cf,
                           const char *what)
{
    ck_assert_msg(strong_ff(S, cf) > 0, "%s: no strong F-F pair, nothing to compare", what);
    ks_csr ref, got;
    ks_test_set_threads(1);
    KS_CHECK(ks_interp_extended_i_with(A, S, cf, KS_INTERP_COMPACT_NEVER, &ref));
    check_interp(A, cf, &ref, 0, what);
    const int modes[3] = {KS_INTERP_COMPACT_ALWAYS, KS_INTERP_COMPACT_AUTO,
                          KS_INTERP_COMPACT_NEVER};
    for (int t = 1; t <= 3; t++) {
        ks_test_set_threads(t);
        for (int m = 0; m < 3; m++) {
            KS_CHECK(ks_interp_extended_i_with(A, S, cf, modes[m], &got));
            ck_assert_msg(same_csr(&ref, &got), "%s: builder mode %d, %d threads: P differs",
                          what, modes[m], t);
            ks_csr_free(&got);
        }
    }
    ks_csr_free(&ref);
}

/* Extended+i's row buffer when an F row's strong F neighbour comes before
 * its strong C neighbours: F point 0 is strongly connected to F point 1
 * (whose strong C neighbours are points 2 .. L+1) and then to C points L+2
 * and L+3. Row 0 is the first row built, so its buffer starts empty; list
 * lengths around the first capacities (64, 128) once overflowed it by one
 * or two entries (C entries or the row's own slot). */
START_TEST(extended_buffer_f_then_c)
{
    const int lens[5] = {61, 62, 63, 126, 127};
    for (int t = 0; t < 5; t++) {
        const int L = lens[t], n = L + 4;
        ks_int *ri = malloc(sizeof(ks_int) * (size_t)(4 * n));
        ks_int *ci = malloc(sizeof(ks_int) * (size_t)(4 * n));
        double *v = malloc(sizeof(double) * (size_t)(4 * n));
        int64_t m = 0;
#define ENT(r, c, x) (ri[m] = (r), ci[m] = (c), v[m++] = (x))
        ENT(0, 0, 4.0);
        ENT(0, 1, -1.0);
        ENT(0, L + 2, -1.0);
        ENT(0, L + 3, -1.0);
        ENT(1, 0, -1.0);
        ENT(1, 1, L + 2.0);
        for (int j = 2; j < L + 2; j++) {
            ENT(1, j, -1.0);
            ENT(j, 1, -1.0);
            ENT(j, j, 2.0);
        }
        for (int j = L + 2; j < n; j++) {
            ENT(j, 0, -1.0);
            ENT(j, j, 2.0);
        }
#undef ENT
        ks_csr A;
        KS_CHECK(ks_csr_from_coo(n, n, m, ri, ci, v, &A, NULL));
        ks_strength S;
        strength(&A, 0.25, &S);
        int *cf = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            cf[i] = i < 2 ? KS_FPT : KS_CPT;
        const int modes[2] = {KS_INTERP_COMPACT_NEVER, KS_INTERP_COMPACT_ALWAYS};
        for (int k = 0; k < 2; k++) {
            char what[64];
            snprintf(what, sizeof what, "F then C, list of %d, builder mode %d", L, modes[k]);
            ks_csr P;
            ks_test_set_threads(1);
            KS_CHECK(ks_interp_extended_i_with(&A, &S, cf, modes[k], &P));
            ck_assert_msg(P.rowptr[1] - P.rowptr[0] == L + 2, "%s: row 0 has %d weights", what,
                          (int)(P.rowptr[1] - P.rowptr[0]));
            check_interp(&A, cf, &P, 0, what);
            ks_csr_free(&P);
        }
        free(cf);
        ks_strength_free(&S);
        ks_csr_free(&A);
        free(ri);
        free(ci);
        free(v);
    }
}
END_TEST

/* An F row whose weights cannot be normalised (a_ii plus the lumped weak
 * couplings is 0) is left empty; the C points it had gathered must not
 * count as gathered for the next F row of the chunk. Row 0: a_00 = 1,
 * strong -4 to C points 2 and 5, weak -0.5 to C points 3 and 4 (lumped:
 * 1 - 0.5 - 0.5 = 0). Row 1: 2, -1 to C points 2 and 5: weights 1/2, 1/2. */
START_TEST(extended_empty_row_then_next)
{
    const ks_int ri[] = {0, 0, 0, 0, 0, 1, 1, 1, 2, 3, 4, 5};
    const ks_int ci[] = {0, 2, 3, 4, 5, 1, 2, 5, 2, 3, 4, 5};
    const double v[] = {1, -4, -0.5, -0.5, -4, 2, -1, -1, 1, 1, 1, 1};
    ks_csr A;
    KS_CHECK(ks_csr_from_coo(6, 6, 12, ri, ci, v, &A, NULL));
    ks_strength S;
    strength(&A, 0.25, &S);
    const int cf[6] = {KS_FPT, KS_FPT, KS_CPT, KS_CPT, KS_CPT, KS_CPT};
    const int modes[2] = {KS_INTERP_COMPACT_NEVER, KS_INTERP_COMPACT_ALWAYS};
    ks_test_set_threads(1);
    for (int k = 0; k < 2; k++) {
        ks_csr P;
        KS_CHECK(ks_interp_extended_i_with(&A, &S, cf, modes[k], &P));
        ck_assert_int_eq(P.rowptr[1] - P.rowptr[0], 0);
        ck_assert_msg(P.rowptr[2] - P.rowptr[1] == 2, "mode %d: row 1 has %d weights",
                      modes[k], (int)(P.rowptr[2] - P.rowptr[1]));
        ck_assert_int_eq(P.colind[P.rowptr[1]], 0);
        ck_assert_int_eq(P.colind[P.rowptr[1] + 1], 3);
        ck_assert(fabs(P.val[P.rowptr[1]] - 0.5) < 1e-15);
        ck_assert(fabs(P.val[P.rowptr[1] + 1] - 0.5) < 1e-15);
        ks_csr_free(&P);
    }
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(extended_builders_agree)
{
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
#endif
    /* 3D 7-point Laplacian, HMIS, then its Galerkin operator (wide rows
     * with many strong F-F pairs) coarsened again. */
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON3D_7;
    gp.nx = gp.ny = gp.nz = 14;
    ks_csr A, P, R, A1;
    KS_CHECK(ks_generate(&gp, &A));
    ks_strength S, S1;
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    int *cf = malloc(sizeof(int) * (size_t)A.nrows);
    ks_int nc;
    KS_CHECK(ks_amg_hmis(&S, 1, cf, &nc));
    KS_CHECK(ks_amg_interp_extended_i(&A, &S, cf, &P));
    KS_CHECK(ks_amg_interp_truncate(&P, 4, 0.0));
    KS_CHECK(ks_csr_transpose(&P, &R));
    KS_CHECK(ks_csr_rap(&R, &A, &P, &A1));
    KS_CHECK(ks_amg_strength_classical(&A1, 0.25, 0.9, &S1));
    int *cf1 = malloc(sizeof(int) * (size_t)A1.nrows);
    KS_CHECK(ks_amg_hmis(&S1, 2, cf1, &nc));
    builders_agree(&A1, &S1, cf1, "Galerkin operator of 7-point 14^3, HMIS");
    KS_CHECK(ks_amg_pmis(&S1, 3, cf1, &nc));
    builders_agree(&A1, &S1, cf1, "Galerkin operator of 7-point 14^3, PMIS");
    free(cf1);
    ks_strength_free(&S1);
    ks_csr_free(&A1);
    ks_csr_free(&R);
    ks_csr_free(&P);
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);

    /* 27-point box stencil with positive couplings, fixed splittings (a
     * sparse one leaves F points with no strong C neighbour). */
    grid_laplacian(9, 8, 7, 1, 2.0, 0.1, &A);
    strength(&A, 0.25, &S);
    for (int kind = SPLIT_EVERY_OTHER; kind <= SPLIT_THIRD; kind++) {
        cf = split_grid(9, 8, 7, kind);
        builders_agree(&A, &S, cf, "27-point box with positive couplings");
        free(cf);
    }
    /* Same matrix, negated (a_ii < 0: ahat keeps the positive entries). */
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] = -A.val[k];
    cf = split_grid(9, 8, 7, SPLIT_FULL);
    builders_agree(&A, &S, cf, "negated 27-point box");
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);

    /* Convection-diffusion: nonsymmetric A and S. */
    gp.kind = KS_GEN_CONVDIFF3D;
    gp.nx = gp.ny = gp.nz = 11;
    gp.vx = 60;
    gp.vy = -20;
    gp.vz = 5;
    KS_CHECK(ks_generate(&gp, &A));
    KS_CHECK(ks_amg_strength_classical(&A, 0.25, 0.9, &S));
    cf = malloc(sizeof(int) * (size_t)A.nrows);
    KS_CHECK(ks_amg_pmis(&S, 7, cf, &nc));
    builders_agree(&A, &S, cf, "convection-diffusion 11^3, PMIS");
    free(cf);
    ks_strength_free(&S);
    ks_csr_free(&A);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_interp");
    TCase *tc = tcase_create("hand");
    tcase_add_test(tc, laplace1d_every_other_d1_d2);
    tcase_add_test(tc, row_range_builders);
    tcase_add_test(tc, laplace1d_every_third_d2_is_linear);
    tcase_add_test(tc, laplace2d_red_black);
    tcase_add_test(tc, laplace2d_full_coarsening);
    tcase_add_test(tc, d2_lumps_when_no_opposite_sign_coupling);
    tcase_add_test(tc, d1_positive_offdiagonals_lumped);
    tcase_add_test(tc, d2_sign_separation_and_negation);
    tcase_add_test(tc, negated_matrix_same_p);
    tcase_add_test(tc, isolated_f_point_empty_row);
    suite_add_tcase(s, tc);

    tc = tcase_create("constants");
    tcase_add_loop_test(tc, constants_fixed_splittings, 0, NGRID);
    tcase_add_loop_test(tc, constants_pmis_hmis, 0, NGRID);
    tcase_add_test(tc, dirichlet_poisson_pmis_rows_bounded);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, zero_diagonal_error);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, edge_splittings);
    suite_add_tcase(s, tc);

    tc = tcase_create("truncate");
    tcase_add_test(tc, truncate_hand_rows);
    tcase_add_test(tc, truncate_d2_grid);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_add_test(tc, thread_count_independent);
    tcase_add_test(tc, extended_builders_agree);
    tcase_add_test(tc, extended_buffer_f_then_c);
    tcase_add_test(tc, extended_empty_row_then_next);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
