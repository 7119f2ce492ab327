/* The device aggregation (amg/cuda/aggregate.cu) gives the cpu's
 * aggregates exactly: the same two distance-two passes, joins and
 * numbering, on generated and real strength graphs and several seeds. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"

#include <stdlib.h>
#include <string.h>

#ifdef KS_HAVE_CUDA

/* The aggregates of S (on the host) from one table, run on backend be. */
static ks_int *aggregates(const ks_amg_kernels *K, ks_backend *be, const ks_sparse *Sh,
                          unsigned long long seed, ks_int *na)
{
    ks_sparse S;
    KS_CHECK(ks_sparse_copy(Sh, be, &S));
    ks_int n = S.nrows, *agg = NULL, *h = malloc(sizeof *h * ((size_t)n + 1));
    ck_assert_ptr_nonnull(h);
    KS_CHECK(ks_be_alloc(be, sizeof *agg * ((size_t)n + 1), (void **)&agg, "aggregates"));
    KS_CHECK(K->aggregate(&S, seed, agg, na));
    KS_CHECK(be->ops->download(be, h, agg, sizeof *h * (size_t)n));
    be->ops->free(be, agg);
    ks_sparse_free(&S);
    return h;
}

/* cpu and cuda on the strength graph of A (symmetric measure at theta,
 * or classical when classical != 0). */
static void compare(ks_backend *cpu, ks_backend *cu, const ks_csr *A, double theta, int classical,
                    const char *what)
{
    ks_sparse Ah = ks_sparse_view_csr(cpu, A), Sh;
    if (classical)
        KS_CHECK(ks_amg_cpu_kernels.strength_classical(&Ah, theta, 0.9, &Sh));
    else
        KS_CHECK(ks_amg_cpu_kernels.strength_symmetric(&Ah, theta, &Sh));
    for (unsigned long long seed = 1; seed <= 3; seed++) {
        ks_int nc = -1, ng = -2;
        ks_int *c = aggregates(&ks_amg_cpu_kernels, cpu, &Sh, seed, &nc);
        ks_int *g = aggregates(&ks_amg_cuda_kernels, cu, &Sh, seed, &ng);
        ck_assert_msg(nc == ng, "%s seed %llu: %d aggregates on the cpu, %d on cuda", what, seed,
                      (int)nc, (int)ng);
        for (ks_int i = 0; i < A->nrows; i++)
            ck_assert_msg(c[i] == g[i], "%s seed %llu point %d: cpu %d, cuda %d", what, seed,
                          (int)i, (int)c[i], (int)g[i]);
        free(c);
        free(g);
    }
    ks_sparse_free(&Sh);
}

static void gen(ks_gen_kind kind, int n, double cz, ks_csr *A)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = p.ny = n;
    p.nz = kind == KS_GEN_POISSON2D_5 || kind == KS_GEN_POISSON2D_9 ? 1 : n;
    p.cz = cz;
    KS_CHECK(ks_generate(&p, A));
}

START_TEST(aggregates_generated)
{
    ks_backend *cpu, *cu;
    KS_CHECK(ks_backend_create("cpu", &cpu));
    KS_CHECK(ks_backend_create("cuda", &cu));
    static const struct {
        ks_gen_kind kind;
        int n;
        double cz, theta;
        int classical;
        const char *what;
    } cases[] = {
        {KS_GEN_POISSON2D_5, 40, 1.0, 0.0, 0, "2D 5-point"},
        {KS_GEN_POISSON2D_9, 30, 1.0, 0.0, 0, "2D 9-point"},
        {KS_GEN_POISSON3D_7, 24, 1.0, 0.0, 0, "3D 7-point"},
        {KS_GEN_POISSON3D_27, 14, 1.0, 0.08, 0, "3D 27-point"},
        {KS_GEN_ANISO3D, 20, 1e-3, 0.08, 0, "anisotropic"},
        {KS_GEN_CONVDIFF3D, 16, 1.0, 0.25, 1, "convection-diffusion (nonsymmetric S)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ks_csr A;
        gen(cases[k].kind, cases[k].n, cases[k].cz, &A);
        compare(cpu, cu, &A, cases[k].theta, cases[k].classical, cases[k].what);
        ks_csr_free(&A);
    }
    /* a diagonal matrix: every point isolated, all singletons */
    ks_csr D;
    KS_CHECK(ks_csr_alloc(&D, 50, 50, 50));
    for (ks_int i = 0; i <= 50; i++)
        D.rowptr[i] = i;
    for (ks_int i = 0; i < 50; i++) {
        D.colind[i] = i;
        D.val[i] = 2.0;
    }
    compare(cpu, cu, &D, 0.0, 0, "diagonal");
    ks_csr_free(&D);
    ks_backend_destroy(&cpu);
    ks_backend_destroy(&cu);
}
END_TEST

START_TEST(aggregates_real)
{
    static const char *const names[] = {"fv1", "ani4", "cage11", "watt_2", "memplus", "bcsstk14"};
    ks_backend *cpu, *cu;
    KS_CHECK(ks_backend_create("cpu", &cpu));
    KS_CHECK(ks_backend_create("cuda", &cu));
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char file[64];
        snprintf(file, sizeof file, "%s.mtx.gz", names[k]);
        const char *path = ks_test_shared_matrix(file);
        if (!path)
            continue;
        ks_csr A;
        KS_CHECK(ks_mm_read_csr(path, &A, NULL));
        compare(cpu, cu, &A, 0.0, 0, names[k]);
        ks_csr_free(&A);
    }
    ks_backend_destroy(&cpu);
    ks_backend_destroy(&cu);
}
END_TEST

#endif /* KS_HAVE_CUDA */

int main(void)
{
    Suite *s = suite_create("amg_cuda_agg");
#ifdef KS_HAVE_CUDA
    if (ks_test_have_cuda()) {
        TCase *tc = tcase_create("cuda");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, aggregates_generated);
        tcase_add_test(tc, aggregates_real);
        suite_add_tcase(s, tc);
    } else {
        ks_test_skip(2, "no CUDA device: device aggregation against the cpu's");
    }
#else
    ks_test_skip(2, "built without CUDA: device aggregation against the cpu's");
#endif
    return ks_test_run(s);
}
