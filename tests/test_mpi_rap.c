/* The Galerkin product across ranks, under mpirun on 1 to 4 ranks
 * (tests/meson.build): P's rows of A's ghost columns fetched from their
 * owners (against the global P's rows), A P against ks_csr_spgemm(A, P)
 * bit for bit, and P^T A P against the serial spgemm(P^T, A P) bit for
 * bit and ks_csr_rap to 1e-13 relative; two runs the same; the coarse rows accepted by
 * ks_matrix_create_dist and its product equal to the serial one's. P comes
 * from the distributed PMIS and direct interpolation (generated and random
 * matrices, truncated too) or from a test splitting with random rows that
 * reach coarse points anywhere (a rank with fine rows but no C point).
 * Layouts with a rank without rows. Errors on one rank fail on all.
 *
 * As in test_mpi_amg.c: Check runs without fork, every assertion is
 * combined over the ranks first, only rank 0 prints Check's summary. */
#include "ks_test_mpi.h"
#include "ksolve_mpi.h"
#include "mpi/rap_dist.h"
#include "sparse/cpu/csr_kernels.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif


/* ---------------------------------------------------------- the problems */

/* Layouts of N rows: 0 even blocks; 1 uneven, rank 1 without rows; 2
 * uneven, the last rank without rows (rank 0 with 2 ranks). */
#define NLAYOUTS 3
static void layout(int kind, ks_int N, ks_gint *off)
{
    ks_int count[8] = {0};
    if (kind == 0) {
        for (int q = 0; q < nranks; q++)
            count[q] = N / nranks + (q < N % nranks);
    } else {
        const int empty = nranks == 1 ? -1 : kind == 1 ? 1 : nranks == 2 ? 0 : nranks - 1;
        int weight[8], wsum = 0;
        for (int q = 0; q < nranks; q++) {
            weight[q] = q == empty ? 0 : 1 + (q * 7 + kind) % 3;
            wsum += weight[q];
        }
        ks_int given = 0;
        for (int q = 0; q < nranks; q++) {
            count[q] = (ks_int)((int64_t)N * weight[q] / wsum);
            given += count[q];
        }
        count[empty == 0 ? 1 % nranks : 0] += N - given;
    }
    off[0] = 0;
    for (int q = 0; q < nranks; q++)
        off[q + 1] = off[q] + count[q];
}

/* Generated problems: 7-point, 27-point, anisotropic, convection-diffusion. */
#define NGEN 4
static void generated(int which, ks_csr *A)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    static const ks_gen_kind kinds[NGEN] = {KS_GEN_POISSON3D_7, KS_GEN_POISSON3D_27,
                                            KS_GEN_ANISO3D, KS_GEN_CONVDIFF3D};
    g.kind = kinds[which];
    g.nx = 7;
    g.ny = 6;
    g.nz = 5;
    if (g.kind == KS_GEN_ANISO3D) {
        g.cx = 1.0;
        g.cy = 0.01;
        g.cz = 100.0;
    }
    if (g.kind == KS_GEN_CONVDIFF3D) {
        g.vx = 30.0;
        g.vy = -12.0;
        g.vz = 3.0;
    }
    KS_CHECK(ks_generate(&g, A));
}

/* A random nonsymmetric N x N matrix, the same on every rank: a nonzero
 * diagonal in every row (negative in a few), mostly negative couplings
 * near the row or anywhere (rows reach other ranks), some rows without
 * couplings. */
