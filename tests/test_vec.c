/* Backends and vectors: every kernel against a float64 host reference on
 * random data, on every available backend (the same test functions run once
 * per backend, the backend chosen by the TCase's fixture), plus determinism
 * of reductions and argument errors. */
#include "ks_test.h"
#include "vec/backend.h"
#include "vec/vec_fused.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Sizes cover empty, tiny, odd remainders of every blocking (8 lanes, 256
 * threads, 8192-entry blocks) and several blocks. */
static const ks_int sizes[] = {0, 1, 7, 1000, 100003};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* ----------------------------------------------------------- fixture */

static const char *g_name; /* backend of the current TCase */
static ks_backend *g_be;

static void setup_backend(void)
{
    ks_error e = ks_backend_create(g_name, &g_be);
    ck_assert_msg(e == KS_OK, "ks_backend_create(%s): %s", g_name, ks_last_error());
}

static void setup_cpu(void)
{
    g_name = "cpu";
    setup_backend();
}

static void setup_cuda(void)
{
    g_name = "cuda";
    setup_backend();
}

static void teardown_backend(void)
{
    ks_backend_destroy(&g_be);
    g_be = NULL;
}

/* ----------------------------------------------------------- helpers */

static uint64_t rng_state = 88172645463325252ull;

static double urand(void) /* uniform in [0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* Random values in [lo, hi). */
static double *host_rand(ks_int n, double lo, double hi)
{
    double *h = malloc(((size_t)n + 1) * sizeof *h);
    ck_assert_ptr_nonnull(h);
    for (ks_int i = 0; i < n; i++)
        h[i] = lo + (hi - lo) * urand();
    return h;
}

static double *host_nan(ks_int n)
{
    double *h = malloc(((size_t)n + 1) * sizeof *h);
    ck_assert_ptr_nonnull(h);
    for (ks_int i = 0; i < n; i++)
        h[i] = NAN;
    return h;
}

static ks_vec *vec_from(const double *h, ks_int n)
{
    ks_vec *v = NULL;
    KS_CHECK(ks_vec_create(g_be, n, &v));
    ck_assert_int_eq(ks_vec_size(v), n);
    ck_assert_ptr_eq(ks_vec_backend(v), g_be);
    KS_CHECK(ks_vec_set_host(v, h));
    return v;
}

/* A vector whose entries are NaN, so a kernel that skips an entry shows. */
static ks_vec *vec_poisoned(ks_int n)
{
    double *h = host_nan(n);
    ks_vec *v = vec_from(h, n);
    free(h);
    return v;
}

static double *vec_to_host(const ks_vec *v)
{
    ks_int n = ks_vec_size(v);
    double *h = host_nan(n);
    KS_CHECK(ks_vec_get_host(v, h));
    return h;
}

static void expect_close(const ks_vec *v, const double *ref, ks_int n, double tol,
                         const char *what)
{
    double *h = vec_to_host(v);
    double err = ks_test_max_relerr(h, ref, n);
    ck_assert_msg(err <= tol, "%s on %s, n=%ld: max rel error %g > %g", what, g_name, (long)n,
                  err, tol);
    free(h);
}

static void expect_rel(double got, long double ref, double tol, const char *what, ks_int n)
{
    double den = fabsl(ref) > 0 ? (double)fabsl(ref) : 1.0;
    double err = fabs((double)((long double)got - ref)) / den;
    ck_assert_msg(err < tol, "%s on %s, n=%ld: got %.17g, want %.17Lg (rel error %g)", what,
                  g_name, (long)n, got, ref, err);
}

/* ------------------------------------------------ per-backend tests */

START_TEST(test_backend_basics)
{
    ck_assert_str_eq(ks_backend_name(g_be), g_name);
    ck_assert_msg(strlen(ks_backend_description(g_be)) > 0, "empty description");
    KS_CHECK(ks_backend_sync(g_be));
    ck_assert_int_eq(ks_backend_available(g_name), 1);

    /* Empty vectors work everywhere and reductions over them give 0. */
    ks_vec *x = NULL, *y = NULL;
    KS_CHECK(ks_vec_create(g_be, 0, &x));
    KS_CHECK(ks_vec_create(g_be, 0, &y));
    ck_assert_int_eq(ks_vec_size(x), 0);
    KS_CHECK(ks_vec_set_host(x, NULL));
    KS_CHECK(ks_vec_get_host(x, NULL));
    double r = NAN;
    KS_CHECK(ks_vec_dot(x, y, &r));
    ck_assert(r == 0.0);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_vec_destroy(NULL);
}
END_TEST

START_TEST(test_set_get)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *h = host_rand(n, -1, 1);
        ks_vec *v = vec_from(h, n);
        expect_close(v, h, n, 0.0, "set_host/get_host");
        ks_vec_destroy(&v);
        free(h);
    }
}
END_TEST

/* ks_vec_set_device / ks_vec_get_device: vector <-> memory of the backend,
 * bit for bit, sizes 0 and odd included; NULL refused with a message. */
