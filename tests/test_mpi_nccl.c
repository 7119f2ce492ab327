/* The halo transports (mpi/halo.c, mpi/halo_nccl.c), under mpirun -np 2
 * (tests/meson.build).
 *
 * Everywhere: the setting (ks_comm_set_halo_transport, KS_MPI_HALO) and
 * its agreement over the ranks on the cpu backend: auto and direct hand
 * MPI the host vectors, staged gives the same products bit for bit, nccl
 * is refused on every rank with the reason, different settings on the
 * ranks are refused, a bad name is an error.
 *
 * With NCCL built and every rank on a GPU of its own (ks_comm_select_device's
 * default map: rank k of a node on GPU k mod G): distributed SpMV over NCCL against the
 * float64 serial product and bit for bit against the staged transport, on
 * random matrices with even and uneven rows, a rank without rows and a
 * rank without ghosts, also three products chained on the device; PCG +
 * AMG on cuda with the same iterations, residual and x bits as staged.
 * Where ranks share a GPU, the refusal of nccl (every rank, naming the
 * GPU) and auto falling back to staged. Otherwise those tests are skipped
 * with the reason printed. */
#include "ks_test_mpi.h"
#include "ksolve_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ks_backend *cuda;
static char skip_why[200]; /* why the NCCL tests do not run ("" when they do) */

/* Collective: M of A's rows [begin, begin + count) made with `transport`
 * (the comm's setting, back to auto after). */
static ks_matrix *with_transport(ks_backend *b, const char *transport, const ks_csr *A,
                                 ks_gint begin, ks_int count)
{
    KS_ALL(ks_comm_set_halo_transport(comm, transport));
    ks_matrix *M = ks_test_dist_rows(b, A, begin, count);
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    return M;
}

/* ks_matrix_create_dist of A's rows with `transport`: its error. */
static ks_error create_with(ks_backend *b, const char *transport, const ks_csr *A,
                            ks_gint begin, ks_int count)
{
    ks_matrix *M = NULL;
    KS_ALL(ks_comm_set_halo_transport(comm, transport));
    ks_error e = ks_test_dist_rows_try(b, A, begin, count, &M);
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    ALL(M == NULL || e == KS_OK, "a matrix after a failure");
    ks_matrix_destroy(&M);
    return e;
}

/* Even rows, or (uneven = 1) a tenth on rank 0, or (uneven = 2) none. */
static void layout(int uneven, ks_int N, ks_gint *off)
{
    off[0] = 0;
    for (int q = 0; q < nranks; q++)
        off[q + 1] = off[q] + N / nranks + (q < N % nranks);
    if (uneven && nranks > 1)
        off[1] = uneven == 1 ? N / 10 : 0;
}

/* y = A^k x (k = nprod products chained on the backend: y, then A y, ...)
 * on this rank's rows, into yl (host). */
static void chain(ks_matrix *M, const double *xl, int nprod, double *yl)
{
    ks_vec *v[2] = {NULL, NULL};
    KS_ALL(ks_matrix_vec_create(M, &v[0]));
    KS_ALL(ks_matrix_vec_create(M, &v[1]));
    KS_ALL(ks_vec_set_host(v[0], xl));
    for (int k = 0; k < nprod; k++)
        KS_ALL(ks_matrix_apply(M, k ? 1.0 : 1.5, v[k % 2], 0.0, v[(k + 1) % 2]));
    KS_ALL(ks_vec_get_host(v[nprod % 2], yl));
    ks_vec_destroy(&v[0]);
    ks_vec_destroy(&v[1]);
}

/* ------------------------------------------------------- the setting */

