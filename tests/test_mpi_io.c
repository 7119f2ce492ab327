/* Matrix Market files over MPI ranks, run under mpirun with 1 to 4 ranks
 * (tests/meson.build): ks_mm_read_dist against the slices of what
 * ks_mm_read_csr gives one process, bit for bit (general, symmetric, skew,
 * pattern, integer, gzip, duplicates whose sum depends on their order, an
 * empty row, user partitions with an empty rank, many small messages);
 * malformed files failing on every rank with path:line, also when rank 0
 * stops in the middle of the stream, and a good read right after; vectors
 * split and gathered (bit for bit against the serial reader and writer).
 *
 * Check runs without fork, only rank 0 prints its summary, and every
 * assertion is combined over the ranks first (as in test_mpi.c), so all
 * ranks fail together and none waits in a collective. Every rank also
 * reads the small files serially for the reference. */
#include "ks_test_mpi.h"
#include "ksolve_mpi.h"
#include "mpi/mpi_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int shared_skips;


/* ------------------------------------------------------------ temp files */

/* Rank 0 writes text (gzip when the suffix ends in .gz); every rank gets
 * the path (a static slot; valid for the next 7 calls). */
static const char *shared_file(const char *suffix, const char *text)
{
    static char path[8][1100];
    static int slot;
    char *p = path[slot++ & 7];
    int ok = 1;
    if (rank == 0) {
        snprintf(p, 1100, "%s", ks_test_tmpfile(suffix));
        const size_t n = strlen(suffix);
        if (n >= 3 && !strcmp(suffix + n - 3, ".gz")) {
            gzFile g = gzopen(p, "wb");
            ok = g && gzputs(g, text) >= 0;
            ok = g && gzclose(g) == Z_OK && ok;
        } else {
            FILE *f = fopen(p, "w");
            ok = f && fputs(text, f) >= 0;
            ok = f && fclose(f) == 0 && ok;
        }
    }
    MPI_Bcast(p, 1100, MPI_CHAR, 0, MPI_COMM_WORLD);
    ALL(ok, "cannot write %s", p);
    return p;
}

static void remove_shared(const char *path)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        remove(path);
}

/* A growing text buffer for generated files. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) KS_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = 2 * (t->len + (size_t)n + 1);
        t->s = realloc(t->s, t->cap);
        ck_assert(t->s != NULL);
    }
    memcpy(t->s + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

/* --------------------------------------------------------------- layouts */

/* Counts of n rows: even (nlocal -1 everywhere), or rank 1 (of 3 or more)
 * without rows and the others sharing n, or everything on the last rank. */
enum { EVEN, EMPTY_RANK, ALL_ON_LAST };

static ks_int count_for(int kind, ks_gint n, int q)
{
    if (kind == ALL_ON_LAST)
        return q == nranks - 1 ? (ks_int)n : 0;
    if (kind == EMPTY_RANK && nranks >= 3) {
        if (q == 1)
            return 0;
        const int k = q > 1 ? q - 1 : q, m = nranks - 1; /* index among the others */
        return (ks_int)(n / m + (k < n % m));
    }
    ks_gint b, c;
    ks_layout_even(n, nranks, q, &b, &c);
    return (ks_int)c;
}

/* ------------------------------------------------ matrices against serial */

/* ks_mm_read_dist(path) in layout `kind` with messages of `chunk` entries
 * (0: the default) is the slice of ks_mm_read_csr(path) bit for bit, info
 * included; the result stays in *D (may be NULL) for further checks. */
