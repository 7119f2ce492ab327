/* Krylov solvers and point preconditioners: convergence on generated
 * problems against a known solution, every convergence criterion and norm,
 * each way a solve can stop (max_iters, breakdown, NaN, divergence, b = 0),
 * argument and setup errors, the residual history and monitor output, and
 * CPU/CUDA agreement. Loop tests run once per backend (index 0 cpu, 1 cuda). */
#include "ks_test.h"
#include "solver/solver_create.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int nbackends = 1;
static const char *const backend_names[] = {"cpu", "cuda"};

typedef struct prob {
    ks_backend *be;
    ks_csr A;
    ks_matrix *M;
    ks_vec *b, *x;
    double *xk; /* known solution, b = A xk */
    double *bh; /* b on the host */
    ks_int n;
} prob;

/* Takes ownership of *A. */
static void prob_from_csr(prob *p, const char *backend, ks_csr *A)
{
    memset(p, 0, sizeof *p);
    p->A = *A;
    memset(A, 0, sizeof *A);
    p->n = p->A.nrows;
    KS_CHECK(ks_backend_create(backend, &p->be));
    KS_CHECK(ks_matrix_create(p->be, &p->A, "auto", NULL, &p->M));
    p->xk = malloc((size_t)p->n * sizeof(double));
    p->bh = malloc((size_t)p->n * sizeof(double));
    ck_assert(p->xk && p->bh);
    for (ks_int i = 0; i < p->n; i++)
        p->xk[i] = 1.0 + 0.5 * sin(0.37 * i);
    ks_csr_spmv_ref(&p->A, 1.0, p->xk, 0.0, p->bh);
    KS_CHECK(ks_vec_create(p->be, p->n, &p->b));
    KS_CHECK(ks_vec_create(p->be, p->n, &p->x));
    KS_CHECK(ks_vec_set_host(p->b, p->bh));
    KS_CHECK(ks_vec_fill(p->x, 0.0));
}

static void gen_csr(ks_gen_kind kind, int nx, int ny, int nz, ks_csr *A)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = kind;
    g.nx = nx;
    g.ny = ny;
    g.nz = nz;
    KS_CHECK(ks_generate(&g, A));
}

static void prob_gen(prob *p, const char *backend, ks_gen_kind kind, int nx, int ny, int nz)
{
    ks_csr A;
    gen_csr(kind, nx, ny, nz, &A);
    prob_from_csr(p, backend, &A);
}

static void prob_free(prob *p)
{
    ks_vec_destroy(&p->b);
    ks_vec_destroy(&p->x);
    ks_matrix_destroy(&p->M);
    ks_backend_destroy(&p->be);
    ks_csr_free(&p->A);
    free(p->xk);
    free(p->bh);
}

static void params(ks_solver_params *prm, const char *solver, const char *pc)
{
    ks_solver_params_default(prm);
    snprintf(prm->solver, sizeof prm->solver, "%s", solver);
    snprintf(prm->pc.solver, sizeof prm->pc.solver, "%s", pc);
}

static const ks_solve_stats *run(prob *p, const ks_solver_params *prm, ks_solver **s)
{
    KS_CHECK(ks_solver_create_params(p->be, prm, s));
    KS_CHECK(ks_solver_setup(*s, p->M));
    KS_CHECK(ks_solver_solve(*s, p->b, p->x));
    const ks_solve_stats *st = ks_solver_stats(*s);
    ck_assert(st != NULL);
    return st;
}

static double *get_x(prob *p)
{
    double *x = malloc((size_t)p->n * sizeof(double));
    ck_assert(x);
    KS_CHECK(ks_vec_get_host(p->x, x));
    return x;
}

static double hnorm(const double *v, ks_int n, ks_norm_kind k)
{
    double s = 0.0;
    for (ks_int i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (k == KS_NORM_L1)
            s += a;
        else if (k == KS_NORM_L2)
            s += a * a;
        else if (a > s)
            s = a;
    }
    return k == KS_NORM_L2 ? sqrt(s) : s;
}

/* Host residual b - A x into a fresh array. */
static double *host_residual(prob *p, const double *x)
{
    double *r = malloc((size_t)p->n * sizeof(double));
    ck_assert(r);
    memcpy(r, p->bh, (size_t)p->n * sizeof(double));
    ks_csr_spmv_ref(&p->A, -1.0, x, 1.0, r);
    return r;
}

/* Converged to 1e-8 with a trustworthy true residual and a solution close
 * to the known one (error <= cond * residual; the bounds leave margin). */
static void check_converged(prob *p, const ks_solve_stats *st, double xtol)
{
    ck_assert_msg(st->status == KS_SOLVE_CONVERGED, "status %s after %d its (%s)",
                  ks_solve_status_name(st->status), st->iterations, st->breakdown);
    ck_assert_msg(st->relative_residual < 1e-8, "relative residual %g", st->relative_residual);
    ck_assert_msg(st->true_relative_residual < 1e-7, "true relative residual %g",
                  st->true_relative_residual);
    ck_assert(st->iterations > 0);
    double *x = get_x(p);
    double err = ks_test_max_relerr(x, p->xk, p->n);
    ck_assert_msg(err < xtol, "solution error %g >= %g", err, xtol);
    /* The reported true residual matches one recomputed on the host. */
    double *r = host_residual(p, x);
    double tr = hnorm(r, p->n, KS_NORM_L2) / hnorm(p->bh, p->n, KS_NORM_L2);
    ck_assert_msg(fabs(tr - st->true_relative_residual) <= 0.05 * tr + 1e-15,
                  "true residual %g vs host %g", st->true_relative_residual, tr);
    free(r);
    free(x);
    ck_assert_int_eq(st->history_len, st->iterations + 1);
    ck_assert(st->history[0] == st->initial_residual);
    ck_assert(st->history[st->iterations] == st->final_residual);
}

