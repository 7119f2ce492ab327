/* ks_solver_solve_many: k systems at once against k single solves (the
 * same status and iterations per column, solutions to 1e-10) for CG, PCG
 * (Jacobi, AMG with each smoother, V, W and F cycles), BiCGStab, PBiCGStab and GMRES with
 * k = 1, 2, 3, 8; a column with b = 0 (converged at once, x = 0) and one
 * that breaks down beside columns that converge; a method without a block
 * form (column by column); per-column statistics; the errors (k mismatch,
 * wrong sizes, another backend, NULLs). Loop tests run per backend (0 cpu,
 * 1 cuda where a device is present). */
#include "ks_test.h"
#include "solver/solver_create.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int nbackends = 1;
static const char *const backend_names[] = {"cpu", "cuda"};

/* Poisson 2D 5-point on g x g, plus (skew) a 2 x 2 skew block [0 1; -1 0]
 * at the end, on which CG and BiCGStab break down at their first step for
 * b = e_{g*g} while columns that live on the Poisson block converge. */
static void make_matrix(int g, int skew, ks_csr *A)
{
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON2D_5;
    gp.nx = gp.ny = g;
    gp.nz = 1;
    ks_csr P;
    KS_CHECK(ks_generate(&gp, &P));
    if (!skew) {
        *A = P;
        return;
    }
    ks_int n = P.nrows + 2;
    KS_CHECK(ks_csr_alloc(A, n, n, P.nnz + 2));
    memcpy(A->rowptr, P.rowptr, ((size_t)P.nrows + 1) * sizeof(ks_int));
    memcpy(A->colind, P.colind, (size_t)P.nnz * sizeof(ks_int));
    memcpy(A->val, P.val, (size_t)P.nnz * sizeof(double));
    A->colind[P.nnz] = n - 1;
    A->val[P.nnz] = 1.0;
    A->colind[P.nnz + 1] = n - 2;
    A->val[P.nnz + 1] = -1.0;
    A->rowptr[n - 1] = P.nnz + 1;
    A->rowptr[n] = P.nnz + 2;
    ks_csr_free(&P);
}

/* Column j of the right-hand sides (host, column-major n x k): A x_j with
 * x_j[i] = 1 + 0.5 sin((j + 1)(i + 1)) on the Poisson rows (0 on the skew
 * rows), except the columns named special: b = 0 (zero_col) and b = e_m
 * (break_col, m the first skew row). */
static double *make_rhs(const ks_csr *A, int k, int m, int zero_col, int break_col)
{
    ks_int n = A->nrows;
    double *b = calloc((size_t)n * (size_t)k, sizeof *b), *x = malloc((size_t)n * sizeof *x);
    ck_assert(b && x);
    for (int j = 0; j < k; j++) {
        double *bj = b + (size_t)j * (size_t)n;
        if (j == zero_col)
            continue;
        if (j == break_col) {
            bj[m] = 1.0;
            continue;
        }
        for (ks_int i = 0; i < n; i++)
            x[i] = i < m ? 1.0 + 0.5 * sin((double)(j + 1) * (double)(i + 1)) : 0.0;
        ks_csr_spmv_ref(A, 1.0, x, 0.0, bj);
    }
    free(x);
    return b;
}

/* Column-major host columns <-> a row-interleaved block. */
static void to_block(const double *cm, ks_int n, int k, ks_block *B)
{
    double *h = malloc((size_t)n * (size_t)k * sizeof *h + 1);
    for (ks_int i = 0; i < n; i++)
        for (int j = 0; j < k; j++)
            h[(size_t)i * k + j] = cm[(size_t)j * n + i];
    KS_CHECK(ks_block_set_host(B, h));
    free(h);
}

static void from_block(const ks_block *B, ks_int n, int k, double *cm)
{
    double *h = malloc((size_t)n * (size_t)k * sizeof *h + 1);
    KS_CHECK(ks_block_get_host(B, h));
    for (ks_int i = 0; i < n; i++)
        for (int j = 0; j < k; j++)
            cm[(size_t)j * n + i] = h[(size_t)i * k + j];
    free(h);
}