static void random_matrix(uint64_t seed, ks_int N, ks_csr *A)
{
    ks_test_rng_seed(seed);
    const int64_t cap = (int64_t)N * 8 + 8;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t m = 0;
    for (ks_int i = 0; i < N; i++) {
        r[m] = c[m] = i;
        v[m++] = (ks_test_rng_next() % 20 == 2 ? -1.0 : 1.0) * (2.0 + ks_test_urand());
        const int len = (int)(ks_test_rng_next() % 6);
        for (int k = 0; k < len; k++) {
            ks_int j = ks_test_rng_next() % 2
                           ? (ks_int)((i + N - 3 + (ks_int)(ks_test_rng_next() % 7)) % N)
                           : (ks_int)(ks_test_rng_next() % (uint64_t)N);
            r[m] = i;
            c[m] = j;
            v[m++] = ks_test_rng_next() % 5 != 0 ? -ks_test_urand() : 0.5 * ks_test_urand();
        }
    }
    KS_CHECK(ks_csr_from_coo(N, N, m, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* The distributed matrix of this rank's rows of A in layout off. */
static ks_matrix *distribute(const ks_csr *A, const ks_gint *off)
{
    const ks_gint lo = off[rank], hi = off[rank + 1];
    const ks_int nloc = (ks_int)(hi - lo), base = A->rowptr[lo];
    const ks_int nnz = A->rowptr[hi] - base;
    ks_int *rp = malloc(((size_t)nloc + 1) * sizeof *rp);
    ks_gint *ci = malloc(((size_t)nnz + 1) * sizeof *ci);
    ck_assert(rp && ci);
    for (ks_int i = 0; i <= nloc; i++)
        rp[i] = A->rowptr[lo + i] - base;
    for (ks_int k = 0; k < nnz; k++)
        ci[k] = A->colind[base + k];
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, nloc, A->ncols, rp, ci, A->val + base, "auto", NULL,
                                 &M));
    free(rp);
    free(ci);
    return M;
}

/* This rank's rows of the global P (coarse layout: the C points of each
 * rank's rows, given by the coarse id of the rank's first row). */
static void prows_of(const ks_csr *P, const ks_gint *off, ks_gint c_begin, ks_int nc,
                     ks_dist_prows *DP)
{
    memset(DP, 0, sizeof *DP);
    const ks_gint lo = off[rank];
    const ks_int n = (ks_int)(off[rank + 1] - lo), base = P->rowptr[lo];
    const ks_int nnz = P->rowptr[lo + n] - base;
    DP->comm = comm;
    DP->nloc = n;
    DP->row_begin = lo;
    DP->c_begin = c_begin;
    DP->nc = nc;
    DP->nc_global = P->ncols;
    DP->rowptr = malloc(((size_t)n + 1) * sizeof *DP->rowptr);
    DP->col = malloc(((size_t)nnz + 1) * sizeof *DP->col);
    DP->val = malloc(((size_t)nnz + 1) * sizeof *DP->val);
    ck_assert(DP->rowptr && DP->col && DP->val);
    for (ks_int i = 0; i <= n; i++)
        DP->rowptr[i] = P->rowptr[lo + i] - base;
    for (ks_int k = 0; k < nnz; k++) {
        DP->col[k] = P->colind[base + k];
        DP->val[k] = P->val[base + k];
    }
}

/* F row i's entries of a test P: up to 4 distinct coarse columns drawn
 * from lo .. lo + span - 1 (kept within 0 .. ncg - 1), random weights,
 * appended at m; returns the new count. */
static int64_t random_frow(ks_int i, ks_int ncg, ks_int lo, ks_int span, ks_int *r, ks_int *c,
                           double *v, int64_t m)
{
    const int len = ncg ? (int)(ks_test_rng_next() % 5) : 0;
    for (int k = 0; k < len; k++) {
        ks_int j = lo + (ks_int)(ks_test_rng_next() % (uint64_t)span);
        j = j < 0 ? 0 : j >= ncg ? ncg - 1 : j;
        int dup = 0;
        for (int64_t t = m - k; t < m; t++)
            dup |= c[t] == j;
        if (dup)
            continue;
        r[m] = i;
        c[m] = j;
        v[m++] = ks_test_urand() - 0.3;
    }
    return m;
}

/* The test splitting: every third point C (none on rank 1's rows when
 * starve), an F row with up to 4 random coarse columns anywhere (some
 * rows empty), a C row its own coarse point with 1.0. The global P and
 * the coarse ids of this rank's rows. */
static void test_splitting(uint64_t seed, ks_int N, const ks_gint *off, int starve, ks_csr *P,
                           ks_gint *c_begin, ks_int *nc)
{
    ks_test_rng_seed(seed);
    ks_gint *cid = malloc((size_t)N * sizeof *cid + 1);
    ck_assert(cid);
    ks_int ncg = 0;
    for (ks_int i = 0; i < N; i++) {
        const int starved = starve && nranks > 1 && i >= off[1] && i < off[2];
        cid[i] = i % 3 == 0 && !starved ? ncg++ : -1;
    }
    *c_begin = -1;
    *nc = 0;
    for (ks_gint i = off[rank]; i < off[rank + 1]; i++)
        if (cid[i] >= 0) {
            if (*c_begin < 0)
                *c_begin = cid[i];
            ++*nc;
        }
    if (*c_begin < 0) { /* no C point here: the count of those before */
        *c_begin = 0;
        for (ks_gint i = 0; i < off[rank]; i++)
            *c_begin += cid[i] >= 0;
    }
    const int64_t cap = (int64_t)N * 4 + 4;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t m = 0;
    for (ks_int i = 0; i < N; i++) {
        if (cid[i] >= 0) {
            r[m] = i;
            c[m] = (ks_int)cid[i];
            v[m++] = 1.0;
            continue;
        }
        m = random_frow(i, ncg, 0, ncg, r, c, v, m);
    }
    KS_CHECK(ks_csr_from_coo(N, ncg, m, r, c, v, P, NULL));
    free(r);
    free(c);
    free(v);
    free(cid);
}

/* ------------------------------------------------------------- checks */

/* X's rows (global columns) against rows X->row_begin .. of R: the same
 * columns, values the same bits (tol < 0) or within tol * scale. Returns
 * the first bad global row or -1. */
static ks_gint rows_mismatch(const ks_dist_csr *X, const ks_csr *R, double tol, double scale)
{
    for (ks_int i = 0; i < X->nrows; i++) {
        const ks_gint g = X->row_begin + i;
        if (g >= R->nrows)
            return g;
        const ks_int b = R->rowptr[g], len = R->rowptr[g + 1] - b, xb = X->rowptr[i];
        if (X->rowptr[i + 1] - xb != len)
            return g;
        for (ks_int k = 0; k < len; k++) {
            const double x = X->val[xb + k], r = R->val[b + k];
            if (X->colind[xb + k] != R->colind[b + k])
                return g;
            if (tol < 0 ? memcmp(&x, &r, sizeof x) != 0 : !(fabs(x - r) <= tol * scale))
                return g;
        }
    }
    return -1;
}

static int same_rows(const ks_dist_csr *X, const ks_dist_csr *Y)
{
    const ks_int n = X->nrows ? X->rowptr[X->nrows] : 0;
    return X->nrows == Y->nrows && X->nnz == Y->nnz && X->row_begin == Y->row_begin &&
           !memcmp(X->rowptr, Y->rowptr, ((size_t)X->nrows + 1) * sizeof *X->rowptr) &&
           !memcmp(X->colind, Y->colind, (size_t)n * sizeof *X->colind) &&
           !memcmp(X->val, Y->val, (size_t)n * sizeof *X->val);
}

static int same_csr(const ks_csr *X, const ks_csr *Y)
{
    return X->nrows == Y->nrows && X->ncols == Y->ncols && X->nnz == Y->nnz &&
           !memcmp(X->rowptr, Y->rowptr, ((size_t)X->nrows + 1) * sizeof *X->rowptr) &&
           !memcmp(X->colind, Y->colind, (size_t)X->nnz * sizeof *X->colind) &&
           !memcmp(X->val, Y->val, (size_t)X->nnz * sizeof *X->val);
}

/* The setup's coarse blocks (ks_dist_rap_split, from the compact product)
 * against ks_matrix_create_dist's split of the rows Dc: the same blocks,
 * bit for bit, and the same ghost ids. */
static void check_rap_split(const ks_matrix *M, const ks_dist_prows *DP, const ks_dist_prows *R,
                            const ks_dist_csr *Dc, const char *what)
{
    ks_dist_split S, W;
    KS_ALL(ks_dist_rap_split(M, DP, R, &S));
    KS_CHECK(ks_dist_csr_split(rank, Dc->row_begin, Dc->ncols_global, Dc->nrows, Dc->rowptr,
                               Dc->colind, Dc->val, &W));
    ALL(!S.entry_pos && same_csr(&S.local, &W.local) && same_csr(&S.ghost, &W.ghost) &&
            !memcmp(S.ghost_gid, W.ghost_gid, (size_t)W.ghost.ncols * sizeof *W.ghost_gid),
        "%s: the coarse blocks from the compact product differ from the rows' split", what);
    ks_dist_split_free(&S);
    ks_dist_split_free(&W);
}

/* The coarse rows as a distributed matrix: ks_matrix_create_dist takes
 * them, and its product with x equals the serial Ac's to 1e-12. */
static void check_coarse_matrix(const ks_dist_csr *Dc, const ks_csr *Ac, const char *what)
{
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, Dc->nrows, Dc->ncols_global, Dc->rowptr, Dc->colind,
                                 Dc->val, "auto", NULL, &M));
    const ks_int nc = Ac->nrows;
    double *x = malloc((size_t)nc * sizeof *x + 8), *y = malloc((size_t)nc * sizeof *y + 8);
    ck_assert(x && y);
    for (ks_int j = 0; j < nc; j++)
        x[j] = 1.0 + 0.25 * (double)(j % 7);
    ks_vec *xv = NULL, *yv = NULL;
    KS_ALL(ks_vec_create_dist(be, comm, Dc->nrows, &xv));
    KS_ALL(ks_vec_create_dist(be, comm, Dc->nrows, &yv));
    KS_ALL(ks_vec_set_host(xv, x + Dc->row_begin));
    KS_ALL(ks_matrix_apply(M, 1.0, xv, 0.0, yv));
    double *yl = malloc((size_t)Dc->nrows * sizeof *yl + 8);
    ck_assert(yl);
    KS_ALL(ks_vec_get_host(yv, yl));
    int ok = 1;
    for (ks_int i = 0; i < Dc->nrows && ok; i++) {
        const ks_gint g = Dc->row_begin + i;
        double s = 0.0, a = 0.0;
        for (ks_int k = Ac->rowptr[g]; k < Ac->rowptr[g + 1]; k++) {
            s += Ac->val[k] * x[Ac->colind[k]];
            a += fabs(Ac->val[k] * x[Ac->colind[k]]);
        }
        ok = fabs(yl[i] - s) <= 1e-12 * a;
    }
    ALL(ok, "%s: the coarse matrix's product differs from the serial one's", what);
    free(yl);
    free(x);
    free(y);
    ks_vec_destroy(&xv);
    ks_vec_destroy(&yv);
    ks_matrix_destroy(&M);
}