/* ------------------------------------------------------- convergence */

START_TEST(cg_poisson3d)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 20, 20, 20);
    params(&prm, "CG", "JACOBI"); /* CG ignores the preconditioner */
    const ks_solve_stats *st = run(&p, &prm, &s);
    check_converged(&p, st, 1e-5);
    ck_assert_str_eq(ks_solver_name(s), "CG");
    ck_assert_str_eq(ks_solver_preconditioner_name(s), "NOSOLVER");
    ck_assert(st->setup_seconds >= 0.0 && st->solve_seconds > 0.0);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

START_TEST(pcg_jacobi_poisson2d)
{
    prob p;
    ks_solver *s, *s2;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON2D_5, 48, 48, 1);
    params(&prm, "PCG", "JACOBI");
    const ks_solve_stats *st = run(&p, &prm, &s);
    check_converged(&p, st, 1e-4);
    ck_assert_str_eq(ks_solver_preconditioner_name(s), "JACOBI");
    /* A constant diagonal makes Jacobi a scaling: PCG takes CG's path. */
    int its = st->iterations;
    KS_CHECK(ks_vec_fill(p.x, 0.0));
    params(&prm, "CG", "NOSOLVER");
    const ks_solve_stats *st2 = run(&p, &prm, &s2);
    ck_assert_msg(abs(st2->iterations - its) <= 1, "CG %d vs PCG+Jacobi %d its",
                  st2->iterations, its);
    ks_solver_destroy(&s);
    ks_solver_destroy(&s2);
    prob_free(&p);
}
END_TEST

START_TEST(pcg_jacobi_l1_poisson3d)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 20, 20, 20);
    params(&prm, "PCG", "JACOBI_L1");
    const ks_solve_stats *st = run(&p, &prm, &s);
    check_converged(&p, st, 1e-5);
    ck_assert_str_eq(ks_solver_preconditioner_name(s), "JACOBI_L1");
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

/* The preconditioner applied alone (ks_solver_precondition): Jacobi is
 * z = r ./ diag(A) exactly; the call's errors. */
START_TEST(precondition_alone)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON2D_5, 12, 12, 1);
    params(&prm, "PCG", "JACOBI");
    KS_CHECK(ks_solver_create_params(p.be, &prm, &s));
    ks_vec *z = NULL, *small = NULL;
    KS_CHECK(ks_vec_create(p.be, p.n, &z));
    KS_CHECK(ks_vec_create(p.be, p.n - 1, &small));
    ck_assert_int_eq(ks_solver_precondition(s, p.b, z), KS_ERR_ARG); /* before setup */
    KS_CHECK(ks_solver_setup(s, p.M));
    KS_CHECK(ks_solver_precondition(s, p.b, z));
    double *zh = malloc((size_t)p.n * sizeof *zh);
    ck_assert_ptr_nonnull(zh);
    KS_CHECK(ks_vec_get_host(z, zh));
    for (ks_int i = 0; i < p.n; i++)
        for (ks_int k = p.A.rowptr[i]; k < p.A.rowptr[i + 1]; k++)
            if (p.A.colind[k] == i)
                ck_assert(zh[i] == (1.0 / p.A.val[k]) * p.bh[i]);
    ck_assert_int_eq(ks_solver_precondition(s, p.b, small), KS_ERR_SIZE);
    ck_assert_int_eq(ks_solver_precondition(s, p.b, p.b), KS_ERR_ARG);
    ck_assert_int_eq(ks_solver_precondition(NULL, p.b, z), KS_ERR_ARG);
    free(zh);
    ks_vec_destroy(&z);
    ks_vec_destroy(&small);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

START_TEST(pcg_block_jacobi_alias_and_damping)
{
    prob p;
    ks_solver *s1, *s2, *s3;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_ANISO3D, 12, 12, 12);
    params(&prm, "PCG", "JACOBI");
    int its = run(&p, &prm, &s1)->iterations;
    KS_CHECK(ks_vec_fill(p.x, 0.0));
    params(&prm, "PCG", "BLOCK_JACOBI");
    const ks_solve_stats *st = run(&p, &prm, &s2);
    ck_assert_str_eq(ks_solver_preconditioner_name(s2), "JACOBI");
    ck_assert_int_eq(st->iterations, its);
    /* Damping scales M^{-1}; PCG is invariant under that up to rounding. */
    KS_CHECK(ks_vec_fill(p.x, 0.0));
    params(&prm, "PCG", "JACOBI");
    prm.pc.relaxation_factor = 0.5;
    st = run(&p, &prm, &s3);
    check_converged(&p, st, 1e-5);
    ck_assert_msg(abs(st->iterations - its) <= 1, "damped %d vs %d", st->iterations, its);
    ks_solver_destroy(&s1);
    ks_solver_destroy(&s2);
    ks_solver_destroy(&s3);
    prob_free(&p);
}
END_TEST