typedef struct method {
    const char *solver, *pc, *smoother, *cycle; /* smoother, cycle NULL: defaults */
} method;

/* The solves' settings (a test may change them: each test runs in its own
 * process). */
static double tol = 1e-9;
static int max_iters = 300, restart = 12;
static int rounding_bound = 0; /* 1: iterations decided at rounding level */

static void params_of(const method *md, ks_solver_params *prm)
{
    ks_solver_params_default(prm);
    snprintf(prm->solver, sizeof prm->solver, "%s", md->solver);
    snprintf(prm->pc.solver, sizeof prm->pc.solver, "%s", md->pc ? md->pc : "NOSOLVER");
    prm->max_iters = max_iters;
    prm->tolerance = tol;
    prm->store_res_history = 1;
    prm->print_solve_stats = 0;
    prm->monitor_residual = 0;
    prm->gmres_n_restart = restart; /* restarts inside the test's solves */
    if (md->smoother) {
        int v = -1;
        ck_assert_msg(ks_name_value(ks_amg_smoother_names, md->smoother, &v) == 0, "%s",
                      md->smoother);
        prm->pc.amg.smoother.solver = (ks_amg_smoother_kind)v;
    }
    if (md->cycle) {
        int v = -1;
        ck_assert_msg(ks_name_value(ks_amg_cycle_names, md->cycle, &v) == 0, "%s", md->cycle);
        prm->pc.amg.cycle = (ks_amg_cycle_kind)v;
    }
}