/* P's rows fetched for M's ghost columns: row g is the global P's row of
 * ghost_gid[g], the same columns and bits. Returns their count (ghost
 * rows seen across ranks). */
static long check_fetch(const ks_matrix *M, const ks_csr *P, const ks_dist_prows *DP,
                        const char *what)
{
    const ks_dist_impl *d = (const ks_dist_impl *)M->dist;
    ks_dist_ghost_prows G;
    KS_ALL(ks_dist_fetch_prows(M, DP, &G));
    int ok = G.n == d->nghost;
    for (ks_int g = 0; ok && g < G.n; g++) {
        const ks_gint k = d->ghost_gid[g];
        const ks_int b = P->rowptr[k], len = P->rowptr[k + 1] - b, gb = G.rowptr[g];
        ok = G.rowptr[g + 1] - gb == len;
        for (ks_int q = 0; ok && q < len; q++)
            ok = G.col[gb + q] == P->colind[b + q] &&
                 !memcmp(&G.val[gb + q], &P->val[b + q], sizeof(double));
    }
    ALL(ok, "%s: the fetched rows of P differ from the global P's", what);
    const long n = G.n;
    ks_dist_ghost_prows_free(&G);
    return n;
}

/* Ghost rows of P fetched over all checks (np > 1: some must be). */
static long fetched;

