/* Matrix Market reader and writer: every valid header variant in
 * matrices/samples, every malformed case (code, path and line in the
 * message), bitwise round trips (plain and gzip), vectors, the number
 * parser against strtod, and the real matrices in ../shared/matrices. */
#include "ks_test.h"
#include "matrices/mmio_internal.h"
#include "matrices/mmio_sized.h"
#include "core/host_memory.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define HDR "%%MatrixMarket matrix coordinate real general\n"

/* Value of A(i, j) (0 if absent); asserts the entry is stored at most once. */
static double at(const ks_csr *A, ks_int i, ks_int j)
{
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->colind[k] == j)
            return A->val[k];
    return 0.0;
}

static int stored(const ks_csr *A, ks_int i, ks_int j)
{
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->colind[k] == j)
            return 1;
    return 0;
}

/* Compare A with a dense row-major table (zeros = absent). */
static void assert_dense(const ks_csr *A, ks_int m, ks_int n, const double *d, ks_int nnz)
{
    ck_assert_int_eq(A->nrows, m);
    ck_assert_int_eq(A->ncols, n);
    ck_assert_int_eq(A->nnz, nnz);
    KS_CHECK(ks_csr_validate(A));
    for (ks_int i = 0; i < m; i++)
        for (ks_int j = 0; j < n; j++)
            ck_assert_msg(at(A, i, j) == d[i * n + j], "A(%d,%d) = %g, expected %g", i, j,
                          at(A, i, j), d[i * n + j]);
}

/* ------------------------------------------------------------ valid files */

START_TEST(sample_general)
{
    static const double d[] = {1.5, 0, 0, -0.5, 0,  0, 32.5, 0, 0, 7,
                               -2,  0, 0, 0,    0,  0, 0,    1e-3, 0, 0.25};
    const char *names[] = {"general_real.mtx", "general_real.mtx.gz"};
    for (int f = 0; f < 2; f++) {
        ks_csr A;
        ks_mm_info info;
        memset(&info, 0xff, sizeof info);
        KS_CHECK(ks_mm_read_csr(ks_test_sample(names[f]), &A, &info));
        assert_dense(&A, 4, 5, d, 7);
        ck_assert_int_eq(info.field, KS_MM_REAL);
        ck_assert_int_eq(info.symmetry, KS_MM_GENERAL);
        ck_assert_int_eq(info.entries_stored, 7);
        ck_assert_int_eq(info.duplicates_summed, 0);
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(sample_symmetric)
{
    static const double d[] = {4, -1, 0, 2.5, -1, 4, -1, 0, 0, -1, 4, 0, 2.5, 0, 0, 0};
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_sample("symmetric.mtx"), &A, &info));
    assert_dense(&A, 4, 4, d, 9);
    ck_assert_int_eq(info.symmetry, KS_MM_SYMMETRIC);
    ck_assert_int_eq(info.entries_stored, 6);
    ks_csr_free(&A);
}
END_TEST

START_TEST(sample_skew)
{
    static const double d[] = {0, -5, 0, 5, 0, 1.5, 0, -1.5, 0};
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_sample("skew.mtx"), &A, &info));
    assert_dense(&A, 3, 3, d, 4);
    ck_assert_int_eq(info.symmetry, KS_MM_SKEW);
    ck_assert_int_eq(info.entries_stored, 2);
    ks_csr_free(&A);
}
END_TEST

START_TEST(sample_pattern)
{
    static const double d[] = {1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0};
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_sample("pattern.mtx"), &A, &info));
    assert_dense(&A, 3, 4, d, 4);
    ck_assert_int_eq(info.field, KS_MM_PATTERN);
    ks_csr_free(&A);

    /* Symmetric pattern with one duplicate pair: summed, counted once. */
    static const double e[] = {1, 2, 0, 2, 0, 1, 0, 1, 1};
    KS_CHECK(ks_mm_read_csr(ks_test_sample("pattern_symmetric_dup.mtx"), &A, &info));
    assert_dense(&A, 3, 3, e, 6);
    ck_assert_int_eq(info.field, KS_MM_PATTERN);
    ck_assert_int_eq(info.symmetry, KS_MM_SYMMETRIC);
    ck_assert_int_eq(info.entries_stored, 5);
    ck_assert_int_eq(info.duplicates_summed, 1);
    ks_csr_free(&A);
}
END_TEST

START_TEST(sample_integer_keeps_explicit_zero)
{
    static const double d[] = {7, 0, 0, 0, -3, 0, 12, 0, 0};
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_sample("integer.mtx"), &A, &info));
    assert_dense(&A, 3, 3, d, 4);
    ck_assert(stored(&A, 2, 2)); /* the explicit zero */
    ck_assert_int_eq(info.field, KS_MM_INTEGER);
    ks_csr_free(&A);
}
END_TEST

START_TEST(sample_crlf_comments_no_field)
{
    static const double d[] = {1, 0, 0, 0, 2, 0, 0, 0, 3};
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_sample("crlf_comments.mtx"), &A, &info));
    assert_dense(&A, 3, 3, d, 3);
    ck_assert_int_eq(info.field, KS_MM_REAL);
    ck_assert_int_eq(info.symmetry, KS_MM_GENERAL);
    ks_csr_free(&A);
}
END_TEST

/* Header and layout variants seen in the wild, written here. */
START_TEST(tolerated_variants)
{
    static const char *const texts[] = {
        /* no final newline */
        HDR "2 2 2\n1 1 1\n2 2 2",
        /* blank lines and a comment between entries, trailing blank lines */
        HDR "2 2 2\n1 1 1\n\n% note\n   \n2 2 2\n\n\n",
        /* tabs, leading blanks, '+' signs on values, "double" field */
        "%%MatrixMarket matrix coordinate double general\n\t2\t2\t2\n  1 1 +1.0\n2\t2\t2e0\t\n",
        /* lower-case header, symmetry word only */
        "%%matrixmarket matrix coordinate general\n2 2 2\n1 1 1\n2 2 2\n",
        /* leading blank lines before the banner, CR line ends */
        "\n\n%%MatrixMarket matrix coordinate real general\r\n2 2 2\r\n1 1 1\r\n2 2 2\r\n",
        /* duplicates summed */
        HDR "2 2 3\n1 1 0.25\n2 2 2\n1 1 0.75\n",
    };
    static const double d[] = {1, 0, 0, 2};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        const char *path = ks_test_write_tmp(".mtx", texts[t]);
        ks_csr A;
        ks_mm_info info;
        ks_error e = ks_mm_read_csr(path, &A, &info);
        ck_assert_msg(e == KS_OK, "variant %zu: %s", t, ks_last_error());
        assert_dense(&A, 2, 2, d, 2);
        ck_assert_int_eq(info.duplicates_summed, t == 5 ? 1 : 0);
        ks_csr_free(&A);
        unlink(path);
    }
}
END_TEST

