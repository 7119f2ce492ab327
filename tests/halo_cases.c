/* Shared cases of the halo transport tests (halo_cases.h). */
#include "halo_cases.h"
#include "spmv/format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ks_matrix *halo_with_transport(ks_backend *b, const char *transport, const ks_csr *A,
                               ks_gint begin, ks_int count)
{
    KS_ALL(ks_comm_set_halo_transport(comm, transport));
    ks_matrix *M = ks_test_dist_rows(b, A, begin, count);
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    return M;
}

ks_error halo_create_with(ks_backend *b, const char *transport, const ks_csr *A, ks_gint begin,
                          ks_int count)
{
    ks_matrix *M = NULL;
    KS_ALL(ks_comm_set_halo_transport(comm, transport));
    ks_error e = ks_test_dist_rows_try(b, A, begin, count, &M);
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    ALL(M == NULL || e == KS_OK, "a matrix after a failure");
    ks_matrix_destroy(&M);
    return e;
}

void halo_layout(int uneven, ks_int N, ks_gint *off)
{
    off[0] = 0;
    for (int q = 0; q < nranks; q++)
        off[q + 1] = off[q] + N / nranks + (q < N % nranks);
    if (uneven && nranks > 1)
        off[1] = uneven == 1 ? N / 10 : 0;
}

void halo_spmv_case(ks_backend *b, const char *transport, uint64_t seed, int uneven,
                    int one_way)
{
    ks_gint off[9];
    ks_csr R, A;
    halo_layout(uneven, 80, off);
    ks_test_random_global(seed, off, &R);
    A = R;
    if (one_way) { /* drop rank 0's entries outside its block */
        const ks_int N = R.nrows, nnz = R.rowptr[N];
        ks_int *r = malloc(((size_t)nnz + 1) * sizeof *r);
        ks_int *c = malloc(((size_t)nnz + 1) * sizeof *c);
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
    ks_matrix *Mn = halo_with_transport(b, transport, &A, off[rank], n);
    ks_matrix *Ms = halo_with_transport(b, "staged", &A, off[rank], n);
    char what[120];
    snprintf(what, sizeof what, "seed %llu, rank 0 %lld rows%s", (unsigned long long)seed,
             (long long)off[1], one_way ? ", no ghosts on rank 0" : "");
    ALL(!strcmp(ks_matrix_halo_transport(Mn), transport) &&
            !strcmp(ks_matrix_halo_transport(Ms), "staged"),
        "%s: transports %s and %s", what, ks_matrix_halo_transport(Mn),
        ks_matrix_halo_transport(Ms));
    for (int nprod = 1; nprod <= 3; nprod += 2) {
        ks_test_chain_ref(&A, xg, nprod, yg);
        ks_comm_reset_stats(comm);
        ks_test_dist_chain(Mn, xg + off[rank], nprod, yn);
        ks_comm_stats cs;
        KS_ALL(ks_comm_get_stats(comm, &cs));
        ks_test_dist_chain(Ms, xg + off[rank], nprod, ys);
        const double err = ks_test_max_relerr(yn, yg + off[rank], n);
        ALL(err <= (nprod == 1 ? 1e-14 : 1e-12),
            "%s, %d products: %s's result differs from the reference by %g", what, nprod,
            transport, err);
        ALL(!memcmp(yn, ys, (size_t)n * sizeof *yn),
            "%s, %d products: %s's and the staged result differ in their bits", what, nprod,
            transport);
        ks_int ng = 0, ns = 0;
        int nb = 0;
        KS_ALL(ks_matrix_halo_size(Mn, &ng, &ns, &nb));
        ALL(cs.halo_exchanges == nprod && cs.halo_bytes_sent == (double)nprod * ns * 8.0,
            "%s: %lld exchanges and %g bytes counted, want %d and %g", what, cs.halo_exchanges,
            cs.halo_bytes_sent, nprod, (double)nprod * ns * 8.0);
    }
    /* The fused smoother pass over this transport: csr_vector's local
     * pass, coo's ghost share (the ghost block's device format). */
    ks_matrix *Mf = NULL;
    KS_ALL(ks_comm_set_halo_transport(comm, transport));
    KS_ALL(ks_test_dist_rows_as(b, &A, off[rank], n, "csr_vector", &Mf));
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    ALL(ks_matrix_has_fused_step(Mf), "%s: no distributed fused pass on %s", what, transport);
    ks_test_dist_fused_check(Mf, &A, off, what);
    ks_matrix_destroy(&Mf);
    ks_matrix_destroy(&Mn);
    ks_matrix_destroy(&Ms);
    free(xg);
    free(yg);
    free(yn);
    free(ys);
    ks_csr_free(&A);
}

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

void halo_amg_case(ks_backend *b, const char *transport)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON3D_7;
    g.nx = g.ny = g.nz = 16;
    ks_csr A;
    KS_CHECK(ks_generate(&g, &A));
    for (int uneven = 0; uneven < 2; uneven++) {
        ks_gint off[9];
        halo_layout(uneven, A.nrows, off);
        const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
        solved r[2];
        const char *names[2] = {transport, "staged"};
        for (int t = 0; t < 2; t++) {
            /* the setting holds through the setup: every level's
             * matrices (A, P, R) exchange over it */
            KS_ALL(ks_comm_set_halo_transport(comm, names[t]));
            ks_matrix *M = ks_test_dist_rows(b, &A, off[rank], n);
            solve_amg(M, &r[t]);
            KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
            ks_matrix_destroy(&M);
        }
        ALL(r[0].status == KS_SOLVE_CONVERGED && r[0].true_rel < 1e-9,
            "rank 0 %lld rows: PCG + AMG over %s: %s, true relative residual %g",
            (long long)off[1], transport, ks_solve_status_name(r[0].status), r[0].true_rel);
        ALL(r[0].iterations == r[1].iterations && !memcmp(&r[0].rel, &r[1].rel, sizeof r[0].rel) &&
                !memcmp(r[0].x, r[1].x, (size_t)n * sizeof *r[0].x),
            "rank 0 %lld rows: %s %d iterations (residual %.17g), staged %d (%.17g), or "
            "other x bits", (long long)off[1], transport, r[0].iterations, r[0].rel,
            r[1].iterations, r[1].rel);
        if (rank == 0)
            printf("PCG + AMG, 7-point 16^3, rank 0 %lld rows: %d iterations over %s and "
                   "staged, relative residual %.3e\n",
                   (long long)off[1], r[0].iterations, transport, r[0].rel);
        free(r[0].x);
        free(r[1].x);
    }
    ks_csr_free(&A);
}


