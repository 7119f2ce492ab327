/* Weak scaling with <ksolve_mpi.h>: every rank owns an n x n x n block of a
 * 3D 7-point Poisson problem, so the global problem grows with the ranks
 * while each rank's work stays the same.
 *
 *   mpirun -np P mpi_weak_scaling [n] [--solver PCG] [--pc JACOBI|JACOBI_L1|AMG]
 *                                 [--tol 1e-8] [--max-iters 1000] [--runs 1]
 *                                 [--global N] [--bandwidth-mb 128] [--no-bandwidth]
 *                                 [--backend cpu|cuda] [--gpu-map MAP]
 *                                 [--halo auto|staged|direct|nccl|ipc] [--rhs ones|sin]
 *                                 [-p KEY=VALUE ...] [--profile]
 *
 * n is the edge of each rank's block (default 32: 32^3 rows a rank);
 * --global N solves the N^3 grid instead, in even row blocks (rows/rank is
 * then the largest block), e.g. 320^3 on 16 ranks. --rhs sin makes
 * b = A x with x_i = sin(i) (i the global row: bench_amg's problem) instead
 * of x = 1 (the default). -p sets
 * any key of the library's config (docs/config.md), e.g.
 * -p solver.preconditioner.smoother.solver=JACOBI. --halo says how the
 * ranks exchange their halos (ks_comm_set_halo_transport: staged through
 * host buffers, direct to a CUDA-aware MPI, nccl GPU to GPU, ipc CUDA
 * IPC copies between the GPUs of one host; default
 * auto), and the first line names the transport that ran. Rank 0 prints one line a
 * solve: ranks, rows per rank, global rows, iterations, setup and solve
 * seconds (the slowest rank's), seconds per iteration and the slowest rank's
 * communication in the solve (halo exchanges + reductions), and iter_GB:
 * seconds per iteration times the per-rank copy bandwidth measured in the
 * same run with all ranks copying at once. Then each rank's peak memory.
 * --profile then solves once more with the AMG cycle profiled
 * (ks_solver_profile_cycles) and prints each level's steps, microseconds a
 * cycle, the slowest rank's.
 *
 * iter_GB is an iteration's time expressed in gigabytes a rank could copy
 * in it: ranks on one host share its memory bandwidth, so s/iter grows with
 * the ranks even when nothing else does, and iter_GB takes that growth out.
 * Across a series (the same n on 1, 2, ..., P ranks, one run each) the
 * ratio iter_GB(P) / iter_GB(1) is the time per iteration's growth divided
 * by the bandwidth's fall. The bandwidth is the slowest rank's in the best
 * of 5 copies of --bandwidth-mb MiB (default 128, well beyond the caches):
 * the solve waits for its slowest rank at every reduction, so that rank's
 * memory speed is the one s/iter reflects. The test runs after the solves,
 * and the peak memory is read before it, so its arrays never count there.
 * --no-bandwidth skips it (iter_GB prints "-"). --backend cuda solves on
 * one GPU a rank (--gpu-map, docs/mpi.md "GPU mapping"), each rank's GPU
 * printed last.
 *
 * Read the numbers with care: with Jacobi the iterations grow with the
 * grid's longest edge (n * P here), so compare the time per iteration; with
 * AMG they should stay nearly flat. Ranks sharing one memory system (one
 * host) also share its bandwidth, which SpMV is bound by.
 *
 * Exit status: 0 every solve converged, 1 one did not, 2 a usage or library
 * error (the message says which call failed and why). */
#include <ksolve_mpi.h>

#include "rank_gpu.h"
#include "rank_measure.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every call's outcome is agreed over the ranks (ks_comm_agree): a call that
 * failed on one rank only (an allocation, a bad value) then fails on every
 * rank, and all leave together instead of some waiting forever in the next
 * collective call. Calls that are collective already agree by themselves;
 * agreeing again costs one small message and keeps the macro uniform. Rank 0
 * prints the message: its own, or the lowest failing rank's ("rank N: ..."). */
