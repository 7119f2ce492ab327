/* GMRES, FGMRES, PIPECG and PIPEBICGSTAB over MPI ranks (run under mpirun
 * on 1 to 4 ranks): the one-process iteration count (within 1) and
 * solution (to 1e-8), with even row blocks and with a rank that holds no
 * rows; and the block dot product over ranks: every rank gets the same
 * bits, the one-process values to rounding, from one reduction. */
#include "ks_test_mpi.h"
#include "vec/vec_fused.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* This rank's row count: even blocks, or (3 ranks or more) rank 1 empty. */
static ks_int my_rows(int64_t n, int empty_rank)
{
    if (!empty_rank || nranks < 3)
        return (ks_int)(n / nranks + (rank < n % nranks));
    if (rank == 1)
        return 0;
    int holders = nranks - 1, idx = rank == 0 ? 0 : rank - 1;
    return (ks_int)(n / holders + (idx < n % holders));
}

typedef struct result {
    ks_solve_status status;
    int iterations;
    long long reductions; /* over the ranks, during ks_solver_solve */
    double *x;
} result;

/* The tolerance of solve(): what a badly scaled problem can reach (the
 * fallback test's) or 1e-11 (the others'). */
static const char *solve_tol = "1e-11";

static void solve(ks_matrix *M, const char *solver, const char *pc, int restart, result *o)
{
    ks_config *cfg = NULL;
    KS_ALL(ks_config_create_default(&cfg));
    KS_ALL(ks_config_set(cfg, "solver.solver", solver));
    KS_ALL(ks_config_set(cfg, "solver.preconditioner.solver", pc));
    KS_ALL(ks_config_set(cfg, "solver.tolerance", solve_tol));
    KS_ALL(ks_config_set(cfg, "solver.max_iters", "2000"));
    if (restart) {
        char v[16];
        snprintf(v, sizeof v, "%d", restart);
        KS_ALL(ks_config_set(cfg, "solver.gmres_n_restart", v));
    }
    ks_solver *s = NULL;
    ks_vec *b = NULL, *x = NULL;
    KS_ALL(ks_solver_create(ks_matrix_backend(M), cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_matrix_vec_create(M, &x));
    ks_int n = ks_matrix_rows(M);
    ks_test_dist_rhs(b);
    KS_ALL(ks_vec_fill(x, 0.0));
    ks_comm_reset_stats(comm);
    KS_ALL(ks_solver_solve(s, b, x));
    ks_comm_stats cs;
    KS_ALL(ks_comm_get_stats(comm, &cs));
    o->reductions = cs.reductions;
    o->status = ks_solver_stats(s)->status;
    o->iterations = ks_solver_stats(s)->iterations;
    o->x = malloc(((size_t)n + 1) * sizeof *o->x);
    KS_ALL(ks_vec_get_host(x, o->x));
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
}

/* The one-process solve on the cpu against the distributed one on dbe. */
static void compare_on(ks_backend *dbe, const ks_gen_params *g, const char *solver,
                       const char *pc, int restart, int empty_rank)
{
    ks_csr A;
    KS_ALL(ks_generate(g, &A));
    ks_matrix *S = NULL, *M = NULL;
    KS_ALL(ks_matrix_create(be, &A, "auto", NULL, &S));
    result one, dis;
    solve(S, solver, pc, restart, &one);
    ks_dist_csr D;
    KS_ALL(ks_generate_dist(comm, g, my_rows((int64_t)A.nrows, empty_rank), &D));
    KS_ALL(ks_matrix_create_dist(dbe, comm, D.nrows, D.ncols_global, D.rowptr, D.colind,
                                 D.val, "auto", NULL, &M));
    ks_dist_csr_free(&D);
    solve(M, solver, pc, restart, &dis);
    double err = ks_test_max_relerr(dis.x, one.x + ks_matrix_row_begin(M), ks_matrix_rows(M));
    ALL(one.status == KS_SOLVE_CONVERGED && dis.status == KS_SOLVE_CONVERGED &&
            abs(one.iterations - dis.iterations) <= 1 && err <= 1e-8,
        "%s %s + %s on %d ranks (%s): one process %s in %d, distributed %s in %d, error %g",
        ks_gen_kind_name(g->kind), solver, pc, nranks, ks_backend_name(dbe),
        ks_solve_status_name(one.status),
        one.iterations, ks_solve_status_name(dis.status), dis.iterations, err);
    if (rank == 0)
        printf("%s %s + %s, %d ranks on %s%s: %lld reductions, %d iterations (one process "
               "%d)\n",
               ks_gen_kind_name(g->kind), solver, pc, nranks, ks_backend_name(dbe),
               empty_rank ? ", one empty" : "", dis.reductions,
               dis.iterations, one.iterations);
    free(one.x);
    free(dis.x);
    ks_matrix_destroy(&M);
    ks_matrix_destroy(&S);
    ks_csr_free(&A);
}

static void compare(const ks_gen_params *g, const char *solver, const char *pc, int restart,
                    int empty_rank)
{
    compare_on(be, g, solver, pc, restart, empty_rank);
}

static void grid(ks_gen_params *g, ks_gen_kind kind, int n)
{
    ks_gen_params_default(g);
    g->kind = kind;
    g->nx = g->ny = g->nz = n;
    if (kind == KS_GEN_CONVDIFF3D) {
        g->vx = 8.0;
        g->vy = -4.0;
        g->vz = 2.0;
    }
}

START_TEST(test_gmres_fgmres)
{
    ks_gen_params g;
    grid(&g, KS_GEN_CONVDIFF3D, 10);
    compare(&g, "GMRES", "JACOBI", 10, 0);
    compare(&g, "GMRES", "NOSOLVER", 0, 1);
    compare(&g, "FGMRES", "JACOBI_L1", 8, 1);
}
END_TEST

/* The reductions a distributed solve makes, against the iterations: PCG
 * three per iteration, PIPECG one; PBICGSTAB five, PIPEBICGSTAB two; GMRES
 * two (one per Gram-Schmidt pass). The rest is the solve's frame (||b||,
 * ||r0||, the scaling check, the true residual after the solve) and the
 * methods' occasional extras (replacements, restarts). */
START_TEST(test_reduction_counts)
{
    static const struct {
        const char *solver;
        ks_gen_kind kind;
        double per_it; /* at most this many per iteration, plus `extra` */
        double at_least;
    } m[] = {
        {"PCG", KS_GEN_POISSON3D_7, 3.0, 3.0},
        {"PIPECG", KS_GEN_POISSON3D_7, 1.0, 1.0},
        {"PBICGSTAB", KS_GEN_CONVDIFF3D, 5.0, 5.0},
        {"PIPEBICGSTAB", KS_GEN_CONVDIFF3D, 2.0, 2.0},
        {"GMRES", KS_GEN_CONVDIFF3D, 2.0, 2.0},
        {"FGMRES", KS_GEN_CONVDIFF3D, 2.0, 2.0},
    };
    const long long extra = 12;
    for (int i = 0; i < (int)(sizeof m / sizeof m[0]); i++) {
        ks_gen_params g;
        grid(&g, m[i].kind, 10);
        ks_dist_csr D;
        KS_ALL(ks_generate_dist(comm, &g, -1, &D));
        ks_matrix *M = NULL;
        KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind,
                                     D.val, "auto", NULL, &M));
        ks_dist_csr_free(&D);
        result r;
        solve(M, m[i].solver, "JACOBI", 0, &r);
        long long hi = (long long)(m[i].per_it * r.iterations) + extra;
        long long lo = (long long)(m[i].at_least * r.iterations);
        ALL(r.status == KS_SOLVE_CONVERGED && r.reductions <= hi && r.reductions >= lo,
            "%s: %s, %lld reductions in %d iterations (expected %lld .. %lld)", m[i].solver,
            ks_solve_status_name(r.status), r.reductions, r.iterations, lo, hi);
        if (rank == 0)
            printf("%-12s %4d iterations, %5lld reductions (%.2f per iteration)\n",
                   m[i].solver, r.iterations, r.reductions,
                   (double)r.reductions / r.iterations);
        free(r.x);
        ks_matrix_destroy(&M);
    }
}
END_TEST