START_TEST(empty_matrix)
{
    const char *path = ks_test_write_tmp(".mtx", HDR "3 2 0\n");
    ks_csr A;
    KS_CHECK(ks_mm_read_csr(path, &A, NULL));
    ck_assert_int_eq(A.nrows, 3);
    ck_assert_int_eq(A.ncols, 2);
    ck_assert_int_eq(A.nnz, 0);
    KS_CHECK(ks_csr_validate(&A));
    ks_csr_free(&A);
    unlink(path);
}
END_TEST

/* ------------------------------------------------------- malformed files */

typedef struct bad_case {
    const char *what;
    const char *text;
    int line;           /* expected line number in the message */
    const char *needle; /* expected words in the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"fewer entries", HDR "2 2 3\n1 1 1\n2 2 1\n", 5, "file ends after 2 of the 3 entries"},
    {"fewer entries, trailing blank lines", HDR "2 2 3\n1 1 1\n\n\n", 6, "1 of the 3"},
    {"more entries", HDR "2 2 1\n1 1 1\n2 2 1\n", 4, "more entries than the 1 declared on line 2"},
    {"row index zero", HDR "2 2 2\n1 1 1\n0 2 1\n", 4, "row index 0 out of range (expected 1..2)"},
    {"row index too large", HDR "% c\n2 3 1\n3 1 1\n", 4, "row index 3 out of range"},
    {"column index zero", HDR "2 2 1\n1 0 1\n", 3, "column index 0 out of range"},
    {"column index too large", HDR "2 3 1\n1 4 1\n", 3, "column index 4 out of range (expected 1..3)"},
    {"negative index", HDR "2 2 1\n-1 1 1\n", 3, "bad row index '-1'"},
    {"non-numeric index", HDR "2 2 1\n1 x 1\n", 3, "bad column index 'x'"},
    {"fractional index", HDR "2 2 1\n1.0 1 1\n", 3, "bad row index '1.0'"},
    {"NaN value", HDR "2 2 2\n1 1 1\n2 2 nan\n", 4, "NaN"},
    {"Inf value", HDR "2 2 1\n1 1 -inf\n", 3, "infinite"},
    {"overflowing value", HDR "2 2 1\n1 1 1e999\n", 3, "infinite or out of range"},
    {"unparsable value", HDR "2 2 1\n1 1 1.2.3\n", 3, "bad value '1.2.3' (expected a real number)"},
    {"word as value", HDR "2 2 1\n1 1 abc\n", 3, "bad value 'abc'"},
    {"dangling exponent", HDR "2 2 1\n1 1 1e\n", 3, "bad value '1e'"},
    {"Fortran exponent", HDR "2 2 1\n1 1 1.5d0\n", 3, "bad value '1.5d0'"},
    {"hexadecimal value", HDR "2 2 1\n1 1 0x10\n", 3, "bad value '0x10'"},
    {"hexadecimal float", HDR "2 2 1\n1 1 -0X1p3\n", 3, "bad value '-0X1p3'"},
    {"missing value", HDR "2 2 2\n1 1\n2 2 1\n", 3, "missing value (expected 'row col value')"},
    {"truncated last line", HDR "2 2 2\n1 1 1\n2 2", 4, "missing value"},
    {"truncated after row index", HDR "2 2 2\n1 1 1\n2", 4, "missing column index"},
    {"extra field", HDR "2 2 1\n1 1 1 7\n", 3, "unexpected text '7' after the value"},
    {"value in a pattern file", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 5\n", 3,
     "unexpected text '5' after the column index"},
    {"integer file with a fraction", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n",
     3, "expected an integer"},
    {"symmetric upper triangle",
     "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1\n2 1 1\n1 3 2\n", 5,
     "entry (1, 3) above the diagonal"},
    {"skew diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n", 4,
     "diagonal entry (2, 2)"},
    {"skew upper triangle", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n1 2 1\n", 3,
     "upper-triangle entry (1, 2)"},
    {"symmetric not square", "%%MatrixMarket matrix coordinate real symmetric\n3 4 0\n", 2, "not square"},
    {"empty file", "", 1, "empty file"},
    {"only blank lines", "\n\n", 3, "empty file"},
    {"no banner", "2 2 1\n1 1 1\n", 1, "missing '%%MatrixMarket' header"},
    {"comment instead of banner", "% hello\n2 2 0\n", 1, "missing '%%MatrixMarket'"},
    {"unknown header word", "%%MatrixMarket matrix coordinate real sideways\n2 2 0\n", 1,
     "unknown word 'sideways'"},
    {"header without format", "%%MatrixMarket matrix real general\n2 2 0\n", 1, "lacks the format"},
    {"header field twice", "%%MatrixMarket matrix coordinate real integer general\n2 2 0\n", 1,
     "field twice"},
    {"no size line", HDR "% only comments\n\n", 4, "before the size line"},
    {"size line with two numbers", HDR "% c\n2 2\n", 3, "size line has 2 numbers"},
    {"size line with four numbers", HDR "2 2 1 1\n1 1 1\n", 2, "more than 3 numbers"},
    {"size line not numeric", HDR "2 two 1\n", 2, "bad size line: 'two'"},
    {"negative size", HDR "-2 2 1\n", 2, "bad size line: '-2'"},
    {"array matrix", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1,
     "'array' format is not supported"},
};

START_TEST(malformed_case)
{
    const bad_case *c = &bad_cases[_i];
    const char *path = ks_test_write_tmp(".mtx", c->text);
    ks_csr A;
    memset(&A, 0x5a, sizeof A);
    ks_clear_error();
    ks_error e = ks_mm_read_csr(path, &A, NULL);
    ck_assert_msg(e == KS_ERR_FORMAT, "%s: got %s (%s)", c->what, ks_error_name(e), ks_last_error());
    const char *msg = ks_last_error();
    char want[1200];
    snprintf(want, sizeof want, "%s:%d: ", path, c->line);
    ck_assert_msg(strstr(msg, want) != NULL, "%s: message '%s' lacks '%s'", c->what, msg, want);
    ck_assert_msg(strstr(msg, c->needle) != NULL, "%s: message '%s' lacks '%s'", c->what, msg,
                  c->needle);
    ck_assert_msg(strchr(msg, '(') != NULL || strstr(msg, "expected") != NULL,
                  "%s: message '%s' does not say what was expected", c->what, msg);
    ck_assert_ptr_null(A.rowptr); /* the output is cleared on failure */
    unlink(path);
}
END_TEST