/* Solve the k columns together and one by one; compare column by column. */
static void compare(const char *backend, const method *md, const ks_csr *A, const double *bh,
                    int k)
{
    ks_backend *be;
    ks_matrix *M;
    ks_solver *s;
    ks_solver_params prm;
    ks_int n = A->nrows;
    KS_CHECK(ks_backend_create(backend, &be));
    KS_CHECK(ks_matrix_create(be, A, "auto", NULL, &M));
    params_of(md, &prm);
    KS_CHECK(ks_solver_create_params(be, &prm, &s));
    KS_CHECK(ks_solver_setup(s, M));

    ks_block *B, *X;
    KS_CHECK(ks_block_create(be, n, k, &B));
    KS_CHECK(ks_block_create(be, n, k, &X));
    to_block(bh, n, k, B);
    KS_CHECK(ks_block_fill(X, 0.0));
    KS_CHECK(ks_solver_solve_many(s, B, X));
    ck_assert_int_eq(ks_solver_stats_count(s), k);
    ks_solve_stats *many = malloc((size_t)k * sizeof *many);
    double **hist = malloc((size_t)k * sizeof *hist);
    for (int j = 0; j < k; j++) {
        many[j] = *ks_solver_stats_column(s, j);
        hist[j] = malloc(((size_t)many[j].history_len + 1) * sizeof(double));
        if (many[j].history_len > 0)
            memcpy(hist[j], many[j].history, (size_t)many[j].history_len * sizeof(double));
    }
    ck_assert_ptr_null(ks_solver_stats_column(s, k));
    double *xm = malloc((size_t)n * (size_t)k * sizeof *xm + 1);
    from_block(X, n, k, xm);

    /* The summary: the most iterations. */
    int most = 0;
    for (int j = 0; j < k; j++)
        most = many[j].iterations > most ? many[j].iterations : most;
    ck_assert_int_eq(ks_solver_stats(s)->iterations, most);

    /* Each column's arithmetic is its single solve's to the last bit on
     * the cpu (the block dot sums a column as the vector dot does), so
     * every method repeats its iterations there. The cuda block dot sums
     * in another order: CG and GMRES still take the same iterations, but
     * BiCGStab amplifies the last bit, and is held to 10 % (or 2) there, as
     * is a solve whose steps are decided at rounding level. */
    const int strict =
        strcmp(backend, "cpu") == 0 || (!strstr(md->solver, "BICGSTAB") && !rounding_bound);
    ks_vec *b, *x;
    KS_CHECK(ks_vec_create(be, n, &b));
    KS_CHECK(ks_vec_create(be, n, &x));
    double *xs = malloc((size_t)n * sizeof *xs);
    for (int j = 0; j < k; j++) {
        KS_CHECK(ks_vec_set_host(b, bh + (size_t)j * n));
        KS_CHECK(ks_vec_fill(x, 0.0));
        KS_CHECK(ks_solver_solve(s, b, x));
        const ks_solve_stats *st = ks_solver_stats(s);
        ck_assert_int_eq(ks_solver_stats_count(s), 1);
        ck_assert_ptr_eq(ks_solver_stats_column(s, 0), st);
        if (!strict) { /* see `strict` above */
            int d = abs(st->iterations - many[j].iterations);
            ck_assert_msg(st->status == many[j].status &&
                              (d <= 2 || d <= st->iterations / 10),
                          "%s on %s, k = %d, column %d: %d iterations alone, %d in the block",
                          md->solver, backend, k, j, st->iterations, many[j].iterations);
            KS_CHECK(ks_vec_get_host(x, xs));
            ck_assert(ks_test_max_relerr(xm + (size_t)j * n, xs, n) <= 1e-6);
            continue;
        }
        ck_assert_msg(st->status == many[j].status && st->iterations == many[j].iterations,
                      "%s+%s%s%s on %s, k = %d, column %d: single %s after %d, block %s "
                      "after %d",
                      md->solver, md->pc ? md->pc : "none", md->smoother ? "/" : "",
                      md->smoother ? md->smoother : "", backend, k, j,
                      ks_solve_status_name(st->status), st->iterations,
                      ks_solve_status_name(many[j].status), many[j].iterations);
        ck_assert_str_eq(st->breakdown, many[j].breakdown);
        ck_assert_int_eq(st->history_len, many[j].history_len);
        for (int i = 0; i < st->history_len; i++)
            ck_assert(fabs(st->history[i] - hist[j][i]) <= 1e-8 * (fabs(st->history[i]) + 1e-300) ||
                      fabs(st->history[i] - hist[j][i]) <= 1e-12 * st->history[0]);
        KS_CHECK(ks_vec_get_host(x, xs));
        double err = ks_test_max_relerr(xm + (size_t)j * n, xs, n);
        ck_assert_msg(err <= 1e-10, "%s, k = %d, column %d: solutions differ by %g", md->solver,
                      k, j, err);
        ck_assert(fabs(st->true_relative_residual - many[j].true_relative_residual) <=
                  1e-6 * st->true_relative_residual + 1e-14);
    }
    for (int j = 0; j < k; j++)
        free(hist[j]);
    free(hist);
    free(many);
    free(xs);
    free(xm);
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
    ks_block_destroy(&B);
    ks_block_destroy(&X);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
}

static const method methods[] = {
    {"CG", NULL, NULL, NULL},
    {"PCG", "JACOBI", NULL, NULL},
    {"PCG", "AMG", NULL, NULL},            /* the default smoother: Chebyshev */
    {"PCG", "AMG", "JACOBI_L1", NULL},
    {"PCG", "AMG", "JACOBI", NULL},
    {"PCG", "AMG", "SGS", NULL},           /* per-column cycle (cpu) */
    {"PCG", "AMG", NULL, "W"},
    {"PCG", "AMG", "JACOBI_L1", "F"},
    {"BICGSTAB", NULL, NULL, NULL},
    {"PBICGSTAB", "JACOBI_L1", NULL, NULL},
    {"PBICGSTAB", "AMG", NULL, NULL},
    {"GMRES", NULL, NULL, NULL},
    {"GMRES", "AMG", NULL, NULL},
    {"FGMRES", "JACOBI", NULL, NULL},
    {"FGMRES", "AMG", NULL, NULL},
    {"PIPECG", "JACOBI", NULL, NULL},      /* no block form: column by column */
    {"AMG", NULL, NULL, NULL},             /* the stationary AMG: column by column */
};
#define NMETHODS ((int)(sizeof methods / sizeof methods[0]))

