/* Solve A x = b from Matrix Market files over MPI ranks (<ksolve_mpi.h>).
 *
 *   mpirun -np P mpi_mtx_solve A.mtx[.gz] [b.mtx] [--bicgstab] [--pc JACOBI|JACOBI_L1]
 *                              [--tol 1e-8] [--max-iters 1000] [-x x.mtx]
 *                              [--backend cpu|cuda] [--gpu-map MAP]
 *
 * Rank 0 reads the file once and sends every rank its block of rows
 * (ks_mm_read_dist); b is split the same way (ks_mm_read_vector_dist), or
 * b = A * 1 when no b is given. PCG + Jacobi by default (for symmetric
 * positive definite matrices); --bicgstab for nonsymmetric ones. After the
 * solve the true residual ||b - A x|| / ||b|| is recomputed over the ranks;
 * -x gathers the solution on rank 0, which writes it (ks_mm_write_vector_dist).
 * --backend cuda solves on one GPU a rank (--gpu-map, docs/mpi.md "GPU
 * mapping"; rank 0 prints each rank's GPU).
 *
 * Exit status: 0 converged, 1 not converged, 2 a usage or library error. */
#include <ksolve_mpi.h>

#include "rank_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every call's outcome is agreed over the ranks (ks_comm_agree), so a call
 * that failed on one rank only (a malloc, a bad value) fails on all of them
 * and no rank is left waiting in the next collective call. Rank 0 prints
 * the message (its own, or "rank N: ..." from the lowest failing rank). */
#define CHECK(call)                                                                      \
    do {                                                                                 \
        ks_error e_ = ks_comm_agree(comm, (call));                                       \
        if (e_ != KS_OK) {                                                               \
            if (ks_comm_rank(comm) == 0)                                                 \
                fprintf(stderr, "mpi_mtx_solve: %s failed: %s (%s)\n", #call,            \
                        ks_last_error(), ks_error_name(e_));                             \
            rc = 2;                                                                      \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

typedef struct options {
    const char *A, *b, *x; /* file names; b and x may be NULL */
    const char *solver, *pc, *tol, *max_iters;
    const char *backend, *gpu_map; /* gpu_map NULL: KS_GPU_MAP, else local */
} options;

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np P mpi_mtx_solve A.mtx[.gz] [b.mtx] [--bicgstab] "
                 "[--pc JACOBI|JACOBI_L1|NOSOLVER]\n"
                 "       [--tol T] [--max-iters K] [-x x.mtx] [--backend cpu|cuda] "
                 "[--gpu-map MAP]\n");
}

/* Every rank parses the same argv and reaches the same verdict; rank 0 says
 * what is wrong. Returns 0 on success. */
static int parse(int argc, char **argv, int rank, options *o)
{
    *o = (options){.solver = "PCG", .pc = "JACOBI", .tol = "1e-8", .max_iters = "1000",
                   .backend = "cpu"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        if (!strcmp(a, "--bicgstab"))
            o->solver = "PBICGSTAB";
        else if (!strcmp(a, "--pc") && has_value)
            o->pc = argv[++i];
        else if (!strcmp(a, "--tol") && has_value)
            o->tol = argv[++i];
        else if (!strcmp(a, "--max-iters") && has_value)
            o->max_iters = argv[++i];
        else if (!strcmp(a, "-x") && has_value)
            o->x = argv[++i];
        else if (!strcmp(a, "--backend") && has_value)
            o->backend = argv[++i];
        else if (!strcmp(a, "--gpu-map") && has_value)
            o->gpu_map = argv[++i];
        else if (a[0] != '-' && !o->A)
            o->A = a;
        else if (a[0] != '-' && !o->b)
            o->b = a;
        else {
            if (rank == 0) {
                fprintf(stderr, "mpi_mtx_solve: unexpected argument '%s'\n", a);
                usage(stderr);
            }
            return 1;
        }
    }
    if (!o->A) {
        if (rank == 0)
            usage(stderr);
        return 1;
    }
    return 0;
}