START_TEST(test_pipelined)
{
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 12);
    compare(&g, "PIPECG", "JACOBI", 0, 0);
    compare(&g, "PIPECG", "NOSOLVER", 0, 1);
    grid(&g, KS_GEN_CONVDIFF3D, 10);
    compare(&g, "PIPEBICGSTAB", "JACOBI", 0, 0);
    compare(&g, "PIPEBICGSTAB", "NOSOLVER", 0, 1);
}
END_TEST

/* PIPEBICGSTAB where ||A M^-1|| is too large for its recurrences (the
 * Poisson with a well, flow rows scaled by 1e-3, AMG: nu = 1.9e3): it goes
 * on unpipelined from the first iteration, over the ranks as on one
 * process (iterations within one, x to 1e-8), with three reductions per
 * iteration: more than the pipelined method's two plus the frame. */
START_TEST(test_pipebicgstab_fallback)
{
    ks_csr A;
    ks_test_well_poisson(32, 1e-3, &A);
    ks_matrix *S = NULL;
    KS_ALL(ks_matrix_create(be, &A, "auto", NULL, &S));
    ks_int nloc = my_rows((int64_t)A.nrows, 0);
    ks_int r0 = 0;
    for (int q = 0; q < rank; q++)
        r0 += (ks_int)(A.nrows / nranks + (q < A.nrows % nranks));
    ks_int nnz = A.rowptr[r0 + nloc] - A.rowptr[r0];
    ks_int *rp = malloc(((size_t)nloc + 1) * sizeof *rp);
    ks_gint *ci = malloc(((size_t)nnz + 1) * sizeof *ci);
    for (ks_int i = 0; i <= nloc; i++)
        rp[i] = A.rowptr[r0 + i] - A.rowptr[r0];
    for (ks_int k = 0; k < nnz; k++)
        ci[k] = A.colind[A.rowptr[r0] + k];
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, nloc, A.ncols, rp, ci, A.val + A.rowptr[r0], "auto",
                                 NULL, &M));
    result one, dis;
    solve_tol = "1e-8";
    solve(S, "PIPEBICGSTAB", "AMG", 0, &one);
    solve(M, "PIPEBICGSTAB", "AMG", 0, &dis);
    solve_tol = "1e-11";
    double err = ks_test_max_relerr(dis.x, one.x + ks_matrix_row_begin(M), ks_matrix_rows(M));
    ALL(one.status == KS_SOLVE_CONVERGED && dis.status == KS_SOLVE_CONVERGED &&
            abs(one.iterations - dis.iterations) <= 1 && err <= 1e-8,
        "well Poisson PIPEBICGSTAB + AMG on %d ranks: one process %s in %d, distributed %s in "
        "%d, error %g",
        nranks, ks_solve_status_name(one.status), one.iterations,
        ks_solve_status_name(dis.status), dis.iterations, err);
    /* test_reduction_counts' bounds: pipelined at most 2 per iteration + 12 */
    long long lo = 2LL * dis.iterations + 12 + 1, hi = 3LL * dis.iterations + 12;
    ALL(dis.reductions >= lo && dis.reductions <= hi,
        "%lld reductions in %d iterations (expected %lld .. %lld)", dis.reductions,
        dis.iterations, lo, hi);
    if (rank == 0)
        printf("well Poisson 32^2 PIPEBICGSTAB + AMG, %d ranks: %d iterations (one process "
               "%d), %lld reductions (%.2f per iteration)\n",
               nranks, dis.iterations, one.iterations, dis.reductions,
               (double)dis.reductions / dis.iterations);
    free(one.x);
    free(dis.x);
    free(rp);
    free(ci);
    ks_matrix_destroy(&M);
    ks_matrix_destroy(&S);
    ks_csr_free(&A);
}
END_TEST