/* Every method, k = 1, 2, 3, 8, on Poisson 2D 24^2 (a column with b = 0 at
 * k >= 3). */
START_TEST(many_equals_singles)
{
    const int i = _i;
    const char *backend = backend_names[i % nbackends];
    const method *md = &methods[i / nbackends];
    if (md->smoother && strcmp(md->smoother, "SGS") == 0 && strcmp(backend, "cpu") != 0)
        return; /* Gauss-Seidel smoothers are cpu-only */
    ks_csr A;
    make_matrix(24, 0, &A);
    static const int ks[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++) {
        int k = ks[t];
        double *b = make_rhs(&A, k, A.nrows, k >= 3 ? 1 : -1, -1);
        compare(backend, md, &A, b, k);
        free(b);
    }
    ks_csr_free(&A);
}
END_TEST

/* One block holds a column that converges, one that breaks down at once,
 * one with b = 0 and another that converges: each ends as alone. */
START_TEST(many_breakdown_column)
{
    const int i = _i;
    const char *backend = backend_names[i % nbackends];
    static const method bd[] = {{"CG", NULL, NULL, NULL}, {"BICGSTAB", NULL, NULL, NULL},
                                {"GMRES", NULL, NULL, NULL}};
    const method *md = &bd[i / nbackends];
    ks_csr A;
    make_matrix(12, 1, &A);
    int m = A.nrows - 2;
    double *b = make_rhs(&A, 4, m, 2, 1);
    compare(backend, md, &A, b, 4);
    free(b);
    /* the statuses themselves */
    ks_backend *be;
    ks_matrix *M;
    ks_solver *s;
    ks_solver_params prm;
    KS_CHECK(ks_backend_create(backend, &be));
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &M));
    params_of(md, &prm);
    KS_CHECK(ks_solver_create_params(be, &prm, &s));
    KS_CHECK(ks_solver_setup(s, M));
    ks_block *B, *X;
    KS_CHECK(ks_block_create(be, A.nrows, 4, &B));
    KS_CHECK(ks_block_create(be, A.nrows, 4, &X));
    b = make_rhs(&A, 4, m, 2, 1);
    to_block(b, A.nrows, 4, B);
    /* b = 0 gives x = 0 whatever x0 is */
    double *x0 = calloc((size_t)A.nrows * 4, sizeof *x0);
    for (ks_int r = 0; r < A.nrows; r++)
        x0[2 * (size_t)A.nrows + r] = 7.0;
    to_block(x0, A.nrows, 4, X);
    free(x0);
    KS_CHECK(ks_solver_solve_many(s, B, X));
    ck_assert_int_eq(ks_solver_stats_column(s, 0)->status, KS_SOLVE_CONVERGED);
    ck_assert_int_eq(ks_solver_stats_column(s, 1)->status,
                     md->solver[0] == 'G' ? KS_SOLVE_CONVERGED : KS_SOLVE_BREAKDOWN);
    ck_assert_int_eq(ks_solver_stats_column(s, 2)->status, KS_SOLVE_CONVERGED);
    ck_assert_int_eq(ks_solver_stats_column(s, 2)->iterations, 0);
    ck_assert_int_eq(ks_solver_stats_column(s, 3)->status, KS_SOLVE_CONVERGED);
    double *xm = malloc((size_t)A.nrows * 4 * sizeof *xm);
    from_block(X, A.nrows, 4, xm);
    for (ks_int r = 0; r < A.nrows; r++)
        ck_assert(xm[2 * (size_t)A.nrows + r] == 0.0);
    if (md->solver[0] != 'G')
        ck_assert_int_eq(ks_solver_stats(s)->status, KS_SOLVE_BREAKDOWN);
    free(xm);
    free(b);
    ks_block_destroy(&B);
    ks_block_destroy(&X);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    ks_csr_free(&A);
}
END_TEST

/* GMRES asked for more than its attainable accuracy: estimates fall below
 * the tolerance while true residuals do not, so columns end cycles early
 * and wait for the others (gmres_many.c) before restarting; each still
 * takes its single solve's iterations. */
