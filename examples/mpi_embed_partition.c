/* Embedding ksolve in an MPI code that owns its mesh and its partition.
 *
 *   mpirun -np P mpi_embed_partition [m] [--max-iters K] [--backend cpu|cuda]
 *                                    [--gpu-map MAP]
 *
 * The application here is a 2D convection-diffusion problem on an m x m grid
 * (default m = 64): -u_xx - u_yy + v . grad u on the unit square, u = 0 on
 * the boundary, 5-point differences with upwinded convection. It is not
 * symmetric, so the solver is BiCGStab + Jacobi.
 *
 * What an application does, and this program shows:
 *  - it decides the partition itself. Here, deliberately uneven: rank r owns
 *    a share of the rows proportional to r + 1 (its blocks do not follow
 *    grid lines; any contiguous split works, and a rank may own none);
 *  - it assembles its own rows, in global numbering with global column
 *    indices, and hands them to ks_matrix_create_dist;
 *  - it fills vectors from its own data through ks_vec_set_host and reads
 *    the answer back with ks_vec_get_host, each rank its own rows.
 *
 * The answer is checked: we pick a solution x*, form b = A x*, solve from
 * x = 0 and compare x with x* (max relative error over the ranks). Exit
 * status 0 only when the solve converged and the error is below 1e-6; 1
 * when not (--max-iters 2 shows that path); 2 on a usage or library error.
 * --backend cuda solves on one GPU a rank (--gpu-map, docs/mpi.md "GPU
 * mapping"; rank 0 prints each rank's GPU). */
#include <ksolve_mpi.h>

#include "rank_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every call's outcome is agreed over the ranks (ks_comm_agree), so a call
 * that failed on one rank only (a malloc, a bad row) fails on all of them
 * and no rank is left waiting in the next collective call. Rank 0 prints
 * the message (its own, or "rank N: ..." from the lowest failing rank). */