static void check_file(const char *path, int kind, int chunk, ks_dist_csr *Dout)
{
    ks_csr G;
    ks_mm_info si, di;
    memset(&si, 0, sizeof si);
    memset(&di, 0, sizeof di);
    KS_ALL(ks_mm_read_csr(path, &G, &si));
    ks_mm_dist_chunk = chunk;
    ks_dist_csr D;
    const ks_int mine = kind == EVEN ? -1 : count_for(kind, G.nrows, rank);
    ks_error e = ks_mm_read_dist(comm, path, mine, &D, &di);
    ks_mm_dist_chunk = 0;
    ALL(e == KS_OK, "ks_mm_read_dist(%s, %d): %s", path, (int)mine, ks_last_error());
    ks_gint r0 = 0;
    for (int q = 0; q < rank; q++)
        r0 += count_for(kind, G.nrows, q);
    const ks_int nloc = count_for(kind, G.nrows, rank);
    int ok = D.row_begin == r0 && D.nrows == nloc && D.nrows_global == G.nrows &&
             D.ncols_global == G.ncols;
    ALL(ok, "%s: rows %lld + %d of %lld, expected %lld + %d of %d", path,
        (long long)D.row_begin, (int)D.nrows, (long long)D.nrows_global, (long long)r0,
        (int)nloc, (int)G.nrows);
    const ks_int b = G.rowptr[r0];
    ok = D.nnz == G.rowptr[r0 + nloc] - b;
    ks_int bad = -1;
    for (ks_int i = 0; ok && i <= nloc && bad < 0; i++)
        if (D.rowptr[i] != G.rowptr[r0 + i] - b)
            bad = i;
    for (ks_int k = 0; ok && k < D.nnz && bad < 0; k++)
        if (D.colind[k] != G.colind[b + k] ||
            memcmp(&D.val[k], &G.val[b + k], sizeof(double)) != 0)
            bad = k;
    ALL(ok && bad < 0, "%s: this rank's rows differ from the serial read (nnz %d vs %d, "
        "first difference at %d)", path, (int)D.nnz, (int)(G.rowptr[r0 + nloc] - b), (int)bad);
    ALL(di.field == si.field && di.symmetry == si.symmetry &&
            di.entries_stored == si.entries_stored && di.duplicates_summed == si.duplicates_summed,
        "%s: info %d %d %lld %lld, serial %d %d %lld %lld", path, (int)di.field, (int)di.symmetry,
        (long long)di.entries_stored, (long long)di.duplicates_summed, (int)si.field,
        (int)si.symmetry, (long long)si.entries_stored, (long long)si.duplicates_summed);
    ks_csr_free(&G);
    if (Dout)
        *Dout = D;
    else
        ks_dist_csr_free(&D);
}

static void check_all_layouts(const char *path)
{
    check_file(path, EVEN, 0, NULL);
    check_file(path, EVEN, 1, NULL);
    check_file(path, EMPTY_RANK, 2, NULL);
    check_file(path, ALL_ON_LAST, 0, NULL);
}

START_TEST(test_samples)
{
    /* square samples: symmetric, skew, pattern symmetric with a duplicate,
     * integer with an explicit zero, headers with CRLF and comments */
    const char *names[] = {"symmetric.mtx", "skew.mtx", "pattern_symmetric_dup.mtx",
                           "integer.mtx", "crlf_comments.mtx"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ks_csr G;
        KS_ALL(ks_mm_read_csr(ks_test_sample(names[i]), &G, NULL));
        const int square = G.nrows == G.ncols;
        ks_csr_free(&G);
        if (square)
            check_all_layouts(ks_test_sample(names[i]));
    }
}
END_TEST

/* A file whose duplicates' sum depends on their order (1e16 + 1 - 1e16 is
 * 0 in file order, 1 in another), with an empty row and a row given
 * backwards, in both symmetric and general form; also gzip. */
static const char *order_file(int symmetric, const char *suffix)
{
    text t = {0};
    put(&t, "%%%%MatrixMarket matrix coordinate real %s\n", symmetric ? "symmetric" : "general");
    put(&t, "%% row 3 (1-based) is empty\n6 6 %d\n", symmetric ? 11 : 12);
    put(&t, "1 1 4\n2 2 4\n4 4 4\n5 5 4\n6 6 4\n");
    put(&t, "5 2 1e16\n5 2 1\n5 2 -1e16\n"); /* a sum in file order */
    put(&t, "6 4 0.1\n6 1 0.2\n6 4 0.30000000000000004\n");
    if (!symmetric)
        put(&t, "1 6 -0.5\n");
    const char *p = shared_file(suffix, t.s);
    free(t.s);
    return p;
}