START_TEST(many_gmres_waits)
{
    const int i = _i;
    static const method gm[] = {{"GMRES", NULL, NULL, NULL}, {"FGMRES", "JACOBI", NULL, NULL}};
    tol = 1e-16;
    rounding_bound = 1;
    max_iters = 520;
    restart = 10;
    ks_csr A;
    make_matrix(24, 0, &A);
    double *b = make_rhs(&A, 3, A.nrows, -1, -1);
    compare(backend_names[i % nbackends], &gm[i / nbackends], &A, b, 3);
    free(b);
    ks_csr_free(&A);
}
END_TEST

/* Bad input: clear errors, nothing solved. */
START_TEST(many_errors)
{
    ks_backend *be, *be2;
    ks_matrix *M;
    ks_solver *s;
    ks_solver_params prm;
    ks_csr A;
    make_matrix(6, 0, &A);
    ks_int n = A.nrows;
    KS_CHECK(ks_backend_create("cpu", &be));
    KS_CHECK(ks_backend_create("cpu", &be2));
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    method md = {"PCG", "JACOBI", NULL, NULL};
    params_of(&md, &prm);
    KS_CHECK(ks_solver_create_params(be, &prm, &s));
    ks_block *B2, *X2, *X3, *Bs, *Bo;
    KS_CHECK(ks_block_create(be, n, 2, &B2));
    KS_CHECK(ks_block_create(be, n, 2, &X2));
    KS_CHECK(ks_block_create(be, n, 3, &X3));
    KS_CHECK(ks_block_create(be, n - 1, 2, &Bs));
    KS_CHECK(ks_block_create(be2, n, 2, &Bo));
    KS_CHECK(ks_block_fill(B2, 1.0));
    KS_CHECK(ks_block_fill(X2, 0.0));
    /* no setup yet */
    ck_assert_int_eq(ks_solver_solve_many(s, B2, X2), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "ks_solver_setup"));
    KS_CHECK(ks_solver_setup(s, M));
    ck_assert_int_eq(ks_solver_stats_count(s), 0);
    ck_assert_int_eq(ks_solver_solve_many(s, B2, X3), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "B has 2 columns, X 3"));
    ck_assert_int_eq(ks_solver_solve_many(s, Bs, X2), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "size mismatch"));
    ck_assert_int_eq(ks_solver_solve_many(s, Bo, X2), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "backend"));
    ck_assert_int_eq(ks_solver_solve_many(s, B2, B2), KS_ERR_ARG);
    ck_assert_int_eq(ks_solver_solve_many(s, NULL, X2), KS_ERR_ARG);
    ck_assert_int_eq(ks_solver_solve_many(NULL, B2, X2), KS_ERR_ARG);
    ck_assert_ptr_null(ks_solver_stats_column(NULL, 0));
    ck_assert_int_eq(ks_solver_stats_count(NULL), 0);
    KS_CHECK(ks_solver_solve_many(s, B2, X2));
    ck_assert_int_eq(ks_solver_stats_count(s), 2);
    ck_assert_ptr_null(ks_solver_stats_column(s, -1));
    ks_block_destroy(&B2);
    ks_block_destroy(&X2);
    ks_block_destroy(&X3);
    ks_block_destroy(&Bs);
    ks_block_destroy(&Bo);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    ks_backend_destroy(&be2);
    ks_csr_free(&A);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("many");
    TCase *tc = tcase_create("many");
    tcase_set_timeout(tc, 120);
    if (ks_test_have_cuda())
        nbackends = 2;
    else
        ks_test_skip(NMETHODS + 5, "no CUDA device: the cuda backend's block solves");
    tcase_add_loop_test(tc, many_equals_singles, 0, NMETHODS * nbackends);
    tcase_add_loop_test(tc, many_breakdown_column, 0, 3 * nbackends);
    tcase_add_loop_test(tc, many_gmres_waits, 0, 2 * nbackends);
    tcase_add_test(tc, many_errors);
    suite_add_tcase(su, tc);
    return ks_test_run(su);
}