START_TEST(unsupported_and_io_errors)
{
    ks_csr A;
    const char *path = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate complex general\n"
                                                 "1 1 1\n1 1 1 0\n");
    ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "complex"));
    ck_assert_ptr_nonnull(strstr(ks_last_error(), path));
    unlink(path);
    path = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n");
    ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_UNSUPPORTED);
    unlink(path);

    const char *missing = "/nonexistent-dir/none.mtx";
    ck_assert_int_eq(ks_mm_read_csr(missing, &A, NULL), KS_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), missing));
    ck_assert_int_eq(ks_mm_read_csr(NULL, &A, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_mm_read_csr(path, NULL, NULL), KS_ERR_ARG);
    double *v;
    ks_int n;
    ck_assert_int_eq(ks_mm_read_vector(missing, &v, &n), KS_ERR_IO);
    ck_assert_ptr_null(v);

    /* A directory opens but cannot be read. */
    ck_assert_int_eq(ks_mm_read_csr("/tmp", &A, NULL), KS_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "/tmp"));

    /* 3e9 rows do not fit 32-bit indices. */
    path = ks_test_write_tmp(".mtx", HDR "3000000000 2 0\n");
    ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), ":2:"));
    unlink(path);
}
END_TEST

/* Line numbers stay exact across the reader's 4 MiB chunks, in plain and
 * gzip files; a line longer than the buffer (a 5 MB comment) is read. */
START_TEST(error_line_across_chunks)
{
    enum { N = 400000, BAD = 345678 }; /* ~9 MB of entries */
    for (int gz = 0; gz < 2; gz++) {
        const char *path = ks_test_tmpfile(gz ? ".mtx.gz" : ".mtx");
        gzFile f = gzopen(path, gz ? "wb1" : "wbT");
        ck_assert_ptr_nonnull(f);
        gzputs(f, HDR "% a long comment line follows\n%");
        char *longline = malloc(5000001);
        memset(longline, 'x', 5000000);
        longline[5000000] = '\0';
        gzputs(f, longline);
        free(longline);
        gzprintf(f, "\n%d %d %d\n", N, N, N);
        /* lines: 1 banner, 2 comment, 3 long comment, 4 size, entry e on 5 + e */
        for (int e = 0; e < N; e++) {
            if (5 + e == BAD)
                gzprintf(f, "%d %d 1.5e-3x\n", e + 1, e + 1);
            else
                gzprintf(f, "%d %d %d.25\n", e + 1, (e * 7) % N + 1, e % 1000);
        }
        ck_assert_int_eq(gzclose(f), Z_OK);
        ks_csr A;
        ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_FORMAT);
        char want[1100];
        snprintf(want, sizeof want, "%s:%d: bad value '1.5e-3x'", path, BAD);
        ck_assert_msg(strstr(ks_last_error(), want) != NULL, "'%s' lacks '%s'", ks_last_error(), want);
        unlink(path);
    }
}
END_TEST

START_TEST(long_comment_and_large_valid_file)
{
    enum { N = 300000 };
    const char *path = ks_test_tmpfile(".mtx");
    FILE *f = fopen(path, "w");
    fputs(HDR "%", f);
    for (int k = 0; k < 600000; k++)
        fputs("0123456789", f); /* a 6 MB comment line, longer than the read buffer */
    fprintf(f, "\n%d %d %d\n", N, N, N);
    for (int e = 0; e < N; e++)
        fprintf(f, "%d %d %d\n", e + 1, N - e, e);
    fclose(f);
    ks_csr A;
    KS_CHECK(ks_mm_read_csr(path, &A, NULL));
    ck_assert_int_eq(A.nnz, N);
    for (ks_int i = 0; i < N; i += 997) {
        ck_assert_int_eq(A.rowptr[i + 1] - A.rowptr[i], 1);
        ck_assert_int_eq(A.colind[A.rowptr[i]], N - 1 - i);
        ck_assert_double_eq(A.val[A.rowptr[i]], (double)i);
    }
    ks_csr_free(&A);
    unlink(path);
}
END_TEST

/* ------------------------------------------------------------ round trips */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Values of every kind: integers, ordinary decimals of many magnitudes,
 * random bit patterns (huge, tiny, subnormal), signed zeros. */
static double random_value(void)
{
    switch (rng() % 6) {
    case 0: return (double)((int64_t)(rng() % 2001) - 1000);
    case 1:
    case 2: return ((double)(rng() >> 11) / 9007199254740992.0 - 0.5) * pow(10.0, (double)(rng() % 61) - 30);
    case 3: {
        double x;
        do {
            uint64_t b = rng();
            memcpy(&x, &b, sizeof x);
        } while (!isfinite(x));
        return x;
    }
    case 4: return rng() & 1 ? -0.0 : 0.0;
    default: return 1.0 / (double)(rng() % 1000 + 1);
    }
}

static void random_csr(ks_csr *A, ks_int m, ks_int n, ks_int per_row)
{
    ks_int ne = m * per_row;
    ks_int *r = malloc((size_t)ne * sizeof *r), *c = malloc((size_t)ne * sizeof *c);
    double *v = malloc((size_t)ne * sizeof *v);
    for (ks_int e = 0; e < ne; e++) {
        r[e] = (ks_int)(e / per_row);
        c[e] = (ks_int)(rng() % (uint64_t)n);
        v[e] = random_value();
    }
    /* Random columns may repeat (summed); fresh values afterwards. */
    KS_CHECK(ks_csr_from_coo(m, n, ne, r, c, v, A, NULL));
    for (ks_int k = 0; k < A->nnz; k++)
        A->val[k] = random_value();
    free(r);
    free(c);
    free(v);
}