START_TEST(test_duplicates_in_file_order)
{
    for (int sym = 0; sym <= 1; sym++) {
        const char *plain = order_file(sym, ".mtx");
        check_all_layouts(plain);
        const char *gz = order_file(sym, ".mtx.gz");
        check_all_layouts(gz);
        /* the test can fail: the order-dependent sum reads 0, not 1 */
        ks_csr G;
        KS_ALL(ks_mm_read_csr(plain, &G, NULL));
        double a42 = -1;
        for (ks_int k = G.rowptr[4]; k < G.rowptr[5]; k++)
            if (G.colind[k] == 1)
                a42 = G.val[k];
        ALL(a42 == 0.0, "A(5,2) = %g, expected 0 (1e16 + 1 - 1e16 in file order)", a42);
        ks_csr_free(&G);
        remove_shared(plain);
        remove_shared(gz);
    }
}
END_TEST

/* A random n x n file (symmetric: lower triangle) with duplicates (next
 * to each other, and far apart on the first diagonal entries), rows
 * 3, 10, 17, ... (0-based) without entries of their own, and entries in no
 * order, as text with %.17g values. */
static const char *random_file(uint64_t seed, int n, int symmetric, int pattern,
                               const char *suffix)
{
    ks_test_rng_seed(seed);
    const int nent = 6 * n;
    text t = {0};
    put(&t, "%%%%MatrixMarket matrix coordinate %s %s\n%d %d %d\n", pattern ? "pattern" : "real",
        symmetric ? "symmetric" : "general", n, n, nent);
    for (int k = 0; k < nent;) {
        int i = (int)(ks_test_rng_next() % (uint64_t)n), j = (int)(ks_test_rng_next() % (uint64_t)n);
        if (k % 9 == 0)
            i = j = (int)(ks_test_rng_next() % 3);
        if (symmetric && j > i) {
            const int s = i;
            i = j;
            j = s;
        }
        if (i % 7 == 3) {
            i = symmetric ? i - 1 : (i + 1) % n;
            if (symmetric && j > i)
                j = i;
        }
        const double v = ks_test_urand() * 2 - 0.7;
        for (int rep = 0; rep < (k % 5 == 4 ? 2 : 1) && k < nent; rep++, k++) {
            if (pattern)
                put(&t, "%d %d\n", i + 1, j + 1);
            else
                put(&t, "%d %d %.17g\n", i + 1, j + 1, rep ? 1.0 / 3.0 : v);
        }
    }
    const char *p = shared_file(suffix, t.s);
    free(t.s);
    return p;
}