START_TEST(bicgstab_convdiff3d)
{
    static const char *const pcs[][2] = {{"PBICGSTAB", "JACOBI"},
                                         {"PBICGSTAB", "JACOBI_L1"},
                                         {"BICGSTAB", "JACOBI"}};
    for (int k = 0; k < 3; k++) {
        prob p;
        ks_solver *s;
        ks_solver_params prm;
        prob_gen(&p, backend_names[_i], KS_GEN_CONVDIFF3D, 16, 16, 16);
        params(&prm, pcs[k][0], pcs[k][1]);
        const ks_solve_stats *st = run(&p, &prm, &s);
        check_converged(&p, st, 1e-5);
        ck_assert_str_eq(ks_solver_name(s), pcs[k][0]);
        ck_assert_str_eq(ks_solver_preconditioner_name(s), k == 2 ? "NOSOLVER" : pcs[k][1]);
        ks_solver_destroy(&s);
        prob_free(&p);
    }
}
END_TEST

/* ------------------------------------------------ criteria and norms */

/* The solve stops at the first iteration meeting the criterion. */
static void check_first_hit(const ks_solve_stats *st, double bound)
{
    ck_assert_msg(st->status == KS_SOLVE_CONVERGED, "status %s",
                  ks_solve_status_name(st->status));
    ck_assert_msg(st->final_residual < bound, "final %g >= bound %g", st->final_residual,
                  bound);
    ck_assert(st->iterations >= 1);
    ck_assert_msg(st->history[st->iterations - 1] >= bound, "converged one iteration late");
}

START_TEST(criterion_absolute)
{
    for (int m = 0; m < 2; m++) {
        prob p;
        ks_solver *s;
        ks_solver_params prm;
        prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 12, 12, 12);
        params(&prm, m ? "PBICGSTAB" : "PCG", "JACOBI");
        prm.convergence = KS_CONV_ABSOLUTE;
        prm.tolerance = 1e-7 * hnorm(p.bh, p.n, KS_NORM_L2);
        const ks_solve_stats *st = run(&p, &prm, &s);
        check_first_hit(st, prm.tolerance);
        ck_assert(st->relative_residual == st->final_residual);
        double *x = get_x(&p), *r = host_residual(&p, x);
        double hr = hnorm(r, p.n, KS_NORM_L2);
        ck_assert_msg(hr < 2 * prm.tolerance, "host residual %g, tol %g", hr, prm.tolerance);
        free(x);
        free(r);
        ks_solver_destroy(&s);
        prob_free(&p);
    }
}
END_TEST

START_TEST(criterion_relative_ini)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 12, 12, 12);
    double *x0 = malloc((size_t)p.n * sizeof(double));
    for (ks_int i = 0; i < p.n; i++)
        x0[i] = p.xk[i] + 0.25 * cos(1.3 * i);
    KS_CHECK(ks_vec_set_host(p.x, x0));
    double *r0 = host_residual(&p, x0);
    double r0n = hnorm(r0, p.n, KS_NORM_L2);
    params(&prm, "PCG", "JACOBI");
    prm.convergence = KS_CONV_RELATIVE_INI;
    prm.tolerance = 1e-6;
    const ks_solve_stats *st = run(&p, &prm, &s);
    ck_assert_msg(fabs(st->initial_residual - r0n) <= 1e-10 * r0n, "||r0|| %g vs host %g",
                  st->initial_residual, r0n);
    check_first_hit(st, 1e-6 * r0n);
    ck_assert(fabs(st->relative_residual - st->final_residual / r0n) <=
              1e-10 * st->relative_residual);
    free(x0);
    free(r0);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

/* RELATIVE_RHS in each norm: the reported norms are the configured ones. */
START_TEST(criterion_relative_rhs_norms)
{
    static const ks_norm_kind norms[] = {KS_NORM_L1, KS_NORM_L2, KS_NORM_LMAX};
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 3; k++) {
            prob p;
            ks_solver *s;
            ks_solver_params prm;
            prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 12, 12, 12);
            params(&prm, m ? "PBICGSTAB" : "PCG", "JACOBI");
            prm.norm = norms[k];
            prm.tolerance = 1e-7;
            const ks_solve_stats *st = run(&p, &prm, &s);
            double bn = hnorm(p.bh, p.n, norms[k]);
            ck_assert_msg(fabs(st->rhs_norm - bn) <= 1e-12 * bn, "norm %d: ||b|| %g vs %g", k,
                          st->rhs_norm, bn);
            ck_assert(fabs(st->initial_residual - bn) <= 1e-12 * bn); /* x0 = 0 */
            check_first_hit(st, 1e-7 * bn);
            double *x = get_x(&p), *r = host_residual(&p, x);
            double hr = hnorm(r, p.n, norms[k]);
            ck_assert_msg(fabs(hr - st->final_residual) <= 0.05 * hr,
                          "norm %d: recurrence %g vs true %g", k, st->final_residual, hr);
            free(x);
            free(r);
            ks_solver_destroy(&s);
            prob_free(&p);
        }
    }
}
END_TEST

/* ---------------------------------------------------- stop statuses */