/* A P and P^T A P for distributed M (global A) and this rank's rows DP of
 * the global P, against the serial products; two runs the same, and
 * the setup's path (R given, A P compact) the same too. */
static void check_rap(const ks_csr *A, const ks_matrix *M, const ks_csr *P,
                      const ks_dist_prows *DP, const char *what)
{
    ks_csr AP, PT, Ac, Ac2;
    KS_CHECK(ks_csr_spgemm(A, P, &AP));
    KS_CHECK(ks_csr_transpose(P, &PT));
    KS_CHECK(ks_csr_spgemm(&PT, &AP, &Ac));
    KS_CHECK(ks_csr_rap(&PT, A, P, &Ac2));

    fetched += check_fetch(M, P, DP, what);
    ks_dist_csr DAP;
    KS_ALL(ks_dist_ap(M, DP, &DAP));
    ALL(DAP.nrows == DP->nloc && DAP.ncols_global == P->ncols && DAP.nrows_global == A->nrows,
        "%s: A P's shape", what);
    ks_gint bad = rows_mismatch(&DAP, &AP, -1.0, 0.0);
    ALL(bad < 0, "%s: A P row %lld differs from the serial one", what, (long long)bad);

    ks_dist_csr Dc, Dc2;
    KS_ALL(ks_dist_ptap(DP, &DAP, &Dc));
    ALL(Dc.nrows == DP->nc && Dc.row_begin == DP->c_begin && Dc.ncols_global == P->ncols &&
        Dc.nrows_global == P->ncols, "%s: the coarse rows' shape", what);
    bad = rows_mismatch(&Dc, &Ac, -1.0, 0.0);
    ALL(bad < 0, "%s: coarse row %lld differs from spgemm(P^T, A P)", what, (long long)bad);
    double scale = 0.0;
    for (ks_int k = 0; k < Ac2.nnz; k++)
        scale = fmax(scale, fabs(Ac2.val[k]));
    bad = rows_mismatch(&Dc, &Ac2, 1e-13, scale);
    ALL(bad < 0, "%s: coarse row %lld differs from ks_csr_rap's beyond 1e-13", what,
        (long long)bad);

    /* Both steps at once, again: the same bits. */
    KS_ALL(ks_dist_rap(M, DP, &Dc2));
    ALL(same_rows(&Dc, &Dc2), "%s: two runs of RAP differ", what);
    check_coarse_matrix(&Dc, &Ac, what);
    /* The setup's path: R made first, A P kept compact between the two
     * products (ks_dist_ap_compact, ks_dist_ptap_r_compact): the same bits. */
    ks_gint *coff = NULL;
    KS_ALL(ks_layout_gather(comm, DP->nc, &coff));
    ks_dist_prows R;
    KS_ALL(ks_dist_prows_transpose(DP, M->dist->offsets, coff, &R));
    ks_dist_csr Dc3;
    KS_ALL(ks_dist_rap_r(M, DP, &R, &Dc3));
    ALL(same_rows(&Dc, &Dc3), "%s: RAP with A P kept compact differs", what);
    check_rap_split(M, DP, &R, &Dc3, what);
    ks_dist_csr_free(&Dc3);
    ks_dist_prows_free(&R);
    free(coff);

    ks_dist_csr_free(&Dc2);
    ks_dist_csr_free(&Dc);
    ks_dist_csr_free(&DAP);
    ks_csr_free(&Ac2);
    ks_csr_free(&Ac);
    ks_csr_free(&PT);
    ks_csr_free(&AP);
}