static void assert_same_bits(const ks_csr *A, const ks_csr *B)
{
    ck_assert_int_eq(A->nrows, B->nrows);
    ck_assert_int_eq(A->ncols, B->ncols);
    ck_assert_int_eq(A->nnz, B->nnz);
    ck_assert_int_eq(memcmp(A->rowptr, B->rowptr, ((size_t)A->nrows + 1) * sizeof(ks_int)), 0);
    ck_assert_int_eq(memcmp(A->colind, B->colind, (size_t)A->nnz * sizeof(ks_int)), 0);
    for (ks_int k = 0; k < A->nnz; k++)
        ck_assert_msg(memcmp(&A->val[k], &B->val[k], sizeof(double)) == 0,
                      "entry %d: wrote %.17g, read %.17g", k, A->val[k], B->val[k]);
}

START_TEST(round_trip_bitwise)
{
    const char *suffix[] = {".mtx", ".mtx.gz"};
    for (int s = 0; s < 2; s++) {
        ks_csr A, B;
        random_csr(&A, 300, 250, 12);
        const char *path = ks_test_tmpfile(suffix[s]);
        KS_CHECK(ks_mm_write_csr(path, &A));
        /* The gzip file really is gzip, the plain one really is text. */
        FILE *f = fopen(path, "rb");
        unsigned char magic[2] = {0, 0};
        ck_assert_int_eq(fread(magic, 1, 2, f), 2);
        fclose(f);
        ck_assert_int_eq(magic[0] == 0x1f && magic[1] == 0x8b, s == 1);
        ks_mm_info info;
        KS_CHECK(ks_mm_read_csr(path, &B, &info));
        ck_assert_int_eq(info.entries_stored, A.nnz);
        ck_assert_int_eq(info.duplicates_summed, 0);
        assert_same_bits(&A, &B);
        ks_csr_free(&A);
        ks_csr_free(&B);
        unlink(path);
    }
}
END_TEST

START_TEST(write_errors)
{
    ks_csr A;
    random_csr(&A, 5, 5, 2);
    ck_assert_int_eq(ks_mm_write_csr("/nonexistent-dir/x.mtx", &A), KS_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "/nonexistent-dir/x.mtx"));
    A.colind[0] = 7;
    ck_assert_int_eq(ks_mm_write_csr(ks_test_tmpfile(".mtx"), &A), KS_ERR_ARG);
    ks_csr_free(&A);
    ck_assert_int_eq(ks_mm_write_csr(NULL, &A), KS_ERR_ARG);
    ck_assert_int_eq(ks_mm_write_vector("/nonexistent-dir/v.mtx", (double[]){1}, 1), KS_ERR_IO);
    ck_assert_int_eq(ks_mm_write_vector(ks_test_tmpfile(".mtx"), NULL, 3), KS_ERR_ARG);
}
END_TEST

/* Entries of a folder other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void assert_file_text(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s is gone", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    ck_assert_str_eq(buf, text);
}

/* The writer writes beside the target and renames on success: a failed
 * write leaves an existing file as it was and no temporary file; a
 * special file (here a FIFO) is written in place and never removed. */