START_TEST(max_iters_status)
{
    for (int m = 0; m < 2; m++) {
        prob p;
        ks_solver *s;
        ks_solver_params prm;
        prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 12, 12, 12);
        params(&prm, m ? "PBICGSTAB" : "PCG", "JACOBI");
        prm.max_iters = 5;
        const ks_solve_stats *st = run(&p, &prm, &s);
        ck_assert_int_eq(st->status, KS_SOLVE_MAX_ITERS);
        ck_assert_int_eq(st->iterations, 5);
        ck_assert_int_eq(st->history_len, 6);
        ck_assert(st->final_residual < st->initial_residual);
        ck_assert(st->final_residual == st->history[5]);
        ks_solver_destroy(&s);
        /* max_iters 0: nothing moves. */
        prm.max_iters = 0;
        KS_CHECK(ks_vec_fill(p.x, 0.0));
        st = run(&p, &prm, &s);
        ck_assert_int_eq(st->status, KS_SOLVE_MAX_ITERS);
        ck_assert_int_eq(st->iterations, 0);
        ck_assert(fabs(st->true_relative_residual - 1.0) < 1e-12);
        ks_solver_destroy(&s);
        prob_free(&p);
    }
}
END_TEST

/* Poisson 2D with its diagonal 4 shifted to 1: symmetric, indefinite, and
 * with b = ones already b'Ab = sum(row sums) - 3n < 0 at iteration 1. */
START_TEST(cg_breakdown_indefinite)
{
    ks_csr A;
    gen_csr(KS_GEN_POISSON2D_5, 10, 10, 1, &A);
    double dmax = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            if (A.colind[k] == i && A.val[k] > dmax)
                dmax = A.val[k];
    for (ks_int i = 0; i < A.nrows; i++)
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            if (A.colind[k] == i)
                A.val[k] -= 0.75 * dmax;
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_from_csr(&p, backend_names[_i], &A);
    KS_CHECK(ks_vec_fill(p.b, 1.0));
    params(&prm, "CG", "NOSOLVER");
    const ks_solve_stats *st = run(&p, &prm, &s);
    ck_assert_msg(st->status == KS_SOLVE_BREAKDOWN, "status %s",
                  ks_solve_status_name(st->status));
    ck_assert_msg(strstr(st->breakdown, "p'Ap") && strstr(st->breakdown, "positive definite"),
                  "breakdown text: %s", st->breakdown);
    ck_assert_int_eq(st->iterations, 0);
    ck_assert_int_eq(st->history_len, 1);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

/* -A is symmetric negative definite: the Jacobi preconditioner is negative
 * definite too, so r'z < 0 at once. */
START_TEST(pcg_breakdown_preconditioner)
{
    ks_csr A;
    gen_csr(KS_GEN_POISSON2D_5, 10, 10, 1, &A);
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] = -A.val[k];
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_from_csr(&p, backend_names[_i], &A);
    params(&prm, "PCG", "JACOBI");
    const ks_solve_stats *st = run(&p, &prm, &s);
    ck_assert_int_eq(st->status, KS_SOLVE_BREAKDOWN);
    ck_assert_msg(strstr(st->breakdown, "r'z"), "breakdown text: %s", st->breakdown);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

/* NaN in b is bad data, not misuse: the solve runs, stops at once with
 * KS_SOLVE_NAN and still returns KS_OK (see ks_solver_solve's contract). */
START_TEST(nan_in_rhs)
{
    for (int m = 0; m < 2; m++) {
        prob p;
        ks_solver *s;
        ks_solver_params prm;
        prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 8, 8, 8);
        p.bh[17] = NAN;
        KS_CHECK(ks_vec_set_host(p.b, p.bh));
        params(&prm, m ? "PBICGSTAB" : "PCG", "JACOBI");
        const ks_solve_stats *st = run(&p, &prm, &s);
        ck_assert_int_eq(st->status, KS_SOLVE_NAN);
        ck_assert_int_eq(st->iterations, 0);
        ck_assert_msg(strstr(st->breakdown, "||b||"), "reason: %s", st->breakdown);
        ks_solver_destroy(&s);
        prob_free(&p);
    }
}
END_TEST

/* A huge (finite, still SPD) entry times a large b overflows A p to Inf in
 * the first iteration. */
START_TEST(overflow_gives_nan_status)
{
    for (int m = 0; m < 2; m++) {
        ks_csr A;
        gen_csr(KS_GEN_POISSON3D_7, 8, 8, 8, &A);
        for (ks_int k = A.rowptr[0]; k < A.rowptr[1]; k++)
            if (A.colind[k] == 0)
                A.val[k] = 1e300;
        prob p;
        ks_solver *s;
        ks_solver_params prm;
        prob_from_csr(&p, backend_names[_i], &A);
        KS_CHECK(ks_vec_fill(p.b, 1e10));
        params(&prm, m ? "BICGSTAB" : "CG", "NOSOLVER");
        const ks_solve_stats *st = run(&p, &prm, &s);
        ck_assert_msg(st->status == KS_SOLVE_NAN, "status %s (%s)",
                      ks_solve_status_name(st->status), st->breakdown);
        ck_assert(st->breakdown[0] != '\0');
        ks_solver_destroy(&s);
        prob_free(&p);
    }
}
END_TEST

/* b scaled by 1e200 (its squares overflow) or 1e-200 (they underflow)
 * solves: x scales by the same factor, the iteration count is the one of the
 * unscaled b, and the reported norms are the true (unscaled) ones. */
