/* A distributed solve with <ksolve_mpi.h>: every rank generates only its
 * rows of a 3D Poisson problem, builds its part of the matrix and vectors,
 * and PCG runs over all ranks, preconditioned by Jacobi or by AMG (its
 * hierarchy built over the ranks too).
 *
 *   mpirun -np 4 mpi_solve [N [PRECONDITIONER]]   (an N^3 grid, default 32;
 *                                                  JACOBI (default) or AMG)
 *          [--backend cpu|cuda] [--gpu-map MAP]   (cuda: one GPU a rank,
 *                                                  docs/mpi.md "GPU mapping")
 *
 * b = A * 1, so the exact solution is all ones; rank 0 prints the
 * iterations and the largest error over all ranks. Exit status 0 when the
 * solve converged. */
#include <ksolve_mpi.h>

#include "rank_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Collective calls fail on every rank alike: each rank jumps to the cleanup. */
#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != KS_OK) {                                                       \
            fprintf(stderr, "mpi_solve: %s: %s\n", #call, ks_last_error());          \
            goto done;                                                               \
        }                                                                            \
    } while (0)

static const char *config_fmt =
    "{ \"config_version\": 2,"
    "  \"solver\": { \"solver\": \"PCG\", \"max_iters\": 1000, \"tolerance\": 1e-10,"
    "              \"preconditioner\": { \"solver\": \"%s\" } } }";

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 2;
    ks_comm *comm = NULL;
    ks_backend *be = NULL;
    ks_dist_csr rows = {0};
    ks_matrix *A = NULL;
    ks_vec *b = NULL, *x = NULL, *ones = NULL;
    ks_config *cfg = NULL;
    ks_solver *solver = NULL;

    /* The options, then N and the preconditioner in that order. */
    const char *pos[2] = {"32", "JACOBI"}, *backend = "cpu", *gpu_map = NULL;
    for (int i = 1, npos = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--gpu-map") && i + 1 < argc)
            gpu_map = argv[++i];
        else if (npos < 2)
            pos[npos++] = argv[i];
    }

    CHECK(ks_comm_create(MPI_COMM_WORLD, &comm));
    CHECK(rank_backend_create(comm, backend, gpu_map, &be));
    CHECK(rank_print_gpus(comm, be, stdout, ""));
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.nx = g.ny = g.nz = atoi(pos[0]);
    CHECK(ks_generate_dist(comm, &g, -1, &rows)); /* even row blocks */
    CHECK(ks_matrix_create_dist(be, comm, rows.nrows, rows.ncols_global, rows.rowptr,
                                rows.colind, rows.val, "auto", NULL, &A));
    ks_dist_csr_free(&rows); /* the matrix has its own copy */

    CHECK(ks_matrix_vec_create(A, &b));
    CHECK(ks_matrix_vec_create(A, &x));
    CHECK(ks_matrix_vec_create(A, &ones));
    CHECK(ks_vec_fill(ones, 1.0));
    CHECK(ks_matrix_apply(A, 1.0, ones, 0.0, b));
    CHECK(ks_vec_fill(x, 0.0));

    char config_json[512];
    snprintf(config_json, sizeof config_json, config_fmt, pos[1]);
    CHECK(ks_config_create_from_string(config_json, &cfg));
    CHECK(ks_solver_create(be, cfg, &solver));
    CHECK(ks_solver_setup(solver, A));
    CHECK(ks_solver_solve(solver, b, x));

    /* max |x - 1| over all ranks: a distributed reduction too */
    double err = 0.0;
    CHECK(ks_vec_axpy(-1.0, ones, x));
    CHECK(ks_vec_norminf(x, &err));
    const ks_solve_stats *st = ks_solver_stats(solver);
    if (ks_comm_rank(comm) == 0)
        printf("%lld rows on %d ranks: %s after %d iterations, relative residual %.3e, "
               "max error %.3e\n",
               (long long)ks_matrix_global_rows(A), ks_comm_size(comm),
               ks_solve_status_name(st->status), st->iterations, st->relative_residual, err);
    rc = st->status == KS_SOLVE_CONVERGED ? 0 : 1;

done:
    ks_solver_destroy(&solver);
    ks_config_destroy(&cfg);
    ks_vec_destroy(&ones);
    ks_vec_destroy(&x);
    ks_vec_destroy(&b);
    ks_matrix_destroy(&A);
    ks_dist_csr_free(&rows);
    ks_backend_destroy(&be);
    ks_comm_destroy(&comm);
    MPI_Finalize();
    return rc;
}
