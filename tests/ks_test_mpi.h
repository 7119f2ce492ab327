/* The harness of the test programs run under mpirun (test_mpi*.c): every
 * rank runs the same Check suite without fork (forking after MPI_Init is
 * unsafe), only rank 0 prints Check's summary (so scripts/test counts each
 * test once), and each assertion is combined over the ranks first, so all
 * ranks fail together and none is left waiting in a collective. */
#ifndef KS_TEST_MPI_H
#define KS_TEST_MPI_H

#include "ks_test.h"
#include "ksolve_mpi.h"
#include "core/ks_internal.h" /* KS_PRINTF */

#include <string.h>

/* Set by ks_test_mpi_run: MPI_COMM_WORLD as a ks_comm, a cpu backend, this
 * rank and the rank count. */
extern ks_comm *comm;
extern ks_backend *be;
extern int rank, nranks;

/* 1 when ok holds on every rank. Otherwise 0 on every rank, with why: the
 * first failing rank's reason there (also on its stderr, since only rank 0
 * prints Check's messages), a pointer to that rank elsewhere. */
int ks_test_mpi_all(int ok, char *why, size_t len, const char *fmt, ...) KS_PRINTF(4, 5);

#define ALL(cond, ...)                                                              \
    do {                                                                            \
        char why_[640];                                                             \
        int ok_ = ks_test_mpi_all((cond) ? 1 : 0, why_, sizeof why_, __VA_ARGS__);  \
        ck_assert_msg(ok_, "%s", why_);                                             \
    } while (0)

#define KS_ALL(call)                                                                \
    do {                                                                            \
        ks_error e_ = (call);                                                       \
        ALL(e_ == KS_OK, "%s: %s: %s", #call, ks_error_name(e_), ks_last_error());  \
    } while (0)

/* e is `want` on every rank and the message contains `part`. */
#define EXPECT_ERR(call, want, part)                                                \
    do {                                                                            \
        ks_error e_ = (call);                                                       \
        ALL(e_ == (want) && strstr(ks_last_error(), (part)) != NULL,                \
            "%s: got %s (%s), expected %s mentioning '%s'", #call, ks_error_name(e_), \
            ks_last_error(), ks_error_name(want), (part));                          \
    } while (0)

/* Collective: rows begin .. begin + count - 1 of the global matrix A as
 * this rank's part of a distributed matrix on backend b ("auto" format). */
ks_matrix *ks_test_dist_rows(ks_backend *b, const ks_csr *A, ks_gint begin, ks_int count);
/* The same, its outcome returned (for failures expected on every rank). */
ks_error ks_test_dist_rows_try(ks_backend *b, const ks_csr *A, ks_gint begin, ks_int count,
                               ks_matrix **M);
/* The same in the given SpMV format. */
ks_error ks_test_dist_rows_as(ks_backend *b, const ks_csr *A, ks_gint begin, ks_int count,
                              const char *format, ks_matrix **M);
/* Collective: ks_matrix_fused_step on the distributed M of A (layout off)
 * against the float64 serial arithmetic, outputs poisoned first: the
 * residual alone, a Jacobi step, a Chebyshev step with the residual, an
 * l1 step (KS_W_L1 with w the whole row's weights); what names the case. */
void ks_test_dist_fused_check(ks_matrix *M, const ks_csr *A, const ks_gint *off,
                              const char *what);
/* A random N x N matrix in layout off (nranks + 1 offsets), the same on
 * every rank (seeded): nonsymmetric, some rows empty, and each rank's
 * first row (when another rank has rows) holding only other ranks'
 * columns. */
void ks_test_random_global(uint64_t seed, const ks_gint *off, ks_csr *A);
/* y = A^k x on M's backend (k products chained there: 1.5 A x, then A
 * times that, ...), this rank's rows of x from xl, of y into yl (host). */
void ks_test_dist_chain(ks_matrix *M, const double *xl, int k, double *yl);
/* The same chain on the host, float64: y = A^k x (1.5 A x first) over
 * A's N rows, x and y of N entries. */
void ks_test_chain_ref(const ks_csr *A, const double *x, int k, double *y);
/* Destroys a solve's solver, config and its two vectors (NULLs them). */
void ks_test_solve_free(ks_solver **s, ks_config **cfg, ks_vec **b, ks_vec **x);
/* b[i] = 1 + sin(0.37 g) for this rank's rows g of the distributed vector
 * b (a right-hand side with no symmetry the solvers could use). */
void ks_test_dist_rhs(ks_vec *b);
/* Collective: v[0] = max |x_i - ref[g]| over every rank's rows g of M
 * (x: this rank's, ref: the whole vector), v[1] = max |ref[g]| alike. */
void ks_test_dist_xerr(const ks_matrix *M, const double *x, const double *ref, double v[2]);
/* Collective: ||x - ref|| / ||ref|| (2-norms over every rank's rows of M;
 * ref the whole vector), the same on every rank. */
double ks_test_dist_xrel(const ks_matrix *M, const double *x, const double *ref);

/* Collective: v[0] = max |x_i - y_i|, v[1] = max |y_i| over every rank's
 * rows of M (x, y: this rank's). */
void ks_test_dist_xdiff(const ks_matrix *M, const double *x, const double *y, double v[2]);

/* Re-setup tests: A's pattern with new values, D A D + shift I with
 * d_i = 1 + 0.5 sin(i) when perturb, else scale A + shift I (SPD where A
 * is); A2's values set on M (this rank's rows of A2 when M is distributed
 * with A's rows in order, all of them otherwise); the seconds the last
 * (re-)setup spent on strength and coarsening (none in a values-only
 * re-setup). */
void ks_test_new_values(const ks_csr *A, int perturb, double scale, double shift, ks_csr *A2);
void ks_test_set_values_of(ks_matrix *M, const ks_csr *A2);
double ks_test_split_seconds(const ks_hierarchy_info *info);
/* The seconds of the last (re-)setup's phase named `phase` (0 if none). */
double ks_test_phase_seconds(const ks_hierarchy_info *info, const char *phase);

/* The whole program: MPI_Init, the globals above, make()'s suite run as
 * described, the ranks' failures combined, after() (may be NULL: extra
 * output, on every rank), the teardown. Returns the exit status. At most
 * 8 ranks (the tests' layouts hold 8). */
int ks_test_mpi_run(int *argc, char ***argv, const char *name, Suite *(*make)(void),
                    void (*after)(void));

#endif
