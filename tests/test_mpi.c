/* MPI distribution, run under mpirun with 1 to 4 ranks (tests/meson.build):
 * row layouts and the ghost map and halo plan of a hand-made matrix,
 * distributed SpMV against the serial reference on random matrices (empty
 * rows, rows with only ghost entries, a rank without rows, unsorted input,
 * nonsymmetric patterns) and after new values (ks_matrix_set_values and
 * _device; a NaN refused alike on every rank), reductions (rank-order
 * sums: the same bits on every rank and in every call), parallel
 * generation against ks_generate, CG and BiCGStab against one-process
 * solves, the same solve twice, a re-setup after new values against a
 * fresh setup, input errors failing on every rank without a hang, the
 * staged and direct halo transports on the cpu, a rank's share of its
 * CPUs (ks_comm_share_threads) and its bad arguments (AMG over ranks:
 * test_mpi_amg_solve.c).
 *
 * Check runs without fork (forking after MPI_Init is unsafe), so every
 * assertion is first combined over the ranks: all ranks fail together and
 * none is left waiting in a collective. Only rank 0 prints Check's summary;
 * a failing rank prints its reason on stderr. Every rank builds the whole
 * of the small test matrices to compute references; the library's
 * distributed path never sees them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "ks_test_mpi.h"
#include "ksolve_mpi.h"
#include "mpi/mpi_internal.h"
#include "vec/vec_fused.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sched.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif



/* The same bits on every rank. */
static int same_on_all(const double *v, int k)
{
    double *all = malloc((size_t)k * (size_t)nranks * sizeof *all);
    MPI_Allgather(v, k, MPI_DOUBLE, all, k, MPI_DOUBLE, MPI_COMM_WORLD);
    int same = 1;
    for (int q = 1; q < nranks; q++)
        same &= memcmp(all, all + (size_t)q * (size_t)k, (size_t)k * sizeof *v) == 0;
    free(all);
    return same;
}

/* --------------------------------------------------------------- layouts */

/* Offsets from counts. */
static void offsets_of(const ks_int *count, ks_gint *off)
{
    off[0] = 0;
    for (int q = 0; q < nranks; q++)
        off[q + 1] = off[q] + count[q];
}

/* Counts for a layout where rank 1 (of 3 or more) has no rows. */
static void counts_with_empty_rank(ks_int base, ks_int *count)
{
    for (int q = 0; q < nranks; q++)
        count[q] = nranks >= 3 && q == 1 ? 0 : base + (q % 2);
}

/* This rank's rows of the global CSR A in layout off, with global columns;
 * rows of odd global number reversed, so the input is not sorted. */
static void rows_of(const ks_csr *A, const ks_gint *off, ks_int *nloc, ks_int **rp,
                    ks_gint **ci, double **val)
{
    const ks_gint lo = off[rank], hi = off[rank + 1];
    *nloc = (ks_int)(hi - lo);
    const ks_int nnz = A->rowptr[hi] - A->rowptr[lo];
    *rp = malloc(((size_t)*nloc + 1) * sizeof **rp);
    *ci = malloc(((size_t)nnz + 1) * sizeof **ci);
    *val = malloc(((size_t)nnz + 1) * sizeof **val);
    ck_assert(*rp && *ci && *val);
    for (ks_int i = 0; i <= *nloc; i++)
        (*rp)[i] = A->rowptr[lo + i] - A->rowptr[lo];
    for (ks_int i = 0; i < *nloc; i++) {
        const ks_int b = A->rowptr[lo + i], len = A->rowptr[lo + i + 1] - b;
        for (ks_int k = 0; k < len; k++) {
            const ks_int src = (lo + i) % 2 ? b + len - 1 - k : b + k;
            (*ci)[(*rp)[i] + k] = A->colind[src];
            (*val)[(*rp)[i] + k] = A->val[src];
        }
    }
}

START_TEST(test_vec_layout)
{
    ks_int count[8];
    counts_with_empty_rank(3, count);
    ks_gint off[9];
    offsets_of(count, off);
    ks_vec *v = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, count[rank], &v));
    ALL(ks_vec_size(v) == count[rank] && ks_vec_row_begin(v) == off[rank] &&
            ks_vec_global_size(v) == off[nranks] && ks_vec_comm(v) == comm,
        "size %ld, begin %lld, global %lld", (long)ks_vec_size(v),
        (long long)ks_vec_row_begin(v), (long long)ks_vec_global_size(v));
    /* ones everywhere: the global sum counts every rank's entries once */
    KS_ALL(ks_vec_fill(v, 1.0));
    double s = 0;
    KS_ALL(ks_vec_norm1(v, &s));
    ALL(s == (double)off[nranks], "norm1 of ones %g, expected %lld", s, (long long)off[nranks]);
    ks_vec_destroy(&v);
    /* a local vector: begin 0, global = local */
    KS_ALL(ks_vec_create(be, 5, &v));
    ALL(ks_vec_row_begin(v) == 0 && ks_vec_global_size(v) == 5 && !ks_vec_comm(v), "local");
    ks_vec_destroy(&v);
    ALL(ks_comm_rank(comm) == rank && ks_comm_size(comm) == nranks, "comm rank/size");
}
END_TEST

/* ------------------------------------------------ hand-made ghost map */

/* Counts of the hand-made matrix: every third rank from 1 has no rows. */
static ks_int hand_count(int q) { return q % 3 == 1 ? 0 : 2 + q % 2; }

/* Row i's columns of the hand-made N x N matrix, in the order given
 * (unsorted, duplicates dropped); returns how many. */
static int hand_cols(ks_gint i, ks_gint N, ks_gint *c)
{
    const ks_gint cand[4] = {i, (i + 3) % N, (2 * i + 1) % N, N - 1 - i};
    int m = 0;
    for (int a = 0; a < 4; a++) {
        int dup = 0;
        for (int b = 0; b < m; b++)
            dup |= c[b] == cand[a];
        if (!dup)
            c[m++] = cand[a];
    }
    return m;
}

static double hand_val(ks_gint i, ks_gint j) { return 1.0 + (double)i + 0.01 * (double)j; }

static int cmp_g(const void *a, const void *b)
{
    ks_gint x = *(const ks_gint *)a, y = *(const ks_gint *)b;
    return (x > y) - (x < y);
}

