/* The halo's CUDA IPC transport (mpi/halo_ipc.c), under mpirun -np 2 and 3
 * (tests/meson.build).
 *
 * Everywhere: the setting "ipc" (ks_comm_set_halo_transport, KS_MPI_HALO)
 * and its refusal on the cpu backend, on every rank with the reason (a
 * build without CUDA says so).
 *
 * With a CUDA device on every rank (ks_comm_select_device's default map:
 * rank k of a node on GPU k mod G; ranks may share a GPU, which IPC
 * between processes allows) and every rank on one host: distributed SpMV
 * over ipc against the float64 serial product and bit for bit against the
 * staged transport, on random matrices with even and uneven rows, a rank
 * without rows and a rank without ghosts; 60 products back to back on the
 * device, each one's x the last one's result, over two ipc matrices in
 * turn (the send buffers' reuse and the plans' own message tags), every
 * result compared, the two destroyed in different orders on the ranks;
 * PCG + AMG on cuda with the same iterations, residual and x bits as
 * staged; auto running ipc where every rank has its own GPU (staged where
 * ranks share one), bit for bit as staged. Ranks on several hosts: ipc refused on every rank
 * naming them. Otherwise the GPU tests are skipped with the reason
 * printed. */
#include "halo_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ks_backend *cuda;
static char skip_why[200]; /* why the GPU tests do not run ("" when they do) */

/* ------------------------------------------------------- the setting */