START_TEST(test_setting_cpu)
{
    EXPECT_ERR(ks_comm_set_halo_transport(comm, "mpi"), KS_ERR_ARG, "unknown transport mpi");
    ALL(!strcmp(ks_comm_halo_transport(comm), "auto"), "the setting is %s, not auto",
        ks_comm_halo_transport(comm));
    ks_gint off[9];
    ks_csr A;
    layout(1, 60, off);
    ks_test_random_global(31, off, &A);
    const ks_gint b0 = off[rank];
    const ks_int n = (ks_int)(off[rank + 1] - b0);
    double *x = malloc(((size_t)n + 1) * sizeof *x), *y[3];
    for (ks_int i = 0; i < n; i++)
        x[i] = sin(0.7 * (double)(b0 + i)) + 0.25;
    const char *set[3] = {"auto", "direct", "staged"}, *runs[3] = {"host", "host", "staged"};
    for (int t = 0; t < 3; t++) {
        ks_matrix *M = with_transport(be, set[t], &A, b0, n);
        const char *got = ks_matrix_halo_transport(M);
        ALL(got && !strcmp(got, runs[t]), "%s on the cpu runs %s, not %s", set[t],
            got ? got : "(NULL)", runs[t]);
        y[t] = malloc(((size_t)n + 1) * sizeof *y[t]);
        chain(M, x, 3, y[t]);
        ks_matrix_destroy(&M);
    }
    ALL(!memcmp(y[0], y[2], (size_t)n * sizeof *x) && !memcmp(y[0], y[1], (size_t)n * sizeof *x),
        "the cpu's transports give other bits");
#ifdef KS_HAVE_NCCL
    const char *why = "host memory";
#else
    const char *why = "built without NCCL";
#endif
    EXPECT_ERR(create_with(be, "nccl", &A, b0, n), KS_ERR_UNSUPPORTED, why);
    /* the ranks disagree: every rank refuses */
    EXPECT_ERR(create_with(be, rank == nranks - 1 ? "staged" : "auto", &A, b0, n),
               nranks > 1 ? KS_ERR_ARG : KS_OK, nranks > 1 ? "different" : "");
    ALL(ks_matrix_halo_transport(NULL) == NULL, "a local matrix has a transport");
    for (int t = 0; t < 3; t++)
        free(y[t]);
    free(x);
    ks_csr_free(&A);
}
END_TEST

/* KS_MPI_HALO gives a new comm's setting; a bad value fails its creation. */
START_TEST(test_setting_env)
{
    ks_comm *c = NULL;
    setenv("KS_MPI_HALO", "staged", 1);
    KS_ALL(ks_comm_create(MPI_COMM_WORLD, &c));
    ALL(!strcmp(ks_comm_halo_transport(c), "staged"), "KS_MPI_HALO=staged gave %s",
        ks_comm_halo_transport(c));
    ks_comm_destroy(&c);
    setenv("KS_MPI_HALO", "fast", 1);
    EXPECT_ERR(ks_comm_create(MPI_COMM_WORLD, &c), KS_ERR_ARG, "KS_MPI_HALO=fast");
    ALL(c == NULL, "a comm after a failure");
    unsetenv("KS_MPI_HALO");
}
END_TEST

/* -------------------------------------------------- NCCL on the GPUs */
#ifdef KS_HAVE_NCCL

/* One random matrix over NCCL against the serial product (1e-14, and
 * 1e-12 after 3 chained products) and the staged transport's bits;
 * one_way: rank 0's rows keep only its own columns (no ghosts there, while
 * the others receive from it). */
static void spmv_case(uint64_t seed, int uneven, int one_way)
{
    ks_gint off[9];
    ks_csr R, A;
    layout(uneven, 80, off);
    ks_test_random_global(seed, off, &R);
    A = R;
    if (one_way) { /* drop rank 0's entries outside its block */
        const ks_int N = R.nrows, nnz = R.rowptr[N];
        ks_int *r = malloc(((size_t)nnz + 1) * sizeof *r), *c = malloc(((size_t)nnz + 1) * sizeof *c);
        double *v = malloc(((size_t)nnz + 1) * sizeof *v);
        int64_t m = 0;
        for (ks_int i = 0; i < N; i++)
            for (ks_int k = R.rowptr[i]; k < R.rowptr[i + 1]; k++)
                if (i >= off[1] || R.colind[k] < off[1]) {
                    r[m] = i;
                    c[m] = R.colind[k];
                    v[m++] = R.val[k];
                }
        KS_CHECK(ks_csr_from_coo(N, N, m, r, c, v, &A, NULL));
        ks_csr_free(&R);
        free(r);
        free(c);
        free(v);
    }
    const ks_int N = A.nrows, n = (ks_int)(off[rank + 1] - off[rank]);
    double *xg = malloc((size_t)N * sizeof *xg), *yg = malloc((size_t)N * sizeof *yg);
    double *yn = malloc(((size_t)n + 1) * sizeof *yn), *ys = malloc(((size_t)n + 1) * sizeof *ys);
    for (ks_int i = 0; i < N; i++)
        xg[i] = cos(0.3 * i + (double)seed) + 1.5;
    ks_matrix *Mn = with_transport(cuda, "nccl", &A, off[rank], n);
    ks_matrix *Ms = with_transport(cuda, "staged", &A, off[rank], n);
    char what[120];
    snprintf(what, sizeof what, "seed %llu, rank 0 %lld rows%s", (unsigned long long)seed,
             (long long)off[1], one_way ? ", no ghosts on rank 0" : "");
    ALL(!strcmp(ks_matrix_halo_transport(Mn), "nccl") &&
            !strcmp(ks_matrix_halo_transport(Ms), "staged"),
        "%s: transports %s and %s", what, ks_matrix_halo_transport(Mn),
        ks_matrix_halo_transport(Ms));
    for (int nprod = 1; nprod <= 3; nprod += 2) {
        memcpy(yg, xg, (size_t)N * sizeof *yg);
        for (int k = 0; k < nprod; k++) {
            double *t = malloc((size_t)N * sizeof *t);
            ks_csr_spmv_ref(&A, k ? 1.0 : 1.5, yg, 0.0, t);
            memcpy(yg, t, (size_t)N * sizeof *t);
            free(t);
        }
        ks_comm_reset_stats(comm);
        chain(Mn, xg + off[rank], nprod, yn);
        ks_comm_stats cs;
        KS_ALL(ks_comm_get_stats(comm, &cs));
        chain(Ms, xg + off[rank], nprod, ys);
        const double err = ks_test_max_relerr(yn, yg + off[rank], n);
        ALL(err <= (nprod == 1 ? 1e-14 : 1e-12),
            "%s, %d products: NCCL's result differs from the reference by %g", what, nprod, err);
        ALL(!memcmp(yn, ys, (size_t)n * sizeof *yn),
            "%s, %d products: NCCL's and the staged result differ in their bits", what, nprod);
        ks_int ng = 0, ns = 0;
        int nb = 0;
        KS_ALL(ks_matrix_halo_size(Mn, &ng, &ns, &nb));
        ALL(cs.halo_exchanges == nprod && cs.halo_bytes_sent == (double)nprod * ns * 8.0,
            "%s: %lld exchanges and %g bytes counted, want %d and %g", what, cs.halo_exchanges,
            cs.halo_bytes_sent, nprod, (double)nprod * ns * 8.0);
    }
    ks_matrix_destroy(&Mn);
    ks_matrix_destroy(&Ms);
    free(xg);
    free(yg);
    free(yn);
    free(ys);
    ks_csr_free(&A);
}