START_TEST(huge_and_tiny_rhs_solve)
{
    static const double factors[] = {1e200, 1e-200};
    static const char *const krylov[] = {"PCG", "PBICGSTAB"};
    for (int m = 0; m < 2; m++) {
        for (int f = 0; f < 2; f++) {
            prob p;
            ks_solver *s;
            ks_solver_params prm;
            prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 8, 8, 8);
            params(&prm, krylov[m], "JACOBI");
            const ks_solve_stats *st = run(&p, &prm, &s);
            ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
            int its = st->iterations;
            double rhs = st->rhs_norm, fin = st->final_residual;
            double *x1 = get_x(&p);
            for (ks_int i = 0; i < p.n; i++)
                p.bh[i] *= factors[f];
            KS_CHECK(ks_vec_set_host(p.b, p.bh));
            KS_CHECK(ks_vec_fill(p.x, 0.0));
            KS_CHECK(ks_solver_solve(s, p.b, p.x));
            ck_assert_msg(st->status == KS_SOLVE_CONVERGED, "%s b*%g: status %s (%s)", krylov[m],
                          factors[f], ks_solve_status_name(st->status), st->breakdown);
            ck_assert_int_eq(st->iterations, its);
            ck_assert_msg(fabs(st->rhs_norm / (rhs * factors[f]) - 1) < 1e-12, "||b|| %g",
                          st->rhs_norm);
            ck_assert(fabs(st->final_residual / (fin * factors[f]) - 1) < 1e-6);
            ck_assert(st->history[0] == st->initial_residual);
            ck_assert(st->true_relative_residual < 1e-7);
            double *x2 = get_x(&p);
            for (ks_int i = 0; i < p.n; i++)
                ck_assert_msg(fabs(x2[i] / factors[f] - x1[i]) <= 1e-12 * fabs(x1[i]),
                              "x[%d] = %g, unscaled %g", (int)i, x2[i], x1[i]);
            free(x1);
            free(x2);
            ks_solver_destroy(&s);
            prob_free(&p);
        }
    }
}
END_TEST

START_TEST(divergence_status)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 8, 8, 8);
    params(&prm, "PCG", "JACOBI");
    /* Any residual above 1e-30 * ||r0|| counts as divergence: iteration 1
     * must trip it, iteration 0 must not. */
    prm.divergence_factor = 1e-30;
    const ks_solve_stats *st = run(&p, &prm, &s);
    ck_assert_int_eq(st->status, KS_SOLVE_DIVERGED);
    ck_assert_int_eq(st->iterations, 1);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

START_TEST(zero_rhs_gives_zero_solution)
{
    static const ks_conv_kind crit[] = {KS_CONV_ABSOLUTE, KS_CONV_RELATIVE_INI,
                                        KS_CONV_RELATIVE_RHS};
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 3; k++) {
            prob p;
            ks_solver *s;
            ks_solver_params prm;
            prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 6, 6, 6);
            KS_CHECK(ks_vec_fill(p.b, 0.0));
            KS_CHECK(ks_vec_fill(p.x, 3.0));
            params(&prm, m ? "PBICGSTAB" : "PCG", "JACOBI");
            prm.convergence = crit[k];
            const ks_solve_stats *st = run(&p, &prm, &s);
            ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
            ck_assert_int_eq(st->iterations, 0);
            ck_assert_int_eq(st->history_len, 1);
            ck_assert(st->true_relative_residual == 0.0);
            double *x = get_x(&p);
            for (ks_int i = 0; i < p.n; i++)
                ck_assert(x[i] == 0.0);
            free(x);
            ks_solver_destroy(&s);
            prob_free(&p);
        }
    }
}
END_TEST

/* A second solve from the exact x needs no iteration; stats are reset. */
START_TEST(resolve_from_solution)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 10, 10, 10);
    params(&prm, "PCG", "JACOBI_L1");
    const ks_solve_stats *st = run(&p, &prm, &s);
    ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
    ck_assert(st->iterations > 0);
    KS_CHECK(ks_vec_set_host(p.x, p.xk));
    KS_CHECK(ks_solver_solve(s, p.b, p.x));
    ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
    ck_assert_int_eq(st->iterations, 0);
    ck_assert_int_eq(st->history_len, 1);
    ck_assert(st->breakdown[0] == '\0');
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

/* -------------------------------------------------------- errors */

static ks_csr small_csr(int missing_diag)
{
    /* 3x3 tridiagonal; row 1 has a zero diagonal or none stored. */
    ks_int row[] = {0, 0, 1, 1, 1, 2, 2};
    ks_int col[] = {0, 1, 0, 1, 2, 1, 2};
    double val[] = {2, -1, -1, 0, -1, -1, 2};
    ks_int nr[] = {0, 0, 1, 1, 2, 2};
    ks_int nc[] = {0, 1, 0, 2, 1, 2};
    double nv[] = {2, -1, -1, -1, -1, 2};
    ks_csr A;
    if (missing_diag)
        KS_CHECK(ks_csr_from_coo(3, 3, 6, nr, nc, nv, &A, NULL));
    else
        KS_CHECK(ks_csr_from_coo(3, 3, 7, row, col, val, &A, NULL));
    return A;
}

