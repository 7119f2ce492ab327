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
/* Max |a-b| / max(1, |b|) over n entries. */
double ks_test_max_relerr(const double *a, const double *b, long n);

/* Fail the test with the library's last error message when e != KS_OK. */
#define KS_CHECK(call)                                                            \
    do {                                                                          \
        ks_error ks_chk_e_ = (call);                                              \
        ck_assert_msg(ks_chk_e_ == KS_OK, "%s failed: %s: %s", #call,             \
                      ks_error_name(ks_chk_e_), ks_last_error());                 \
    } while (0)

#endif
