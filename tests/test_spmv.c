/* SpMV layer: registry, every format's host layout (cuda formats included,
 * so CI without a GPU checks them), the formats on each available backend,
 * real matrices from ../shared/matrices, and the error paths. Every result
 * is compared with ks_csr_spmv_ref in float64. */
#include "ks_test.h"
#include "spmv/csr_layout.h"
#include "spmv/format.h"
#include "spmv_cases.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TOL 1e-12

/* ------------------------------------------------------------ test data */
enum { CASE_RANDOM, CASE_HUGE_ROW, CASE_ONE, CASE_ARROW, CASE_WIDE, CASE_TALL, CASE_EMPTY,
       CASE_P2D, CASE_P3D, CASE_P3D27, NCASES };
static const char *const case_names[NCASES] = {
    "random with empty rows", "one huge row", "1x1", "dense row and column",
    "rectangular 150x900", "rectangular 900x150", "no entries", "poisson2d_5 24^2",
    "poisson3d_7 16^3", "poisson3d_27 7^3"};

static void make_case(int c, ks_csr *A)
{
    memset(A, 0, sizeof *A);
    switch (c) {
    case CASE_RANDOM: sc_make_random(A, 700, 650, 24, 1); break;
    case CASE_HUGE_ROW: sc_make_huge_row(A); break;
    case CASE_ONE: sc_make_one(A); break;
    case CASE_ARROW: sc_make_arrow(A, 400, 11); break;
    case CASE_WIDE: sc_make_random(A, 150, 900, 40, 2); break;
    case CASE_TALL: sc_make_random(A, 900, 150, 8, 3); break;
    case CASE_EMPTY: sc_make_empty(A, 10, 7); break;
    case CASE_P2D: sc_make_gen(A, KS_GEN_POISSON2D_5, 24); break;
    case CASE_P3D: sc_make_gen(A, KS_GEN_POISSON3D_7, 16); break;
    case CASE_P3D27: sc_make_gen(A, KS_GEN_POISSON3D_27, 7); break;
    }
}

static const sc_coef coefs[] = {
    {1.0, 0.0}, {-0.5, 0.0}, {2.0, 1.0}, {1.0, -1.5}, {0.75, 0.25}, {0.0, 2.0},
};
#define NCOEFS ((int)(sizeof coefs / sizeof coefs[0]))

/* ------------------------------------------------------------ checkers */
/* Padded and banded formats may refuse a matrix they cannot hold well; every
 * other format must take any valid CSR. */
static int may_refuse(const char *fmt)
{
    static const char *const padded[] = {"ell", "ellr", "dia", "bdia", NULL};
    for (int i = 0; padded[i]; i++)
        if (strcmp(fmt, padded[i]) == 0)
            return 1;
    return 0;
}

/* A refusal must be KS_ERR_UNSUPPORTED with a reason, and only from a format
 * allowed to refuse. Returns 1 when refused. */
static int refused(const char *fmt, ks_error e, const char *label)
{
    if (e == KS_ERR_UNSUPPORTED && may_refuse(fmt)) {
        ck_assert_msg(strlen(ks_last_error()) > 10, "%s refused %s without a reason", fmt, label);
        return 1;
    }
    return 0;
}

/* Host layout of format f against the reference for every alpha/beta, and
 * its conversion back to CSR. */
static void check_layout(const ks_spmv_format_ops *f, const ks_spmv_params *prm,
                         const ks_csr *A, const char *label)
{
    void *layout = NULL;
    ks_error e = f->layout_build(A, prm, &layout);
    if (refused(f->name, e, label)) {
        ck_assert_ptr_null(layout);
        return;
    }
    ck_assert_msg(e == KS_OK, "%s layout of %s: %s: %s", f->name, label, ks_error_name(e),
                  ks_last_error());
    ks_csr back = {0};
    KS_CHECK(f->layout_to_csr(layout, &back));
    char what[160];
    snprintf(what, sizeof what, "%s: %s converted back to CSR", f->name, label);
    sc_expect_same_csr(&back, A, what);
    ks_csr_free(&back);
    ck_assert_msg(f->layout_bytes(layout) > 0.0, "%s: bytes per apply not positive", f->name);
    snprintf(what, sizeof what, "%s layout, %s", f->name, label);
    sc_check_apply(f->layout_apply, layout, A, coefs, NCOEFS, TOL, what);
    f->layout_free(layout);
}

/* Upload n host values (NULL: NaN, the poison) into a new vector. */
static ks_vec *fused_vec(ks_backend *be, ks_int n, const double *h)
{
    ks_vec *v = NULL;
    KS_CHECK(ks_vec_create(be, n, &v));
    double *p = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert_ptr_nonnull(p);
    for (ks_int i = 0; i < n; i++)
        p[i] = h ? h[i] : NAN;
    KS_CHECK(ks_vec_set_host(v, p));
    free(p);
    return v;
}

/* |got - ref| over the size of the terms that made ref, at most TOL. */
static void fused_expect(const ks_vec *v, const long double *ref, const double *scale, ks_int n,
                         const char *what, const char *fmt, const char *label)
{
    double *h = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert_ptr_nonnull(h);
    KS_CHECK(ks_vec_get_host(v, h));
    for (ks_int i = 0; i < n; i++) {
        double err = (double)fabsl((long double)h[i] - ref[i]) / (scale[i] > 0 ? scale[i] : 1.0);
        ck_assert_msg(err <= TOL, "fused pass of %s on %s, %s: %s[%ld] = %.17g, expected %.17Lg",
                      fmt, ks_backend_name(ks_vec_backend(v)), label, what, (long)i, h[i],
                      ref[i]);
    }
    free(h);
}

/* ks_matrix_fused_step_from_zero against a long double reference, for the
 * weight w (random, with wkind KS_W_VECTOR) or made as wkind says (which a
 * format may rebuild from the rows): x1 = c0 w b, xo = x1 + c w (b - A x1)
 * + a x1, with x1 kept (a third Chebyshev step reads it) or not. Outputs
 * and scratch NaN before the call. */