START_TEST(test_ghost_map)
{
    ks_int count[8];
    for (int q = 0; q < nranks; q++)
        count[q] = hand_count(q);
    ks_gint off[9];
    offsets_of(count, off);
    const ks_gint N = off[nranks], lo = off[rank], hi = off[rank + 1];
    const ks_int nloc = count[rank];
    ks_int *rp = malloc(((size_t)nloc + 1) * sizeof *rp);
    ks_gint *ci = malloc(4 * ((size_t)nloc + 1) * sizeof *ci);
    double *val = malloc(4 * ((size_t)nloc + 1) * sizeof *val);
    ks_gint ghosts[64];
    int ng = 0;
    rp[0] = 0;
    for (ks_int i = 0; i < nloc; i++) {
        int m = hand_cols(lo + i, N, ci + rp[i]);
        for (int k = 0; k < m; k++) {
            ks_gint c = ci[rp[i] + k];
            val[rp[i] + k] = hand_val(lo + i, c);
            if (c < lo || c >= hi)
                ghosts[ng++] = c;
        }
        rp[i + 1] = rp[i] + m;
    }
    qsort(ghosts, (size_t)ng, sizeof *ghosts, cmp_g);
    int nu = 0;
    for (int k = 0; k < ng; k++)
        if (nu == 0 || ghosts[k] != ghosts[nu - 1])
            ghosts[nu++] = ghosts[k];

    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, nloc, N, rp, ci, val, "csr", NULL, &M));
    ALL(ks_matrix_rows(M) == nloc && ks_matrix_cols(M) == nloc && ks_matrix_nnz(M) == rp[nloc] &&
            ks_matrix_global_rows(M) == N && ks_matrix_row_begin(M) == lo &&
            ks_matrix_comm(M) == comm && !strcmp(ks_matrix_format(M), "csr"),
        "sizes: rows %ld cols %ld nnz %ld global %lld begin %lld", (long)ks_matrix_rows(M),
        (long)ks_matrix_cols(M), (long)ks_matrix_nnz(M), (long long)ks_matrix_global_rows(M),
        (long long)ks_matrix_row_begin(M));
    const ks_dist_impl *d = (const ks_dist_impl *)M->dist;
    int ok = d->nghost == nu && (nu == 0) == (d->base.ghost == NULL);
    for (int g = 0; ok && g < nu; g++)
        ok = d->ghost_gid[g] == ghosts[g];
    ALL(ok, "ghost ids: %ld, expected %d", (long)d->nghost, nu);

    /* Both blocks: every entry where it belongs, rows sorted. */
    const ks_csr *L = ks_matrix_host_csr(M);
    const ks_csr *G = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    ok = L && L->nrows == nloc && L->ncols == nloc;
    for (ks_int i = 0; ok && i < nloc; i++) {
        ks_gint want[4];
        int m = hand_cols(lo + i, N, want);
        qsort(want, (size_t)m, sizeof *want, cmp_g);
        ks_int kl = L->rowptr[i], kg = G ? G->rowptr[i] : 0;
        for (int k = 0; ok && k < m; k++) {
            const ks_gint c = want[k];
            if (c >= lo && c < hi) {
                ok = kl < L->rowptr[i + 1] && L->colind[kl] == c - lo &&
                     L->val[kl] == hand_val(lo + i, c);
                kl++;
            } else {
                ok = G && kg < G->rowptr[i + 1] && d->ghost_gid[G->colind[kg]] == c &&
                     G->val[kg] == hand_val(lo + i, c);
                kg++;
            }
        }
        ok = ok && kl == L->rowptr[i + 1] && (!G || kg == G->rowptr[i + 1]);
    }
    ALL(ok, "local / ghost blocks differ from the hand-made rows");

    /* The plan: receive each owner's ghosts; send each rank what its rows
     * reference among ours, in ascending order. */
    const ks_halo *h = d->halo;
    int nrecv = 0, q = 0;
    ok = 1;
    for (int g = 0; g < nu;) {
        while (ghosts[g] >= off[q + 1])
            q++;
        int c = 0;
        while (g < nu && ghosts[g] < off[q + 1])
            g++, c++;
        ok = ok && nrecv < h->nrecv && h->recv_rank[nrecv] == q &&
             h->recv_start[nrecv + 1] - h->recv_start[nrecv] == c;
        nrecv++;
    }
    ok = ok && nrecv == h->nrecv;
    int nsend = 0;
    for (int r = 0; r < nranks; r++) {
        if (r == rank)
            continue;
        ks_gint want[64];
        int nw = 0;
        for (ks_gint i = off[r]; i < off[r + 1]; i++) {
            ks_gint c[4];
            int m = hand_cols(i, N, c);
            for (int k = 0; k < m; k++)
                if (c[k] >= lo && c[k] < hi)
                    want[nw++] = c[k];
        }
        qsort(want, (size_t)nw, sizeof *want, cmp_g);
        int u = 0;
        for (int k = 0; k < nw; k++)
            if (u == 0 || want[k] != want[u - 1])
                want[u++] = want[k];
        if (u == 0)
            continue;
        ok = ok && nsend < h->nsend && h->send_rank[nsend] == r &&
             h->send_start[nsend + 1] - h->send_start[nsend] == u;
        for (int k = 0; ok && k < u; k++)
            ok = h->send_idx[h->send_start[nsend] + k] == want[k] - lo;
        nsend++;
    }
    ALL(ok && nsend == h->nsend, "halo plan: %d receives, %d sends", h->nrecv, h->nsend);

    /* And the product with it. */
    ks_vec *x = NULL, *y = NULL;
    KS_ALL(ks_matrix_vec_create(M, &x));
    KS_ALL(ks_matrix_vec_create(M, &y));
    double xs[8], ys[8];
    for (ks_int i = 0; i < nloc; i++)
        xs[i] = 1.0 + 0.5 * (double)(lo + i);
    KS_ALL(ks_vec_set_host(x, xs));
    KS_ALL(ks_matrix_apply(M, 1.0, x, 0.0, y));
    KS_ALL(ks_vec_get_host(y, ys));
    ok = 1;
    for (ks_int i = 0; i < nloc; i++) {
        ks_gint c[4];
        int m = hand_cols(lo + i, N, c);
        double want = 0.0;
        for (int k = 0; k < m; k++)
            want += hand_val(lo + i, c[k]) * (1.0 + 0.5 * (double)c[k]);
        ok = ok && fabs(ys[i] - want) <= 1e-14 * fabs(want);
    }
    ALL(ok, "hand-made product");
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_matrix_destroy(&M);
    free(rp);
    free(ci);
    free(val);
}
END_TEST

/* ------------------------------------------------- random matrices, SpMV */

/* The same message on every rank. */
static int same_text_on_all(const char *msg)
{
    char mine[512] = {0};
    snprintf(mine, sizeof mine, "%s", msg);
    char *all = malloc(sizeof mine * (size_t)nranks);
    MPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR,
                  MPI_COMM_WORLD);
    int same = 1;
    for (int q = 1; q < nranks; q++)
        same &= strcmp(all, all + sizeof mine * (size_t)q) == 0;
    free(all);
    return same;
}

/* y = M x on this rank's rows against the reference of A (global): the
 * largest relative difference. */
static double spmv_err(ks_matrix *M, const ks_csr *A, const ks_gint *off, const double *xg,
                       ks_vec *x, ks_vec *y)
{
    const ks_int N = A->nrows, nloc = (ks_int)(off[rank + 1] - off[rank]);
    double *yg = calloc((size_t)N + 1, sizeof *yg), *yl = malloc(((size_t)nloc + 1) * sizeof *yl);
    ks_csr_spmv_ref(A, 1.0, xg, 0.0, yg);
    KS_ALL(ks_vec_set_host(x, xg + off[rank]));
    KS_ALL(ks_matrix_apply(M, 1.0, x, 0.0, y));
    KS_ALL(ks_vec_get_host(y, yl));
    double err = ks_test_max_relerr(yl, yg + off[rank], nloc);
    free(yg);
    free(yl);
    return err;
}

/* New values for the distributed M of A (ks_matrix_set_values from the
 * host, or _device from the backend's memory in even trials), given in
 * the caller's order (rows_of: odd rows reversed): its SpMV then matches the
 * reference with the new values. A NaN on the last rank with entries is
 * refused on every rank with the same message naming its global row and
 * column, and so are NULL values there; M keeps the values it had. */
static void new_values_trial(ks_backend *b, ks_matrix *M, const ks_csr *A, const ks_gint *off,
                             int trial, ks_vec *x, ks_vec *y)
{
    ks_csr A2;
    KS_CHECK(ks_csr_copy(A, &A2));
    for (ks_int i = 0; i < A2.nrows; i++)
        for (ks_int k = A2.rowptr[i]; k < A2.rowptr[i + 1]; k++)
            A2.val[k] = cos(0.3 * i + 0.11 * A2.colind[k] + trial) - 0.2;
    ks_int nloc, *rp;
    ks_gint *ci;
    double *v2;
    rows_of(&A2, off, &nloc, &rp, &ci, &v2);
    const ks_int nnz = rp[nloc];
    const int device = trial % 2 == 0;
    const size_t vb = ((size_t)nnz + 1) * sizeof(double);
    void *dv = NULL;
    if (device)
        KS_ALL(ks_be_upload_new(b, v2, vb, &dv, "test new values"));
    KS_ALL(device ? ks_matrix_set_values_device(M, dv) : ks_matrix_set_values(M, v2));
    double *xg = malloc(((size_t)A->nrows + 1) * sizeof *xg);
    for (ks_int i = 0; i < A->nrows; i++)
        xg[i] = 1.0 + 0.5 * sin(0.9 * i - trial);
    double err = spmv_err(M, &A2, off, xg, x, y);
    ALL(err <= 1e-14, "%s, trial %d: SpMV after %s differs from the reference by %g",
        ks_backend_name(b), trial, device ? "set_values_device" : "set_values", err);

    /* a NaN on the last rank holding entries */
    int last = -1;
    for (int q = 0; q < nranks; q++)
        if (A->rowptr[off[q + 1]] > A->rowptr[off[q]])
            last = q;
    char want[160] = "";
    if (last >= 0) {
        const ks_int lo = (ks_int)off[last], k0 = A2.rowptr[off[last + 1]] - 1;
        ks_int row = (ks_int)off[last + 1] - 1;
        while (A2.rowptr[row] > k0)
            row--;
        /* the last stored entry of the last rank: in the caller's order
         * its place is that row's first (odd) or last (even) entry */
        snprintf(want, sizeof want, "ks_matrix_set_values%s (distributed): rank %d: the value "
                 "at global row %ld, column %ld", device ? "_device" : "", last, (long)row,
                 (long)A2.colind[k0]);
        /* NULL values on one rank with entries: refused on all */
        EXPECT_ERR(ks_matrix_set_values(M, rank == last ? NULL : v2), KS_ERR_ARG, "NULL values");
        if (rank == last) {
            const ks_int at = row % 2 ? rp[row - lo] : rp[row - lo + 1] - 1;
            v2[at] = NAN;
        }
        if (device)
            KS_ALL(b->ops->upload(b, dv, v2, vb));
        EXPECT_ERR(device ? ks_matrix_set_values_device(M, dv) : ks_matrix_set_values(M, v2),
                   KS_ERR_NUMERIC, want);
        ALL(same_text_on_all(ks_last_error()), "trial %d: the NaN's message differs over the "
            "ranks: %s", trial, ks_last_error());
        err = spmv_err(M, &A2, off, xg, x, y);
        ALL(err <= 1e-14, "trial %d: the refused values changed M (%g)", trial, err);
    }
    if (dv)
        b->ops->free(b, dv);
    ks_csr_free(&A2);
    free(rp);
    free(ci);
    free(v2);
    free(xg);
}