START_TEST(test_nccl_spmv)
{
    spmv_case(41, 0, 0);
    spmv_case(42, 1, 0);
    spmv_case(43, 2, 0); /* rank 0 without rows */
    spmv_case(44, 0, 1); /* rank 0 without ghosts */
    spmv_case(45, 1, 1);
}
END_TEST

typedef struct solved {
    int iterations;
    ks_solve_status status;
    double rel, true_rel;
    double *x;
} solved;

static void solve_amg(ks_matrix *M, solved *o)
{
    ks_config *cfg = NULL;
    ks_solver *s = NULL;
    ks_vec *b = NULL, *x = NULL;
    KS_ALL(ks_config_create_default(&cfg));
    KS_ALL(ks_config_set(cfg, "solver.solver", "PCG"));
    KS_ALL(ks_config_set(cfg, "solver.preconditioner.solver", "AMG"));
    KS_ALL(ks_config_set(cfg, "solver.tolerance", "1e-10"));
    KS_ALL(ks_solver_create(ks_matrix_backend(M), cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_matrix_vec_create(M, &x));
    ks_test_dist_rhs(b);
    KS_ALL(ks_vec_fill(x, 0.0));
    KS_ALL(ks_solver_solve(s, b, x));
    const ks_solve_stats *st = ks_solver_stats(s);
    o->iterations = st->iterations;
    o->status = st->status;
    o->rel = st->relative_residual;
    o->true_rel = st->true_relative_residual;
    o->x = malloc(((size_t)ks_matrix_rows(M) + 1) * sizeof *o->x);
    KS_ALL(ks_vec_get_host(x, o->x));
    ks_test_solve_free(&s, &cfg, &b, &x);
}

/* PCG + AMG (the default configuration) over NCCL and staged: the same
 * iterations, residual and x, bit for bit (only the transport differs). */
START_TEST(test_nccl_amg)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON3D_7;
    g.nx = g.ny = g.nz = 16;
    ks_csr A;
    KS_CHECK(ks_generate(&g, &A));
    for (int uneven = 0; uneven < 2; uneven++) {
        ks_gint off[9];
        layout(uneven, A.nrows, off);
        const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
        solved r[2];
        const char *names[2] = {"nccl", "staged"};
        for (int t = 0; t < 2; t++) {
            /* the setting holds through the setup: every level's
             * matrices (A, P, R) exchange over it */
            KS_ALL(ks_comm_set_halo_transport(comm, names[t]));
            ks_matrix *M = ks_test_dist_rows(cuda, &A, off[rank], n);
            solve_amg(M, &r[t]);
            KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
            ks_matrix_destroy(&M);
        }
        ALL(r[0].status == KS_SOLVE_CONVERGED && r[0].true_rel < 1e-9,
            "rank 0 %lld rows: PCG + AMG over NCCL: %s, true relative residual %g",
            (long long)off[1], ks_solve_status_name(r[0].status), r[0].true_rel);
        ALL(r[0].iterations == r[1].iterations && !memcmp(&r[0].rel, &r[1].rel, sizeof r[0].rel) &&
                !memcmp(r[0].x, r[1].x, (size_t)n * sizeof *r[0].x),
            "rank 0 %lld rows: NCCL %d iterations (residual %.17g), staged %d (%.17g), or "
            "other x bits", (long long)off[1], r[0].iterations, r[0].rel, r[1].iterations,
            r[1].rel);
        if (rank == 0)
            printf("PCG + AMG, 7-point 16^3, rank 0 %lld rows: %d iterations over NCCL and "
                   "staged, relative residual %.3e\n",
                   (long long)off[1], r[0].iterations, r[0].rel);
        free(r[0].x);
        free(r[1].x);
    }
    ks_csr_free(&A);
}
END_TEST