#define CHECK(call)                                                                      \
    do {                                                                                 \
        ks_error e_ = ks_comm_agree(comm, (call));                                       \
        if (e_ != KS_OK) {                                                               \
            if (ks_comm_rank(comm) == 0)                                                 \
                fprintf(stderr, "mpi_weak_scaling: %s failed: %s (%s)\n", #call,         \
                        ks_last_error(), ks_error_name(e_));                             \
            rc = 2;                                                                      \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

#define MAX_SETS 16

/* One solve's line, kept until the bandwidth is known (it is measured
 * after the solves, so that its arrays stay out of the peak memory). */
typedef struct solve_result {
    int iterations;
    ks_solve_status status;
    double v[6]; /* matrix, setup, solve, comm, halo, reduce seconds */
    double err;
} solve_result;

typedef struct options {
    long n;           /* edge of each rank's block */
    const char *solver, *pc;
    const char *tol, *max_iters;
    int runs;
    long bandwidth_mb; /* each of the two copied arrays; 0: --no-bandwidth */
    long global;       /* --global N: the N^3 grid over the ranks; 0: n^3 a rank */
    const char *backend, *gpu_map; /* gpu_map NULL: KS_GPU_MAP, else local */
    const char *halo;  /* --halo: ks_comm_set_halo_transport's name */
    int rhs_sin;       /* --rhs sin: x_i = sin(i) (bench_amg's); else all ones */
    const char *sets[MAX_SETS]; /* -p KEY=VALUE, applied last */
    int nsets;
    int profile;       /* --profile: one more solve with the AMG cycle profiled */
} options;

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np P mpi_weak_scaling [n_per_rank_edge] [--solver PCG|CG|"
                 "PBICGSTAB|BICGSTAB]\n"
                 "       [--pc JACOBI|JACOBI_L1|AMG|NOSOLVER] [--tol T] [--max-iters K] "
                 "[--runs R]\n"
                 "       [--global N] [--bandwidth-mb M] [--no-bandwidth] [--rhs ones|sin]\n"
                 "       [-p KEY=VALUE ...]\n"
                 "       [--backend cpu|cuda] [--gpu-map MAP]\n"
                 "       [--halo auto|staged|direct|nccl|ipc] [--profile]\n");
}

/* Every rank parses the same argv, so every rank reaches the same verdict;
 * only rank 0 says what is wrong. Returns 0 to go on, 1 on a bad argument,
 * -1 after printing the help. */
static int parse(int argc, char **argv, int rank, options *o)
{
    *o = (options){.n = 32, .solver = "PCG", .pc = "JACOBI", .tol = "1e-8",
                   .max_iters = "1000", .runs = 1, .bandwidth_mb = 128, .backend = "cpu",
                   .halo = "auto"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (rank == 0)
                usage(stdout);
            return -1;
        } else if (!strcmp(a, "--solver") && has_value) {
            o->solver = argv[++i];
        } else if (!strcmp(a, "--pc") && has_value) {
            o->pc = argv[++i];
        } else if (!strcmp(a, "--halo") && has_value) {
            o->halo = argv[++i];
        } else if (!strcmp(a, "--rhs") && has_value &&
                   (!strcmp(argv[i + 1], "ones") || !strcmp(argv[i + 1], "sin"))) {
            o->rhs_sin = !strcmp(argv[++i], "sin");
        } else if (!strcmp(a, "--tol") && has_value) {
            o->tol = argv[++i];
        } else if (!strcmp(a, "--max-iters") && has_value) {
            o->max_iters = argv[++i];
        } else if (!strcmp(a, "--profile")) {
            o->profile = 1;
        } else if (!strcmp(a, "--runs") && has_value) {
            o->runs = atoi(argv[++i]);
            if (o->runs < 1) {
                if (rank == 0)
                    fprintf(stderr, "mpi_weak_scaling: --runs %s: expected a count >= 1\n",
                            argv[i]);
                return 1;
            }
        } else if (!strcmp(a, "--global") && has_value) {
            char *end;
            o->global = strtol(argv[++i], &end, 10);
            if (*end || o->global < 1 || o->global > 1 << 20) {
                if (rank == 0)
                    fprintf(stderr, "mpi_weak_scaling: --global %s: expected the grid edge "
                                    "N >= 1\n", argv[i]);
                return 1;
            }
        } else if (!strcmp(a, "--backend") && has_value) {
            o->backend = argv[++i];
        } else if (!strcmp(a, "--gpu-map") && has_value) {
            o->gpu_map = argv[++i];
        } else if (!strcmp(a, "--no-bandwidth")) {
            o->bandwidth_mb = 0;
        } else if (!strcmp(a, "--bandwidth-mb") && has_value) {
            char *end;
            o->bandwidth_mb = strtol(argv[++i], &end, 10);
            /* 16 GiB of doubles is the most a vector's 32-bit length takes */
            if (*end || o->bandwidth_mb < 1 || o->bandwidth_mb > 16383) {
                if (rank == 0)
                    fprintf(stderr, "mpi_weak_scaling: --bandwidth-mb %s: expected MiB "
                                    "from 1 to 16383\n", argv[i]);
                return 1;
            }
        } else if (!strcmp(a, "-p") && has_value) {
            if (o->nsets == MAX_SETS || !strchr(argv[i + 1], '=')) {
                if (rank == 0)
                    fprintf(stderr, "mpi_weak_scaling: -p %s: expected KEY=VALUE (at most %d)\n",
                            argv[i + 1], MAX_SETS);
                return 1;
            }
            o->sets[o->nsets++] = argv[++i];
        } else if (a[0] != '-') {
            char *end;
            o->n = strtol(a, &end, 10);
            if (*end || o->n < 1) {
                if (rank == 0)
                    fprintf(stderr, "mpi_weak_scaling: '%s': expected the block edge n >= 1\n",
                            a);
                return 1;
            }
        } else {
            if (rank == 0) {
                fprintf(stderr, "mpi_weak_scaling: unknown or incomplete option '%s'\n", a);
                usage(stderr);
            }
            return 1;
        }
    }
    return 0;
}