/* Trial `trial` of the distributed SpMV on backend b against the host
 * reference. */
static void spmv_trial(ks_backend *b, int trial)
{
    /* Layouts: random counts (the same seed on every rank), rank 1 of
     * 3 or more without rows in every other trial. */
    ks_test_rng_seed(100 + (uint64_t)trial);
    ks_int count[8];
    for (int q = 0; q < nranks; q++)
        count[q] = (ks_int)(ks_test_rng_next() % 9) + 1;
    if (trial % 2 && nranks >= 3)
        count[1] = 0;
    ks_gint off[9];
    offsets_of(count, off);
    ks_csr A;
    ks_test_random_global(7 + (uint64_t)trial, off, &A);
    ks_int nloc, *rp;
    ks_gint *ci;
    double *val;
    rows_of(&A, off, &nloc, &rp, &ci, &val);
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(b, comm, nloc, A.ncols, rp, ci, val, "auto", NULL, &M));

    const ks_int N = A.nrows;
    double *xg = malloc((size_t)N * sizeof *xg), *yg = malloc((size_t)N * sizeof *yg);
    double *y0 = malloc((size_t)N * sizeof *y0), *yl = malloc(((size_t)nloc + 1) * sizeof *yl);
    for (ks_int i = 0; i < N; i++) {
        xg[i] = sin(0.3 * i + trial) + 2.0;
        y0[i] = yg[i] = cos(0.7 * i);
    }
    const double alpha = trial % 3 ? 1.5 : 1.0, beta = trial % 3 == 2 ? -0.5 : 0.0;
    ks_csr_spmv_ref(&A, alpha, xg, beta, yg);
    ks_vec *x = NULL, *y = NULL;
    KS_ALL(ks_matrix_vec_create(M, &x));
    KS_ALL(ks_matrix_vec_create(M, &y));
    KS_ALL(ks_vec_set_host(x, xg + off[rank]));
    KS_ALL(ks_vec_set_host(y, y0 + off[rank]));
    KS_ALL(ks_matrix_apply(M, alpha, x, beta, y));
    KS_ALL(ks_vec_get_host(y, yl));
    double err = ks_test_max_relerr(yl, yg + off[rank], nloc);
    ALL(err <= 1e-14, "%s, trial %d: distributed SpMV differs from the reference by %g",
        ks_backend_name(b), trial, err);
    /* csr on the cpu has both blocks' fused passes: the distributed one runs */
    const char *gf = getenv("KS_MPI_GHOST_FORMAT");
    ALL(ks_matrix_has_fused_step(M) || (gf && gf[0]), "trial %d: no distributed fused pass",
        trial);
    char what[80];
    snprintf(what, sizeof what, "%s, trial %d", ks_backend_name(b), trial);
    ks_test_dist_fused_check(M, &A, off, what);
    new_values_trial(b, M, &A, off, trial, x, y);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    free(rp);
    free(ci);
    free(val);
    free(xg);
    free(yg);
    free(y0);
    free(yl);
}

START_TEST(test_spmv_random)
{
    for (int trial = 0; trial < 6; trial++)
        spmv_trial(be, trial);
}
END_TEST

/* ------------------------------------------------------------ reductions */

/* A local vector holding v[0..n). */
static ks_vec *local_vec(const double *v, ks_int n)
{
    ks_vec *w = NULL;
    KS_CHECK(ks_vec_create(be, n, &w));
    KS_CHECK(ks_vec_set_host(w, v));
    return w;
}

/* The reductions of vectors in layout count against the partial results
 * of each rank's slice added in rank order. */
static void check_reductions(const ks_int *count)
{
    ks_gint off[9];
    offsets_of(count, off);
    const ks_int N = (ks_int)off[nranks], nloc = count[rank];
    double *xg = malloc((size_t)N * sizeof *xg), *yg = malloc((size_t)N * sizeof *yg);
    ks_test_rng_seed(3);
    /* Each rank's part of another magnitude, so the order of the ranks'
     * partial sums shows in the last bits. */
    for (int q = 0; q < nranks; q++)
        for (ks_gint i = off[q]; i < off[q + 1]; i++) {
            xg[i] = (ks_test_urand() - 0.3) * (1.0 + 0.37 * q);
            yg[i] = (ks_test_urand() * 1e3 - 1.0) * pow(3.1, q);
        }
    /* Expected bits: each rank's partial result (a local vector over its
     * slice: the backend's own blocked sum), then the ranks in order. */
    double e_dot = 0, e_xx = 0, e_n1 = 0, e_inf = 0, e_yy2 = 0, e_d2[2] = {0, 0};
    const double a = -0.75;
    for (int q = 0; q < nranks; q++) {
        const ks_int n = count[q];
        double d = 0, xx = 0, n1 = 0, inf = 0, yy2 = 0, d2[2] = {0, 0};
        if (n > 0) {
            ks_vec *xq = local_vec(xg + off[q], n), *yq = local_vec(yg + off[q], n);
            KS_CHECK(ks_vec_dot(xq, yq, &d));
            KS_CHECK(ks_vec_dot(xq, xq, &xx));
            KS_CHECK(ks_vec_norm1(xq, &n1));
            KS_CHECK(ks_vec_norminf(xq, &inf));
            KS_CHECK(ks_vec_dot2(xq, yq, xq, xq, d2));
            KS_CHECK(ks_vec_axpy(a, xq, yq));
            KS_CHECK(ks_vec_dot(yq, yq, &yy2));
            ks_vec_destroy(&xq);
            ks_vec_destroy(&yq);
        }
        e_dot += d;
        e_xx += xx;
        e_n1 += n1;
        e_yy2 += yy2;
        e_d2[0] += d2[0];
        e_d2[1] += d2[1];
        e_inf = inf > e_inf ? inf : e_inf;
    }
    ks_vec *x = NULL, *y = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, nloc, &x));
    KS_ALL(ks_vec_create_dist(be, comm, nloc, &y));
    KS_ALL(ks_vec_set_host(x, xg + off[rank]));
    KS_ALL(ks_vec_set_host(y, yg + off[rank]));
    for (int call = 0; call < 2; call++) {
        double r[8], d2[2];
        KS_ALL(ks_vec_dot(x, y, &r[0]));
        KS_ALL(ks_vec_norm2(x, &r[1]));
        KS_ALL(ks_vec_norm1(x, &r[2]));
        KS_ALL(ks_vec_norminf(x, &r[3]));
        KS_ALL(ks_vec_dot2(x, y, x, x, d2));
        r[4] = d2[0];
        r[5] = d2[1];
        KS_ALL(ks_vec_axpy_norm2(a, x, y, &r[6]));
        KS_ALL(ks_vec_set_host(y, yg + off[rank])); /* undo the update */
        const double want[7] = {e_dot, sqrt(e_xx), e_n1, e_inf, e_d2[0], e_d2[1], sqrt(e_yy2)};
        ALL(!memcmp(r, want, sizeof want), "call %d: dot %.17g/%.17g norm2 %.17g/%.17g norm1 "
            "%.17g/%.17g inf %g/%g dot2 %.17g %.17g axpy_norm2 %.17g/%.17g", call, r[0], want[0],
            r[1], want[1], r[2], want[2], r[3], want[3], r[4], r[5], r[6], want[6]);
        ALL(same_on_all(r, 7), "call %d: ranks disagree", call);
    }
    /* And the value: the one-process dot to rounding. */
    double sd = 0;
    for (ks_int i = 0; i < N; i++)
        sd += xg[i] * yg[i];
    ALL(fabs(e_dot - sd) <= 1e-12 * fabs(sd) + 1e-9, "dot %.17g, plain sum %.17g", e_dot, sd);

    /* Vectors of different layouts are refused on every rank. */
    ks_int other[8];
    for (int q = 0; q < nranks; q++)
        other[q] = count[q];
    other[nranks - 1] += 1;
    ks_vec *z = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, other[rank], &z));
    double s;
    EXPECT_ERR(ks_vec_dot(x, z, &s), KS_ERR_SIZE, "distributed differently");
    EXPECT_ERR(ks_vec_axpy(1.0, x, z), KS_ERR_SIZE, "distributed differently");
    ks_vec *loc = NULL;
    KS_ALL(ks_vec_create(be, nloc, &loc));
    EXPECT_ERR(ks_vec_copy(x, loc), KS_ERR_ARG, "local");
    ks_vec_destroy(&loc);
    ks_vec_destroy(&z);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    free(xg);
    free(yg);
}

