/* Shared helpers for the Check test programs.
 *
 * Each program builds one Suite and ends main() with ks_test_run(suite).
 * Tests that need something absent here (a CUDA device, ../shared/matrices)
 * are not added; instead ks_test_skip() records how many were left out and
 * why, and ks_test_run() prints "SKIPPED: N (why)" lines that scripts/test
 * adds up. */
#ifndef KS_TEST_H
#define KS_TEST_H

#include <check.h>
#include "ksolve.h"

#include <stdint.h>

/* Run the suite (fork mode, so a crash fails one test, not the program),
 * print the skip lines, return the process exit status. */
int ks_test_run(Suite *s);
/* Record `count` tests not run, with the reason. */
void ks_test_skip(int count, const char *why);
/* 1 if a CUDA device is usable; else 0 (callers then ks_test_skip). */
int ks_test_have_cuda(void);
/* Full path of ../shared/matrices/<name> if it exists, else NULL. */
const char *ks_test_shared_matrix(const char *name);
/* Path of matrices/samples/<name> (always in the source tree). */
const char *ks_test_sample(const char *name);
/* A fresh temporary file path under the build directory, with suffix. */
const char *ks_test_tmpfile(const char *suffix);
/* Write text to a new temporary file and return its path. */
const char *ks_test_write_tmp(const char *suffix, const char *text);
/* Seeded xorshift generator shared by the tests, so a seed means the same
 * numbers in every program: state = s * golden + inc (inc = 1 by default). */
void ks_test_rng_seed(uint64_t s);
void ks_test_rng_seed_with(uint64_t s, uint64_t inc);
uint64_t ks_test_rng_next(void);
/* Uniform in [0, 1). */
double ks_test_urand(void);
/* OpenMP team size for the following parallel regions (no-op without OpenMP). */
void ks_test_set_threads(int t);
/* watt_2's trouble in small (a reservoir model: most rows are flow
 * equations scaled by 1e-7, a few are a well's unit-scale constraints
 * x_k - x_w = 0): the 5-point Laplacian on n x n, every row times `scale`,
 * except the nodes of the middle column (grid rows 1 .. n-2 but the
 * first), whose rows tie them to that first well node. */
void ks_test_well_poisson(int n, double scale, ks_csr *A);
/* Max |a-b| / max(1, |b|) over n entries. */
double ks_test_max_relerr(const double *a, const double *b, long n);
/* The column dots of two n x k row-interleaved blocks against dots[j]:
 * each within 1e-13 of the sum of |a(i,j) b(i,j)| (long double sums).
 * Returns the first column that misses, its reference in *ref, or -1. */
int ks_test_col_dots_miss(const double *a, const double *b, long n, int k, const double *dots,
                          long double *ref);

/* Fail the test with the library's last error message when e != KS_OK. */
#define KS_CHECK(call)                                                            \
    do {                                                                          \
        ks_error ks_chk_e_ = (call);                                              \
        ck_assert_msg(ks_chk_e_ == KS_OK, "%s failed: %s: %s", #call,             \
                      ks_error_name(ks_chk_e_), ks_last_error());                 \
    } while (0)

#endif
