/* Embedding ksolve: solve A x = b from a C program using only <ksolve.h>.
 *
 *   embed_solve [MATRIX.mtx]
 *
 * Reads the matrix (or generates a 2D Poisson problem), configures PCG +
 * Jacobi from a JSON string, solves on the GPU when one is present (else
 * on the CPU) and prints the iterations and residual. Exit status 0 when
 * the solve converged. */
#include <ksolve.h>

#include <stdio.h>
#include <stdlib.h>

/* On failure print the library's message and jump to the cleanup. */
#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != KS_OK) {                                                       \
            fprintf(stderr, "embed_solve: %s: %s\n", #call, ks_last_error());        \
            goto done;                                                               \
        }                                                                            \
    } while (0)

static const char *config_json =
    "{ \"config_version\": 2,"
    "  \"solver\": { \"solver\": \"PCG\", \"max_iters\": 1000, \"tolerance\": 1e-10,"
    "              \"convergence\": \"RELATIVE_RHS\","
    "              \"preconditioner\": { \"solver\": \"JACOBI\" } } }";

int main(int argc, char **argv)
{
    int rc = 2;
    ks_csr A = {0};
    ks_config *cfg = NULL;
    ks_backend *be = NULL;
    ks_matrix *M = NULL;
    ks_solver *solver = NULL;
    ks_vec *b = NULL, *x = NULL, *ones = NULL;

    if (argc > 1) {
        CHECK(ks_mm_read_csr(argv[1], &A, NULL));
    } else {
        ks_gen_params g;
        ks_gen_params_default(&g);
        g.kind = KS_GEN_POISSON2D_5;
        g.nx = g.ny = 100;
        CHECK(ks_generate(&g, &A));
    }
    CHECK(ks_config_create_from_string(config_json, &cfg));
    CHECK(ks_backend_create(ks_backend_available("cuda") ? "cuda" : "cpu", &be));
    CHECK(ks_matrix_create(be, &A, "auto", NULL, &M));

    /* b = A * 1, so the exact solution is all ones. */
    CHECK(ks_vec_create(be, A.nrows, &b));
    CHECK(ks_vec_create(be, A.nrows, &x));
    CHECK(ks_vec_create(be, A.nrows, &ones));
    CHECK(ks_vec_fill(ones, 1.0));
    CHECK(ks_matrix_apply(M, 1.0, ones, 0.0, b));
    CHECK(ks_vec_fill(x, 0.0));

    CHECK(ks_solver_create(be, cfg, &solver));
    CHECK(ks_solver_setup(solver, M));
    CHECK(ks_solver_solve(solver, b, x));

    const ks_solve_stats *st = ks_solver_stats(solver);
    printf("%s + %s on %s (%s), %d rows, format %s\n", ks_solver_name(solver),
           ks_solver_preconditioner_name(solver), ks_backend_name(be),
           ks_backend_description(be), (int)A.nrows, ks_matrix_format(M));
    printf("status %s after %d iterations, relative residual %.3e (true %.3e), "
           "solve %.4f s\n",
           ks_solve_status_name(st->status), st->iterations, st->relative_residual,
           st->true_relative_residual, st->solve_seconds);
    rc = st->status == KS_SOLVE_CONVERGED ? 0 : 1;

done:
    ks_vec_destroy(&ones);
    ks_vec_destroy(&x);
    ks_vec_destroy(&b);
    ks_solver_destroy(&solver);
    ks_matrix_destroy(&M);
    ks_backend_destroy(&be);
    ks_config_destroy(&cfg);
    ks_csr_free(&A);
    return rc;
}