START_TEST(test_reductions)
{
    /* Several of the cpu backend's 8192-entry blocks a rank; every rank
     * with entries (three or more partial sums: their order shows), then
     * rank 1 without. */
    ks_int count[8];
    for (int q = 0; q < nranks; q++)
        count[q] = 30000 + 1000 * q;
    check_reductions(count);
    counts_with_empty_rank(40000, count);
    check_reductions(count);

    /* Partial sums whose order decides the result: 1, 2^-53, -1, 0, ...
     * added in rank order give (1 + 2^-53) - 1 = 0 (the tie rounds to 1),
     * where 1 + (2^-53 - 1), as a reduction tree may add them, gives 2^-53. */
    const double part[4] = {1.0, ldexp(1.0, -53), -1.0, 0.0};
    double mine = part[rank < 3 ? rank : 3], want = part[0];
    for (int q = 1; q < nranks; q++)
        want += part[q < 3 ? q : 3];
    ks_vec *v = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, 1, &v));
    KS_ALL(ks_vec_set_host(v, &mine));
    double got = -1.0, ones = 1.0;
    ks_vec *u = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, 1, &u));
    KS_ALL(ks_vec_set_host(u, &ones));
    KS_ALL(ks_vec_dot(u, v, &got));
    ALL(got == want && (nranks < 3 || got == 0.0), "sum of the parts %.17g, in rank order %.17g",
        got, want);
    /* The comm's own sums: the same order; integers exact beyond 2^53;
     * the maximum lets NaN through. */
    double both[2] = {mine, -mine};
    KS_ALL(ks_comm_sum(comm, both, 2));
    ALL(both[0] == want && both[1] == -want, "ks_comm_sum %.17g %.17g", both[0], both[1]);
    ks_gint big[2] = {((ks_gint)1 << 60) + rank, -rank};
    KS_ALL(ks_comm_sum_gint(comm, big, 2));
    const ks_gint tri = (ks_gint)nranks * (nranks - 1) / 2;
    ALL(big[0] == ((ks_gint)nranks << 60) + tri && big[1] == -tri, "ks_comm_sum_gint %lld %lld",
        (long long)big[0], (long long)big[1]);
    double mx[2] = {(double)rank, rank == nranks - 1 ? NAN : 0.0};
    KS_ALL(ks_comm_max(comm, mx, 2));
    ALL(mx[0] == nranks - 1 && isnan(mx[1]), "ks_comm_max %g %g", mx[0], mx[1]);
    ks_vec_destroy(&u);
    ks_vec_destroy(&v);
}
END_TEST

/* ------------------------------------------------------ parallel generation */

START_TEST(test_generate_dist)
{
    for (int kind = 0; kind <= KS_GEN_CONVDIFF3D; kind++) {
        ks_gen_params g;
        ks_gen_params_default(&g);
        g.kind = (ks_gen_kind)kind;
        g.nx = 5;
        g.ny = 4;
        g.nz = 3;
        g.vx = -0.6;
        ks_csr A;
        KS_CHECK(ks_generate(&g, &A));
        for (int split = 0; split < 2; split++) {
            /* split 0: even blocks; 1: rank 0 takes half, the others the
             * rest as evenly as they can (rank 1 none with 3 or more). */
            ks_int nl = -1;
            if (split) {
                ks_int rest = A.nrows - A.nrows / 2, others = nranks >= 3 ? nranks - 2 : nranks - 1;
                if (rank == 0)
                    nl = nranks == 1 ? A.nrows : A.nrows / 2;
                else if (nranks >= 3 && rank == 1)
                    nl = 0;
                else {
                    int idx = nranks >= 3 ? rank - 2 : rank - 1;
                    nl = rest / others + (idx < rest % others);
                }
            }
            ks_dist_csr D;
            KS_ALL(ks_generate_dist(comm, &g, nl, &D));
            int ok = D.nrows_global == A.nrows && D.ncols_global == A.ncols &&
                     D.row_begin + D.nrows <= A.nrows && (nl < 0 || D.nrows == nl);
            long long total = D.nrows;
            MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            ok = ok && total == A.nrows;
            const ks_int base = ok ? A.rowptr[D.row_begin] : 0;
            for (ks_int i = 0; ok && i <= D.nrows; i++)
                ok = D.rowptr[i] == A.rowptr[D.row_begin + i] - base;
            for (ks_int k = 0; ok && k < D.nnz; k++)
                ok = D.colind[k] == A.colind[base + k] &&
                     !memcmp(&D.val[k], &A.val[base + k], sizeof(double));
            ALL(ok, "%s split %d: rows %lld.. (%ld) differ from ks_generate's",
                ks_gen_kind_name(g.kind), split, (long long)D.row_begin, (long)D.nrows);
            ks_dist_csr_free(&D);
        }
        /* counts that do not add up: every rank refuses */
        ks_dist_csr D;
        EXPECT_ERR(ks_generate_dist(comm, &g, rank == 0 ? 1 : 0, &D), KS_ERR_SIZE, "add up");
        ks_csr_free(&A);
    }
}
END_TEST

/* --------------------------------------------------------------- solves */

typedef struct solve_out {
    ks_solve_status status;
    int iterations;
    double *x;      /* this rank's part (distributed) or all (serial) */
    double *hist;
    int hist_len;
} solve_out;

static void out_free(solve_out *o)
{
    free(o->x);
    free(o->hist);
}

static double rhs_value(ks_gint i) { return 1.0 + sin(0.37 * (double)i); }

static ks_config *config_for(const char *solver, const char *pc)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    KS_CHECK(ks_config_set(cfg, "solver.solver", solver));
    if (pc) /* the standalone AMG solver takes none */
        KS_CHECK(ks_config_set(cfg, "solver.preconditioner.solver", pc));
    KS_CHECK(ks_config_set(cfg, "solver.tolerance", "1e-12"));
    KS_CHECK(ks_config_set(cfg, "solver.max_iters", "2000"));
    return cfg;
}

/* Solve with M and fill o (x: M's rows on this rank). */
static void solve_with(ks_matrix *M, const char *solver, const char *pc, solve_out *o)
{
    memset(o, 0, sizeof *o);
    ks_config *cfg = config_for(solver, pc);
    ks_solver *s = NULL;
    ks_vec *b = NULL, *x = NULL;
    KS_ALL(ks_solver_create(ks_matrix_backend(M), cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_matrix_vec_create(M, &x));
    const ks_int n = ks_matrix_rows(M);
    const ks_gint r0 = ks_matrix_row_begin(M);
    double *bh = malloc(((size_t)n + 1) * sizeof *bh);
    for (ks_int i = 0; i < n; i++)
        bh[i] = rhs_value(r0 + i);
    KS_ALL(ks_vec_set_host(b, bh));
    KS_ALL(ks_vec_fill(x, 0.0));
    KS_ALL(ks_solver_solve(s, b, x));
    const ks_solve_stats *st = ks_solver_stats(s);
    o->status = st->status;
    o->iterations = st->iterations;
    o->x = malloc(((size_t)n + 1) * sizeof *o->x);
    KS_ALL(ks_vec_get_host(x, o->x));
    o->hist_len = st->history_len;
    o->hist = malloc(((size_t)o->hist_len + 1) * sizeof *o->hist);
    memcpy(o->hist, st->history, (size_t)o->hist_len * sizeof *o->hist);
    free(bh);
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
}

/* This rank's rows of g in even blocks, or with rank 1 (of 3 or more)
 * holding no rows. */
static void dist_rows(const ks_gen_params *g, int empty_rank, ks_dist_csr *D)
{
    ks_int nl = -1;
    if (empty_rank) {
        int64_t n = (int64_t)g->nx * g->ny * g->nz;
        ks_gint b, c;
        int holders = nranks >= 3 ? nranks - 1 : nranks;
        int idx = nranks >= 3 ? (rank == 0 ? 0 : rank - 1) : rank;
        ks_layout_even(n, holders, idx, &b, &c);
        nl = nranks >= 3 && rank == 1 ? 0 : (ks_int)c;
    }
    KS_ALL(ks_generate_dist(comm, g, nl, D));
}

/* The distributed matrix of g's rows (dist_rows) on backend b. */
static ks_matrix *dist_matrix(ks_backend *b, const ks_gen_params *g, int empty_rank)
{
    ks_dist_csr D;
    dist_rows(g, empty_rank, &D);
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(b, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    ks_dist_csr_free(&D);
    return M;
}

/* Distributed (on backend b) vs one-process (cpu) solve of g: the same
 * iterations on the cpu (within 1 on another backend, whose sums are
 * not the cpu's), x to 1e-8. */
static void compare_solves_on(ks_backend *b, const ks_gen_params *g, const char *solver,
                              const char *pc, int empty_rank)
{
    ks_csr A;
    KS_CHECK(ks_generate(g, &A));
    ks_matrix *S = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &S));
    solve_out ser, dis;
    solve_with(S, solver, pc, &ser);
    ks_matrix *M = dist_matrix(b, g, empty_rank);
    solve_with(M, solver, pc, &dis);
    const ks_gint r0 = ks_matrix_row_begin(M);
    const ks_int n = ks_matrix_rows(M);
    double err = ks_test_max_relerr(dis.x, ser.x + r0, n);
    const int slack = b == be ? 0 : 1;
    ALL(ser.status == KS_SOLVE_CONVERGED && dis.status == KS_SOLVE_CONVERGED &&
            abs(ser.iterations - dis.iterations) <= slack && err <= 1e-8,
        "%s %s+%s on %s: serial %s in %d, distributed %s in %d, max error %g",
        ks_gen_kind_name(g->kind), solver, pc, ks_backend_name(b),
        ks_solve_status_name(ser.status), ser.iterations,
        ks_solve_status_name(dis.status), dis.iterations, err);
    out_free(&ser);
    out_free(&dis);
    ks_matrix_destroy(&M);
    ks_matrix_destroy(&S);
    ks_csr_free(&A);
}