/* The same on the cuda backend where every rank has a device (the block
 * operations' kernels, the halo staged through the host). */
START_TEST(test_cuda_backend)
{
    ks_backend *cuda = NULL;
    KS_ALL(ks_backend_create("cuda", &cuda));
    ks_gen_params g;
    grid(&g, KS_GEN_CONVDIFF3D, 10);
    compare_on(cuda, &g, "GMRES", "JACOBI", 10, 1);
    compare_on(cuda, &g, "FGMRES", "JACOBI_L1", 0, 0);
    compare_on(cuda, &g, "PIPEBICGSTAB", "JACOBI", 0, 1);
    grid(&g, KS_GEN_POISSON3D_7, 12);
    compare_on(cuda, &g, "PIPECG", "JACOBI", 0, 1);
    ks_backend_destroy(&cuda);
}
END_TEST

/* ks_vec_mdot over the ranks: k values, one combination; the same bits on
 * every rank, the one-process sums to rounding; maxpy on the local parts. */
START_TEST(test_mdot_dist)
{
    const ks_gint N = 1000;
    const int k = 40;
    ks_gint off[9];
    for (int q = 0; q <= nranks; q++)
        off[q] = N * q / nranks;
    ks_int n = (ks_int)(off[rank + 1] - off[rank]);
    ks_vec *v[41];
    double *h = malloc(((size_t)n + 1) * sizeof *h);
    for (int j = 0; j <= k; j++) {
        KS_ALL(ks_vec_create_dist(be, comm, n, &v[j]));
        for (ks_int i = 0; i < n; i++)
            h[i] = sin(0.1 * (double)(j + 1) * (double)(off[rank] + i));
        KS_ALL(ks_vec_set_host(v[j], h));
    }
    const ks_vec *x[40], *y[40];
    for (int j = 0; j < k; j++) {
        x[j] = v[j];
        y[j] = v[k];
    }
    double r[40];
    KS_ALL(ks_vec_mdot(k, x, y, r));
    int ok = 1;
    double worst = 0.0;
    for (int j = 0; j < k; j++) {
        double ref = 0.0;
        for (ks_gint i = 0; i < N; i++)
            ref += sin(0.1 * (j + 1) * (double)i) * sin(0.1 * (k + 1) * (double)i);
        double e = fabs(r[j] - ref);
        worst = e > worst ? e : worst;
        ok = ok && e <= 1e-11;
    }
    ALL(ok, "mdot over %d ranks: worst error %g", nranks, worst);
    /* the same bits on every rank: the ranks' maxima of r and -r are r */
    double hi[80];
    for (int j = 0; j < k; j++) {
        hi[j] = r[j];
        hi[k + j] = -r[j];
    }
    KS_ALL(comm->ops->max(comm, hi, 2 * k));
    int same = 1;
    for (int j = 0; j < k; j++)
        same = same && hi[j] == r[j] && hi[k + j] == -r[j];
    ALL(same, "mdot differs between ranks");
    /* maxpy on the local parts: twice the same bits */
    ks_vec *c = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, n, &c));
    double coef[40];
    for (int j = 0; j < k; j++)
        coef[j] = r[j];
    KS_ALL(ks_vec_fill(c, 0.0));
    KS_ALL(ks_vec_maxpy(k, coef, x, c));
    double cn;
    KS_ALL(ks_vec_norm2(c, &cn));
    double cn_again;
    KS_ALL(ks_vec_fill(c, 0.0));
    KS_ALL(ks_vec_maxpy(k, coef, x, c));
    KS_ALL(ks_vec_norm2(c, &cn_again));
    ALL(memcmp(&cn, &cn_again, sizeof cn) == 0 && cn > 0.0, "maxpy twice: %.17g %.17g", cn,
        cn_again);
    ks_vec_destroy(&c);
    for (int j = 0; j <= k; j++)
        ks_vec_destroy(&v[j]);
    free(h);
}
END_TEST