static void check_fused_from_zero(ks_backend *be, ks_matrix *M, const ks_csr *A, const char *fmt,
                                  const char *label, const double *b, const double *w, int wkind)
{
    const ks_int n = A->nrows;
    const double c0 = 0.7, a = 0.3, c = -1.1;
    long double *ref = calloc((size_t)n + 1, sizeof(long double));
    long double *ref1 = calloc((size_t)n + 1, sizeof(long double));
    double *sc = calloc((size_t)n + 1, sizeof(double));
    double *sc1 = calloc((size_t)n + 1, sizeof(double));
    ck_assert(ref && ref1 && sc && sc1);
    for (ks_int i = 0; i < n; i++) {
        long double t = b[i];
        double mag = fabs(b[i]);
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            const ks_int j = A->colind[k];
            const long double x1 = (long double)c0 * w[j] * b[j];
            t -= A->val[k] * x1;
            mag += fabs(A->val[k] * (double)x1);
        }
        ref1[i] = (long double)c0 * w[i] * b[i];
        sc1[i] = fabs((double)ref1[i]);
        ref[i] = ref1[i] + (long double)c * w[i] * t + a * ref1[i];
        sc[i] = (1.0 + fabs(a)) * sc1[i] + fabs(c * w[i]) * mag;
    }
    ks_vec *vb = fused_vec(be, n, b), *vw = fused_vec(be, n, w);
    for (int keep = 0; keep <= 1; keep++) {
        ks_vec *vt = fused_vec(be, n, NULL), *vr = fused_vec(be, n, NULL);
        ks_vec *vxo = fused_vec(be, n, NULL);
        KS_CHECK(ks_matrix_fused_step_from_zero(M, vb, c0, a, c, vw, wkind, 0.8, vt, keep, vr,
                                                vxo));
        char what[160];
        snprintf(what, sizeof what, "%s, two steps from zero (wkind %d, keep_x1 %d)", label,
                 wkind, keep);
        fused_expect(vxo, ref, sc, n, "xo", fmt, what);
        if (keep)
            fused_expect(vt, ref1, sc1, n, "x1", fmt, what);
        ck_assert_int_eq(ks_matrix_fused_step_from_zero(M, vb, c0, a, c, vw, wkind, 0.8, vt,
                                                        keep, vr, vb),
                         KS_ERR_ARG);
        ck_assert_int_eq(ks_matrix_fused_step_from_zero(M, vb, c0, a, c, vw, wkind, 0.8, vt,
                                                        keep, vr, vt),
                         KS_ERR_ARG);
        ck_assert_int_eq(ks_matrix_fused_step_from_zero(M, vb, c0, a, c, vw, wkind, 0.8, vr,
                                                        keep, vr, vxo),
                         KS_ERR_ARG);
        ks_vec_destroy(&vt);
        ks_vec_destroy(&vr);
        ks_vec_destroy(&vxo);
    }
    for (ks_int i = 0; i < n; i++) {
        ref[i] = b[i];
        sc[i] = 1.0;
    }
    fused_expect(vb, ref, sc, n, "b (input)", fmt, "two steps from zero");
    ks_vec_destroy(&vb);
    ks_vec_destroy(&vw);
    free(ref);
    free(ref1);
    free(sc);
    free(sc1);
}

/* ks_matrix_fused_step (the format's fused kernel, or the generic path for
 * formats without one) against a long double reference: the residual
 * alone, a Jacobi step (a = 0), a three-term step with x_old in the output
 * vector and one with x_old = 0. Outputs are NaN before the call unless
 * they are read; x and b must come back unchanged. */
static void check_fused(ks_backend *be, ks_matrix *M, const ks_csr *A, const char *fmt,
                        const char *label)
{
    const ks_int n = A->nrows;
    double *x = sc_random_vec(n, 301), *b = sc_random_vec(n, 302), *xp = sc_random_vec(n, 303);
    double *w = sc_random_vec(n, 304);
    long double *t = malloc(sizeof(long double) * ((size_t)n + 1));
    long double *ref = malloc(sizeof(long double) * ((size_t)n + 1));
    double *ts = malloc(sizeof(double) * ((size_t)n + 1)), *sc = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert(t && ref && ts && sc);
    for (ks_int i = 0; i < n; i++) {
        long double s = b[i];
        double mag = fabs(b[i]);
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            s -= (long double)A->val[k] * x[A->colind[k]];
            mag += fabs(A->val[k] * x[A->colind[k]]);
        }
        t[i] = s;
        ts[i] = mag;
    }
    ks_vec *vx = fused_vec(be, n, x), *vb = fused_vec(be, n, b), *vw = fused_vec(be, n, w);
    ks_vec *vr = fused_vec(be, n, NULL);
    KS_CHECK(ks_matrix_fused_step(M, vb, vx, vr, 0.0, 0.0, NULL, 0, 0.0, NULL, NULL));
    fused_expect(vr, t, ts, n, "r", fmt, label);
    /* w from the diagonal (KS_W_DIAG) and the l1 row sums (KS_W_L1), which a
     * format may rebuild from the rows instead of reading w; only for
     * matrices with a nonzero diagonal. */
    double *wd = malloc(sizeof(double) * ((size_t)n + 1)), *wl = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert(wd && wl);
    int diag_ok = n > 0;
    for (ks_int i = 0; i < n; i++) {
        double dg = 0.0, off = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i)
                dg = A->val[k];
            else
                off += fabs(A->val[k]);
        diag_ok = diag_ok && dg != 0.0 && dg + copysign(off, dg) != 0.0;
        wd[i] = 0.8 / dg;
        wl[i] = 0.8 / (dg + copysign(off, dg));
    }
    for (int v = 0; v < (diag_ok ? 5 : 3); v++) {
        /* 0: Jacobi, 1: three-term with x_old in xo, 2: x_old = 0,
         * 3: Jacobi with w = 0.8 / diag, 4: with the l1 weight */
        const double a = v == 1 || v == 2 ? 0.6 : 0.0, c = v >= 3 ? 1.0 : -1.25;
        const int wkind = v == 3 ? KS_W_DIAG : v == 4 ? KS_W_L1 : KS_W_VECTOR;
        const double *wv = v == 3 ? wd : v == 4 ? wl : w;
        if (v >= 3) {
            ks_vec_destroy(&vw);
            vw = fused_vec(be, n, wv);
        }
        ks_vec *vxo = fused_vec(be, n, v == 1 ? xp : NULL);
        ks_vec_destroy(&vr);
        vr = fused_vec(be, n, NULL); /* scratch of the generic path */
        for (ks_int i = 0; i < n; i++) {
            long double old = v == 1 ? xp[i] : 0.0;
            ref[i] = x[i] + (long double)c * wv[i] * t[i] + (long double)a * (x[i] - old);
            sc[i] = fabs(x[i]) + fabs(c * wv[i]) * ts[i] + fabs(a) * (fabs(x[i]) + fabs((double)old));
        }
        KS_CHECK(ks_matrix_fused_step(M, vb, vx, vr, a, c, vw, wkind, 0.8, v == 1 ? vxo : NULL,
                                      vxo));
        fused_expect(vxo, ref, sc, n, "xo", fmt, label);
        ks_vec_destroy(&vxo);
    }
    check_fused_from_zero(be, M, A, fmt, label, b, w, KS_W_VECTOR);
    if (diag_ok) {
        check_fused_from_zero(be, M, A, fmt, label, b, wd, KS_W_DIAG);
        check_fused_from_zero(be, M, A, fmt, label, b, wl, KS_W_L1);
    }
    for (ks_int i = 0; i < n; i++) {
        ref[i] = x[i];
        sc[i] = 1.0;
    }
    fused_expect(vx, ref, sc, n, "x (input)", fmt, label);
    for (ks_int i = 0; i < n; i++)
        ref[i] = b[i];
    fused_expect(vb, ref, sc, n, "b (input)", fmt, label);
    /* aliasing outputs and inputs is refused */
    ck_assert_int_eq(ks_matrix_fused_step(M, vb, vx, vx, 0.0, 0.0, NULL, 0, 0.0, NULL, NULL),
                     KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_fused_step(M, vb, vx, vr, 0.5, 1.0, vw, 0, 0.0, NULL, vx),
                     KS_ERR_ARG);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vb);
    ks_vec_destroy(&vw);
    ks_vec_destroy(&vr);
    free(x);
    free(b);
    free(xp);
    free(w);
    free(t);
    free(ref);
    free(ts);
    free(sc);
    free(wd);
    free(wl);
}