static void compare_solves(const ks_gen_params *g, const char *solver, const char *pc,
                           int empty_rank)
{
    compare_solves_on(be, g, solver, pc, empty_rank);
}

static void grid(ks_gen_params *g, ks_gen_kind kind, int n)
{
    ks_gen_params_default(g);
    g->kind = kind;
    g->nx = g->ny = g->nz = n;
}

START_TEST(test_cg_poisson)
{
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 12);
    compare_solves(&g, "PCG", "JACOBI", 0);
    compare_solves(&g, "CG", "NOSOLVER", 1);
    compare_solves(&g, "PCG", "JACOBI_L1", 1);
}
END_TEST

START_TEST(test_bicgstab_convdiff)
{
    ks_gen_params g;
    grid(&g, KS_GEN_CONVDIFF3D, 10);
    g.vx = 8.0;
    g.vy = -4.0;
    g.vz = 2.0;
    compare_solves(&g, "PBICGSTAB", "JACOBI", 0);
    compare_solves(&g, "BICGSTAB", "NOSOLVER", 1);
}
END_TEST

/* PCG with l1-Jacobi after new values (D A D + 0.3 I, d_i = 1 + 0.5 sin(i),
 * in the order the rows were given; a rank without rows): ks_solver_resetup
 * then gives the iterations and x of a solver set up afresh on a matrix
 * created with those values. */
START_TEST(test_resetup_new_values)
{
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 10);
    ks_dist_csr D;
    dist_rows(&g, 1, &D);
    ks_matrix *M = NULL, *F = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    ks_config *cfg = config_for("PCG", "JACOBI_L1");
    ks_solver *s = NULL;
    KS_ALL(ks_solver_create(be, cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    for (ks_int i = 0; i < D.nrows; i++)
        for (ks_int k = D.rowptr[i]; k < D.rowptr[i + 1]; k++) {
            const ks_gint gi = D.row_begin + i, gj = D.colind[k];
            D.val[k] *= (1.0 + 0.5 * sin((double)gi)) * (1.0 + 0.5 * sin((double)gj));
            D.val[k] += gi == gj ? 0.3 : 0.0;
        }
    KS_ALL(ks_matrix_set_values(M, D.val));
    KS_ALL(ks_solver_resetup(s, M));
    ks_vec *b = NULL, *x = NULL;
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_matrix_vec_create(M, &x));
    const ks_int n = D.nrows;
    double *h = malloc(((size_t)n + 1) * sizeof *h);
    for (ks_int i = 0; i < n; i++)
        h[i] = rhs_value(D.row_begin + i);
    KS_ALL(ks_vec_set_host(b, h));
    KS_ALL(ks_vec_fill(x, 0.0));
    KS_ALL(ks_solver_solve(s, b, x));
    const int it = ks_solver_stats(s)->iterations;
    KS_ALL(ks_vec_get_host(x, h));
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &F));
    solve_out fresh;
    solve_with(F, "PCG", "JACOBI_L1", &fresh);
    int same = fresh.iterations == it && fresh.status == KS_SOLVE_CONVERGED;
    for (ks_int i = 0; same && i < n; i++)
        same = !memcmp(&h[i], &fresh.x[i], sizeof *h);
    ALL(same, "re-setup after new values: %d iterations, a fresh setup %d (%s); x %s", it,
        fresh.iterations, ks_solve_status_name(fresh.status),
        same ? "the same" : "differs");
    out_free(&fresh);
    free(h);
    ks_test_solve_free(&s, &cfg, &b, &x);
    ks_matrix_destroy(&F);
    ks_matrix_destroy(&M);
    ks_dist_csr_free(&D);
}
END_TEST

START_TEST(test_same_bits_twice)
{
    ks_gen_params g;
    grid(&g, KS_GEN_CONVDIFF3D, 9);
    ks_matrix *M = dist_matrix(be, &g, 1);
    const ks_int n = ks_matrix_rows(M);
    const char *solvers[2][2] = {{"PCG", "JACOBI_L1"}, {"PBICGSTAB", "JACOBI"}};
    for (int k = 0; k < 2; k++) {
        solve_out a, b;
        solve_with(M, solvers[k][0], solvers[k][1], &a);
        solve_with(M, solvers[k][0], solvers[k][1], &b);
        ALL(a.iterations == b.iterations && a.hist_len == b.hist_len &&
                !memcmp(a.x, b.x, (size_t)n * sizeof *a.x) &&
                !memcmp(a.hist, b.hist, (size_t)a.hist_len * sizeof *a.hist),
            "%s: two runs differ (%d and %d iterations)", solvers[k][0], a.iterations,
            b.iterations);
        /* every rank saw the same residuals */
        ALL(same_on_all(a.hist, a.hist_len), "%s: residual history differs between ranks",
            solvers[k][0]);
        out_free(&a);
        out_free(&b);
    }
    ks_matrix_destroy(&M);
}
END_TEST

/* ------------------------------------------------------------ bad input */

/* This rank's rows of a 7-point Poisson problem (even blocks). */
static void poisson_rows(ks_dist_csr *D)
{
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 5);
    KS_ALL(ks_generate_dist(comm, &g, -1, D));
}

START_TEST(test_bad_rows)
{
    ks_dist_csr D;
    poisson_rows(&D);
    ks_matrix *M = NULL;
    const int last = nranks - 1;
    char who[32];
    snprintf(who, sizeof who, "rank %d", last);
    /* a column out of range on the last rank only */
    ks_gint keep = D.colind[1];
    if (rank == last)
        D.colind[1] = D.ncols_global + 7;
    EXPECT_ERR(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                     "auto", NULL, &M),
               KS_ERR_ARG, who);
    ALL(M == NULL && strstr(ks_last_error(), "outside"), "%s", ks_last_error());
    D.colind[1] = keep;
    /* a duplicate on rank 0 */
    if (rank == 0)
        D.colind[1] = D.colind[0];
    EXPECT_ERR(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                     "auto", NULL, &M),
               KS_ERR_ARG, "given twice");
    D.colind[1] = keep;
    /* a NaN on the last rank */
    double kv = D.val[0];
    if (rank == last)
        D.val[0] = NAN;
    EXPECT_ERR(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                     "auto", NULL, &M),
               KS_ERR_ARG, "nan");
    D.val[0] = kv;
    /* rows that do not add up to the columns */
    EXPECT_ERR(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global + 1, D.rowptr, D.colind,
                                     D.val, "auto", NULL, &M),
               KS_ERR_SIZE, "add up");
    /* an unknown format on one rank only */
    EXPECT_ERR(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                     rank == last ? "no_such_format" : "csr", NULL, &M),
               KS_ERR_ARG, "no_such_format");
    /* an unknown ghost block format in KS_MPI_GHOST_FORMAT (a ghost block
     * exists with more than one rank): refused on every rank, naming it */
    if (nranks > 1) {
        setenv("KS_MPI_GHOST_FORMAT", "no_such_ghost_format", 1);
        EXPECT_ERR(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind,
                                         D.val, "auto", NULL, &M),
                   KS_ERR_ARG, "KS_MPI_GHOST_FORMAT=no_such_ghost_format");
        unsetenv("KS_MPI_GHOST_FORMAT");
    }
    /* and the good rows still work */
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    ks_matrix_destroy(&M);
    ks_dist_csr_free(&D);
}
END_TEST

