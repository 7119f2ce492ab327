/* The fused residual / smoothing pass on blocks (ks_matrix_fused_block):
 * every format of a backend that has one, float64 and float32 values,
 * against the same format's single-vector fused pass on each column
 * (ks_matrix_fused_step: the same bits on the cpu) and against a float64
 * host reference, on random matrices with empty rows and a 7-point
 * stencil, k = 1, 2, 3, 8, 32 (dia under several KS_DIA_SPMM tile
 * walks), for the residual alone, a Jacobi step, a
 * Chebyshev step with x_old (apart, and in the output block), residual and
 * step together, and two steps from zero (the iterate made from B, x1
 * stored); bad input. Then the AMG block cycle with and without it
 * (KS_BLOCK_FUSED): PCG + AMG on k columns repeats its single solves both
 * ways, on the cpu to the bit; on cuda with a dia level 0 (its own pass)
 * and sell levels (applied through csr_vector views); the cuda csr pass
 * two columns a thread (KS_CSR_BLOCK_PAIR) against one, bit for bit.
 * cuda parts skip without a device. */
#include "ks_test.h"
#include "spmv_cases.h"
#include "solver/solver_create.h"
#include "spmv/format.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int kcols[] = {1, 2, 3, 8, 32};
#define NK ((int)(sizeof kcols / sizeof kcols[0]))

enum { V_RES, V_JACOBI, V_CHEB, V_CHEB_INPLACE, V_RES_STEP, V_FROM_ZERO, NV };

static ks_block *mkblock(ks_backend *be, ks_int n, int k, const double *h)
{
    ks_block *X = NULL;
    KS_CHECK(ks_block_create(be, n, k, &X));
    if (h)
        KS_CHECK(ks_block_set_host(X, h));
    return X;
}

static ks_vec *mkvec(ks_backend *be, ks_int n, const double *h)
{
    ks_vec *v = NULL;
    KS_CHECK(ks_vec_create(be, n, &v));
    KS_CHECK(ks_vec_set_host(v, h));
    return v;
}

/* Column j of the n x k host block h into c. */
static void col(const double *h, ks_int n, int k, int j, double *c)
{
    for (ks_int i = 0; i < n; i++)
        c[i] = h[(size_t)i * k + j];
}

/* |got - want| within rounding of the row's magnitude (mag). */
static void near(double got, double want, double mag, const char *what, const char *fmt,
                 int k, int v, ks_int i, int j, double tol)
{
    ck_assert_msg(fabs(got - want) <= tol * (mag + 1.0),
                  "%s %s k %d variant %d entry (%ld, %d): %.17g, expected %.17g", what, fmt, k,
                  v, (long)i, j, got, want);
}

/* One variant v on width k: the block pass, then per column the vector
 * pass and the host reference. */