/* --profile (collective): one more solve with the AMG cycle profiled
 * (each step synchronised, so slower than the timed solves), and each
 * level's steps per cycle, the slowest rank's, in microseconds. */
static ks_error print_profile(ks_comm *comm, ks_solver *solver, const ks_vec *b, ks_vec *x)
{
    ks_error e = ks_solver_profile_cycles(solver, 1);
    if (e == KS_OK)
        e = ks_vec_fill(x, 0.0);
    if (e == KS_OK)
        e = ks_solver_solve(solver, b, x);
    ks_hierarchy_info info;
    if (e == KS_OK)
        e = ks_solver_hierarchy(solver, &info);
    ks_solver_profile_cycles(solver, 0);
    if (e != KS_OK)
        return e;
    const int nl = info.nlevels;
    /* one residual a visit of level 0 (the coarse solve where it is all) */
    const long cycles = nl == 0 ? 0
                        : nl == 1 ? info.levels[0].step_calls[KS_STEP_COARSE]
                                  : info.levels[0].step_calls[KS_STEP_RESIDUAL];
    double *t = calloc((size_t)nl * KS_NSTEPS + 1, sizeof *t);
    if (!t)
        return KS_ERR_MEMORY;
    for (int l = 0; l < nl; l++)
        for (int k = 0; k < KS_NSTEPS; k++)
            t[l * KS_NSTEPS + k] = info.levels[l].step_seconds[k];
    e = ks_comm_max(comm, t, nl * KS_NSTEPS);
    if (e == KS_OK && ks_comm_rank(comm) == 0) {
        const double per = cycles > 0 ? 1e6 / (double)cycles : 0.0;
        printf("# cycle profile, us a cycle (the slowest rank's, profiled: steps "
               "synchronised)\n# level %12s %8s %8s %8s %8s %8s %8s %8s\n", "rows", "smooth",
               "resid", "restrict", "prolong", "coarse", "post", "sum");
        double all = 0.0;
        for (int l = 0; l < nl; l++) {
            double sum = 0.0;
            printf("  %5d %12lld", l, (long long)info.levels[l].rows);
            for (int k = 0; k < KS_NSTEPS; k++) {
                printf(" %8.1f", t[l * KS_NSTEPS + k] * per);
                sum += t[l * KS_NSTEPS + k] * per;
            }
            printf(" %8.1f\n", sum);
            all += sum;
        }
        printf("# all levels %.1f us a cycle\n", all);
        fflush(stdout);
    }
    free(t);
    return e;
}