/* Format `fmt` through ks_matrix_* on backend be against the reference,
 * with y NaN-poisoned before every beta == 0 apply. */
static void check_on_backend(ks_backend *be, const char *fmt, const ks_spmv_params *prm,
                             const ks_csr *A, const char *label)
{
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, fmt, prm, &M);
    if (refused(fmt, e, label)) {
        ck_assert_ptr_null(M);
        return;
    }
    ck_assert_msg(e == KS_OK, "%s on %s, %s: %s: %s", fmt, ks_backend_name(be), label,
                  ks_error_name(e), ks_last_error());
    ck_assert_int_eq(ks_matrix_rows(M), A->nrows);
    ck_assert_int_eq(ks_matrix_cols(M), A->ncols);
    ck_assert_int_eq(ks_matrix_nnz(M), A->nnz);
    ck_assert_str_eq(ks_matrix_format(M), fmt);
    ck_assert_ptr_eq(ks_matrix_backend(M), be);
    ck_assert(ks_matrix_bytes_per_apply(M) > 0.0);
    ck_assert(ks_matrix_setup_seconds(M) >= 0.0);

    ks_vec *vx = NULL, *vy = NULL;
    KS_CHECK(ks_vec_create(be, A->ncols, &vx));
    KS_CHECK(ks_vec_create(be, A->nrows, &vy));
    double *x = sc_random_vec(A->ncols, 201);
    double *y0 = sc_random_vec(A->nrows, 202);
    double *y = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    double *poison = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert(y && poison);
    for (ks_int i = 0; i < A->nrows; i++)
        poison[i] = NAN;
    KS_CHECK(ks_vec_set_host(vx, x));
    for (int k = 0; k < NCOEFS; k++) {
        KS_CHECK(ks_vec_set_host(vy, coefs[k].beta == 0.0 ? poison : y0));
        KS_CHECK(ks_matrix_apply(M, coefs[k].alpha, vx, coefs[k].beta, vy));
        for (ks_int i = 0; i < A->nrows; i++)
            y[i] = NAN;
        KS_CHECK(ks_vec_get_host(vy, y));
        double err = sc_spmv_error(A, coefs[k].alpha, x, coefs[k].beta, y0, y);
        ck_assert_msg(err <= TOL, "%s on %s, %s, alpha %g beta %g: error %.3e", fmt,
                      ks_backend_name(be), label, coefs[k].alpha, coefs[k].beta, err);
    }
    /* Applying twice gives the same result (no state left from the last). */
    double *y2 = malloc(sizeof(double) * ((size_t)A->nrows + 1));
    ck_assert_ptr_nonnull(y2);
    KS_CHECK(ks_vec_set_host(vy, poison));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y2));
    ck_assert_msg(ks_test_max_relerr(y2, y, A->nrows) <= TOL, "%s: repeated apply differs", fmt);
    free(y2);
    if (A->nrows == A->ncols) {
        check_fused(be, M, A, fmt, label);
        if (M->ops->fused_step) {
            /* the generic path (copy, SpMV, update) on the same state, as
             * a format without a fused kernel takes it */
            const ks_spmv_format_ops *own = M->ops;
            ks_spmv_format_ops plain = *own;
            plain.fused_step = NULL;
            M->ops = &plain;
            char what[200];
            snprintf(what, sizeof what, "%s, without the fused kernel", label);
            check_fused(be, M, A, fmt, what);
            M->ops = own;
        }
    }
    free(x);
    free(y0);
    free(y);
    free(poison);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
}

static ks_backend *make_backend(const char *name)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create(name, &be));
    return be;
}

/* Formats usable on a backend, from the public list. */
static void check_all_formats_on(const char *bename, const ks_csr *A, const char *label)
{
    ks_backend *be = make_backend(bename);
    const char *const *names = ks_spmv_format_names(bename);
    ck_assert_ptr_nonnull(names[0]);
    for (int i = 0; names[i]; i++)
        check_on_backend(be, names[i], NULL, A, label);
    ks_backend_destroy(&be);
}

static int count_in(const char *const *list, const char *name)
{
    int n = 0;
    for (int i = 0; list[i]; i++)
        n += strcmp(list[i], name) == 0;
    return n;
}