static void check_variant(ks_backend *be, ks_matrix *M, const ks_csr *A, const char *what,
                          const char *fmt, int k, int v, int exact)
{
    const ks_int n = A->nrows;
    const size_t nk = (size_t)n * k;
    const double a = v == V_JACOBI ? 0.0 : 0.37, c = 0.81, xs = 0.6;
    double *hb = sc_random_vec((ks_int)nk, 11 + k), *hx = sc_random_vec((ks_int)nk, 12 + k);
    double *hp = sc_random_vec((ks_int)nk, 13 + k), *hw = sc_random_vec(n, 14);
    double *hr = malloc(nk * sizeof(double) + 8), *ho = malloc(nk * sizeof(double) + 8);
    double *h1 = malloc(nk * sizeof(double) + 8);
    for (ks_int i = 0; i < n; i++)
        hw[i] = 0.5 + fabs(hw[i]);
    const int from_zero = v == V_FROM_ZERO, want_r = v == V_RES || v == V_RES_STEP;
    const int want_x = v != V_RES, has_prev = v == V_CHEB || v == V_CHEB_INPLACE || v == V_RES_STEP;
    ks_block *B = mkblock(be, n, k, hb), *X = from_zero ? NULL : mkblock(be, n, k, hx);
    ks_block *R = want_r ? mkblock(be, n, k, NULL) : NULL;
    /* Xo starts as x_old where the step reads it in place */
    ks_block *Xo = want_x ? mkblock(be, n, k, hp) : NULL;
    ks_block *P = v == V_CHEB || v == V_RES_STEP ? mkblock(be, n, k, hp) : NULL;
    ks_block *X1 = from_zero ? mkblock(be, n, k, NULL) : NULL;
    ks_vec *w = mkvec(be, n, hw);
    KS_CHECK(ks_matrix_fused_block(M, B, X, from_zero ? w : NULL, xs, R, a, c,
                                   want_x ? w : NULL, v == V_CHEB_INPLACE ? Xo : P, Xo, X1));
    if (R)
        KS_CHECK(ks_block_get_host(R, hr));
    if (Xo)
        KS_CHECK(ks_block_get_host(Xo, ho));
    if (X1)
        KS_CHECK(ks_block_get_host(X1, h1));
    if (Xo) { /* the same pass with dots: Xo bit for bit, B'Xo to rounding */
        ks_block *Xo2 = mkblock(be, n, k, hp);
        double dots[KS_BLOCK_MAX_COLS], *h2 = malloc(nk * sizeof(double) + 8);
        for (int j = 0; j < k; j++)
            dots[j] = NAN;
        KS_CHECK(ks_matrix_fused_block_dot(M, B, X, from_zero ? w : NULL, xs, R, a, c, w,
                                           v == V_CHEB_INPLACE ? Xo2 : P, Xo2, X1, dots));
        KS_CHECK(ks_block_get_host(Xo2, h2));
        ck_assert_msg(memcmp(h2, ho, nk * sizeof(double)) == 0,
                      "%s %s k %d variant %d: Xo of the pass with dots differs", what, fmt, k, v);
        long double d = 0.0L;
        const int j = ks_test_col_dots_miss(hb, ho, n, k, dots, &d);
        ck_assert_msg(j < 0, "%s %s k %d variant %d column %d: B'Xo %.17g, reference %.17Lg",
                      what, fmt, k, v, j, j < 0 ? 0.0 : dots[j], d);
        free(h2);
        ks_block_destroy(&Xo2);
    }
    double *bc = malloc((size_t)n * sizeof(double) + 8), *xc = malloc((size_t)n * sizeof(double) + 8);
    double *pc = malloc((size_t)n * sizeof(double) + 8), *vr = malloc((size_t)n * sizeof(double) + 8);
    double *vo = malloc((size_t)n * sizeof(double) + 8), *v1 = malloc((size_t)n * sizeof(double) + 8);
    ks_vec *bv = mkvec(be, n, hb), *xv = mkvec(be, n, hb), *pv = mkvec(be, n, hb);
    ks_vec *rv = mkvec(be, n, hb), *ov = mkvec(be, n, hb), *x1v = mkvec(be, n, hb);
    for (int j = 0; j < k; j++) {
        col(hb, n, k, j, bc);
        col(from_zero ? hb : hx, n, k, j, xc);
        col(hp, n, k, j, pc);
        KS_CHECK(ks_vec_set_host(bv, bc));
        KS_CHECK(ks_vec_set_host(xv, xc));
        KS_CHECK(ks_vec_set_host(pv, pc));
        KS_CHECK(ks_vec_set_host(ov, pc));
        /* the same format's vector pass on the column */
        if (from_zero)
            KS_CHECK(ks_matrix_fused_step_from_zero(M, bv, xs, a, c, w, KS_W_VECTOR, 0.0, x1v, 1,
                                                    rv, ov));
        else
            /* a format without a fused vector pass (csr_adaptive on cuda)
             * runs it in steps, which need r */
            KS_CHECK(ks_matrix_fused_step(M, bv, xv, want_r || !M->ops->fused_step ? rv : NULL,
                                          a, c, want_x ? w : NULL,
                                          KS_W_VECTOR, 0.0,
                                          !has_prev ? NULL : v == V_CHEB_INPLACE ? ov : pv,
                                          want_x ? ov : NULL));
        KS_CHECK(ks_vec_get_host(rv, vr));
        KS_CHECK(ks_vec_get_host(ov, vo));
        KS_CHECK(ks_vec_get_host(x1v, v1));
        for (ks_int i = 0; i < n; i++) {
            const size_t e = (size_t)i * k + j;
            double sum = 0.0, mag = fabs(bc[i]);
            for (ks_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const ks_int q = A->colind[p];
                const double xq = from_zero ? xs * hw[q] * bc[q] : xc[q];
                sum += A->val[p] * xq;
                mag += fabs(A->val[p] * xq);
            }
            const double t = bc[i] - sum, xi = from_zero ? xs * hw[i] * bc[i] : xc[i];
            const double xo = xi + c * hw[i] * t + (has_prev || from_zero ? a * (xi - (from_zero ? 0.0 : pc[i])) : 0.0);
            const double mo = fabs(xi) + c * hw[i] * mag + fabs(a) * (fabs(xi) + fabs(pc[i]));
            if (want_r) {
                near(hr[e], t, mag, what, fmt, k, v, i, j, 1e-13);
                near(hr[e], vr[i], mag, what, fmt, k, v, i, j, exact ? 0.0 : 1e-13);
            }
            if (want_x) {
                near(ho[e], xo, mo, what, fmt, k, v, i, j, 1e-13);
                near(ho[e], vo[i], mo, what, fmt, k, v, i, j, exact ? 0.0 : 1e-13);
            }
            if (from_zero)
                near(h1[e], v1[i], fabs(xi), what, fmt, k, v, i, j, 0.0);
        }
    }
    ks_vec *vecs[] = {w, bv, xv, pv, rv, ov, x1v};
    for (int i = 0; i < 7; i++)
        ks_vec_destroy(&vecs[i]);
    ks_block *blocks[] = {B, X, R, Xo, P, X1};
    for (int i = 0; i < 6; i++)
        ks_block_destroy(&blocks[i]);
    void *mem[] = {hb, hx, hp, hw, hr, ho, h1, bc, xc, pc, vr, vo, v1};
    for (int i = 0; i < 13; i++)
        free(mem[i]);
}