START_TEST(test_random_files)
{
    const struct { int sym, pattern; const char *suffix; } cases[] = {
        {0, 0, ".mtx"}, {1, 0, ".mtx"}, {1, 0, ".mtx.gz"}, {0, 1, ".mtx"}, {1, 1, ".mtx.gz"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *p = random_file(11 + c, 97, cases[c].sym, cases[c].pattern, cases[c].suffix);
        check_file(p, EVEN, 0, NULL);
        check_file(p, EVEN, 7, NULL);
        check_file(p, EMPTY_RANK, 5, NULL);
        check_file(p, ALL_ON_LAST, 3, NULL);
        remove_shared(p);
    }
}
END_TEST

/* The rows read make a distributed matrix whose product is the serial
 * reference's (the path the tool takes). */
START_TEST(test_read_then_apply)
{
    const char *p = random_file(5, 200, 1, 0, ".mtx.gz");
    ks_dist_csr D;
    check_file(p, EMPTY_RANK, 64, &D);
    ks_backend *be = NULL;
    KS_ALL(ks_backend_create("cpu", &be));
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    ks_csr G;
    KS_ALL(ks_mm_read_csr(p, &G, NULL));
    double *x = malloc((size_t)G.nrows * sizeof *x), *y = malloc((size_t)G.nrows * sizeof *y);
    ck_assert(x && y);
    for (ks_int i = 0; i < G.nrows; i++)
        x[i] = cos(0.1 * i);
    ks_csr_spmv_ref(&G, 1.0, x, 0.0, y);
    ks_vec *xv = NULL, *yv = NULL;
    KS_ALL(ks_matrix_vec_create(M, &xv));
    KS_ALL(ks_matrix_vec_create(M, &yv));
    KS_ALL(ks_vec_set_host(xv, x + D.row_begin));
    KS_ALL(ks_matrix_apply(M, 1.0, xv, 0.0, yv));
    double *mine = malloc(((size_t)D.nrows + 1) * sizeof *mine);
    KS_ALL(ks_vec_get_host(yv, mine));
    const double err = ks_test_max_relerr(mine, y + D.row_begin, D.nrows);
    ALL(err <= 1e-14, "A x differs from the serial product by %g", err);
    free(mine);
    free(x);
    free(y);
    ks_vec_destroy(&xv);
    ks_vec_destroy(&yv);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    ks_csr_free(&G);
    ks_dist_csr_free(&D);
    remove_shared(p);
}
END_TEST

/* ../shared/matrices (not in CI): real files, every kind the reader meets. */
START_TEST(test_shared_matrices)
{
    const char *names[] = {"fv1.mtx.gz", "hangGlider_2.mtx.gz", "memplus.mtx.gz",
                           "rajat01.mtx.gz"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *p = ks_test_shared_matrix(names[i]);
        ALL(p != NULL, "%s vanished", names[i]);
        check_file(p, EVEN, 0, NULL);
        check_file(p, EMPTY_RANK, 1000, NULL);
    }
}
END_TEST

/* ----------------------------------------------------------------- errors */

/* ks_mm_read_dist fails with `want` on every rank, the message naming
 * `part`, and frees its output; chunk small so that rank 0 may stop after
 * sending some rows. */
static void expect_read_fails(const char *path, ks_int nlocal, ks_error want, const char *part)
{
    ks_dist_csr D;
    ks_mm_dist_chunk = 2;
    EXPECT_ERR(ks_mm_read_dist(comm, path, nlocal, &D, NULL), want, part);
    ks_mm_dist_chunk = 0;
    ALL(D.rowptr == NULL && D.nrows == 0, "a failed read left rows behind");
}

START_TEST(test_bad_files)
{
    const char *missing = "/nonexistent/dir/A.mtx";
    expect_read_fails(missing, -1, KS_ERR_IO, missing);
    char where[1200];
    /* a bad value on line 9, after 5 entries (some already sent) */
    const char *bad = shared_file(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                          "% comment\n6 6 8\n1 1 1\n2 2 1\n3 3 1\n4 4 1\n"
                                          "6 1 2\n5 5 x1\n6 6 1\n6 5 1\n");
    snprintf(where, sizeof where, "%s:9: bad value 'x1'", bad);
    expect_read_fails(bad, -1, KS_ERR_FORMAT, where);
    /* NaN on line 5 */
    const char *nan_file = shared_file(".mtx.gz", "%%MatrixMarket matrix coordinate real "
                                                  "symmetric\n4 4 3\n1 1 1\n2 1 3\n3 3 nan\n");
    snprintf(where, sizeof where, "%s:5: value 'nan' is NaN", nan_file);
    expect_read_fails(nan_file, -1, KS_ERR_FORMAT, where);
    /* fewer entries than the size line says, a row out of range */
    const char *shortf = shared_file(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                             "3 3 4\n1 1 1\n2 2 1\n3 3 1\n");
    snprintf(where, sizeof where, "%s:6: file ends after 3 of the 4 entries", shortf);
    expect_read_fails(shortf, -1, KS_ERR_FORMAT, where);
    const char *range = shared_file(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                            "3 3 3\n1 1 1\n4 2 1\n3 3 1\n");
    snprintf(where, sizeof where, "%s:4: row index 4 out of range", range);
    expect_read_fails(range, -1, KS_ERR_FORMAT, where);
    /* not square: the size line named */
    snprintf(where, sizeof where, "%s:3: the matrix is 4 x 5", ks_test_sample("general_real.mtx"));
    expect_read_fails(ks_test_sample("general_real.mtx"), -1, KS_ERR_SIZE, where);
    /* a vector file is not a matrix */
    snprintf(where, sizeof where, "%s:1: dense 'array' format", ks_test_sample("vector_array.mtx"));
    expect_read_fails(ks_test_sample("vector_array.mtx"), -1, KS_ERR_FORMAT, where);
    /* a partition that does not add up: 1 row too many on the last rank */
    const char *good = ks_test_sample("symmetric.mtx");
    expect_read_fails(good, count_for(EVEN, 4, rank) + (rank == nranks - 1), KS_ERR_SIZE,
                      "add up to 5, not 4");
    /* nothing of the failed streams is left in flight: good reads follow */
    check_file(good, EMPTY_RANK, 1, NULL);
    check_file(good, EVEN, 0, NULL);
    remove_shared(bad);
    remove_shared(nan_file);
    remove_shared(shortf);
    remove_shared(range);
}
END_TEST

/* ------------------------------------------------------------ memory */

/* A header's sizes are checked against the memory before anything of that
 * size is allocated, on every rank (KS_MEM_AVAILABLE fakes the machine:
 * set on every rank; the ranks of this one host share the figure). */
static void set_memory(const char *bytes)
{
    if (bytes)
        setenv("KS_MEM_AVAILABLE", bytes, 1);
    else
        unsetenv("KS_MEM_AVAILABLE");
}

/* ks_mm_read_dist fails with KS_ERR_MEMORY on every rank, the message
 * naming path:line, the header's sizes, a rank and the memory figure. */
static void expect_memory_refused(const char *path, int chunk, const char *sizes)
{
    char where[1300];
    snprintf(where, sizeof where, "%s:3: reading this %s on rank ", path, sizes);
    ks_dist_csr D;
    ks_mm_dist_chunk = chunk;
    ks_error e = ks_mm_read_dist(comm, path, -1, &D, NULL);
    ks_mm_dist_chunk = 0;
    const char *msg = ks_last_error();
    ALL(e == KS_ERR_MEMORY && strstr(msg, where) && strstr(msg, " needs ") &&
            strstr(msg, "of memory is available (KS_MEM_AVAILABLE)"),
        "%s: got %s (%s), expected KS_ERR_MEMORY mentioning '%s'", path, ks_error_name(e), msg,
        where);
    ALL(D.rowptr == NULL && D.nrows == 0, "a refused read left rows behind");
}

START_TEST(test_memory_check)
{
    /* 60 bytes declaring 2e9 x 2e9: 8 GB of row pointers */
    const char *huge = shared_file(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                           "% huge\n2000000000 2000000000 1\n1 1 1\n");
    set_memory("1G");
    expect_memory_refused(huge, 0, "2000000000 x 2000000000 matrix (1 entries declared)");
    /* 10^6 rows (4 MB of row pointers over the ranks): refused in 2 MB,
     * read in 16 MB (small chunks: the buffers do not decide) */
    const char *rows = shared_file(".mtx.gz", "%%MatrixMarket matrix coordinate real general\n"
                                              "%\n1000000 1000000 1\n1000000 1 2.5\n");
    set_memory("2M");
    expect_memory_refused(rows, 64, "1000000 x 1000000 matrix (1 entries declared)");
    set_memory("16M");
    ks_dist_csr D;
    ks_mm_dist_chunk = 64;
    ks_error e = ks_mm_read_dist(comm, rows, -1, &D, NULL);
    ks_mm_dist_chunk = 0;
    ALL(e == KS_OK, "%s in 16 MB: %s", rows, ks_last_error());
    const int last = D.row_begin + D.nrows == 1000000;
    ALL(D.nrows_global == 1000000 && D.nnz == (last ? 1 : 0) &&
            (!last || (D.colind[0] == 0 && D.val[0] == 2.5)),
        "%s: rank %d holds %lld entries", rows, rank, (long long)D.nnz);
    ks_dist_csr_free(&D);
    /* 40,000 entries (28 bytes each while read, 1.1 MB): refused in 1 MB,
     * read in 16 MB as the serial reader reads them */
    text t = {0};
    put(&t, "%%%%MatrixMarket matrix coordinate real symmetric\n%%\n40000 40000 40000\n");
    for (int i = 1; i <= 40000; i++)
        put(&t, "%d %d %d\n", i, i > 7 && i % 3 ? i - 7 : i, i % 5 + 1);
    const char *ent = shared_file(".mtx", t.s);
    free(t.s);
    set_memory("1M");
    expect_memory_refused(ent, 64, "40000 x 40000 matrix (40000 entries declared)");
    set_memory("16M");
    check_file(ent, EMPTY_RANK, 64, NULL);
    /* declared entries beyond what the file holds: bounded by the file's
     * bytes, so the read goes on to the format error */
    const char *claims = shared_file(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                             "3 3 900000000\n1 1 1\n2 2 1\n");
    set_memory("1M");
    char where[1200];
    snprintf(where, sizeof where, "%s:5: file ends after 2 of the 900000000 entries", claims);
    expect_read_fails(claims, -1, KS_ERR_FORMAT, where);
    set_memory(NULL);
    remove_shared(huge);
    remove_shared(rows);
    remove_shared(ent);
    remove_shared(claims);
}
END_TEST

/* A vector's declared length likewise: each rank's part (rank 0 also the
 * whole vector it reads) before the values are read. */
START_TEST(test_vector_memory_check)
{
    const char *huge = shared_file(".mtx", "%%MatrixMarket matrix array real general\n"
                                           "%\n200000000 1\n1\n");
    double *v = NULL;
    ks_int n = 0;
    char where[1200];
    set_memory("64M");
    snprintf(where, sizeof where, "%s:3: reading this vector of 200000000 rows on rank ", huge);
    EXPECT_ERR(ks_mm_read_vector_dist(comm, huge, -1, &v, &n), KS_ERR_MEMORY, where);
    EXPECT_ERR(ks_mm_read_vector_dist(comm, huge, -1, &v, &n), KS_ERR_MEMORY,
               "of memory is available (KS_MEM_AVAILABLE)");
    ALL(v == NULL && n == 0, "a refused read left a vector behind");
    /* 500,000 rows, coordinate: 4 MB on rank 0 and 4 MB of parts */
    const char *mid = shared_file(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                          "%\n500000 1 1\n3 1 5\n");
    set_memory("4M");
    snprintf(where, sizeof where, "%s:3: reading this vector of 500000 rows on rank ", mid);
    EXPECT_ERR(ks_mm_read_vector_dist(comm, mid, -1, &v, &n), KS_ERR_MEMORY, where);
    ALL(v == NULL && n == 0, "a refused read left a vector behind");
    set_memory("32M");
    KS_ALL(ks_mm_read_vector_dist(comm, mid, -1, &v, &n));
    ks_gint r0, cnt;
    ks_layout_even(500000, nranks, rank, &r0, &cnt);
    int ok = n == cnt;
    for (ks_int i = 0; ok && i < n; i++)
        ok = v[i] == (r0 + i == 2 ? 5.0 : 0.0);
    ALL(ok, "%s: rank %d's part is not the file's", mid, rank);
    free(v);
    set_memory(NULL);
    remove_shared(huge);
    remove_shared(mid);
}
END_TEST

/* ---------------------------------------------------------------- vectors */

static void check_vector_read(const char *path, int kind)
{
    double *all = NULL;
    ks_int n = 0;
    KS_ALL(ks_mm_read_vector(path, &all, &n));
    double *v = NULL;
    ks_int nloc = -5;
    KS_ALL(ks_mm_read_vector_dist(comm, path, kind == EVEN ? -1 : count_for(kind, n, rank), &v,
                                  &nloc));
    ks_gint r0 = 0;
    for (int q = 0; q < rank; q++)
        r0 += count_for(kind, n, q);
    const int ok = nloc == count_for(kind, n, rank) &&
                   (nloc == 0 || memcmp(v, all + r0, (size_t)nloc * sizeof *v) == 0);
    ALL(ok, "%s: this rank's %d entries differ from the serial read's %lld..", path, (int)nloc,
        (long long)r0);
    free(v);
    free(all);
}

START_TEST(test_vector_read)
{
    const char *names[] = {"vector_array.mtx", "vector_coord.mtx"};
    for (int i = 0; i < 2; i++)
        for (int kind = EVEN; kind <= ALL_ON_LAST; kind++)
            check_vector_read(ks_test_sample(names[i]), kind);
    text t = {0};
    put(&t, "%%%%MatrixMarket matrix array real general\n23 1\n");
    for (int i = 0; i < 23; i++)
        put(&t, "%.17g\n", sin(1.0 + i) / 3.0);
    const char *gz = shared_file(".mtx.gz", t.s);
    free(t.s);
    for (int kind = EVEN; kind <= ALL_ON_LAST; kind++)
        check_vector_read(gz, kind);
    /* the wrong length for the partition, a missing file: on every rank */
    double *v = NULL;
    ks_int n = 0;
    EXPECT_ERR(ks_mm_read_vector_dist(comm, gz, rank == 0 ? 24 : 0, &v, &n), KS_ERR_SIZE,
               "add up to 24, not 23");
    ALL(v == NULL, "a failed read left a vector behind");
    EXPECT_ERR(ks_mm_read_vector_dist(comm, "/nonexistent/b.mtx", -1, &v, &n), KS_ERR_IO,
               "/nonexistent/b.mtx");
    remove_shared(gz);
}
END_TEST

START_TEST(test_vector_write)
{
    const ks_gint n = 29;
    double *all = malloc((size_t)n * sizeof *all);
    ck_assert(all != NULL);
    for (ks_gint i = 0; i < n; i++)
        all[i] = i % 4 == 0 ? (double)i : exp(0.3 * (double)i) / 7.0; /* %.17g round trips */
    for (int kind = EVEN; kind <= ALL_ON_LAST; kind++) {
        ks_gint r0 = 0;
        for (int q = 0; q < rank; q++)
            r0 += count_for(kind, n, q);
        /* rank 0 names the files: one written over the ranks, one serially */
        char dist[1100], serial[1100];
        if (rank == 0) {
            snprintf(dist, sizeof dist, "%s", ks_test_tmpfile(kind == EMPTY_RANK ? ".mtx.gz"
                                                                                 : ".mtx"));
            snprintf(serial, sizeof serial, "%s", ks_test_tmpfile(".mtx"));
        }
        MPI_Bcast(dist, sizeof dist, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Bcast(serial, sizeof serial, MPI_CHAR, 0, MPI_COMM_WORLD);
        KS_ALL(ks_mm_write_vector_dist(comm, dist, all + r0, count_for(kind, n, rank)));
        KS_ALL(rank == 0 ? ks_mm_write_vector(serial, all, (ks_int)n) : KS_OK);
        MPI_Barrier(MPI_COMM_WORLD);
        double *back = NULL, *ref = NULL;
        ks_int nb = 0, nr = 0;
        KS_ALL(ks_mm_read_vector(dist, &back, &nb));
        KS_ALL(ks_mm_read_vector(serial, &ref, &nr));
        ALL(nb == n && nr == n && memcmp(back, all, (size_t)n * sizeof *all) == 0 &&
                memcmp(ref, back, (size_t)n * sizeof *all) == 0,
            "%s: %d entries written over the ranks do not read back as written", dist, (int)nb);
        free(back);
        free(ref);
        remove_shared(dist);
        remove_shared(serial);
    }
    EXPECT_ERR(ks_mm_write_vector_dist(comm, "/nonexistent/x.mtx", all, rank == 0 ? (ks_int)n : 0),
               KS_ERR_IO, "/nonexistent/x.mtx");
    /* one rank's bad argument: every rank fails, nothing is written */
    EXPECT_ERR(ks_mm_write_vector_dist(comm, "/nonexistent/y.mtx", rank == nranks - 1 ? NULL : all,
                                       rank == nranks - 1 ? 3 : 0),
               KS_ERR_ARG, "NULL vector");
    free(all);
}
END_TEST

static Suite *io_suite(void)
{
    Suite *s = suite_create("mpi_io");
    TCase *t = tcase_create("matrices");
    tcase_add_test(t, test_samples);
    tcase_add_test(t, test_duplicates_in_file_order);
    tcase_add_test(t, test_random_files);
    tcase_add_test(t, test_read_then_apply);
    if (ks_test_shared_matrix("fv1.mtx.gz") && ks_test_shared_matrix("hangGlider_2.mtx.gz") &&
        ks_test_shared_matrix("memplus.mtx.gz") && ks_test_shared_matrix("rajat01.mtx.gz"))
        tcase_add_test(t, test_shared_matrices);
    else
        shared_skips = 1;
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_test(t, test_bad_files);
    tcase_add_test(t, test_memory_check);
    tcase_add_test(t, test_vector_memory_check);
    suite_add_tcase(s, t);
    t = tcase_create("vectors");
    tcase_add_test(t, test_vector_read);
    tcase_add_test(t, test_vector_write);
    suite_add_tcase(s, t);
    return s;
}

/* After the run, on every rank: the real-matrix cases left out. */
static void report_skips(void)
{
    if (rank == 0 && shared_skips)
        printf("SKIPPED: %d (../shared/matrices not found: the real-matrix reads)\n",
               shared_skips);
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_io", io_suite, report_skips);
}
