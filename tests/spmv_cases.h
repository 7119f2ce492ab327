/* Shared data and checkers of the SpMV test programs (test_spmv*.c): a
 * seeded generator, deterministic builders of the test matrices (empty
 * rows, one huge row, 1x1, dense row and column, ...), random vectors, the
 * error measure against ks_csr_spmv_ref, the host-layout apply check, the
 * exact CSR comparison, and the ../shared/matrices loading.
 *
 * Every builder reseeds (or says the caller seeds), so a matrix depends
 * only on its arguments. Prefix sc_ ("spmv cases"). */
#ifndef SPMV_CASES_H
#define SPMV_CASES_H

#include "ks_test.h"

#include <stdint.h>

/* ------------------------------------------------------------ generator */
/* xorshift64 state seeded as s * golden + stream; stream defaults to 1. A
 * program calls sc_rng_stream once, first thing in main, to keep the data
 * it was written against (test_spmv_csr_family uses 7). */
void sc_rng_stream(uint64_t stream);
void sc_rng_seed(uint64_t s);
uint64_t sc_rng_next(void);
double sc_urand(void);  /* [0, 1) */
double sc_srand1(void); /* [-1, 1) */

/* ------------------------------------------------------------ matrices */
/* How sc_build_rows picks columns. dense_div == 0: a row of ncols entries
 * lists every column without drawing, others draw by rejection (then sort).
 * dense_div > 0: rows longer than ncols / dense_div use selection sampling
 * (already sorted). zero_every > 0: entries j with j % zero_every == 0 are
 * explicit zeros (no draw). NULL means all 0. */
typedef struct {
    int dense_div;
    int zero_every;
} sc_rows;

/* CSR with the given row lengths (clipped to ncols), distinct sorted
 * random columns, values in [-1, 1]; uses the generator as it stands. */
void sc_build_rows(ks_csr *A, ks_int nrows, ks_int ncols, const ks_int *len, const sc_rows *how);
/* Rows of 0..maxlen entries, about a fifth of them empty. */
void sc_make_random(ks_csr *A, ks_int nrows, ks_int ncols, int maxlen, uint64_t seed);
/* 3000 x 3000: rows of 0..5 entries and row SC_HUGE_ROW of 2000. */
#define SC_HUGE_ROW 1500
void sc_make_huge_row(ks_csr *A);
/* Arrow of order n: full row 0, full column 0, diagonal. */
void sc_make_arrow(ks_csr *A, ks_int n, uint64_t seed);
/* One dense row (1 x n) or, with column != 0, one dense column (n x 1). */
void sc_make_dense_line(ks_csr *A, ks_int n, int column, uint64_t seed);
/* The 1x1 matrix [3.5]. */
void sc_make_one(ks_csr *A);
/* nrows x ncols without entries. */
void sc_make_empty(ks_csr *A, ks_int nrows, ks_int ncols);
/* ks_generate of kind on an n (x n (x n)) grid. */
void sc_make_gen(ks_csr *A, ks_gen_kind kind, ks_int n);

/* n values in [-1, 1) from seed (one spare slot, so n == 0 allocates). */
double *sc_random_vec(ks_int n, uint64_t seed);

/* ------------------------------------------------------------ checkers */
typedef struct {
    double alpha, beta;
} sc_coef;

/* Max over rows of |y - ref| / (|alpha| (|A||x|)_i + |beta y0_i|): the
 * scale bounds a row's rounding error in any summation order, so the
 * measure ignores cancellation. NaN counts as Inf; y0 is unused when beta
 * is 0. */
double sc_scaled_diff(const ks_csr *A, double alpha, const double *x, double beta,
                      const double *y0, const double *y, const double *ref);
/* The same with ref = alpha A x + beta y0 by ks_csr_spmv_ref. */
double sc_spmv_error(const ks_csr *A, double alpha, const double *x, double beta,
                     const double *y0, const double *y);

typedef void (*sc_apply_fn)(const void *, double, const double *, double, double *);
/* apply(L, ...) against the reference for each coefficient pair, with
 * x = sc_random_vec(ncols, 101), y0 = sc_random_vec(nrows, 102) and y
 * NaN-poisoned when beta is 0; fails when an error exceeds tol. Messages
 * start with `what`. */
void sc_check_apply(sc_apply_fn apply, const void *L, const ks_csr *A, const sc_coef *coefs,
                    int ncoefs, double tol, const char *what);
/* B equals A exactly (sizes, row pointers, columns, values). */
void sc_expect_same_csr(const ks_csr *B, const ks_csr *A, const char *what);

/* ------------------------------------------------------ shared matrices */
/* Read ../shared/matrices/<name> (the test fails when it is absent). */
void sc_read_shared(const char *name, ks_csr *A);
/* Add host (and cuda, unless NULL) as loop tests over the indices of the
 * names present; record the absent ones as skipped ("../shared/matrices:
 * M of N <what> absent"). Returns how many are absent. */
int sc_add_shared_tests(TCase *tc, const char *const *names, int n, const TTest *host,
                        const TTest *cuda, const char *what);

#endif