START_TEST(write_never_removes_what_it_did_not_create)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/kswrite_XXXXXX", getenv("KS_TEST_TMP") ? getenv("KS_TEST_TMP") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char keep[1100], fifo[1100];
    snprintf(keep, sizeof keep, "%s/keep.mtx", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo.mtx", dir);
    FILE *f = fopen(keep, "w");
    fputs("precious\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(keep, 0640), 0);

    /* A write that fails half way (file size limit: EFBIG, as a full disk
     * would give ENOSPC). */
    ks_csr A;
    random_csr(&A, 400, 400, 5); /* ~2000 lines, well over 4 KiB */
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ks_error e = ks_mm_write_csr(keep, &A);
    ks_error ev = ks_mm_write_vector(keep, A.val, A.nnz);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(e, KS_ERR_IO);
    ck_assert_int_eq(ev, KS_ERR_IO);
    ck_assert_msg(strstr(ks_last_error(), "keep.mtx") != NULL, "%s", ks_last_error());
    assert_file_text(keep, "precious\n");
    ck_assert_int_eq(count_entries(dir), 1);

    /* A FIFO with no reader: an error at once, the FIFO stays. */
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(ks_mm_write_vector(fifo, (double[]){1, 2}, 2), KS_ERR_IO);
    ck_assert_msg(strstr(ks_last_error(), "no reader") != NULL, "%s", ks_last_error());
    struct stat st;
    ck_assert_int_eq(stat(fifo, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    /* With a reader it is written in place (not replaced by a regular file). */
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    ck_assert_int_ge(rd, 0);
    KS_CHECK(ks_mm_write_vector(fifo, (double[]){1, 2}, 2));
    char buf[256] = {0};
    ck_assert_int_gt(read(rd, buf, sizeof buf - 1), 0);
    close(rd);
    ck_assert_ptr_nonnull(strstr(buf, "2 1\n1\n2\n"));
    ck_assert_int_eq(stat(fifo, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    unlink(fifo);

    /* A successful write replaces the file, keeping its permissions. */
    KS_CHECK(ks_mm_write_csr(keep, &A));
    ks_csr B;
    KS_CHECK(ks_mm_read_csr(keep, &B, NULL));
    assert_same_bits(&A, &B);
    ck_assert_int_eq(stat(keep, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(count_entries(dir), 1);
    ks_csr_free(&A);
    ks_csr_free(&B);
    unlink(keep);
    rmdir(dir);
}
END_TEST

START_TEST(gzip_truncated_or_corrupt)
{
    /* A gzip file cut in half must fail, not read as a shorter matrix. */
    ks_csr A, B;
    random_csr(&A, 2000, 2000, 10);
    const char *path = ks_test_tmpfile(".mtx.gz");
    KS_CHECK(ks_mm_write_csr(path, &A));
    ks_csr_free(&A);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    ck_assert_int_eq(truncate(path, size / 2), 0);
    fclose(f);
    ks_error e = ks_mm_read_csr(path, &B, NULL);
    ck_assert_msg(e == KS_ERR_FORMAT, "got %s: %s", ks_error_name(e), ks_last_error());
    ck_assert_ptr_nonnull(strstr(ks_last_error(), path));
    ck_assert_ptr_null(B.rowptr);
    unlink(path);
}
END_TEST

/* Append raw bytes to a file. */
static void append_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

START_TEST(gzip_trailing_bytes)
{
    /* Two gzip members one after the other are one file (as gzip -d reads
     * them); anything else after the stream's end is refused, naming the
     * file, instead of being ignored. */
    const char *path = ks_test_tmpfile(".mtx.gz");
    gzFile g = gzopen(path, "wb");
    ck_assert_ptr_nonnull(g);
    gzputs(g, HDR "2 2 2\n1 1 4\n");
    gzclose(g);
    g = gzopen(path, "ab");
    ck_assert_ptr_nonnull(g);
    gzputs(g, "2 2 5\n");
    gzclose(g);
    ks_csr A;
    KS_CHECK(ks_mm_read_csr(path, &A, NULL));
    ck_assert_int_eq(A.nnz, 2);
    ck_assert(at(&A, 1, 1) == 5.0);
    ks_csr_free(&A);
    append_bytes(path, "junk\n", 5);
    ks_error e = ks_mm_read_csr(path, &A, NULL);
    ck_assert_msg(e == KS_ERR_FORMAT, "got %s: %s", ks_error_name(e), ks_last_error());
    ck_assert_ptr_nonnull(strstr(ks_last_error(), path));
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "bytes after the end of the gzip stream"));
    ck_assert_ptr_null(A.rowptr);
    /* Zero padding counts as bytes after the end too. */
    unlink(path);
    g = gzopen(path, "wb");
    gzputs(g, HDR "1 1 1\n1 1 3\n");
    gzclose(g);
    append_bytes(path, (const char[4]){0, 0, 0, 0}, 4);
    ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_FORMAT);
    unlink(path);
}
END_TEST

/* ---------------------------------------------------------------- vectors */

START_TEST(vector_reads)
{
    double *v;
    ks_int n;
    KS_CHECK(ks_mm_read_vector(ks_test_sample("vector_array.mtx"), &v, &n));
    ck_assert_int_eq(n, 4);
    ck_assert_double_eq(v[0], 1.0);
    ck_assert_double_eq(v[1], -2.5);
    ck_assert_double_eq(v[2], 300.0);
    ck_assert_double_eq(v[3], 0.0);
    free(v);
    KS_CHECK(ks_mm_read_vector(ks_test_sample("vector_coord.mtx"), &v, &n));
    ck_assert_int_eq(n, 5);
    const double w[] = {0, 3.5, 0, 0, -1};
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq(v[i], w[i]);
    free(v);
    /* n x 1 coordinate */
    const char *path = ks_test_write_tmp(".mtx", HDR "3 1 2\n3 1 4\n1 1 -2\n");
    KS_CHECK(ks_mm_read_vector(path, &v, &n));
    ck_assert_int_eq(n, 3);
    ck_assert_double_eq(v[0], -2.0);
    ck_assert_double_eq(v[1], 0.0);
    ck_assert_double_eq(v[2], 4.0);
    free(v);
    unlink(path);
    /* 1 x n array */
    path = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix array real general\n1 2\n5\n6\n");
    KS_CHECK(ks_mm_read_vector(path, &v, &n));
    ck_assert_int_eq(n, 2);
    ck_assert_double_eq(v[1], 6.0);
    free(v);
    unlink(path);
}
END_TEST

/* Running out of memory while reading a vector names the file (address
 * space limited in this forked test process; ASan reserves more address
 * space than any useful limit, so it is skipped there). A coordinate
 * vector is dense from the start: 8 GB asked for 10^9 rows, which the
 * memory check lets through (the machine has it) and the limit refuses. */
START_TEST(vector_out_of_memory_names_file)
{
#if defined(__SANITIZE_ADDRESS__)
    return;
#endif
    const char *path = ks_test_tmpfile(".mtx");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n1000000000 1 1\n1 1 1\n");
    fclose(f);
    setenv("KS_MEM_AVAILABLE", "1T", 1); /* the check passes on any machine */
    struct rlimit lim;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &lim), 0);
    lim.rlim_cur = (rlim_t)1 << 30; /* 1 GiB: less than the 8 GB asked */
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
    double *v = NULL;
    ks_int n = 0;
    ks_error e = ks_mm_read_vector(path, &v, &n);
    ck_assert_msg(e == KS_ERR_MEMORY, "got %s: %s", ks_error_name(e), ks_last_error());
    ck_assert_msg(strstr(ks_last_error(), path) != NULL, "%s", ks_last_error());
    ck_assert_ptr_null(v);
    /* A matrix whose CSR build runs out (10^9 rows: 4 GB of row pointers):
     * the file named once (it was named twice on this path). */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n1000000000 1000000000 1\n"
               "1 1 1\n");
    fclose(f);
    ks_csr A;
    e = ks_mm_read_csr(path, &A, NULL);
    ck_assert_msg(e == KS_ERR_MEMORY, "got %s: %s", ks_error_name(e), ks_last_error());
    char want[1200];
    snprintf(want, sizeof want, "%s: out of host memory", path);
    ck_assert_msg(strstr(ks_last_error(), want) == ks_last_error() &&
                      !strstr(ks_last_error() + 1, path),
                  "%s", ks_last_error());
    ck_assert_ptr_null(A.rowptr);
    unsetenv("KS_MEM_AVAILABLE");
    unlink(path);
}
END_TEST

/* The number of times needle occurs in hay. */
static int count_of(const char *hay, const char *needle)
{
    int k = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        k++;
    return k;
}

/* KS_MEM_AVAILABLE fakes the machine's memory; without it the figure comes
 * from the system. */
START_TEST(memory_available_figure)
{
    const char *src = NULL;
    setenv("KS_MEM_AVAILABLE", "2k", 1);
    ck_assert_uint_eq(ks_host_memory_available(&src), 2048);
    ck_assert_str_eq(src, "KS_MEM_AVAILABLE");
    setenv("KS_MEM_AVAILABLE", "1048576", 1);
    ck_assert_uint_eq(ks_host_memory_available(NULL), 1048576);
    ck_assert_int_eq(ks_host_memory_check(1048576, "x"), KS_OK);
    ck_assert_int_eq(ks_host_memory_check(1048577, "this test"), KS_ERR_MEMORY);
    ck_assert_str_eq(ks_last_error(), "this test needs 1.0 MB, but 1.0 MB of memory is "
                                      "available (KS_MEM_AVAILABLE)");
    setenv("KS_MEM_AVAILABLE", "lots", 1); /* not a count: the system's figure */
    ks_host_memory_available(&src);
    ck_assert_str_ne(src, "KS_MEM_AVAILABLE");
    unsetenv("KS_MEM_AVAILABLE");
}
END_TEST

/* A few bytes of header cannot make the reader allocate gigabytes: the
 * reader's peak (4 bytes a row, the entries) is checked against the memory
 * available before anything of that size is allocated, naming the file,
 * the size line, what is asked and what there is. A huge dimension with
 * few entries that fits still reads. */
START_TEST(header_sizes_checked_against_memory)
{
    setenv("KS_MEM_AVAILABLE", "1M", 1);
    ks_csr A;
    /* The 78-byte file: 10^9 x 10^9, one entry. */
    const char *path = ks_test_write_tmp(".mtx", HDR "1000000000 1000000000 1\n1 1 1\n");
    ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_MEMORY);
    char want[1200];
    snprintf(want, sizeof want, "%s:2: reading this 1000000000 x 1000000000 matrix (1 entries "
             "declared) needs 4.0 GB, but 1.0 MB of memory is available (KS_MEM_AVAILABLE)", path);
    ck_assert_str_eq(ks_last_error(), want);
    ck_assert_ptr_null(A.rowptr);
    unlink(path);

    /* Both sides of the line: 10^5 rows (0.4 MB of rows) read, 10^6 (4 MB) do not. */
    path = ks_test_write_tmp(".mtx", HDR "100000 100000 1\n100000 7 2.5\n");
    KS_CHECK(ks_mm_read_csr(path, &A, NULL));
    ck_assert_int_eq(A.nrows, 100000);
    ck_assert_int_eq(A.nnz, 1);
    ck_assert_int_eq(A.rowptr[99999], 0);
    ck_assert_int_eq(A.rowptr[100000], 1);
    ck_assert_int_eq(A.colind[0], 6);
    KS_CHECK(ks_csr_validate(&A));
    ks_csr_free(&A);
    unlink(path);
    path = ks_test_write_tmp(".mtx", HDR "1000000 1000000 1\n1 1 1\n");
    ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_MEMORY);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), ":2: reading this 1000000 x 1000000 matrix"));
    ck_assert_int_eq(count_of(ks_last_error(), path), 1); /* the file named once */
    unlink(path);

    /* What the caller will allocate a row counts too (the tool's vectors). */
    path = ks_test_write_tmp(".mtx", HDR "100000 100000 1\n1 1 1\n");
    ck_assert_int_eq(ks_mm_read_csr_sized(path, &A, NULL, 48, "the solve's vectors"),
                     KS_ERR_MEMORY);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "matrix (1 entries declared) and the solve's "
                                                  "vectors needs 5.2 MB, but 1.0 MB"));
    unlink(path);

    /* Declared entries are bounded by the bytes that follow: 10^9 entries
     * claimed in a few bytes (plain or gzip) are not sized for, and the
     * file ends where it ends. */
    for (int gz = 0; gz < 2; gz++) {
        path = ks_test_tmpfile(gz ? ".mtx.gz" : ".mtx");
        gzFile f = gzopen(path, gz ? "wb9" : "wbT");
        ck_assert_ptr_nonnull(f);
        gzputs(f, HDR "2 2 1000000000\n1 1 1\n");
        gzclose(f);
        ck_assert_int_eq(ks_mm_read_csr(path, &A, NULL), KS_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "file ends after 1 of the 1000000000"));
        unlink(path);
    }
    /* A symmetric file mirrors: its entries count twice. */
    path = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                                     "5 5 2\n1 1 1\n2 1 1\n");
    KS_CHECK(ks_mm_read_csr(path, &A, NULL));
    ck_assert_int_eq(A.nnz, 3);
    ks_csr_free(&A);
    unlink(path);

    /* Vectors: a dense coordinate vector of 10^9 rows is refused before
     * its 8 GB; an array's values are stored as they come, so its header
     * alone allocates nothing. */
    double *v = NULL;
    ks_int n = 0;
    path = ks_test_write_tmp(".mtx", HDR "1000000000 1 1\n1 1 1\n");
    ck_assert_int_eq(ks_mm_read_vector(path, &v, &n), KS_ERR_MEMORY);
    snprintf(want, sizeof want, "%s:2: reading this vector of 1000000000 rows needs 8.0 GB, but "
             "1.0 MB of memory is available (KS_MEM_AVAILABLE)", path);
    ck_assert_str_eq(ks_last_error(), want);
    ck_assert_ptr_null(v);
    unlink(path);
    path = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix array real general\n"
                                     "1000000000 1\n1\n");
    ck_assert_int_eq(ks_mm_read_vector(path, &v, &n), KS_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), ":4: file ends after 1 of the 1000000000 values"));
    ck_assert_ptr_null(v);
    unlink(path);
    unsetenv("KS_MEM_AVAILABLE");
}
END_TEST