/* KS_DIA_SPMM settings dia's fused pass runs under ("": the default): each
 * variant's tile walk, with tile lengths that split the matrices into
 * several tiles and a partial last one; old runs as tile. */
static const char *const dia_walks[] = {"", "tile:1", "vec:100", "vec256:37", "old",
                                        "", "",       "",        "",          "",    ""};
/* KS_DIA_SPMM_HOIST beside each walk: the hoisted kernel in chunks of 2, 4
 * and 8 diagonals too, and with B prefetched ("Np": KS_DIA_SPMM_PREFETCH=1;
 * "": the defaults) */
static const char *const dia_hoists[] = {"", "", "", "", "", "2", "4", "8", "2p", "4p", "8p"};
#define NWALK ((int)(sizeof dia_walks / sizeof dia_walks[0]))

static void check_backend(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    ks_csr mats[3];
    const char *what[3] = {"random 900", "random 257 (sparse)", "7-point 10^3"};
    sc_make_random(&mats[0], 900, 900, 12, 51);
    sc_make_random(&mats[1], 257, 257, 3, 52);
    sc_make_gen(&mats[2], KS_GEN_POISSON3D_7, 10);
    const char *const *names = ks_spmv_format_names(name);
    const char *env = getenv("KS_DIA_SPMM");
    char *keep_env = env ? strdup(env) : NULL;
    const char *henv = getenv("KS_DIA_SPMM_HOIST");
    char *keep_henv = henv ? strdup(henv) : NULL;
    const char *penv = getenv("KS_DIA_SPMM_PREFETCH");
    char *keep_penv = penv ? strdup(penv) : NULL;
    int tested = 0;
    for (int f = 0; names[f]; f++) {
        const ks_spmv_format_ops *o = ks_spmv_format_find(names[f], be->ops->kind);
        if (!o || !o->fused_block)
            continue;
        const int dia = strcmp(names[f], "dia") == 0;
        for (int walk = 0; walk < (dia ? NWALK : 1); walk++)
        for (int f32 = 0; f32 <= o->float_values; f32++) {
            ks_spmv_params prm;
            memset(&prm, 0, sizeof prm);
            prm.float_values = f32;
            prm.max_fill = 1e6; /* dia holds the random matrices too */
            char fmt[96];
            snprintf(fmt, sizeof fmt, "%s%s%s%s%s", names[f], dia ? " KS_DIA_SPMM=" : "",
                     dia ? dia_walks[walk] : "", dia ? " KS_DIA_SPMM_HOIST=" : "",
                     dia ? dia_hoists[walk] : "");
            if (dia) {
                setenv("KS_DIA_SPMM", dia_walks[walk], 1);
                const int pf = strchr(dia_hoists[walk], 'p') != NULL;
                char chunk[2] = {dia_hoists[walk][0], 0};
                setenv("KS_DIA_SPMM_HOIST", chunk, 1);
                if (walk == 0) /* the defaults throughout */
                    unsetenv("KS_DIA_SPMM_PREFETCH");
                else
                    setenv("KS_DIA_SPMM_PREFETCH", pf ? "1" : "0", 1);
            }
            for (int m = 0; m < 3; m++) {
                ks_matrix *M = NULL;
                /* float32 values: the reference has them too */
                ks_csr Am = mats[m];
                KS_CHECK(ks_matrix_create(be, &Am, names[f], &prm, &M));
                ck_assert_int_eq(ks_matrix_has_fused_block(M), 1);
                double *keep = NULL;
                if (f32) {
                    keep = malloc((size_t)Am.nnz * sizeof(double) + 8);
                    memcpy(keep, Am.val, (size_t)Am.nnz * sizeof(double));
                    for (ks_int p = 0; p < Am.nnz; p++)
                        Am.val[p] = (double)(float)Am.val[p];
                }
                for (int t = 0; t < NK; t++)
                    for (int v = 0; v < NV; v++)
                        check_variant(be, M, &Am, what[m], fmt, kcols[t], v,
                                      be->ops->host_memory);
                if (keep) {
                    memcpy(Am.val, keep, (size_t)Am.nnz * sizeof(double));
                    free(keep);
                }
                ks_matrix_destroy(&M);
                tested++;
            }
        }
    }
    if (keep_env)
        setenv("KS_DIA_SPMM", keep_env, 1);
    else
        unsetenv("KS_DIA_SPMM");
    free(keep_env);
    if (keep_henv)
        setenv("KS_DIA_SPMM_HOIST", keep_henv, 1);
    else
        unsetenv("KS_DIA_SPMM_HOIST");
    free(keep_henv);
    if (keep_penv)
        setenv("KS_DIA_SPMM_PREFETCH", keep_penv, 1);
    else
        unsetenv("KS_DIA_SPMM_PREFETCH");
    free(keep_penv);
    ck_assert_msg(tested > 0, "backend %s: no format has a fused block pass", name);
    ck_assert_ptr_nonnull(ks_spmv_format_with_fused_block(be->ops->kind));
    for (int m = 0; m < 3; m++)
        ks_csr_free(&mats[m]);
    ks_backend_destroy(&be);
}