/* P from the distributed strength, PMIS and direct interpolation (and a
 * truncation of it); the serial P for the reference is the same bits
 * (test_mpi_amg), built here with the serial kernels. Returns 1 when
 * direct interpolation went through (0: refused for a zero diagonal). */
static int check_amg_p(const ks_csr *A, int lay, double theta, unsigned long long seed,
                       const char *what)
{
    ks_gint off[9];
    layout(lay, A->nrows, off);
    ks_matrix *M = distribute(A, off);
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(A, theta, 1.0, &S));
    int *cfs = malloc((size_t)A->nrows * sizeof *cfs + 1);
    ck_assert(cfs);
    ks_int ncs = 0;
    KS_CHECK(ks_amg_pmis_ex(&S, seed, cfs, &ncs, NULL));
    ks_csr P;
    const ks_error es = ks_amg_interp_direct(A, &S, cfs, &P);

    ks_dist_strength D;
    KS_ALL(ks_dist_strength_classical(M, theta, 1.0, &D));
    int *cf = malloc((size_t)D.nloc * sizeof *cf + 1);
    ck_assert(cf);
    ks_int nc = 0;
    KS_ALL(ks_dist_pmis(&D, seed, cf, &nc));
    ks_dist_coarse C;
    KS_ALL(ks_dist_coarse_ids(&D, cf, &C));
    ks_dist_prows DP;
    const ks_error ed = ks_dist_interp_direct(M, &D, cf, &C, &DP);
    ALL((ed == KS_OK) == (es == KS_OK), "%s: serial and distributed interpolation disagree",
        what);
    if (es == KS_OK) {
        char w[160];
        snprintf(w, sizeof w, "%s, layout %d, theta %g, seed %llu", what, lay, theta, seed);
        check_rap(A, M, &P, &DP, w);
        /* Truncated: fewer, longer-reaching rows. */
        KS_CHECK(ks_amg_interp_truncate(&P, 2, 0.2));
        KS_ALL(ks_dist_prows_truncate(&DP, 2, 0.2));
        snprintf(w, sizeof w, "%s, layout %d, theta %g, seed %llu, truncated", what, lay,
                 theta, seed);
        check_rap(A, M, &P, &DP, w);
        ks_dist_prows_free(&DP);
        ks_csr_free(&P);
    }
    ks_dist_coarse_free(&C);
    free(cf);
    ks_dist_strength_free(&D);
    free(cfs);
    ks_strength_free(&S);
    ks_matrix_destroy(&M);
    return es == KS_OK;
}