/* --------------------------------------------------------- registry */
START_TEST(test_registry)
{
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    int nall = 0;
    for (int i = 0; all[i]; i++, nall++) {
        const ks_spmv_format_ops *f = all[i];
        ck_assert_msg(f->name && f->description && f->layout_build && f->layout_apply &&
                          f->layout_bytes && f->layout_free && f->setup && f->apply &&
                          f->destroy && f->layout_to_csr,
                      "format %d has an empty slot", i);
        ck_assert_ptr_eq(ks_spmv_format_find(f->name, f->backend), f);
        const char *be = f->backend == KS_BACKEND_CPU ? "cpu" : "cuda";
        const char *other = f->backend == KS_BACKEND_CPU ? "cuda" : "cpu";
        ck_assert_msg(count_in(ks_spmv_format_names(be), f->name) == 1,
                      "%s missing from ks_spmv_format_names(\"%s\")", f->name, be);
        ck_assert_int_eq(count_in(ks_spmv_format_names(other), f->name), 0);
        ck_assert_ptr_null(ks_spmv_format_find(f->name, f->backend == KS_BACKEND_CPU
                                                            ? KS_BACKEND_CUDA
                                                            : KS_BACKEND_CPU));
    }
    /* The name lists hold nothing beyond the table. */
    int nnames = 0;
    const char *bes[2] = {"cpu", "cuda"};
    for (int b = 0; b < 2; b++) {
        const char *const *names = ks_spmv_format_names(bes[b]);
        for (int i = 0; names[i]; i++, nnames++)
            ck_assert_ptr_nonnull(
                ks_spmv_format_find(names[i], b == 0 ? KS_BACKEND_CPU : KS_BACKEND_CUDA));
    }
    ck_assert_int_eq(nnames, nall);
    ck_assert_int_eq(count_in(ks_spmv_format_names("cpu"), "csr"), 1);
#ifdef KS_HAVE_CUDA
    ck_assert_int_eq(count_in(ks_spmv_format_names("cuda"), "csr_vector"), 1);
    ck_assert_int_eq(count_in(ks_spmv_format_names("cuda"), "cusparse"), 1);
#endif
    ck_assert_ptr_null(ks_spmv_format_names("fpga")[0]);
    ck_assert_ptr_null(ks_spmv_format_names(NULL)[0]);
    ck_assert_ptr_null(ks_spmv_format_find("nonsense", KS_BACKEND_CPU));
    ck_assert_ptr_null(ks_spmv_format_find(NULL, KS_BACKEND_CPU));
}
END_TEST

START_TEST(test_auto)
{
    ks_csr A;
    make_case(CASE_P2D, &A);
    ck_assert_str_eq(ks_spmv_format_auto(&A, KS_BACKEND_CPU), "csr");
#ifdef KS_HAVE_CUDA
    ck_assert_ptr_nonnull(ks_spmv_format_find(ks_spmv_format_auto(&A, KS_BACKEND_CUDA),
                                              KS_BACKEND_CUDA));
#endif
    /* "auto", NULL and "" resolve on the cpu backend. */
    ks_backend *be = make_backend("cpu");
    const char *fmts[3] = {"auto", NULL, ""};
    for (int i = 0; i < 3; i++) {
        ks_matrix *M = NULL;
        KS_CHECK(ks_matrix_create(be, &A, fmts[i], NULL, &M));
        ck_assert_str_eq(ks_matrix_format(M), "csr");
        ks_matrix_destroy(&M);
    }
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

/* ----------------------------------------------------- host layouts */
START_TEST(test_layout_cases)
{
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        for (int i = 0; all[i]; i++)
            check_layout(all[i], NULL, &A, case_names[c]);
        ks_csr_free(&A);
    }
}
END_TEST

/* The CSR-based formats count 20 nnz + 12 nrows + 4 bytes (see csr_layout.h). */
START_TEST(test_layout_bytes)
{
    ks_csr A;
    make_case(CASE_RANDOM, &A);
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    int checked = 0;
    for (int i = 0; all[i]; i++) {
        const char *n = all[i]->name;
        if (strcmp(n, "csr") && strcmp(n, "csr_vector") && strcmp(n, "cusparse"))
            continue;
        void *L = NULL;
        KS_CHECK(all[i]->layout_build(&A, NULL, &L));
        double want = 20.0 * A.nnz + 12.0 * A.nrows + 4.0;
        ck_assert_msg(fabs(all[i]->layout_bytes(L) - want) < 0.5, "%s bytes %g, want %g", n,
                      all[i]->layout_bytes(L), want);
        all[i]->layout_free(L);
        checked++;
    }
    ck_assert_int_ge(checked, 1);
    ks_csr_free(&A);
}
END_TEST

#ifdef KS_HAVE_CUDA
START_TEST(test_layout_threads_per_row)
{
    const ks_spmv_format_ops *f = ks_spmv_format_find("csr_vector", KS_BACKEND_CUDA);
    ck_assert_ptr_nonnull(f);
    ks_csr H, R;
    make_case(CASE_HUGE_ROW, &H);
    make_case(CASE_RANDOM, &R);
    for (int t = 1; t <= 32; t *= 2) {
        ks_spmv_params p;
        memset(&p, 0, sizeof p);
        p.threads_per_row = t;
        check_layout(f, &p, &H, "one huge row");
        check_layout(f, &p, &R, "random with empty rows");
    }
    const int bad[] = {-1, 3, 5, 12, 33, 64};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ks_spmv_params p;
        memset(&p, 0, sizeof p);
        p.threads_per_row = bad[k];
        void *L = (void *)&p;
        ks_error e = f->layout_build(&R, &p, &L);
        ck_assert_msg(e == KS_ERR_ARG, "threads_per_row %d gave %s", bad[k], ks_error_name(e));
        ck_assert_ptr_null(L);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "threads_per_row"));
    }
    ks_csr_free(&H);
    ks_csr_free(&R);
}
END_TEST
#endif

/* ------------------------------------------------------ cpu backend */
START_TEST(test_cpu_cases)
{
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        check_all_formats_on("cpu", &A, case_names[c]);
        ks_csr_free(&A);
    }
}
END_TEST

/* Large enough for the threaded path, with a thread count at apply that
 * differs from the one at setup (the partition must still cover all rows). */