/* Every destroy nulls the handle, so a second destroy is a no-op (a double
 * free here would crash the forked test). */
START_TEST(destroy_twice_is_noop)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    ks_csr A;
    gen_csr(KS_GEN_POISSON3D_7, 4, 4, 4, &A);
    ks_matrix *M = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "csr", NULL, &M));
    ks_csr_free(&A);
    ks_vec *v = NULL;
    KS_CHECK(ks_vec_create(be, 64, &v));
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    ks_solver *sv = NULL;
    KS_CHECK(ks_solver_create(be, cfg, &sv));
    KS_CHECK(ks_solver_setup(sv, M));
    for (int round = 0; round < 2; round++) {
        ks_solver_destroy(&sv);
        ks_config_destroy(&cfg);
        ks_vec_destroy(&v);
        ks_matrix_destroy(&M);
        ck_assert_ptr_null(sv);
        ck_assert_ptr_null(cfg);
        ck_assert_ptr_null(v);
        ck_assert_ptr_null(M);
    }
    ks_backend_destroy(&be);
    ks_backend_destroy(&be);
    ck_assert_ptr_null(be);
    ks_solver_destroy(NULL);
    ks_matrix_destroy(NULL);
}
END_TEST

START_TEST(zero_diagonal_is_setup_error)
{
    static const char *const pcs[] = {"JACOBI", "JACOBI_L1"};
    for (int missing = 0; missing < 2; missing++) {
        for (int k = 0; k < 2; k++) {
            ks_csr A = small_csr(missing);
            prob p;
            ks_solver *s;
            ks_solver_params prm;
            prob_from_csr(&p, backend_names[_i], &A);
            params(&prm, "PCG", pcs[k]);
            KS_CHECK(ks_solver_create_params(p.be, &prm, &s));
            ks_error e = ks_solver_setup(s, p.M);
            ck_assert_int_eq(e, KS_ERR_NUMERIC);
            ck_assert_msg(strstr(ks_last_error(), "zero diagonal at row 1"), "message: %s",
                          ks_last_error());
            /* Unusable until a setup succeeds. */
            ck_assert_int_eq(ks_solver_solve(s, p.b, p.x), KS_ERR_ARG);
            ks_solver_destroy(&s);
            prob_free(&p);
        }
    }
}
END_TEST

START_TEST(size_and_argument_errors)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    ks_vec *big, *small;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON2D_5, 6, 6, 1);
    params(&prm, "PCG", "JACOBI");
    KS_CHECK(ks_solver_create_params(p.be, &prm, &s));
    ck_assert_int_eq(ks_solver_solve(s, p.b, p.x), KS_ERR_ARG); /* before setup */
    KS_CHECK(ks_solver_setup(s, p.M));
    KS_CHECK(ks_vec_create(p.be, p.n + 1, &big));
    KS_CHECK(ks_vec_create(p.be, p.n - 1, &small));
    ck_assert_int_eq(ks_solver_solve(s, big, p.x), KS_ERR_SIZE);
    ck_assert_msg(strstr(ks_last_error(), "size"), "%s", ks_last_error());
    ck_assert_int_eq(ks_solver_solve(s, p.b, small), KS_ERR_SIZE);
    ck_assert_int_eq(ks_solver_solve(s, p.b, p.b), KS_ERR_ARG);
    ck_assert_int_eq(ks_solver_solve(s, NULL, p.x), KS_ERR_ARG);
    ks_vec_destroy(&big);
    ks_vec_destroy(&small);
    ks_solver_destroy(&s);

    /* A rectangular matrix cannot be set up. */
    ks_int r[] = {0, 1}, c[] = {0, 3};
    double v[] = {1, 1};
    ks_csr R;
    ks_matrix *MR;
    KS_CHECK(ks_csr_from_coo(2, 4, 2, r, c, v, &R, NULL));
    KS_CHECK(ks_matrix_create(p.be, &R, "auto", NULL, &MR));
    KS_CHECK(ks_solver_create_params(p.be, &prm, &s));
    ck_assert_int_eq(ks_solver_setup(s, MR), KS_ERR_SIZE);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&MR);
    ks_csr_free(&R);
    prob_free(&p);
}
END_TEST

/* A failed setup of any kind drops the previous one: the solve that follows
 * fails, naming the missing setup, instead of solving the old system. */
