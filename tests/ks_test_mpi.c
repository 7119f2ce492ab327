/* The mpirun test harness (ks_test_mpi.h). */
#include "ks_test_mpi.h"
#include "spmv/format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

ks_comm *comm;
ks_backend *be;
int rank, nranks;

ks_error ks_test_dist_rows_try(ks_backend *b, const ks_csr *A, ks_gint begin, ks_int count,
                               ks_matrix **M)
{
    return ks_test_dist_rows_as(b, A, begin, count, "auto", M);
}

ks_error ks_test_dist_rows_as(ks_backend *b, const ks_csr *A, ks_gint begin, ks_int count,
                              const char *format, ks_matrix **M)
{
    const ks_int base = A->rowptr[begin], nnz = A->rowptr[begin + count] - base;
    ks_int *rp = malloc(((size_t)count + 1) * sizeof *rp);
    ks_gint *ci = malloc(((size_t)nnz + 1) * sizeof *ci);
    for (ks_int i = 0; i <= count; i++)
        rp[i] = A->rowptr[begin + i] - base;
    for (ks_int k = 0; k < nnz; k++)
        ci[k] = A->colind[base + k];
    ks_error e = ks_matrix_create_dist(b, comm, count, A->nrows, rp, ci, A->val + base, format,
                                       NULL, M);
    free(rp);
    free(ci);
    return e;
}

ks_matrix *ks_test_dist_rows(ks_backend *b, const ks_csr *A, ks_gint begin, ks_int count)
{
    ks_matrix *M = NULL;
    KS_ALL(ks_test_dist_rows_try(b, A, begin, count, &M));
    return M;
}

/* A random N x N matrix in layout off, the same on every rank (seeded):
 * nonsymmetric, some rows empty, and each rank's first row (when another
 * rank has rows) holding only other ranks' columns. */