/* The split-phase dot group over the ranks: in flight (no reduction
 * counted yet) while a distributed SpMV exchanges its halo on the same
 * comm, then the bits of ks_vec_mdot on every rank; beyond
 * KS_COMM_SPLIT_MAX values, begin combines them itself. */
START_TEST(test_mdot_split)
{
    ks_gen_params g;
    grid(&g, KS_GEN_CONVDIFF3D, 8);
    ks_dist_csr D;
    KS_ALL(ks_generate_dist(comm, &g, my_rows((int64_t)g.nx * g.ny * g.nz, 1), &D));
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    ks_int n = D.nrows;
    ks_gint r0 = D.row_begin;
    ks_dist_csr_free(&D);
    ks_vec *v[20], *out = NULL;
    double *h = malloc(((size_t)n + 1) * sizeof *h);
    for (int j = 0; j < 20; j++) {
        KS_ALL(ks_matrix_vec_create(M, &v[j]));
        for (ks_int i = 0; i < n; i++)
            h[i] = cos(0.3 * (j + 1) + 0.01 * (double)(r0 + i));
        KS_ALL(ks_vec_set_host(v[j], h));
    }
    KS_ALL(ks_matrix_vec_create(M, &out));
    const ks_vec *x[20], *y[20];
    for (int j = 0; j < 20; j++) {
        x[j] = v[j];
        y[j] = v[19 - j];
    }
    static const int ks[] = {1, 3, 5, KS_COMM_SPLIT_MAX, KS_COMM_SPLIT_MAX + 1, 20};
    for (int t = 0; t < 6; t++) {
        int k = ks[t];
        double a[20], b[20];
        KS_ALL(ks_vec_mdot(k, x, y, a));
        ks_comm_reset_stats(comm);
        ks_vec_pending p;
        KS_ALL(ks_vec_mdot_begin(k, x, y, b, &p));
        ks_comm_stats st;
        KS_ALL(ks_comm_get_stats(comm, &st));
        long long before_end = st.reductions;
        KS_ALL(ks_matrix_apply(M, 1.0, v[0], 0.0, out)); /* a halo exchange meanwhile */
        KS_ALL(ks_vec_mdot_end(&p));
        KS_ALL(ks_comm_get_stats(comm, &st));
        int split = k <= KS_COMM_SPLIT_MAX;
        ALL(before_end == (split ? 0 : 1) && st.reductions == 1,
            "k %d: %lld reductions before end, %lld after", k, before_end, st.reductions);
        ALL(memcmp(a, b, (size_t)k * sizeof *a) == 0, "k %d: split sums differ from mdot", k);
        double hi[40];
        for (int j = 0; j < k; j++) {
            hi[j] = b[j];
            hi[k + j] = -b[j];
        }
        KS_ALL(comm->ops->max(comm, hi, 2 * k));
        int same = 1;
        for (int j = 0; j < k; j++)
            same = same && hi[j] == b[j] && hi[k + j] == -b[j];
        ALL(same, "k %d: split sums differ between ranks", k);
    }
    for (int j = 0; j < 20; j++)
        ks_vec_destroy(&v[j]);
    ks_vec_destroy(&out);
    free(h);
    ks_matrix_destroy(&M);
}
END_TEST

static int have_cuda;

/* The skip line scripts/test counts (the MPI harness prints none itself). */
static void after(void)
{
    if (rank == 0 && !have_cuda)
        printf("SKIPPED: 1 (no CUDA device on every rank: the methods over ranks on cuda)\n");
}

static Suite *suite(void)
{
    Suite *s = suite_create("mpi_krylov");
    TCase *t = tcase_create("krylov");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_gmres_fgmres);
    tcase_add_test(t, test_pipelined);
    tcase_add_test(t, test_pipebicgstab_fallback);
    tcase_add_test(t, test_mdot_dist);
    tcase_add_test(t, test_reduction_counts);
    tcase_add_test(t, test_mdot_split);
    /* every rank must have a device (a collective question) */
    have_cuda = ks_backend_available("cuda");
    MPI_Allreduce(MPI_IN_PLACE, &have_cuda, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (have_cuda)
        tcase_add_test(t, test_cuda_backend);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_krylov", suite, after);
}
