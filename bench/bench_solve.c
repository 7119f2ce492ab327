/* Time a Krylov solve per iteration on one or more backends.
 *
 *   bench_solve --gen poisson3d_7 --n 256 --backend cpu,cuda --iters 100 --tol 0
 *
 * With --tol 0 the solve never converges, so every run does exactly
 * --iters iterations and times are comparable across backends. One warm-up
 * solve (first-touch, lazy allocations, cuSPARSE buffers), then the median
 * of --repeat timed solves (solve_seconds, measured with the backend
 * synchronised at both ends). */
#include "ksolve.h"
#include "../solver/solver_create.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    const char *gen, *backends, *format, *solver, *pc;
    int n, iters, repeat;
    double tol;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_solve [options]\n"
            "  --gen NAME       generator (poisson2d_5, poisson3d_7, ..., convdiff3d) [poisson3d_7]\n"
            "  --n N            grid points per axis [64]\n"
            "  --backend LIST   cpu, cuda or cpu,cuda (prints the GPU/CPU ratio) [cpu]\n"
            "  --iters K        max_iters [100]\n"
            "  --tol T          relative tolerance; 0 runs exactly K iterations [0]\n"
            "  --format F       SpMV format [auto]\n"
            "  --solver S       PCG, CG, PBICGSTAB, BICGSTAB, GMRES, FGMRES,\n"
            "                   PIPECG, PIPEBICGSTAB [PCG]\n"
            "  --pc P           NOSOLVER, JACOBI, JACOBI_L1 [JACOBI]\n"
            "  --repeat R       timed solves, median reported [5]\n");
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){"poisson3d_7", "cpu", "auto", "PCG", "JACOBI", 64, 100, 5, 0.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_solve: %s needs a value (or unknown option)\n", a);
            return 1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (!strcmp(a, "--gen"))
            o->gen = v;
        else if (!strcmp(a, "--backend"))
            o->backends = v;
        else if (!strcmp(a, "--format"))
            o->format = v;
        else if (!strcmp(a, "--solver"))
            o->solver = v;
        else if (!strcmp(a, "--pc"))
            o->pc = v;
        else if (!strcmp(a, "--n"))
            o->n = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--iters"))
            o->iters = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--repeat"))
            o->repeat = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--tol"))
            o->tol = strtod(v, &end);
        else {
            fprintf(stderr, "bench_solve: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
        if (end && *end) {
            fprintf(stderr, "bench_solve: %s: '%s' is not a number\n", a, v);
            return 1;
        }
    }
    if (o->n < 2 || o->iters < 1 || o->repeat < 1 || o->tol < 0) {
        fprintf(stderr, "bench_solve: need --n >= 2, --iters >= 1, --repeat >= 1, --tol >= 0\n");
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct result {
    double solve_s;   /* median solve seconds */
    double ms_per_it; /* median ms per iteration */
    int iterations;
} result;

#define FAIL(call)                                                                       \
    do {                                                                                 \
        ks_error e_ = (call);                                                            \
        if (e_ != KS_OK) {                                                               \
            fprintf(stderr, "bench_solve: %s: %s: %s\n", #call, ks_error_name(e_),       \
                    ks_last_error());                                                    \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

static int bench_one(const char *backend, const ks_csr *A, const opts *o, result *res)
{
    int rc = 1;
    ks_backend *be = NULL;
    ks_matrix *M = NULL;
    ks_vec *b = NULL, *x = NULL;
    ks_solver *s = NULL;
    double *t = calloc((size_t)o->repeat, sizeof *t);
    double *per = calloc((size_t)o->repeat, sizeof *per);
    if (!t || !per) {
        fprintf(stderr, "bench_solve: out of memory\n");
        goto done;
    }
    FAIL(ks_backend_create(backend, &be));
    FAIL(ks_matrix_create(be, A, o->format, NULL, &M));
    FAIL(ks_vec_create(be, A->nrows, &b));
    FAIL(ks_vec_create(be, A->nrows, &x));
    FAIL(ks_vec_fill(b, 1.0));

    ks_solver_params prm;
    ks_solver_params_default(&prm);
    snprintf(prm.solver, sizeof prm.solver, "%s", o->solver);
    snprintf(prm.pc.solver, sizeof prm.pc.solver, "%s", o->pc);
    prm.max_iters = o->iters;
    prm.tolerance = o->tol;
    prm.store_res_history = 0;
    FAIL(ks_solver_create_params(be, &prm, &s));
    FAIL(ks_solver_setup(s, M));
    const ks_solve_stats *st = ks_solver_stats(s);

    FAIL(ks_vec_fill(x, 0.0)); /* warm-up */
    FAIL(ks_solver_solve(s, b, x));
    int its = 0;
    for (int r = 0; r < o->repeat; r++) {
        FAIL(ks_vec_fill(x, 0.0));
        FAIL(ks_solver_solve(s, b, x));
        t[r] = st->solve_seconds;
        per[r] = st->iterations > 0 ? 1e3 * st->solve_seconds / st->iterations : 0.0;
        its = st->iterations;
    }
    qsort(t, (size_t)o->repeat, sizeof *t, cmp_double);
    qsort(per, (size_t)o->repeat, sizeof *per, cmp_double);
    res->solve_s = t[o->repeat / 2];
    res->ms_per_it = per[o->repeat / 2];
    res->iterations = its;
    printf("%-5s %s + %s, format %s: %d iterations (%s), solve %.3f ms (median of %d), "
           "%.4f ms/iteration, setup %.3f ms, matrix %.3f ms\n",
           backend, ks_solver_name(s), ks_solver_preconditioner_name(s), ks_matrix_format(M),
           its, ks_solve_status_name(st->status), 1e3 * res->solve_s, o->repeat,
           res->ms_per_it, 1e3 * st->setup_seconds, 1e3 * ks_matrix_setup_seconds(M));
    printf("      %s; true relative residual %.3e\n", ks_backend_description(be),
           st->true_relative_residual);
    fflush(stdout);
    rc = 0;
done:
    ks_solver_destroy(&s);
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    free(t);
    free(per);
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o))
        return 2;
    ks_gen_params g;
    ks_gen_params_default(&g);
    if (ks_gen_kind_from_name(o.gen, &g.kind) != KS_OK) {
        fprintf(stderr, "bench_solve: %s\n", ks_last_error());
        return 2;
    }
    g.nx = g.ny = g.nz = o.n;
    ks_csr A;
    double t0 = ks_wtime();
    ks_error e = ks_generate(&g, &A);
    if (e != KS_OK) {
        fprintf(stderr, "bench_solve: generating %s: %s\n", o.gen, ks_last_error());
        return 1;
    }
    printf("problem %s n=%d: %ld rows, %ld nonzeros (generated in %.2f s); %d iterations max, "
           "tol %g\n",
           o.gen, o.n, (long)A.nrows, (long)A.nnz, ks_wtime() - t0, o.iters, o.tol);

    char list[256];
    snprintf(list, sizeof list, "%s", o.backends);
    result res[8];
    const char *names[8];
    int nb = 0, rc = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nb < 8;
         tok = strtok_r(NULL, ",", &save)) {
        names[nb] = tok;
        if (bench_one(tok, &A, &o, &res[nb]) != 0) {
            rc = 1;
            break;
        }
        nb++;
    }
    int icpu = -1, icuda = -1;
    for (int i = 0; i < nb; i++) {
        if (!strcmp(names[i], "cpu"))
            icpu = i;
        if (!strcmp(names[i], "cuda"))
            icuda = i;
    }
    if (rc == 0 && icpu >= 0 && icuda >= 0 && res[icpu].ms_per_it > 0)
        printf("GPU/CPU time per iteration: %.4f (cuda %.2fx faster than cpu)\n",
               res[icuda].ms_per_it / res[icpu].ms_per_it,
               res[icpu].ms_per_it / res[icuda].ms_per_it);
    ks_csr_free(&A);
    return rc;
}