START_TEST(fused_block_cpu) { check_backend("cpu"); }
END_TEST

START_TEST(fused_block_cuda) { check_backend("cuda"); }
END_TEST

/* ------------------------------------------------ KS_CSR_BLOCK_PAIR */
/* The fused block pass of variant v on width k through the format op
 * itself, every block starting `shift` doubles into its allocation (1: not
 * 16-byte aligned, so a pair kernel must give way to the one-column one),
 * the inputs those of check_variant; R, Xo, X1 (n x k each, those the
 * variant writes) into out[0..2]. */
static void pass_shifted(ks_backend *be, ks_matrix *M, ks_int n, int k, int v, int shift,
                         double *out[3])
{
    const size_t nk = (size_t)n * k, all = nk + (size_t)k;
    const double a = v == V_JACOBI ? 0.0 : 0.37, c = 0.81, xs = 0.6;
    double *h[3] = {sc_random_vec((ks_int)nk, 11 + k), sc_random_vec((ks_int)nk, 12 + k),
                    sc_random_vec((ks_int)nk, 13 + k)}; /* b, x, x_old */
    double *hw = sc_random_vec(n, 14);
    for (ks_int i = 0; i < n; i++)
        hw[i] = 0.5 + fabs(hw[i]);
    const int from_zero = v == V_FROM_ZERO, want_r = v == V_RES || v == V_RES_STEP;
    const int want_x = v != V_RES, has_prev = v == V_CHEB || v == V_CHEB_INPLACE || v == V_RES_STEP;
    /* blocks B, X, Xprev, R, Xo, X1 of n + 1 rows; Xo starts as x_old */
    const int src[6] = {0, 1, 2, -1, 2, -1};
    ks_block *blk[6];
    double *d[6], *tmp = calloc(all, sizeof(double));
    for (int b = 0; b < 6; b++) {
        blk[b] = mkblock(be, n + 1, k, NULL);
        memset(tmp, 0, all * sizeof(double));
        if (src[b] >= 0)
            memcpy(tmp + shift, h[src[b]], nk * sizeof(double));
        KS_CHECK(ks_block_set_host(blk[b], tmp));
        d[b] = blk[b]->data + shift;
    }
    ks_vec *w = mkvec(be, n, hw);
    const ks_fused_step f = {d[0], from_zero ? d[0] : d[1], want_r ? d[3] : NULL, a, c,
                             want_x ? w->data : NULL,
                             !has_prev ? NULL : v == V_CHEB_INPLACE ? d[4] : d[2],
                             want_x ? d[4] : NULL, KS_W_VECTOR, 0.0, from_zero ? w->data : NULL,
                             xs, from_zero ? d[5] : NULL};
    KS_CHECK(M->ops->fused_block(be, M->state, k, &f));
    for (int o = 0; o < 3; o++) {
        KS_CHECK(ks_block_get_host(blk[3 + o], tmp));
        memcpy(out[o], tmp + shift, nk * sizeof(double));
    }
    for (int b = 0; b < 6; b++)
        ks_block_destroy(&blk[b]);
    ks_vec_destroy(&w);
    for (int i = 0; i < 3; i++)
        free(h[i]);
    free(hw);
    free(tmp);
}