START_TEST(test_cpu_threads)
{
    ks_csr A;
    sc_make_gen(&A, KS_GEN_POISSON3D_7, 24);
    ks_backend *be = make_backend("cpu");
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    omp_set_num_threads(3);
#endif
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    const int teams[] = {1, 2, 5};
    for (int t = 0; t < 3; t++) {
#ifdef _OPENMP
        omp_set_num_threads(teams[t]);
#else
        (void)teams;
#endif
        ks_vec *vx, *vy;
        KS_CHECK(ks_vec_create(be, A.ncols, &vx));
        KS_CHECK(ks_vec_create(be, A.nrows, &vy));
        double *x = sc_random_vec(A.ncols, 5), *y0 = sc_random_vec(A.nrows, 6);
        double *y = malloc(sizeof(double) * (size_t)A.nrows);
        KS_CHECK(ks_vec_set_host(vx, x));
        KS_CHECK(ks_vec_set_host(vy, y0));
        KS_CHECK(ks_matrix_apply(M, 1.5, vx, -0.5, vy));
        KS_CHECK(ks_vec_get_host(vy, y));
        double err = sc_spmv_error(&A, 1.5, x, -0.5, y0, y);
        ck_assert_msg(err <= TOL, "team of %d: error %.3e", teams[t], err);
        free(x);
        free(y0);
        free(y);
        ks_vec_destroy(&vx);
        ks_vec_destroy(&vy);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

/* The matrix keeps its own copy: changing or freeing the caller's CSR
 * after create does not change the product, and host_csr equals it. */
START_TEST(test_cpu_copy)
{
    ks_csr A, B;
    make_case(CASE_RANDOM, &A);
    KS_CHECK(ks_csr_copy(&A, &B));
    ks_backend *be = make_backend("cpu");
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    const ks_csr *H = ks_matrix_host_csr(M);
    ck_assert_ptr_ne(H->val, A.val);
    ck_assert_int_eq(H->nnz, A.nnz);
    ck_assert(memcmp(H->rowptr, A.rowptr, sizeof(ks_int) * ((size_t)A.nrows + 1)) == 0);
    ck_assert(memcmp(H->colind, A.colind, sizeof(ks_int) * (size_t)A.nnz) == 0);
    ck_assert(memcmp(H->val, A.val, sizeof(double) * (size_t)A.nnz) == 0);
    for (ks_int j = 0; j < A.nnz; j++)
        A.val[j] = 1e300;
    ks_csr_free(&A);
    ck_assert_double_eq_tol(ks_matrix_bytes_per_apply(M),
                            20.0 * B.nnz + 12.0 * B.nrows + 4.0, 0.5);
    ks_vec *vx, *vy;
    KS_CHECK(ks_vec_create(be, B.ncols, &vx));
    KS_CHECK(ks_vec_create(be, B.nrows, &vy));
    double *x = sc_random_vec(B.ncols, 9), *y = malloc(sizeof(double) * (size_t)B.nrows);
    KS_CHECK(ks_vec_set_host(vx, x));
    KS_CHECK(ks_vec_fill(vy, NAN));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y));
    ck_assert(sc_spmv_error(&B, 1.0, x, 0.0, NULL, y) <= TOL);
    free(x);
    free(y);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    ks_csr_free(&B);
}
END_TEST

/* ks_matrix_create_device: CSR arrays in the backend's memory give the
 * matrix ks_matrix_create gives from the host (same format, same products);
 * what ks_csr_validate refuses is refused there too, with the row named. */
static void create_device_on(const char *backend)
{
    ks_csr A;
    make_case(CASE_RANDOM, &A);
    ks_backend *be = make_backend(backend);
    const size_t rb = sizeof(ks_int) * ((size_t)A.nrows + 1), cb = sizeof(ks_int) * (size_t)A.nnz,
                 vb = sizeof(double) * (size_t)A.nnz;
    void *drp = NULL, *dci = NULL, *dva = NULL;
    KS_CHECK(ks_be_upload_new(be, A.rowptr, rb, &drp, "test rowptr"));
    KS_CHECK(ks_be_upload_new(be, A.colind, cb, &dci, "test colind"));
    KS_CHECK(ks_be_upload_new(be, A.val, vb, &dva, "test val"));
    ks_matrix *M = NULL, *R = NULL;
    char want_msg[160];
    KS_CHECK(ks_matrix_create_device(be, A.nrows, A.ncols, A.nnz, drp, dci, dva, "auto", NULL,
                                     &M));
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &R));
    ck_assert_str_eq(ks_matrix_format(M), ks_matrix_format(R));
    ck_assert_int_eq(ks_matrix_rows(M), A.nrows);
    ck_assert_int_eq(ks_matrix_cols(M), A.ncols);
    ck_assert_int_eq(ks_matrix_nnz(M), A.nnz);
    ks_vec *vx, *vy, *vr;
    KS_CHECK(ks_vec_create(be, A.ncols, &vx));
    KS_CHECK(ks_vec_create(be, A.nrows, &vy));
    KS_CHECK(ks_vec_create(be, A.nrows, &vr));
    double *x = sc_random_vec(A.ncols, 5), *y = malloc(sizeof(double) * (size_t)A.nrows),
           *r = malloc(sizeof(double) * (size_t)A.nrows);
    KS_CHECK(ks_vec_set_host(vx, x));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_matrix_apply(R, 1.0, vx, 0.0, vr));
    KS_CHECK(ks_vec_get_host(vy, y));
    KS_CHECK(ks_vec_get_host(vr, r));
    ck_assert(memcmp(y, r, sizeof(double) * (size_t)A.nrows) == 0);
    ck_assert(sc_spmv_error(&A, 1.0, x, 0.0, NULL, y) <= TOL);
    ks_matrix_destroy(&M);

    /* new values from the backend's memory: 2 A, then y doubles; a NaN
     * there is refused with its row and column, and R keeps 2 A */
    double *v2 = malloc(vb);
    for (ks_int k = 0; k < A.nnz; k++)
        v2[k] = 2.0 * A.val[k];
    void *dv2 = NULL;
    KS_CHECK(ks_be_upload_new(be, v2, vb, &dv2, "test new values"));
    KS_CHECK(ks_matrix_set_values_device(R, dv2));
    KS_CHECK(ks_matrix_apply(R, 1.0, vx, 0.0, vr));
    KS_CHECK(ks_vec_get_host(vr, r));
    for (ks_int i = 0; i < A.nrows; i++)
        ck_assert(r[i] == 2.0 * y[i]);
    ks_int last = A.nnz - 1, lrow = A.nrows - 1;
    while (A.rowptr[lrow] > last)
        lrow--;
    v2[last] = NAN;
    KS_CHECK(be->ops->upload(be, dv2, v2, vb));
    ck_assert_int_eq(ks_matrix_set_values_device(R, dv2), KS_ERR_NUMERIC);
    snprintf(want_msg, sizeof want_msg, "value %ld (row %ld, column %ld) is nan", (long)last,
             (long)lrow, (long)A.colind[last]);
    ck_assert_msg(strstr(ks_last_error(), want_msg) &&
                      strstr(ks_last_error(), "ks_matrix_set_values_device"),
                  "message: %s", ks_last_error());
    KS_CHECK(ks_matrix_apply(R, 1.0, vx, 0.0, vr));
    KS_CHECK(ks_vec_get_host(vr, r));
    for (ks_int i = 0; i < A.nrows; i++)
        ck_assert(r[i] == 2.0 * y[i]);
    ck_assert_int_eq(ks_matrix_set_values_device(R, NULL), KS_ERR_ARG);
    KS_CHECK(ks_matrix_set_values(R, A.val));
    be->ops->free(be, dv2);
    free(v2);

    /* the arrays were copied: the caller may change them */
    double nan = NAN;
    KS_CHECK(be->ops->upload(be, dva, &nan, sizeof nan));
    KS_CHECK(ks_matrix_apply(R, 1.0, vx, 0.0, vy));
    /* refused: a NaN value, then two columns of a row swapped (unsorted) */
    ck_assert_int_eq(ks_matrix_create_device(be, A.nrows, A.ncols, A.nnz, drp, dci, dva, "auto",
                                             NULL, &M), KS_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "ks_matrix_create_device"));
    ck_assert_ptr_null(M);
    KS_CHECK(be->ops->upload(be, dva, A.val, vb));
    ks_int row = 0;
    while (A.rowptr[row + 1] - A.rowptr[row] < 2)
        row++;
    ks_int *ci = malloc(cb);
    memcpy(ci, A.colind, cb);
    ks_int t = ci[A.rowptr[row]];
    ci[A.rowptr[row]] = ci[A.rowptr[row] + 1];
    ci[A.rowptr[row] + 1] = t;
    KS_CHECK(be->ops->upload(be, dci, ci, cb));
    ck_assert_int_ne(ks_matrix_create_device(be, A.nrows, A.ncols, A.nnz, drp, dci, dva, "auto",
                                             NULL, &M), KS_OK);
    char want[64];
    snprintf(want, sizeof want, "row %ld", (long)row);
    ck_assert_msg(strstr(ks_last_error(), want), "message: %s", ks_last_error());
    ck_assert_int_eq(ks_matrix_create_device(be, A.nrows, A.ncols, A.nnz, NULL, dci, dva, "auto",
                                             NULL, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_create_device(be, -1, A.ncols, A.nnz, drp, dci, dva, "auto", NULL,
                                             &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_create_device(NULL, A.nrows, A.ncols, A.nnz, drp, dci, dva, "auto",
                                             NULL, &M), KS_ERR_ARG);
    free(ci);
    free(x);
    free(y);
    free(r);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_vec_destroy(&vr);
    ks_matrix_destroy(&R);
    be->ops->free(be, drp);
    be->ops->free(be, dci);
    be->ops->free(be, dva);
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}

START_TEST(test_cpu_create_device)
{
    create_device_on("cpu");
}
END_TEST

START_TEST(test_cuda_create_device)
{
    create_device_on("cuda");
}
END_TEST

/* ----------------------------------------------------------- errors */
START_TEST(test_errors_apply)
{
    ks_csr A;
    make_case(CASE_WIDE, &A); /* 150 x 900 */
    ks_backend *be = make_backend("cpu"), *be2 = make_backend("cpu");
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    ks_vec *x, *y, *xs, *ys, *x2, *sq1, *sq2;
    KS_CHECK(ks_vec_create(be, 900, &x));
    KS_CHECK(ks_vec_create(be, 150, &y));
    KS_CHECK(ks_vec_create(be, 150, &xs)); /* wrong: x of nrows */
    KS_CHECK(ks_vec_create(be, 900, &ys)); /* wrong: y of ncols */
    KS_CHECK(ks_vec_create(be2, 900, &x2));
    KS_CHECK(ks_vec_fill(x, 1.0));
    KS_CHECK(ks_matrix_apply(M, 1.0, x, 0.0, y));
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, xs, 0.0, y), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "x has 150"));
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, x, 0.0, ys), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "y has 900"));
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, x2, 0.0, y), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_apply(NULL, 1.0, x, 0.0, y), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, NULL, 0.0, y), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, x, 0.0, NULL), KS_ERR_ARG);
    ks_matrix_destroy(&M);

    /* x == y on a square matrix */
    ks_csr S;
    make_case(CASE_P2D, &S);
    KS_CHECK(ks_matrix_create(be, &S, "csr", NULL, &M));
    KS_CHECK(ks_vec_create(be, S.nrows, &sq1));
    KS_CHECK(ks_vec_create(be, S.nrows, &sq2));
    KS_CHECK(ks_vec_fill(sq1, 1.0));
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, sq1, 0.0, sq1), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "distinct"));
    KS_CHECK(ks_matrix_apply(M, 1.0, sq1, 0.0, sq2));
    ks_matrix_destroy(&M);
    ks_matrix_destroy(NULL);

    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_vec_destroy(&xs);
    ks_vec_destroy(&ys);
    ks_vec_destroy(&x2);
    ks_vec_destroy(&sq1);
    ks_vec_destroy(&sq2);
    ks_backend_destroy(&be);
    ks_backend_destroy(&be2);
    ks_csr_free(&A);
    ks_csr_free(&S);
}
END_TEST

