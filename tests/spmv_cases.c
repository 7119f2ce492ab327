/* Shared data and checkers of the SpMV test programs: see spmv_cases.h. */
#include "spmv_cases.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ generator */
/* The shared generator of ks_test.c with a per-program stream. */
static uint64_t rng_inc = 1;

void sc_rng_stream(uint64_t stream) { rng_inc = stream; }
void sc_rng_seed(uint64_t s) { ks_test_rng_seed_with(s, rng_inc); }
uint64_t sc_rng_next(void) { return ks_test_rng_next(); }
double sc_urand(void) { return (double)(sc_rng_next() >> 11) * (1.0 / 9007199254740992.0); }
double sc_srand1(void) { return 2.0 * sc_urand() - 1.0; }

static int cmp_int(const void *a, const void *b)
{
    ks_int x = *(const ks_int *)a, y = *(const ks_int *)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------ matrices */
void sc_build_rows(ks_csr *A, ks_int nrows, ks_int ncols, const ks_int *len, const sc_rows *how)
{
    const int dense_div = how ? how->dense_div : 0, zero_every = how ? how->zero_every : 0;
    int64_t nnz = 0;
    for (ks_int i = 0; i < nrows; i++)
        nnz += len[i] < ncols ? len[i] : ncols;
    KS_CHECK(ks_csr_alloc(A, nrows, ncols, (ks_int)nnz));
    int *mark = calloc((size_t)ncols + 1, sizeof *mark);
    ck_assert_ptr_nonnull(mark);
    ks_int pos = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < nrows; i++) {
        ks_int k = len[i] < ncols ? len[i] : ncols, start = pos;
        if (dense_div == 0 && k == ncols) {
            for (ks_int c = 0; c < ncols; c++)
                A->colind[pos++] = c;
        } else if (dense_div > 0 && k > ncols / dense_div) {
            /* Selection sampling: column c joins with probability
             * (still needed) / (columns left), giving exactly k in order. */
            for (ks_int c = 0; c < ncols && pos - start < k; c++)
                if ((double)(ncols - c) * sc_urand() < (double)(k - (pos - start)))
                    A->colind[pos++] = c;
        } else {
            while (pos - start < k) {
                ks_int c = (ks_int)(sc_rng_next() % (uint64_t)ncols);
                if (mark[c] != i + 1) {
                    mark[c] = i + 1;
                    A->colind[pos++] = c;
                }
            }
            qsort(A->colind + start, (size_t)k, sizeof(ks_int), cmp_int);
        }
        ck_assert_int_eq(pos - start, k);
        for (ks_int j = start; j < pos; j++)
            A->val[j] = zero_every > 0 && j % zero_every == 0 ? 0.0 : sc_srand1();
        A->rowptr[i + 1] = pos;
    }
    free(mark);
}

void sc_make_random(ks_csr *A, ks_int nrows, ks_int ncols, int maxlen, uint64_t seed)
{
    sc_rng_seed(seed);
    ks_int *len = malloc(sizeof(ks_int) * ((size_t)nrows + 1));
    ck_assert_ptr_nonnull(len);
    for (ks_int i = 0; i < nrows; i++)
        len[i] = sc_urand() < 0.2 ? 0 : (ks_int)(sc_rng_next() % (uint64_t)(maxlen + 1));
    sc_build_rows(A, nrows, ncols, len, NULL);
    free(len);
}

void sc_make_huge_row(ks_csr *A)
{
    const ks_int n = 3000;
    sc_rng_seed(7);
    ks_int *len = malloc(sizeof(ks_int) * (size_t)n);
    ck_assert_ptr_nonnull(len);
    for (ks_int i = 0; i < n; i++)
        len[i] = (ks_int)(sc_rng_next() % 6);
    len[SC_HUGE_ROW] = 2000;
    sc_build_rows(A, n, n, len, NULL);
    free(len);
}

void sc_make_arrow(ks_csr *A, ks_int n, uint64_t seed)
{
    KS_CHECK(ks_csr_alloc(A, n, n, n + 2 * (n - 1)));
    ks_int pos = 0;
    sc_rng_seed(seed);
    A->rowptr[0] = 0;
    for (ks_int c = 0; c < n; c++) {
        A->colind[pos] = c;
        A->val[pos++] = c == 0 ? 4.0 + n : sc_srand1();
    }
    A->rowptr[1] = pos;
    for (ks_int i = 1; i < n; i++) {
        A->colind[pos] = 0;
        A->val[pos++] = sc_srand1();
        A->colind[pos] = i;
        A->val[pos++] = 3.0 + sc_urand();
        A->rowptr[i + 1] = pos;
    }
}

void sc_make_dense_line(ks_csr *A, ks_int n, int column, uint64_t seed)
{
    sc_rng_seed(seed);
    if (!column) {
        KS_CHECK(ks_csr_alloc(A, 1, n, n));
        A->rowptr[0] = 0;
        A->rowptr[1] = n;
        for (ks_int c = 0; c < n; c++) {
            A->colind[c] = c;
            A->val[c] = sc_srand1();
        }
    } else {
        KS_CHECK(ks_csr_alloc(A, n, 1, n));
        for (ks_int i = 0; i <= n; i++)
            A->rowptr[i] = i;
        for (ks_int i = 0; i < n; i++) {
            A->colind[i] = 0;
            A->val[i] = sc_srand1();
        }
    }
}