/* The cuda CSR fused block pass two columns a thread (csr_vector float64
 * and float32, csr_adaptive; KS_CSR_BLOCK_PAIR read at setup) against one
 * column a thread and against itself on unaligned blocks, bit for bit, for
 * every variant; k even runs the pair kernel (6 and 10: k / 2 at run
 * time), odd k the one-column kernel either way. Then the pair kernels
 * against the vector pass and the host reference (check_variant). */
static const int pair_ks[] = {2, 4, 8, 32, 3, 5, 6, 10};
#define NPAIRK ((int)(sizeof pair_ks / sizeof pair_ks[0]))

START_TEST(fused_block_pair)
{
    static const struct {
        const char *fmt;
        int f32;
    } fmts[] = {{"csr_vector", 0}, {"csr_vector", 1}, {"csr_adaptive", 0}};
    ks_backend *be;
    KS_CHECK(ks_backend_create("cuda", &be));
    ks_csr mats[3];
    const char *what[3] = {"random 900", "random 257 (sparse)", "7-point 10^3"};
    sc_make_random(&mats[0], 900, 900, 12, 53);
    sc_make_random(&mats[1], 257, 257, 3, 54);
    sc_make_gen(&mats[2], KS_GEN_POISSON3D_7, 10);
    const char *env = getenv("KS_CSR_BLOCK_PAIR");
    char *keep_env = env ? strdup(env) : NULL;
    for (int f = 0; f < (int)(sizeof fmts / sizeof fmts[0]); f++)
        for (int m = 0; m < 3; m++) {
            ks_spmv_params prm;
            memset(&prm, 0, sizeof prm);
            prm.float_values = fmts[f].f32;
            ks_csr Am = mats[m];
            const ks_int n = Am.nrows;
            ks_matrix *M[2] = {NULL, NULL}; /* pair on, off */
            for (int p = 0; p < 2; p++) {
                setenv("KS_CSR_BLOCK_PAIR", p ? "0" : "1", 1);
                KS_CHECK(ks_matrix_create(be, &Am, fmts[f].fmt, &prm, &M[p]));
            }
            for (int t = 0; t < NPAIRK; t++)
                for (int v = 0; v < NV; v++) {
                    const int k = pair_ks[t];
                    const size_t nk = (size_t)n * k;
                    double *out[3][3];
                    for (int r = 0; r < 3; r++)
                        for (int o = 0; o < 3; o++)
                            out[r][o] = malloc(nk * sizeof(double) + 8);
                    pass_shifted(be, M[0], n, k, v, 0, out[0]);
                    pass_shifted(be, M[1], n, k, v, 0, out[1]);
                    pass_shifted(be, M[0], n, k, v, 1, out[2]);
                    for (int r = 1; r < 3; r++)
                        for (int o = 0; o < 3; o++)
                            for (size_t e = 0; e < nk; e++)
                                ck_assert_msg(memcmp(&out[0][o][e], &out[r][o][e],
                                                     sizeof(double)) == 0,
                                              "%s%s %s k %d variant %d %s entry (%zu, %zu): "
                                              "pair %.17g, %s %.17g",
                                              fmts[f].fmt, fmts[f].f32 ? " float32" : "",
                                              what[m], k, v, o == 0 ? "R" : o == 1 ? "Xo" : "X1",
                                              e / (size_t)k, e % (size_t)k, out[0][o][e],
                                              r == 1 ? "one column a thread" : "unaligned",
                                              out[r][o][e]);
                    for (int r = 0; r < 3; r++)
                        for (int o = 0; o < 3; o++)
                            free(out[r][o]);
                }
            /* float32 values: the reference has them too */
            double *keep = NULL;
            if (fmts[f].f32) {
                keep = malloc((size_t)Am.nnz * sizeof(double) + 8);
                memcpy(keep, Am.val, (size_t)Am.nnz * sizeof(double));
                for (ks_int q = 0; q < Am.nnz; q++)
                    Am.val[q] = (double)(float)Am.val[q];
            }
            char fmt[64];
            snprintf(fmt, sizeof fmt, "%s pair", fmts[f].fmt);
            for (int t = 0; t < NPAIRK; t++)
                for (int v = 0; v < NV; v++)
                    check_variant(be, M[0], &Am, what[m], fmt, pair_ks[t], v, 0);
            if (keep) {
                memcpy(Am.val, keep, (size_t)Am.nnz * sizeof(double));
                free(keep);
            }
            ks_matrix_destroy(&M[0]);
            ks_matrix_destroy(&M[1]);
        }
    if (keep_env)
        setenv("KS_CSR_BLOCK_PAIR", keep_env, 1);
    else
        unsetenv("KS_CSR_BLOCK_PAIR");
    free(keep_env);
    for (int m = 0; m < 3; m++)
        ks_csr_free(&mats[m]);
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(errors)
{
    ks_backend *be, *be2;
    KS_CHECK(ks_backend_create("cpu", &be));
    KS_CHECK(ks_backend_create("cpu", &be2));
    ks_csr A, Rr;
    sc_make_random(&A, 40, 40, 5, 3);
    sc_make_random(&Rr, 40, 30, 5, 4);
    ks_matrix *M = NULL, *MR = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    KS_CHECK(ks_matrix_create(be, &Rr, "csr", NULL, &MR));
    ks_block *B = mkblock(be, 40, 2, NULL), *X = mkblock(be, 40, 2, NULL);
    ks_block *Y = mkblock(be, 40, 2, NULL), *Y3 = mkblock(be, 40, 3, NULL);
    ks_block *Yo = mkblock(be2, 40, 2, NULL);
    ks_vec *w = NULL, *w30 = NULL;
    KS_CHECK(ks_vec_create(be, 40, &w));
    KS_CHECK(ks_vec_create(be, 30, &w30));
    KS_CHECK(ks_block_fill(B, 1.0));
    KS_CHECK(ks_block_fill(X, 1.0));
    KS_CHECK(ks_vec_fill(w, 1.0));
    KS_CHECK(ks_matrix_fused_block(M, B, X, NULL, 0.0, Y, 0.0, 0.0, NULL, NULL, NULL, NULL));
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, Y3, 0, 0, NULL, NULL, NULL, NULL),
                     KS_ERR_SIZE);
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, Yo, 0, 0, NULL, NULL, NULL, NULL),
                     KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "another backend"));
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, X, 0, 0, NULL, NULL, NULL, NULL),
                     KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, NULL, 0, 1, w, NULL, Y, Y),
                     KS_ERR_ARG); /* X1 without xw */
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, w, 1, NULL, 0, 1, w, NULL, Y, NULL),
                     KS_ERR_ARG); /* X and xw */
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, NULL, 0, 1, NULL, NULL, Y, NULL),
                     KS_ERR_ARG); /* Xo without w */
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, NULL, 0.5, 1, w, X, Y, NULL),
                     KS_ERR_ARG); /* Xprev is X */
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, NULL, 0, 1, w30, NULL, Y, NULL),
                     KS_ERR_SIZE);
    ck_assert_int_eq(ks_matrix_fused_block(M, B, X, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL),
                     KS_ERR_ARG); /* no output */
    ck_assert_int_eq(ks_matrix_fused_block(MR, B, X, NULL, 0, Y, 0, 0, NULL, NULL, NULL, NULL),
                     KS_ERR_SIZE); /* not square */
    double dots[4];
    ck_assert_int_eq(ks_matrix_fused_block_dot(M, B, X, NULL, 0, Y, 0, 0, NULL, NULL, NULL,
                                               NULL, dots), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "Xo"));
    ck_assert_int_eq(ks_matrix_fused_block_dot(M, B, X, NULL, 0, NULL, 0, 1, w, NULL, Y, NULL,
                                               NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_matrix_fused_block(NULL, B, X, NULL, 0, Y, 0, 0, NULL, NULL, NULL, NULL),
                     KS_ERR_ARG);
    ks_block *blocks[] = {B, X, Y, Y3, Yo};
    for (int i = 0; i < 5; i++)
        ks_block_destroy(&blocks[i]);
    ks_vec_destroy(&w);
    ks_vec_destroy(&w30);
    ks_matrix_destroy(&M);
    ks_matrix_destroy(&MR);
    ks_csr_free(&A);
    ks_csr_free(&Rr);
    ks_backend_destroy(&be);
    ks_backend_destroy(&be2);
}
END_TEST