/* A vector whose length the caller knows is refused at its size line,
 * before it is allocated, naming both lengths. */
START_TEST(vector_length_checked_at_size_line)
{
    double *v = NULL;
    ks_int n = 0;
    const char *path = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix array real general\n"
                                                 "% b\n3 1\n1\n2\n3\n");
    ck_assert_int_eq(ks_mm_read_vector_sized(path, 5, "b", "A", &v, &n), KS_ERR_SIZE);
    char want[1100];
    snprintf(want, sizeof want, "%s:3: b has 3 rows but A has 5", path);
    ck_assert_str_eq(ks_last_error(), want);
    ck_assert_ptr_null(v);
    KS_CHECK(ks_mm_read_vector_sized(path, 3, "b", "A", &v, &n));
    ck_assert_int_eq(n, 3);
    ck_assert_double_eq(v[2], 3.0);
    free(v);
    unlink(path);
}
END_TEST

static const bad_case bad_vectors[] = {
    {"not a vector", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 2, "not a vector"},
    {"too few values", "%%MatrixMarket matrix array real general\n% c\n3 1\n1\n2\n", 6,
     "file ends after 2 of the 3 values"},
    {"too many values", "%%MatrixMarket matrix array real general\n2 1\n1\n2\n3\n", 5,
     "more values than the 2"},
    {"two values on a line", "%%MatrixMarket matrix array real general\n2 1\n1 2\n", 3,
     "one value per line"},
    {"NaN in array", "%%MatrixMarket matrix array real general\n2 1\n1\nNaN\n", 4, "NaN"},
    {"bad number in array", "%%MatrixMarket matrix array real general\n2 1\n1\n0x\n", 4, "bad value"},
    {"hexadecimal in array", "%%MatrixMarket matrix array real general\n2 1\n1\n0x1A\n", 4,
     "bad value '0x1A'"},
    {"symmetric vector", "%%MatrixMarket matrix coordinate real symmetric\n1 1 1\n1 1 1\n", 1,
     "must be 'general'"},
    {"coordinate index out of range", HDR "3 1 1\n4 1 1\n", 3, "row index 4 out of range"},
    {"array pattern", "%%MatrixMarket matrix array pattern general\n2 1\n", 1, "not a valid combination"},
};