START_TEST(test_set_get_device)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *h = host_rand(n, -1, 1), *back = host_nan(n);
        void *d = NULL, *d2 = NULL;
        KS_CHECK(ks_be_upload_new(g_be, h, n * sizeof(double), &d, "test array"));
        KS_CHECK(ks_be_alloc(g_be, n * sizeof(double), &d2, "test array"));
        ks_vec *v = NULL;
        KS_CHECK(ks_vec_create(g_be, n, &v));
        KS_CHECK(ks_vec_fill(v, 7.0));
        KS_CHECK(ks_vec_set_device(v, d));
        expect_close(v, h, n, 0.0, "set_device");
        KS_CHECK(ks_vec_scale(v, 2.0));
        KS_CHECK(ks_vec_get_device(v, d2));
        KS_CHECK(g_be->ops->download(g_be, back, d2, n * sizeof(double)));
        for (ks_int i = 0; i < n; i++)
            ck_assert_msg(back[i] == 2.0 * h[i], "get_device: entry %ld", (long)i);
        if (n > 0) {
            ck_assert_int_eq(ks_vec_set_device(v, NULL), KS_ERR_ARG);
            ck_assert_ptr_nonnull(strstr(ks_last_error(), "ks_vec_set_device"));
            ck_assert_int_eq(ks_vec_get_device(v, NULL), KS_ERR_ARG);
            ck_assert_ptr_nonnull(strstr(ks_last_error(), "ks_vec_get_device"));
        }
        ck_assert_int_eq(ks_vec_set_device(NULL, d), KS_ERR_ARG);
        ks_vec_destroy(&v);
        g_be->ops->free(g_be, d);
        g_be->ops->free(g_be, d2);
        free(h);
        free(back);
    }
}
END_TEST

/* Large uploads and downloads (cuda: through the page-locked pair in
 * chunks, cuda_pinned.h; KS_CUDA_PINNED_COPY=0 plain copies): every byte
 * arrives, at sizes below, at and past the pair's threshold and chunk,
 * from and to host addresses that are not 8-byte aligned. */
START_TEST(test_large_copies)
{
    const size_t mib = (size_t)1 << 20;
    const size_t sizes_b[] = {0, 8 * mib - 8, 8 * mib, 16 * mib + 24, 48 * mib + 8, 3};
    const size_t most = 48 * mib + 8;
    unsigned char *h = malloc(most + 1), *back = malloc(most + 1);
    ck_assert(h && back);
    for (size_t i = 0; i <= most; i++)
        h[i] = (unsigned char)(i * 2654435761u >> 13);
    void *d = NULL;
    KS_CHECK(ks_be_alloc(g_be, most, &d, "test array"));
    for (int plain = 0; plain < 2; plain++) {
        if (plain)
            setenv("KS_CUDA_PINNED_COPY", "0", 1);
        for (int k = 0; k < (int)(sizeof sizes_b / sizeof sizes_b[0]); k++) {
            const size_t b = sizes_b[k];
            memset(back, 0xA5, most + 1);
            KS_CHECK(g_be->ops->upload(g_be, d, h + 1, b));
            KS_CHECK(g_be->ops->download(g_be, back + 1, d, b));
            ck_assert_msg(memcmp(back + 1, h + 1, b) == 0, "%zu bytes (plain %d) changed", b,
                          plain);
            ck_assert_msg(back[0] == 0xA5 && (b == most || back[b + 1] == 0xA5),
                          "%zu bytes (plain %d): written outside", b, plain);
        }
        /* two large uploads back to back, then both read back: an upload
         * that returned before its last chunks left the pinned buffers would
         * see them overwritten by the next one's first chunks */
        void *d2 = NULL;
        const size_t half = most / 2;
        KS_CHECK(ks_be_alloc(g_be, half, &d2, "second test array"));
        KS_CHECK(g_be->ops->upload(g_be, d, h, half));
        KS_CHECK(g_be->ops->upload(g_be, d2, h + half, half));
        KS_CHECK(g_be->ops->download(g_be, back, d, half));
        KS_CHECK(g_be->ops->download(g_be, back + half, d2, half));
        ck_assert_msg(memcmp(back, h, 2 * half) == 0, "back-to-back uploads (plain %d) changed",
                      plain);
        g_be->ops->free(g_be, d2);
        unsetenv("KS_CUDA_PINNED_COPY");
    }
    g_be->ops->free(g_be, d);
    free(h);
    free(back);
}
END_TEST

START_TEST(test_be_helpers)
{
    const ks_int n = 1003;
    double *h = host_rand(n, -1, 1), *back = host_nan(n);
    void *d = NULL;
    KS_CHECK(ks_be_upload_new(g_be, h, n * sizeof(double), &d, "test array"));
    ck_assert_ptr_nonnull(d);
    KS_CHECK(g_be->ops->download(g_be, back, d, n * sizeof(double)));
    ck_assert(memcmp(h, back, n * sizeof(double)) == 0);
    g_be->ops->free(g_be, d);

    /* Backend memory is aligned for vector loads. */
    KS_CHECK(ks_be_alloc(g_be, 24, &d, "small array"));
    ck_assert_uint_eq((uintptr_t)d % 64, 0);
    g_be->ops->free(g_be, d);
    KS_CHECK(ks_be_alloc(g_be, 0, &d, "empty array"));
    g_be->ops->free(g_be, d);
    free(h);
    free(back);
}
END_TEST