/* PCG + AMG (defaults: Chebyshev, V(1,1)) on k = 3 columns with the fused
 * block passes (KS_BLOCK_FUSED unset) and with two passes (=0), against
 * the single solves: the same iterations per column, solutions to 1e-10;
 * on the cpu both block solves give the same bits. */
static void amg_both_ways(const char *backend, const char *fmt, const char *level_format)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(backend, &be));
    ks_csr A;
    sc_make_gen(&A, KS_GEN_POISSON3D_7, 14);
    const ks_int n = A.nrows;
    const int k = 3;
    ks_matrix *M;
    KS_CHECK(ks_matrix_create(be, &A, fmt, NULL, &M));
    ks_solver_params prm;
    ks_solver_params_default(&prm);
    snprintf(prm.solver, sizeof prm.solver, "PCG");
    snprintf(prm.pc.solver, sizeof prm.pc.solver, "AMG");
    if (level_format)
        snprintf(prm.pc.amg.level_format, sizeof prm.pc.amg.level_format, "%s", level_format);
    prm.tolerance = 1e-10;
    prm.print_solve_stats = 0;
    prm.monitor_residual = 0;
    ks_solver *s;
    KS_CHECK(ks_solver_create_params(be, &prm, &s));
    KS_CHECK(ks_solver_setup(s, M));
    double *bh = malloc((size_t)n * k * sizeof(double)), *xh[2];
    for (size_t e = 0; e < (size_t)n * k; e++)
        bh[e] = sin(0.37 * (double)e) + (e % k == 1 ? 1.0 : 0.0);
    int its[2][3];
    ks_block *B = mkblock(be, n, k, bh), *X = mkblock(be, n, k, NULL);
    for (int way = 0; way < 2; way++) {
        if (way)
            setenv("KS_BLOCK_FUSED", "0", 1);
        else
            unsetenv("KS_BLOCK_FUSED");
        KS_CHECK(ks_block_fill(X, 0.0));
        KS_CHECK(ks_solver_solve_many(s, B, X));
        xh[way] = malloc((size_t)n * k * sizeof(double));
        KS_CHECK(ks_block_get_host(X, xh[way]));
        for (int j = 0; j < k; j++)
            its[way][j] = ks_solver_stats_column(s, j)->iterations;
    }
    unsetenv("KS_BLOCK_FUSED");
    ks_vec *b = NULL, *x = NULL;
    KS_CHECK(ks_vec_create(be, n, &b));
    KS_CHECK(ks_vec_create(be, n, &x));
    double *bc = malloc((size_t)n * sizeof(double)), *xc = malloc((size_t)n * sizeof(double));
    double *xm = malloc((size_t)n * sizeof(double));
    for (int j = 0; j < k; j++) {
        col(bh, n, k, j, bc);
        KS_CHECK(ks_vec_set_host(b, bc));
        KS_CHECK(ks_vec_fill(x, 0.0));
        KS_CHECK(ks_solver_solve(s, b, x));
        KS_CHECK(ks_vec_get_host(x, xc));
        const ks_solve_stats *st = ks_solver_stats(s);
        ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
        for (int way = 0; way < 2; way++) {
            ck_assert_msg(its[way][j] == st->iterations, "%s %s column %d (%s): %d iterations, "
                          "single %d", backend, fmt, j, way ? "two passes" : "fused",
                          its[way][j], st->iterations);
            col(xh[way], n, k, j, xm);
            double err = ks_test_max_relerr(xm, xc, n);
            ck_assert_msg(err <= 1e-10, "%s %s column %d (%s): solutions differ by %g", backend,
                          fmt, j, way ? "two passes" : "fused", err);
        }
    }
    if (be->ops->host_memory)
        ck_assert_msg(memcmp(xh[0], xh[1], (size_t)n * k * sizeof(double)) == 0,
                      "cpu: fused and two-pass block cycles differ");
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
    ks_block_destroy(&B);
    ks_block_destroy(&X);
    free(bh);
    free(xh[0]);
    free(xh[1]);
    free(bc);
    free(xc);
    free(xm);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}

START_TEST(amg_cpu) { amg_both_ways("cpu", "csr", NULL); }
END_TEST

/* dia on level 0 with its own fused block pass; sell below has none: the
 * cycle applies csr_vector views of its CSR. */
START_TEST(amg_cuda)
{
    amg_both_ways("cuda", "auto", NULL);
    amg_both_ways("cuda", "dia", "sell");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fused_block");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, fused_block_cpu);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, amg_cpu);
    suite_add_tcase(s, tc);
    tc = tcase_create("cuda");
    if (ks_test_have_cuda()) {
        tcase_add_test(tc, fused_block_cuda);
        tcase_add_test(tc, fused_block_pair);
        tcase_add_test(tc, amg_cuda);
    } else {
        ks_test_skip(3, "no CUDA device: the cuda fused block pass (also two columns a "
                        "thread) and block cycle");
    }
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