START_TEST(test_errors_create)
{
    ks_csr A;
    make_case(CASE_P2D, &A);
    ks_backend *be = make_backend("cpu");
    ks_matrix *M = (ks_matrix *)&A;

    ck_assert_int_eq(ks_matrix_create(be, &A, "nonsense", NULL, &M), KS_ERR_ARG);
    ck_assert_ptr_null(M);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "nonsense"));
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "csr")); /* lists valid formats */

    /* cuda formats on the cpu backend: compiled in or not, "unsupported". */
    const char *cuda_fmts[2] = {"csr_vector", "cusparse"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(ks_matrix_create(be, &A, cuda_fmts[i], NULL, &M), KS_ERR_UNSUPPORTED);
        ck_assert_ptr_null(M);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "cuda"));
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "csr"));
    }
    ck_assert_int_eq(ks_matrix_create(NULL, &A, "csr", NULL, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_create(be, NULL, "csr", NULL, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_create(be, &A, "csr", NULL, NULL), KS_ERR_ARG);

    /* Invalid CSR: unsorted row, then a column out of range, then a
     * non-monotone rowptr. Each is refused and leaves *M NULL. */
    ks_int r = 5, j0 = A.rowptr[r];
    ck_assert_int_ge(A.rowptr[r + 1] - j0, 2);
    ks_int t = A.colind[j0];
    A.colind[j0] = A.colind[j0 + 1];
    A.colind[j0 + 1] = t;
    M = (ks_matrix *)&A;
    ck_assert_int_ne(ks_matrix_create(be, &A, "csr", NULL, &M), KS_OK);
    ck_assert_ptr_null(M);
    A.colind[j0 + 1] = A.colind[j0];
    A.colind[j0] = t;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M)); /* repaired */
    ks_matrix_destroy(&M);

    ks_int last = A.rowptr[A.nrows] - 1, saved = A.colind[last];
    A.colind[last] = A.ncols;
    ck_assert_int_ne(ks_matrix_create(be, &A, "csr", NULL, &M), KS_OK);
    ck_assert_ptr_null(M);
    A.colind[last] = -1;
    ck_assert_int_ne(ks_matrix_create(be, &A, "csr", NULL, &M), KS_OK);
    A.colind[last] = saved;

    ks_int rp = A.rowptr[3];
    A.rowptr[3] = A.rowptr[4] + 1;
    ck_assert_int_ne(ks_matrix_create(be, &A, "csr", NULL, &M), KS_OK);
    ck_assert_ptr_null(M);
    A.rowptr[3] = rp;

    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------- float32 values */