/* The backend counts what is allocated on it; a limit refuses what would
 * pass it, cleanly, and the backend works on afterwards. */
START_TEST(test_memory_tracking)
{
    size_t base = ks_backend_memory_in_use(g_be);
    ks_backend_memory_reset_peak(g_be);
    ck_assert_uint_eq(ks_backend_memory_peak(g_be), base);
    ks_vec *a = NULL, *b = NULL;
    KS_CHECK(ks_vec_create(g_be, 1000, &a));
    ck_assert_uint_eq(ks_backend_memory_in_use(g_be), base + 8000);
    KS_CHECK(ks_vec_create(g_be, 500, &b));
    ck_assert_uint_eq(ks_backend_memory_in_use(g_be), base + 12000);
    ks_vec_destroy(&a);
    ck_assert_uint_eq(ks_backend_memory_in_use(g_be), base + 4000);
    ck_assert_uint_eq(ks_backend_memory_peak(g_be), base + 12000);
    /* a limit between what is used and what a new vector needs */
    KS_CHECK(ks_backend_set_memory_limit(g_be, base + 10000));
    ks_vec *c = (ks_vec *)1;
    ck_assert_int_eq(ks_vec_create(g_be, 1000, &c), KS_ERR_MEMORY);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(ks_last_error(), "8000 bytes asked") != NULL, "%s", ks_last_error());
    ck_assert_msg(strstr(ks_last_error(), "limit") != NULL, "%s", ks_last_error());
    ck_assert_uint_eq(ks_backend_memory_in_use(g_be), base + 4000);
    KS_CHECK(ks_vec_create(g_be, 700, &c)); /* fits */
    ks_vec_destroy(&c);
    KS_CHECK(ks_backend_set_memory_limit(g_be, 0));
    KS_CHECK(ks_vec_create(g_be, 100000, &c));
    ks_vec_destroy(&c);
    ks_vec_destroy(&b);
    ck_assert_uint_eq(ks_backend_memory_in_use(g_be), base);
    ck_assert_int_eq(ks_backend_set_memory_limit(NULL, 1), KS_ERR_ARG);
}
END_TEST

START_TEST(test_fill)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        ks_vec *v = vec_poisoned(n);
        KS_CHECK(ks_vec_fill(v, -2.5));
        double *ref = host_rand(n, 0, 1);
        for (ks_int i = 0; i < n; i++)
            ref[i] = -2.5;
        expect_close(v, ref, n, 0.0, "fill");
        ks_vec_destroy(&v);
        free(ref);
    }
}
END_TEST

START_TEST(test_copy)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *h = host_rand(n, -1, 1);
        ks_vec *x = vec_from(h, n), *y = vec_poisoned(n);
        KS_CHECK(ks_vec_copy(x, y));
        expect_close(y, h, n, 0.0, "copy");
        KS_CHECK(ks_vec_copy(x, x));
        expect_close(x, h, n, 0.0, "copy onto itself");
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        free(h);
    }
}
END_TEST

START_TEST(test_scale)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *h = host_rand(n, -1, 1);
        ks_vec *x = vec_from(h, n);
        KS_CHECK(ks_vec_scale(x, 0.37));
        for (ks_int i = 0; i < n; i++)
            h[i] *= 0.37;
        expect_close(x, h, n, 0.0, "scale");
        ks_vec_destroy(&x);
        free(h);
    }
}
END_TEST

START_TEST(test_axpy)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hx = host_rand(n, -1, 1), *hy = host_rand(n, -1, 1);
        ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n);
        KS_CHECK(ks_vec_axpy(-1.75, x, y));
        for (ks_int i = 0; i < n; i++)
            hy[i] += -1.75 * hx[i];
        expect_close(y, hy, n, 1e-15, "axpy");
        /* Aliased: x += 0.5 x */
        KS_CHECK(ks_vec_axpy(0.5, x, x));
        for (ks_int i = 0; i < n; i++)
            hx[i] += 0.5 * hx[i];
        expect_close(x, hx, n, 1e-15, "axpy(x, x)");
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        free(hx);
        free(hy);
    }
}
END_TEST

