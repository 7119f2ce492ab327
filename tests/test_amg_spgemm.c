/* AMG sparse products and the coarse direct solver: CSR transpose, SpGEMM
 * (fresh and numeric re-pass), Galerkin RAP, dense LU (solve, inverse,
 * singular detection). References are dense loops on small random
 * matrices; determinism is checked bit for bit across thread counts. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"
#include "sparse/cpu/csr_kernels.h"
#include "amg/dense_lu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------- helpers */
static unsigned long long rng_state;
static void rng_seed(unsigned long long s) { rng_state = s * 0x9E3779B97F4A7C15ull + 1; }
static unsigned long long rng_next(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static double rng_unit(void) { return (double)(rng_next() >> 11) * 0x1.0p-53; } /* [0,1) */
static ks_int rng_int(ks_int n) { return (ks_int)(rng_next() % (unsigned long long)n); }

/* Random nrows x ncols CSR with about `per_row` entries per row, values in
 * +-[0.5, 1.5). Rows i % 5 == 3 and columns j % 7 == 2 are left empty
 * when `holes` (and there are other rows/columns to use). */
static void random_csr(ks_csr *A, ks_int nrows, ks_int ncols, int per_row, int holes,
                       unsigned long long seed)
{
    rng_seed(seed);
    int64_t cap = (int64_t)nrows * per_row + 1, ne = 0;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    for (ks_int i = 0; i < nrows && ncols > 0; i++) {
        if (holes && i % 5 == 3)
            continue;
        for (int e = 0; e < per_row; e++) {
            ks_int j = rng_int(ncols);
            if (holes && ncols > 7 && j % 7 == 2)
                j = (j + 1) % ncols;
            double mag = 0.5 + rng_unit();
            r[ne] = i;
            c[ne] = j;
            v[ne] = rng_next() & 1 ? mag : -mag;
            ne++;
        }
    }
    KS_CHECK(ks_csr_from_coo(nrows, ncols, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* Dense row-major image; and the structural pattern (1 where stored). */
static double *dense(const ks_csr *A)
{
    double *d = calloc((size_t)A->nrows * (size_t)A->ncols + 1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            d[(size_t)i * A->ncols + A->colind[k]] += A->val[k];
    return d;
}

static char *pattern(const ks_csr *A)
{
    char *p = calloc((size_t)A->nrows * (size_t)A->ncols + 1, 1);
    ck_assert_ptr_nonnull(p);
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            p[(size_t)i * A->ncols + A->colind[k]] = 1;
    return p;
}

/* c (n x m) = a (n x l) * b (l x m), values and structural pattern. */
static void dense_mul(const double *a, const char *pa, const double *b, const char *pb, ks_int n,
                      ks_int l, ks_int m, double *c, char *pc)
{
    memset(c, 0, sizeof *c * ((size_t)n * m + 1));
    memset(pc, 0, (size_t)n * m + 1);
    for (ks_int i = 0; i < n; i++)
        for (ks_int k = 0; k < l; k++) {
            if (!pa[(size_t)i * l + k])
                continue;
            for (ks_int j = 0; j < m; j++)
                if (pb[(size_t)k * m + j]) {
                    c[(size_t)i * m + j] += a[(size_t)i * l + k] * b[(size_t)k * m + j];
                    pc[(size_t)i * m + j] = 1;
                }
        }
}

/* C valid (sorted, unique, in range), with exactly pattern pc and values
 * within rel * max|ref| of ref. */
static void check_against(const ks_csr *C, ks_int n, ks_int m, const double *ref, const char *pc,
                          double rel, const char *what)
{
    ck_assert_int_eq(C->nrows, n);
    ck_assert_int_eq(C->ncols, m);
    KS_CHECK(ks_csr_validate(C));
    char *p = pattern(C);
    double *d = dense(C);
    double scale = 0.0, err = 0.0;
    ks_int count = 0;
    for (size_t q = 0; q < (size_t)n * m; q++) {
        ck_assert_msg(p[q] == pc[q], "%s: pattern differs at (%ld, %ld): got %d want %d", what,
                      (long)(q / (size_t)m), (long)(q % (size_t)m), p[q], pc[q]);
        count += pc[q];
        scale = fmax(scale, fabs(ref[q]));
        err = fmax(err, fabs(d[q] - ref[q]));
    }
    ck_assert_int_eq(C->nnz, count);
    ck_assert_msg(err <= rel * fmax(scale, 1e-300), "%s: max error %.3e vs max|ref| %.3e", what,
                  err, scale);
    free(p);
    free(d);
}

static int csr_identical(const ks_csr *A, const ks_csr *B)
{
    return A->nrows == B->nrows && A->ncols == B->ncols && A->nnz == B->nnz &&
           !memcmp(A->rowptr, B->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1)) &&
           (A->nnz == 0 || (!memcmp(A->colind, B->colind, sizeof(ks_int) * (size_t)A->nnz) &&
                            !memcmp(A->val, B->val, sizeof(double) * (size_t)A->nnz)));
}


/* ----------------------------------------------------------- transpose */
static const ks_int tr_shapes[][3] = {{0, 0, 1}, {0, 5, 1}, {5, 0, 1}, {1, 1, 1},
                                      {17, 40, 3}, {40, 17, 6}, {3, 200, 20},
                                      {2000, 300, 25}}; /* last: threaded blocks */
#define NTR ((int)(sizeof tr_shapes / sizeof tr_shapes[0]))

START_TEST(transpose_random)
{
    const ks_int n = tr_shapes[_i][0], m = tr_shapes[_i][1];
    ks_csr A, AT, ATT;
    random_csr(&A, n, m, tr_shapes[_i][2], _i % 2, 100 + (unsigned)_i);
    KS_CHECK(ks_csr_transpose(&A, &AT));
    ck_assert_int_eq(AT.nrows, m);
    ck_assert_int_eq(AT.ncols, n);
    ck_assert_int_eq(AT.nnz, A.nnz);
    KS_CHECK(ks_csr_validate(&AT));
    double *d = dense(&A), *dt = dense(&AT);
    for (ks_int i = 0; i < n; i++)
        for (ks_int j = 0; j < m; j++)
            ck_assert_double_eq(dt[(size_t)j * n + i], d[(size_t)i * m + j]);
    KS_CHECK(ks_csr_transpose(&AT, &ATT));
    ck_assert_msg(csr_identical(&A, &ATT), "transpose twice is not the identity");
    free(d);
    free(dt);
    ks_csr_free(&A);
    ks_csr_free(&AT);
    ks_csr_free(&ATT);
}
END_TEST

START_TEST(transpose_errors)
{
    ks_csr A, AT;
    random_csr(&A, 6, 4, 2, 0, 7);
    ck_assert_int_eq(ks_csr_transpose(NULL, &AT), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_transpose(&A, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_transpose(&A, &A), KS_ERR_ARG);
    A.colind[A.nnz - 1] = 4; /* out of range */
    memset(&AT, 0, sizeof AT);
    ck_assert_int_eq(ks_csr_transpose(&A, &AT), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "row 5"));
    ck_assert_ptr_null(AT.rowptr);
    ks_csr_free(&A);
}
END_TEST

/* -------------------------------------------------------------- spgemm */
/* {n, l, m, per_row A, per_row B, holes} */
static const int gemm_shapes[][6] = {
    {13, 7, 19, 3, 4, 0},  {30, 50, 20, 4, 3, 1}, {50, 30, 45, 6, 5, 1}, {1, 1, 1, 1, 1, 0},
    {0, 5, 3, 2, 2, 0},    {5, 0, 3, 2, 2, 0},    {4, 6, 0, 2, 2, 0},    {20, 20, 20, 20, 20, 0},
    {40, 40, 40, 1, 1, 1}, {300, 120, 90, 8, 6, 1}};
#define NGEMM ((int)(sizeof gemm_shapes / sizeof gemm_shapes[0]))

START_TEST(spgemm_vs_dense)
{
    const int *s = gemm_shapes[_i];
    ks_csr A, B, C;
    random_csr(&A, s[0], s[1], s[3], s[5], 200 + (unsigned)_i);
    random_csr(&B, s[1], s[2], s[4], s[5], 300 + (unsigned)_i);
    KS_CHECK(ks_csr_spgemm(&A, &B, &C));
    double *a = dense(&A), *b = dense(&B), *c = malloc(sizeof *c * ((size_t)s[0] * s[2] + 1));
    char *pa = pattern(&A), *pb = pattern(&B), *pc = malloc((size_t)s[0] * s[2] + 1);
    dense_mul(a, pa, b, pb, s[0], s[1], s[2], c, pc);
    check_against(&C, s[0], s[2], c, pc, 1e-14, "A*B");
    free(a);
    free(b);
    free(c);
    free(pa);
    free(pb);
    free(pc);
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_csr_free(&C);
}
END_TEST

/* A B with millions of columns takes the hash accumulator (and the numeric
 * re-pass its binary search); compared with a per-row reference. */
START_TEST(spgemm_wide_hash)
{
    const ks_int n = 60, l = 40, m = 3000000;
    ks_csr A, B, C;
    random_csr(&A, n, l, 6, 1, 41);
    /* B: 12 entries per row over a narrow band of columns so products
     * collide (merging is exercised), plus some far columns. */
    {
        rng_seed(43);
        ks_int r[40 * 12], c[40 * 12];
        double v[40 * 12];
        int ne = 0;
        for (ks_int k = 0; k < l; k++)
            for (int e = 0; e < 12; e++) {
                r[ne] = k;
                c[ne] = e < 8 ? 1000000 + rng_int(60) : rng_int(m);
                v[ne] = 0.5 + rng_unit();
                ne++;
            }
        KS_CHECK(ks_csr_from_coo(l, m, ne, r, c, v, &B, NULL));
    }
    KS_CHECK(ks_csr_spgemm(&A, &B, &C));
    KS_CHECK(ks_csr_validate(&C));
    /* Reference row by row: a small dense image of the columns used. */
    double *acc = calloc((size_t)m, sizeof *acc);
    char *hit = calloc((size_t)m, 1);
    for (ks_int i = 0; i < n; i++) {
        ks_int cnt = 0;
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
            ks_int a = A.colind[k];
            for (ks_int q = B.rowptr[a]; q < B.rowptr[a + 1]; q++) {
                ks_int j = B.colind[q];
                cnt += !hit[j];
                hit[j] = 1;
                acc[j] += A.val[k] * B.val[q];
            }
        }
        ck_assert_int_eq(C.rowptr[i + 1] - C.rowptr[i], cnt);
        for (ks_int k = C.rowptr[i]; k < C.rowptr[i + 1]; k++) {
            ks_int j = C.colind[k];
            ck_assert(hit[j]);
            ck_assert_msg(fabs(C.val[k] - acc[j]) <= 1e-14 * fabs(acc[j]) + 1e-300,
                          "row %d col %d: %g vs %g", i, j, C.val[k], acc[j]);
            hit[j] = 0;
            acc[j] = 0.0;
        }
    }
    /* Numeric re-pass with new values reproduces a fresh product. */
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] = 1.0 / (1.0 + k);
    ks_csr C2;
    KS_CHECK(ks_csr_spgemm(&A, &B, &C2));
    for (ks_int k = 0; k < C.nnz; k++)
        C.val[k] = NAN;
    KS_CHECK(ks_csr_spgemm_numeric(&A, &B, &C));
    ck_assert_msg(csr_identical(&C, &C2), "numeric re-pass differs from a fresh product");
    free(acc);
    free(hit);
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_csr_free(&C);
    ks_csr_free(&C2);
}
END_TEST

START_TEST(spgemm_numeric_repass)
{
    ks_csr A, B, C, C2;
    random_csr(&A, 70, 50, 5, 1, 501);
    random_csr(&B, 50, 60, 4, 1, 502);
    KS_CHECK(ks_csr_spgemm(&A, &B, &C));
    /* Same patterns, new values; C poisoned. */
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] = sin(1.0 + k);
    for (ks_int k = 0; k < B.nnz; k++)
        B.val[k] = cos(2.0 + 3 * k);
    for (ks_int k = 0; k < C.nnz; k++)
        C.val[k] = NAN;
    KS_CHECK(ks_csr_spgemm_numeric(&A, &B, &C));
    KS_CHECK(ks_csr_spgemm(&A, &B, &C2));
    ck_assert_msg(csr_identical(&C, &C2), "numeric re-pass differs from a fresh product");
    ks_csr_free(&C2);

    /* B with fewer entries: C keeps its (larger) pattern, the entries no
     * longer produced become 0. */
    ks_csr Bs;
    KS_CHECK(ks_csr_copy(&B, &Bs));
    {
        ks_int w = 0;
        for (ks_int i = 0; i < Bs.nrows; i++) {
            ks_int lo = Bs.rowptr[i];
            Bs.rowptr[i] = w;
            for (ks_int k = lo; k < Bs.rowptr[i + 1]; k++)
                if (k % 3 != 0) {
                    Bs.colind[w] = Bs.colind[k];
                    Bs.val[w++] = Bs.val[k];
                }
        }
        Bs.rowptr[Bs.nrows] = Bs.nnz = w;
    }
    KS_CHECK(ks_csr_spgemm_numeric(&A, &Bs, &C));
    double *a = dense(&A), *b = dense(&Bs), *c = malloc(sizeof *c * (70 * 60 + 1));
    char *pa = pattern(&A), *pb = pattern(&Bs), *pc = malloc(70 * 60 + 1), *pC = pattern(&C);
    dense_mul(a, pa, b, pb, 70, 50, 60, c, pc);
    double *d = dense(&C);
    for (int q = 0; q < 70 * 60; q++) {
        ck_assert(!pc[q] || pC[q]); /* subset pattern */
        ck_assert(fabs(d[q] - c[q]) <= 1e-14 * (1 + fabs(c[q])));
    }
    free(a);
    free(b);
    free(c);
    free(d);
    free(pa);
    free(pb);
    free(pc);
    free(pC);
    ks_csr_free(&Bs);
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_csr_free(&C);
}
END_TEST

START_TEST(spgemm_numeric_mismatch)
{
    ks_csr A, B, C, B2;
    random_csr(&A, 8, 6, 2, 0, 601);
    random_csr(&B, 6, 9, 2, 0, 602);
    KS_CHECK(ks_csr_spgemm(&A, &B, &C));
    /* B2 = B plus a column product A*B never reaches: row a (some column
     * of A's row 0) gets an entry where row 0 of C has none. */
    ks_int a = A.colind[A.rowptr[0]], missing = -1;
    for (ks_int j = 0; j < 9 && missing < 0; j++) {
        int found = 0;
        for (ks_int k = C.rowptr[0]; k < C.rowptr[1]; k++)
            found |= C.colind[k] == j;
        if (!found)
            missing = j;
    }
    ck_assert_int_ge(missing, 0);
    {
        ks_int r[64], c[64];
        double v[64];
        int ne = 0;
        for (ks_int i = 0; i < B.nrows; i++)
            for (ks_int k = B.rowptr[i]; k < B.rowptr[i + 1]; k++) {
                r[ne] = i;
                c[ne] = B.colind[k];
                v[ne++] = B.val[k];
            }
        r[ne] = a;
        c[ne] = missing;
        v[ne++] = 1.0;
        KS_CHECK(ks_csr_from_coo(6, 9, ne, r, c, v, &B2, NULL));
    }
    ck_assert_int_eq(ks_csr_spgemm_numeric(&A, &B2, &C), KS_ERR_ARG);
    char want[64];
    snprintf(want, sizeof want, "(0, %d) outside the pattern", missing);
    ck_assert_msg(strstr(ks_last_error(), want), "message: %s", ks_last_error());
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_csr_free(&B2);
    ks_csr_free(&C);
}
END_TEST

START_TEST(size_errors)
{
    ks_csr A, B, C, R, P;
    random_csr(&A, 3, 4, 2, 0, 701);
    random_csr(&B, 5, 2, 2, 0, 702);
    memset(&C, 0, sizeof C);
    ck_assert_int_eq(ks_csr_spgemm(&A, &B, &C), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "A.ncols != B.nrows"));
    ck_assert_ptr_null(C.rowptr);
    ck_assert_int_eq(ks_csr_spgemm(NULL, &B, &C), KS_ERR_ARG);
    ks_csr_free(&B);

    random_csr(&B, 4, 2, 2, 0, 703);
    ck_assert_int_eq(ks_csr_spgemm(&A, &B, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_csr_spgemm_numeric(&A, &B, &C), KS_ERR_ARG); /* C not allocated */
    KS_CHECK(ks_csr_spgemm(&A, &B, &C));
    ck_assert_int_eq(ks_csr_spgemm(&A, &B, &A), KS_ERR_ARG); /* aliasing */
    ks_csr W;
    random_csr(&W, 3, 3, 2, 0, 704); /* wrong shape for A*B (3 x 2) */
    ck_assert_int_eq(ks_csr_spgemm_numeric(&A, &B, &W), KS_ERR_SIZE);
    ks_csr_free(&W);

    /* RAP: R 2 x 3, A 3 x 4, P must be 4 x k. */
    random_csr(&R, 2, 3, 2, 0, 705);
    random_csr(&P, 3, 2, 1, 0, 706);
    ks_csr Ac;
    memset(&Ac, 0, sizeof Ac);
    ck_assert_int_eq(ks_csr_rap(&R, &A, &P, &Ac), KS_ERR_SIZE);
    ck_assert_ptr_null(Ac.rowptr);
    ck_assert_int_eq(ks_csr_rap(&A, &A, &P, &Ac), KS_ERR_SIZE);
    ck_assert_int_eq(ks_csr_rap(&R, &A, &B, NULL), KS_ERR_ARG);
    KS_CHECK(ks_csr_rap(&R, &A, &B, &Ac));
    ck_assert_int_eq(Ac.nrows, 2);
    ck_assert_int_eq(Ac.ncols, 2);
    ks_csr_free(&Ac);
    ks_csr_free(&R);
    ks_csr_free(&P);
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_csr_free(&C);
}
END_TEST

/* nnz(C) beyond 2^31 - 1 is refused after the symbolic pass, before any
 * allocation of C: an outer product of 46341-vectors (46341^2 > 2^31). */
START_TEST(spgemm_overflow)
{
    const ks_int n = 46341;
    ks_csr U, V, C;
    KS_CHECK(ks_csr_alloc(&U, n, 1, n));
    KS_CHECK(ks_csr_alloc(&V, 1, n, n));
    for (ks_int i = 0; i < n; i++) {
        U.rowptr[i + 1] = i + 1;
        U.colind[i] = 0;
        U.val[i] = 1.0;
        V.colind[i] = i;
        V.val[i] = 2.0;
    }
    V.rowptr[1] = n;
    memset(&C, 0, sizeof C);
    ck_assert_int_eq(ks_csr_spgemm(&U, &V, &C), KS_ERR_SIZE);
    ck_assert_msg(strstr(ks_last_error(), "2147488281"), "message: %s", ks_last_error());
    ck_assert_ptr_null(C.rowptr);
    ks_csr_free(&U);
    ks_csr_free(&V);
}
END_TEST

/* ----------------------------------------------------------------- RAP */
/* {n, nc, per_row A, per_row P, per_row R (0: R = P^T), holes} */
static const int rap_shapes[][6] = {
    {40, 12, 5, 2, 0, 0}, {60, 25, 7, 3, 0, 1}, {50, 10, 4, 1, 0, 0},
    {30, 30, 6, 4, 3, 1}, /* general R */
    {80, 20, 3, 15, 1, 0}, /* R very sparse, P heavy: (R*A)*P is cheaper */
    {1, 1, 1, 1, 0, 0},   {10, 0, 3, 1, 1, 0}};
#define NRAP ((int)(sizeof rap_shapes / sizeof rap_shapes[0]))

START_TEST(rap_vs_dense)
{
    const int *s = rap_shapes[_i];
    const ks_int n = s[0], nc = s[1];
    ks_csr A, P, R, Ac;
    random_csr(&A, n, n, s[2], s[5], 800 + (unsigned)_i);
    random_csr(&P, n, nc, s[3], s[5], 900 + (unsigned)_i);
    if (s[4] == 0)
        KS_CHECK(ks_csr_transpose(&P, &R));
    else
        random_csr(&R, nc, n, s[4], 0, 1000 + (unsigned)_i);
    KS_CHECK(ks_csr_rap(&R, &A, &P, &Ac));
    double *a = dense(&A), *p = dense(&P), *r = dense(&R);
    char *pa = pattern(&A), *pp = pattern(&P), *pr = pattern(&R);
    double *ap = malloc(sizeof *ap * ((size_t)n * nc + 1)),
           *rap = malloc(sizeof *rap * ((size_t)nc * nc + 1));
    char *pap = malloc((size_t)n * nc + 1), *prap = malloc((size_t)nc * nc + 1);
    dense_mul(a, pa, p, pp, n, n, nc, ap, pap);
    dense_mul(r, pr, ap, pap, nc, n, nc, rap, prap);
    check_against(&Ac, nc, nc, rap, prap, 1e-12, "R*A*P");
    free(a);
    free(p);
    free(r);
    free(pa);
    free(pp);
    free(pr);
    free(ap);
    free(rap);
    free(pap);
    free(prap);
    ks_csr_free(&A);
    ks_csr_free(&P);
    ks_csr_free(&R);
    ks_csr_free(&Ac);
}
END_TEST

/* ---------------------------------------------------------- determinism */
/* Every product is bitwise identical with 1, 2, 3 and 4 threads. */
START_TEST(determinism_threads)
{
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
#endif
    ks_csr A, P;
    random_csr(&A, 3000, 3000, 9, 1, 1101);
    random_csr(&P, 3000, 700, 3, 0, 1102);
    ks_csr ref[4], got[4];
    const int teams[] = {1, 2, 3, 4};
    for (int t = 0; t < 4; t++) {
        ks_test_set_threads(teams[t]);
        ks_csr *o = t == 0 ? ref : got;
        KS_CHECK(ks_csr_transpose(&P, &o[0]));
        KS_CHECK(ks_csr_spgemm(&A, &A, &o[1]));
        KS_CHECK(ks_csr_rap(&o[0], &A, &P, &o[2]));
        KS_CHECK(ks_csr_copy(&o[1], &o[3])); /* refill A*A's pattern */
        for (ks_int k = 0; k < o[3].nnz; k++)
            o[3].val[k] = NAN;
        KS_CHECK(ks_csr_spgemm_numeric(&A, &A, &o[3]));
        if (t > 0) {
            static const char *names[] = {"transpose", "spgemm", "rap", "spgemm_numeric"};
            for (int q = 0; q < 4; q++) {
                ck_assert_msg(csr_identical(&ref[q], &got[q]), "%s: %d threads differ from 1",
                              names[q], teams[t]);
                ks_csr_free(&got[q]);
            }
        }
    }
    ck_assert_msg(csr_identical(&ref[1], &ref[3]), "numeric re-pass differs from spgemm");
    for (int q = 0; q < 4; q++)
        ks_csr_free(&ref[q]);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    ks_csr_free(&A);
    ks_csr_free(&P);
}
END_TEST

/* ------------------------------------------------------------ dense LU */
/* Random well-conditioned n x n: entries in [-1, 1], a dominant entry
 * 2n at (i, perm(i)) and a tiny diagonal, so pivoting is required. When
 * `sparse`, only the dominant entries and ~3 others per row are stored. */
static void random_lu_matrix(ks_csr *A, ks_int n, int sparse, unsigned long long seed)
{
    rng_seed(seed);
    ks_int *perm = malloc(sizeof *perm * (size_t)n);
    for (ks_int i = 0; i < n; i++)
        perm[i] = i;
    for (ks_int i = n - 1; i > 0; i--) {
        ks_int j = rng_int(i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    size_t cap = (size_t)n * (size_t)(n + 1);
    ks_int *r = malloc(sizeof *r * cap), *c = malloc(sizeof *c * cap);
    double *v = malloc(sizeof *v * cap);
    int64_t ne = 0;
    for (ks_int i = 0; i < n; i++) {
        for (ks_int j = 0; j < n; j++) {
            if (sparse && j != perm[i] && rng_int(n) >= 3)
                continue;
            r[ne] = i;
            c[ne] = j;
            v[ne++] = j == perm[i] ? 2.0 * n : (i == j ? 1e-3 : 2.0 * rng_unit() - 1.0);
        }
    }
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, c, v, A, NULL));
    free(perm);
    free(r);
    free(c);
    free(v);
}

static const ks_int lu_sizes[] = {1, 5, 50, 300}; /* 300: threaded column blocks */

START_TEST(dense_lu_solve_known)
{
    for (int sparse = 0; sparse < 2; sparse++) {
        const ks_int n = lu_sizes[_i];
        ks_csr A;
        random_lu_matrix(&A, n, sparse, 1200 + (unsigned)_i);
        double *xt = malloc(sizeof *xt * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
        for (ks_int i = 0; i < n; i++)
            xt[i] = sin(0.7 * i + 0.3);
        ks_csr_spmv_ref(&A, 1.0, xt, 0.0, b);
        ks_dense_lu F;
        KS_CHECK(ks_dense_lu_factor(&A, &F));
        ck_assert_int_eq(F.n, n);
        ks_dense_lu_solve(&F, b);
        double err = ks_test_max_relerr(b, xt, n);
        ck_assert_msg(err <= 1e-12, "n = %d: error %.3e", n, err);
        ks_dense_lu_free(&F);
        ck_assert_ptr_null(F.lu);
        free(xt);
        free(b);
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(dense_lu_inverse)
{
    const ks_int n = lu_sizes[_i];
    ks_csr A, Ai;
    random_lu_matrix(&A, n, _i % 2, 1300 + (unsigned)_i);
    ks_dense_lu F;
    KS_CHECK(ks_dense_lu_factor(&A, &F));
    KS_CHECK(ks_dense_lu_inverse_csr(&F, &Ai));
    ck_assert_int_eq(Ai.nrows, n);
    ck_assert_int_eq(Ai.ncols, n);
    ck_assert_int_eq(Ai.nnz, n * n);
    KS_CHECK(ks_csr_validate(&Ai)); /* sorted, in range, finite */
    for (ks_int i = 0; i <= n; i++)
        ck_assert_int_eq(Ai.rowptr[i], i * n);
    /* Ainv * A = I, through the library's own product. */
    ks_csr I;
    KS_CHECK(ks_csr_spgemm(&Ai, &A, &I));
    double *d = dense(&I), err = 0.0;
    for (ks_int i = 0; i < n; i++)
        for (ks_int j = 0; j < n; j++)
            err = fmax(err, fabs(d[(size_t)i * n + j] - (i == j)));
    ck_assert_msg(err <= 1e-12, "n = %d: |Ainv*A - I| = %.3e", n, err);
    /* each column the solve of its unit vector, value for value (the
     * inverse skips only the zeros above L^-1's diagonal) */
    double *x = malloc(((size_t)n + 1) * sizeof *x);
    for (ks_int c = 0; c < n; c++) {
        for (ks_int i = 0; i < n; i++)
            x[i] = i == c;
        ks_dense_lu_solve(&F, x);
        for (ks_int i = 0; i < n; i++)
            ck_assert_msg(x[i] == Ai.val[(size_t)i * n + c], "n = %d: inverse (%d, %d) = %.17g, "
                          "solve %.17g", n, i, c, Ai.val[(size_t)i * n + c], x[i]);
    }
    free(x);
    free(d);
    ks_csr_free(&I);
    ks_csr_free(&Ai);
    ks_dense_lu_free(&F);
    ks_csr_free(&A);
}
END_TEST

START_TEST(dense_lu_singular)
{
    ks_dense_lu F;
    /* Two equal rows: exactly singular. */
    {
        const ks_int r[] = {0, 0, 1, 1, 2, 2, 2};
        const ks_int c[] = {0, 1, 0, 1, 0, 1, 2};
        const double v[] = {1, 2, 1, 2, 3, 1, 4};
        ks_csr A;
        KS_CHECK(ks_csr_from_coo(3, 3, 7, r, c, v, &A, NULL));
        ck_assert_int_eq(ks_dense_lu_factor(&A, &F), KS_ERR_NUMERIC);
        ck_assert_msg(strstr(ks_last_error(), "coarse matrix is singular (pivot 2)"), "message: %s",
                      ks_last_error());
        ck_assert_ptr_null(F.lu);
        ck_assert_ptr_null(F.piv);
        ks_csr_free(&A);
    }
    /* Pure-Neumann 1D Laplacian with variable coefficients (rows sum to
     * zero): singular, but after rounding the last pivot need not be 0. */
    {
        const ks_int n = 40;
        ks_csr A;
        KS_CHECK(ks_csr_alloc(&A, n, n, 3 * n - 2));
        ks_int q = 0;
        for (ks_int i = 0; i < n; i++) {
            if (i > 0) {
                A.colind[q] = i - 1;
                A.val[q++] = -(1.0 + 0.37 * (i - 1));
            }
            A.colind[q] = i;
            A.val[q++] = (i > 0 ? 1.0 + 0.37 * (i - 1) : 0.0) + (i < n - 1 ? 1.0 + 0.37 * i : 0.0);
            if (i < n - 1) {
                A.colind[q] = i + 1;
                A.val[q++] = -(1.0 + 0.37 * i);
            }
            A.rowptr[i + 1] = q;
        }
        ck_assert_int_eq(ks_dense_lu_factor(&A, &F), KS_ERR_NUMERIC);
        ck_assert_msg(strstr(ks_last_error(), "singular (pivot 39)"), "message: %s",
                      ks_last_error());
        ks_csr_free(&A);
    }
    /* An empty row; an all-zero matrix. */
    {
        const ks_int r[] = {0, 2}, c[] = {0, 2};
        const double v[] = {1, 1};
        ks_csr A;
        KS_CHECK(ks_csr_from_coo(3, 3, 2, r, c, v, &A, NULL));
        ck_assert_int_eq(ks_dense_lu_factor(&A, &F), KS_ERR_NUMERIC);
        ks_csr_free(&A);
        KS_CHECK(ks_csr_from_coo(2, 2, 0, NULL, NULL, NULL, &A, NULL));
        ck_assert_int_eq(ks_dense_lu_factor(&A, &F), KS_ERR_NUMERIC);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "pivot 0"));
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(dense_lu_edge_cases)
{
    ks_dense_lu F;
    ks_csr A, Ai;
    /* Zero size is fine. */
    KS_CHECK(ks_csr_alloc(&A, 0, 0, 0));
    KS_CHECK(ks_dense_lu_factor(&A, &F));
    ck_assert_int_eq(F.n, 0);
    ks_dense_lu_solve(&F, NULL);
    KS_CHECK(ks_dense_lu_inverse_csr(&F, &Ai));
    ck_assert_int_eq(Ai.nrows, 0);
    ck_assert_int_eq(Ai.nnz, 0);
    ks_csr_free(&Ai);
    ks_dense_lu_free(&F);
    ks_csr_free(&A);
    /* Not square; NaN entry; NULL arguments. */
    random_csr(&A, 3, 4, 2, 0, 1401);
    ck_assert_int_eq(ks_dense_lu_factor(&A, &F), KS_ERR_SIZE);
    ks_csr_free(&A);
    random_lu_matrix(&A, 4, 0, 1402);
    A.val[5] = NAN;
    ck_assert_int_eq(ks_dense_lu_factor(&A, &F), KS_ERR_NUMERIC);
    ck_assert_int_eq(ks_dense_lu_factor(NULL, &F), KS_ERR_ARG);
    ck_assert_int_eq(ks_dense_lu_factor(&A, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_dense_lu_inverse_csr(NULL, &Ai), KS_ERR_ARG);
    ks_csr_free(&A);
    /* 1 x 1 without pivoting issues: x = b / a. */
    const ks_int r[] = {0}, c[] = {0};
    const double v[] = {-4.0};
    KS_CHECK(ks_csr_from_coo(1, 1, 1, r, c, v, &A, NULL));
    KS_CHECK(ks_dense_lu_factor(&A, &F));
    double x = 2.0;
    ks_dense_lu_solve(&F, &x);
    ck_assert_double_eq(x, -0.5);
    ks_dense_lu_free(&F);
    ks_dense_lu_free(&F); /* idempotent */
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_spgemm");
    TCase *tc = tcase_create("transpose");
    tcase_add_loop_test(tc, transpose_random, 0, NTR);
    tcase_add_test(tc, transpose_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("spgemm");
    tcase_add_loop_test(tc, spgemm_vs_dense, 0, NGEMM);
    tcase_add_test(tc, spgemm_wide_hash);
    tcase_add_test(tc, spgemm_numeric_repass);
    tcase_add_test(tc, spgemm_numeric_mismatch);
    tcase_add_test(tc, size_errors);
    tcase_add_loop_test(tc, rap_vs_dense, 0, NRAP);
    suite_add_tcase(s, tc);

    /* Own case, tagged to leave out under valgrind (CK_EXCLUDE_TAGS=native):
     * more threads than OMP_NUM_THREADS=1 (libgomp's pool shows as
     * "possibly lost") and about 2e9 marker updates (a second natively). */
    tc = tcase_create("native");
    tcase_set_tags(tc, "native");
    tcase_add_test(tc, determinism_threads);
    tcase_add_test(tc, spgemm_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("dense_lu");
    tcase_add_loop_test(tc, dense_lu_solve_known, 0, 3);
    tcase_add_loop_test(tc, dense_lu_inverse, 0, 4);
    tcase_add_test(tc, dense_lu_singular);
    tcase_add_test(tc, dense_lu_edge_cases);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