/* ks_matrix_release_values on M (float32 values, y = M x): released when
 * the format keeps its own copy (`expect`), the float64 bytes gone, the
 * apply unchanged, the values neither readable nor writable until
 * ks_matrix_acquire_values; then new values work. */
static void check_release(ks_matrix *M, const ks_csr *A, const ks_vec *vx, ks_vec *vy,
                          const double *y, int expect)
{
    const double before = ks_matrix_memory_bytes(M);
    int rel = -1;
    KS_CHECK(ks_matrix_release_values(M, &rel));
    ck_assert_int_eq(rel, expect);
    if (!rel) {
        ck_assert(ks_matrix_values(M) != NULL);
        return;
    }
    ck_assert(ks_matrix_memory_bytes(M) == before - 8.0 * (double)A->nnz);
    ck_assert_ptr_null(ks_matrix_values(M));
    ck_assert_int_eq(ks_matrix_set_values(M, A->val), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "released"));
    ck_assert_int_eq(ks_matrix_values_changed(M), KS_ERR_ARG);
    ck_assert_ptr_null(ks_matrix_host_csr(M));
    KS_CHECK(ks_matrix_release_values(M, &rel)); /* twice: nothing more */
    ck_assert_int_eq(rel, 0);
    const ks_int n = A->nrows;
    double *y2 = malloc(sizeof(double) * (size_t)n), *v2 = malloc(sizeof(double) * (size_t)A->nnz);
    ck_assert(y2 && v2);
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy)); /* the state is intact */
    KS_CHECK(ks_vec_get_host(vy, y2));
    ck_assert(memcmp(y, y2, sizeof(double) * (size_t)n) == 0);
    double *val = NULL;
    KS_CHECK(ks_matrix_acquire_values(M, &val));
    ck_assert_ptr_nonnull(val);
    ck_assert(ks_matrix_values(M) == val);
    ck_assert(ks_matrix_memory_bytes(M) == before);
    for (ks_int k = 0; k < A->nnz; k++)
        v2[k] = 2.0 * A->val[k];
    KS_CHECK(ks_matrix_set_values(M, v2));
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y2));
    for (ks_int i = 0; i < n; i++) /* doubling commutes with float rounding */
        ck_assert(y2[i] == 2.0 * y[i]);
    free(y2);
    free(v2);
}

/* fmt with float_values on backend bename: apply and fused pass agree with
 * the float64 reference of the rounded values (to float64 rounding), and
 * differ from the unrounded ones (so the float copy is what runs). */
static void check_float_values(const char *bename, const char *fmt, const char *want,
                               int stencil)
{
    ks_backend *be = make_backend(bename);
    ks_csr A;
    if (stencil) { /* banded, for dia; values made inexact in float32 */
        sc_make_gen(&A, KS_GEN_POISSON3D_7, 16);
        for (ks_int k = 0; k < A.nnz; k++)
            A.val[k] *= 1.0 + 0.1 * sin((double)k);
    } else {
        sc_make_random(&A, 700, 700, 24, 9);
    }
    for (ks_int i = 0; i < A.nrows; i++) /* a diagonal, for the fused pass */
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            if (A.colind[k] == i)
                A.val[k] += 30.0;
    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    prm.float_values = 1;
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, fmt, &prm, &M));
    ck_assert_str_eq(ks_matrix_format(M), want);
    ks_csr Af;
    KS_CHECK(ks_csr_copy(&A, &Af));
    for (ks_int k = 0; k < Af.nnz; k++)
        Af.val[k] = (float)Af.val[k];
    double *x = sc_random_vec(A.ncols, 11), *y = malloc(sizeof(double) * (size_t)A.nrows);
    double *ref = malloc(sizeof(double) * (size_t)A.nrows);
    ck_assert(y && ref);
    ks_vec *vx = fused_vec(be, A.ncols, x), *vy = fused_vec(be, A.nrows, NULL);
    KS_CHECK(ks_matrix_apply(M, 1.0, vx, 0.0, vy));
    KS_CHECK(ks_vec_get_host(vy, y));
    ks_csr_spmv_ref(&Af, 1.0, x, 0.0, ref);
    ck_assert_msg(ks_test_max_relerr(y, ref, A.nrows) < 1e-13, "%s float values on %s", fmt,
                  bename);
    ks_csr_spmv_ref(&A, 1.0, x, 0.0, ref);
    double d = ks_test_max_relerr(y, ref, A.nrows);
    ck_assert_msg(d > 1e-12 && d < 1e-5, "%s float values on %s: %g from float64", fmt, bename,
                  d);
    /* the layout's own numbers: 4 bytes a value */
    ck_assert(ks_matrix_bytes_per_apply(M) < ks_csr_bytes_per_apply(A.nrows, A.nnz));
    check_fused(be, M, &Af, fmt, "float32 values");
    check_release(M, &A, vx, vy, y, strcmp(want, "dia") != 0);
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    ks_matrix_destroy(&M);
    /* a finite value beyond float's range is refused, not turned into inf */
    A.val[3] = 1e300;
    ck_assert_int_eq(ks_matrix_create(be, &A, fmt, &prm, &M), KS_ERR_UNSUPPORTED);
    ck_assert_ptr_null(M);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "float range"));
    free(x);
    free(y);
    free(ref);
    ks_csr_free(&A);
    ks_csr_free(&Af);
    ks_backend_destroy(&be);
}

START_TEST(test_cpu_float_values)
{
    check_float_values("cpu", "csr", "csr", 0);
    check_float_values("cpu", "auto", "csr", 0);
    /* The host layouts of the cuda formats that keep float32 values: the
     * reference apply and to_csr see the rounded values. */
    static const char *const fl[] = {"csr_vector", "dia"};
    for (int f = 0; f < 2; f++) {
        const ks_spmv_format_ops *ops = ks_spmv_format_find(fl[f], KS_BACKEND_CUDA);
        if (!ops)
            continue; /* CUDA not compiled in */
        ck_assert_int_eq(ops->float_values, 1);
        ks_csr A, B;
        sc_make_gen(&A, KS_GEN_POISSON3D_7, 8);
        for (ks_int k = 0; k < A.nnz; k++)
            A.val[k] *= 1.0 + 0.1 * sin((double)k);
        ks_spmv_params prm;
        memset(&prm, 0, sizeof prm);
        prm.float_values = 1;
        void *lay = NULL;
        KS_CHECK(ops->layout_build(&A, &prm, &lay));
        KS_CHECK(ops->layout_to_csr(lay, &B));
        ck_assert_int_eq(B.nnz, A.nnz);
        for (ks_int k = 0; k < A.nnz; k++)
            ck_assert(B.val[k] == (double)(float)A.val[k]);
        double *x = sc_random_vec(A.ncols, 5), *y = malloc(sizeof(double) * (size_t)A.nrows);
        double *ref = malloc(sizeof(double) * (size_t)A.nrows);
        ck_assert(y && ref);
        ops->layout_apply(lay, 1.0, x, 0.0, y);
        ks_csr_spmv_ref(&B, 1.0, x, 0.0, ref);
        ck_assert_msg(ks_test_max_relerr(y, ref, A.nrows) < 1e-14, "%s float layout", fl[f]);
        ops->layout_free(lay);
        free(x);
        free(y);
        free(ref);
        ks_csr_free(&A);
        ks_csr_free(&B);
    }
}
END_TEST