START_TEST(test_axpby)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hx = host_rand(n, -1, 1), *hy = host_rand(n, -1, 1);
        ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n);
        KS_CHECK(ks_vec_axpby(0.3, x, -1.2, y));
        for (ks_int i = 0; i < n; i++)
            hy[i] = 0.3 * hx[i] + -1.2 * hy[i];
        expect_close(y, hy, n, 1e-15, "axpby");
        /* b == 0 must not read y: NaN there must not leak into the result. */
        ks_vec *z = vec_poisoned(n);
        KS_CHECK(ks_vec_axpby(2.0, x, 0.0, z));
        for (ks_int i = 0; i < n; i++)
            hy[i] = 2.0 * hx[i];
        expect_close(z, hy, n, 0.0, "axpby with b = 0 over NaN");
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        ks_vec_destroy(&z);
        free(hx);
        free(hy);
    }
}
END_TEST

START_TEST(test_smooth_update)
{
    /* xout = xin + c w.*r + a (xin - xprev); NULL xin / xprev are zero */
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hw = host_rand(n, 0.5, 2), *hr = host_rand(n, -1, 1), *hp = host_rand(n, -1, 1);
        double *hx = host_rand(n, -1, 1), *ex = malloc(sizeof(double) * (n + 1));
        ck_assert(ex);
        ks_vec *w = vec_from(hw, n), *r = vec_from(hr, n), *x = vec_from(hx, n);
        for (int v = 0; v < 5; v++) {
            /* 0: Jacobi out of place, 1: Jacobi in place, 2: from x = 0,
             * 3: three-term with xprev = xout, 4: three-term, xprev = 0 */
            const double a = v >= 3 ? 0.75 : 0.0, c = -1.5;
            const int xin_zero = v == 2;
            /* an output that is not an input must not be read: NaN there */
            ks_vec *xo = v == 1 ? x : v == 3 ? vec_from(hp, n) : vec_poisoned(n);
            for (ks_int i = 0; i < n; i++) {
                double xi = xin_zero ? 0.0 : hx[i];
                ex[i] = xi + c * hw[i] * hr[i] + a * (xi - (v == 3 ? hp[i] : 0.0));
            }
            KS_CHECK(ks_vec_smooth_update(a, c, w, r, xin_zero ? NULL : x, v == 3 ? xo : NULL,
                                          xo));
            expect_close(xo, ex, n, 2e-15, "smooth_update");
            if (v != 1) {
                expect_close(x, hx, n, 0.0, "smooth_update xin");
                ks_vec_destroy(&xo);
            } else {
                KS_CHECK(ks_vec_set_host(x, hx));
            }
        }
        /* xin == xout while xprev is read would read overwritten values */
        ck_assert_int_eq(ks_vec_smooth_update(0.5, 1.0, w, r, x, r, x), KS_ERR_ARG);
        ks_vec_destroy(&w);
        ks_vec_destroy(&r);
        ks_vec_destroy(&x);
        free(hw);
        free(hr);
        free(hp);
        free(hx);
        free(ex);
    }
}
END_TEST

START_TEST(test_axpbypcz)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hx = host_rand(n, -1, 1), *hy = host_rand(n, -1, 1), *hz = host_rand(n, -1, 1);
        ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n), *z = vec_from(hz, n);
        KS_CHECK(ks_vec_axpbypcz(0.5, x, -0.25, y, 1.5, z));
        for (ks_int i = 0; i < n; i++)
            hz[i] = 0.5 * hx[i] + -0.25 * hy[i] + 1.5 * hz[i];
        expect_close(z, hz, n, 2e-15, "axpbypcz");
        ks_vec *w = vec_poisoned(n);
        KS_CHECK(ks_vec_axpbypcz(0.5, x, -0.25, y, 0.0, w));
        for (ks_int i = 0; i < n; i++)
            hz[i] = 0.5 * hx[i] + -0.25 * hy[i];
        expect_close(w, hz, n, 1e-15, "axpbypcz with c = 0 over NaN");
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        ks_vec_destroy(&z);
        ks_vec_destroy(&w);
        free(hx);
        free(hy);
        free(hz);
    }
}
END_TEST

START_TEST(test_pmul)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hw = host_rand(n, -1, 1), *hx = host_rand(n, -1, 1);
        ks_vec *w = vec_from(hw, n), *x = vec_from(hx, n), *y = vec_poisoned(n);
        KS_CHECK(ks_vec_pointwise_mult(w, x, y));
        for (ks_int i = 0; i < n; i++)
            hx[i] *= hw[i];
        expect_close(y, hx, n, 0.0, "pointwise_mult");
        ks_vec_destroy(&w);
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        free(hw);
        free(hx);
    }
}
END_TEST

/* Data with a positive bias, so the dot product is well conditioned and a
 * relative error against an extended-precision reference is meaningful. */
START_TEST(test_dot)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hx = host_rand(n, -0.5, 1.5), *hy = host_rand(n, -0.5, 1.5);
        ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n);
        long double ref = 0;
        for (ks_int i = 0; i < n; i++)
            ref += (long double)hx[i] * hy[i];
        double r = NAN;
        KS_CHECK(ks_vec_dot(x, y, &r));
        expect_rel(r, ref, 1e-13, "dot", n);
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        free(hx);
        free(hy);
    }
}
END_TEST

