#include "ks_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define KS_MAX_SKIPS 64
static int nskips;
static int skip_count[KS_MAX_SKIPS];
static char skip_why[KS_MAX_SKIPS][256];

void ks_test_skip(int count, const char *why)
{
    if (nskips < KS_MAX_SKIPS) {
        skip_count[nskips] = count;
        snprintf(skip_why[nskips], sizeof skip_why[0], "%s", why);
        nskips++;
    }
}

int ks_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    if (!getenv("CK_FORK")) /* CK_FORK=no (valgrind, gdb) must win */
        srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    for (int i = 0; i < nskips; i++)
        printf("SKIPPED: %d (%s)\n", skip_count[i], skip_why[i]);
    fflush(stdout);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int ks_test_have_cuda(void)
{
    /* Probe in a child: once the parent touches the CUDA driver, forked
     * test processes (Check's fork mode) can no longer use the device. */
    static int cached = -1;
    if (cached >= 0)
        return cached;
    pid_t pid = fork();
    if (pid == 0)
        _exit(ks_backend_available("cuda") ? 0 : 1);
    int status = 0;
    cached = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
             WEXITSTATUS(status) == 0;
    return cached;
}

const char *ks_test_shared_matrix(const char *name)
{
    static char path[4][1024];
    static int slot;
    const char *dir = getenv("KS_SHARED_MATRICES");
    if (!dir)
        dir = "../shared/matrices";
    char *p = path[slot++ & 3];
    snprintf(p, 1024, "%s/%s", dir, name);
    return access(p, R_OK) == 0 ? p : NULL;
}

const char *ks_test_sample(const char *name)
{
    static char path[4][1024];
    static int slot;
    const char *dir = getenv("KS_TEST_DATA");
    if (!dir)
        dir = "matrices/samples";
    char *p = path[slot++ & 3];
    snprintf(p, 1024, "%s/%s", dir, name);
    return p;
}

const char *ks_test_tmpfile(const char *suffix)
{
    static char path[8][1024];
    static int slot, counter;
    const char *dir = getenv("KS_TEST_TMP");
    if (!dir)
        dir = "/tmp";
    char *p = path[slot++ & 7];
    snprintf(p, 1024, "%s/kstmp_%ld_%d%s", dir, (long)getpid(), counter++, suffix ? suffix : "");
    return p;
}

const char *ks_test_write_tmp(const char *suffix, const char *text)
{
    const char *p = ks_test_tmpfile(suffix);
    FILE *f = fopen(p, "w");
    ck_assert_msg(f != NULL, "cannot create %s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

double ks_test_max_relerr(const double *a, const double *b, long n)
{
    double m = 0.0;
    for (long i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / fmax(1.0, fabs(b[i]));
        if (!(d <= m)) /* also catches NaN */
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

int ks_test_col_dots_miss(const double *a, const double *b, long n, int k, const double *dots,
                          long double *ref)
{
    for (int j = 0; j < k; j++) {
        long double d = 0.0L, m = 0.0L;
        for (long i = 0; i < n; i++) {
            const double t = a[(size_t)i * k + j] * b[(size_t)i * k + j];
            d += t;
            m += fabs(t);
        }
        *ref = d;
        if (!(fabsl((long double)dots[j] - d) <= 1e-13L * (m > 0 ? m : 1)))
            return j;
    }
    return -1;
}

static uint64_t rng_state;

void ks_test_rng_seed_with(uint64_t s, uint64_t inc) { rng_state = s * 0x9E3779B97F4A7C15ull + inc; }

void ks_test_rng_seed(uint64_t s) { ks_test_rng_seed_with(s, 1); }

uint64_t ks_test_rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

double ks_test_urand(void) { return (double)(ks_test_rng_next() >> 11) * (1.0 / 9007199254740992.0); }

void ks_test_set_threads(int t)
{
#ifdef _OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

void ks_test_well_poisson(int n, double scale, ks_csr *A)
{
    int64_t cap = (int64_t)n * n * 5;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t k = 0;
    ks_int w0 = (ks_int)n + n / 2;
#define ENT(i, j, x) (r[k] = (i), c[k] = (j), v[k++] = (x))
    for (int y = 0; y < n; y++)
        for (int xx = 0; xx < n; xx++) {
            ks_int i = (ks_int)y * n + xx;
            if (xx == n / 2 && y >= 1 && y <= n - 2 && i != w0) {
                ENT(i, i, 1.0);
                ENT(i, w0, -1.0);
                continue;
            }
            ENT(i, i, 4.0 * scale);
            if (xx > 0)
                ENT(i, i - 1, -scale);
            if (xx < n - 1)
                ENT(i, i + 1, -scale);
            if (y > 0)
                ENT(i, i - n, -scale);
            if (y < n - 1)
                ENT(i, i + n, -scale);
        }
#undef ENT
    ks_error e = ks_csr_from_coo((ks_int)n * n, (ks_int)n * n, k, r, c, v, A, NULL);
    ck_assert_msg(e == KS_OK, "ks_csr_from_coo: %s", ks_last_error());
    free(r);
    free(c);
    free(v);
}