void sc_make_one(ks_csr *A)
{
    KS_CHECK(ks_csr_alloc(A, 1, 1, 1));
    A->rowptr[0] = 0;
    A->rowptr[1] = 1;
    A->colind[0] = 0;
    A->val[0] = 3.5;
}

void sc_make_empty(ks_csr *A, ks_int nrows, ks_int ncols)
{
    KS_CHECK(ks_csr_alloc(A, nrows, ncols, 0));
    for (ks_int i = 0; i <= nrows; i++)
        A->rowptr[i] = 0;
}

void sc_make_gen(ks_csr *A, ks_gen_kind kind, ks_int n)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = p.ny = p.nz = n;
    KS_CHECK(ks_generate(&p, A));
}

double *sc_random_vec(ks_int n, uint64_t seed)
{
    double *v = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert_ptr_nonnull(v);
    sc_rng_seed(seed);
    for (ks_int i = 0; i < n; i++)
        v[i] = sc_srand1();
    return v;
}

/* ------------------------------------------------------------ checkers */
double sc_scaled_diff(const ks_csr *A, double alpha, const double *x, double beta,
                      const double *y0, const double *y, const double *ref)
{
    double worst = 0.0;
    for (ks_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            s += fabs(A->val[j] * x[A->colind[j]]);
        s = fabs(alpha) * s + (beta == 0.0 ? 0.0 : fabs(beta * y0[i]));
        double d = fabs(y[i] - ref[i]) / fmax(s, DBL_MIN);
        if (isnan(d) || isnan(y[i]))
            d = INFINITY;
        if (d > worst)
            worst = d;
    }
    return worst;
}

double sc_spmv_error(const ks_csr *A, double alpha, const double *x, double beta,
                     const double *y0, const double *y)
{
    double *ref = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert_ptr_nonnull(ref);
    for (ks_int i = 0; i < A->nrows; i++)
        ref[i] = beta == 0.0 ? 0.0 : y0[i];
    ks_csr_spmv_ref(A, alpha, x, beta, ref);
    double worst = sc_scaled_diff(A, alpha, x, beta, y0, y, ref);
    free(ref);
    return worst;
}

void sc_check_apply(sc_apply_fn apply, const void *L, const ks_csr *A, const sc_coef *coefs,
                    int ncoefs, double tol, const char *what)
{
    double *x = sc_random_vec(A->ncols, 101), *y0 = sc_random_vec(A->nrows, 102);
    double *y = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert_ptr_nonnull(y);
    for (int k = 0; k < ncoefs; k++) {
        for (ks_int i = 0; i < A->nrows; i++)
            y[i] = coefs[k].beta == 0.0 ? NAN : y0[i];
        apply(L, coefs[k].alpha, x, coefs[k].beta, y);
        double err = sc_spmv_error(A, coefs[k].alpha, x, coefs[k].beta, y0, y);
        ck_assert_msg(err <= tol, "%s, alpha %g beta %g: error %.3e", what, coefs[k].alpha,
                      coefs[k].beta, err);
    }
    free(x);
    free(y0);
    free(y);
}

void sc_expect_same_csr(const ks_csr *B, const ks_csr *A, const char *what)
{
    ck_assert_msg(B->nrows == A->nrows && B->ncols == A->ncols && B->nnz == A->nnz,
                  "%s: %d x %d nnz %d, want %d x %d nnz %d", what, (int)B->nrows, (int)B->ncols,
                  (int)B->nnz, (int)A->nrows, (int)A->ncols, (int)A->nnz);
    ck_assert_msg(memcmp(B->rowptr, A->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1)) == 0,
                  "%s: row pointers differ", what);
    if (A->nnz > 0) {
        ck_assert_msg(memcmp(B->colind, A->colind, sizeof(ks_int) * (size_t)A->nnz) == 0,
                      "%s: column indices differ", what);
        ck_assert_msg(memcmp(B->val, A->val, sizeof(double) * (size_t)A->nnz) == 0,
                      "%s: values differ", what);
    }
}

/* ------------------------------------------------------ shared matrices */
void sc_read_shared(const char *name, ks_csr *A)
{
    const char *path = ks_test_shared_matrix(name);
    ck_assert_msg(path != NULL, "../shared/matrices/%s absent", name);
    KS_CHECK(ks_mm_read_csr(path, A, NULL));
}

int sc_add_shared_tests(TCase *tc, const char *const *names, int n, const TTest *host,
                        const TTest *cuda, const char *what)
{
    int missing = 0;
    for (int i = 0; i < n; i++) {
        if (!ks_test_shared_matrix(names[i])) {
            missing++;
            continue;
        }
        tcase_add_loop_test(tc, host, i, i + 1);
        if (cuda)
            tcase_add_loop_test(tc, cuda, i, i + 1);
    }
    if (missing) {
        char why[128];
        snprintf(why, sizeof why, "../shared/matrices: %d of %d %s absent", missing, n, what);
        ks_test_skip(missing * (cuda ? 2 : 1), why);
    }
    return missing;
}