START_TEST(test_dot2)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hx = host_rand(n, -0.5, 1.5), *hy = host_rand(n, -0.5, 1.5);
        double *hu = host_rand(n, -1.5, 0.5), *hv = host_rand(n, -0.5, 1.5);
        ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n), *u = vec_from(hu, n),
               *v = vec_from(hv, n);
        long double r0 = 0, r1 = 0;
        for (ks_int i = 0; i < n; i++) {
            r0 += (long double)hx[i] * hy[i];
            r1 += (long double)hu[i] * hv[i];
        }
        double r[2] = {NAN, NAN};
        KS_CHECK(ks_vec_dot2(x, y, u, v, r));
        expect_rel(r[0], r0, 1e-13, "dot2[0]", n);
        expect_rel(r[1], r1, 1e-13, "dot2[1]", n);
        /* Each half equals the plain dot product bit for bit? Not promised;
         * but it must agree to rounding. */
        double d = NAN;
        KS_CHECK(ks_vec_dot(u, v, &d));
        expect_rel(r[1], d, 1e-13, "dot2[1] vs dot", n);
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        ks_vec_destroy(&u);
        ks_vec_destroy(&v);
        free(hx);
        free(hy);
        free(hu);
        free(hv);
    }
}
END_TEST

START_TEST(test_norms)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *h = host_rand(n, -1, 1);
        if (n > 3)
            h[n / 3] = -7.0; /* the max-abs entry is negative */
        ks_vec *x = vec_from(h, n);
        long double s2 = 0, s1 = 0, mx = 0;
        for (ks_int i = 0; i < n; i++) {
            s2 += (long double)h[i] * h[i];
            s1 += fabsl((long double)h[i]);
            if (fabsl((long double)h[i]) > mx)
                mx = fabsl((long double)h[i]);
        }
        double r = NAN;
        KS_CHECK(ks_vec_norm2(x, &r));
        expect_rel(r, sqrtl(s2), 1e-13, "norm2", n);
        r = NAN;
        KS_CHECK(ks_vec_norm1(x, &r));
        expect_rel(r, s1, 1e-13, "norm1", n);
        r = NAN;
        KS_CHECK(ks_vec_norminf(x, &r));
        ck_assert_msg(r == (double)mx, "norminf on %s, n=%ld: got %g want %g", g_name, (long)n,
                      r, (double)mx);
        /* A NaN entry must show in every norm, wherever it sits. */
        if (n > 0) {
            h[n - 1] = NAN;
            KS_CHECK(ks_vec_set_host(x, h));
            KS_CHECK(ks_vec_norminf(x, &r));
            ck_assert_msg(isnan(r), "norminf hides NaN on %s, n=%ld", g_name, (long)n);
            KS_CHECK(ks_vec_norm2(x, &r));
            ck_assert_msg(isnan(r), "norm2 hides NaN on %s, n=%ld", g_name, (long)n);
            KS_CHECK(ks_vec_norm1(x, &r));
            ck_assert_msg(isnan(r), "norm1 hides NaN on %s, n=%ld", g_name, (long)n);
        }
        ks_vec_destroy(&x);
        free(h);
    }
}
END_TEST

START_TEST(test_axpy_norm2)
{
    for (int k = 0; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *hx = host_rand(n, -1, 1), *hy = host_rand(n, -1, 1);
        ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n);
        double r = NAN;
        KS_CHECK(ks_vec_axpy_norm2(0.75, x, y, &r));
        long double s = 0;
        for (ks_int i = 0; i < n; i++) {
            hy[i] += 0.75 * hx[i];
            s += (long double)hy[i] * hy[i];
        }
        expect_close(y, hy, n, 1e-15, "axpy_norm2 (y)");
        expect_rel(r, sqrtl(s), 1e-13, "axpy_norm2 (norm)", n);
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
        free(hx);
        free(hy);
    }
}
END_TEST

/* Entries whose squares overflow (1e200) or underflow (1e-200, subnormal
 * 1e-310) still give the norm, as LAPACK's dnrm2 does, the same bits on
 * repeated calls; the fused axpy_norm2 too. Ordinary vectors keep the
 * plain sqrt(x.x) (bitwise, so the fast path is unchanged). */