START_TEST(failed_setup_clears_previous)
{
    prob p;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON2D_5, 6, 6, 1);
    ks_int r[] = {0, 1}, c[] = {0, 3};
    double v[] = {1, 1};
    ks_csr R, Z = small_csr(0);
    ks_matrix *MR, *MZ, *Mother;
    ks_backend *other;
    KS_CHECK(ks_csr_from_coo(2, 4, 2, r, c, v, &R, NULL));
    KS_CHECK(ks_matrix_create(p.be, &R, "auto", NULL, &MR));
    KS_CHECK(ks_matrix_create(p.be, &Z, "auto", NULL, &MZ));
    KS_CHECK(ks_backend_create(backend_names[_i], &other));
    KS_CHECK(ks_matrix_create(other, &p.A, "auto", NULL, &Mother));
    for (int pcs = 0; pcs < 2; pcs++) {
        params(&prm, "PCG", pcs ? "AMG" : "JACOBI");
        /* a zero diagonal fails JACOBI's setup (AMG may solve a 3x3 directly) */
        for (int how = 0; how < (pcs ? 3 : 4); how++) {
            ks_solver *s;
            KS_CHECK(ks_solver_create_params(p.be, &prm, &s));
            KS_CHECK(ks_solver_setup(s, p.M));
            KS_CHECK(ks_solver_solve(s, p.b, p.x));
            ks_error e = ks_solver_setup(s, how == 0 ? MR : how == 1 ? Mother
                                                 : how == 2 ? NULL : MZ);
            ck_assert_int_eq(e, how == 0 ? KS_ERR_SIZE : how == 3 ? KS_ERR_NUMERIC : KS_ERR_ARG);
            ck_assert_int_eq(ks_solver_solve(s, p.b, p.x), KS_ERR_ARG);
            ck_assert_msg(strstr(ks_last_error(), "no matrix"), "%s", ks_last_error());
            ck_assert_int_eq(ks_solver_precondition(s, p.b, p.x), KS_ERR_ARG);
            /* A setup that succeeds makes it usable again. */
            KS_CHECK(ks_solver_setup(s, p.M));
            KS_CHECK(ks_vec_fill(p.x, 0.0));
            KS_CHECK(ks_solver_solve(s, p.b, p.x));
            ck_assert_int_eq(ks_solver_stats(s)->status, KS_SOLVE_CONVERGED);
            ks_solver_destroy(&s);
        }
    }
    ks_matrix_destroy(&Mother);
    ks_backend_destroy(&other);
    ks_matrix_destroy(&MR);
    ks_matrix_destroy(&MZ);
    ks_csr_free(&R);
    ks_csr_free(&Z);
    prob_free(&p);
}
END_TEST

START_TEST(config_errors)
{
    ks_backend *be;
    ks_solver *s = (ks_solver *)1;
    ks_solver_params prm;
    KS_CHECK(ks_backend_create("cpu", &be));
    params(&prm, "IDRS", "JACOBI");
    ck_assert_int_eq(ks_solver_create_params(be, &prm, &s), KS_ERR_CONFIG);
    ck_assert(s == NULL);
    ck_assert_msg(strstr(ks_last_error(), "solver.solver") && strstr(ks_last_error(), "IDRS"),
                  "%s", ks_last_error());
    params(&prm, "PCG", "ILU0");
    ck_assert_int_eq(ks_solver_create_params(be, &prm, &s), KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "preconditioner.solver") &&
                      strstr(ks_last_error(), "ILU0"),
                  "%s", ks_last_error());
    params(&prm, "PCG", "JACOBI");
    prm.max_iters = -1;
    ck_assert_int_eq(ks_solver_create_params(be, &prm, &s), KS_ERR_CONFIG);
    params(&prm, "PCG", "JACOBI");
    prm.tolerance = NAN;
    ck_assert_int_eq(ks_solver_create_params(be, &prm, &s), KS_ERR_CONFIG);
    /* Unpreconditioned BICGSTAB ignores the configured preconditioner, even an
     * unknown one. */
    params(&prm, "BICGSTAB", "ILU0");
    KS_CHECK(ks_solver_create_params(be, &prm, &s));
    ck_assert_str_eq(ks_solver_preconditioner_name(s), "NOSOLVER");
    ck_assert_int_eq(ks_solver_stats(s)->status, KS_SOLVE_NOT_RUN);
    ks_solver_destroy(&s);
    ks_backend_destroy(&be);
}
END_TEST

START_TEST(status_names)
{
    ck_assert_str_eq(ks_solve_status_name(KS_SOLVE_CONVERGED), "CONVERGED");
    ck_assert_str_eq(ks_solve_status_name(KS_SOLVE_MAX_ITERS), "MAX_ITERS");
    ck_assert_str_eq(ks_solve_status_name(KS_SOLVE_BREAKDOWN), "BREAKDOWN");
    ck_assert_str_eq(ks_solve_status_name(KS_SOLVE_DIVERGED), "DIVERGED");
    ck_assert_str_eq(ks_solve_status_name(KS_SOLVE_NAN), "NAN");
    ck_assert_str_eq(ks_solve_status_name(KS_SOLVE_NOT_RUN), "NOT_RUN");
}
END_TEST

/* ------------------------------------------- history and monitor */

START_TEST(history_cg_spd)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 16, 16, 16);
    params(&prm, "PCG", "JACOBI");
    const ks_solve_stats *st = run(&p, &prm, &s);
    ck_assert_int_eq(st->history_len, st->iterations + 1);
    /* CG minimises the A-norm of the error, not ||r||_2, so the residual
     * may rise a little; it must never rise far above its best so far. */
    double best = st->history[0];
    for (int k = 1; k < st->history_len; k++) {
        ck_assert_msg(st->history[k] < 10 * best, "history[%d] = %g, best before %g", k,
                      st->history[k], best);
        if (st->history[k] < best)
            best = st->history[k];
    }
    ck_assert(st->history[st->iterations] < 1e-8 * st->history[0]);
    ks_solver_destroy(&s);

    /* store_res_history off: no history. */
    prm.store_res_history = 0;
    KS_CHECK(ks_vec_fill(p.x, 0.0));
    st = run(&p, &prm, &s);
    ck_assert(st->history == NULL && st->history_len == 0);
    ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