START_TEST(malformed_vector)
{
    const bad_case *c = &bad_vectors[_i];
    const char *path = ks_test_write_tmp(".mtx", c->text);
    double *v = (double *)&v;
    ks_int n = -7;
    ks_error e = ks_mm_read_vector(path, &v, &n);
    ck_assert_msg(e == KS_ERR_FORMAT, "%s: got %s (%s)", c->what, ks_error_name(e), ks_last_error());
    char want[1200];
    snprintf(want, sizeof want, "%s:%d: ", path, c->line);
    ck_assert_msg(strstr(ks_last_error(), want) != NULL, "%s: '%s' lacks '%s'", c->what,
                  ks_last_error(), want);
    ck_assert_msg(strstr(ks_last_error(), c->needle) != NULL, "%s: '%s' lacks '%s'", c->what,
                  ks_last_error(), c->needle);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(n, 0);
    unlink(path);
}
END_TEST

START_TEST(vector_round_trip)
{
    enum { N = 1000 };
    double *x = malloc(N * sizeof *x), *y;
    for (int i = 0; i < N; i++)
        x[i] = random_value();
    const char *suffix[] = {".mtx", ".mtx.gz"};
    for (int s = 0; s < 2; s++) {
        const char *path = ks_test_tmpfile(suffix[s]);
        KS_CHECK(ks_mm_write_vector(path, x, N));
        ks_int n;
        KS_CHECK(ks_mm_read_vector(path, &y, &n));
        ck_assert_int_eq(n, N);
        ck_assert_int_eq(memcmp(x, y, N * sizeof *x), 0);
        free(y);
        unlink(path);
    }
    free(x);
}
END_TEST

/* ---------------------------------------------------------- number parser */

static void check_parse(const char *s)
{
    double a, b;
    const char *ea;
    char *eb;
    b = strtod(s, &eb);
    int ok = ks_num_parse_double(s, &ea, &a);
    ck_assert_msg(ok, "'%s' not parsed", s);
    ck_assert_msg(ea == eb, "'%s': parser stopped at %td, strtod at %td", s, ea - s, eb - s);
    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "'%s': parsed %.17g (%a), strtod %.17g (%a)", s, a,
                  a, b, b);
}

START_TEST(number_parser_matches_strtod)
{
    static const char *const fixed[] = {
        "0", "-0", "+0", "0.0", "-0.0e5", "1", "-1", "+1", ".5", "5.", "-.5e-1", "1e5", "1E-5",
        "1e+05", "0.1", "0.30000000000000004", "9007199254740992", "9007199254740993",
        "9007199254740995", "18014398509481987", "123456789012345678",
        "1234567890123456789", "12345678901234567890", "123456789012345678901234567890",
        "0.000000000000000000000000000001234", "1.7976931348623157e308", "1.7976931348623159e308",
        "2.2250738585072014e-308", "2.2250738585072011e-308", "4.9406564584124654e-324",
        "2.4703282292062327e-324", "1e-400", "1e400", "8.3208769837292e-02", "3.510152",
        "277281165.183", "-1.2345678901234567e-27", "9.9999999999999999e22", "1e23", "8.5e-28",
        "1.00000000000000011102230246251565404236316680908203125", "7.450580596923828125e-9",
        "000000000000000000000000000001.5", "1.5000000000000000000000000", "inf", "-Infinity",
        "nan", "4e", "1e-", "2.e+",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_parse(fixed[i]);
    /* Hexadecimal, which strtod reads, is not a Matrix Market number. */
    const char *none[] = {"", "e5", ".", "-", "+.e1", "abc", "0x1p3", "-0X10"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        double v;
        const char *e;
        ck_assert_msg(!ks_num_parse_double(none[i], &e, &v), "'%s' parsed", none[i]);
    }
    /* Random decimal strings: 1..22 digits, a point anywhere, exponents
     * around the fast path's borders, and %.17g / %.15g of random doubles. */
    char buf[96];
    for (int t = 0; t < 150000; t++) {
        int kind = (int)(rng() % 4);
        if (kind == 0) {
            int nd = 1 + (int)(rng() % 22), point = (int)(rng() % (uint64_t)(nd + 1)), k = 0;
            if (rng() & 1)
                buf[k++] = '-';
            for (int d = 0; d < nd; d++) {
                if (d == point && d > 0)
                    buf[k++] = '.';
                buf[k++] = (char)('0' + rng() % 10);
            }
            if (rng() % 4)
                k += snprintf(buf + k, 16, "e%d", (int)(rng() % 90) - 45);
            buf[k] = '\0';
        } else if (kind == 3) {
            /* 16-19 digits of the exact midpoint between two neighbouring
             * doubles: the hardest rounding cases (ties and near-ties). */
            double x;
            do
                x = random_value();
            while (!isfinite(x) || x == 0.0 || fabs(x) > 1e300 || fabs(x) < 1e-300);
            long double mid = ((long double)x + (long double)nextafter(x, INFINITY)) / 2;
            snprintf(buf, sizeof buf, "%.*Le", 15 + (int)(rng() % 4), mid);
        } else {
            double x = random_value();
            snprintf(buf, sizeof buf, kind == 1 ? "%.17g" : "%.15e", x);
        }
        check_parse(buf);
    }
}
END_TEST

/* ------------------------------------------------------- shared matrices */

static void assert_symmetric(const ks_csr *A)
{
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            ks_int j = A->colind[k];
            ck_assert_msg(stored(A, j, i) && at(A, j, i) == A->val[k], "A(%d,%d) != A(%d,%d)", i, j, j, i);
        }
}

