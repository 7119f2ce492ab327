/* The block vector operations GMRES and the pipelined methods use:
 * ks_vec_mdot (k dot products in one pass) and ks_vec_maxpy (y += sum a_j
 * x_j), against plain loops on the host, for sizes across the cpu's
 * reduction blocks and k across the backends' chunk of KS_VEC_MULTI_MAX;
 * every mdot result has the bits of ks_vec_dot of its pair, run after run;
 * the cuda kernels against the cpu (skipped without a GPU). */
#include "ks_test.h"
#include "vec/vec_fused.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ks_int sizes[] = {1, 7, 8192, 8193, 50000};
static const int ks_[] = {1, 2, 7, 8, 9, 31, 32, 33, 70};
#define NS ((int)(sizeof sizes / sizeof sizes[0]))
#define NK ((int)(sizeof ks_ / sizeof ks_[0]))
#define KMAX 70

typedef struct vset {
    ks_vec *v[KMAX + 1];
    double *h[KMAX + 1];
} vset;

/* KMAX + 1 random vectors of n entries on backend be (the same numbers on
 * every backend for one seed). */
static void vset_make(vset *s, ks_backend *be, ks_int n, uint64_t seed)
{
    ks_test_rng_seed(seed);
    for (int j = 0; j <= KMAX; j++) {
        s->h[j] = malloc((size_t)n * sizeof(double));
        ck_assert(s->h[j]);
        for (ks_int i = 0; i < n; i++)
            s->h[j][i] = 2.0 * ks_test_urand() - 1.0;
        KS_CHECK(ks_vec_create(be, n, &s->v[j]));
        KS_CHECK(ks_vec_set_host(s->v[j], s->h[j]));
    }
}

static void vset_free(vset *s)
{
    for (int j = 0; j <= KMAX; j++) {
        ks_vec_destroy(&s->v[j]);
        free(s->h[j]);
    }
}

START_TEST(mdot_against_loop_and_dot)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    for (int a = 0; a < NS; a++) {
        ks_int n = sizes[a];
        vset s;
        vset_make(&s, be, n, 11 + (uint64_t)a);
        for (int b = 0; b < NK; b++) {
            int k = ks_[b];
            /* pairs (v_j, v_KMAX): GMRES's shape; and (v_j, v_{j+1}) */
            const ks_vec *x[KMAX], *y[KMAX], *y2[KMAX];
            for (int j = 0; j < k; j++) {
                x[j] = s.v[j];
                y[j] = s.v[KMAX];
                y2[j] = s.v[j + 1];
            }
            double r[KMAX], r2[KMAX], again[KMAX];
            KS_CHECK(ks_vec_mdot(k, x, y, r));
            KS_CHECK(ks_vec_mdot(k, x, y2, r2));
            KS_CHECK(ks_vec_mdot(k, x, y, again));
            for (int j = 0; j < k; j++) {
                long double ref = 0.0L, ref2 = 0.0L, mag = 0.0L;
                for (ks_int i = 0; i < n; i++) {
                    ref += (long double)s.h[j][i] * s.h[KMAX][i];
                    ref2 += (long double)s.h[j][i] * s.h[j + 1][i];
                    mag += fabsl((long double)s.h[j][i] * s.h[KMAX][i]);
                }
                ck_assert_msg(fabs(r[j] - (double)ref) <= 1e-14 * (double)mag + 1e-300,
                              "n %ld k %d j %d: mdot %.17g, loop %.17Lg", (long)n, k, j, r[j],
                              ref);
                ck_assert_msg(fabs(r2[j] - (double)ref2) <= 1e-14 * (double)n,
                              "n %ld k %d j %d: mdot %.17g, loop %.17Lg", (long)n, k, j,
                              r2[j], ref2);
                double d;
                KS_CHECK(ks_vec_dot(x[j], y[j], &d));
                ck_assert_msg(memcmp(&d, &r[j], sizeof d) == 0 &&
                                  memcmp(&again[j], &r[j], sizeof d) == 0,
                              "n %ld k %d j %d: mdot %.17g, dot %.17g, again %.17g", (long)n,
                              k, j, r[j], d, again[j]);
            }
        }
        vset_free(&s);
    }
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(maxpy_against_loop)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    for (int a = 0; a < NS; a++) {
        ks_int n = sizes[a];
        vset s;
        vset_make(&s, be, n, 21 + (uint64_t)a);
        for (int b = 0; b < NK; b++) {
            int k = ks_[b];
            double coef[KMAX];
            const ks_vec *x[KMAX];
            for (int j = 0; j < k; j++) {
                coef[j] = 0.5 - 0.1 * j;
                x[j] = s.v[j];
            }
            KS_CHECK(ks_vec_set_host(s.v[KMAX], s.h[KMAX]));
            KS_CHECK(ks_vec_maxpy(k, coef, x, s.v[KMAX]));
            double *got = malloc((size_t)n * sizeof *got);
            KS_CHECK(ks_vec_get_host(s.v[KMAX], got));
            for (ks_int i = 0; i < n; i++) {
                /* the same order of additions: the same bits */
                double ref = s.h[KMAX][i];
                for (int j = 0; j < k; j++)
                    ref += coef[j] * s.h[j][i];
                ck_assert_msg(fabs(got[i] - ref) <= 1e-15 * (1.0 + fabs(ref)) * k,
                              "n %ld k %d entry %ld: %.17g vs %.17g", (long)n, k, (long)i,
                              got[i], ref);
            }
            free(got);
        }
        vset_free(&s);
    }
    ks_backend_destroy(&be);
}
END_TEST

