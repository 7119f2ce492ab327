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
#include "halo_cases.h"
#include "ksolve_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ks_backend *cuda;
static char skip_why[200]; /* why the NCCL tests do not run ("" when they do) */

/* ------------------------------------------------------- the setting */

START_TEST(test_setting_cpu)
{
    EXPECT_ERR(ks_comm_set_halo_transport(comm, "mpi"), KS_ERR_ARG, "unknown transport mpi");
    ALL(!strcmp(ks_comm_halo_transport(comm), "auto"), "the setting is %s, not auto",
        ks_comm_halo_transport(comm));
    ks_gint off[9];
    ks_csr A;
    halo_layout(1, 60, off);
    ks_test_random_global(31, off, &A);
    const ks_gint b0 = off[rank];
    const ks_int n = (ks_int)(off[rank + 1] - b0);
    double *x = malloc(((size_t)n + 1) * sizeof *x), *y[3];
    for (ks_int i = 0; i < n; i++)
        x[i] = sin(0.7 * (double)(b0 + i)) + 0.25;
    const char *set[3] = {"auto", "direct", "staged"}, *runs[3] = {"host", "host", "staged"};
    for (int t = 0; t < 3; t++) {
        ks_matrix *M = halo_with_transport(be, set[t], &A, b0, n);
        const char *got = ks_matrix_halo_transport(M);
        ALL(got && !strcmp(got, runs[t]), "%s on the cpu runs %s, not %s", set[t],
            got ? got : "(NULL)", runs[t]);
        y[t] = malloc(((size_t)n + 1) * sizeof *y[t]);
        ks_test_dist_chain(M, x, 3, y[t]);
        ks_matrix_destroy(&M);
    }
    ALL(!memcmp(y[0], y[2], (size_t)n * sizeof *x) && !memcmp(y[0], y[1], (size_t)n * sizeof *x),
        "the cpu's transports give other bits");
#ifdef KS_HAVE_NCCL
    const char *why = "host memory";
#else
    const char *why = "built without NCCL";
#endif
    EXPECT_ERR(halo_create_with(be, "nccl", &A, b0, n), KS_ERR_UNSUPPORTED, why);
    /* the ranks disagree: every rank refuses */
    EXPECT_ERR(halo_create_with(be, rank == nranks - 1 ? "staged" : "auto", &A, b0, n),
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

START_TEST(test_nccl_spmv)
{
    halo_spmv_case(cuda, "nccl", 41, 0, 0);
    halo_spmv_case(cuda, "nccl", 42, 1, 0);
    halo_spmv_case(cuda, "nccl", 43, 2, 0); /* rank 0 without rows */
    halo_spmv_case(cuda, "nccl", 44, 0, 1); /* rank 0 without ghosts */
    halo_spmv_case(cuda, "nccl", 45, 1, 1);
}
END_TEST

START_TEST(test_nccl_amg)
{
    halo_amg_case(cuda, "nccl");
}
END_TEST

/* Ranks on one GPU: nccl refused on every rank naming the GPU, auto stages. */
START_TEST(test_nccl_shared_gpu)
{
    ks_gint off[9];
    ks_csr A;
    halo_layout(0, 40, off);
    ks_test_random_global(51, off, &A);
    const ks_int n = (ks_int)(off[rank + 1] - off[rank]);
    EXPECT_ERR(halo_create_with(cuda, "nccl", &A, off[rank], n), KS_ERR_UNSUPPORTED, "share GPU");
    ks_matrix *M = halo_with_transport(cuda, "auto", &A, off[rank], n);
    ALL(!strcmp(ks_matrix_halo_transport(M), "staged"), "auto with a shared GPU runs %s",
        ks_matrix_halo_transport(M));
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
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
    const int dev = halo_cuda_backend(&cuda);
#ifndef KS_HAVE_NCCL
    (void)dev;
    snprintf(skip_why, sizeof skip_why, "this ksolve was built without NCCL");
#else
    if (!dev)
        snprintf(skip_why, sizeof skip_why, "no CUDA device on every rank");
    else if (nranks < 2)
        snprintf(skip_why, sizeof skip_why, "one rank: nothing travels");
    else {
        const int shared = halo_gpus_shared(cuda);
        if (shared < 0) {
            snprintf(skip_why, sizeof skip_why, "the ranks' GPUs are unknown");
            halo_add_setup_test(t);
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