#define CHECK(call)                                                                      \
    do {                                                                                 \
        ks_error e_ = ks_comm_agree(comm, (call));                                       \
        if (e_ != KS_OK) {                                                               \
            if (ks_comm_rank(comm) == 0)                                                 \
                fprintf(stderr, "mpi_embed_partition: %s failed: %s (%s)\n", #call,      \
                        ks_last_error(), ks_error_name(e_));                             \
            rc = 2;                                                                      \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

static const double vx = 40.0, vy = -20.0; /* the convection velocity */
static const double max_error = 1e-6;      /* what the check accepts */

/* The rows of rank r: a share proportional to r + 1, i.e. rank r's block
 * ends at n * T(r+1) / T(p) with T(k) = k (k + 1) / 2. The blocks are
 * contiguous, in rank order, and add up to n. */
static ks_gint block_begin(ks_gint n, int r, int p)
{
    const ks_gint tr = (ks_gint)r * (r + 1) / 2, tp = (ks_gint)p * (p + 1) / 2;
    /* n * tr can overflow for huge n and p: split the product */
    return n / tp * tr + n % tp * tr / tp;
}

/* The manufactured solution at grid point (i, j): any values would do; a
 * smooth function with no symmetry catches swapped or misplaced rows. */
static double xstar(ks_gint i, ks_gint j, ks_gint m)
{
    const double h = 1.0 / (double)(m + 1), X = (double)(i + 1) * h, Y = (double)(j + 1) * h;
    return 1.0 + sin(3.0 * X) * Y + 0.5 * X * X;
}

/* This rank's rows [begin, end) of the m x m problem, row = i + m * j, scaled
 * by h^2. Convection is upwinded: the difference looks against the flow, so
 * the matrix is an M-matrix (positive diagonal, non-positive couplings,
 * diagonally dominant) and Jacobi-preconditioned BiCGStab converges. Points
 * outside the grid are the boundary (u = 0): their column is left out. */
static int assemble(ks_gint m, ks_gint begin, ks_gint end, ks_int **rowptr, ks_gint **colind,
                    double **val)
{
    const ks_int nloc = (ks_int)(end - begin);
    const double h = 1.0 / (double)(m + 1);
    *rowptr = malloc(((size_t)nloc + 1) * sizeof **rowptr);
    *colind = malloc(((size_t)nloc * 5 + 1) * sizeof **colind); /* at most 5 a row */
    *val = malloc(((size_t)nloc * 5 + 1) * sizeof **val);
    if (!*rowptr || !*colind || !*val)
        return 1;
    /* Couplings to the west/east/south/north neighbour: diffusion -1 plus the
     * upwind convection term (h * |v| on the upstream side). */
    const double w = -1.0 - h * fmax(vx, 0.0), e = -1.0 + h * fmin(vx, 0.0);
    const double s = -1.0 - h * fmax(vy, 0.0), n = -1.0 + h * fmin(vy, 0.0);
    const double diag = 4.0 + h * (fabs(vx) + fabs(vy));
    ks_int k = 0;
    (*rowptr)[0] = 0;
    for (ks_gint row = begin; row < end; row++) {
        const ks_gint i = row % m, j = row / m;
        /* Columns in any order are fine (the library sorts them); each once. */
        if (j > 0)     { (*colind)[k] = row - m; (*val)[k++] = s; }
        if (i > 0)     { (*colind)[k] = row - 1; (*val)[k++] = w; }
        (*colind)[k] = row; (*val)[k++] = diag;
        if (i < m - 1) { (*colind)[k] = row + 1; (*val)[k++] = e; }
        if (j < m - 1) { (*colind)[k] = row + m; (*val)[k++] = n; }
        (*rowptr)[row - begin + 1] = k;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_embed_partition: MPI_Init failed\n");
        return 2;
    }
    int rc = 2;
    ks_comm *comm = NULL;
    ks_backend *be = NULL;
    ks_matrix *A = NULL;
    ks_vec *b = NULL, *x = NULL, *xs = NULL;
    ks_config *cfg = NULL;
    ks_solver *solver = NULL;
    ks_int *rowptr = NULL;
    ks_gint *colind = NULL;
    double *val = NULL, *host = NULL;

    if (ks_comm_create(MPI_COMM_WORLD, &comm) != KS_OK) { /* fails on every rank alike */
        fprintf(stderr, "mpi_embed_partition: ks_comm_create: %s\n", ks_last_error());
        MPI_Finalize();
        return 2;
    }
    const int rank = ks_comm_rank(comm), nranks = ks_comm_size(comm);

    /* Arguments: the same on every rank, so every rank agrees. */
    long m = 64, max_iters = 2000;
    const char *backend = "cpu", *gpu_map = NULL;
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--max-iters") && i + 1 < argc)
            max_iters = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i], end = "";
        else if (!strcmp(argv[i], "--gpu-map") && i + 1 < argc)
            gpu_map = argv[++i], end = "";
        else
            m = strtol(argv[i], &end, 10);
        if (!end || *end || m < 1 || m > 40000 || max_iters < 1)
            bad = 1;
    }
    if (ks_comm_agree(comm, bad ? KS_ERR_ARG : KS_OK) != KS_OK) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P mpi_embed_partition [m: 1..40000] "
                            "[--max-iters K] [--backend cpu|cuda] [--gpu-map MAP]\n");
        goto done;
    }

    /* Our partition and our rows. */
    const ks_gint n = (ks_gint)m * m;
    const ks_gint begin = block_begin(n, rank, nranks), end = block_begin(n, rank + 1, nranks);
    const ks_int nloc = (ks_int)(end - begin);
    if (assemble(m, begin, end, &rowptr, &colind, &val))
        fprintf(stderr, "mpi_embed_partition: rank %d: no memory for %d rows\n", rank,
                (int)nloc);
    CHECK(rowptr && colind && val ? KS_OK : KS_ERR_MEMORY);

    CHECK(rank_backend_create(comm, backend, gpu_map, &be));
    CHECK(rank_print_gpus(comm, be, stdout, ""));
    /* Each rank passes its row count; the library adds them up in rank order
     * (rank r's first row = the lower ranks' counts), which is our layout. */
    CHECK(ks_matrix_create_dist(be, comm, nloc, n, rowptr, colind, val, "auto", NULL, &A));
    free(rowptr); /* copied by the library */
    free(colind);
    free(val);
    rowptr = NULL;
    colind = NULL;
    val = NULL;
    if (ks_matrix_row_begin(A) != begin) /* cannot happen; a sanity check of our layout */
        fprintf(stderr, "mpi_embed_partition: rank %d: first row %lld, expected %lld\n", rank,
                (long long)ks_matrix_row_begin(A), (long long)begin);
    CHECK(ks_matrix_row_begin(A) == begin ? KS_OK : KS_ERR_SIZE);

    /* x* from our formula on our rows; b = A x* (a distributed product). */
    host = malloc((size_t)(nloc > 0 ? nloc : 1) * sizeof *host);
    if (!host)
        fprintf(stderr, "mpi_embed_partition: rank %d: no memory for %d values\n", rank,
                (int)nloc);
    CHECK(host ? KS_OK : KS_ERR_MEMORY);
    for (ks_int k = 0; k < nloc; k++)
        host[k] = xstar((begin + k) % m, (begin + k) / m, m);
    CHECK(ks_matrix_vec_create(A, &xs));
    CHECK(ks_matrix_vec_create(A, &b));
    CHECK(ks_matrix_vec_create(A, &x));
    CHECK(ks_vec_set_host(xs, host));
    CHECK(ks_matrix_apply(A, 1.0, xs, 0.0, b));
    CHECK(ks_vec_fill(x, 0.0));

    char json[256];
    snprintf(json, sizeof json,
             "{ \"config_version\": 2, \"solver\": { \"solver\": \"PBICGSTAB\","
             " \"max_iters\": %ld, \"tolerance\": 1e-10,"
             " \"preconditioner\": { \"solver\": \"JACOBI\" } } }", max_iters);
    CHECK(ks_config_create_from_string(json, &cfg));
    CHECK(ks_solver_create(be, cfg, &solver));
    CHECK(ks_solver_setup(solver, A));
    CHECK(ks_solver_solve(solver, b, x));
    const ks_solve_stats *st = ks_solver_stats(solver);

    /* Check our rows against the formula itself (not against xs, so a
     * mix-up of rows between ranks would show), then the worst rank. */
    CHECK(ks_vec_get_host(x, host));
    double err[1] = {0.0};
    for (ks_int k = 0; k < nloc; k++) {
        const double want = xstar((begin + k) % m, (begin + k) / m, m);
        const double d = fabs(host[k] - want) / fabs(want); /* want >= 1 */
        if (!(d <= err[0])) /* NaN counts as the worst */
            err[0] = d;
    }
    CHECK(ks_comm_max(comm, err, 1));

    /* The partition each rank chose, gathered for the report. */
    double counts[2] = {(double)nloc, -(double)nloc};
    CHECK(ks_comm_max(comm, counts, 2));
    const int ok = st->status == KS_SOLVE_CONVERGED && err[0] <= max_error;
    if (rank == 0)
        printf("%dx%d convection-diffusion, %lld rows on %d ranks (%.0f .. %.0f a rank): "
               "%s + %s %s after %d iterations, max relative error %.2e (limit %.0e): %s\n",
               (int)m, (int)m, (long long)n, nranks, -counts[1], counts[0],
               ks_solver_name(solver), ks_solver_preconditioner_name(solver),
               ks_solve_status_name(st->status), st->iterations, err[0], max_error,
               ok ? "correct" : "WRONG");
    rc = ok ? 0 : 1;

done:
    free(host);
    free(rowptr);
    free(colind);
    free(val);
    ks_solver_destroy(&solver);
    ks_config_destroy(&cfg);
    ks_vec_destroy(&xs);
    ks_vec_destroy(&x);
    ks_vec_destroy(&b);
    ks_matrix_destroy(&A);
    ks_backend_destroy(&be);
    ks_comm_destroy(&comm);
    MPI_Finalize();
    return rc;
}