static ks_error make_config(const options *o, ks_config **cfg)
{
    ks_error e = ks_config_create_default(cfg);
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.solver", o->solver);
    /* The default preconditioner is AMG, not available across ranks yet. */
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.preconditioner.solver", o->pc);
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.tolerance", o->tol);
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.max_iters", o->max_iters);
    return e;
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_mtx_solve: MPI_Init failed\n");
        return 2;
    }
    int rc = 2;
    ks_comm *comm = NULL;
    ks_backend *be = NULL;
    ks_dist_csr rows = {0};
    ks_matrix *A = NULL;
    ks_vec *b = NULL, *x = NULL, *r = NULL;
    ks_config *cfg = NULL;
    ks_solver *solver = NULL;
    double *host = NULL; /* this rank's part of b (read) or of x (written) */

    if (ks_comm_create(MPI_COMM_WORLD, &comm) != KS_OK) { /* fails on every rank alike */
        fprintf(stderr, "mpi_mtx_solve: ks_comm_create: %s\n", ks_last_error());
        MPI_Finalize();
        return 2;
    }
    const int rank = ks_comm_rank(comm);
    options o;
    /* parse printed what is wrong: agree on the verdict and leave */
    if (ks_comm_agree(comm, parse(argc, argv, rank, &o) ? KS_ERR_ARG : KS_OK) != KS_OK)
        goto done;
    CHECK(rank_backend_create(comm, o.backend, o.gpu_map, &be));
    CHECK(rank_print_gpus(comm, be, stdout, ""));

    /* Even row blocks (nlocal = -1); pass a count to choose your own split. */
    ks_mm_info info;
    CHECK(ks_mm_read_dist(comm, o.A, -1, &rows, &info));
    CHECK(ks_matrix_create_dist(be, comm, rows.nrows, rows.ncols_global, rows.rowptr,
                                rows.colind, rows.val, "auto", NULL, &A));
    ks_dist_csr_free(&rows); /* the matrix keeps its own copy */
    if (rank == 0 && info.symmetry == KS_MM_GENERAL && strcmp(o.solver, "PCG") == 0)
        fprintf(stderr, "mpi_mtx_solve: note: %s is not stored as symmetric; PCG needs a "
                        "symmetric positive definite matrix (--bicgstab otherwise)\n", o.A);

    const ks_int nloc = ks_matrix_rows(A);
    CHECK(ks_matrix_vec_create(A, &b));
    CHECK(ks_matrix_vec_create(A, &x));
    CHECK(ks_matrix_vec_create(A, &r));
    if (o.b) {
        /* This rank's entries of b: the same split as the matrix's rows. */
        ks_int nb = 0;
        CHECK(ks_mm_read_vector_dist(comm, o.b, nloc, &host, &nb));
        CHECK(ks_vec_set_host(b, host));
        free(host);
        host = NULL;
    } else {
        CHECK(ks_vec_fill(x, 1.0)); /* x is a free vector until the solve */
        CHECK(ks_matrix_apply(A, 1.0, x, 0.0, b));
    }
    CHECK(ks_vec_fill(x, 0.0));

    CHECK(make_config(&o, &cfg));
    CHECK(ks_solver_create(be, cfg, &solver));
    CHECK(ks_solver_setup(solver, A));
    CHECK(ks_solver_solve(solver, b, x));
    const ks_solve_stats *st = ks_solver_stats(solver);

    /* The true residual, recomputed: r = b - A x, then two distributed
     * 2-norms (each adds the ranks' partial sums in rank order, so every
     * rank gets the same bits). */
    double rnorm, bnorm;
    CHECK(ks_vec_copy(b, r));
    CHECK(ks_matrix_apply(A, -1.0, x, 1.0, r));
    CHECK(ks_vec_norm2(r, &rnorm));
    CHECK(ks_vec_norm2(b, &bnorm));

    /* Nonzeros over all ranks (each rank knows only its own). */
    ks_gint nnz = ks_matrix_nnz(A);
    CHECK(ks_comm_sum_gint(comm, &nnz, 1));
    if (rank == 0) {
        printf("%s: %lld rows, %lld nonzeros on %d ranks, %s + %s\n", o.A,
               (long long)ks_matrix_global_rows(A), (long long)nnz, ks_comm_size(comm),
               ks_solver_name(solver), ks_solver_preconditioner_name(solver));
        printf("%s after %d iterations: relative residual %.3e, true %.3e "
               "(setup %.4f s, solve %.4f s)\n",
               ks_solve_status_name(st->status), st->iterations, st->relative_residual,
               bnorm > 0 ? rnorm / bnorm : rnorm, st->setup_seconds, st->solve_seconds);
    }

    if (o.x) {
        /* Gathered on rank 0, which writes the file. */
        host = malloc((size_t)(nloc > 0 ? nloc : 1) * sizeof *host);
        if (!host)
            fprintf(stderr, "mpi_mtx_solve: rank %d: no memory for %d values of x\n", rank,
                    (int)nloc);
        CHECK(host ? KS_OK : KS_ERR_MEMORY);
        CHECK(ks_vec_get_host(x, host));
        CHECK(ks_mm_write_vector_dist(comm, o.x, host, nloc));
        if (rank == 0)
            printf("solution written to %s\n", o.x);
    }
    rc = st->status == KS_SOLVE_CONVERGED ? 0 : 1;

done:
    free(host);
    ks_solver_destroy(&solver);
    ks_config_destroy(&cfg);
    ks_vec_destroy(&r);
    ks_vec_destroy(&x);
    ks_vec_destroy(&b);
    ks_matrix_destroy(&A);
    ks_dist_csr_free(&rows);
    ks_backend_destroy(&be);
    ks_comm_destroy(&comm);
    MPI_Finalize();
    return rc;
}