START_TEST(test_norm2_scaled)
{
    static const double scales[] = {1e200, -1e300, 1e-200, 1e-310, 1.7e308};
    for (int k = 1; k < NSIZES; k++) {
        ks_int n = sizes[k];
        double *h = host_rand(n, -1, 1), *hs = malloc((size_t)n * sizeof *hs);
        ck_assert_ptr_nonnull(hs);
        long double s2 = 0;
        for (ks_int i = 0; i < n; i++)
            s2 += (long double)h[i] * h[i];
        ks_vec *x = vec_from(h, n);
        double r = NAN, dot = NAN;
        KS_CHECK(ks_vec_norm2(x, &r));
        KS_CHECK(ks_vec_dot(x, x, &dot));
        ck_assert(r == sqrt(dot));
        for (int j = 0; j < 5; j++) {
            double c = scales[j] / (n > 1 ? sqrt((double)n) : 1.0); /* norm ~ |scale| / 1.7 */
            for (ks_int i = 0; i < n; i++)
                hs[i] = h[i] * c;
            KS_CHECK(ks_vec_set_host(x, hs));
            double r1 = NAN, r2 = NAN;
            KS_CHECK(ks_vec_norm2(x, &r1));
            KS_CHECK(ks_vec_norm2(x, &r2));
            ck_assert_msg(r1 == r2, "norm2 not deterministic on %s", g_name);
            long double want = sqrtl(s2) * fabsl((long double)c);
            double tol = fabs(scales[j]) < 1e-300 ? 1e-6 : 1e-13; /* subnormals hold fewer bits */
            expect_rel(r1, want, tol, "norm2 (scaled)", n);
            /* fused: y = 0 + 1 x */
            ks_vec *y;
            KS_CHECK(ks_vec_create(g_be, n, &y));
            KS_CHECK(ks_vec_fill(y, 0.0));
            KS_CHECK(ks_vec_axpy_norm2(1.0, x, y, &r2));
            expect_rel(r2, want, tol, "axpy_norm2 (scaled)", n);
            ks_vec_destroy(&y);
        }
        /* Inf stays Inf, zero stays zero */
        hs[n - 1] = INFINITY;
        KS_CHECK(ks_vec_set_host(x, hs));
        KS_CHECK(ks_vec_norm2(x, &r));
        ck_assert(isinf(r));
        KS_CHECK(ks_vec_fill(x, 0.0));
        KS_CHECK(ks_vec_norm2(x, &r));
        ck_assert(r == 0.0);
        ks_vec_destroy(&x);
        free(h);
        free(hs);
    }
}
END_TEST

/* Same inputs, same bits: two calls, and the fused kernels against the
 * single ones where the backend's blocking makes them identical. */
START_TEST(test_reduction_determinism)
{
    const ks_int n = 100003;
    double *hx = host_rand(n, -1, 1), *hy = host_rand(n, -1, 1);
    ks_vec *x = vec_from(hx, n), *y = vec_from(hy, n), *t = vec_poisoned(n);
    double a[2], b[2], d2a[2], d2b[2];
    KS_CHECK(ks_vec_dot(x, y, &a[0]));
    KS_CHECK(ks_vec_norm2(x, &a[1]));
    KS_CHECK(ks_vec_dot2(x, y, y, x, d2a));
    KS_CHECK(ks_vec_dot(x, y, &b[0]));
    KS_CHECK(ks_vec_norm2(x, &b[1]));
    KS_CHECK(ks_vec_dot2(x, y, y, x, d2b));
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert(memcmp(d2a, d2b, sizeof d2a) == 0);
    double n1a, n1b;
    KS_CHECK(ks_vec_norm1(x, &n1a));
    KS_CHECK(ks_vec_norm1(x, &n1b));
    ck_assert(memcmp(&n1a, &n1b, sizeof n1a) == 0);
    /* axpy_norm2 from equal starting points */
    double an[2];
    for (int rep = 0; rep < 2; rep++) {
        KS_CHECK(ks_vec_set_host(t, hy));
        KS_CHECK(ks_vec_axpy_norm2(-0.5, x, t, &an[rep]));
    }
    ck_assert(memcmp(&an[0], &an[1], sizeof an[0]) == 0);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_vec_destroy(&t);
    free(hx);
    free(hy);
}
END_TEST

/* Many reduction blocks (more than either backend keeps in its fixed
 * scratch), with exactly representable sums. */
START_TEST(test_large_reduction)
{
    const ks_int n = 8192 * 1024 + 4099;
    ks_vec *x = NULL, *y = NULL;
    KS_CHECK(ks_vec_create(g_be, n, &x));
    KS_CHECK(ks_vec_create(g_be, n, &y));
    KS_CHECK(ks_vec_fill(x, 0.5));
    KS_CHECK(ks_vec_fill(y, -2.0));
    double r = NAN;
    KS_CHECK(ks_vec_dot(x, y, &r));
    ck_assert_msg(r == -(double)n, "dot: got %.17g want %ld", r, -(long)n);
    KS_CHECK(ks_vec_norm1(y, &r));
    ck_assert_msg(r == 2.0 * n, "norm1: got %.17g", r);
    double d[2];
    KS_CHECK(ks_vec_dot2(x, x, y, y, d));
    ck_assert(d[0] == 0.25 * n && d[1] == 4.0 * n);
    KS_CHECK(ks_vec_axpy_norm2(1.0, x, y, &r)); /* y = -1.5 */
    expect_rel(r, sqrtl(2.25L * n), 1e-15, "axpy_norm2", n);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
}
END_TEST