int halo_cuda_backend(ks_backend **cuda)
{
    /* collective questions: every rank's answer counts */
    int dev = ks_backend_available("cuda"), gpu = -1;
    MPI_Allreduce(MPI_IN_PLACE, &dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (dev)
        dev = ks_comm_select_device(comm, "local", &gpu) == KS_OK &&
              ks_backend_create("cuda", cuda) == KS_OK;
    MPI_Allreduce(MPI_IN_PLACE, &dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return dev;
}

static char setup_err[400];

int halo_gather_devices(ks_backend *cuda, ks_rank_device *all)
{
    if (nranks > HALO_MAX_RANKS) { /* the callers' tables */
        snprintf(setup_err, sizeof setup_err, "more than %d ranks", HALO_MAX_RANKS);
        return -1;
    }
    const ks_error e = ks_comm_gather_devices(comm, cuda, all);
    if (e == KS_OK)
        return 0;
    snprintf(setup_err, sizeof setup_err, "ks_comm_gather_devices failed: %s: %s",
             ks_error_name(e), ks_last_error());
    return -1;
}

int halo_gpus_shared(ks_backend *cuda)
{
    ks_rank_device all[HALO_MAX_RANKS];
    if (halo_gather_devices(cuda, all) < 0)
        return -1;
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

void halo_add_setup_test(TCase *t)
{
    tcase_add_test(t, test_setup);
}