START_TEST(test_bad_vectors)
{
    ks_dist_csr D;
    poisson_rows(&D);
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    /* x laid out otherwise: one row moves from rank 0 to the last rank (or,
     * on one rank, one more) */
    ks_int nl = D.nrows + (nranks == 1 ? 1 : rank == 0 ? -1 : rank == nranks - 1 ? 1 : 0);
    ks_vec *bad = NULL, *y = NULL, *b = NULL, *loc = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, nl, &bad));
    KS_ALL(ks_matrix_vec_create(M, &y));
    KS_ALL(ks_matrix_vec_create(M, &b));
    KS_ALL(ks_vec_fill(bad, 1.0));
    KS_ALL(ks_vec_fill(b, 1.0));
    EXPECT_ERR(ks_matrix_apply(M, 1.0, bad, 0.0, y), KS_ERR_SIZE, "rank 0 holds");
    EXPECT_ERR(ks_matrix_apply(M, 1.0, y, 0.0, bad), KS_ERR_SIZE, "distributed differently");
    KS_ALL(ks_vec_create(be, D.nrows, &loc));
    EXPECT_ERR(ks_matrix_apply(M, 1.0, loc, 0.0, y), KS_ERR_ARG, "local");
    /* a solve with the misfit: every rank fails (one in the solver's size
     * check, the others at the first vector operation) */
    ks_config *cfg = config_for("PCG", "JACOBI");
    ks_solver *s = NULL;
    KS_ALL(ks_solver_create(be, cfg, &s));
    KS_ALL(ks_solver_setup(s, M));
    ks_error e = ks_solver_solve(s, b, bad);
    ALL(e == KS_ERR_SIZE, "solve with a misfit x: %s (%s)", ks_error_name(e), ks_last_error());
    e = ks_solver_solve(s, bad, y);
    ALL(e == KS_ERR_SIZE, "solve with a misfit b: %s (%s)", ks_error_name(e), ks_last_error());
    /* and a fitting one still solves */
    KS_ALL(ks_vec_fill(y, 0.0));
    KS_ALL(ks_solver_solve(s, b, y));
    ALL(ks_solver_stats(s)->status == KS_SOLVE_CONVERGED, "the fitting solve");
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
    ks_vec_destroy(&loc);
    ks_vec_destroy(&bad);
    ks_vec_destroy(&y);
    ks_vec_destroy(&b);
    ks_matrix_destroy(&M);
    ks_dist_csr_free(&D);
}
END_TEST

START_TEST(test_device_backend)
{
    /* the staged exchange (gather, copy out, messages, copy into the ghost
     * vector: the path of a backend without host memory) on the cpu gives
     * the host path's products and solves */
    ks_halo_stage_always = 1;
    for (int trial = 0; trial < 6; trial++)
        spmv_trial(be, trial);
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 10);
    compare_solves_on(be, &g, "PCG", "JACOBI", 1);
    ks_halo_stage_always = 0;
    /* a backend without a gather cannot exchange: every rank refuses,
     * also when only one rank's backend lacks it */
    ks_backend *nog = NULL;
    KS_ALL(ks_backend_create("cpu", &nog));
    ks_backend_ops ops = *nog->ops;
    const ks_backend_ops *orig = nog->ops;
    ops.gather = NULL;
    nog->ops = &ops;
    ks_dist_csr D;
    poisson_rows(&D);
    ks_matrix *M = NULL;
    EXPECT_ERR(ks_matrix_create_dist(nog, comm, D.nrows, D.ncols_global, D.rowptr, D.colind,
                                     D.val, "auto", NULL, &M),
               KS_ERR_UNSUPPORTED, "no gather");
    const int last = nranks - 1;
    EXPECT_ERR(ks_matrix_create_dist(rank == last ? nog : be, comm, D.nrows, D.ncols_global,
                                     D.rowptr, D.colind, D.val, "auto", NULL, &M),
               KS_ERR_UNSUPPORTED, "no gather");
    ALL(M == NULL, "no matrix after a failure");
    /* nor can one without staging copies stage */
    ops.gather = orig->gather;
    ops.stage_wait = NULL;
    ks_halo_stage_always = 1;
    EXPECT_ERR(ks_matrix_create_dist(rank == last ? nog : be, comm, D.nrows, D.ncols_global,
                                     D.rowptr, D.colind, D.val, "auto", NULL, &M),
               KS_ERR_UNSUPPORTED, "no staging copies");
    ks_halo_stage_always = 0;
    ALL(M == NULL, "no matrix after a failure");
    nog->ops = orig;
    ks_backend_destroy(&nog);
    ks_dist_csr_free(&D);
    /* a real cuda backend where every rank has a device: staged for real */
    int have = ks_backend_available("cuda");
    MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (have) {
        ks_backend *cuda = NULL;
        KS_ALL(ks_backend_create("cuda", &cuda));
        for (int trial = 0; trial < 6; trial++)
            spmv_trial(cuda, trial);
        grid(&g, KS_GEN_POISSON3D_7, 12);
        compare_solves_on(cuda, &g, "PCG", "JACOBI", 1);
        compare_solves_on(cuda, &g, "CG", "NOSOLVER", 0);
        grid(&g, KS_GEN_CONVDIFF3D, 10);
        g.vx = 8.0;
        g.vy = -4.0;
        compare_solves_on(cuda, &g, "PBICGSTAB", "JACOBI_L1", 1);
        ks_backend_destroy(&cuda);
    }
}
END_TEST

/* A rank's share of its CPUs: at least one, at most the CPUs OpenMP sees
 * (its mask's), and on Linux the same on every rank with the same CPU
 * mask (the test's ranks run on one host); NULL arguments refused. */
START_TEST(test_share_threads)
{
    int t = 0;
    KS_ALL(ks_comm_share_threads(comm, &t));
    int cpus = 1;
#ifdef _OPENMP
    cpus = omp_get_num_procs();
#endif
    ALL(t >= 1 && t <= cpus, "rank %d: a share of %d threads of %d CPUs", rank, t, cpus);
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t mine, *all = malloc((size_t)nranks * sizeof *all);
    int *shares = malloc((size_t)nranks * sizeof *shares);
    CPU_ZERO(&mine);
    (void)sched_getaffinity(0, sizeof mine, &mine);
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                  MPI_COMM_WORLD);
    MPI_Allgather(&t, 1, MPI_INT, shares, 1, MPI_INT, MPI_COMM_WORLD);
    int bad = -1;
    for (int q = 0; q < nranks && bad < 0; q++)
        if (CPU_EQUAL(&all[q], &mine) && shares[q] != t)
            bad = q;
    ALL(bad < 0, "rank %d and rank %d share a CPU mask but got %d and %d threads", rank, bad,
        t, bad < 0 ? t : shares[bad]);
    free(all);
    free(shares);
#endif
    EXPECT_ERR(ks_comm_share_threads(NULL, &t), KS_ERR_ARG, "NULL comm");
    EXPECT_ERR(ks_comm_share_threads(comm, NULL), KS_ERR_ARG, "NULL output");
}
END_TEST

/* The run-time question whether MPI takes device buffers: the environment
 * can say no; without the Open MPI extension the answer is no. */
START_TEST(test_cuda_aware_query)
{
    const char *old = getenv("KS_MPI_CUDA_AWARE");
    char *saved = old ? strdup(old) : NULL;
    setenv("KS_MPI_CUDA_AWARE", "0", 1);
    ALL(ks_mpi_cuda_aware() == 0, "KS_MPI_CUDA_AWARE=0 still reports a CUDA-aware MPI");
    unsetenv("KS_MPI_CUDA_AWARE");
    const int aware = ks_mpi_cuda_aware();
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    ALL(aware == (MPIX_Query_cuda_support() == 1), "the answer is not the library's");
#else
    ALL(aware == 0, "CUDA-aware without the extension to ask");
#endif
    if (saved) {
        setenv("KS_MPI_CUDA_AWARE", saved, 1);
        free(saved);
    }
}
END_TEST

/* ------------------------------------------------ the direct transport */

/* A cpu backend posing as a device one to the halo (ks_halo_device_backend:
 * its vectors taken for device memory, so it stages, or gives MPI its
 * buffers where MPI is CUDA-aware), with a gather deferred as a device
 * queue defers it: the packed entries read NaN until something waits for
 * the queue (sync, a staging or host copy, a free), when the gather runs.
 * An exchange that gives MPI the send buffer before waiting, or another
 * buffer, sends NaN or stale values instead of x's entries. */