START_TEST(test_ipc_setting_cpu)
{
    KS_ALL(ks_comm_set_halo_transport(comm, "ipc"));
    ALL(!strcmp(ks_comm_halo_transport(comm), "ipc"), "the setting is %s, not ipc",
        ks_comm_halo_transport(comm));
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    ks_comm *c = NULL;
    setenv("KS_MPI_HALO", "ipc", 1);
    KS_ALL(ks_comm_create(MPI_COMM_WORLD, &c));
    unsetenv("KS_MPI_HALO");
    ALL(!strcmp(ks_comm_halo_transport(c), "ipc"), "KS_MPI_HALO=ipc gave %s",
        ks_comm_halo_transport(c));
    ks_comm_destroy(&c);
    ks_gint off[9];
    ks_csr A;
    halo_layout(0, 40, off);
    ks_test_random_global(61, off, &A);
    const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
#ifdef KS_HAVE_CUDA
    const char *why = "halo transport ipc: a rank's backend is not cuda";
#else
    const char *why = "halo transport ipc: this ksolve was built without CUDA";
#endif
    EXPECT_ERR(halo_create_with(be, "ipc", &A, off[rank], n), KS_ERR_UNSUPPORTED, why);
    /* the comm is left as it was: a matrix after the refusal stages or
     * hands MPI the host vectors */
    ks_matrix *M = halo_with_transport(be, "auto", &A, off[rank], n);
    ALL(!strcmp(ks_matrix_halo_transport(M), "host"), "auto on the cpu runs %s",
        ks_matrix_halo_transport(M));
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------ IPC on the GPUs */
#ifdef KS_HAVE_CUDA

START_TEST(test_ipc_spmv)
{
    halo_spmv_case(cuda, "ipc", 71, 0, 0);
    halo_spmv_case(cuda, "ipc", 72, 1, 0);
    halo_spmv_case(cuda, "ipc", 73, 2, 0); /* rank 0 without rows */
    halo_spmv_case(cuda, "ipc", 74, 0, 1); /* rank 0 without ghosts */
    halo_spmv_case(cuda, "ipc", 75, 1, 1);
}
END_TEST

#define NCHAIN 60

/* v[k+1] = s A v[k] for k < NCHAIN, on M[k % 2] (two matrices of A), queued
 * back to back with no host wait between them; every v[k] into out
 * (NCHAIN + 1 rows of n, host). */
static void chain_all(ks_matrix *const *M, double s, const double *x, ks_int n, double *out)
{
    ks_vec *v[NCHAIN + 1];
    for (int k = 0; k <= NCHAIN; k++)
        KS_ALL(ks_matrix_vec_create(M[0], &v[k]));
    KS_ALL(ks_vec_set_host(v[0], x));
    for (int k = 0; k < NCHAIN; k++)
        KS_ALL(ks_matrix_apply(M[k % 2], s, v[k], 0.0, v[k + 1]));
    for (int k = 0; k <= NCHAIN; k++) {
        KS_ALL(ks_vec_get_host(v[k], out + (size_t)k * (size_t)n));
        ks_vec_destroy(&v[k]);
    }
}

/* 60 chained products over ipc and staged, each against the serial
 * chain (s = 1 / max row sum: the values neither grow nor vanish fast). */
static void chain_case(uint64_t seed, int uneven)
{
    ks_gint off[9];
    ks_csr A;
    halo_layout(uneven, 90, off);
    ks_test_random_global(seed, off, &A);
    const ks_int N = A.nrows, n = (ks_int)(off[rank + 1] - off[rank]);
    double s = 0.0;
    for (ks_int i = 0; i < N; i++) {
        double r = 0.0;
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            r += fabs(A.val[k]);
        s = fmax(s, r);
    }
    s = s > 0.0 ? 1.0 / s : 1.0;
    const size_t all = (size_t)(NCHAIN + 1) * (size_t)n + 1;
    double *yi = malloc(all * sizeof *yi), *ys = malloc(all * sizeof *ys);
    double *g = malloc((size_t)(NCHAIN + 1) * (size_t)N * sizeof *g);
    for (ks_int i = 0; i < N; i++)
        g[i] = sin(0.9 * i + (double)seed) + 0.5;
    for (int k = 0; k < NCHAIN; k++)
        ks_csr_spmv_ref(&A, s, g + (size_t)k * N, 0.0, g + (size_t)(k + 1) * N);
    ks_matrix *Mi[2], *Ms[2];
    for (int t = 0; t < 2; t++) {
        Mi[t] = halo_with_transport(cuda, "ipc", &A, off[rank], n);
        Ms[t] = halo_with_transport(cuda, "staged", &A, off[rank], n);
    }
    ALL(!strcmp(ks_matrix_halo_transport(Mi[0]), "ipc") &&
            !strcmp(ks_matrix_halo_transport(Mi[1]), "ipc"),
        "seed %llu: transports %s and %s, not ipc", (unsigned long long)seed,
        ks_matrix_halo_transport(Mi[0]), ks_matrix_halo_transport(Mi[1]));
    ks_comm_reset_stats(comm);
    chain_all(Mi, s, g + off[rank], n, yi);
    ks_comm_stats cs;
    KS_ALL(ks_comm_get_stats(comm, &cs));
    chain_all(Ms, s, g + off[rank], n, ys);
    ALL(cs.halo_exchanges == NCHAIN, "seed %llu: %lld exchanges counted, want %d",
        (unsigned long long)seed, cs.halo_exchanges, NCHAIN);
    int bad = -1, badbits = -1;
    double worst = 0.0;
    for (int k = 1; k <= NCHAIN; k++) {
        const double *y = yi + (size_t)k * n;
        const double err = ks_test_max_relerr(y, g + (size_t)k * N + off[rank], n);
        if (!(err <= 1e-12) && bad < 0) {
            bad = k;
            worst = err;
        }
        if (memcmp(y, ys + (size_t)k * n, (size_t)n * sizeof *y) && badbits < 0)
            badbits = k;
    }
    ALL(bad < 0, "seed %llu, rank 0 %lld rows: product %d of %d over ipc differs from the "
        "serial chain by %g", (unsigned long long)seed, (long long)off[1], bad, NCHAIN, worst);
    ALL(badbits < 0, "seed %llu, rank 0 %lld rows: product %d of %d over ipc and staged differ "
        "in their bits", (unsigned long long)seed, (long long)off[1], badbits, NCHAIN);
    /* destroyed in another order on rank 0 than on the others: ipc's
     * destroy waits for no neighbour's destroy */
    for (int t = 0; t < 2; t++) {
        ks_matrix_destroy(&Mi[rank == 0 ? t : 1 - t]);
        ks_matrix_destroy(&Ms[t]);
    }
    free(yi);
    free(ys);
    free(g);
    ks_csr_free(&A);
}

START_TEST(test_ipc_chain)
{
    chain_case(81, 0);
    chain_case(82, 1);
    chain_case(83, 2); /* rank 0 without rows */
}
END_TEST

START_TEST(test_ipc_amg)
{
    halo_amg_case(cuda, "ipc");
}
END_TEST

/* auto runs ipc where every rank has its own GPU of one host; where
 * ranks share a GPU it stages (nccl refuses them); the product is the
 * staged transport's bit for bit either way. */
START_TEST(test_ipc_auto)
{
    const int shared = halo_gpus_shared(cuda);
    ALL(shared >= 0, "the ranks' GPUs are unknown");
    ks_gint off[9];
    ks_csr A;
    halo_layout(1, 70, off);
    ks_test_random_global(95, off, &A);
    const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
    ks_matrix *Ma = halo_with_transport(cuda, "auto", &A, off[rank], n);
    ks_matrix *Ms = halo_with_transport(cuda, "staged", &A, off[rank], n);
    const char *want = shared ? "staged" : "ipc";
    ALL(!strcmp(ks_matrix_halo_transport(Ma), want), "auto runs %s where ranks %s: want %s",
        ks_matrix_halo_transport(Ma), shared ? "share a GPU" : "have their own GPUs", want);
    double *x = malloc(((size_t)n + 1) * sizeof *x), *ya = malloc(((size_t)n + 1) * sizeof *ya);
    double *ys = malloc(((size_t)n + 1) * sizeof *ys);
    for (ks_int i = 0; i < n; i++)
        x[i] = cos(0.3 * (double)(off[rank] + i)) - 0.2;
    ks_test_dist_chain(Ma, x, 3, ya);
    ks_test_dist_chain(Ms, x, 3, ys);
    ALL(!memcmp(ya, ys, (size_t)n * sizeof *ya), "auto (%s) and staged give other bits",
        ks_matrix_halo_transport(Ma));
    ks_matrix_destroy(&Ma);
    ks_matrix_destroy(&Ms);
    free(x);
    free(ya);
    free(ys);
    ks_csr_free(&A);
}
END_TEST

/* Ranks on several hosts: ipc refused on every rank, naming them. */
START_TEST(test_ipc_hosts)
{
    ks_gint off[9];
    ks_csr A;
    halo_layout(0, 40, off);
    ks_test_random_global(91, off, &A);
    const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
    EXPECT_ERR(halo_create_with(cuda, "ipc", &A, off[rank], n), KS_ERR_UNSUPPORTED,
               "different hosts");
    ks_csr_free(&A);
}
END_TEST

/* Collective: 1 when every rank runs on one host, -1 when the ranks'
 * devices could not be gathered (halo_gather_devices). Called from
 * suite(), outside any test, so it must not assert. */
static int one_host(void)
{
    ks_rank_device all[HALO_MAX_RANKS];
    if (halo_gather_devices(cuda, all) < 0)
        return -1;
    for (int q = 1; q < nranks; q++)
        if (strcmp(all[q].host, all[0].host))
            return 0;
    return 1;
}
#endif /* KS_HAVE_CUDA */

static void after(void)
{
    if (rank == 0 && skip_why[0])
        printf("SKIPPED: 4 (%s)\n", skip_why);
    ks_backend_destroy(&cuda);
}

static Suite *suite(void)
{
    Suite *s = suite_create("mpi_ipc");
    TCase *t = tcase_create("halo_ipc");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_ipc_setting_cpu);
#ifndef KS_HAVE_CUDA
    snprintf(skip_why, sizeof skip_why, "this ksolve was built without CUDA");
#else
    if (!halo_cuda_backend(&cuda))
        snprintf(skip_why, sizeof skip_why, "no CUDA device on every rank");
    else if (nranks < 2)
        snprintf(skip_why, sizeof skip_why, "one rank: nothing travels");
    else {
        const int same = one_host();
        if (same < 0) {
            snprintf(skip_why, sizeof skip_why, "the ranks' hosts are unknown");
            halo_add_setup_test(t);
        } else if (!same) {
            snprintf(skip_why, sizeof skip_why, "the ranks run on several hosts");
            tcase_add_test(t, test_ipc_hosts);
        }
    }
    if (!skip_why[0]) {
        tcase_add_test(t, test_ipc_spmv);
        tcase_add_test(t, test_ipc_chain);
        tcase_add_test(t, test_ipc_amg);
        tcase_add_test(t, test_ipc_auto);
    }
#endif
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_ipc", suite, after);
}