/* ------------------------------------------------------------- the tests */

START_TEST(test_generated)
{
    static const char *names[NGEN] = {"poisson3d_7", "poisson3d_27", "aniso3d", "convdiff3d"};
    for (int w = 0; w < NGEN; w++) {
        ks_csr A;
        generated(w, &A);
        for (int lay = 0; lay < NLAYOUTS; lay++) {
            ALL(check_amg_p(&A, lay, 0.25, 0, names[w]), "%s: interpolation refused",
                names[w]);
            ALL(check_amg_p(&A, lay, 0.5, 12345, names[w]), "%s: interpolation refused",
                names[w]);
        }
        ks_csr_free(&A);
    }
}
END_TEST

START_TEST(test_random_amg)
{
    int compared = 0;
    for (int trial = 0; trial < 9; trial++) {
        ks_csr A;
        random_matrix(90 + (uint64_t)trial, 41 + 19 * trial, &A);
        char what[64];
        snprintf(what, sizeof what, "random matrix %d", trial);
        compared += check_amg_p(&A, trial % NLAYOUTS, trial % 2 ? 0.5 : 0.25, 7 + trial, what);
        ks_csr_free(&A);
    }
    ALL(compared > 9 / 2, "only %d of 9 random interpolations compared", compared);
}
END_TEST

/* The test splitting: P's rows reach coarse points on any rank, one
 * rank's rows have no C point (it owns no coarse row but sends many). */