typedef struct pending_gather {
    ks_int n;
    const ks_int *idx;
    const double *x;
    double *y; /* NULL: none */
} pending_gather;

static const ks_backend_ops *dev_cpu;  /* the cpu's own ops */
static ks_backend_ops dev_ops;
static pending_gather dev_pending;

static ks_error dev_flush(ks_backend *b)
{
    const pending_gather g = dev_pending;
    dev_pending.y = NULL;
    return g.y ? dev_cpu->gather(b, g.n, g.idx, g.x, g.y) : KS_OK;
}

static ks_error dev_gather(ks_backend *b, ks_int n, const ks_int *idx, const double *x, double *y)
{
    KS_TRY(dev_flush(b)); /* queued in order */
    for (ks_int k = 0; k < n; k++)
        y[k] = NAN;
    dev_pending = (pending_gather){n, idx, x, y};
    return KS_OK;
}

static ks_error dev_sync(ks_backend *b)
{
    KS_TRY(dev_flush(b));
    return dev_cpu->sync(b);
}

static ks_error dev_download(ks_backend *b, void *dst, const void *src, size_t bytes)
{
    KS_TRY(dev_flush(b));
    return dev_cpu->download(b, dst, src, bytes);
}

static ks_error dev_copy(ks_backend *b, void *dst, const void *src, size_t bytes)
{
    KS_TRY(dev_flush(b));
    return dev_cpu->copy(b, dst, src, bytes);
}

static ks_error dev_stage_download(ks_backend *b, void *dst, const void *src, size_t bytes)
{
    KS_TRY(dev_flush(b));
    return dev_cpu->stage_download(b, dst, src, bytes);
}

static ks_error dev_stage_wait(ks_backend *b)
{
    KS_TRY(dev_flush(b));
    return dev_cpu->stage_wait(b);
}

static void dev_free(ks_backend *b, void *p)
{
    (void)dev_flush(b);
    dev_cpu->free(b, p);
}

static ks_backend *device_like_backend(void)
{
    ks_backend *d = NULL;
    KS_ALL(ks_backend_create("cpu", &d));
    dev_cpu = d->ops;
    dev_ops = *d->ops;
    dev_ops.gather = dev_gather;
    dev_ops.sync = dev_sync;
    dev_ops.download = dev_download;
    dev_ops.copy = dev_copy;
    dev_ops.stage_download = dev_stage_download;
    dev_ops.stage_wait = dev_stage_wait;
    dev_ops.free = dev_free;
    d->ops = &dev_ops;
    dev_pending.y = NULL;
    ks_halo_device_backend = d;
    return d;
}

static void device_like_destroy(ks_backend **d)
{
    ks_halo_device_backend = NULL;
    (*d)->ops = dev_cpu;
    ks_backend_destroy(d);
}

/* The distributed M of g's rows (dist_rows) made with the transport setting t. */
static ks_matrix *dist_matrix_over(ks_backend *b, const char *t, const ks_gen_params *g,
                                   int empty_rank)
{
    KS_ALL(ks_comm_set_halo_transport(comm, t));
    ks_matrix *M = dist_matrix(b, g, empty_rank);
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    return M;
}

/* Layout `kind` of N rows: even blocks (0), random counts (1), rank 0
 * (of 2 or more) without rows (2). */
static void direct_layout(int kind, ks_int N, ks_gint *off)
{
    off[0] = 0;
    ks_test_rng_seed(500 + (uint64_t)N);
    for (int q = 0; q < nranks; q++)
        off[q + 1] = off[q] + (kind == 1 ? (ks_gint)(ks_test_rng_next() % 40) + 1
                                         : N / nranks + (q < N % nranks));
    if (kind == 2 && nranks > 1)
        off[1] = 0;
}

/* A random matrix in layout `kind` on the device-like d over the settings
 * direct and auto (both running direct) against the float64 serial
 * product and the staged transport's bits, after 1 and 3 products. */
static void direct_spmv_case(ks_backend *d, int kind, uint64_t seed)
{
    ks_gint off[9];
    direct_layout(kind, 60, off);
    ks_csr A;
    ks_test_random_global(seed, off, &A);
    const ks_int N = A.nrows, n = (ks_int)(off[rank + 1] - off[rank]);
    const char *set[3] = {"direct", "auto", "staged"};
    ks_matrix *M[3];
    for (int t = 0; t < 3; t++) {
        KS_ALL(ks_comm_set_halo_transport(comm, set[t]));
        M[t] = ks_test_dist_rows(d, &A, off[rank], n);
        KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    }
    ALL(!strcmp(ks_matrix_halo_transport(M[0]), "direct") &&
            !strcmp(ks_matrix_halo_transport(M[1]), "direct") &&
            !strcmp(ks_matrix_halo_transport(M[2]), "staged"),
        "layout %d: the settings direct, auto, staged run %s, %s, %s", kind,
        ks_matrix_halo_transport(M[0]), ks_matrix_halo_transport(M[1]),
        ks_matrix_halo_transport(M[2]));
    double *xg = malloc((size_t)N * sizeof *xg), *yg = malloc((size_t)N * sizeof *yg);
    double *y[3];
    for (int t = 0; t < 3; t++)
        y[t] = malloc(((size_t)n + 1) * sizeof *y[t]);
    for (ks_int i = 0; i < N; i++)
        xg[i] = sin(0.7 * i + (double)seed) + 1.25;
    for (int k = 1; k <= 3; k += 2) {
        ks_test_chain_ref(&A, xg, k, yg);
        for (int t = 0; t < 3; t++)
            ks_test_dist_chain(M[t], xg + off[rank], k, y[t]);
        const double err = ks_test_max_relerr(y[0], yg + off[rank], n);
        ALL(err <= (k == 1 ? 1e-14 : 1e-12), "layout %d, seed %llu, %d products: direct "
            "differs from the serial product by %g", kind, (unsigned long long)seed, k, err);
        for (int t = 0; t < 2; t++)
            ALL(!memcmp(y[t], y[2], (size_t)n * sizeof *y[t]), "layout %d, seed %llu, %d "
                "products: the setting %s (direct) and staged differ in their bits", kind,
                (unsigned long long)seed, k, set[t]);
    }
    for (int t = 0; t < 3; t++) {
        ks_matrix_destroy(&M[t]);
        free(y[t]);
    }
    free(xg);
    free(yg);
    ks_csr_free(&A);
}

/* The direct transport (MPI given the backend's buffers) on a cpu backend
 * posing as a device one, with the CUDA-aware question answered by the
 * test's hook: no machine here has a CUDA-aware MPI. */
START_TEST(test_direct_transport)
{
    ks_backend *d = device_like_backend();
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 6);
    ks_dist_csr D;
    dist_rows(&g, 1, &D);
    ks_matrix *M = NULL;
    /* Not CUDA-aware (on one rank or all): "direct" refused on every
     * rank, auto stages. Also unforced where this MPI says not aware. */
    int aware = ks_mpi_cuda_aware();
    MPI_Allreduce(MPI_IN_PLACE, &aware, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int c = aware ? 1 : 0; c < 3; c++) {
        ks_mpi_cuda_aware_force = c == 0 ? -1 : c == 1 ? 0 : rank == nranks - 1 ? 0 : 1;
        KS_ALL(ks_comm_set_halo_transport(comm, "direct"));
        EXPECT_ERR(ks_matrix_create_dist(d, comm, D.nrows, D.ncols_global, D.rowptr, D.colind,
                                         D.val, "auto", NULL, &M),
                   KS_ERR_UNSUPPORTED, "halo transport direct");
        ALL(M == NULL && strstr(ks_last_error(), "CUDA-aware") &&
                same_text_on_all(ks_last_error()),
            "case %d: no matrix, a message naming CUDA-aware alike on every rank: %s", c,
            ks_last_error());
        KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
        M = dist_matrix_over(d, "auto", &g, 1);
        ALL(!strcmp(ks_matrix_halo_transport(M), "staged"), "case %d: auto runs %s, not "
            "staged", c, ks_matrix_halo_transport(M));
        ks_matrix_destroy(&M);
    }
    /* CUDA-aware: direct, the host backend's vectors still host */
    ks_mpi_cuda_aware_force = 1;
    M = dist_matrix_over(be, "direct", &g, 1);
    ALL(!strcmp(ks_matrix_halo_transport(M), "host"), "direct on the cpu runs %s",
        ks_matrix_halo_transport(M));
    ks_matrix_destroy(&M);
    for (int kind = 0; kind < 3; kind++)
        for (uint64_t seed = 0; seed < 2; seed++)
            direct_spmv_case(d, kind, 30 + 10 * (uint64_t)kind + seed);
    /* the fused passes and new values over it (rank 1 of 3 or more
     * without rows in odd trials) */
    KS_ALL(ks_comm_set_halo_transport(comm, "direct"));
    for (int trial = 0; trial < 2; trial++)
        spmv_trial(d, trial);
    KS_ALL(ks_comm_set_halo_transport(comm, "auto"));
    /* PCG + Jacobi: the staged transport's iterations, residuals and x */
    grid(&g, KS_GEN_POISSON3D_7, 8);
    solve_out o[2];
    const char *set[2] = {"direct", "staged"};
    for (int t = 0; t < 2; t++) {
        M = dist_matrix_over(d, set[t], &g, 1);
        ALL(!strcmp(ks_matrix_halo_transport(M), set[t]), "the setting %s runs %s", set[t],
            ks_matrix_halo_transport(M));
        solve_with(M, "PCG", "JACOBI", &o[t]);
        if (t == 0)
            ALL(o[0].status == KS_SOLVE_CONVERGED, "PCG + Jacobi over direct: %s in %d",
                ks_solve_status_name(o[0].status), o[0].iterations);
        const ks_int n = ks_matrix_rows(M);
        if (t == 1)
            ALL(o[0].iterations == o[1].iterations && o[0].hist_len == o[1].hist_len &&
                    !memcmp(o[0].x, o[1].x, (size_t)n * sizeof *o[0].x) &&
                    !memcmp(o[0].hist, o[1].hist, (size_t)o[0].hist_len * sizeof *o[0].hist),
                "PCG + Jacobi: direct %d iterations, staged %d, or other bits",
                o[0].iterations, o[1].iterations);
        ks_matrix_destroy(&M);
    }
    out_free(&o[0]);
    out_free(&o[1]);
    ks_mpi_cuda_aware_force = -1;
    ks_dist_csr_free(&D);
    device_like_destroy(&d);
}
END_TEST