START_TEST(test_cuda_float_values)
{
    check_float_values("cuda", "csr_vector", "csr_vector", 0);
    check_float_values("cuda", "auto", "csr_vector", 0);
    check_float_values("cuda", "dia", "dia", 1);
    ks_backend *be = make_backend("cuda");
    ks_csr A;
    sc_make_gen(&A, KS_GEN_POISSON3D_7, 48); /* large enough for auto to pick dia */
    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    prm.float_values = 1;
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "auto", &prm, &M));
    /* auto's dia keeps float32 values too: 4 bytes a stored value */
    ck_assert_str_eq(ks_matrix_format(M), "dia");
    ks_matrix *Md = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "dia", NULL, &Md));
    ck_assert(ks_matrix_bytes_per_apply(M) < 0.8 * ks_matrix_bytes_per_apply(Md));
    ks_matrix_destroy(&Md);
    ks_matrix_destroy(&M);
    M = NULL;
    ck_assert_int_eq(ks_matrix_create(be, &A, "ell", &prm, &M), KS_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "float64 values only"));
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}
END_TEST

/* ---------------------------------------------------- cuda backend */
START_TEST(test_cuda_cases)
{
    for (int c = 0; c < NCASES; c++) {
        ks_csr A;
        make_case(c, &A);
        check_all_formats_on("cuda", &A, case_names[c]);
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(test_cuda_threads_per_row)
{
    ks_backend *be = make_backend("cuda");
    const int cases[] = {CASE_HUGE_ROW, CASE_RANDOM, CASE_ARROW, CASE_P3D};
    for (int c = 0; c < 4; c++) {
        ks_csr A;
        make_case(cases[c], &A);
        for (int t = 1; t <= 32; t *= 2) {
            ks_spmv_params p;
            memset(&p, 0, sizeof p);
            p.threads_per_row = t;
            check_on_backend(be, "csr_vector", &p, &A, case_names[cases[c]]);
        }
        ks_spmv_params p;
        memset(&p, 0, sizeof p);
        p.threads_per_row = 6;
        ks_matrix *M = NULL;
        ck_assert_int_eq(ks_matrix_create(be, &A, "csr_vector", &p, &M), KS_ERR_ARG);
        ck_assert_ptr_null(M);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "threads_per_row"));
        ks_csr_free(&A);
    }
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(test_cuda_errors)
{
    ks_csr A;
    make_case(CASE_P2D, &A);
    ks_backend *gpu = make_backend("cuda"), *cpu = make_backend("cpu");
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(gpu, &A, "auto", NULL, &M));
    ks_vec *xc, *yg;
    KS_CHECK(ks_vec_create(cpu, A.ncols, &xc));
    KS_CHECK(ks_vec_create(gpu, A.nrows, &yg));
    ck_assert_int_eq(ks_matrix_apply(M, 1.0, xc, 0.0, yg), KS_ERR_ARG);
    ks_matrix_destroy(&M);
    ks_matrix *Mc = NULL;
    ck_assert_int_eq(ks_matrix_create(gpu, &A, "csr", NULL, &Mc), KS_ERR_UNSUPPORTED);
    ck_assert_ptr_null(Mc);
    ks_vec_destroy(&xc);
    ks_vec_destroy(&yg);
    ks_backend_destroy(&gpu);
    ks_backend_destroy(&cpu);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------- shared matrices */
static const char *const shared_names[] = {"memplus.mtx.gz", "rajat01.mtx.gz",
                                           "hangGlider_2.mtx.gz", "cage11.mtx.gz"};
#define NSHARED 4

START_TEST(test_shared_host)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    for (int f = 0; all[f]; f++)
        check_layout(all[f], NULL, &A, shared_names[_i]);
    check_all_formats_on("cpu", &A, shared_names[_i]);
    ks_csr_free(&A);
}
END_TEST

START_TEST(test_shared_cuda)
{
    ks_csr A;
    sc_read_shared(shared_names[_i], &A);
    check_all_formats_on("cuda", &A, shared_names[_i]);
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spmv");
    int have_cuda = ks_test_have_cuda();

    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_auto);
    suite_add_tcase(s, tc);

    tc = tcase_create("layouts");
    tcase_add_test(tc, test_layout_cases);
    tcase_add_test(tc, test_layout_bytes);
#ifdef KS_HAVE_CUDA
    tcase_add_test(tc, test_layout_threads_per_row);
#else
    ks_test_skip(1, "CUDA not compiled in: csr_vector threads_per_row layouts");
#endif
    suite_add_tcase(s, tc);

    tc = tcase_create("cpu");
    tcase_add_test(tc, test_cpu_cases);
    tcase_add_test(tc, test_cpu_threads);
    tcase_add_test(tc, test_cpu_copy);
    tcase_add_test(tc, test_errors_apply);
    tcase_add_test(tc, test_errors_create);
    tcase_add_test(tc, test_cpu_float_values);
    tcase_add_test(tc, test_cpu_create_device);
    suite_add_tcase(s, tc);

    tc = tcase_create("cuda");
    if (have_cuda) {
        tcase_add_test(tc, test_cuda_cases);
        tcase_add_test(tc, test_cuda_threads_per_row);
        tcase_add_test(tc, test_cuda_errors);
        tcase_add_test(tc, test_cuda_float_values);
        tcase_add_test(tc, test_cuda_create_device);
    } else {
        ks_test_skip(5, "no CUDA device: cuda SpMV formats");
    }
    suite_add_tcase(s, tc);

    tc = tcase_create("shared");
    int missing = sc_add_shared_tests(tc, shared_names, NSHARED, test_shared_host,
                                      have_cuda ? test_shared_cuda : NULL, "SpMV matrices");
    if (!have_cuda && missing < NSHARED)
        ks_test_skip(NSHARED - missing, "no CUDA device: shared matrices on cuda formats");
    suite_add_tcase(s, tc);

    return ks_test_run(s);
}