START_TEST(test_vec_errors)
{
    ks_vec *x = NULL, *y = NULL;
    double r;
    KS_CHECK(ks_vec_create(g_be, 10, &x));
    KS_CHECK(ks_vec_create(g_be, 12, &y));

    ks_error e = ks_vec_axpy(1.0, x, y);
    ck_assert_int_eq(e, KS_ERR_SIZE);
    ck_assert_msg(strstr(ks_last_error(), "10") && strstr(ks_last_error(), "12"),
                  "size message lacks the sizes: %s", ks_last_error());
    ck_assert_int_eq(ks_vec_dot(x, y, &r), KS_ERR_SIZE);
    ck_assert_int_eq(ks_vec_copy(x, y), KS_ERR_SIZE);
    ck_assert_int_eq(ks_vec_pointwise_mult(x, x, y), KS_ERR_SIZE);
    ck_assert_int_eq(ks_vec_axpbypcz(1, x, 1, x, 1, y), KS_ERR_SIZE);

    ck_assert_int_eq(ks_vec_axpy(1.0, NULL, y), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "NULL"));
    ck_assert_int_eq(ks_vec_norm2(NULL, &r), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_norm2(x, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_fill(NULL, 1.0), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_get_host(x, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_set_host(x, NULL), KS_ERR_ARG);

    ks_vec *z = (ks_vec *)1;
    ck_assert_int_eq(ks_vec_create(g_be, -1, &z), KS_ERR_ARG);
    ck_assert_ptr_null(z);
    ck_assert_int_eq(ks_vec_create(NULL, 5, &z), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_create(g_be, 5, NULL), KS_ERR_ARG);

    /* Vectors of another backend object cannot be mixed, even same kind. */
    ks_backend *other = NULL;
    KS_CHECK(ks_backend_create(g_name, &other));
    ks_vec *w = NULL;
    KS_CHECK(ks_vec_create(other, 10, &w));
    ck_assert_int_eq(ks_vec_axpy(1.0, x, w), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "different backend"));
    ks_vec_destroy(&w);
    ks_backend_destroy(&other);

    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
}
END_TEST

/* Tests that run once per backend. */
#define PER_BACKEND_TESTS(X)                                                                  \
    X(test_backend_basics)                                                                    \
    X(test_set_get)                                                                           \
    X(test_be_helpers)                                                                        \
    X(test_memory_tracking)                                                                   \
    X(test_fill)                                                                              \
    X(test_copy)                                                                              \
    X(test_scale)                                                                             \
    X(test_axpy)                                                                              \
    X(test_axpby)                                                                             \
    X(test_axpbypcz)                                                                          \
    X(test_smooth_update)                                                                     \
    X(test_pmul)                                                                              \
    X(test_dot)                                                                               \
    X(test_dot2)                                                                              \
    X(test_norms)                                                                             \
    X(test_axpy_norm2)                                                                        \
    X(test_norm2_scaled)                                                                      \
    X(test_reduction_determinism)                                                             \
    X(test_large_reduction)                                                                   \
    X(test_vec_errors)                                                                        \
    X(test_set_get_device)                                                                    \
    X(test_large_copies)

#define COUNT_TEST(t) +1
static const int n_per_backend = 0 PER_BACKEND_TESTS(COUNT_TEST);

static TCase *backend_tcase(const char *name, void (*setup)(void))
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup, teardown_backend);
#define ADD_TEST(t) tcase_add_test(tc, t);
    PER_BACKEND_TESTS(ADD_TEST)
#undef ADD_TEST
    return tc;
}

/* ------------------------------------------- backend-independent tests */

START_TEST(test_backend_names)
{
    ks_backend *be = (ks_backend *)1;
    ks_error e = ks_backend_create("opencl", &be);
    ck_assert_int_eq(e, KS_ERR_ARG);
    ck_assert_ptr_null(be);
    ck_assert_msg(strstr(ks_last_error(), "opencl") && strstr(ks_last_error(), "cpu") &&
                      strstr(ks_last_error(), "cuda"),
                  "message should name the bad and the valid backends: %s", ks_last_error());
    ck_assert_int_eq(ks_backend_create(NULL, &be), KS_ERR_ARG);
    ck_assert_int_eq(ks_backend_create("cpu", NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_backend_available("opencl"), 0);
    ck_assert_int_eq(ks_backend_available("cpu"), 1);
    ks_backend_destroy(NULL);

    /* Probing leaves the caller's last error as it was. */
    ks_seterr(KS_ERR_IO, "earlier failure");
    ck_assert_int_eq(ks_backend_available("opencl"), 0);
    (void)ks_backend_available("cuda");
    ck_assert_str_eq(ks_last_error(), "earlier failure");
    ks_clear_error();
    ck_assert_int_eq(ks_backend_available("cpu"), 1);
    ck_assert_str_eq(ks_last_error(), "");
}
END_TEST

START_TEST(test_cuda_unavailable)
{
    ks_backend *be = NULL;
    ks_error e = ks_backend_create("cuda", &be);
    ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
    ck_assert_ptr_null(be);
    ck_assert_msg(strstr(ks_last_error(), "no CUDA device") ||
                      strstr(ks_last_error(), "built without CUDA"),
                  "unclear reason: %s", ks_last_error());
#ifdef KS_HAVE_CUDA
    ck_assert_int_eq(ks_cuda_device_count(), 0);
#endif
}
END_TEST

START_TEST(test_cpu_description)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    ck_assert_ptr_nonnull(strstr(ks_backend_description(be), "thread"));
    ks_backend_destroy(&be);
}
END_TEST