START_TEST(test_random_splitting)
{
    for (int trial = 0; trial < 12; trial++) {
        ks_csr A, P;
        const ks_int N = 29 + 17 * trial;
        random_matrix(300 + (uint64_t)trial, N, &A);
        ks_gint off[9];
        const int lay = trial % NLAYOUTS;
        layout(lay, N, off);
        ks_gint c_begin;
        ks_int nc;
        test_splitting(500 + (uint64_t)trial, N, off, trial % 2, &P, &c_begin, &nc);
        ks_matrix *M = distribute(&A, off);
        ks_dist_prows DP;
        prows_of(&P, off, c_begin, nc, &DP);
        char what[96];
        snprintf(what, sizeof what, "random matrix %d, test splitting%s, layout %d", trial,
                 trial % 2 ? " (rank 1 without C points)" : "", lay);
        check_rap(&A, M, &P, &DP, what);
        ks_dist_prows_free(&DP);
        ks_matrix_destroy(&M);
        ks_csr_free(&P);
        ks_csr_free(&A);
    }
    long all = 0;
    MPI_Allreduce(&fetched, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    ALL(nranks == 1 || all > 0, "no rank fetched a row of P from another");
}
END_TEST

/* More ranks than rows, and a generated problem with the test splitting. */
START_TEST(test_tiny)
{
    for (int lay = 0; lay < NLAYOUTS; lay++) {
        ks_csr A, P;
        random_matrix(11, 3, &A);
        ks_gint off[9];
        layout(lay, 3, off);
        ks_gint c_begin;
        ks_int nc;
        test_splitting(12, 3, off, 0, &P, &c_begin, &nc);
        ks_matrix *M = distribute(&A, off);
        ks_dist_prows DP;
        prows_of(&P, off, c_begin, nc, &DP);
        check_rap(&A, M, &P, &DP, "3 rows");
        ks_dist_prows_free(&DP);
        ks_matrix_destroy(&M);
        ks_csr_free(&P);
        ks_csr_free(&A);
    }
}
END_TEST

/* The global P of N rows, every third point C: an F row has up to 4
 * coarse columns among the 80 nearest its own (a mesh's P, so a thread's
 * rows reach few coarse rows beyond its own) or, with far, anywhere. */
static void long_splitting(uint64_t seed, ks_int N, int far, ks_csr *P)
{
    ks_test_rng_seed(seed);
    const ks_int ncg = (N + 2) / 3;
    const int64_t cap = (int64_t)N * 4 + 4;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t m = 0;
    for (ks_int i = 0; i < N; i++) {
        if (i % 3 == 0) {
            r[m] = i;
            c[m] = i / 3;
            v[m++] = 1.0;
            continue;
        }
        m = far ? random_frow(i, ncg, 0, ncg, r, c, v, m)
                : random_frow(i, ncg, i / 3 - 40, 81, r, c, v, m);
    }
    KS_CHECK(ks_csr_from_coo(N, ncg, m, r, c, v, P, NULL));
    free(r);
    free(c);
    free(v);
}

/* The distributed transpose of rows long enough for the threaded passes
 * (each rank's over 65,536 entries), near and far columns (the second
 * reaches every row from every thread's chunk: the pieces taken whole),
 * with 1 to 3 threads: the serial transpose of the global P, bit for bit. */
START_TEST(test_transpose_threads)
{
    int saved = 1;
#ifdef _OPENMP
    saved = omp_get_max_threads();
#endif
    for (int far = 0; far <= 1; far++) {
        const ks_int N = 75000 * nranks;
        ks_csr P, PT;
        long_splitting(31 + (uint64_t)far, N, far, &P);
        KS_CHECK(ks_csr_transpose(&P, &PT));
        ks_gint off[9];
        layout(0, N, off);
        const ks_gint c_begin = (off[rank] + 2) / 3;
        const ks_int nc = (ks_int)((off[rank + 1] + 2) / 3 - c_begin);
        ks_dist_prows DP;
        prows_of(&P, off, c_begin, nc, &DP);
        ALL(DP.rowptr[DP.nloc] > 65536, "the rows are too short for the threaded passes");
        ks_gint *coff = NULL;
        KS_ALL(ks_layout_gather(comm, nc, &coff));
        for (int threads = 1; threads <= 3; threads++) {
            ks_test_set_threads(threads);
            ks_dist_prows R;
            KS_ALL(ks_dist_prows_transpose(&DP, off, coff, &R));
            ks_dist_csr X = {.nrows = R.nloc, .row_begin = R.row_begin, .rowptr = R.rowptr,
                             .colind = R.col, .val = R.val};
            const ks_gint bad = rows_mismatch(&X, &PT, -1.0, 0.0);
            ALL(bad < 0 && R.nloc == nc, "%s columns, %d threads: R's row %lld differs from "
                "the serial transpose's", far ? "far" : "near", threads, (long long)bad);
            ks_dist_prows_free(&R);
        }
        ks_test_set_threads(saved);
        free(coff);
        ks_dist_prows_free(&DP);
        ks_csr_free(&PT);
        ks_csr_free(&P);
    }
}
END_TEST

/* ks_compact_split on rows made here (map [10, 13) and ids 2, 5, 20, 30):
 * the blocks and the used ghosts only; rows that do not ascend or hold a
 * value that is not finite refused, nothing made. */
START_TEST(test_compact_split)
{
    static const ks_gint ext[] = {2, 5, 20, 30}; /* compact 0 1 | 2 3 4 | 5 6 */
    ks_gmap m;
    KS_CHECK(ks_gmap_borrow(10, 13, ext, 4, &m));
    ks_int rp[] = {0, 3, 3, 6}, ci[] = {1, 2, 6, 3, 4, 6};
    double v[] = {1, 2, 3, 4, 5, 6};
    ks_csr T = {3, 7, 6, rp, ci, v};
    ks_dist_split S;
    int refused = 1;
    KS_CHECK(ks_compact_split(&T, &m, &refused, &S));
    ck_assert_int_eq(refused, 0);
    const ks_int lrp[] = {0, 1, 1, 3}, lci[] = {0, 1, 2}, grp[] = {0, 2, 2, 3}, gci[] = {0, 1, 1};
    const double lv[] = {2, 4, 5}, gv[] = {1, 3, 6};
    ck_assert(S.local.nrows == 3 && S.local.ncols == 3 && S.local.nnz == 3);
    ck_assert(S.ghost.nrows == 3 && S.ghost.ncols == 2 && S.ghost.nnz == 3 && !S.entry_pos);
    ck_assert(!memcmp(S.local.rowptr, lrp, sizeof lrp) && !memcmp(S.local.colind, lci, sizeof lci));
    ck_assert(!memcmp(S.ghost.rowptr, grp, sizeof grp) && !memcmp(S.ghost.colind, gci, sizeof gci));
    ck_assert(!memcmp(S.local.val, lv, sizeof lv) && !memcmp(S.ghost.val, gv, sizeof gv));
    ck_assert(S.ghost_gid[0] == 5 && S.ghost_gid[1] == 30);
    ks_dist_split_free(&S);
    ci[4] = 2; /* row 2 no longer ascends */
    KS_CHECK(ks_compact_split(&T, &m, &refused, &S));
    ck_assert(refused == 1 && !S.local.rowptr && !S.ghost.rowptr && !S.ghost_gid);
    ci[4] = 4;
    v[3] = NAN;
    KS_CHECK(ks_compact_split(&T, &m, &refused, &S));
    ck_assert(refused == 1 && !S.local.rowptr && !S.ghost.rowptr && !S.ghost_gid);
    ks_gmap_free(&m);
}
END_TEST

/* A bad P on one rank fails on every rank: a coarse column outside the
 * grid, rows that are not the matrix's, a coarse layout that is not the
 * ranks' C counts. */
START_TEST(test_errors)
{
    ks_csr A, P;
    generated(0, &A);
    ks_gint off[9];
    layout(0, A.nrows, off);
    ks_gint c_begin;
    ks_int nc;
    test_splitting(3, A.nrows, off, 0, &P, &c_begin, &nc);
    ks_matrix *M = distribute(&A, off);
    ks_dist_prows DP;
    prows_of(&P, off, c_begin, nc, &DP);
    const int last = nranks - 1;
    ks_dist_csr X;

    const ks_gint keep = DP.col[0];
    if (rank == last)
        DP.col[0] = P.ncols + 5;
    ks_error e = ks_dist_rap(M, &DP, &X);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "outside"), "bad coarse column: %s: %s",
        ks_error_name(e), ks_last_error());
    DP.col[0] = keep;

    if (rank == last)
        DP.row_begin++;
    e = ks_dist_rap(M, &DP, &X);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "layout"), "misplaced rows: %s: %s",
        ks_error_name(e), ks_last_error());
    if (rank == last)
        DP.row_begin--;

    if (rank == last)
        DP.c_begin++;
    e = ks_dist_rap(M, &DP, &X);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "coarse layout"), "bad coarse layout: %s: %s",
        ks_error_name(e), ks_last_error());
    if (rank == last)
        DP.c_begin--;

    /* And it still works afterwards. */
    KS_ALL(ks_dist_rap(M, &DP, &X));
    ks_dist_csr_free(&X);
    ks_dist_prows_free(&DP);
    ks_matrix_destroy(&M);
    ks_csr_free(&P);
    ks_csr_free(&A);
}
END_TEST

static Suite *rap_suite(void)
{
    Suite *s = suite_create("mpi_rap");
    TCase *t = tcase_create("rap");
    tcase_add_test(t, test_generated);
    tcase_add_test(t, test_random_amg);
    tcase_add_test(t, test_random_splitting);
    tcase_add_test(t, test_tiny);
    tcase_add_test(t, test_compact_split);
    tcase_add_test(t, test_transpose_threads);
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_test(t, test_errors);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_rap", rap_suite, NULL);
}