/* The split form on local vectors: begin does it all, end returns its
 * outcome; the bits of ks_vec_mdot. */
START_TEST(mdot_begin_end_local)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    vset s;
    vset_make(&s, be, 20000, 41);
    const ks_vec *x[KMAX], *y[KMAX];
    for (int j = 0; j < KMAX; j++) {
        x[j] = s.v[j];
        y[j] = s.v[KMAX - j];
    }
    for (int b = 0; b < NK; b++) {
        int k = ks_[b];
        double r[KMAX], q[KMAX];
        ks_vec_pending p;
        KS_CHECK(ks_vec_mdot(k, x, y, r));
        KS_CHECK(ks_vec_mdot_begin(k, x, y, q, &p));
        KS_CHECK(ks_vec_mdot_end(&p));
        ck_assert_msg(memcmp(r, q, (size_t)k * sizeof *r) == 0, "k %d: split differs", k);
    }
    ks_vec *c;
    KS_CHECK(ks_vec_create(be, 7, &c));
    const ks_vec *bad[2] = {s.v[0], c};
    double r[2];
    ks_vec_pending p;
    ck_assert_int_eq(ks_vec_mdot_begin(2, x, bad, r, &p), KS_ERR_SIZE);
    ck_assert_int_eq(ks_vec_mdot_begin(2, x, y, r, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_mdot_end(NULL), KS_ERR_ARG);
    ks_vec_destroy(&c);
    vset_free(&s);
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(argument_errors)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    ks_vec *a, *b, *c;
    KS_CHECK(ks_vec_create(be, 10, &a));
    KS_CHECK(ks_vec_create(be, 10, &b));
    KS_CHECK(ks_vec_create(be, 11, &c));
    const ks_vec *x[2] = {a, b}, *y[2] = {b, c};
    double r[2], coef[2] = {1.0, 2.0};
    ck_assert_int_eq(ks_vec_mdot(2, x, y, r), KS_ERR_SIZE);
    ck_assert_int_eq(ks_vec_mdot(0, x, y, r), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_mdot(1, x, y, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_vec_maxpy(2, coef, x, c), KS_ERR_SIZE);
    ck_assert_int_eq(ks_vec_maxpy(2, coef, x, b), KS_ERR_ARG); /* x[1] is y */
    ck_assert_int_eq(ks_vec_maxpy(0, coef, x, b), KS_ERR_ARG);
    ks_vec_destroy(&a);
    ks_vec_destroy(&b);
    ks_vec_destroy(&c);
    ks_backend_destroy(&be);
}
END_TEST

/* cuda's mdot and maxpy against the cpu's on the same numbers; cuda's mdot
 * against cuda's dot bit for bit, and twice the same bits. */
START_TEST(cuda_against_cpu)
{
    ks_backend *cpu, *cuda;
    KS_CHECK(ks_backend_create("cpu", &cpu));
    KS_CHECK(ks_backend_create("cuda", &cuda));
    for (int a = 0; a < NS; a++) {
        ks_int n = sizes[a];
        vset sc, sg;
        vset_make(&sc, cpu, n, 31 + (uint64_t)a);
        vset_make(&sg, cuda, n, 31 + (uint64_t)a);
        for (int b = 0; b < NK; b++) {
            int k = ks_[b];
            const ks_vec *xc[KMAX], *yc[KMAX], *xg[KMAX], *yg[KMAX];
            double coef[KMAX];
            for (int j = 0; j < k; j++) {
                xc[j] = sc.v[j];
                yc[j] = sc.v[KMAX];
                xg[j] = sg.v[j];
                yg[j] = j % 2 ? sg.v[j + 1] : sg.v[KMAX];
                if (j % 2)
                    yc[j] = sc.v[j + 1];
                coef[j] = 0.25 + 0.01 * j;
            }
            double rc[KMAX], rg[KMAX], rg2[KMAX];
            KS_CHECK(ks_vec_mdot(k, xc, yc, rc));
            KS_CHECK(ks_vec_mdot(k, xg, yg, rg));
            KS_CHECK(ks_vec_mdot(k, xg, yg, rg2));
            for (int j = 0; j < k; j++) {
                double d;
                KS_CHECK(ks_vec_dot(xg[j], yg[j], &d));
                ck_assert_msg(memcmp(&d, &rg[j], sizeof d) == 0 &&
                                  memcmp(&rg2[j], &rg[j], sizeof d) == 0,
                              "cuda n %ld k %d j %d: mdot %.17g dot %.17g again %.17g",
                              (long)n, k, j, rg[j], d, rg2[j]);
                ck_assert_msg(fabs(rg[j] - rc[j]) <= 1e-13 * (1.0 + (double)n),
                              "n %ld k %d j %d: cuda %.17g cpu %.17g", (long)n, k, j, rg[j],
                              rc[j]);
            }
            KS_CHECK(ks_vec_set_host(sc.v[KMAX], sc.h[KMAX]));
            KS_CHECK(ks_vec_set_host(sg.v[KMAX], sg.h[KMAX]));
            KS_CHECK(ks_vec_maxpy(k, coef, xc, sc.v[KMAX]));
            KS_CHECK(ks_vec_maxpy(k, coef, xg, sg.v[KMAX]));
            double *hc = malloc((size_t)n * sizeof *hc), *hg = malloc((size_t)n * sizeof *hg);
            KS_CHECK(ks_vec_get_host(sc.v[KMAX], hc));
            KS_CHECK(ks_vec_get_host(sg.v[KMAX], hg));
            double err = ks_test_max_relerr(hg, hc, n);
            ck_assert_msg(err <= 1e-14 * k, "maxpy n %ld k %d: cuda vs cpu %g", (long)n, k, err);
            free(hc);
            free(hg);
        }
        vset_free(&sc);
        vset_free(&sg);
    }
    ks_backend_destroy(&cuda);
    ks_backend_destroy(&cpu);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vec_multi");
    TCase *tc = tcase_create("vec_multi");
    tcase_add_test(tc, mdot_against_loop_and_dot);
    tcase_add_test(tc, maxpy_against_loop);
    tcase_add_test(tc, argument_errors);
    tcase_add_test(tc, mdot_begin_end_local);
    if (ks_test_have_cuda())
        tcase_add_test(tc, cuda_against_cpu);
    else
        ks_test_skip(1, "no CUDA device: cuda mdot/maxpy against the cpu");
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