#ifdef _OPENMP
/* cpu reductions give the same bits with 1, 2 and 3 threads. */
START_TEST(test_cpu_thread_independence)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    const ks_int n = 300007;
    double *hx = host_rand(n, -1, 1), *hy = host_rand(n, -1, 1);
    double res[3][7];
    int saved = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        ks_vec *x = NULL, *y = NULL;
        KS_CHECK(ks_vec_create(be, n, &x));
        KS_CHECK(ks_vec_create(be, n, &y));
        KS_CHECK(ks_vec_set_host(x, hx));
        KS_CHECK(ks_vec_set_host(y, hy));
        KS_CHECK(ks_vec_dot(x, y, &res[t][0]));
        KS_CHECK(ks_vec_norm2(x, &res[t][1]));
        KS_CHECK(ks_vec_norm1(x, &res[t][2]));
        KS_CHECK(ks_vec_norminf(x, &res[t][3]));
        KS_CHECK(ks_vec_dot2(x, y, y, y, &res[t][4]));
        KS_CHECK(ks_vec_axpy_norm2(0.25, x, y, &res[t][6]));
        ks_vec_destroy(&x);
        ks_vec_destroy(&y);
    }
    omp_set_num_threads(saved);
    for (int t = 1; t < 3; t++)
        for (int k = 0; k < 7; k++)
            ck_assert_msg(memcmp(&res[0][k], &res[t][k], sizeof(double)) == 0,
                          "result %d differs between 1 and %d threads: %.17g vs %.17g", k, t + 1,
                          res[0][k], res[t][k]);
    ks_backend_destroy(&be);
    free(hx);
    free(hy);
}
END_TEST
#endif

#ifdef KS_HAVE_CUDA
/* cpu and cuda agree to rounding, and their vectors do not mix. */
START_TEST(test_cpu_cuda_agree)
{
    ks_backend *bc = NULL, *bg = NULL;
    KS_CHECK(ks_backend_create("cpu", &bc));
    KS_CHECK(ks_backend_create("cuda", &bg));
    const ks_int n = 100003;
    double *hx = host_rand(n, -0.5, 1.5);
    ks_vec *xc = NULL, *xg = NULL;
    KS_CHECK(ks_vec_create(bc, n, &xc));
    KS_CHECK(ks_vec_create(bg, n, &xg));
    KS_CHECK(ks_vec_set_host(xc, hx));
    KS_CHECK(ks_vec_set_host(xg, hx));
    double rc, rg;
    KS_CHECK(ks_vec_norm2(xc, &rc));
    KS_CHECK(ks_vec_norm2(xg, &rg));
    ck_assert_msg(fabs(rc - rg) <= 1e-13 * rc, "norm2 cpu %.17g cuda %.17g", rc, rg);
    ck_assert_int_eq(ks_vec_copy(xc, xg), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "cuda"));
    ck_assert_ptr_nonnull(ks_cuda_stream(bg));
    ck_assert_ptr_nonnull(ks_cuda_cusparse(bg));
    ck_assert_ptr_null(ks_cuda_stream(bc));
    ck_assert_int_ge(ks_cuda_device_count(), 1);
    ks_vec_destroy(&xc);
    ks_vec_destroy(&xg);
    ks_backend_destroy(&bc);
    ks_backend_destroy(&bg);
    free(hx);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("vec");

    TCase *tc = tcase_create("backend");
    tcase_add_test(tc, test_backend_names);
    tcase_add_test(tc, test_cpu_description);
#ifdef _OPENMP
    tcase_add_test(tc, test_cpu_thread_independence);
#endif
    suite_add_tcase(s, tc);

    suite_add_tcase(s, backend_tcase("cpu", setup_cpu));

    if (ks_test_have_cuda()) {
        suite_add_tcase(s, backend_tcase("cuda", setup_cuda));
#ifdef KS_HAVE_CUDA
        TCase *tg = tcase_create("cpu_cuda");
        tcase_add_test(tg, test_cpu_cuda_agree);
        suite_add_tcase(s, tg);
#endif
    } else {
        /* The reason is the message ks_backend_create gives. */
        ks_backend *be = NULL;
        (void)ks_backend_create("cuda", &be);
        char why[320];
        snprintf(why, sizeof why, "%s", ks_last_error());
        ks_clear_error();
        TCase *tu = tcase_create("cuda_unavailable");
        tcase_add_test(tu, test_cuda_unavailable);
        suite_add_tcase(s, tu);
#ifdef KS_HAVE_CUDA
        ks_test_skip(n_per_backend + 1, why);
#else
        ks_test_skip(n_per_backend, why);
#endif
    }
    return ks_test_run(s);
}