START_TEST(monitor_and_stats_output)
{
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_gen(&p, backend_names[_i], KS_GEN_POISSON3D_7, 8, 8, 8);
    params(&prm, "PCG", "JACOBI");
    prm.monitor_residual = 1;
    prm.print_solve_stats = 1;
    const char *path = ks_test_tmpfile(".txt");
    fflush(stdout);
    int saved = dup(1);
    FILE *f = fopen(path, "w");
    ck_assert(f && saved >= 0);
    dup2(fileno(f), 1);
    const ks_solve_stats *st = run(&p, &prm, &s);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    fclose(f);

    f = fopen(path, "r");
    ck_assert(f);
    char line[512];
    int nlines = 0, rows = 0, header = 0, summary = 0;
    while (fgets(line, sizeof line, f)) {
        nlines++;
        int it;
        double res;
        if (strstr(line, "iter") && strstr(line, "residual") && strstr(line, "rate"))
            header++;
        else if (sscanf(line, "%d %lg", &it, &res) == 2 && it == rows) {
            ck_assert_msg(fabs(res - st->history[it]) <= 1e-6 * st->history[it], "%s", line);
            rows++;
        }
        if (strstr(line, "CONVERGED"))
            summary++;
    }
    fclose(f);
    unlink(path);
    ck_assert_int_eq(header, 1);
    ck_assert_int_eq(rows, st->iterations + 1);
    ck_assert_int_eq(summary, 1);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

/* ---------------------------------------------- cross-backend, real */

START_TEST(cpu_cuda_agree)
{
    static const char *const sv[] = {"PCG", "PBICGSTAB"};
    for (int m = 0; m < 2; m++) {
        int its[2];
        for (int b = 0; b < 2; b++) {
            prob p;
            ks_solver *s;
            ks_solver_params prm;
            prob_gen(&p, backend_names[b], m ? KS_GEN_CONVDIFF3D : KS_GEN_POISSON3D_7, 20, 20,
                     20);
            params(&prm, sv[m], "JACOBI");
            const ks_solve_stats *st = run(&p, &prm, &s);
            ck_assert_int_eq(st->status, KS_SOLVE_CONVERGED);
            its[b] = st->iterations;
            ks_solver_destroy(&s);
            prob_free(&p);
        }
        ck_assert_msg(abs(its[0] - its[1]) <= 1, "%s: cpu %d its, cuda %d its", sv[m], its[0],
                      its[1]);
    }
}
END_TEST

START_TEST(fv1_pcg_jacobi)
{
    const char *path = ks_test_shared_matrix("fv1.mtx.gz");
    ck_assert(path);
    ks_csr A;
    KS_CHECK(ks_mm_read_csr(path, &A, NULL));
    prob p;
    ks_solver *s;
    ks_solver_params prm;
    prob_from_csr(&p, backend_names[_i], &A);
    params(&prm, "PCG", "JACOBI");
    const ks_solve_stats *st = run(&p, &prm, &s);
    check_converged(&p, st, 1e-4);
    printf("fv1 (%s): PCG + JACOBI converged in %d iterations, true relative residual %.2e\n",
           backend_names[_i], st->iterations, st->true_relative_residual);
    ks_solver_destroy(&s);
    prob_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("solver");
    TCase *tc = tcase_create("solver");
    int nloop = 0;
    nbackends = ks_test_have_cuda() ? 2 : 1;
#define LOOP(fn)                                          \
    do {                                                  \
        tcase_add_loop_test(tc, fn, 0, nbackends);        \
        nloop++;                                          \
    } while (0)
    LOOP(cg_poisson3d);
    LOOP(pcg_jacobi_poisson2d);
    LOOP(pcg_jacobi_l1_poisson3d);
    LOOP(pcg_block_jacobi_alias_and_damping);
    LOOP(precondition_alone);
    LOOP(bicgstab_convdiff3d);
    LOOP(criterion_absolute);
    LOOP(criterion_relative_ini);
    LOOP(criterion_relative_rhs_norms);
    LOOP(max_iters_status);
    LOOP(cg_breakdown_indefinite);
    LOOP(pcg_breakdown_preconditioner);
    LOOP(nan_in_rhs);
    LOOP(overflow_gives_nan_status);
    LOOP(divergence_status);
    LOOP(huge_and_tiny_rhs_solve);
    LOOP(zero_rhs_gives_zero_solution);
    LOOP(resolve_from_solution);
    LOOP(zero_diagonal_is_setup_error);
    LOOP(size_and_argument_errors);
    LOOP(failed_setup_clears_previous);
    LOOP(history_cg_spd);
    LOOP(monitor_and_stats_output);
    tcase_add_test(tc, config_errors);
    tcase_add_test(tc, status_names);
    tcase_add_test(tc, destroy_twice_is_noop);
    int have_fv1 = ks_test_shared_matrix("fv1.mtx.gz") != NULL;
    if (have_fv1)
        LOOP(fv1_pcg_jacobi);
    else
        ks_test_skip(1, "fv1.mtx.gz not in ../shared/matrices");
    if (nbackends == 2) {
        tcase_add_test(tc, cpu_cuda_agree);
    } else {
        ks_test_skip(nloop, "no CUDA device: solver tests on the cuda backend");
        ks_test_skip(1, "no CUDA device: cpu/cuda iteration agreement");
    }
#undef LOOP
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