/* Ranks on one GPU: nccl refused on every rank naming the GPU, auto stages. */
START_TEST(test_nccl_shared_gpu)
{
    ks_gint off[9];
    ks_csr A;
    layout(0, 40, off);
    ks_test_random_global(51, off, &A);
    const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
    EXPECT_ERR(create_with(cuda, "nccl", &A, off[rank], n), KS_ERR_UNSUPPORTED, "share GPU");
    ks_matrix *M = with_transport(cuda, "auto", &A, off[rank], n);
    ALL(!strcmp(ks_matrix_halo_transport(M), "staged"), "auto with a shared GPU runs %s",
        ks_matrix_halo_transport(M));
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
}
END_TEST

/* Collective: 1 when two ranks run on one GPU of one host, -1 (the reason
 * in setup_err) when the ranks' devices could not be gathered. Called from
 * suite(), outside any test, so it must not assert. */
static char setup_err[400];
static int gpus_shared(void)
{
    ks_rank_device all[8];
    const ks_error e = ks_comm_gather_devices(comm, cuda, all);
    if (e != KS_OK) {
        snprintf(setup_err, sizeof setup_err, "ks_comm_gather_devices failed: %s: %s",
                 ks_error_name(e), ks_last_error());
        return -1;
    }
    for (int q = 1; q < nranks; q++)
        for (int r = 0; r < q; r++)
            if (!strcmp(all[q].host, all[r].host) && !strcmp(all[q].pci_bus_id, all[r].pci_bus_id))
                return 1;
    return 0;
}

/* The suite's own setup failed: one failing test says why. */
START_TEST(test_setup)
{
    ALL(setup_err[0] == 0, "%s", setup_err);
}
END_TEST
#endif /* KS_HAVE_NCCL */

static void after(void)
{
    if (rank == 0 && skip_why[0])
        printf("SKIPPED: 2 (%s)\n", skip_why);
    ks_backend_destroy(&cuda);
}

static Suite *suite(void)
{
    Suite *s = suite_create("mpi_nccl");
    TCase *t = tcase_create("halo_transports");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_setting_cpu);
    tcase_add_test(t, test_setting_env);
    /* collective questions: every rank's answer counts; each rank on its
     * GPU of the default map (rank k of a node on GPU k mod G) */
    int dev = ks_backend_available("cuda"), gpu = -1;
    MPI_Allreduce(MPI_IN_PLACE, &dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (dev)
        dev = ks_comm_select_device(comm, "local", &gpu) == KS_OK &&
              ks_backend_create("cuda", &cuda) == KS_OK;
    MPI_Allreduce(MPI_IN_PLACE, &dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#ifndef KS_HAVE_NCCL
    snprintf(skip_why, sizeof skip_why, "this ksolve was built without NCCL");
#else
    if (!dev)
        snprintf(skip_why, sizeof skip_why, "no CUDA device on every rank");
    else if (nranks < 2)
        snprintf(skip_why, sizeof skip_why, "one rank: nothing travels");
    else {
        const int shared = gpus_shared();
        if (shared < 0) {
            snprintf(skip_why, sizeof skip_why, "the ranks' GPUs are unknown");
            tcase_add_test(t, test_setup);
        } else if (shared) {
            snprintf(skip_why, sizeof skip_why,
                     "ranks share a GPU (fewer GPUs than ranks on a host)");
            tcase_add_test(t, test_nccl_shared_gpu);
        }
    }
    if (!skip_why[0]) {
        tcase_add_test(t, test_nccl_spmv);
        tcase_add_test(t, test_nccl_amg);
    }
#endif
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_nccl", suite, after);
}