/* ks_matrix_halo_size against the halo read off the whole matrix, and the
 * communication counts of one product and one dot product. */
START_TEST(test_comm_stats)
{
    ks_gen_params g;
    grid(&g, KS_GEN_POISSON3D_7, 7);
    ks_csr A;
    KS_CHECK(ks_generate(&g, &A));
    ks_matrix *M = dist_matrix(be, &g, 1);
    const ks_gint r0 = ks_matrix_row_begin(M), r1 = r0 + ks_matrix_rows(M);
    /* the owner of each row, from every rank's first row */
    ks_gint *first = malloc(sizeof *first * (size_t)(nranks + 1));
    ks_gint mine = r0;
    MPI_Allgather(&mine, 1, MPI_INT64_T, first, 1, MPI_INT64_T, MPI_COMM_WORLD);
    first[nranks] = A.nrows;
    char *got = calloc((size_t)A.nrows, 1), *sent = calloc((size_t)A.nrows, 1);
    int *peer = calloc((size_t)nranks, sizeof *peer);
    ks_int want_ghost = 0, want_send = 0;
    int want_nb = 0;
    for (int q = 0; q < nranks; q++)
        for (ks_gint i = first[q]; i < (q + 1 < nranks ? first[q + 1] : A.nrows); i++)
            for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
                const ks_gint j = A.colind[k];
                if (q == rank && (j < r0 || j >= r1) && !got[j]++) {
                    want_ghost++;
                    for (int o = 0; o < nranks; o++)
                        if (j >= first[o] && (o + 1 == nranks || j < first[o + 1]) &&
                            first[o] < (o + 1 < nranks ? first[o + 1] : A.nrows))
                            peer[o] = 1;
                }
                if (q != rank && j >= r0 && j < r1) {
                    peer[q] = 1;
                    /* each (receiver, column) pair once */
                    if (!(sent[j] & (1 << q))) {
                        sent[j] |= (char)(1 << q);
                        want_send++;
                    }
                }
            }
    for (int q = 0; q < nranks; q++)
        want_nb += peer[q] && q != rank;
    ks_int ng = -1, ns = -1;
    int nb = -1;
    KS_ALL(ks_matrix_halo_size(M, &ng, &ns, &nb));
    ALL(ng == want_ghost && ns == want_send && nb == want_nb,
        "halo: %d ghosts, %d sent, %d neighbours; expected %d, %d, %d", (int)ng, (int)ns, nb,
        (int)want_ghost, (int)want_send, want_nb);

    ks_vec *x = NULL, *y = NULL;
    KS_ALL(ks_matrix_vec_create(M, &x));
    KS_ALL(ks_matrix_vec_create(M, &y));
    KS_ALL(ks_vec_fill(x, 1.0));
    ks_comm_reset_stats(comm);
    ks_comm_stats st;
    KS_ALL(ks_comm_get_stats(comm, &st));
    ALL(st.halo_exchanges == 0 && st.reductions == 0 && st.halo_seconds == 0.0,
        "counts after a reset: %lld exchanges, %lld reductions", st.halo_exchanges,
        st.reductions);
    KS_ALL(ks_matrix_apply(M, 1.0, x, 0.0, y));
    double d = 0.0;
    KS_ALL(ks_vec_dot(y, x, &d));
    KS_ALL(ks_comm_get_stats(comm, &st));
    ALL(st.halo_exchanges == 1 && st.reductions == 1 &&
            st.halo_bytes_sent == (double)ns * sizeof(double) && st.halo_seconds >= 0.0 &&
            st.reduce_seconds >= 0.0,
        "one product and one dot: %lld exchanges (%g bytes sent, %d values), %lld reductions",
        st.halo_exchanges, st.halo_bytes_sent, (int)ns, st.reductions);
    /* a local matrix has no halo */
    ks_matrix *L = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &L));
    KS_CHECK(ks_matrix_halo_size(L, &ng, &ns, &nb));
    ck_assert(ng == 0 && ns == 0 && nb == 0);
    ck_assert_int_eq(ks_matrix_halo_size(NULL, &ng, &ns, &nb), KS_ERR_ARG);
    ck_assert_int_eq(ks_comm_get_stats(comm, NULL), KS_ERR_ARG);
    ks_matrix_destroy(&L);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    free(first);
    free(got);
    free(sent);
    free(peer);
}
END_TEST

START_TEST(test_jacobi_zero_diagonal)
{
    ks_dist_csr D;
    poisson_rows(&D);
    const int last = nranks - 1;
    /* the last rank's first row loses its diagonal value */
    if (rank == last)
        for (ks_int k = D.rowptr[0]; k < D.rowptr[1]; k++)
            if (D.colind[k] == D.row_begin)
                D.val[k] = 0.0;
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, D.nrows, D.ncols_global, D.rowptr, D.colind, D.val,
                                 "auto", NULL, &M));
    ks_config *cfg = config_for("PCG", "JACOBI");
    ks_solver *s = NULL;
    KS_ALL(ks_solver_create(be, cfg, &s));
    char who[32];
    snprintf(who, sizeof who, "%s", rank == last ? "zero diagonal" : "rank ");
    if (rank != last)
        snprintf(who, sizeof who, "rank %d: ", last);
    EXPECT_ERR(ks_solver_setup(s, M), KS_ERR_NUMERIC, who);
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
    ks_matrix_destroy(&M);
    ks_dist_csr_free(&D);
}
END_TEST

/* Before each test of the errors group: the direct transport's test hooks
 * off, even after a failed test left them set (no fork: one process). */
static void hooks_off(void)
{
    ks_mpi_cuda_aware_force = -1;
    ks_halo_device_backend = NULL;
}

static Suite *mpi_suite(void)
{
    Suite *s = suite_create("mpi");
    TCase *t = tcase_create("layout");
    tcase_add_test(t, test_vec_layout);
    tcase_add_test(t, test_ghost_map);
    tcase_add_test(t, test_generate_dist);
    suite_add_tcase(s, t);
    t = tcase_create("spmv");
    tcase_add_test(t, test_spmv_random);
    tcase_add_test(t, test_reductions);
    suite_add_tcase(s, t);
    t = tcase_create("solve");
    tcase_add_test(t, test_cg_poisson);
    tcase_add_test(t, test_bicgstab_convdiff);
    tcase_add_test(t, test_same_bits_twice);
    tcase_add_test(t, test_resetup_new_values);
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_checked_fixture(t, hooks_off, NULL);
    tcase_add_test(t, test_bad_rows);
    tcase_add_test(t, test_bad_vectors);
    tcase_add_test(t, test_device_backend);
    tcase_add_test(t, test_cuda_aware_query);
    tcase_add_test(t, test_share_threads);
    tcase_add_test(t, test_direct_transport);
    tcase_add_test(t, test_jacobi_zero_diagonal);
    tcase_add_test(t, test_comm_stats);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi", mpi_suite, NULL);
}