static ks_int count_diag(const ks_csr *A)
{
    ks_int d = 0;
    for (ks_int i = 0; i < A->nrows; i++)
        d += stored(A, i, i);
    return d;
}

START_TEST(shared_fv1)
{
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_shared_matrix("fv1.mtx.gz"), &A, &info));
    ck_assert_int_eq(A.nrows, 9604);
    ck_assert_int_eq(A.ncols, 9604);
    ck_assert_int_eq(A.nnz, 85264);
    ck_assert_int_eq(info.symmetry, KS_MM_SYMMETRIC);
    ck_assert_int_eq(info.entries_stored, 47434);
    ck_assert_double_eq(A.val[0], 3.510152); /* first line of the file: 1 1 3.510152 */
    KS_CHECK(ks_csr_validate(&A));
    assert_symmetric(&A);
    ks_csr_free(&A);
}
END_TEST

START_TEST(shared_memplus)
{
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_shared_matrix("memplus.mtx.gz"), &A, &info));
    ck_assert_int_eq(A.nrows, 17758);
    ck_assert_int_eq(A.nnz, 126150);
    ck_assert_int_eq(info.duplicates_summed, 0);
    KS_CHECK(ks_csr_validate(&A));
    ks_int zeros = 0;
    for (ks_int k = 0; k < A.nnz; k++)
        zeros += A.val[k] == 0.0;
    ck_assert_int_eq(zeros, 27003);
    ck_assert_double_eq(A.val[0], 8.3208769837292e-02);
    ks_csr_free(&A);
}
END_TEST

START_TEST(shared_rajat01)
{
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_shared_matrix("rajat01.mtx.gz"), &A, &info));
    ck_assert_int_eq(info.field, KS_MM_PATTERN);
    ck_assert_int_eq(A.nrows, 6833);
    ck_assert_int_eq(A.nnz, 43250);
    KS_CHECK(ks_csr_validate(&A));
    ks_int maxlen = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        if (A.rowptr[i + 1] - A.rowptr[i] > maxlen)
            maxlen = A.rowptr[i + 1] - A.rowptr[i];
    ck_assert_int_eq(maxlen, 1442);
    for (ks_int k = 0; k < A.nnz; k++)
        ck_assert_double_eq(A.val[k], 1.0);
    ks_csr_free(&A);
}
END_TEST

START_TEST(shared_hangglider)
{
    ks_csr A;
    ks_mm_info info;
    KS_CHECK(ks_mm_read_csr(ks_test_shared_matrix("hangGlider_2.mtx.gz"), &A, &info));
    ck_assert_int_eq(A.nrows, 1647);
    ck_assert_int_eq(info.entries_stored, 7834);
    ks_int nd = count_diag(&A);
    ck_assert_int_eq(nd, 914);
    ck_assert_int_eq(A.nnz, 2 * 7834 - nd); /* 14754: off-diagonals mirrored */
    KS_CHECK(ks_csr_validate(&A));
    assert_symmetric(&A);
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mmio");
    TCase *tc = tcase_create("mmio");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sample_general);
    tcase_add_test(tc, sample_symmetric);
    tcase_add_test(tc, sample_skew);
    tcase_add_test(tc, sample_pattern);
    tcase_add_test(tc, sample_integer_keeps_explicit_zero);
    tcase_add_test(tc, sample_crlf_comments_no_field);
    tcase_add_test(tc, tolerated_variants);
    tcase_add_test(tc, empty_matrix);
    tcase_add_loop_test(tc, malformed_case, 0, (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(tc, unsupported_and_io_errors);
    tcase_add_test(tc, error_line_across_chunks);
    tcase_add_test(tc, long_comment_and_large_valid_file);
    tcase_add_test(tc, round_trip_bitwise);
    tcase_add_test(tc, write_errors);
    tcase_add_test(tc, write_never_removes_what_it_did_not_create);
    tcase_add_test(tc, gzip_truncated_or_corrupt);
    tcase_add_test(tc, gzip_trailing_bytes);
    tcase_add_test(tc, vector_reads);
    tcase_add_test(tc, vector_out_of_memory_names_file);
    tcase_add_test(tc, memory_available_figure);
    tcase_add_test(tc, header_sizes_checked_against_memory);
    tcase_add_test(tc, vector_length_checked_at_size_line);
    tcase_add_loop_test(tc, malformed_vector, 0, (int)(sizeof bad_vectors / sizeof bad_vectors[0]));
    tcase_add_test(tc, vector_round_trip);
    tcase_add_test(tc, number_parser_matches_strtod);

#define SHARED_TEST(file, test)                                            \
    do {                                                                   \
        if (ks_test_shared_matrix(file))                                   \
            tcase_add_test(tc, test);                                      \
        else                                                               \
            ks_test_skip(1, "../shared/matrices/" file " not present");    \
    } while (0)
    SHARED_TEST("fv1.mtx.gz", shared_fv1);
    SHARED_TEST("memplus.mtx.gz", shared_memplus);
    SHARED_TEST("rajat01.mtx.gz", shared_rajat01);
    SHARED_TEST("hangGlider_2.mtx.gz", shared_hangglider);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