void ks_test_random_global(uint64_t seed, const ks_gint *off, ks_csr *A)
{
    const ks_int N = (ks_int)off[nranks];
    ks_test_rng_seed(seed);
    const int64_t cap = (int64_t)N * 8 + 8;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    int64_t m = 0;
    for (ks_int i = 0; i < N; i++) {
        int q = 0;
        while (i >= off[q + 1])
            q++;
        const ks_gint lo = off[q], hi = off[q + 1];
        const int only_ghost = i == lo && hi - lo < N;
        const int len = (int)(ks_test_rng_next() % 6); /* 0: an empty row */
        for (int k = 0; k < len; k++) {
            ks_int j = (ks_int)(ks_test_rng_next() % (uint64_t)N);
            if (only_ghost && j >= lo && j < hi)
                j = (ks_int)((hi + ks_test_rng_next() % (uint64_t)(N - (hi - lo))) % N);
            r[m] = i;
            c[m] = j;
            v[m++] = ks_test_urand() - 0.5;
        }
    }
    KS_CHECK(ks_csr_from_coo(N, N, m, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

void ks_test_solve_free(ks_solver **s, ks_config **cfg, ks_vec **b, ks_vec **x)
{
    ks_vec_destroy(b);
    ks_vec_destroy(x);
    ks_solver_destroy(s);
    ks_config_destroy(cfg);
}

void ks_test_dist_rhs(ks_vec *b)
{
    const ks_int n = ks_vec_size(b);
    const ks_gint r0 = ks_vec_row_begin(b);
    double *h = malloc(((size_t)n + 1) * sizeof *h);
    for (ks_int i = 0; i < n; i++)
        h[i] = 1.0 + sin(0.37 * (double)(r0 + i));
    KS_ALL(ks_vec_set_host(b, h));
    free(h);
}

void ks_test_dist_xerr(const ks_matrix *M, const double *x, const double *ref, double v[2])
{
    const ks_gint r0 = ks_matrix_row_begin(M);
    v[0] = v[1] = 0.0;
    for (ks_int i = 0; i < ks_matrix_rows(M); i++) {
        v[0] = fmax(v[0], fabs(x[i] - ref[r0 + i]));
        v[1] = fmax(v[1], fabs(ref[r0 + i]));
    }
    KS_ALL(ks_comm_max(comm, v, 2));
}

void ks_test_dist_xdiff(const ks_matrix *M, const double *x, const double *y, double v[2])
{
    v[0] = v[1] = 0.0;
    for (ks_int i = 0; i < ks_matrix_rows(M); i++) {
        v[0] = fmax(v[0], fabs(x[i] - y[i]));
        v[1] = fmax(v[1], fabs(y[i]));
    }
    KS_ALL(ks_comm_max(comm, v, 2));
}

void ks_test_new_values(const ks_csr *A, int perturb, double scale, double shift, ks_csr *A2)
{
    KS_CHECK(ks_csr_copy(A, A2));
    for (ks_int i = 0; i < A2->nrows; i++)
        for (ks_int k = A2->rowptr[i]; k < A2->rowptr[i + 1]; k++) {
            const ks_int j = A2->colind[k];
            A2->val[k] *= perturb ? (1.0 + 0.5 * sin((double)i)) * (1.0 + 0.5 * sin((double)j))
                                  : scale;
            A2->val[k] += i == j ? shift : 0.0;
        }
}

void ks_test_set_values_of(ks_matrix *M, const ks_csr *A2)
{
    const ks_gint r0 = ks_matrix_row_begin(M); /* 0 for a matrix on one process */
    KS_ALL(ks_matrix_set_values(M, A2->val + A2->rowptr[r0]));
}

double ks_test_phase_seconds(const ks_hierarchy_info *info, const char *phase)
{
    for (int i = 0; i < info->nphases; i++)
        if (!strcmp(info->phase_names[i], phase))
            return info->phase_seconds[i];
    return 0.0;
}

double ks_test_split_seconds(const ks_hierarchy_info *info)
{
    return ks_test_phase_seconds(info, "strength") + ks_test_phase_seconds(info, "coarsening");
}

double ks_test_dist_xrel(const ks_matrix *M, const double *x, const double *ref)
{
    const ks_gint r0 = ks_matrix_row_begin(M);
    double v[2] = {0.0, 0.0};
    for (ks_int i = 0; i < ks_matrix_rows(M); i++) {
        const double d = x[i] - ref[r0 + i];
        v[0] += d * d;
        v[1] += ref[r0 + i] * ref[r0 + i];
    }
    KS_ALL(ks_comm_sum(comm, v, 2));
    return v[1] > 0.0 ? sqrt(v[0] / v[1]) : sqrt(v[0]);
}

int ks_test_mpi_all(int ok, char *why, size_t len, const char *fmt, ...)
{
    int mine = ok ? nranks : rank, first = nranks;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == nranks)
        return 1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!ok)
        fprintf(stderr, "rank %d: %s\n", rank, msg);
    if (rank == first)
        snprintf(why, len, "rank %d: %s", rank, msg);
    else
        snprintf(why, len, "failed on rank %d (its stderr says why)", first);
    return 0;
}

int ks_test_mpi_run(int *argc, char ***argv, const char *name, Suite *(*make)(void),
                    void (*after)(void))
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks > 8) {
        if (rank == 0)
            fprintf(stderr, "%s: at most 8 ranks\n", name);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    if (ks_comm_create(MPI_COMM_WORLD, &comm) != KS_OK ||
        ks_backend_create("cpu", &be) != KS_OK) {
        fprintf(stderr, "rank %d: setup failed: %s\n", rank, ks_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    SRunner *sr = srunner_create(make());
    srunner_set_fork_status(sr, CK_NOFORK);
    if (rank == 0)
        printf("%s on %d rank%s\n", name, nranks, nranks == 1 ? "" : "s");
    srunner_run_all(sr, rank == 0 ? CK_NORMAL : CK_SILENT);
    int failed = srunner_ntests_failed(sr), any = 0;
    srunner_free(sr);
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (after)
        after();
    ks_backend_destroy(&be);
    ks_comm_destroy(&comm);
    fflush(stdout);
    MPI_Finalize();
    return any ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* One fused pass on M against rows of A's float64 reference (x, b, w,
 * xprev global arrays; a == 0 or xprev NULL: none): the residual r and
 * the new iterate xo, as asked for. */
static void fused_one(ks_matrix *M, const ks_csr *A, const ks_gint *off, const char *what,
                      const char *step, const double *xg, const double *bg, const double *wg,
                      const double *pg, double a, double c, int want_r, int want_xo,
                      int wkind)
{
    const ks_int N = A->nrows, n = (ks_int)(off[rank + 1] - off[rank]);
    double *ax = malloc(((size_t)N + 1) * sizeof *ax);
    double *rl = malloc(((size_t)n + 1) * sizeof *rl), *xl = malloc(((size_t)n + 1) * sizeof *xl);
    ks_csr_spmv_ref(A, 1.0, xg, 0.0, ax);
    ks_vec *x = NULL, *b = NULL, *w = NULL, *p = NULL, *r = NULL, *xo = NULL;
    KS_ALL(ks_matrix_vec_create(M, &x));
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_matrix_vec_create(M, &w));
    KS_ALL(ks_vec_set_host(x, xg + off[rank]));
    KS_ALL(ks_vec_set_host(b, bg + off[rank]));
    KS_ALL(ks_vec_set_host(w, wg + off[rank]));
    if (pg) {
        KS_ALL(ks_matrix_vec_create(M, &p));
        KS_ALL(ks_vec_set_host(p, pg + off[rank]));
    }
    if (want_r) {
        KS_ALL(ks_matrix_vec_create(M, &r));
        KS_ALL(ks_vec_fill(r, NAN)); /* poisoned: every row must be written */
    }
    if (want_xo) {
        KS_ALL(ks_matrix_vec_create(M, &xo));
        KS_ALL(ks_vec_fill(xo, NAN));
    }
    KS_ALL(ks_matrix_fused_step(M, b, x, r, a, c, want_xo ? w : NULL, wkind, 1.0, p, xo));
    double err_r = 0.0, err_x = 0.0, scale = 0.0;
    if (r)
        KS_ALL(ks_vec_get_host(r, rl));
    if (xo)
        KS_ALL(ks_vec_get_host(xo, xl));
    for (ks_int i = 0; i < n; i++) {
        const ks_int g = (ks_int)off[rank] + i;
        const double t = bg[g] - ax[g];
        const double v = xg[g] + c * wg[g] * t + (pg ? a * (xg[g] - pg[g]) : 0.0);
        scale = fmax(scale, fmax(fabs(t), fabs(v)));
        if (r)
            err_r = fmax(err_r, isnan(rl[i]) ? INFINITY : fabs(rl[i] - t));
        if (xo)
            err_x = fmax(err_x, isnan(xl[i]) ? INFINITY : fabs(xl[i] - v));
    }
    double e[3] = {err_r, err_x, scale};
    MPI_Allreduce(MPI_IN_PLACE, e, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ALL(e[0] <= 1e-13 * (e[2] + 1.0) && e[1] <= 1e-13 * (e[2] + 1.0),
        "%s, %s: the fused pass's r differs by %g, xo by %g (scale %g)", what, step, e[0], e[1],
        e[2]);
    ks_vec *all[] = {x, b, w, p, r, xo};
    for (int k = 0; k < 6; k++)
        ks_vec_destroy(&all[k]);
    free(ax);
    free(rl);
    free(xl);
}

void ks_test_dist_fused_check(ks_matrix *M, const ks_csr *A, const ks_gint *off,
                              const char *what)
{
    const ks_int N = A->nrows;
    double *xg = malloc(((size_t)N + 1) * sizeof *xg), *bg = malloc(((size_t)N + 1) * sizeof *bg);
    double *wg = malloc(((size_t)N + 1) * sizeof *wg), *pg = malloc(((size_t)N + 1) * sizeof *pg);
    for (ks_int i = 0; i < N; i++) {
        xg[i] = 0.5 + sin(0.41 * i);
        bg[i] = cos(0.23 * i) - 0.1;
        wg[i] = 0.3 + 0.1 * cos(1.7 * i);
        pg[i] = 0.2 * sin(0.9 * i + 1.0);
    }
    fused_one(M, A, off, what, "residual", xg, bg, wg, NULL, 0.0, 0.0, 1, 0, KS_W_VECTOR);
    fused_one(M, A, off, what, "Jacobi step", xg, bg, wg, NULL, 0.0, 0.7, 0, 1, KS_W_VECTOR);
    fused_one(M, A, off, what, "Chebyshev step with r", xg, bg, wg, pg, 0.35, 0.6, 1, 1,
              KS_W_VECTOR);
    /* l1 weights come as the vector over ranks (the ghost columns count) */
    fused_one(M, A, off, what, "l1 step", xg, bg, wg, pg, -0.2, 1.1, 0, 1, KS_W_L1);
    free(xg);
    free(bg);
    free(wg);
    free(pg);
}

void ks_test_dist_chain(ks_matrix *M, const double *xl, int k, double *yl)
{
    ks_vec *v[2] = {NULL, NULL};
    KS_ALL(ks_matrix_vec_create(M, &v[0]));
    KS_ALL(ks_matrix_vec_create(M, &v[1]));
    KS_ALL(ks_vec_set_host(v[0], xl));
    for (int j = 0; j < k; j++)
        KS_ALL(ks_matrix_apply(M, j ? 1.0 : 1.5, v[j % 2], 0.0, v[(j + 1) % 2]));
    KS_ALL(ks_vec_get_host(v[k % 2], yl));
    ks_vec_destroy(&v[0]);
    ks_vec_destroy(&v[1]);
}

void ks_test_chain_ref(const ks_csr *A, const double *x, int k, double *y)
{
    const size_t N = (size_t)A->nrows;
    double *t = malloc(N * sizeof *t + 1);
    memcpy(y, x, N * sizeof *y);
    for (int j = 0; j < k; j++) {
        ks_csr_spmv_ref(A, j ? 1.0 : 1.5, y, 0.0, t);
        memcpy(y, t, N * sizeof *t);
    }
    free(t);
}