/* The solver's config from the options: the method and preconditioner keys
 * first, then each -p KEY=VALUE. ks_config_set names a bad key or value. */
static ks_error make_config(const options *o, ks_config **cfg)
{
    ks_error e = ks_config_create_default(cfg);
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.solver", o->solver);
    /* CG and BICGSTAB take no preconditioner scope (the config refuses one). */
    if (e == KS_OK && strcmp(o->solver, "CG") && strcmp(o->solver, "BICGSTAB"))
        e = ks_config_set(*cfg, "solver.preconditioner.solver", o->pc);
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.tolerance", o->tol);
    if (e == KS_OK)
        e = ks_config_set(*cfg, "solver.max_iters", o->max_iters);
    for (int i = 0; i < o->nsets && e == KS_OK; i++) {
        char key[256];
        const char *eq = strchr(o->sets[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - o->sets[i]), o->sets[i]);
        e = ks_config_set(*cfg, key, eq + 1);
    }
    return e;
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_weak_scaling: MPI_Init failed\n");
        return 2;
    }
    int rc = 2;
    ks_comm *comm = NULL;
    ks_backend *be = NULL;
    ks_dist_csr rows = {0};
    ks_matrix *A = NULL;
    ks_vec *b = NULL, *x = NULL, *ones = NULL;
    ks_config *cfg = NULL;
    ks_solver *solver = NULL;
    solve_result *res = NULL;

    ks_error e = ks_comm_create(MPI_COMM_WORLD, &comm);
    if (e != KS_OK) { /* no comm to agree over; this fails on every rank alike */
        fprintf(stderr, "mpi_weak_scaling: ks_comm_create: %s\n", ks_last_error());
        MPI_Finalize();
        return 2;
    }
    const int rank = ks_comm_rank(comm), nranks = ks_comm_size(comm);
    options o;
    /* parse printed what is wrong (or the usage for --help, which exits 0) */
    const int verdict = parse(argc, argv, rank, &o);
    if (ks_comm_agree(comm, verdict ? KS_ERR_ARG : KS_OK) != KS_OK) {
        rc = verdict < 0 ? 0 : 2;
        goto done;
    }

    /* The global grid: nx = ny = n, nz = n * P. The generator numbers row
     * (i, j, k) as i + nx * (j + ny * k), so the n^3 rows of planes
     * k = r*n .. (r+1)*n - 1 are consecutive: rank r's contiguous row block
     * is an n x n x n cube (a slab of the global box). Its halo is two
     * n x n planes whatever P is, so each rank's work and messages stay
     * constant as P grows. (A px x py x pz split of cubes would give ranks
     * rows that are not consecutive in this numbering.) */
    /* --global N instead: the N^3 cube in even row blocks (slabs of about
     * N / P planes), for a fixed whole problem such as 320^3. */
    const int64_t n = o.global ? o.global : o.n, nz = o.global ? n : n * nranks;
    const int64_t nlocal = o.global ? (n * n * n + nranks - 1) / nranks : n * n * n;
    if (nlocal * 7 > INT32_MAX || nz > INT32_MAX) { /* ks_int: 32-bit local indices */
        if (rank == 0)
            fprintf(stderr, "mpi_weak_scaling: n = %lld is too large (at most %lld rows and "
                            "nonzeros a rank)\n", (long long)n, (long long)INT32_MAX);
        goto done;
    }
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON3D_7;
    g.nx = g.ny = (ks_int)n;
    g.nz = (ks_int)nz;

    /* A transport that cannot run here (nccl without NCCL or with ranks
     * sharing a GPU, ipc off cuda or over several hosts, direct without a
     * CUDA-aware MPI) fails the matrix's
     * creation on every rank, saying why. */
    CHECK(ks_comm_set_halo_transport(comm, o.halo));
    CHECK(rank_backend_create(comm, o.backend, o.gpu_map, &be));
    double t0 = ks_wtime();
    /* Each rank generates only its own rows: no rank ever holds the whole matrix. */
    CHECK(ks_generate_dist(comm, &g, o.global ? -1 : (ks_int)nlocal, &rows));
    CHECK(ks_matrix_create_dist(be, comm, rows.nrows, rows.ncols_global, rows.rowptr,
                                rows.colind, rows.val, "auto", NULL, &A));
    ks_dist_csr_free(&rows); /* the matrix keeps its own copy */
    double t_matrix = ks_wtime() - t0;

    /* b = A * xs: the exact solution xs is all ones, or (--rhs sin) x_i =
     * sin(i) over the global rows as bench_amg makes it. */
    CHECK(ks_matrix_vec_create(A, &b));
    CHECK(ks_matrix_vec_create(A, &x));
    CHECK(ks_matrix_vec_create(A, &ones));
    CHECK(ks_vec_fill(ones, 1.0));
    if (o.rhs_sin) {
        const ks_int nl = ks_vec_size(ones);
        const ks_gint r0 = ks_vec_row_begin(ones);
        double *h = malloc(((size_t)nl + 1) * sizeof *h);
        CHECK(h ? KS_OK : KS_ERR_MEMORY);
        for (ks_int i = 0; i < nl; i++)
            h[i] = sin((double)(r0 + i));
        ks_error e = ks_vec_set_host(ones, h);
        free(h);
        CHECK(e);
    }
    CHECK(ks_matrix_apply(A, 1.0, ones, 0.0, b));

    CHECK(make_config(&o, &cfg));
    CHECK(ks_solver_create(be, cfg, &solver));
    t0 = ks_wtime();
    /* What the distributed AMG does not do yet (the cuda backend, float32 hierarchies, ...)
     * is refused here (KS_ERR_UNSUPPORTED): CHECK prints why and exits 2. */
    CHECK(ks_solver_setup(solver, A));
    double t_setup = ks_wtime() - t0;

    /* The halo: ghost values this rank receives per product (2 n^2 inside
     * the slab, n^2 at its ends); the largest over the ranks. */
    ks_int nghost = 0, nsend = 0;
    int neighbours = 0;
    CHECK(ks_matrix_halo_size(A, &nghost, &nsend, &neighbours));
    double halo_max = (double)nghost;
    CHECK(ks_comm_max(comm, &halo_max, 1));

    rc = 0;
    res = calloc((size_t)o.runs, sizeof *res);
    if (!res)
        fprintf(stderr, "mpi_weak_scaling: rank %d: no memory for %d results\n", rank, o.runs);
    CHECK(res ? KS_OK : KS_ERR_MEMORY);
    for (int run = 0; run < o.runs; run++) {
        solve_result *r = &res[run];
        CHECK(ks_vec_fill(x, 0.0));
        /* Count only this solve's messages: the stats accumulate per comm. */
        ks_comm_reset_stats(comm);
        t0 = ks_wtime();
        CHECK(ks_solver_solve(solver, b, x));
        double t_solve = ks_wtime() - t0;
        ks_comm_stats cs;
        CHECK(ks_comm_get_stats(comm, &cs));

        /* The slowest rank decides the wall time: maxima over the ranks (of
         * each rank's own sum for comm_s, so it never exceeds solve_s). */
        double *v = r->v;
        v[0] = t_matrix, v[1] = t_setup, v[2] = t_solve;
        v[3] = cs.halo_seconds + cs.reduce_seconds, v[4] = cs.halo_seconds;
        v[5] = cs.reduce_seconds;
        CHECK(ks_comm_max(comm, v, 6));

        /* max |x - 1| over all ranks (a collective norm) */
        CHECK(ks_vec_axpy(-1.0, ones, x));
        CHECK(ks_vec_norminf(x, &r->err));

        const ks_solve_stats *st = ks_solver_stats(solver);
        r->iterations = st->iterations;
        r->status = st->status;
        if (st->status != KS_SOLVE_CONVERGED)
            rc = 1;
    }

    /* Peak memory first: the bandwidth test's arrays must not count. */
    rank_memory mem;
    CHECK(rank_peak_memory(comm, &mem));
    rank_bandwidth bw = {0};
    if (o.bandwidth_mb > 0)
        CHECK(rank_copy_bandwidth(comm, be, (size_t)o.bandwidth_mb << 20, 5, &bw));

    if (rank == 0) {
        printf("# %s + %s, 3D Poisson 7-point %d x %d x %d, b = A x with %s, up to %.0f ghost "
               "values a rank, %s backend, halo transport %s\n",
               ks_solver_name(solver), ks_solver_preconditioner_name(solver), (int)g.nx,
               (int)g.ny, (int)g.nz, o.rhs_sin ? "x_i = sin(i)" : "x = 1", halo_max, ks_backend_name(be), ks_matrix_halo_transport(A));
        if (o.bandwidth_mb > 0)
            printf("# copy bandwidth per rank: %.3g GB/s (all %d ranks copying at once; the "
                   "slowest rank, best of 5 copies of %ld MiB; mean over the ranks %.3g GB/s)\n",
                   bw.slowest_gbs, nranks, o.bandwidth_mb, bw.mean_gbs);
        else
            printf("# copy bandwidth per rank: not measured (--no-bandwidth)\n");
        printf("# seconds, each column the slowest rank's; matrix: generation + "
               "ks_matrix_create_dist; comm: halo + reductions in the solve; "
               "iter_GB: s/iter x copy GB/s\n"
               "# %5s %10s %12s %6s %9s %8s %8s %8s %9s %8s %8s %8s %8s %8s\n",
               "ranks", "rows/rank", "global_rows", "iters", "status", "matrix_s", "setup_s",
               "solve_s", "s/iter", "iter_GB", "comm_s", "halo_s", "reduce_s", "max_err");
        for (int run = 0; run < o.runs; run++) {
            const solve_result *r = &res[run];
            const double *v = r->v;
            const double s_iter = r->iterations > 0 ? v[2] / r->iterations : 0.0;
            char iter_gb[32] = "-";
            if (o.bandwidth_mb > 0)
                snprintf(iter_gb, sizeof iter_gb, "%.3g", s_iter * bw.slowest_gbs);
            printf("  %5d %10lld %12lld %6d %9s %8.4f %8.4f %8.4f %9.3e %8s %8.4f %8.4f %8.4f "
                   "%8.1e\n",
                   nranks, (long long)nlocal, (long long)ks_matrix_global_rows(A), r->iterations,
                   ks_solve_status_name(r->status), v[0], v[1], v[2], s_iter, iter_gb, v[3],
                   v[4], v[5], r->err);
        }
        printf("# peak memory a rank (ru_maxrss, before the bandwidth test): max %.1f MiB, "
               "min %.1f MiB; all %d ranks %.1f MiB, the largest rank 1/%.1f of it\n",
               mem.max_mib, mem.min_mib, nranks, mem.sum_mib,
               mem.max_mib > 0 ? mem.sum_mib / mem.max_mib : 0.0);
        fflush(stdout);
    }
    CHECK(rank_print_gpus(comm, be, stdout, "# GPU of "));
    if (o.profile)
        CHECK(print_profile(comm, solver, b, x));

done:
    free(res);
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
